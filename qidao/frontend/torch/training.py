"""Training through ``torch.compile(model, backend="qidao")``: AOTAutograd's forward
and backward graphs, each compiled by qidao.

When dynamo's graph needs gradients (grad mode on and an input, usually a
parameter, that requires grad), ``qidao.dynamo_backend`` hands it here and it goes
the way Inductor's does::

    dynamo's graph
      │ AOTAutograd (``aot_autograd``): functionalize, trace forward + backward
      ▼ as one joint graph of ATen ops, with ``decompositions()`` applied
    joint graph
      │ ``default_partition``: the forward ops, and the tensors the backward
      ▼ reads ("saved"), which become extra outputs of the forward graph
    forward graph, backward graph
      │ ``AtenGraph``: imported by ``FxConverter`` (``importer.py``), compiled by qidao
      ▼
    two compiled programs; AOTAutograd's autograd.Function calls them

The parameters stay graph inputs (they are not frozen as for inference): the
optimizer updates them in place and the next call reads the new values, with no
recompilation. BatchNorm's running statistics come back as forward outputs, which
AOTAutograd copies into the buffers.

**Decompositions.** ``decompositions()`` is PyTorch's core ATen table, so that
backward ops such as ``threshold_backward``, ``_softmax_backward_data``,
``native_layer_norm_backward``, ``native_batch_norm_backward`` and
``gelu_backward`` become elementwise ops, reductions and matmuls the importer
has; plus training-mode BatchNorm (``_native_batch_norm_legit_functional``) from
the full table; minus ``embedding_dense_backward``, which qidao converts whole
(``grad_ops.py``: the core decomposition is an ``index_put`` tg has no op for),
and ``nll_loss_forward``/``nll_loss_backward`` (and their ``2d`` forms), the class
index form of ``F.cross_entropy``, converted whole too (``loss_ops.py``: a
one-hot mask of the int64 target where the decompositions compute on int64 and
``scatter`` the gradient); plus ``max_pool2d_backward`` below for
``max_pool2d_with_indices_backward`` (``convolution_backward`` is core ATen and
converted whole, ``grad_ops.py``).

**Strict.** ``strict=True`` is checked on the joint graph's two halves at once
(``checked_partition``), so one ``UnsupportedTorchOpsError`` names every
unsupported op of the forward and of the backward graph, each node marked with
its graph. Without it, a graph with unsupported ops runs its supported subgraphs
in qidao and the rest in PyTorch, with a warning, as ``backend`` does for
inference.

The frontend does not import the compiler: ``aot_compile`` takes the function
that compiles a tg module.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import default_partition

from qidao.frontend.torch.backend import CompileFn, QidaoPart, compile_part
from qidao.frontend.torch.importer import (
    FxConverter,
    UnsupportedTorchOpsError,
    drop_metadata_checks,
    partition,
    unsupported_ops,
)

aten = torch.ops.aten

STRICT_NOTE = "(strict=True; without it these run in PyTorch)"


# ---- decompositions ---------------------------------------------------------


def _pair(value: int | Sequence[int], default: Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    values = [int(v) for v in value] or [int(v) for v in default]
    return (values[0], values[-1])


def max_pool2d_backward(
    grad_output: torch.Tensor,
    x: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    indices: torch.Tensor,
) -> torch.Tensor:
    """``max_pool2d_with_indices_backward`` without the indices: each output's
    gradient goes to the first element of its window (row-major) equal to the
    window's max, as PyTorch's CPU kernel picks its index (ties included: after a
    ReLU a window of zeros sends its gradient to its first zero only).

    The indices are int64, which qidao does not compute; reading them would make
    the forward graph return them. So this is the rule of ``tg.max_pool2d``'s vjp
    (``qidao/dialects/tg/grad/pool.py``) written in ATen ops, which the joint graph
    is traced with: it recomputes the max, then for each
    of the kh·kw offsets (i, j) of a window: the strided slice of the padded
    input at that offset, compared with the max and with the offsets already
    taken, selects the gradient; the slice's gradient is spread back onto the
    input's grid (a zero-padded reshape for the stride, a pad for the offset) and
    summed. The padding is the dtype's lowest finite value, not PyTorch's −∞
    (``tg.pad`` takes finite values): only a window whose inputs are all that low
    or −∞ routes differently, and NaN inputs are not routed as PyTorch routes them.
    ``ceil_mode`` is left to PyTorch's own decomposition (``NotImplemented``)."""
    if ceil_mode:
        return NotImplemented  # type: ignore[no-any-return]
    kh, kw = _pair(kernel_size, ())
    sh, sw = _pair(stride, (kh, kw))
    ph, pw = _pair(padding, ())
    dh, dw = _pair(dilation, ())
    lead, (h, w) = list(x.shape[:-2]), x.shape[-2:]
    oh, ow = grad_output.shape[-2:]
    hp, wp = h + 2 * ph, w + 2 * pw
    lowest = torch.finfo(x.dtype).min  # tg.pad takes finite values only
    padded = aten.constant_pad_nd(x, [pw, pw, ph, ph], lowest)
    best = aten.max_pool2d_with_indices(
        x, [kh, kw], [sh, sw], [ph, pw], [dh, dw], False
    )[0]
    zero = aten.scalar_tensor(0.0, dtype=grad_output.dtype)
    taken: torch.Tensor | None = None
    total: torch.Tensor | None = None
    for i in range(kh):
        for j in range(kw):
            window = padded[
                ...,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ]
            hit = aten.eq.Tensor(window, best)
            if taken is None:
                taken = hit
            else:
                hit = aten.logical_and(hit, aten.logical_not(taken))
                taken = aten.logical_or(taken, hit)
            part = aten.where.self(hit, grad_output, zero)
            if (sh, sw) != (1, 1):  # every output's value, then stride - 1 zeros
                spread = part.reshape([*lead, oh, 1, ow, 1])
                spread = aten.constant_pad_nd(spread, [0, sw - 1, 0, 0, 0, sh - 1])
                part = spread.reshape([*lead, oh * sh, ow * sw])
            top, left = i * dh, j * dw
            part = aten.constant_pad_nd(
                part,
                [left, wp - left - ow * sw, top, hp - top - oh * sh],
            )
            total = part if total is None else total + part
    assert total is not None
    return total[..., ph : ph + h, pw : pw + w]


CONVERTED_WHOLE = (
    aten.embedding_dense_backward.default,
    aten.nll_loss_forward.default,
    aten.nll_loss_backward.default,
    aten.nll_loss2d_forward.default,
    aten.nll_loss2d_backward.default,
)
"""Ops the importer converts as they are (``grad_ops.py``, ``loss_ops.py``):
their core decompositions are kept out of the table."""


@functools.cache
def decompositions() -> dict[Any, Callable[..., Any]]:
    """The decomposition table AOTAutograd traces the joint graph with (see the
    module docstring)."""
    table = dict(core_aten_decompositions())
    for op in CONVERTED_WHOLE:
        table.pop(op, None)
    table.update(
        get_decompositions(
            [
                aten._native_batch_norm_legit_functional.default,
                aten._native_batch_norm_legit.default,
                aten.native_batch_norm.default,
            ]
        )
    )
    table[aten.max_pool2d_with_indices_backward.default] = max_pool2d_backward
    return table


# ---- strict -----------------------------------------------------------------


def graph_ops(graphs: dict[str, torch.fx.GraphModule]) -> dict[str, list[str]]:
    """The unsupported ops of several graphs (named by the keys): op -> nodes,
    each node marked with its graph, ``"le (backward)"``."""
    missing: dict[str, list[str]] = {}
    for what, gm in graphs.items():
        for op, nodes in unsupported_ops(gm).items():
            missing.setdefault(op, []).extend(f"{n} ({what})" for n in nodes)
    return missing


def checked_partition(strict: bool) -> Callable[..., Any]:
    """AOTAutograd's ``default_partition``; with ``strict``, it raises one
    ``UnsupportedTorchOpsError`` for the unsupported ops of both halves."""

    def partition_fn(
        joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any
    ) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
        forward, backward = default_partition(joint, joint_inputs, **kwargs)
        drop_metadata_checks(forward)
        drop_metadata_checks(backward)
        if strict:
            missing = graph_ops({"forward": forward, "backward": backward})
            if missing:
                raise UnsupportedTorchOpsError(missing, STRICT_NOTE)
        return forward, backward

    return partition_fn


# ---- one graph --------------------------------------------------------------


class AtenGraph:
    """One of AOTAutograd's graphs (``what``: forward, backward or inference) run
    by qidao, called the boxed way (a list of tensors in, a list out).

    Outputs that are graph inputs (the forward returns the inputs the backward
    reads) are handed back as they are, and None outputs (no gradient) stay None;
    the rest are computed by one qidao program (``compiled``), or, with
    unsupported ops and ``strict`` off, by the graph with its supported subgraphs
    compiled by qidao (``parts``) and the rest run in PyTorch (``fallback_ops``).
    """

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        compile_fn: CompileFn,
        strict: bool = False,
        what: str = "forward",
    ) -> None:
        self._boxed_call = True  # called with one list (an instance attribute, so
        # that the wrappers AOTAutograd puts around the backward copy it)
        self.what = what
        self.plan, computed = _output_plan(gm)
        self.graph = _pruned(gm, computed)
        names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        kept = [n.name for n in self.graph.graph.nodes if n.op == "placeholder"]
        self.feeds = [names.index(n) for n in kept]
        """The positions of the inputs the computed outputs read."""
        self.compiled: Any = None
        self.parts: list[Any] = []
        self.fallback_ops = unsupported_ops(self.graph)
        self.run: Callable[..., Sequence[torch.Tensor]]
        if not computed:
            self.run = lambda *args: []
        elif not self.fallback_ops:
            module = FxConverter().convert(self.graph.graph, {})
            self.compiled = compile_fn(module)
            self.run = QidaoPart(self.compiled, list(range(len(kept))), kept, False)
        elif strict:
            raise UnsupportedTorchOpsError(graph_ops({what: self.graph}), STRICT_NOTE)
        else:
            self.run = self._partitioned(compile_fn)

    def _partitioned(self, compile_fn: CompileFn) -> Callable[..., Any]:
        gm = self.graph
        for name in partition(gm):
            node = next(n for n in gm.graph.nodes if n.target == name)
            sub = getattr(gm, name)
            assert isinstance(sub, torch.fx.GraphModule)
            part = compile_part(sub, node, {}, compile_fn)
            self.parts.append(part.compiled)
            setattr(gm, name, part)
        gm.recompile()
        warnings.warn(
            f"qidao: the {self.what} graph runs unsupported operator(s) in PyTorch: "
            + "; ".join(
                f"{op} ({len(nodes)}x)"
                for op, nodes in sorted(self.fallback_ops.items())
            )
            + f"; {len(self.parts)} subgraph(s) compiled by qidao (strict=True makes "
            "this an error)",
            stacklevel=2,
        )

        def run(*args: torch.Tensor) -> Sequence[torch.Tensor]:
            with torch.no_grad():
                return gm(*args)  # type: ignore[no-any-return]

        return run

    def __call__(self, args: list[Any]) -> list[Any]:
        given = list(args)
        args.clear()  # the boxed convention: the caller's list no longer holds them
        computed = self.run(*(given[k] for k in self.feeds))
        picked = {"input": given, "computed": computed}
        return [picked[kind][k] if kind in picked else None for kind, k in self.plan]


def _output_plan(gm: torch.fx.GraphModule) -> tuple[list[tuple[str, int]], list[str]]:
    """Where each output of ``gm`` comes from: ``("input", k)`` (the graph's input
    ``k``), ``("computed", k)`` (the ``k``-th of the computed nodes, named in the
    second list, each once) or ``("none", 0)``."""
    inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    computed: list[str] = []
    plan: list[tuple[str, int]] = []
    for result in output.args[0]:
        if result is None:
            plan.append(("none", 0))
        elif result.op == "placeholder":
            plan.append(("input", inputs.index(result)))
        else:
            if result.name not in computed:
                computed.append(result.name)
            plan.append(("computed", computed.index(result.name)))
    return plan, computed


def _pruned(gm: torch.fx.GraphModule, outputs: list[str]) -> torch.fx.GraphModule:
    """A copy of ``gm`` that returns only the nodes named in ``outputs`` (a tuple),
    without the ops and inputs nothing of them reads."""
    pruned = copy.deepcopy(gm)
    graph = pruned.graph
    nodes = {n.name: n for n in graph.nodes}
    old = next(n for n in graph.nodes if n.op == "output")
    with graph.inserting_before(old):
        graph.output(tuple(nodes[name] for name in outputs))
    graph.erase_node(old)
    graph.eliminate_dead_code()
    for node in list(graph.nodes):
        if node.op == "placeholder" and not node.users:
            graph.erase_node(node)
    pruned.recompile()
    return pruned


# ---- the AOTAutograd backend ------------------------------------------------


def aot_compile(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    compile_fn: CompileFn,
    strict: bool = False,
) -> Callable[..., Any]:
    """Dynamo's graph through AOTAutograd, its forward and backward graphs each
    compiled by qidao with ``compile_fn`` (see the module docstring)."""

    def compiler(what: str) -> Callable[..., AtenGraph]:
        def compile_graph(graph: torch.fx.GraphModule, inputs: Any) -> AtenGraph:
            return AtenGraph(graph, compile_fn, strict, what)

        return compile_graph

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        partition_fn=checked_partition(strict),
        decompositions=decompositions(),
    )
    return backend(gm, example_inputs)  # type: ignore[no-any-return]
