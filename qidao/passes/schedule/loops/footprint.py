"""The footprint of a memref in a loop's body: the box of elements that the body's
``affine.load``/``affine.store`` ops touch, as a base invariant in the body plus
constant extents, and the loops that copy such a box (shared by ``cache-write``,
``cache-read`` and ``compute-at``).

Each access's index is split into a part affine in the induction variables of the
loops inside the loop (constant lower bound, a constant bound on the trip count) and
a part invariant in the body (values defined outside it, and the loop's own
induction variable). The invariant parts must be equal up to a constant in each
dimension. ``clip`` is set when a loop inside has a ``min`` upper bound (a split
tail): copies of the box are then clipped to the memref's static shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.nest import (
    constant_bounds,
    constant_of,
    iv,
    loop_name,
    make_loop,
    max_trip_count,
    simplify,
    step_of,
)

Access = affine.LoadOp | affine.StoreOp


@dataclass
class FootprintAccess:
    """One access of the cached memref: per dimension the tile-relative expression
    (over the access's own map operands, before subtracting the box's low corner)
    and the range it takes."""

    op: Access
    relative: list[AffineExpr] = field(default_factory=lambda: list[AffineExpr]())
    low: list[int] = field(default_factory=lambda: list[int]())
    high: list[int] = field(default_factory=lambda: list[int]())


def defined_inside(value: SSAValue, loop: affine.ForOp) -> bool:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def compact_map(
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


@dataclass
class Footprint:
    target: SSAValue
    accesses: list[FootprintAccess]
    invariants: list[SSAValue]
    base: list[AffineExpr]  # the box's low corner, dims over ``invariants``
    extents: list[int]
    clip: bool


def footprint(
    primitive: str,
    kernel: str,
    name: str,
    loop: affine.ForOp,
    target: SSAValue,
    max_elements: int,
) -> Footprint:
    """The box of ``target`` that ``loop``'s body accesses, relative to a base
    invariant in the body; raises ``IllegalScheduleError`` (for ``primitive``) when
    the accesses are not affine as the module docstring says. Nothing is rewritten."""

    def _fail(kernel: str, loop: str, reason: str) -> IllegalScheduleError:
        return IllegalScheduleError(primitive, kernel, loop, reason)

    memref_type = target.type
    assert isinstance(memref_type, MemRefType)
    rank = len(memref_type.get_shape())
    target_name = f"%{target.name_hint}" if target.name_hint else "the memref"

    inner_loops: dict[SSAValue, affine.ForOp] = {}
    for op in loop.body.walk():
        if isinstance(op, affine.ForOp):
            inner_loops[iv(op)] = op

    accesses: list[FootprintAccess] = []
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
            elif value is iv(loop) or not defined_inside(value, loop):
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
        access = FootprintAccess(user)
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
    if size > max_elements:
        shape = "x".join(map(str, extents))
        raise _fail(
            kernel,
            name,
            f"the footprint of {target_name} is {shape} = {size} elements, more "
            f"than {max_elements}",
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
    return Footprint(target, accesses, invariants, base, extents, clip)


def copy_nest(
    prefix: str,
    plan: Footprint,
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
            upper = compact_map(
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
    global_map, global_operands = compact_map(global_exprs, operands)
    local_map, local_operands = compact_map(
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
