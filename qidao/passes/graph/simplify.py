"""``simplify``: algebraic identities, each its own pattern, each exact.

    x * 1 -> x        1 * x -> x        x / 1 -> x
    x + (-0.0) -> x   (-0.0) + x -> x   x - 0.0 -> x
    transpose(transpose(x, p), q) -> transpose(x, p∘q), or x when p∘q is identity
    reshape(reshape(x)) -> reshape(x)   view(view(x)) -> view(x)
    reshape(x) -> x, view(x) -> x       when the type does not change
    contiguous(x) -> x                  when x is row-major
    contiguous(transpose(matmul(a, b))) -> matmul(transpose(b), transpose(a))
    broadcast(x) -> x                   when the shape does not change
    conv2d(pad(x, +0.0 on H, W)) -> conv2d(x, the pad added to its padding)

Rules (the patterns live in ``_simplify_patterns.py``, one class each):
- The constant of an elementwise identity is a ``tg.constant`` splat of exactly 1.0
  or the right zero, any shape that broadcasts.
- A rewrite fires only when the value it substitutes has exactly the type of the
  result it replaces: ``x[3] + zeros[2, 3]`` broadcasts ``x``, so it stays; so does
  ``transpose(x) * 1``, whose result is row-major while ``transpose(x)`` is strided.
- Signed zeros: an identity must hold for every ``x``, bit for bit. ``x + (-0.0)``
  and ``x - 0.0`` do (``-0.0 + -0.0 = -0.0``, ``+0.0 + -0.0 = +0.0``), but
  ``x + 0.0`` does not: for ``x = -0.0`` it gives ``+0.0``. So ``x + 0.0`` and
  ``x - (-0.0)`` stay, as MLIR's ``arith.addf`` folder keeps them (it folds only
  ``addf(x, -0.0)``). PyTorch and XLA fold ``x + 0``; qidao chooses IEEE exactness.
  Frontends that emit ``x + 0`` can rely on ``fuse`` to make it nearly free.
- ``x * 1`` and ``x / 1`` are exact for every ``x``, NaN and signed zeros included.
- Layout rewrites keep the result type, so users see the same strides; a composed
  ``view`` that ``x``'s layout cannot describe directly is left as two views.
- Like MLIR's greedy driver, the pass erases every Pure op without users that it
  visits (the inner transpose of a composed pair, the unused constant 1, ...).

Before:
```mlir
%one = tg.constant dense<1.0> : tensor<4xf32>
%y = tg.mul %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.return %y : tensor<4xf32>
```
After:
```mlir
func.return %x : tensor<4xf32>
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from qidao.passes.graph._simplify_patterns import PATTERNS


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    """Apply the exact algebraic identities of ``_simplify_patterns`` until none fires."""

    name = "simplify"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([p() for p in PATTERNS])
        PatternRewriteWalker(patterns).rewrite_module(op)
