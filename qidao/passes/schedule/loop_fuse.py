"""``loop-fuse``: two perfectly nested loops become one loop over their product.

    for i in [li, li + N)             ==>   for i_j in [0, N * M)
      for j in [lj, lj + M)                   body(li + i_j floordiv M, lj + i_j mod M)
        body(i, j)

(The schedule method is ``Schedule.fuse``; the pass is ``loop-fuse`` because the
graph pass ``fuse`` already exists.) Options: ``kernel``, ``outer``, ``inner``:
``loop-fuse{kernel="main_k0_fused" outer="i" inner="j"}``.

Name: the fused loop is ``<outer>_<inner>`` (``qd.loop`` and its induction
variable); it keeps the outer loop's other attributes. Uses of the old induction
variables become ``i_j floordiv M`` and ``i_j mod M`` (plus the lower bounds), folded
into the affine maps that use them. iter_args passed straight through both loops
stay on the fused loop.

The fused loop runs the same iterations in the same order, so fusing is always
legal once the loops qualify. Errors: an unknown kernel or loop; ``inner`` not
directly and perfectly nested in ``outer`` (the outer body must be the inner loop
and the terminator); bounds that are not constants, or a step other than 1; a
kernel that already has a loop named ``<outer>_<inner>``.

Before (``loop-fuse{kernel="k" outer="i" inner="j"}``):
```mlir
affine.for %i = 0 to 4 {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%i, %j] : memref<4x8xf32>
    affine.store %v, %y[%i, %j] : memref<4x8xf32>
  } {qd.loop = "j"}
} {qd.loop = "i"}
```
After:
```mlir
affine.for %i_j = 0 to 32 {
  %v = affine.load %x[%i_j floordiv 8, %i_j mod 8] : memref<4x8xf32>
  affine.store %v, %y[%i_j floordiv 8, %i_j mod 8] : memref<4x8xf32>
} {qd.loop = "i_j"}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from qidao.dialects.attributes import LOOP_ATTR
from qidao.passes.schedule.loops.errors import NotPerfectlyNestedError
from qidao.passes.schedule.loops.nest import (
    check_new_names,
    constant_map,
    find_loop,
    iv,
    make_loop,
    move_body,
    nested_child,
    replace_value,
    require_constant_bounds,
)


def fuse_loops(module: ModuleOp, kernel: str, outer: str, inner: str) -> str:
    """Fuse ``inner``, perfectly nested in ``outer``, into it; return the new name."""
    fn, outer_loop = find_loop(module, "loop-fuse", kernel, outer)
    _, inner_loop = find_loop(module, "loop-fuse", kernel, inner)
    if nested_child(outer_loop) is not inner_loop:
        raise NotPerfectlyNestedError(
            "loop-fuse",
            kernel,
            inner,
            f"'{inner}' is not perfectly nested in '{outer}' (the body of "
            f"'{outer}' must be exactly '{inner}')",
        )
    outer_lb, outer_ub = require_constant_bounds(outer_loop, "loop-fuse", kernel)
    inner_lb, inner_ub = require_constant_bounds(inner_loop, "loop-fuse", kernel)
    name = f"{outer}_{inner}"
    check_new_names(fn, [name], "loop-fuse", kernel, outer)
    outer_extent = max(0, outer_ub - outer_lb)
    inner_extent = max(0, inner_ub - inner_lb)
    divisor = max(1, inner_extent)

    fused = make_loop(
        name,
        constant_map(0),
        constant_map(outer_extent * inner_extent),
        outer_loop.inits,
    )
    for key, attr in outer_loop.attributes.items():
        if key != LOOP_ATTR:
            fused.attributes[key] = attr
    block = fused.body.block
    inner_block = inner_loop.body.block
    move_body(inner_block, block)
    for old_arg, new_arg in zip(inner_block.args[1:], block.args[1:], strict=True):
        old_arg.replace_all_uses_with(new_arg)
    f = AffineExpr.dimension(0)
    replace_value(iv(inner_loop), f % divisor + inner_lb, [iv(fused)], block)
    replace_value(iv(outer_loop), f // divisor + outer_lb, [iv(fused)], block)
    Rewriter.replace_op(outer_loop, fused, fused.results)
    return name


@dataclass(frozen=True)
class LoopFusePass(ModulePass):
    """Fuse two perfectly nested loops into one over the product of their extents."""

    name = "loop-fuse"

    kernel: str
    outer: str
    inner: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_loops(op, self.kernel, self.outer, self.inner)
