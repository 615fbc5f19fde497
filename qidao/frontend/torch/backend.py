"""Run PyTorch models with qidao: torch tensors in, torch tensors out.

```python
compiled = qidao.compile(model, example_inputs=(x,))     # TorchCompiled
y = compiled(x)                                          # same structure as model(x)
fast = torch.compile(model, backend="qidao")             # the dynamo backend
```

``compile_torch`` captures the model (``importer.capture``), then either converts the
whole graph to one tg module, or, when some operators are unsupported and
``strict`` is off, partitions the graph: each supported subgraph becomes one qidao
module and the unsupported nodes run in PyTorch, with a one-line warning naming the
operators. With ``strict=True`` an unsupported operator is an
``UnsupportedTorchOpsError`` listing all of them.

The frontend does not import the compiler: ``compile_torch`` takes the function
that compiles a tg module (``qidao.compile`` passes itself). The dynamo backend,
which calls ``qidao.compile``, is ``qidao/dynamo_backend.py``. The compiled code
computes values only: it records no autograd history.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.fx
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from qidao.errors import ArgumentError
from qidao.frontend.torch.importer import (
    Captured,
    FxConverter,
    UnsupportedTorchOpsError,
    capture,
    partition,
    to_tg,
    unsupported_ops,
)
from qidao.frontend.torch.narrow import from_numpy, to_numpy

CompileFn = Callable[[ModuleOp], Any]
"""Compiles a tg module into a callable taking and returning NumPy arrays."""


def _arrays(tensors: Sequence[Any], names: Sequence[str]) -> list[np.ndarray[Any, Any]]:
    """Torch tensors as NumPy arrays, sharing memory when already contiguous."""
    if len(tensors) != len(names):
        raise TypeError(
            f"the compiled model takes {len(names)} input(s) "
            f"({', '.join(names)}), got {len(tensors)}"
        )
    arrays = []
    for i, (name, t) in enumerate(zip(names, tensors, strict=True)):
        if not isinstance(t, torch.Tensor):
            raise ArgumentError(
                f"input '{name}' (#{i}) must be a torch.Tensor, got {type(t).__name__}"
            )
        if t.device.type != "cpu":
            raise ArgumentError(
                f"input '{name}' (#{i}) is on {t.device}; the qidao CPU code takes "
                "CPU tensors"
            )
        if t.layout != torch.strided:
            raise ArgumentError(
                f"input '{name}' (#{i}) is a {t.layout} tensor; qidao takes dense "
                "(strided) tensors: pass t.to_dense()"
            )
        if t.dtype not in _NUMPY_DTYPES:
            raise ArgumentError(
                f"input '{name}' (#{i}) has dtype {t.dtype}, which NumPy (and so "
                f"qidao's CPU code) has no type for; the dtypes are "
                f"{', '.join(str(d) for d in _NUMPY_DTYPES)}"
            )
        arrays.append(to_numpy(t.detach().resolve_conj().resolve_neg().contiguous()))
    return arrays


_NUMPY_DTYPES = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
)
"""The torch dtypes whose tensors convert to NumPy arrays (``Tensor.numpy()``;
bfloat16 as ``ml_dtypes.bfloat16``, ``narrow.to_numpy``)."""


class QidaoPart(torch.nn.Module):
    """A fused subgraph compiled with qidao, called from the PyTorch graph."""

    def __init__(
        self, compiled: Any, runtime: list[int], names: list[str], single: bool
    ) -> None:
        super().__init__()
        self.compiled = compiled
        self.runtime = runtime
        self.names = names
        self.single = single

    def forward(self, *args: Any) -> Any:
        arrays = _arrays([args[k] for k in self.runtime], self.names)
        outs = [from_numpy(a) for a in self.compiled(*arrays)]
        return outs[0] if self.single else tuple(outs)


class TorchCompiled:
    """A PyTorch model compiled by qidao; call it like the model, with tensors.

    ``compiled`` is the qidao ``Compiled`` of the whole graph (its ``ir()`` and
    ``stats``), or None when parts run in PyTorch; then ``parts`` holds the
    compiled subgraphs and ``fallback_ops`` the operators left to PyTorch.
    """

    def __init__(
        self,
        captured: Captured,
        compiled: Any | None,
        parts: list[Any],
        fallback_ops: dict[str, list[str]],
    ) -> None:
        self.captured = captured
        self.compiled = compiled
        self.parts = parts
        self.fallback_ops = fallback_ops
        self.input_names = captured.user_inputs

    @property
    def stats(self) -> dict[str, Any]:
        return self._whole().stats  # type: ignore[no-any-return]

    def ir(self, stage: str = "tg") -> str:
        """The text of one stage of the whole-graph compilation (see ``Compiled``)."""
        return self._whole().ir(stage)  # type: ignore[no-any-return]

    def _whole(self) -> Any:
        if self.compiled is None:
            raise ValueError(
                "this model runs partly in PyTorch (unsupported: "
                f"{', '.join(sorted(self.fallback_ops))}); see .parts[k].ir(...)"
            )
        return self.compiled

    def __call__(self, *args: Any) -> Any:
        if self.compiled is not None:
            arrays = _arrays(args, self.input_names)
            flat = [from_numpy(a) for a in self.compiled(*arrays)]
        else:
            flat = self._run_partitioned(args)
        c = self.captured
        written = len(flat) - c.user_outputs
        self._write_back(args, flat[:written])
        return pytree.tree_unflatten(flat[written:], c.out_spec)

    def _write_back(self, args: Sequence[Any], values: Sequence[Any]) -> None:
        """Copy the new values of what the model updates in place (``Captured.
        mutated``: a user input, a buffer) into those tensors."""
        c = self.captured
        given = dict(zip(c.user_inputs, args, strict=True))
        for name, value in zip(c.mutated, values, strict=True):
            if name is not None:
                target = given[name] if name in given else c.constants[name]
                with torch.no_grad():
                    target.copy_(value)

    def _run_partitioned(self, args: Sequence[Any]) -> list[torch.Tensor]:
        c = self.captured
        if len(args) != len(c.user_inputs):
            raise TypeError(
                f"the compiled model takes {len(c.user_inputs)} input(s) "
                f"({', '.join(c.user_inputs)}), got {len(args)}"
            )
        given = dict(zip(c.user_inputs, args, strict=True))
        inputs = [c.constants.get(name, given.get(name)) for name in c.placeholders]
        with torch.no_grad():
            outs = c.graph_module(*inputs)
        flat = pytree.tree_leaves(outs)
        return list(flat[len(flat) - c.user_outputs - len(c.mutated) :])

    def __repr__(self) -> str:
        if self.compiled is not None:
            return f"<qidao.TorchCompiled {self.compiled!r}>"
        return (
            f"<qidao.TorchCompiled {len(self.parts)} qidao part(s), PyTorch for "
            f"{', '.join(sorted(self.fallback_ops))}>"
        )


def compile_torch(
    model: Any,
    example_inputs: Sequence[Any],
    compile_fn: CompileFn,
    strict: bool = False,
    dynamic: Any = None,
) -> TorchCompiled:
    """Capture ``model`` on ``example_inputs`` and compile it with ``compile_fn``;
    with ``dynamic`` (``torch.export``'s ``dynamic_shapes``), once for every size
    of its symbolic dimensions (``qidao.frontend.torch.symbolic``)."""
    if dynamic is not None:
        from qidao.frontend.torch.symbolic import capture_symbolic

        captured, module = capture_symbolic(model, example_inputs, dynamic)
        return TorchCompiled(captured, compile_fn(module), [], {})
    captured = capture(model, example_inputs)
    missing = unsupported_ops(captured.graph_module)
    if not missing:
        module = to_tg(captured, mutations=True)
        return TorchCompiled(captured, compile_fn(module), [], {})
    if strict:
        raise UnsupportedTorchOpsError(
            missing, "(strict=True; without it these run in PyTorch)"
        )
    gm = captured.graph_module
    parts = []
    for name in partition(gm):
        node = next(n for n in gm.graph.nodes if n.target == name)
        sub = getattr(gm, name)
        assert isinstance(sub, torch.fx.GraphModule)
        part = compile_part(sub, node, captured.constants, compile_fn)
        parts.append(part.compiled)
        setattr(gm, name, part)
    gm.recompile()
    warnings.warn(
        "qidao: running unsupported operator(s) in PyTorch: "
        + "; ".join(f"{op} ({len(nodes)}x)" for op, nodes in sorted(missing.items()))
        + f"; {len(parts)} subgraph(s) compiled by qidao (strict=True makes this an "
        "error)",
        stacklevel=3,
    )
    return TorchCompiled(captured, None, parts, missing)


def compile_part(
    sub: torch.fx.GraphModule,
    call: torch.fx.Node,
    outer_constants: Mapping[str, torch.Tensor],
    compile_fn: CompileFn,
) -> QidaoPart:
    """Compile one fused subgraph; its placeholders fed by parameters (the outer
    graph's placeholders named in ``outer_constants``) are constants."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    constants: dict[str, torch.Tensor] = {}
    runtime: list[int] = []
    for k, (ph, outer) in enumerate(zip(placeholders, call.args, strict=True)):
        outer_name = outer.name if isinstance(outer, torch.fx.Node) else None
        if outer_name is not None and outer_name in outer_constants:
            constants[ph.name] = outer_constants[outer_name]
        else:
            runtime.append(k)
    module = FxConverter().convert(sub.graph, constants)
    output = next(n for n in sub.graph.nodes if n.op == "output")
    single = not isinstance(output.args[0], tuple | list)
    names = [placeholders[k].name for k in runtime]
    return QidaoPart(compile_fn(module), runtime, names, single)
