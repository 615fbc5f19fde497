"""Specialize an ONNX model on the inputs a static-shape compiler must know: JIT-style.

Many ONNX models pass a ``Reshape`` shape, reduce ``axes``, ``Pad`` pads or ``Tile``
repeats as graph inputs, and some leave input dimensions dynamic. tg has static
shapes and float-only compute, so such a model cannot be compiled once for all
calls. ``qidao.compile`` then returns a :class:`Specialized` callable instead, which
compiles at the first call, the way a JIT specializes:

- every integer graph input (int32/int64: shapes, axes, pads, indices) is *bound*:
  its value becomes a constant of the imported graph (``import_onnx(constants=...)``)
  and folds at import like an initializer;
- every float32 input with a dynamic dimension takes the shape of the array given.

The compiled program is cached under the bound values and the input shapes; a call
with other values or shapes compiles again (at most ``MAX_ENTRIES`` are kept, least
recently used first out). A model that needs none of this compiles ahead of time as
before.

```python
compiled = qidao.compile(reshape_model)   # inputs: x float32 [2, 6], shape int64 [2]
y, = compiled(x, np.array([3, 4]))        # compiles for shape = [3, 4]
y, = compiled(x, np.array([3, 4]))        # cached
y, = compiled(x, np.array([4, 3]))        # compiles again
```
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from qidao.runtime.errors import ArgumentError

if TYPE_CHECKING:
    from qidao.compiler.compile import Compiled
    from qidao.runtime.executor import TensorSpec

MAX_ENTRIES = 8
"""Compiled specializations kept per model; the least recently used one goes first."""

BOUND_TYPES = frozenset({TensorProto.INT32, TensorProto.INT64})
"""ONNX element types of the graph inputs whose values a specialization binds."""


def onnx_proto(model: Any) -> onnx.ModelProto | None:
    """``model`` if it is an ONNX ``ModelProto``, the graph of a ``.onnx`` path
    without its external data (enough to look at the inputs), or None."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, str | os.PathLike):
        path = Path(model)
        if path.suffix != ".onnx" or not path.is_file():
            return None
        try:
            return onnx.load(path, load_external_data=False)
        except Exception:  # the importer reports an unreadable file clearly
            return None
    return None


def runtime_inputs(proto: onnx.ModelProto) -> list[Any]:
    """The graph inputs that are not initializers, in order (ValueInfoProto)."""
    initializers = {t.name for t in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in initializers]


def needs_specialization(proto: onnx.ModelProto) -> bool:
    """Whether a graph input is an integer tensor or has a dynamic dimension."""
    for graph_input in runtime_inputs(proto):
        t = graph_input.type.tensor_type
        if not graph_input.type.HasField("tensor_type"):
            return False  # sequences, maps, optionals: the importer refuses them
        if t.elem_type in BOUND_TYPES:
            return True
        if t.elem_type == TensorProto.FLOAT and not _is_static(graph_input):
            return True
    return False


def specialized(
    model: Any, compile_module: Callable[[Any], Compiled]
) -> Specialized | None:
    """A :class:`Specialized` callable for an ONNX ``model`` that needs one (see
    ``needs_specialization``), else None. ``compile_module`` compiles an imported tg
    module with the caller's target and options."""
    proto = onnx_proto(model)
    if proto is None or not needs_specialization(proto):
        return None
    if proto is not model:  # a path: now load it whole, external data included
        from qidao.frontend.onnx.load import load_model

        proto = load_model(model)
    return Specialized(proto, compile_module)


class Specialized:
    """An ONNX model compiled at its first call and again when the values of its
    integer inputs or the shapes of its dynamic inputs change (see the module text).

    Call it with one array per graph input, the bound ones included. After a call,
    ``ir``, ``stats``, ``inputs`` and ``outputs`` describe the latest specialization.
    """

    def __init__(
        self, proto: onnx.ModelProto, compile_module: Callable[[Any], Compiled]
    ) -> None:
        self.proto = proto
        self._compile_module = compile_module
        self.graph_inputs = runtime_inputs(proto)
        self.names = [str(i.name) for i in self.graph_inputs]
        self.bound = [
            str(i.name)
            for i in self.graph_inputs
            if i.type.tensor_type.elem_type in BOUND_TYPES
        ]
        self.cache: OrderedDict[Hashable, Compiled] = OrderedDict()
        self.compiles = 0
        self._latest: Compiled | None = None

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        if len(arrays) != len(self.names):
            raise ArgumentError(
                f"the model takes {len(self.names)} input(s) ({', '.join(self.names)}), "
                f"got {len(arrays)}"
            )
        values = [self._array(i, a) for i, a in enumerate(arrays)]
        key = self._key(values)
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = self._compile(values)
            self.cache[key] = compiled
            if len(self.cache) > MAX_ENTRIES:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        self._latest = compiled
        runtime = [
            v for n, v in zip(self.names, values, strict=True) if n not in self.bound
        ]
        return compiled(*runtime)

    def _array(self, index: int, value: Any) -> np.ndarray[Any, Any]:
        """Input #index as an array; a bound input converts to its declared dtype."""
        name = self.names[index]
        if name not in self.bound:
            return value  # type: ignore[no-any-return]  # the compiled call checks it
        elem_type = self.graph_inputs[index].type.tensor_type.elem_type
        dtype = helper.tensor_dtype_to_np_dtype(elem_type)
        array = np.asarray(value)
        if not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
            raise ArgumentError(
                f"input '{name}' (#{index}) is a {np.dtype(dtype).name} tensor, got "
                f"an array of {array.dtype}"
            )
        return array.astype(dtype, copy=False)

    def _key(self, values: list[Any]) -> Hashable:
        parts: list[Hashable] = []
        for name, value in zip(self.names, values, strict=True):
            shape = tuple(np.shape(value))
            if name in self.bound:
                parts.append((shape, np.asarray(value).tobytes()))
            else:
                parts.append(shape)
        return tuple(parts)

    def _compile(self, values: list[Any]) -> Compiled:
        from qidao.frontend.onnx import import_onnx

        constants = {
            n: v for n, v in zip(self.names, values, strict=True) if n in self.bound
        }
        shapes = {
            str(i.name): tuple(np.shape(v))
            for i, v in zip(self.graph_inputs, values, strict=True)
            if str(i.name) not in self.bound and not _is_static(i)
        }
        module = import_onnx(self.proto, input_shapes=shapes, constants=constants)
        self.compiles += 1
        return self._compile_module(module)

    @property
    def latest(self) -> Compiled:
        """The specialization the last call ran."""
        if self._latest is None:
            raise RuntimeError(
                "this model is compiled at its first call (it specializes on the "
                f"values of {self.bound or 'no'} integer input(s) and on dynamic "
                "input shapes); call it first"
            )
        return self._latest

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.latest.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.latest.outputs

    @property
    def stats(self) -> dict[str, Any]:
        return self.latest.stats

    def ir(self, stage: str = "tg") -> str:
        return self.latest.ir(stage)

    def __repr__(self) -> str:
        return (
            f"<qidao.Specialized inputs ({', '.join(self.names)}), binds "
            f"{self.bound}, {len(self.cache)} specialization(s) cached>"
        )


def _is_static(value_info: Any) -> bool:
    t = value_info.type.tensor_type
    return t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim)
