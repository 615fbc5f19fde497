"""``cache_write``: the tile of a memref that a loop's body writes is accumulated in a
local buffer (``memref.alloca``), copied in at the top of the body and back at the end.

    for L ...                                ==>   for L ...
      for k, for r in [0, R), for c in [0, C)        acc = alloca : memref<RxC>
        out[b0 + r, b1 + c] += ...                   for L_cw_i0, L_cw_i1: acc[..] = out[b + ..]
                                                     for k, for r, for c
                                                       acc[r, c] += ...
                                                     for L_wb_i0, L_wb_i1: out[b + ..] = acc[..]

Options: ``kernel``, ``loop`` (L, its ``qd.loop`` name), e.g. ``cache-write{
kernel="main_k0_matmul" loop="j_o"}``. With the register tile of a matmul (``split``
i by 8 and j by 32, ``reorder(i_o, j_o, k, i_i, j_i)``, ``cache_write(j_o)``), then
``vectorize`` of ``j_i``, the copy loops' inner loops, and full ``unroll`` of the
rest, LLVM keeps the 8 x 32 tile in sixteen ``<16 x float>`` registers.

The memref is the one that the ``affine.store`` ops in L's body write (there must be
exactly one). Each of its accesses in L's body is split into a part affine in the
induction variables of loops inside L (constant lower bound, a constant bound on the
trip count) and a part invariant in L's body (values defined outside L, and L's own
induction variable). The invariant parts must be equal up to a constant in each
dimension; the *footprint* is the bounding box of every access (loads included), of
at most 4096 elements. Accesses become ``acc[tile-relative index]``; the copy loops
are named ``<L>_cw_i<d>`` (copy in) and ``<L>_wb_i<d>`` (write back). Copying in keeps
the semantics when the memref was initialized before L; the box may cover elements
that the body does not touch (a strided access), which are written back unchanged.

Tails: when a loop inside L has a ``min`` upper bound (``split`` by a factor that
does not divide the extent), the copy loops of the box are clipped to the memref's
shape (``min(C, N - b)``), which must be static.

Legality (an ``IllegalScheduleError``/``LoopNotFoundError`` naming kernel, loop and
reason; the module is left as it was): L's body stores to one memref, through
``affine.store`` only, and uses it only in ``affine.load``/``affine.store``; every
index of those accesses is affine as above (no value computed inside L's body, no
``mod``/``floordiv`` of an inner loop); the footprint has at most 4096 elements; the
kernel has no loops named like the new ones. Other memrefs are untouched.

Before (``cache-write{kernel="k" loop="j_o"}``):
```mlir
affine.for %j_o = 0 to 2 {
  affine.for %k = 0 to 4 {
    affine.for %j_i = 0 to 4 {
      %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<4x8xf32>
      %b = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "k"}
} {qd.loop = "j_o"}
```
After:
```mlir
affine.for %j_o = 0 to 2 {
  %acc = memref.alloca() : memref<4xf32>
  affine.for %j_o_cw_i0 = 0 to 4 {
    %0 = affine.load %out[%j_o_cw_i0 + %j_o * 4] : memref<8xf32>
    affine.store %0, %acc[%j_o_cw_i0] : memref<4xf32>
  } {qd.loop = "j_o_cw_i0"}
  affine.for %k = 0 to 4 {
    affine.for %j_i = 0 to 4 {
      %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<4x8xf32>
      %b = affine.load %acc[%j_i] : memref<4xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %acc[%j_i] : memref<4xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "k"}
  affine.for %j_o_wb_i0 = 0 to 4 {
    %1 = affine.load %acc[%j_o_wb_i0] : memref<4xf32>
    affine.store %1, %out[%j_o_wb_i0 + %j_o * 4] : memref<8xf32>
  } {qd.loop = "j_o_wb_i0"}
} {qd.loop = "j_o"}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import AffineMapAttr, MemRefType, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from qidao.passes._footprint import compact_map, copy_nest, footprint
from qidao.passes._loops import IllegalScheduleError, check_new_names, find_loop

PRIMITIVE = "cache-write"
MAX_ELEMENTS = 4096


def _target(kernel: str, name: str, loop: affine.ForOp) -> SSAValue:
    stored: list[SSAValue] = []
    for op in loop.body.walk():
        if isinstance(op, affine.StoreOp) and not any(op.memref is m for m in stored):
            stored.append(op.memref)
    if len(stored) != 1:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            name,
            f"its body must store (affine.store) to exactly one memref, "
            f"it stores to {len(stored)}",
        )
    return stored[0]


def cache_write(module: ModuleOp, kernel: str, loop: str) -> None:
    """Accumulate the tile of the memref that ``loop``'s body writes in an alloca."""
    fn, target_loop = find_loop(module, PRIMITIVE, kernel, loop)
    plan = footprint(
        PRIMITIVE,
        kernel,
        loop,
        target_loop,
        _target(kernel, loop, target_loop),
        MAX_ELEMENTS,
    )
    rank = len(plan.extents)
    check_new_names(
        fn,
        [f"{loop}_{kind}_i{d}" for kind in ("cw", "wb") for d in range(rank)],
        PRIMITIVE,
        kernel,
        loop,
    )
    # --- rewrite: nothing fails from here on -------------------------------------
    memref_type = plan.target.type
    assert isinstance(memref_type, MemRefType)
    alloca = memref.AllocaOp.get(memref_type.element_type, shape=plan.extents)
    alloca.memref.name_hint = "acc"
    block = target_loop.body.block
    first = block.first_op
    assert first is not None
    block.insert_op_before(alloca, first)
    copy_nest(f"{loop}_cw_i", plan, alloca.memref, block, first, True)
    terminator = block.last_op
    assert isinstance(terminator, affine.YieldOp)
    copy_nest(f"{loop}_wb_i", plan, alloca.memref, block, terminator, False)
    for access in plan.accesses:
        op = access.op
        new_map, new_operands = compact_map(access.relative, list(op.indices))
        new: affine.LoadOp | affine.StoreOp
        if isinstance(op, affine.LoadOp):
            load = affine.LoadOp(alloca.memref, new_operands, AffineMapAttr(new_map))
            load.result.name_hint = op.result.name_hint
            op.result.replace_all_uses_with(load.result)
            new = load
        else:
            new = affine.StoreOp(
                op.value, alloca.memref, new_operands, AffineMapAttr(new_map)
            )
        parent = op.parent_block()
        assert parent is not None
        parent.insert_op_before(new, op)
        op.detach()
        op.erase()


@dataclass(frozen=True)
class CacheWritePass(ModulePass):
    """Accumulate the tile a loop's body writes in a local buffer (``alloca``)."""

    name = "cache-write"

    kernel: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cache_write(op, self.kernel, self.loop)
