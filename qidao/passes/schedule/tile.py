"""``tile``: two perfectly nested loops become a grid of tiles, walked tile by tile.

    for i in [0, N)                ==>   for i_o in [0, ceildiv(N, F))
      for j in [0, M)                      for j_o in [0, ceildiv(M, G))
        body(i, j)                           for i_i in [0, min(F, N - F * i_o))
                                               for j_i in [0, min(G, M - G * j_o))
                                                 body(F * i_o + i_i, G * j_o + j_i)

Cache blocking: an F x G tile of everything the body touches stays in cache while
it is used. A transpose copy reads ``x`` down its columns, a new cache line for
every element; in 16 x 16 tiles each line it loads serves 16 elements before it is
evicted: 2048 x 2048 on one thread, 24.0 ms as lowered, 12.4 ms tiled (``qidao
bench transpose --backends qidao:none qidao:docs/tutorial/tile16.txt``).

``tile`` is ``split(i, F)``, ``split(j, G)`` and ``reorder(i_o, j_o, i_i, j_i)``
in one primitive, built from their functions (``split_loop``, ``reorder_loops``);
so the names, the tails and the legality rule are theirs: the tiled nest runs the
same iterations, and the reorder is refused when it could reverse a dependence.
All or nothing: when any step refuses, the kernel is put back as it was
(``replace_kernel``) and the error names ``tile``.

Options: ``kernel``, ``outer`` and ``inner`` (the two loops, ``inner`` directly
inside ``outer``), ``outer_factor`` and ``inner_factor`` (F and G):
``tile{kernel="main_k0_contiguous" outer="i0" inner="i1" outer_factor=32
inner_factor=32}``.

Errors (``ScheduleError`` subclasses, naming kernel and loop): an unknown kernel or
loop; ``inner`` not directly inside ``outer``; any error of ``split`` or
``reorder``.

Before (``tile{kernel="k" outer="i" inner="j" outer_factor=2 inner_factor=4}``):
```mlir
affine.for %i = 0 to 4 {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j, %i] : memref<8x4xf32>
    affine.store %v, %y[%i, %j] : memref<4x8xf32>
  } {qd.loop = "j"}
} {qd.loop = "i"}
```
After:
```mlir
affine.for %i_o = 0 to 2 {
  affine.for %j_o = 0 to 2 {
    affine.for %i_i = 0 to 2 {
      affine.for %j_i = 0 to 4 {
        %v = affine.load %x[%j_o * 4 + %j_i, %i_o * 2 + %i_i] : memref<8x4xf32>
        affine.store %v, %y[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x8xf32>
      } {qd.loop = "j_i"}
    } {qd.loop = "i_i"}
  } {qd.loop = "j_o"}
} {qd.loop = "i_o"}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qidao.passes.schedule.loops.errors import NotPerfectlyNestedError, ScheduleError
from qidao.passes.schedule.loops.nest import (
    find_loop,
    kernel_functions,
    nested_child,
    replace_kernel,
)
from qidao.passes.schedule.reorder import reorder_loops
from qidao.passes.schedule.split import split_loop


def tile_loops(
    module: ModuleOp,
    kernel: str,
    outer: str,
    inner: str,
    outer_factor: int,
    inner_factor: int,
) -> None:
    """Tile ``outer`` x ``inner`` of ``kernel`` by ``outer_factor`` x
    ``inner_factor`` (see the module docstring); all or nothing."""
    fn, outer_loop = find_loop(module, "tile", kernel, outer)
    _, inner_loop = find_loop(module, "tile", kernel, inner)
    if nested_child(outer_loop) is not inner_loop:
        raise NotPerfectlyNestedError(
            "tile", kernel, inner, f"it is not directly inside '{outer}'"
        )
    saved = fn.clone()
    try:
        split_loop(module, kernel, outer, outer_factor)
        split_loop(module, kernel, inner, inner_factor)
        order = [f"{outer}_o", f"{inner}_o", f"{outer}_i", f"{inner}_i"]
        reorder_loops(module, kernel, order)
    except ScheduleError as err:
        replace_kernel(kernel_functions(module)[kernel], saved)
        raise type(err)("tile", kernel, err.loop, err.reason) from None


@dataclass(frozen=True)
class TilePass(ModulePass):
    """Tile two perfectly nested loops: ``split`` both, then ``reorder``."""

    name = "tile"

    kernel: str
    outer: str
    inner: str
    outer_factor: int
    inner_factor: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tile_loops(
            op,
            self.kernel,
            self.outer,
            self.inner,
            self.outer_factor,
            self.inner_factor,
        )
