"""``collapse-unary``: a unary op applied to its own kind of result, collapsed.

    relu(relu(x)) -> relu(x)      abs(abs(x)) -> abs(x)      (idempotent)
    neg(neg(x))   -> x                                       (an involution)
    abs(neg(x))   -> abs(x)

MLIR gives ops these properties as traits (``Idempotent``, ``Involution``) that its
folder reads; qidao writes them as three patterns. Each rewrite is exact for every
element type, bit for bit: ``relu`` and ``abs`` give the same bits when applied
again (NaN and signed zeros included), ``neg`` flips the sign bit of a float and
wraps an integer (``-(-x) == x`` for the most negative one too), and
``|-x| == |x|``.

Rules:
- A rewrite fires only when the value it substitutes has exactly the type of the
  result it replaces: ``neg(neg(x))`` of a strided ``x`` (a transpose) is row-major,
  so it stays.
- The inner op stays while something else uses it; once nothing does, the rewrite
  walker erases it (a ``Pure`` op without users), as MLIR's greedy driver does.
- ``logical_not`` is not collapsed: a ``bool`` is a byte read as true when non-zero,
  and ``not(not(2))`` is 1, not 2.

Before:
```mlir
%a = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
%b = tg.relu %a : tensor<4xf32> -> tensor<4xf32>
%c = tg.neg %b : tensor<4xf32> -> tensor<4xf32>
%d = tg.neg %c : tensor<4xf32> -> tensor<4xf32>
func.return %d : tensor<4xf32>
```
After:
```mlir
%a = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
func.return %a : tensor<4xf32>
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qidao.dialects.tg import AbsOp, NegOp, ReluOp, UnaryElementwiseOp


def _replace(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace ``op`` by ``value``, if that keeps the type (strides included)."""
    if value.type == op.results[0].type:
        rewriter.replace(op, [], [value])


class CollapseIdempotent(RewritePattern):
    """``f(f(x)) -> f(x)`` for ``relu`` and ``abs``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: UnaryElementwiseOp, rewriter: PatternRewriter
    ) -> None:
        inner = op.operands[0].owner
        if isinstance(op, ReluOp | AbsOp) and type(inner) is type(op):
            _replace(op, op.operands[0], rewriter)


class CollapseInvolution(RewritePattern):
    """``neg(neg(x)) -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter) -> None:
        inner = op.operands[0].owner
        if isinstance(inner, NegOp):
            _replace(op, inner.operands[0], rewriter)


class AbsOfNeg(RewritePattern):
    """``abs(neg(x)) -> abs(x)``: the abs reads ``x`` itself."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AbsOp, rewriter: PatternRewriter) -> None:
        inner = op.operands[0].owner
        if isinstance(inner, NegOp) and inner.operands[0].type == op.operands[0].type:
            rewriter.replace(op, AbsOp(inner.operands[0]))


@dataclass(frozen=True)
class CollapseUnaryPass(ModulePass):
    """Collapse repeated idempotent unary ops and double negations."""

    name = "collapse-unary"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns = [CollapseIdempotent(), CollapseInvolution(), AbsOfNeg()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
