"""``split``: one loop of extent N becomes an outer loop over tiles and an inner loop
within a tile.

    for i in [lb, lb + N)        ==>   for i_o in [0, ceildiv(N, F))
      body(i)                            for i_i in [0, min(F, N - F * i_o))
                                           body(lb + F * i_o + i_i)

Options: ``kernel`` (the kernel's function name), ``loop`` (its ``qd.loop`` name),
``factor`` (F, the inner extent), e.g. ``split{kernel="main_k0_fused" loop="i0"
factor=4}``.

Names: the outer loop is ``<loop>_o``, the inner ``<loop>_i`` (both ``qd.loop`` and
the induction variables' names). Other attributes of the loop stay on the outer one.

Uses of the old induction variable become ``F * i_o + i_i`` (plus ``lb``), folded
into the maps of the ``affine.load``/``store``/``apply``/``min`` that use it; any
other use reads an ``affine.apply``. iter_args are carried through both loops.

A loop over a symbolic dimension (``qd.symbolic``, ``mark-symbolic-loops``) splits
into whole tiles: its outer loop runs ``ceildiv(size, F)`` times at run time
(``qd.trip``), so the last tile may compute past the call's size, into rows that
every buffer has; one that reduces (``qd.exact``) is refused.

Tail: when F divides N the inner loop runs exactly F times (a constant bound);
otherwise its upper bound is ``min(F, N - F * i_o)``, so the last tile is shorter
and the nest runs exactly the iterations of the original loop, in the same order.
Split is therefore always legal; it never changes a result.

Errors (``ScheduleError`` subclasses, naming kernel and loop): an unknown kernel or
loop; ``factor < 1``; bounds that are not constants or a step other than 1; a kernel
that already has a loop named ``<loop>_o`` or ``<loop>_i``.

Before (``split{kernel="k" loop="i" factor=4}``):
```mlir
affine.for %i = 0 to 10 {
  %v = affine.load %x[%i] : memref<10xf32>
  affine.store %v, %y[%i] : memref<10xf32>
} {qd.loop = "i"}
```
After:
```mlir
affine.for %i_o = 0 to 3 {
  affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
    %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
    affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
  } {qd.loop = "i_i"}
} {qd.loop = "i_o"}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from qidao.dialects.attributes import EXACT_ATTR, LOOP_ATTR, TRIP_ATTR
from qidao.passes.schedule.loops.errors import InvalidArgumentError, SymbolicLoopError
from qidao.passes.schedule.loops.nest import (
    check_new_names,
    constant_map,
    find_loop,
    iv,
    make_loop,
    move_body,
    replace_value,
    require_constant_bounds,
    symbolic_dim,
)


def split_loop(
    module: ModuleOp, kernel: str, loop: str, factor: int
) -> tuple[str, str]:
    """Split ``loop`` of ``kernel`` by ``factor``; return the new loops' names."""
    if factor < 1:
        raise InvalidArgumentError(
            "split", kernel, loop, f"factor must be at least 1, got {factor}"
        )
    fn, old = find_loop(module, "split", kernel, loop)
    lb, ub = require_constant_bounds(old, "split", kernel)
    if EXACT_ATTR in old.attributes:
        raise SymbolicLoopError(
            "split",
            kernel,
            loop,
            f"it reduces over the symbolic dimension '{symbolic_dim(old)}', so it "
            "must run exactly the call's size: whole tiles past it would add rows "
            "that are not there",
        )
    outer_name, inner_name = f"{loop}_o", f"{loop}_i"
    check_new_names(fn, [outer_name, inner_name], "split", kernel, loop)
    extent = max(0, ub - lb)
    tiles = -(-extent // factor)

    outer = make_loop(outer_name, constant_map(0), constant_map(tiles), old.inits)
    outer_iv = iv(outer)
    upper: tuple[AffineMap, list[SSAValue]]
    if extent % factor == 0:
        upper = AffineMap.constant_map(factor), []
    elif tiles == 1:
        upper = AffineMap.constant_map(extent), []
    else:
        tail = AffineExpr.constant(extent) - AffineExpr.dimension(0) * factor
        upper = AffineMap(1, 0, (AffineExpr.constant(factor), tail)), [outer_iv]
    inner = make_loop(
        inner_name, constant_map(0), upper, list(outer.body.block.args[1:])
    )
    outer.body.block.add_op(inner)
    outer.body.block.add_op(affine.YieldOp.get(*inner.results))

    for key, attr in old.attributes.items():
        if key != LOOP_ATTR:
            outer.attributes[key] = attr
    trip = old.attributes.get(TRIP_ATTR)
    if isinstance(trip, AffineMapAttr):  # over a symbolic dimension: whole tiles
        (count,) = trip.data.results
        outer.attributes[TRIP_ATTR] = AffineMapAttr(
            AffineMap(0, 1, (count.ceil_div(factor),))
        )
    inner_block = inner.body.block
    old_block = old.body.block
    move_body(old_block, inner_block)
    for old_arg, new_arg in zip(old_block.args[1:], inner_block.args[1:], strict=True):
        old_arg.replace_all_uses_with(new_arg)
    index = AffineExpr.dimension(0) * factor + AffineExpr.dimension(1) + lb
    replace_value(old_block.args[0], index, [outer_iv, iv(inner)], inner_block)
    Rewriter.replace_op(old, outer, outer.results)
    return outer_name, inner_name


@dataclass(frozen=True)
class SplitPass(ModulePass):
    """Split one loop into ``<loop>_o`` over tiles and ``<loop>_i`` within a tile."""

    name = "split"

    kernel: str
    loop: str
    factor: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        split_loop(op, self.kernel, self.loop, self.factor)
