"""``cache_write``: the tile of a memref that a loop's body writes is accumulated in a
local buffer (``memref.alloca``), copied in at the top of the body (unless the body
first overwrites the whole tile) and back at the end.

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

The memref is the one that the ``affine.store`` ops in L's body write; when they
write several, the one L's body also loads (the accumulator: a fused epilogue
only stores its output, an int8 product's epilogue writes ``out`` from its sums). Each of its accesses in L's body is split into a part affine in the
induction variables of loops inside L (constant lower bound, a constant bound on the
trip count) and a part invariant in L's body (values defined outside L, and L's own
induction variable). The invariant parts must be equal up to a constant in each
dimension; the *footprint* is the bounding box of every access (loads included), of
at most 4096 elements. Accesses become ``acc[tile-relative index]``; the copy loops
are named ``<L>_cw_i<d>`` (copy in) and ``<L>_wb_i<d>`` (write back). Copying in keeps
the semantics when the memref was initialized before L; the box may cover elements
that the body does not touch (a strided access), which are written back unchanged.

**No copy-in** when the first op of L's body that uses the memref is a nest that
stores to every element of the box and loads none of it (the init nest that
``compute_at(kernel, "i_init", L)`` puts there): a perfect band of ``rank`` loops
from 0, step 1, whose one access of the memref is a store, directly in the innermost
body, at the box-relative index ``[v_0, ..., v_{rank-1}]``, each loop running at
least as far as the copy-in would have (its upper bounds are constants of at least
the box's extent, or the clipped ``S_d - b_d`` itself). The values copied in would
all be overwritten before any load, so the copy loops are left out. The write-back
is what puts the tile into the memref, and is kept, but for one case:

**No write-back** when, besides, the memref is the kernel's own buffer
(``memref.alloc``/``alloca``, not an argument) and nothing outside L's body uses
it but its ``memref.dealloc``: no one reads the tile after L, so the alloca
replaces the buffer, which goes (with its dealloc). An int8 product's int32 sums
(``lowering/matmul_integer.py``), with the init and the epilogue moved into the
tile loop by ``compute_at``, then never leave the tile.

Tails: when a loop inside L has a ``min`` upper bound (``split`` by a factor that
does not divide the extent), the copy loops of the box are clipped to the memref's
shape (``min(C, N - b)``), which must be static.

Legality (an ``IllegalScheduleError``/``LoopNotFoundError`` naming kernel, loop and
reason; the module is left as it was): L's body stores to one memref (or to
several of which it loads exactly one), through
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
from xdsl.ir.affine import AffineConstantExpr, AffineExpr
from xdsl.passes import ModulePass

from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.footprint import (
    Footprint,
    compact_map,
    copy_nest,
    footprint,
)
from qidao.passes.schedule.loops.nest import (
    check_new_names,
    constant_of,
    find_loop,
    iv,
    nested_child,
    simplify,
    step_of,
)

PRIMITIVE = "cache-write"
MAX_ELEMENTS = 4096


def _target(kernel: str, name: str, loop: affine.ForOp) -> SSAValue:
    """The memref ``loop``'s body stores to; of several, the one it also loads
    (the accumulator: an epilogue only stores its output)."""
    stored: list[SSAValue] = []
    loaded: list[SSAValue] = []
    for op in loop.body.walk():
        if isinstance(op, affine.StoreOp) and not any(op.memref is m for m in stored):
            stored.append(op.memref)
        if isinstance(op, affine.LoadOp) and not any(op.memref is m for m in loaded):
            loaded.append(op.memref)
    if len(stored) == 1:
        return stored[0]
    updated = [m for m in stored if any(m is n for n in loaded)]
    if len(updated) != 1:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            name,
            f"its body must store (affine.store) to one memref, or to several of "
            f"which it also loads exactly one (the accumulator); it stores to "
            f"{len(stored)} and loads {len(updated)} of them",
        )
    return updated[0]


def _lives_inside(
    target: SSAValue, loop: affine.ForOp
) -> memref.AllocOp | memref.AllocaOp | None:
    """The kernel's own buffer (``memref.alloc``/``alloca``) ``target`` when every
    use of it but its ``memref.dealloc`` is in ``loop``'s body (nothing reads the
    tile after the loop, so it needs no write-back and the buffer can go), else
    None."""
    alloc = target.owner
    if not isinstance(alloc, memref.AllocOp | memref.AllocaOp):
        return None
    for use in target.uses:
        if isinstance(use.operation, memref.DeallocOp):
            continue
        if not loop.is_ancestor(use.operation):
            return None
    return alloc


def _stores_whole_box(loop: affine.ForOp, plan: Footprint) -> bool:
    """Whether the first op of ``loop``'s body that uses the memref is a nest that
    stores to every element of the box and loads none (the copy-in is then dead).

    The nest: a perfect band of ``rank`` loops from 0 with step 1 and no iter_args,
    holding exactly one access of the memref, a store directly in the innermost body
    at the box-relative index ``[v_0, ..., v_{rank-1}]`` (the band's induction
    variables in order); each loop's upper bound map has only results that are
    constants of at least the box's extent or, when the box is clipped, equal to
    ``S_d - b_d`` plus a constant of at least 0 (``S`` the shape, ``b`` the box's
    base), so the band covers what the copy-in would have copied."""
    target = plan.target
    first = next(
        (
            op
            for op in loop.body.block.ops
            if any(o is target for inner in op.walk() for o in inner.operands)
        ),
        None,
    )
    if not isinstance(first, affine.ForOp):
        return False
    rank = len(plan.extents)
    band = [first]
    while len(band) < rank:
        child = nested_child(band[-1])
        if child is None:
            return False
        band.append(child)
    uses = [access for access in plan.accesses if first.is_ancestor(access.op)]
    if len(uses) != 1 or not isinstance(uses[0].op, affine.StoreOp):
        return False
    (store,) = uses
    if store.op.parent_op() is not band[-1]:
        return False
    relative, operands = compact_map(store.relative, list(store.op.indices))
    ivs = [iv(b) for b in band]
    if relative.results != tuple(AffineExpr.dimension(d) for d in range(rank)) or (
        len(operands) != rank
        or not all(o is v for o, v in zip(operands, ivs, strict=True))
    ):
        return False
    memref_type = target.type
    assert isinstance(memref_type, MemRefType)
    shape = memref_type.get_shape()
    m = len(plan.invariants)
    for d, band_loop in enumerate(band):
        if (
            constant_of(band_loop.lowerBoundMap.data) != 0
            or step_of(band_loop) != 1
            or band_loop.inits
        ):
            return False
        upper = band_loop.upperBoundMap.data
        positions: list[AffineExpr] = []
        for value in band_loop.upperBoundOperands:
            found = [k for k, v in enumerate(plan.invariants) if v is value]
            if not found:
                return False
            positions.append(AffineExpr.dimension(found[0]))
        clipped = AffineExpr.constant(shape[d]) - plan.base[d]
        for result in upper.results:
            if isinstance(result, AffineConstantExpr):
                if result.value < plan.extents[d]:
                    return False
                continue
            over = result.replace_dims_and_symbols(
                positions[: upper.num_dims], positions[upper.num_dims :]
            )
            slack = simplify(over - clipped, m, 0)
            if not (
                plan.clip and isinstance(slack, AffineConstantExpr) and slack.value >= 0
            ):
                return False
    return True


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
    copy_in = not _stores_whole_box(target_loop, plan)
    # a buffer of the kernel's own that only this loop uses: the tile replaces it
    local = None if copy_in else _lives_inside(plan.target, target_loop)
    kinds = ("cw", "wb") if copy_in else () if local else ("wb",)
    check_new_names(
        fn,
        [f"{loop}_{kind}_i{d}" for kind in kinds for d in range(rank)],
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
    if copy_in:
        copy_nest(f"{loop}_cw_i", plan, alloca.memref, block, first, True)
    terminator = block.last_op
    assert isinstance(terminator, affine.YieldOp)
    if local is None:
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
    if local is not None:
        for use in list(local.memref.uses):
            use.operation.detach()
            use.operation.erase()
        local.detach()
        local.erase()


@dataclass(frozen=True)
class CacheWritePass(ModulePass):
    """Accumulate the tile a loop's body writes in a local buffer (``alloca``)."""

    name = "cache-write"

    kernel: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cache_write(op, self.kernel, self.loop)
