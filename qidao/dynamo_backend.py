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
from qidao.errors import ArgumentError, QidaoError

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
    tuple; the parameters and buffers become constants (``FrozenGraph``). Symbolic
    sizes (dynamic shapes) are not compiled: that graph runs in PyTorch, with a
    warning. ``torch.compile(model, backend="qidao", options={"threads": 1})``
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
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        warnings.warn(
            "qidao: the graph has symbolic (dynamic) inputs, which qidao does not "
            "compile; it runs in PyTorch (try torch.compile(..., dynamic=False))",
            stacklevel=2,
        )
        return gm.forward  # type: ignore[no-any-return]
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
        fixed = {k: inputs[k] for k in self.frozen}
        self.fingerprint = [_fingerprint(t) for t in fixed.values()]
        runtime = tuple(t for k, t in enumerate(inputs) if k not in fixed)
        model = _WithConstants(self.gm, fixed, len(inputs))
        self.compiled = compile(model, example_inputs=runtime, **self.options)
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
