"""``torch.compile(model, backend="qidao")``: the dynamo backend.

``qidao_backend`` is the entry point ``torch.compile`` finds in the
``torch_dynamo_backends`` group (``pyproject.toml``); it compiles the graph dynamo
hands it through ``qidao.compile``. Dynamo passes the module's parameters and
buffers as graph inputs; the backend freezes them into constants, as
``qidao.compile(module)`` does, so eval-mode BatchNorm folds there too. Each call
checks that those inputs are still the same tensors, unchanged (same object,
storage and version counter, which an in-place update bumps); when one changed, the
graph is compiled again with the new values, with a warning.

Training: when the graph needs gradients (grad mode is on and an input, such as a
parameter, requires grad), nothing is frozen: the graph goes through AOTAutograd,
as Inductor's does, and its forward and backward graphs are each compiled by qidao
(``qidao/frontend/torch/training.py``), so ``loss.backward()`` and torch optimizers
work as usual. ``options={"strict": True}`` then raises one error naming the
unsupported ops of both graphs instead of running them in PyTorch. qidao's own
training options (``grad``, ``optimizer``, ``checkpoint``) are refused: the
gradients come from ``loss.backward()``, the update from a ``torch.optim``
optimizer, and checkpointing from ``torch.utils.checkpoint`` in the model (its
recomputation tags survive AOTAutograd's partition; qidao compiles the forward
and the backward graph separately, so its own ``checkpoint`` pass, which needs
both in one program, cannot run here).

Errors. Dynamo wraps whatever a backend raises while compiling in its
``BackendCompilerFailed``, whose message starts ``backend='qidao' raised:``. So
that a refusal reaches the user as qidao raised it (a ``qidao.QidaoError``, such
as the ``UnsupportedTorchOpsError`` of ``strict``, or the ``TypeError`` of an
unknown option), the backend returns a graph that raises it when called
(``Refused``): the first call of the compiled model raises it, unwrapped, with its
traceback.

It sits beside ``onnx_backend.py``, above the compiler: the frontend
(``qidao/frontend/torch/backend.py``) never imports the compiler.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.compile import compile
from qidao.errors import ArgumentError, QidaoError, UnsupportedError
from qidao.frontend.symbolic import Dim

TRAINING_OPTIONS: dict[str, str] = {
    "grad": (
        "under torch.compile the gradients come from loss.backward() (AOTAutograd "
        "makes the backward graph, and qidao compiles it): drop grad=, call "
        "loss.backward() and read each parameter's .grad"
    ),
    "optimizer": (
        "under torch.compile the parameters stay PyTorch's: update them with a "
        "torch.optim optimizer (optimizer.step() after loss.backward())"
    ),
    "checkpoint": (
        "under torch.compile AOTAutograd splits the training graph into a forward "
        "and a backward graph, which qidao compiles separately, so its checkpoint "
        "pass (which needs both in one program) cannot choose what to recompute. "
        "Wrap the blocks to recompute in torch.utils.checkpoint.checkpoint(block, "
        "x, use_reentrant=False) instead: torch.compile(backend='qidao') keeps it, "
        "the backward graph recomputes their activations. (qidao.compile(model, "
        "grad=[...], checkpoint=...) checkpoints an ONNX or builder model.)"
    ),
}
"""qidao.compile's training options that have no meaning under torch.compile, with
what a torch.compile user does instead."""


def qidao_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any
) -> Callable[..., Any]:
    """The ``torch.compile(backend="qidao")`` backend: compile dynamo's graph.

    Dynamo's graph takes tensors (parameters and buffers included) and returns a
    tuple; the parameters and buffers become constants (``FrozenGraph``). A graph
    of symbolic sizes (``torch.compile(dynamic=True)``) compiles once for every
    size with ``options={"dynamic": (lo, hi)}`` (``symbolic_inputs``; inference
    only), and without it runs in PyTorch, with a warning. ``torch.compile(model, backend="qidao", options={"threads": 1})``
    hands ``options`` to ``qidao.compile`` (any of its keyword arguments but
    ``TRAINING_OPTIONS``). A refusal comes back as a graph that raises it
    (``Refused``, see the module docstring).
    """
    try:
        return _compile(gm, example_inputs, options)
    except (QidaoError, TypeError, ValueError) as error:
        return Refused(error)


class Refused:
    """A graph qidao refused to compile: calling it raises the error (the same
    object, with the traceback of the refusal), so that the user sees qidao's
    error rather than dynamo's ``BackendCompilerFailed`` around it."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.traceback = error.__traceback__

    def __call__(self, *args: Any) -> Any:
        raise self.error.with_traceback(self.traceback)


def _compile(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any]
) -> Callable[..., Any]:
    nested = options.pop("options", None)  # torch.compile(..., options={...})
    if nested is not None:
        if not isinstance(nested, dict):
            raise TypeError(
                f"torch.compile(backend='qidao', options=...) takes a dict of "
                f"qidao.compile keyword arguments, got {type(nested).__name__}"
            )
        options = {**nested, **options}
    for name, instead in TRAINING_OPTIONS.items():
        if options.get(name) is not None:
            raise ArgumentError(
                f"torch.compile(backend='qidao', options={{'{name}': "
                f"{options[name]!r}}}): qidao does not take {name}= there; {instead}"
            )
    symbolic = not all(isinstance(x, torch.Tensor) for x in example_inputs)
    if symbolic and options.get("dynamic") is None:
        warnings.warn(
            "qidao: the graph has symbolic (dynamic) sizes; it runs in PyTorch. "
            "torch.compile(..., backend='qidao', options={'dynamic': (1, 2048)}) "
            "compiles it once for every size in that range (or dynamic=False: "
            "once per shape)",
            stacklevel=2,
        )
        return gm.forward  # type: ignore[no-any-return]
    if symbolic and needs_grad(example_inputs):
        raise ArgumentError(
            "qidao: a graph with symbolic sizes is compiled for inference only; "
            "train with torch.compile(..., dynamic=False)"
        )
    if needs_grad(example_inputs):
        return trainable(gm, example_inputs, options)
    return FrozenGraph(gm, list(example_inputs), options)


def needs_grad(example_inputs: Sequence[Any]) -> bool:
    """Whether the graph is traced for training: grad mode on and an input that
    requires grad (AOTAutograd's own test)."""
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs
    )


def trainable(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any]
) -> Callable[..., Any]:
    """Dynamo's graph compiled for training: AOTAutograd's forward and backward
    graphs, each compiled by ``qidao.compile`` with ``options`` (``strict`` aside,
    which ``aot_compile`` checks on both graphs)."""
    from qidao.frontend.torch.training import aot_compile

    settings = dict(options)
    strict = bool(settings.pop("strict", False))

    def compile_graph(module: ModuleOp) -> Any:
        return compile(module, **settings)

    return aot_compile(gm, example_inputs, compile_graph, strict)


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
    torch.export lifts them as constants; ``forward`` takes the others. A symbolic
    size input (``sizes``: its position -> the position among ``forward``'s
    arguments and the axis it is the size of) is read off that tensor."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        fixed: dict[int, torch.Tensor],
        arity: int,
        sizes: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        super().__init__()
        self.gm = gm
        self.fixed = sorted(fixed)
        self.arity = arity
        self.sizes = dict(sizes or {})
        for k, t in fixed.items():
            self.register_buffer(f"input{k}", t.detach())

    def forward(self, *args: Any) -> Any:
        given = iter(args)
        fixed = set(self.fixed)
        full = [
            getattr(self, f"input{k}")
            if k in fixed
            else (
                args[self.sizes[k][0]].shape[self.sizes[k][1]]
                if k in self.sizes
                else next(given)
            )
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

    def _compile(self, inputs: Sequence[Any]) -> None:
        fixed = {k: inputs[k] for k in self.frozen}
        self.fingerprint = [_fingerprint(t) for t in fixed.values()]
        self.skipped = set(fixed) | {
            k for k, t in enumerate(inputs) if not isinstance(t, torch.Tensor)
        }
        runtime = tuple(t for k, t in enumerate(inputs) if k not in self.skipped)
        options = dict(self.options)
        sizes: dict[int, tuple[int, int]] = {}
        if len(self.skipped) > len(fixed):  # symbolic sizes: one compile for all
            options["dynamic"], sizes = symbolic_inputs(
                self.gm,
                [k for k in range(len(inputs)) if k not in self.skipped],
                options["dynamic"],
            )
        model = _WithConstants(self.gm, fixed, len(inputs), sizes)
        self.compiled = compile(model, example_inputs=runtime, **options)
        self.compilations += 1

    def __call__(self, *args: Any) -> Any:
        if [_fingerprint(args[k]) for k in self.frozen] != self.fingerprint:
            warnings.warn(
                "qidao: a parameter or buffer changed since the model was compiled "
                "(qidao compiles them as constants); compiling again",
                stacklevel=2,
            )
            self._compile(args)
        skipped = self.skipped
        return self.compiled(*(a for k, a in enumerate(args) if k not in skipped))


def symbolic_inputs(
    gm: torch.fx.GraphModule, runtime: Sequence[int], spec: Any
) -> tuple[tuple[dict[int, Dim], ...], dict[int, tuple[int, int]]]:
    """For a graph of symbolic sizes (``torch.compile(dynamic=True)``): each
    runtime tensor's symbolic axes as ``Dim``s of the range ``spec`` (``(lo, hi)``,
    the backend's ``dynamic`` option, for every size of the graph), and where each
    size input is read from (its position -> (runtime position, axis))."""
    if (
        not isinstance(spec, tuple | list)
        or len(spec) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in spec)
    ):
        raise ArgumentError(
            "torch.compile(backend='qidao', options={'dynamic': ...}) takes the "
            f"range (lo, hi) of every symbolic size of the graph; got {spec!r}"
        )
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    symbols = {
        str(n.meta.get("example_value")): k
        for k, n in enumerate(placeholders)
        if isinstance(n.meta.get("example_value"), torch.SymInt)
    }
    axes: list[dict[int, Dim]] = []
    sizes: dict[int, tuple[int, int]] = {}
    for j, k in enumerate(runtime):
        value = placeholders[k].meta.get("example_value")
        mine: dict[int, Dim] = {}
        for axis, size in enumerate(getattr(value, "shape", ())):
            name = str(size)
            if not isinstance(size, torch.SymInt) or name.isdigit():
                continue  # a static size (or one dynamo's guards made constant)
            if name not in symbols:
                raise UnsupportedError(
                    f"qidao: input '{placeholders[k].name}' axis {axis} has the size "
                    f"{name}, an expression of symbolic sizes; one symbol per axis "
                    "compiles (or torch.compile(..., dynamic=False))"
                )
            try:
                mine[axis] = Dim(name, int(spec[0]), int(spec[1]))
            except ValueError as e:
                raise ArgumentError(f"options={{'dynamic': {spec!r}}}: {e}") from None
            sizes.setdefault(symbols[name], (j, axis))
        axes.append(mine)
    unread = sorted(set(symbols) - {str(d.name) for a in axes for d in a.values()})
    if unread:
        raise UnsupportedError(
            f"qidao: the graph's symbolic size(s) {', '.join(unread)} are no input's "
            "axis: their values cannot be read off the inputs"
        )
    return tuple(axes), sizes


def _fingerprint(t: Any) -> tuple[int, int, int]:
    """What identifies a tensor's values without reading them: the object, its
    storage and its version counter (bumped by every in-place update)."""
    return (id(t), t.data_ptr(), t._version)
