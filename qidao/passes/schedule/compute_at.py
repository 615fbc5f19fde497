"""``compute_at``: a top-level nest moves into a tile loop of another nest and
computes only that tile (TVM's ``compute_at`` and ``reverse_compute_at`` in one).

    for i_init, j_init:                   ==>   for i_o, j_o:
      out[i, j] = 0                                 for i_init in [0, 8), j_init in [0, 32):
    for i_o, j_o:                                     out[8 i_o + i_init, 32 j_o + j_init] = 0
      for k, i_i, j_i:                              for k, i_i, j_i:
        out[8 i_o + i_i, 32 j_o + j_i] += ..          out[..] += ..
    for i_epi, j_epi:                               for i_epi in [0, 8), j_epi in [0, 32):
      out[i, j] = relu(out[i, j] + b[j])              out[8 i_o + i_epi, ..] = relu(..)

Options: ``kernel``, ``nest`` (N: the ``qd.loop`` name of the outermost loop of a
top-level nest of the kernel), ``loop`` (L: a loop of another top-level nest T),
e.g. ``compute-at{kernel="main_k0_fused" nest="i_epi" loop="j_o"}``. N goes to the
start of L's body when it came before T (a producer, such as the init nest), to
its end (before the terminator) when it came after (a consumer, such as a fused
epilogue). Its loops keep their names (they move, so names stay unique) and now run
over the *tile*: the footprint (``loops/footprint.py``) of the memref M that N writes in
L's body, at most ``E_d`` elements in dimension ``d`` from a base ``b_d`` invariant in
the body. N's loop ``d`` runs over ``[0, E_d)``, or over ``[0, min(E_d, S_d - b_d))``
where the last tile passes the end of M's shape ``S`` (a split tail), and its
induction variable ``v`` becomes ``b_d + v`` in N's indices. A loop of N over a
symbolic dimension (``qd.symbolic``) runs over a tile of it after the move, so it
loses the tag: the tile loop decides how many tiles a call computes.

A consumer N that writes a memref T does not touch (an int8 product's epilogue
writes ``out`` from the int32 sums T accumulates in a buffer of the kernel's own)
is tiled by the one memref it reads that T writes, M = the sums: N must read M
and write its own output pointwise, both of M's shape, and nothing from T to N
may touch the output. Each tile of the output is then computed from the finished
tile of M, right after L's body finishes it.

With the register tile of a fused matmul (``split`` i by 8 and j by 32,
``reorder(i_o, j_o, k, i_i, j_i)``), ``compute_at`` of the init nest ``i_init`` and
of the epilogue nest ``i_epi`` at ``j_o`` put the whole life of an 8 x 32 tile of
``out`` in one ``j_o`` iteration; ``cache_write(j_o)`` then keeps it in registers
with no copy-in (the init fills it) and one write-back of the finished values.

Legality (an ``IllegalScheduleError``/``LoopNotFoundError`` naming kernel, loop and
reason; the module is left as it was):

1. N is a top-level op of the kernel and L is not inside it.
2. N is *pointwise* on M: its outermost ``rank(M)`` loops are a perfect band with
   constant bounds ``[0, S_d)``, step 1, no iter_args, and every access of M in N
   indexes exactly those loops' induction variables in order (``out[i, j]``; a
   dimension of size 1 may be indexed by 0, as broadcasts do). M is
   the only memref N writes; N uses memrefs only in ``affine.load``/``affine.store``.
3. Every access of M in T is in L's body, through ``affine.load``/``affine.store``
   with indices the footprint can describe (affine in the loops inside L plus terms
   invariant in L's body).
4. The tiles cover M exactly once. Let A_0 = T, ..., A_m = L be L and the loops
   around it (all ``affine.for`` with constant bounds and at least one iteration).
   Each ``b_d`` must be ``c_d + a * v`` with ``v`` the induction variable of one
   A (or ``c_d`` alone), no A in two dimensions, and every A with more than one
   iteration in some dimension (else tiles repeat). A dimension over A (first
   value ``lo``, step ``s``, last value ``hi``) needs ``a * s = E_d`` (tiles abut;
   unless A runs once), ``c_d + a * lo = 0`` (they start at 0) and
   ``c_d + a * hi + E_d >= S_d`` (they reach the end); a dimension over no loop
   needs ``c_d = 0`` and ``E_d >= S_d``. Each dimension's intervals then partition ``[0, S_d)`` and the
   tiles, their product, partition M; L's body for one tile touches only that tile.
5. No op between N and T touches M or writes a memref N reads, T writes no memref N
   reads, and (N after T) every value N uses from outside it is defined before T.

With 3 and 4, computing tile ``t`` right before (after) L's body for ``t`` is what
running all of N before (after) T computed: no other iteration of L's body touches
``t``, and nothing else N reads changes in between.

Before (``compute-at{kernel="k" nest="i_epi" loop="j_o"}``):
```mlir
affine.for %j_o = 0 to 2 {
  affine.for %k = 0 to 3 {
    affine.for %j_i = 0 to 4 {
      %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x8xf32>
      %c = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
      %s = arith.addf %a, %c : f32
      affine.store %s, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "k"}
} {qd.loop = "j_o"}
affine.for %i_epi = 0 to 8 {
  %v = affine.load %out[%i_epi] : memref<8xf32>
  %r = arith.maximumf %v, %zero : f32
  affine.store %r, %out[%i_epi] : memref<8xf32>
} {qd.loop = "i_epi"}
```
After:
```mlir
affine.for %j_o = 0 to 2 {
  affine.for %k = 0 to 3 {
    ...
  } {qd.loop = "k"}
  affine.for %i_epi = 0 to 4 {
    %v = affine.load %out[%j_o * 4 + %i_epi] : memref<8xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %out[%j_o * 4 + %i_epi] : memref<8xf32>
  } {qd.loop = "i_epi"}
} {qd.loop = "j_o"}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import AffineMapAttr, MemRefType, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from qidao.dialects.attributes import SYMBOLIC_ATTR, TRIP_ATTR
from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.footprint import Footprint, compact_map, footprint
from qidao.passes.schedule.loops.nest import (
    constant_bounds,
    find_loop,
    fold_apply,
    indices_are,
    iv,
    loop_name,
    nested_child,
    set_bounds,
    simplify,
    step_of,
)

PRIMITIVE = "compute-at"
NO_LIMIT = 1 << 62
"""The footprint may be any size: the tile is computed in place, not copied."""

_STRUCTURE = (
    affine.ForOp,
    affine.YieldOp,
    affine.LoadOp,
    affine.StoreOp,
    affine.ApplyOp,
    affine.MinOp,
    affine.IfOp,
)


def _label(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a memref"


def _alias_key(value: SSAValue) -> object:
    """Memrefs with the same key may alias: a ``llvm.noalias`` argument or an
    allocation is its own key; every other memref shares one."""
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        if (
            isinstance(parent, func.FuncOp)
            and parent.arg_attrs is not None
            and "llvm.noalias" in parent.arg_attrs.data[value.index].data
        ):
            return value
        return "may-alias"
    if isinstance(value.owner, memref.AllocOp | memref.AllocaOp):
        return value
    return "may-alias"


@dataclass
class _Effects:
    """The memrefs (by alias key) that some ops read and write; an op other than
    ``affine.load``/``affine.store`` taking a memref counts as both."""

    reads: set[object]
    writes: set[object]
    other: list[Operation]  # ops using a memref other than through load/store


def _effects(ops: Sequence[Operation]) -> _Effects:
    """The effects of ``ops`` and of every op inside them."""
    effects = _Effects(set(), set(), [])
    for top in ops:
        for op in top.walk():
            if isinstance(op, affine.LoadOp):
                effects.reads.add(_alias_key(op.memref))
            elif isinstance(op, affine.StoreOp):
                effects.writes.add(_alias_key(op.memref))
            else:
                memrefs = [v for v in op.operands if isinstance(v.type, MemRefType)]
                for value in memrefs:
                    effects.reads.add(_alias_key(value))
                    effects.writes.add(_alias_key(value))
                if memrefs or not (
                    isinstance(op, _STRUCTURE) or is_side_effect_free(op)
                ):
                    effects.other.append(op)
    return effects


@dataclass(frozen=True)
class _Names:
    """The kernel and the loop that an error names."""

    kernel: str
    loop: str

    def fail(self, reason: str) -> IllegalScheduleError:
        """An ``IllegalScheduleError`` for ``reason``, naming the kernel and loop."""
        return IllegalScheduleError(PRIMITIVE, self.kernel, self.loop, reason)


def _pointwise_band(
    kernel: str, nest: str, moved: affine.ForOp
) -> tuple[SSAValue, list[affine.ForOp]]:
    """M, the memref N writes, and N's band of ``rank(M)`` loops (check 2)."""
    names = _Names(kernel, nest)
    effects = _effects([moved])
    if effects.other:
        op = effects.other[0]
        raise names.fail(
            f"the nest holds {op.name}; compute_at moves nests of affine loops, "
            "loads, stores and ops without side effects"
        )
    stored: list[SSAValue] = []
    for op in moved.walk():
        if isinstance(op, affine.StoreOp) and not any(op.memref is m for m in stored):
            stored.append(op.memref)
    if len(stored) != 1:
        raise names.fail(
            f"the nest must store to exactly one memref, it stores to {len(stored)}"
        )
    (target,) = stored
    memref_type = target.type
    assert isinstance(memref_type, MemRefType)
    shape = list(memref_type.get_shape())
    if not shape or any(s < 0 for s in shape):
        raise names.fail(
            f"{_label(target)} must have a static shape of rank 1 or more, "
            f"it is {memref_type}"
        )
    band = [moved]
    while len(band) < len(shape):
        child = nested_child(band[-1])
        if child is None:
            raise names.fail(
                f"not pointwise: {_label(target)} has rank {len(shape)}, but the "
                f"nest's loops are not a perfect band of {len(shape)}"
            )
        band.append(child)
    for d, loop in enumerate(band):
        if constant_bounds(loop) != (0, shape[d]) or step_of(loop) != 1 or loop.inits:
            raise names.fail(
                f"not pointwise: loop '{loop_name(loop)}' must run over [0, {shape[d]}) "
                "(the whole of dimension "
                f"{d} of {_label(target)}) with step 1 and no iter_args"
            )
    ivs = [iv(loop) for loop in band]
    for use in target.uses:
        user = use.operation
        if not moved.is_ancestor(user):
            continue
        assert isinstance(user, affine.LoadOp | affine.StoreOp)  # checked above
        if not indices_are(user, ivs, shape):
            loops = ", ".join(str(loop_name(loop)) for loop in band)
            raise names.fail(
                f"not pointwise: {user.name} of {_label(target)} must index it with "
                f"[{loops}] exactly"
            )
    return target, band


Bound = tuple[AffineMap, Sequence[SSAValue]]
Trip = tuple[int, int, int]
"""A loop's first value, step and last value."""


# --- check 4: the tiles partition M ----------------------------------------------


@dataclass
class _Tiling:
    """What check 4 reads: the names its errors give, the footprint of M in L's
    body, and the trips of L and the loops around it by induction variable."""

    names: _Names
    plan: Footprint
    trips: dict[SSAValue, Trip]

    @property
    def shape(self) -> Sequence[int]:
        """M's (static) shape."""
        memref_type = self.plan.target.type
        assert isinstance(memref_type, MemRefType)
        return memref_type.get_shape()

    def where(self, d: int) -> str:
        """Dimension ``d`` of M, as errors name it."""
        return f"dimension {d} of {_label(self.plan.target)}"


def _loop_trips(
    names: _Names, loop: affine.ForOp, top: affine.ForOp
) -> dict[SSAValue, Trip]:
    """The trip of L and of each loop around it up to T (the A of check 4), by
    induction variable, L's first; each needs constant bounds and an iteration."""
    enclosing: list[affine.ForOp] = [loop]
    while enclosing[-1] is not top:
        parent = enclosing[-1].parent_op()
        if not isinstance(parent, affine.ForOp):
            what = parent.name if parent is not None else "nothing"
            raise names.fail(f"it is inside {what}; only loops may enclose it")
        enclosing.append(parent)
    trips: dict[SSAValue, Trip] = {}
    for outer in enclosing:
        bounds = constant_bounds(outer)
        if bounds is None:
            raise names.fail(
                f"loop '{loop_name(outer)}' has bounds that are not constants; the "
                "loops around the tile must have constant bounds"
            )
        lb, ub = bounds
        step = step_of(outer)
        count = -(-(ub - lb) // step)
        if count < 1:
            raise names.fail(f"loop '{loop_name(outer)}' runs no iteration")
        trips[iv(outer)] = (lb, step, lb + step * (count - 1))
    return trips


def _start(tiling: _Tiling, d: int) -> tuple[int, list[tuple[SSAValue, int]]]:
    """The tile's start in dimension ``d`` as ``c + sum(a * v)``: ``c`` and the
    loops ``v`` with a coefficient ``a`` other than 0."""
    plan = tiling.plan
    base = plan.base[d]
    m = len(plan.invariants)
    not_affine = (
        f"the tile's start in dimension {d} of {_label(plan.target)} "
        f"({base}) is not affine in the loops around it"
    )
    zero = [AffineExpr.constant(0)] * m
    constant = simplify(base.replace_dims_and_symbols(zero, []), m, 0)
    linear: list[tuple[SSAValue, int]] = []
    rest = base - constant
    for k, value in enumerate(plan.invariants):
        at = list(zero)
        at[k] = AffineExpr.constant(1)
        coefficient = simplify(base.replace_dims_and_symbols(at, []) - constant, m, 0)
        if not isinstance(coefficient, AffineConstantExpr):
            raise tiling.names.fail(not_affine)
        if coefficient.value != 0:
            linear.append((value, coefficient.value))
            rest = rest - AffineExpr.dimension(k) * coefficient.value
    if not isinstance(constant, AffineConstantExpr) or not isinstance(
        simplify(rest, m, 0), AffineConstantExpr
    ):
        raise tiling.names.fail(not_affine)
    return constant.value, linear


def _fixed_upper(tiling: _Tiling, d: int, c: int) -> Bound:
    """N's upper bound in dimension ``d``, where no loop moves the tile (it starts
    at ``c``): the tile must be the whole dimension."""
    extent = tiling.plan.extents[d]
    size = tiling.shape[d]
    if c != 0 or extent < size:
        raise tiling.names.fail(
            f"the tiles do not cover {tiling.where(d)}: they are [{c}, {c + extent}) "
            f"of [0, {size})"
        )
    return AffineMap.constant_map(min(extent, size)), ()


def _moving_loop(
    tiling: _Tiling,
    d: int,
    linear: list[tuple[SSAValue, int]],
    used: dict[SSAValue, int],
) -> tuple[SSAValue, int]:
    """The one loop (and its coefficient) that moves the tile in dimension ``d``,
    which moves it in no other dimension (recorded in ``used``)."""
    if len(linear) > 1:
        loops = " and ".join(f"'{_loop_of(v)}'" for v, _ in linear)
        raise tiling.names.fail(
            f"the tile's start in {tiling.where(d)} moves with two loops, {loops}; "
            "one loop per dimension is supported"
        )
    value, a = linear[0]
    if value in used:
        raise tiling.names.fail(
            f"loop '{_loop_of(value)}' moves the tile in two dimensions of "
            f"{_label(tiling.plan.target)}"
        )
    used[value] = d
    return value, a


def _moving_upper(tiling: _Tiling, d: int, c: int, value: SSAValue, a: int) -> Bound:
    """N's upper bound in dimension ``d``, where the tile starts at ``c + a * v``
    (``v``: ``value``): the tiles must abut and cover the dimension; the last one
    is clipped where it passes the end."""
    plan = tiling.plan
    extent = plan.extents[d]
    size = tiling.shape[d]
    first, step, last = tiling.trips[value]
    if a * step != extent and first != last:
        raise tiling.names.fail(
            f"the tiles of {tiling.where(d)} do not abut: the tile has {extent} "
            f"elements, but loop '{_loop_of(value)}' moves it by {a * step}"
        )
    if c + a * first != 0 or c + a * last + extent < size:
        raise tiling.names.fail(
            f"the tiles do not cover {tiling.where(d)}: they are "
            f"[{c + a * first}, {c + a * last + extent}) of [0, {size})"
        )
    if c + a * last + extent > size:
        clipped = [
            AffineExpr.constant(extent),
            AffineExpr.constant(size) - plan.base[d],
        ]
        return compact_map(clipped, plan.invariants)
    return AffineMap.constant_map(extent), ()


def _tiles(
    kernel: str, name: str, loop: affine.ForOp, top: affine.ForOp, plan: Footprint
) -> list[Bound]:
    """Check 4 (the tiles partition M); N's upper bound in each dimension."""
    names = _Names(kernel, name)
    trips = _loop_trips(names, loop, top)
    for value in plan.invariants:
        if value not in trips:
            raise names.fail(
                f"the tile of {_label(plan.target)} starts at an index that depends on "
                f"{_label(value)}, which is not a loop around its body"
            )
    tiling = _Tiling(names, plan, trips)
    used: dict[SSAValue, int] = {}  # loop -> the dimension it moves the tile in
    uppers: list[Bound] = []
    for d in range(len(plan.base)):
        c, linear = _start(tiling, d)
        if not linear:
            uppers.append(_fixed_upper(tiling, d, c))
            continue
        value, a = _moving_loop(tiling, d, linear, used)
        uppers.append(_moving_upper(tiling, d, c, value, a))
    for value, (first, _, last) in trips.items():
        if value not in used and first != last:
            raise names.fail(
                f"the tiles repeat across the iterations of loop '{_loop_of(value)}' "
                f"(it moves no index of {_label(plan.target)}): the nest would be "
                "computed more than once"
            )
    return uppers


def _loop_of(value: SSAValue) -> str:
    """The name of the loop whose induction variable ``value`` is."""
    parent = value.owner.parent_op() if isinstance(value, BlockArgument) else None
    return str(loop_name(parent)) if parent is not None else _label(value)


# --- checks 1, 3 and 5 ---------------------------------------------------------


@dataclass
class _Site:
    """Where compute_at works: N (``moved``), L (``target_loop``) and T (``top``),
    both by name, in the kernel ``fn`` whose top-level ops are ``ops``."""

    kernel: str
    nest: str
    loop: str
    fn: func.FuncOp
    moved: affine.ForOp
    target_loop: affine.ForOp
    top: affine.ForOp
    ops: list[Operation]

    @property
    def before(self) -> bool:
        """Whether N comes before T (a producer) rather than after (a consumer)."""
        return self.ops.index(self.moved) < self.ops.index(self.top)

    def fail(self, reason: str) -> IllegalScheduleError:
        """An error naming L."""
        return IllegalScheduleError(PRIMITIVE, self.kernel, self.loop, reason)


def _find_site(module: ModuleOp, kernel: str, nest: str, loop: str) -> _Site:
    """N and L by name, and T, the top-level nest around L (check 1)."""
    fn, moved = find_loop(module, PRIMITIVE, kernel, nest)
    _, target_loop = find_loop(module, PRIMITIVE, kernel, loop)
    if moved.parent_op() is not fn:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            nest,
            "it is not the outermost loop of a top-level nest of the kernel",
        )
    top: Operation = target_loop
    while top.parent_op() is not fn:
        parent = top.parent_op()
        assert parent is not None
        top = parent
    if top is moved:
        raise IllegalScheduleError(
            PRIMITIVE, kernel, loop, f"it is inside the nest '{nest}' itself"
        )
    assert isinstance(top, affine.ForOp)
    ops = list(fn.body.block.ops)
    return _Site(kernel, nest, loop, fn, moved, target_loop, top, ops)


def _check_only_in_body(site: _Site, target: SSAValue) -> None:
    """Check 3: T uses M only in L's body, and no memref that may alias it."""
    name = _label(target)
    key = _alias_key(target)
    if not any(site.target_loop.is_ancestor(use.operation) for use in target.uses):
        raise site.fail(
            f"its body does not use {name}, the memref the nest '{site.nest}' writes"
        )
    for op in site.top.walk():
        for value in op.operands:
            if not isinstance(value.type, MemRefType) or _alias_key(value) != key:
                continue
            if value is not target:
                raise site.fail(
                    f"the nest of '{site.loop}' uses a memref that may alias {name}"
                )
            if not site.target_loop.is_ancestor(op):
                raise site.fail(
                    f"{name} is also used outside its body, by {op.name} in the "
                    f"nest of '{site.loop}': the tile would not be final"
                )


def _check_effects(site: _Site, target: SSAValue) -> None:
    """Check 5: no op between N and T touches M or writes a memref N reads, and T
    writes no memref N reads."""
    key = _alias_key(target)
    reads = _effects([site.moved]).reads - {key}
    at_moved, at_top = site.ops.index(site.moved), site.ops.index(site.top)
    between = _effects(site.ops[min(at_moved, at_top) + 1 : max(at_moved, at_top)])
    if key in between.reads | between.writes:
        raise site.fail(
            f"an op between the nest '{site.nest}' and its nest uses {_label(target)}"
        )
    if reads & between.writes:
        raise site.fail(
            f"an op between the nest '{site.nest}' and its nest writes a memref the "
            "nest reads"
        )
    if reads & _effects([site.top]).writes:
        raise site.fail(f"its nest writes a memref that the nest '{site.nest}' reads")


def _check_defined_before(site: _Site) -> None:
    """Check 5, N after T: every value N uses from outside it is defined before
    T."""
    block = site.fn.body.block
    at_top = site.ops.index(site.top)
    for op in site.moved.walk():
        for value in op.operands:
            if isinstance(value, BlockArgument) and value.owner is block:
                continue
            owner = value.owner
            if (
                isinstance(owner, Operation)
                and owner.parent_block() is block
                and site.ops.index(owner) > at_top
            ):
                raise site.fail(
                    f"the nest '{site.nest}' uses {_label(value)}, defined after the "
                    f"nest of '{site.loop}'"
                )


# --- the rewrite: nothing fails from here on -------------------------------------


def _index_band(
    moved: affine.ForOp, target: SSAValue, band: list[affine.ForOp]
) -> None:
    """Every access of M in N at ``[v_0, v_1, ...]`` (a size-1 dimension indexed by
    0 is the same element): the shift in ``_shift_band`` then moves all of them."""
    ivs = [iv(band_loop) for band_loop in band]
    identity = AffineMapAttr(AffineMap.identity(len(ivs)))
    for access in list(moved.walk()):
        if isinstance(access, affine.LoadOp | affine.StoreOp) and (
            access.memref is target
        ):
            offset = 1 if isinstance(access, affine.LoadOp) else 2
            access.operands = [*access.operands[:offset], *ivs]
            access.properties["map"] = identity


def _shift_band(band: list[affine.ForOp], uppers: list[Bound], plan: Footprint) -> None:
    """N's band over the tile: loop ``d`` runs over ``[0, upper_d)`` and its
    induction variable ``v`` becomes ``b_d + v``."""
    m = len(plan.invariants)
    for d, (band_loop, upper) in enumerate(zip(band, uppers, strict=True)):
        set_bounds(band_loop, (AffineMap.constant_map(0), ()), upper)
        for attr in (SYMBOLIC_ATTR, TRIP_ATTR):  # it runs over a tile now
            band_loop.attributes.pop(attr, None)
        index = iv(band_loop)
        # index -> base + index, the base's invariants first (``i_o * 8 + i_init``)
        shift = plan.base[d] + AffineExpr.dimension(m)
        apply = affine.ApplyOp(
            [*plan.invariants, index], AffineMapAttr(AffineMap(m + 1, 0, (shift,)))
        )
        body = band_loop.body.block
        first = body.first_op
        assert first is not None
        body.insert_op_before(apply, first)
        for use in list(index.uses):
            if use.operation is not apply:
                use.operation.operands[use.index] = apply.result
        fold_apply(apply)


def _place(moved: affine.ForOp, target_loop: affine.ForOp, before: bool) -> None:
    """N at the start of L's body (``before``: a producer) or at its end, before
    the terminator (a consumer)."""
    target_block = target_loop.body.block
    if before:
        first = target_block.first_op
        assert first is not None
        target_block.insert_op_before(moved, first)
    else:
        terminator = target_block.last_op
        assert isinstance(terminator, affine.YieldOp)
        target_block.insert_op_before(moved, terminator)


def _link(site: _Site, written: SSAValue, band: list[affine.ForOp]) -> SSAValue:
    """The memref M that tiles a consumer N writing ``written`` (W): W itself when
    T uses it, else the one memref N reads and T writes (an int8 product's sums,
    which its epilogue turns into another output). N must read M pointwise, and
    neither T nor an op between N and T may touch W."""
    if site.before or any(site.top.is_ancestor(use.operation) for use in written.uses):
        return written
    top_writes = _effects([site.top]).writes
    read: list[SSAValue] = []
    for op in site.moved.walk():
        if (
            isinstance(op, affine.LoadOp)
            and _alias_key(op.memref) in top_writes
            and not any(op.memref is m for m in read)
        ):
            read.append(op.memref)
    if len(read) != 1:
        raise site.fail(
            f"its body does not use {_label(written)}, the memref the nest "
            f"'{site.nest}' writes, and the nest reads {len(read)} memrefs its "
            "nest writes (one links the two)"
        )
    (link,) = read
    link_type, written_type = link.type, written.type
    assert isinstance(link_type, MemRefType) and isinstance(written_type, MemRefType)
    if link_type.get_shape() != written_type.get_shape():
        raise site.fail(
            f"the nest '{site.nest}' writes {_label(written)} of shape "
            f"{list(written_type.get_shape())} from {_label(link)} of shape "
            f"{list(link_type.get_shape())}; a tile of one is a tile of the other "
            "only when the shapes are equal"
        )
    ivs = [iv(band_loop) for band_loop in band]
    shape = list(link_type.get_shape())
    for use in link.uses:
        user = use.operation
        if site.moved.is_ancestor(user) and not (
            isinstance(user, affine.LoadOp) and indices_are(user, ivs, shape)
        ):
            loops = ", ".join(str(loop_name(b)) for b in band)
            raise site.fail(
                f"not pointwise: {user.name} of {_label(link)} in the nest "
                f"'{site.nest}' must load it at [{loops}] exactly"
            )
    key = _alias_key(written)
    at_moved, at_top = site.ops.index(site.moved), site.ops.index(site.top)
    between = _effects(site.ops[at_top:at_moved])
    if key in between.reads | between.writes:
        raise site.fail(
            f"{_label(written)}, which the nest '{site.nest}' writes, is used by its "
            "nest or an op before it"
        )
    return link


def compute_at(module: ModuleOp, kernel: str, nest: str, loop: str) -> None:
    """Move the top-level nest ``nest`` into ``loop``'s body, over its tile."""
    site = _find_site(module, kernel, nest, loop)
    written, band = _pointwise_band(kernel, nest, site.moved)
    target = _link(site, written, band)
    _check_only_in_body(site, target)
    plan = footprint(PRIMITIVE, kernel, loop, site.target_loop, target, NO_LIMIT)
    uppers = _tiles(kernel, loop, site.target_loop, site.top, plan)
    _check_effects(site, target)
    before = site.before
    if not before:
        _check_defined_before(site)

    # --- rewrite: nothing fails from here on -------------------------------------
    site.moved.detach()
    _index_band(site.moved, written, band)
    if target is not written:
        _index_band(site.moved, target, band)
    _shift_band(band, uppers, plan)
    _place(site.moved, site.target_loop, before)


@dataclass(frozen=True)
class ComputeAtPass(ModulePass):
    """Move a top-level nest into a tile loop of another nest, over its tile."""

    name = "compute-at"

    kernel: str
    nest: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        compute_at(op, self.kernel, self.nest, self.loop)
