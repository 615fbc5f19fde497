"""Run PyTorch models with qidao: torch tensors in, torch tensors out.

```python
compiled = qidao.compile(model, example_inputs=(x,))     # TorchCompiled
y = compiled(x)                                          # same structure as model(x)
fast = torch.compile(model, backend="qidao")             # the dynamo backend
```

``compile_torch`` captures the model (``fx.capture``), then either converts the
whole graph to one tg module, or, when some operators are unsupported and
``strict`` is off, partitions the graph: each supported subgraph becomes one qidao
module and the unsupported nodes run in PyTorch, with a one-line warning naming the
operators. With ``strict=True`` an unsupported operator is an
``UnsupportedTorchOpsError`` listing all of them.

The frontend does not import the compiler: ``compile_torch`` takes the function
that compiles a tg module (``qidao.compile`` passes itself). ``qidao_backend`` is
the entry point ``torch.compile`` finds in the ``torch_dynamo_backends`` group; it
compiles the graph dynamo hands it through ``qidao.compile``. Dynamo passes the
module's parameters and buffers as graph inputs; the backend freezes them into
constants, as ``qidao.compile(module)`` does, so eval-mode BatchNorm folds there too.
Each call checks that those inputs are still the same tensors, unchanged (same
object, storage and version counter, which an in-place update bumps); when one
changed, the graph is compiled again with the new values, with a warning. The
compiled code computes values only: it records no autograd history.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.fx
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from qidao.frontend.fx import (
    Captured,
    FxConverter,
    UnsupportedTorchOpsError,
    capture,
    partition,
    to_tg,
    unsupported_ops,
)

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
    for name, t in zip(names, tensors, strict=True):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"input '{name}' must be a torch.Tensor, got {type(t)}")
        if t.device.type != "cpu":
            raise ValueError(
                f"input '{name}' is on {t.device}; the qidao CPU code takes CPU tensors"
            )
        arrays.append(t.detach().resolve_conj().resolve_neg().contiguous().numpy())
    return arrays


class _QidaoPart(torch.nn.Module):
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
        outs = [torch.from_numpy(a) for a in self.compiled(*arrays)]
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
            flat = [torch.from_numpy(a) for a in self.compiled(*arrays)]
        else:
            flat = self._run_partitioned(args)
        return pytree.tree_unflatten(flat, self.captured.out_spec)

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
        return list(flat[len(flat) - c.user_outputs :])

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
) -> TorchCompiled:
    """Capture ``model`` on ``example_inputs`` and compile it with ``compile_fn``."""
    captured = capture(model, example_inputs)
    missing = unsupported_ops(captured.graph_module)
    if not missing:
        return TorchCompiled(captured, compile_fn(to_tg(captured)), [], {})
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
        part = _compile_part(sub, node, captured, compile_fn)
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


def _compile_part(
    sub: torch.fx.GraphModule,
    call: torch.fx.Node,
    captured: Captured,
    compile_fn: CompileFn,
) -> _QidaoPart:
    """Compile one fused subgraph; its placeholders fed by parameters are constants."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    constants: dict[str, torch.Tensor] = {}
    runtime: list[int] = []
    for k, (ph, outer) in enumerate(zip(placeholders, call.args, strict=True)):
        outer_name = outer.name if isinstance(outer, torch.fx.Node) else None
        if outer_name is not None and outer_name in captured.constants:
            constants[ph.name] = captured.constants[outer_name]
        else:
            runtime.append(k)
    module = FxConverter().convert(sub.graph, constants)
    output = next(n for n in sub.graph.nodes if n.op == "output")
    single = not isinstance(output.args[0], tuple | list)
    names = [placeholders[k].name for k in runtime]
    return _QidaoPart(compile_fn(module), runtime, names, single)


def qidao_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any
) -> Callable[..., Any]:
    """The ``torch.compile(backend="qidao")`` backend: compile dynamo's graph.

    Dynamo's graph takes tensors (parameters and buffers included) and returns a
    tuple; the parameters and buffers become constants (``FrozenGraph``). Symbolic
    sizes (dynamic shapes) are not compiled: that graph runs in PyTorch, with a
    warning.
    """
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        warnings.warn(
            "qidao: the graph has symbolic (dynamic) inputs, which qidao does not "
            "compile; it runs in PyTorch (try torch.compile(..., dynamic=False))",
            stacklevel=2,
        )
        return gm.forward  # type: ignore[no-any-return]
    return FrozenGraph(gm, list(example_inputs), options)


_MODULE_STATE = re.compile(r"\._(parameters|buffers)\[")
"""A dynamo input source that is a module's parameter or buffer:
``L['self']._modules['bn']._buffers['running_mean']``."""


def module_state_inputs(gm: torch.fx.GraphModule) -> list[int]:
    """The positions of dynamo's graph inputs that are module parameters or buffers
    (read from each placeholder's ``grapharg`` source)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    positions = []
    for k, node in enumerate(placeholders):
        source = getattr(node.meta.get("grapharg"), "source", None)
        if source is not None and _MODULE_STATE.search(source.name):
            positions.append(k)
    return positions


class _WithConstants(torch.nn.Module):
    """Dynamo's graph with some inputs fixed: they are buffers here, so
    torch.export lifts them as constants; ``forward`` takes the others."""

    def __init__(
        self, gm: torch.fx.GraphModule, fixed: dict[int, torch.Tensor], arity: int
    ) -> None:
        super().__init__()
        self.gm = gm
        self.fixed = sorted(fixed)
        self.arity = arity
        for k, t in fixed.items():
            self.register_buffer(f"input{k}", t.detach())

    def forward(self, *args: Any) -> Any:
        given = iter(args)
        fixed = set(self.fixed)
        full = [
            getattr(self, f"input{k}") if k in fixed else next(given)
            for k in range(self.arity)
        ]
        return self.gm(*full)


class FrozenGraph:
    """Dynamo's graph compiled with its parameters and buffers as constants.

    Called with all of dynamo's inputs; the frozen ones are checked (same tensor
    object, storage and ``_version``) and, when one changed, the graph is
    compiled again with the new values.
    """

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: list[torch.Tensor],
        options: dict[str, Any],
    ) -> None:
        self.gm = gm
        self.options = options
        self.frozen = module_state_inputs(gm)
        self.compilations = 0
        self._compile(example_inputs)

    def _compile(self, inputs: Sequence[torch.Tensor]) -> None:
        import qidao

        fixed = {k: inputs[k] for k in self.frozen}
        self.fingerprint = [_fingerprint(t) for t in fixed.values()]
        runtime = tuple(t for k, t in enumerate(inputs) if k not in fixed)
        model = _WithConstants(self.gm, fixed, len(inputs))
        self.compiled = qidao.compile(model, example_inputs=runtime, **self.options)
        self.compilations += 1

    def __call__(self, *args: Any) -> Any:
        if [_fingerprint(args[k]) for k in self.frozen] != self.fingerprint:
            warnings.warn(
                "qidao: a parameter or buffer changed since the model was compiled "
                "(qidao compiles them as constants); compiling again",
                stacklevel=2,
            )
            self._compile(args)
        frozen = set(self.frozen)
        return self.compiled(*(a for k, a in enumerate(args) if k not in frozen))


def _fingerprint(t: Any) -> tuple[int, int, int]:
    """What identifies a tensor's values without reading them: the object, its
    storage and its version counter (bumped by every in-place update)."""
    return (id(t), t.data_ptr(), t._version)
