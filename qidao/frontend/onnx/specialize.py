"""Specialize an ONNX model on the inputs a static-shape compiler must know: JIT-style.

Many ONNX models pass a ``Reshape`` shape, reduce ``axes``, ``Pad`` pads or ``Tile``
repeats as graph inputs, and some leave input dimensions dynamic. tg has static
shapes, so such a model cannot be compiled once for all calls. ``qidao.compile``
then returns a :class:`Specialized` callable instead, which compiles at the first
call, the way a JIT specializes:

- an integer or bool graph input whose *value* the import needs (an int32/int64
  input that reaches a shape, axes or pads position, directly or through
  folded arithmetic; a bool ``training_mode``) is *bound*: its value becomes a
  constant of the imported graph (``import_onnx(constants=...)``) and folds at
  import like an initializer. The importer says which values it needs: a
  ``ConstantRequiredError`` names the tensors, and the graph inputs they are
  computed from are bound (``needed_inputs``). An integer input that only feeds
  arithmetic or gather indices stays a runtime input, like a float one;
- every input with a dynamic dimension takes the shape of the array given.

Which inputs to bind is found by importing with none bound, for a model with an
integer or bool input (``BOUND_TYPES``) or a dynamic one: at ``qidao.compile`` when
every shape is static (a model that then imports needs no specialization and
compiles ahead of time), else at the first call; a later import that needs more
binds more. When that first import fails for another reason, every integer input
is bound (the conservative choice: their values fold). A float input is data and
is never bound, except a *small* one (static shape, rank 0 or 1, at most
``SMALL_FLOAT_ELEMENTS`` elements) whose value the import needs *for a shape*
(``ConstantRequiredError.shape``): a ``Resize`` or ``Upsample`` ``scales`` input
(the scales fix the output shape), a float ``OneHot`` depth. A model whose inputs are all other float tensors is imported once, ahead
of time.

``needed_inputs`` takes the tensors' ``nx.ancestors`` in the model's tensor→tensor
graph (an edge from each node input, and each outer value its subgraphs read, to
each node output), which are exactly the tensors they are computed from.

The compiled program is cached under the bound values and the input shapes; a call
with other values or shapes compiles again (at most ``MAX_ENTRIES`` are kept, least
recently used first out).

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
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
import numpy as np
import onnx
from onnx import TensorProto, helper

from qidao.errors import ArgumentError, QidaoError
from qidao.frontend.errors import (
    ConstantRequiredError,
    DataDependentShapeError,
    FrontendError,
)
from qidao.frontend.onnx import subgraphs
from qidao.frontend.onnx.staged import DATA_DEPENDENT_OPS, Staged


class Program(Protocol):
    """What a specialization needs of the program that ``compile_module`` makes of
    an imported tg module (``qidao.compiler.compiled.CompiledProgram``: the
    frontend does not import the compiler, which passes the function)."""

    @property
    def inputs(self) -> tuple[Any, ...]:
        """The specs of the graph inputs a call takes (name, shape, dtype)."""
        ...

    @property
    def outputs(self) -> tuple[Any, ...]:
        """The specs of the outputs a call returns."""
        ...

    @property
    def stats(self) -> dict[str, Any]: ...

    def ir(self, stage: str = "tg") -> str: ...

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]: ...


MAX_ENTRIES = 8
"""Compiled specializations kept per model; the least recently used one goes first."""

BOUND_TYPES = frozenset({TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL})
"""ONNX element types of the graph inputs whose values a specialization may bind."""

_INTEGER_TYPES = frozenset({TensorProto.INT32, TensorProto.INT64})

_FLOAT_TYPES = frozenset(
    {TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE}
)

SMALL_FLOAT_ELEMENTS = 64
"""The most elements a float graph input may have for a specialization to bind it
(when the import needs its value: scales, a depth); a larger one is data."""


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


def _elem_type(graph_input: Any) -> int:
    return int(graph_input.type.tensor_type.elem_type)


def _kind(dtype: np.dtype[Any]) -> str:
    """NumPy's kind letter of ``dtype``; ``"f"`` for bfloat16 too (``ml_dtypes``'
    floats are of kind ``"V"``)."""
    return "f" if dtype.name == "bfloat16" else dtype.kind


def bindable_inputs(proto: onnx.ModelProto, shape: bool = True) -> list[str]:
    """The runtime graph inputs whose values a specialization may bind: integer and
    bool tensors, and with ``shape`` (for a value that fixes a shape) small float
    ones too (:func:`is_small_float`; any other float input is data: binding it
    would fold the whole model)."""
    return [
        str(i.name)
        for i in runtime_inputs(proto)
        if i.type.HasField("tensor_type")
        and (_elem_type(i) in BOUND_TYPES or (shape and is_small_float(i)))
    ]


def is_small_float(graph_input: Any) -> bool:
    """Whether a graph input is a float tensor of static shape, rank 0 or 1, with at
    most ``SMALL_FLOAT_ELEMENTS`` elements: the shape of a scales vector or a
    scalar, which a specialization binds when the import needs its value."""
    if _elem_type(graph_input) not in _FLOAT_TYPES or not _is_static(graph_input):
        return False
    dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    return len(dims) <= 1 and (not dims or dims[0] <= SMALL_FLOAT_ELEMENTS)


def has_dynamic_inputs(proto: onnx.ModelProto) -> bool:
    """Whether a tensor graph input has a dynamic dimension."""
    return any(
        i.type.HasField("tensor_type") and not _is_static(i)
        for i in runtime_inputs(proto)
    )


def needed_inputs(proto: onnx.ModelProto, names: Sequence[str]) -> list[str]:
    """The graph inputs that the tensors ``names`` are computed from, in input
    order (their ancestors in the main graph's tensor→tensor graph)."""
    wanted = {str(n) for n in names}
    flow = nx.DiGraph(
        (str(i), str(out))
        for node in proto.graph.node
        for i in [*node.input, *_subgraph_reads(node)]
        for out in node.output
        if i and out
    )
    flow.add_nodes_from(wanted)
    upstream = wanted.union(*(nx.ancestors(flow, n) for n in wanted))
    return [str(i.name) for i in runtime_inputs(proto) if str(i.name) in upstream]


def _subgraph_reads(node: Any) -> set[str]:
    """The outer values the subgraphs of an ``If``/``Loop``/``Scan`` node read: its
    outputs are computed from them too."""
    return set().union(*(subgraphs.free_names(g) for g in subgraphs.nested(node)))


def inputs_to_bind(
    proto: onnx.ModelProto,
    bound: Sequence[str],
    attempt: Callable[[list[str]], object],
) -> list[str]:
    """``bound`` grown until ``attempt(bound)`` (an import) needs no other value:
    each ``ConstantRequiredError`` binds the bindable inputs its tensors come from.
    The error is raised again when there is nothing left to bind."""
    bound = list(bound)
    while True:
        try:
            attempt(bound)
            return bound
        except ConstantRequiredError as e:
            more = more_to_bind(proto, e, bound)
            if not more:
                raise
            bound += more


def more_to_bind(
    proto: onnx.ModelProto, error: ConstantRequiredError, bound: Sequence[str]
) -> list[str]:
    """The bindable graph inputs, not in ``bound`` yet, that the tensors ``error``
    names are computed from."""
    bindable = bindable_inputs(proto, error.shape)
    return [
        n for n in needed_inputs(proto, error.names) if n in bindable and n not in bound
    ]


def needs_specialization(proto: onnx.ModelProto) -> bool:
    """Whether a graph input is an integer or bool tensor or a small float one (its
    value may be needed) or has a dynamic dimension, or the main graph has a node
    whose output size may be data (``staged.DATA_DEPENDENT_OPS``)."""
    staged = any(n.op_type in DATA_DEPENDENT_OPS for n in proto.graph.node)
    return bool(bindable_inputs(proto)) or has_dynamic_inputs(proto) or staged


def specialized(
    model: Any, compile_module: Callable[[Any], Program]
) -> Specialized | None:
    """A :class:`Specialized` callable for an ONNX ``model`` that needs one, else
    None. ``compile_module`` compiles an imported tg module with the caller's target
    and options."""
    proto = onnx_proto(model)
    if proto is None or not needs_specialization(proto):
        return None
    if proto is not model:  # a path: now load it whole, external data included
        from qidao.frontend.onnx.load import load_model

        proto = load_model(model)
    if has_dynamic_inputs(proto):
        return Specialized(proto, compile_module)  # what to bind: at the first call
    from qidao.frontend.onnx import import_onnx

    try:
        import_onnx(proto)  # every input at run time
    except ConstantRequiredError as e:
        needed = more_to_bind(proto, e, [])
        if not needed and e.stage_at is not None:  # a loop on the host (staged.py)
            return Specialized(proto, compile_module)
        # nothing to bind: compiling reports the error
        return Specialized(proto, compile_module, needed) if needed else None
    except DataDependentShapeError:  # compiled in stages (staged.py)
        return Specialized(proto, compile_module)
    except FrontendError:  # the conservative choice: bind every integer input
        integers = [
            str(i.name)
            for i in runtime_inputs(proto)
            if i.type.HasField("tensor_type") and _elem_type(i) in _INTEGER_TYPES
        ]
        return Specialized(proto, compile_module, integers) if integers else None
    return None  # compiled ahead of time


class NotCompiledYetError(QidaoError, RuntimeError):
    """A model compiled at its first call was asked for what that call decides
    (its input specs, IR or stats) before it was called."""


class Specialized:
    """An ONNX model compiled at its first call and again when the values of its
    integer inputs or the shapes of its dynamic inputs change (see the module text).

    Call it with one array per graph input, the bound ones included. After a call,
    ``ir``, ``stats``, ``inputs`` and ``outputs`` describe the latest specialization.
    """

    def __init__(
        self,
        proto: onnx.ModelProto,
        compile_module: Callable[[Any], Program],
        bound: Sequence[str] = (),
    ) -> None:
        self.proto = proto
        self._compile_module = compile_module
        self.graph_inputs = runtime_inputs(proto)
        self.names = [str(i.name) for i in self.graph_inputs]
        self.bound = list(bound)
        """The inputs whose values are bound (more may join at a compile)."""
        self.cache: OrderedDict[Hashable, Program] = OrderedDict()
        self.compiles = 0
        self._latest: Program | None = None

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        if len(arrays) != len(self.names):
            raise ArgumentError(
                f"the model takes {len(self.names)} input(s) ({', '.join(self.names)}), "
                f"got {len(arrays)}"
            )
        key = self._key([self._array(i, a) for i, a in enumerate(arrays)])
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = self._compile(arrays)
            key = self._key([self._array(i, a) for i, a in enumerate(arrays)])
            self.cache[key] = compiled
            if len(self.cache) > MAX_ENTRIES:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        self._latest = compiled
        runtime = [
            v for n, v in zip(self.names, arrays, strict=True) if n not in self.bound
        ]
        return compiled(*runtime)

    def _array(self, index: int, value: Any) -> np.ndarray[Any, Any]:
        """Input #index as an array; a bound input converts to its declared dtype."""
        if self.names[index] not in self.bound:
            return value  # type: ignore[no-any-return]  # the compiled call checks it
        return self._constant(index, value)

    def _constant(self, index: int, value: Any) -> np.ndarray[Any, Any]:
        """Input #index converted to its declared dtype (a bool input takes bools,
        an integer one integers, a float one numbers)."""
        name = self.names[index]
        elem_type = self.graph_inputs[index].type.tensor_type.elem_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
        array = np.asarray(value)
        kinds = {"b": "b", "f": "fiu"}.get(_kind(dtype), "iu")
        if not (_kind(array.dtype) in kinds or array.size == 0):
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

    def _compile(self, arrays: Sequence[Any]) -> Program:
        """Import with the bound inputs' values (binding more if the import needs
        them; then the cache, keyed without them, starts over) and compile."""
        from qidao.frontend.onnx import import_onnx
        from qidao.frontend.onnx.importer import with_constants
        from qidao.frontend.onnx.load import with_input_shapes

        imported: list[Any] = []
        staged: list[Any] = []  # (the model, bound and shaped; the cut's output)

        def attempt(bound: list[str]) -> None:
            values = dict(zip(self.names, arrays, strict=True))
            constants = {
                n: self._constant(self.names.index(n), values[n]) for n in bound
            }
            shapes = {
                str(i.name): tuple(np.shape(values[str(i.name)]))
                for i in self.graph_inputs
                if str(i.name) not in bound and not _is_static(i)
            }
            try:
                imported[:] = [
                    import_onnx(self.proto, input_shapes=shapes, constants=constants)
                ]
                staged.clear()
            except DataDependentShapeError as e:  # what comes before it imported
                fixed = with_input_shapes(with_constants(self.proto, constants), shapes)
                staged[:] = [fixed, e.output]
            except ConstantRequiredError as e:  # a Loop: bind what folds it, else
                if e.stage_at is None or more_to_bind(self.proto, e, bound):
                    raise  # (inputs_to_bind binds it)
                fixed = with_input_shapes(with_constants(self.proto, constants), shapes)
                staged[:] = [fixed, e.stage_at]  # run it on the host

        bound = inputs_to_bind(self.proto, self.bound, attempt)
        if bound != self.bound:
            self.bound = bound
            self.cache.clear()
        self.compiles += 1
        if staged:

            def per_call(rest: onnx.ModelProto) -> Specialized:
                return Specialized(rest, self._compile_module)

            return Staged(staged[0], staged[1], self._compile_module, per_call)
        return self._compile_module(imported[0])

    def why(self) -> str:
        """Why the model is compiled per call, in words."""
        reasons = []
        if self.bound:
            reasons.append(f"the values of its input(s) {self.bound} decide shapes")
        if has_dynamic_inputs(self.proto):
            reasons.append("its inputs have dynamic dimensions")
        cut = sorted({n.op_type for n in self.proto.graph.node} & DATA_DEPENDENT_OPS)
        if cut:
            reasons.append(
                f"a size or trip count may be data ({', '.join(cut)}: compiled in "
                "stages, qidao/frontend/onnx/staged.py)"
            )
        return "; ".join(reasons) or "its integer inputs may decide shapes"

    def static_inputs(self) -> list[tuple[str, tuple[int, ...], str]] | None:
        """(name, shape, dtype) of every input when all are float tensors of static
        shape (random ones can then be made up), else None."""
        specs = []
        for graph_input in self.graph_inputs:
            if (
                not _is_static(graph_input)
                or _elem_type(graph_input) not in _FLOAT_TYPES
            ):
                return None
            dims = graph_input.type.tensor_type.shape.dim
            dtype = helper.tensor_dtype_to_np_dtype(_elem_type(graph_input))
            specs.append(
                (
                    str(graph_input.name),
                    tuple(d.dim_value for d in dims),
                    np.dtype(dtype).name,
                )
            )
        return specs

    @property
    def latest(self) -> Program:
        """The specialization the last call ran."""
        if self._latest is None:
            raise NotCompiledYetError(
                f"this model is compiled at its first call ({self.why()}); call it "
                "first"
            )
        return self._latest

    @property
    def inputs(self) -> tuple[Any, ...]:
        return self.latest.inputs

    @property
    def outputs(self) -> tuple[Any, ...]:
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
