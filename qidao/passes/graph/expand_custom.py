"""``expand-custom``: each ``tg.custom`` replaced by its body, in place.

    y = custom "demo::swish"(x) { body(a) } grad {...}  ->  body(x)

A ``tg.custom`` (a user-defined op, ``qidao.custom_op``) carries its forward as tg
ops. The ``autodiff`` pass needs the op whole, to copy its ``grad`` region; every
pass after it wants ordinary tg ops, which it can fold, fuse and lower. So this
pass runs right after ``autodiff``: it moves the body's ops in front of the op,
with the block arguments replaced by the operands, replaces the op's results by
what the body yields, and erases the op (its ``grad`` region with it). A custom
op used inside another's body is expanded in turn. Nothing else changes: a module
without ``tg.custom`` is left as it is.

Before:
```mlir
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.custom "demo::swish" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
    %r = tg.mul %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tg.custom_yield %r : tensor<4xf32>
  } grad {
  }
  func.return %y : tensor<4xf32>
}
```
After:
```mlir
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = tg.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
  %r = tg.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from qidao.dialects.tg import CustomOp, CustomYieldOp


class InlineBody(RewritePattern):
    """``tg.custom`` -> the ops of its body, the results -> what the body yields."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CustomOp, rewriter: PatternRewriter) -> None:
        block = op.body.block
        terminator = block.last_op
        assert isinstance(terminator, CustomYieldOp), "tg.custom verifies"
        args: dict[SSAValue, SSAValue] = dict(zip(block.args, op.operands, strict=True))
        results = [args.get(v, v) for v in terminator.values]  # a yielded argument
        rewriter.erase(terminator)
        rewriter.inline_block(block, InsertPoint.before(op), op.operands)
        rewriter.replace(op, [], results)


@dataclass(frozen=True)
class ExpandCustomPass(ModulePass):
    """Replace every ``tg.custom`` by its body."""

    name = "expand-custom"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(InlineBody()).rewrite_module(op)
