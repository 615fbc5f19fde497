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

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import AffineMapAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass

from qidao.passes._loops import (
    IllegalScheduleError,
    check_new_names,
    constant_bounds,
    constant_of,
    find_loop,
    iv,
    loop_name,
    make_loop,
    max_trip_count,
    simplify,
    step_of,
)

PRIMITIVE = "cache-write"
MAX_ELEMENTS = 4096

Access = affine.LoadOp | affine.StoreOp


@dataclass
class _Access:
    """One access of the cached memref: per dimension the tile-relative expression
    (over the access's own map operands, before subtracting the box's low corner)
    and the range it takes."""

    op: Access
    relative: list[AffineExpr] = field(default_factory=lambda: list[AffineExpr]())
    low: list[int] = field(default_factory=lambda: list[int]())
    high: list[int] = field(default_factory=lambda: list[int]())


def _inside(value: SSAValue, loop: affine.ForOp) -> bool:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def _compact(
    exprs: Sequence[AffineExpr], operands: Sequence[SSAValue]
) -> tuple[AffineMap, list[SSAValue]]:
    """A map of ``exprs`` (dims over ``operands``) keeping only the operands used,
    each once, in order of first appearance (the canonical form ``substitute``
    gives)."""
    # only keep the operands that some expression uses
    used = sorted(
        {e.position for x in exprs for e in x.dfs() if isinstance(e, AffineDimExpr)}
    )
    dims: list[SSAValue] = []
    replacement = [AffineExpr.constant(0)] * len(operands)
    for position in used:
        value = operands[position]
        for k, known in enumerate(dims):
            if known is value:
                replacement[position] = AffineExpr.dimension(k)
                break
        else:
            dims.append(value)
            replacement[position] = AffineExpr.dimension(len(dims) - 1)
    results = tuple(
        simplify(x.replace_dims_and_symbols(replacement, []), len(dims), 0)
        for x in exprs
    )
    return AffineMap(len(dims), 0, results), dims


def _fail(kernel: str, loop: str, reason: str) -> IllegalScheduleError:
    return IllegalScheduleError(PRIMITIVE, kernel, loop, reason)


@dataclass
class _Plan:
    target: SSAValue
    accesses: list[_Access]
    invariants: list[SSAValue]
    base: list[AffineExpr]  # the box's low corner, dims over ``invariants``
    extents: list[int]
    clip: bool


def _plan(kernel: str, name: str, loop: affine.ForOp) -> _Plan:
    """Every check, before anything is rewritten."""
    stored: list[SSAValue] = []
    for op in loop.body.walk():
        if isinstance(op, affine.StoreOp) and not any(op.memref is m for m in stored):
            stored.append(op.memref)
    if len(stored) != 1:
        raise _fail(
            kernel,
            name,
            f"its body must store (affine.store) to exactly one memref, "
            f"it stores to {len(stored)}",
        )
    (target,) = stored
    memref_type = target.type
    assert isinstance(memref_type, MemRefType)
    rank = len(memref_type.get_shape())
    target_name = f"%{target.name_hint}" if target.name_hint else "the memref"

    inner_loops: dict[SSAValue, affine.ForOp] = {}
    for op in loop.body.walk():
        if isinstance(op, affine.ForOp):
            inner_loops[iv(op)] = op

    accesses: list[_Access] = []
    invariants: list[SSAValue] = []
    bases: list[list[AffineExpr]] = []
    clip = False
    for use in list(target.uses):
        user = use.operation
        if not loop.is_ancestor(user):
            continue
        if (
            not isinstance(user, Access)
            or user.memref is not target
            or (isinstance(user, affine.StoreOp) and user.value is target)
        ):
            raise _fail(
                kernel,
                name,
                f"{target_name} is used by {user.name} in its body; only "
                "affine.load/affine.store can be cached",
            )
        affine_map = user.map.data
        operands = list(user.indices)
        operands_dims = affine_map.num_dims
        inner_positions: list[int] = []
        invariant_positions: list[int] = []
        for position, value in enumerate(operands):
            if value in inner_loops:
                inner_positions.append(position)
            elif value is iv(loop) or not _inside(value, loop):
                invariant_positions.append(position)
            else:
                raise _fail(
                    kernel,
                    name,
                    f"an index of {target_name} ({user.name}) is computed inside its "
                    "body: indices must be affine in the loops inside it plus terms "
                    "invariant in its body",
                )
        # every operand as a dimension (a symbol ``s`` becomes dim ``num_dims + s``)
        n = len(operands)
        as_dims = affine_map.replace_dims_and_symbols(
            [AffineExpr.dimension(k) for k in range(operands_dims)],
            [AffineExpr.dimension(operands_dims + k) for k in range(n - operands_dims)],
            n,
            0,
        )
        access = _Access(user)
        base_row: list[AffineExpr] = []
        for d, expr in enumerate(as_dims.results):
            linear = AffineExpr.constant(0)
            low = high = 0
            for position in inner_positions:
                at = [AffineExpr.dimension(k) for k in range(n)]
                at[position] = AffineExpr.constant(1)
                one = expr.replace_dims_and_symbols(at, [])
                at[position] = AffineExpr.constant(0)
                zero = expr.replace_dims_and_symbols(at, [])
                coefficient = simplify(one - zero, n, 0)
                if not isinstance(coefficient, AffineConstantExpr):
                    raise _fail(
                        kernel,
                        name,
                        f"index {d} of {target_name} ({expr}) is not affine in the "
                        "loops inside it",
                    )
                c = coefficient.value
                if c == 0:
                    continue
                inner = inner_loops[operands[position]]
                lb = constant_of(inner.lowerBoundMap.data)
                trips = max_trip_count(inner)
                if lb is None or trips is None:
                    raise _fail(
                        kernel,
                        name,
                        f"the loop '{loop_name(inner)}' inside it has no constant "
                        "lower bound or no constant bound on its trip count",
                    )
                if constant_bounds(inner) is None:
                    clip = True
                last = lb + step_of(inner) * max(trips - 1, 0)
                low += min(c * lb, c * last)
                high += max(c * lb, c * last)
                linear = linear + AffineExpr.dimension(position) * c
            rest = simplify(expr - linear, n, 0)
            if any(
                (isinstance(e, AffineDimExpr) and e.position in inner_positions)
                or isinstance(e, AffineSymExpr)
                for e in rest.dfs()
            ):
                raise _fail(
                    kernel,
                    name,
                    f"index {d} of {target_name} ({expr}) is not affine in the "
                    "loops inside it",
                )
            # the invariant part over the shared list of invariant values
            shared = [AffineExpr.constant(0)] * n
            for position in invariant_positions:
                value = operands[position]
                for k, known in enumerate(invariants):
                    if known is value:
                        shared[position] = AffineExpr.dimension(k)
                        break
                else:
                    invariants.append(value)
                    shared[position] = AffineExpr.dimension(len(invariants) - 1)
            base_row.append(rest.replace_dims_and_symbols(shared, []))
            access.relative.append(linear)
            access.low.append(low)
            access.high.append(high)
        accesses.append(access)
        bases.append(base_row)

    if not accesses:  # pragma: no cover - a store always is one
        raise _fail(kernel, name, f"no access of {target_name} in its body")
    m = len(invariants)
    reference = [simplify(b, m, 0) for b in bases[0]]
    for access, row in zip(accesses, bases, strict=True):
        for d in range(rank):
            diff = simplify(row[d] - reference[d], m, 0)
            if not isinstance(diff, AffineConstantExpr):
                raise _fail(
                    kernel,
                    name,
                    f"the accesses of {target_name} differ in index {d} by "
                    f"{diff}, which is not a constant: no common tile",
                )
            access.relative[d] = access.relative[d] + diff.value
            access.low[d] += diff.value
            access.high[d] += diff.value
    lows = [min(a.low[d] for a in accesses) for d in range(rank)]
    highs = [max(a.high[d] for a in accesses) for d in range(rank)]
    extents = [h - lo + 1 for lo, h in zip(lows, highs, strict=True)]
    size = 1
    for e in extents:
        size *= e
    if size > MAX_ELEMENTS:
        shape = "x".join(map(str, extents))
        raise _fail(
            kernel,
            name,
            f"the footprint of {target_name} is {shape} = {size} elements, more "
            f"than {MAX_ELEMENTS}",
        )
    for access in accesses:
        access.relative = [r - lo for r, lo in zip(access.relative, lows, strict=True)]
    base = [simplify(r + lo, m, 0) for r, lo in zip(reference, lows, strict=True)]
    if clip and any(s < 0 for s in memref_type.get_shape()):
        raise _fail(
            kernel,
            name,
            f"a loop inside it has a min bound and {target_name} has a dynamic "
            "shape: the tile cannot be clipped",
        )
    return _Plan(target, accesses, invariants, base, extents, clip)


def _copy_nest(
    prefix: str,
    plan: _Plan,
    acc: SSAValue,
    block: Block,
    before: Operation | None,
    copy_in: bool,
) -> None:
    """The loops copying the box between ``plan.target`` and ``acc``."""
    rank = len(plan.extents)
    memref_type = plan.target.type
    assert isinstance(memref_type, MemRefType)
    shape = memref_type.get_shape()
    m = len(plan.invariants)
    ivs: list[SSAValue] = []
    holder = Block()
    current = holder
    for d in range(rank):
        upper: tuple[AffineMap, Sequence[SSAValue]]
        base = plan.base[d]
        if plan.clip and not (
            isinstance(base, AffineConstantExpr)
            and base.value + plan.extents[d] <= shape[d]
        ):
            upper = _compact(
                [
                    AffineExpr.constant(plan.extents[d]),
                    AffineExpr.constant(shape[d]) - base,
                ],
                plan.invariants,
            )
        else:
            upper = AffineMap.constant_map(plan.extents[d]), ()
        nest = make_loop(f"{prefix}{d}", (AffineMap.constant_map(0), ()), upper)
        current.add_op(nest)
        if current is not holder:
            current.add_op(affine.YieldOp.get())
        current = nest.body.block
        ivs.append(iv(nest))
    operands = [*ivs, *plan.invariants]
    global_exprs = [
        AffineExpr.dimension(d)
        + plan.base[d].replace_dims_and_symbols(
            [AffineExpr.dimension(rank + k) for k in range(m)], []
        )
        for d in range(rank)
    ]
    global_map, global_operands = _compact(global_exprs, operands)
    local_map, local_operands = _compact(
        [AffineExpr.dimension(d) for d in range(rank)], ivs
    )
    if copy_in:
        load = affine.LoadOp(plan.target, global_operands, AffineMapAttr(global_map))
        store = affine.StoreOp(
            load.result, acc, local_operands, AffineMapAttr(local_map)
        )
    else:
        load = affine.LoadOp(acc, local_operands, AffineMapAttr(local_map))
        store = affine.StoreOp(
            load.result, plan.target, global_operands, AffineMapAttr(global_map)
        )
    current.add_op(load)
    current.add_op(store)
    if current is not holder:
        current.add_op(affine.YieldOp.get())
    for op in list(holder.ops):
        op.detach()
        if before is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, before)


def cache_write(module: ModuleOp, kernel: str, loop: str) -> None:
    """Accumulate the tile of the memref that ``loop``'s body writes in an alloca."""
    fn, target_loop = find_loop(module, PRIMITIVE, kernel, loop)
    plan = _plan(kernel, loop, target_loop)
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
    _copy_nest(f"{loop}_cw_i", plan, alloca.memref, block, first, True)
    terminator = block.last_op
    assert isinstance(terminator, affine.YieldOp)
    _copy_nest(f"{loop}_wb_i", plan, alloca.memref, block, terminator, False)
    for access in plan.accesses:
        op = access.op
        new_map, new_operands = _compact(access.relative, list(op.indices))
        new: Access
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
