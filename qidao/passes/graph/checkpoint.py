"""``checkpoint``: keep every k-th activation of a training graph's forward and
recompute the others in the backward, trading time for memory.

``checkpoint{every=4}`` (``qidao.compile(model, grad=[...], checkpoint=4)``) runs
at the end of the graph passes, after ``fuse`` (earlier, ``cse`` would merge the
recomputation back into the forward, and the memory model would count values
that fusion removes; on unfused IR, eager mode, it works the same). The forward —
the ops that output 0, the loss, depends on — is cut into N *segments*, one per
matmul or convolution (or fusion group holding one) with the ops after it, or a
whole residual block (``_checkpoint_plan``). The activation at the end of every
k-th segment is kept for the backward; the groups of segments between kept
activations are recomputed from the kept activation before them, each just before
the first backward op that reads one of its values, so only one group's
activations are alive at a time: about N/k + k activations instead of N (the
book's (k + N/k)/N). The last group is not recomputed: its activations are alive
when the backward starts anyway.

- ``sqrt=true``: k = round(sqrt(N)).
- ``budget=B`` (bytes): the fewest recomputed FLOPs whose modelled peak stays under
  B, searched greedily: starting from every boundary kept, drop the one whose
  removal gives the lowest modelled peak (then the fewest added FLOPs, then the
  smallest largest group) until the peak fits; the every-k plans (k = 1..N) are
  candidates too, and the fitting plan with the fewest recomputed FLOPs wins. The
  model is ``_checkpoint_plan.simulate`` (every tensor alive from its op to its
  last reader, after fusion). Not optimal in general: ``exact=true`` tries all
  2^(N-1) sets of kept boundaries instead (N <= 16; about a second per 1000 sets),
  for the fewest recomputed FLOPs, then the lowest peak. A budget nothing fits is
  an error naming the smallest peak reached. ``qidao.compile`` checks the planned peak
  (``stats["peak_bytes"]``) against B after the memory planner, and tightens the
  model's budget when fusion and slot sharing land above it.

Recomputed ops carry ``qd.recompute = <group>``; the function gets
``qd.checkpoint = {segments, kept, recompute_flops}`` for ``compiled.stats``.
Results are unchanged: the clones are the same ops on the same values (bitwise the
same gradients when the same kernels run). Refused, naming the op: recomputing an
op that is not ``Pure`` (a random op, an in-place update, a call); more than one
of ``every``, ``sqrt``, ``budget``; ``exact`` with more than 16 segments.

Before (``autodiff`` has run; three segments, boundaries ``%h0`` and ``%h1``):
```mlir
%a0 = tg.matmul %x, %w0 ; %h0 = tg.relu %a0        // segment 0
%a1 = tg.matmul %h0, %w1 ; %h1 = tg.relu %a1       // segment 1
%a2 = tg.matmul %h1, %w2 ; %loss = tg.reduce_sum %a2   // segment 2
... backward: ... tg.greater %h1, 0 ... tg.matmul(transpose %h0, %g) ...
```
After ``checkpoint{every=2}``: ``%h1`` (the end of segment 1, 0-based) is kept;
segments 0-1 are a group whose backward reads ``%h0_1 = tg.relu(tg.matmul %x,
%w0) {qd.recompute = 0}``, cloned in front of its first backward reader, and
``%h0`` dies in the forward (tests/filecheck/passes/graph/checkpoint.mlir).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import CHECKPOINT_ATTR, RECOMPUTE_ATTR
from qidao.passes.graph._checkpoint_plan import (
    Chain,
    CheckpointError,
    Recompute,
    chain_of,
    every,
    groups,
    plan,
    recompute_flops,
    simulate,
    training_report,
)

__all__ = ["CheckpointError", "CheckpointPass", "choose", "training_report"]


@dataclass(frozen=True)
class CheckpointPass(ModulePass):
    """Keep every k-th segment's activation (or what fits ``budget`` bytes) and
    recompute the rest in the backward."""

    name = "checkpoint"

    every: int = 0
    """Keep every ``every``-th segment's activation (0: not this mode)."""
    sqrt: bool = False
    """``every`` = round(sqrt(N)) for N segments."""
    budget: int = 0
    """Bytes the modelled peak must stay under (0: not this mode)."""
    exact: bool = False
    """With ``budget``: try every set of kept boundaries (N <= 16) instead of the
    greedy search."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        modes = [bool(self.every), self.sqrt, bool(self.budget)]
        if sum(modes) > 1 or self.every < 0 or self.budget < 0:
            raise CheckpointError(
                f"checkpoint: every={self.every} sqrt={self.sqrt} budget="
                f"{self.budget}; give one of every=k (k >= 1), sqrt=true or "
                "budget=bytes (> 0)"
            )
        if not any(modes):
            return
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        main = [f for f in functions if f.sym_name.data == "main"] or functions[:1]
        if not main:
            return
        fn = main[0]
        chain = chain_of(fn)
        kept = choose(chain, self.every, self.sqrt, self.budget, self.exact)
        recomputes = plan(chain, kept)
        for r in recomputes:
            _apply(chain, r)
        fn.attributes[CHECKPOINT_ATTR] = DictionaryAttr(
            {
                "segments": IntegerAttr(len(chain.segments), i64),
                "kept": ArrayAttr([IntegerAttr(i, i64) for i in sorted(kept)]),
                "recompute_flops": IntegerAttr(recompute_flops(recomputes), i64),
            }
        )


def choose(
    chain: Chain,
    k: int = 0,
    sqrt: bool = False,
    budget: int = 0,
    exact: bool = False,
) -> frozenset[int]:
    """The boundaries to keep: every ``k``-th, every round(sqrt(N))-th, or the
    search under ``budget`` bytes (greedy, or ``exact``: see the module
    docstring)."""
    if budget:
        return _exact(chain, budget) if exact else _greedy(chain, budget)
    if sqrt:
        k = max(1, round(math.sqrt(len(chain.segments))))
    return every(chain, k)


def _greedy(chain: Chain, budget: int) -> frozenset[int]:
    """The plan with the fewest recomputed FLOPs under ``budget`` among the greedy
    descent's and every every-k plan's (see the module docstring)."""
    n = len(chain.segments)
    tried: dict[frozenset[int], tuple[int, int]] = {}

    def cost(kept: frozenset[int]) -> tuple[int, int]:
        if kept not in tried:
            recomputes = plan(chain, kept)
            tried[kept] = (simulate(chain, recomputes), recompute_flops(recomputes))
        return tried[kept]

    kept = frozenset(range(len(chain.boundaries)))
    while cost(kept)[0] > budget and kept:
        # the lowest peak, then the fewest FLOPs, then the smallest largest group
        # (spread evenly: a plateau's choice decides what the next steps can reach)
        best = min(
            (kept - {i} for i in kept),
            key=lambda c: (*cost(c), max(len(g) for g in groups(chain, c))),
        )
        if cost(best)[0] > cost(kept)[0]:
            break
        kept = best
    for k in range(1, n + 1):
        cost(every(chain, k))
    fits = [(f, p, sorted(c)) for c, (p, f) in tried.items() if p <= budget]
    if not fits:
        smallest = min(p for p, _ in tried.values())
        raise CheckpointError(
            f"checkpoint: no plan keeps the peak under budget={budget} bytes; the "
            f"smallest modelled peak is {smallest} bytes ({n} segments)"
        )
    return frozenset(min(fits)[2])


MAX_EXACT_SEGMENTS = 16
"""The exact search tries 2^(N-1) kept sets: up to N = 16 (32 768 plans)."""


def _exact(chain: Chain, budget: int) -> frozenset[int]:
    """The fewest recomputed FLOPs (then the lowest peak) over every set of kept
    boundaries whose modelled peak fits ``budget``."""
    n = len(chain.segments)
    if n > MAX_EXACT_SEGMENTS:
        raise CheckpointError(
            f"checkpoint: the exact search tries all 2^{n - 1} sets of kept "
            f"boundaries of {n} segments; it takes at most {MAX_EXACT_SEGMENTS} "
            "segments (use the greedy search)"
        )
    best: tuple[int, int, list[int]] | None = None
    smallest = -1
    for mask in range(1 << (n - 1)):
        kept = frozenset(i for i in range(n - 1) if mask >> i & 1)
        recomputes = plan(chain, kept)
        peak = simulate(chain, recomputes)
        smallest = peak if smallest < 0 else min(smallest, peak)
        if peak <= budget:
            key = (recompute_flops(recomputes), peak, sorted(kept))
            best = key if best is None else min(best, key)
    if best is None:
        raise CheckpointError(
            f"checkpoint: no plan keeps the peak under budget={budget} bytes; the "
            f"smallest modelled peak is {smallest} bytes ({n} segments)"
        )
    return frozenset(best[2])


def _apply(chain: Chain, r: Recompute) -> None:
    """Clone ``r.ops`` before ``r.before`` and point the backward's reads there."""
    mapping: dict[SSAValue, SSAValue] = {}
    for op in r.ops:
        clone: Operation = op.clone(value_mapper=mapping)
        clone.attributes[RECOMPUTE_ATTR] = IntegerAttr(r.group, i64)
        chain.block.insert_op_before(clone, r.before)
        for old, new in zip(op.results, clone.results, strict=True):
            mapping[old] = new
            if old.name_hint:
                new.name_hint = old.name_hint
    for v in r.values:
        for use in list(v.uses):
            top = chain.block.find_ancestor_op_in_block(use.operation)
            if (
                top is None
                or top in chain.forward
                or RECOMPUTE_ATTR in top.attributes
                or isinstance(top, func.ReturnOp)
            ):
                continue
            use.operation.operands[use.index] = mapping[v]
