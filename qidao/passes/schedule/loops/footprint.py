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
    """Whether ``value`` comes from ``loop`` or from inside it (an op's result or a
    block argument)."""
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
    """The box of ``target`` a loop's body accesses: its low corner ``base`` (dims
    over ``invariants``) and ``extents``, and each access relative to it."""

    target: SSAValue
    accesses: list[FootprintAccess]
    invariants: list[SSAValue]
    base: list[AffineExpr]  # the box's low corner, dims over ``invariants``
    extents: list[int]
    clip: bool
    clip_dims: list[bool] = field(default_factory=list)
    """Per dimension: an index there moves with a loop that has a ``min`` bound, so
    the box may pass the memref's end there (empty: every dimension, as ``clip``)."""


# --- collecting the accesses and bounding each index ---------------------------


@dataclass
class _Scope:
    """What one ``footprint`` call looks at: the names its errors give, the loop,
    the memref and the loops inside the loop by induction variable."""

    primitive: str
    kernel: str
    name: str
    loop: affine.ForOp
    target: SSAValue
    inner_loops: dict[SSAValue, affine.ForOp]

    @property
    def shape(self) -> Sequence[int]:
        """The memref's shape (negative in a dynamic dimension)."""
        memref_type = self.target.type
        assert isinstance(memref_type, MemRefType)
        return memref_type.get_shape()

    @property
    def target_name(self) -> str:
        """The memref as errors name it."""
        name_hint = self.target.name_hint
        return f"%{name_hint}" if name_hint else "the memref"

    def fail(self, reason: str) -> IllegalScheduleError:
        """An ``IllegalScheduleError`` for ``reason``, naming the kernel and loop."""
        return IllegalScheduleError(self.primitive, self.kernel, self.name, reason)


@dataclass
class _Index:
    """One index of one access, split: ``linear`` (in the loops inside), the range
    ``[low, high]`` it takes, and ``rest`` (invariant in the body, dims over the
    access's operands); ``clip`` when a loop it moves with has a ``min`` bound."""

    linear: AffineExpr
    low: int
    high: int
    rest: AffineExpr
    clip: bool


@dataclass
class _Accesses:
    """Every access of the memref in the body, the invariant part of each of its
    indices (a row per access, dims over ``invariants``), and whether to clip."""

    accesses: list[FootprintAccess]
    bases: list[list[AffineExpr]]
    invariants: list[SSAValue]
    clip: bool
    clip_dims: dict[int, bool] = field(default_factory=dict)


def _inner_loops(loop: affine.ForOp) -> dict[SSAValue, affine.ForOp]:
    """The loops inside ``loop`` by induction variable."""
    inner_loops: dict[SSAValue, affine.ForOp] = {}
    for op in loop.body.walk():
        if isinstance(op, affine.ForOp):
            inner_loops[iv(op)] = op
    return inner_loops


def _as_access(scope: _Scope, user: Operation) -> Access:
    """``user``, a use of the memref in the body, which must index it with an
    ``affine.load``/``affine.store``."""
    if (
        not isinstance(user, Access)
        or user.memref is not scope.target
        or (isinstance(user, affine.StoreOp) and user.value is scope.target)
    ):
        raise scope.fail(
            f"{scope.target_name} is used by {user.name} in its body; only "
            "affine.load/affine.store can be cached"
        )
    return user


def _classify_operands(
    scope: _Scope, access: Access, operands: Sequence[SSAValue]
) -> tuple[list[int], list[int]]:
    """The positions of the access's map operands that are loops inside, and of
    those invariant in the body."""
    inner_positions: list[int] = []
    invariant_positions: list[int] = []
    for position, value in enumerate(operands):
        if value in scope.inner_loops:
            inner_positions.append(position)
        elif value is iv(scope.loop) or not defined_inside(value, scope.loop):
            invariant_positions.append(position)
        else:
            raise scope.fail(
                f"an index of {scope.target_name} ({access.name}) is computed "
                "inside its body: indices must be affine in the loops inside it "
                "plus terms invariant in its body"
            )
    return inner_positions, invariant_positions


def _operands_as_dims(affine_map: AffineMap, n: int) -> AffineMap:
    """``affine_map`` with every one of its ``n`` operands as a dimension (a symbol
    ``s`` becomes dim ``num_dims + s``)."""
    num_dims = affine_map.num_dims
    return affine_map.replace_dims_and_symbols(
        [AffineExpr.dimension(k) for k in range(num_dims)],
        [AffineExpr.dimension(num_dims + k) for k in range(n - num_dims)],
        n,
        0,
    )


def _not_affine(scope: _Scope, d: int, expr: AffineExpr) -> IllegalScheduleError:
    """The error for index ``d`` (``expr``) not affine in the loops inside."""
    return scope.fail(
        f"index {d} of {scope.target_name} ({expr}) is not affine in the "
        "loops inside it"
    )


def _coefficient(scope: _Scope, d: int, expr: AffineExpr, position: int, n: int) -> int:
    """The constant coefficient of operand ``position`` in ``expr`` (over ``n``
    dims)."""
    at = [AffineExpr.dimension(k) for k in range(n)]
    at[position] = AffineExpr.constant(1)
    one = expr.replace_dims_and_symbols(at, [])
    at[position] = AffineExpr.constant(0)
    zero = expr.replace_dims_and_symbols(at, [])
    coefficient = simplify(one - zero, n, 0)
    if not isinstance(coefficient, AffineConstantExpr):
        raise _not_affine(scope, d, expr)
    return coefficient.value


def _inner_range(scope: _Scope, inner: affine.ForOp) -> tuple[int, int, bool]:
    """The first and the (largest) last value of a loop inside, and whether it
    has a ``min`` bound."""
    lb = constant_of(inner.lowerBoundMap.data)
    trips = max_trip_count(inner)
    if lb is None or trips is None:
        raise scope.fail(
            f"the loop '{loop_name(inner)}' inside it has no constant "
            "lower bound or no constant bound on its trip count"
        )
    clip = constant_bounds(inner) is None
    return lb, lb + step_of(inner) * max(trips - 1, 0), clip


def _bound_index(
    scope: _Scope,
    d: int,
    expr: AffineExpr,
    operands: Sequence[SSAValue],
    inner_positions: Sequence[int],
) -> _Index:
    """Index ``d`` (``expr``, dims over ``operands``) split into its linear part in
    the loops inside (the operands at ``inner_positions``), with its range, and the
    rest."""
    n = len(operands)
    linear = AffineExpr.constant(0)
    low = high = 0
    clip = False
    for position in inner_positions:
        c = _coefficient(scope, d, expr, position, n)
        if c == 0:
            continue
        first, last, inner_clip = _inner_range(
            scope, scope.inner_loops[operands[position]]
        )
        clip = clip or inner_clip
        low += min(c * first, c * last)
        high += max(c * first, c * last)
        linear = linear + AffineExpr.dimension(position) * c
    rest = simplify(expr - linear, n, 0)
    if any(
        (isinstance(e, AffineDimExpr) and e.position in inner_positions)
        or isinstance(e, AffineSymExpr)
        for e in rest.dfs()
    ):
        raise _not_affine(scope, d, expr)
    return _Index(linear, low, high, rest, clip)


def _shared_dims(
    operands: Sequence[SSAValue],
    invariant_positions: Sequence[int],
    invariants: list[SSAValue],
) -> list[AffineExpr]:
    """Per operand, its dim in the shared list ``invariants`` (appending the new
    ones), or 0 for an operand that is not invariant."""
    shared = [AffineExpr.constant(0)] * len(operands)
    for position in invariant_positions:
        value = operands[position]
        for k, known in enumerate(invariants):
            if known is value:
                shared[position] = AffineExpr.dimension(k)
                break
        else:
            invariants.append(value)
            shared[position] = AffineExpr.dimension(len(invariants) - 1)
    return shared


def _collect_accesses(scope: _Scope) -> _Accesses:
    """Every access of the memref in the body, each index bounded; the invariant
    values they use go into one shared list."""
    collected = _Accesses([], [], [], False)
    for use in list(scope.target.uses):
        user = use.operation
        if not scope.loop.is_ancestor(user):
            continue
        access = FootprintAccess(_as_access(scope, user))
        operands = list(access.op.indices)
        inner_positions, invariant_positions = _classify_operands(
            scope, access.op, operands
        )
        as_dims = _operands_as_dims(access.op.map.data, len(operands))
        base_row: list[AffineExpr] = []
        for d, expr in enumerate(as_dims.results):
            index = _bound_index(scope, d, expr, operands, inner_positions)
            shared = _shared_dims(operands, invariant_positions, collected.invariants)
            base_row.append(index.rest.replace_dims_and_symbols(shared, []))
            access.relative.append(index.linear)
            access.low.append(index.low)
            access.high.append(index.high)
            collected.clip = collected.clip or index.clip
            collected.clip_dims[d] = collected.clip_dims.get(d, False) or index.clip
        collected.accesses.append(access)
        collected.bases.append(base_row)
    return collected


# --- combining the accesses into the box ---------------------------------------


def _align_bases(scope: _Scope, collected: _Accesses) -> list[AffineExpr]:
    """The first access's invariant part; every access's range is moved by its
    own part's (constant) difference to it."""
    m = len(collected.invariants)
    reference = [simplify(b, m, 0) for b in collected.bases[0]]
    for access, row in zip(collected.accesses, collected.bases, strict=True):
        for d in range(len(scope.shape)):
            diff = simplify(row[d] - reference[d], m, 0)
            if not isinstance(diff, AffineConstantExpr):
                raise scope.fail(
                    f"the accesses of {scope.target_name} differ in index {d} by "
                    f"{diff}, which is not a constant: no common tile",
                )
            access.relative[d] = access.relative[d] + diff.value
            access.low[d] += diff.value
            access.high[d] += diff.value
    return reference


def _box(
    scope: _Scope, accesses: Sequence[FootprintAccess], max_elements: int
) -> tuple[list[int], list[int]]:
    """The low corner (relative to the reference) and the extents of the box
    around the aligned accesses, at most ``max_elements``."""
    rank = len(scope.shape)
    lows = [min(a.low[d] for a in accesses) for d in range(rank)]
    highs = [max(a.high[d] for a in accesses) for d in range(rank)]
    extents = [h - lo + 1 for lo, h in zip(lows, highs, strict=True)]
    size = 1
    for e in extents:
        size *= e
    if size > max_elements:
        shape = "x".join(map(str, extents))
        raise scope.fail(
            f"the footprint of {scope.target_name} is {shape} = {size} elements, "
            f"more than {max_elements}",
        )
    return lows, extents


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
    scope = _Scope(primitive, kernel, name, loop, target, _inner_loops(loop))
    collected = _collect_accesses(scope)
    accesses = collected.accesses
    if not accesses:  # pragma: no cover - a store always is one
        raise scope.fail(f"no access of {scope.target_name} in its body")
    reference = _align_bases(scope, collected)
    lows, extents = _box(scope, accesses, max_elements)
    for access in accesses:
        access.relative = [r - lo for r, lo in zip(access.relative, lows, strict=True)]
    m = len(collected.invariants)
    base = [simplify(r + lo, m, 0) for r, lo in zip(reference, lows, strict=True)]
    if collected.clip and any(s < 0 for s in scope.shape):
        raise scope.fail(
            f"a loop inside it has a min bound and {scope.target_name} has a "
            "dynamic shape: the tile cannot be clipped",
        )
    clip_dims = [collected.clip_dims.get(d, False) for d in range(len(extents))]
    return Footprint(
        target,
        accesses,
        collected.invariants,
        base,
        extents,
        collected.clip,
        clip_dims,
    )


# --- copying the box -------------------------------------------------------------


def _copy_upper(
    plan: Footprint, d: int, shape: Sequence[int]
) -> tuple[AffineMap, Sequence[SSAValue]]:
    """The copy loop's upper bound in dimension ``d``: the extent, clipped to the
    memref's shape where a box may pass its end (only a dimension whose index moves
    with a ``min``-bounded loop can: the others cover elements the body reads)."""
    base = plan.base[d]
    clips = plan.clip_dims[d] if plan.clip_dims else plan.clip
    if clips and not (
        isinstance(base, AffineConstantExpr)
        and base.value + plan.extents[d] <= shape[d]
    ):
        return compact_map(
            [
                AffineExpr.constant(plan.extents[d]),
                AffineExpr.constant(shape[d]) - base,
            ],
            plan.invariants,
        )
    return AffineMap.constant_map(plan.extents[d]), ()


def _copy_ops(
    plan: Footprint, acc: SSAValue, ivs: Sequence[SSAValue], copy_in: bool
) -> tuple[affine.LoadOp, affine.StoreOp]:
    """The load and the store copying the element at ``ivs`` in the box (into
    ``acc`` when ``copy_in``, else back to ``plan.target``)."""
    rank = len(plan.extents)
    m = len(plan.invariants)
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
    return load, store


def copy_nest(
    prefix: str,
    plan: Footprint,
    acc: SSAValue,
    block: Block,
    before: Operation | None,
    copy_in: bool,
) -> None:
    """The loops copying the box between ``plan.target`` and ``acc``."""
    memref_type = plan.target.type
    assert isinstance(memref_type, MemRefType)
    shape = memref_type.get_shape()
    ivs: list[SSAValue] = []
    holder = Block()
    current = holder
    for d in range(len(plan.extents)):
        upper = _copy_upper(plan, d, shape)
        nest = make_loop(f"{prefix}{d}", (AffineMap.constant_map(0), ()), upper)
        current.add_op(nest)
        if current is not holder:
            current.add_op(affine.YieldOp.get())
        current = nest.body.block
        ivs.append(iv(nest))
    load, store = _copy_ops(plan, acc, ivs, copy_in)
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
