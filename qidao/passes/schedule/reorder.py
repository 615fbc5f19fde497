"""``reorder``: permute the loops of a perfectly nested band.

    for i in I                        ==>   for j in J          (reorder "j,i")
      for j in J                              for i in I
        body(i, j)                              body(i, j)

Options: ``kernel``, ``loops`` (the new order, outermost first, of the names of the
loops of a band: ``reorder{kernel="main_k0_matmul" loops="k,i,j"}``). The loops keep
their names; each takes its own bounds, step and attributes to its new depth. A
band's iter_args (an accumulator passed straight down and yielded straight up) stay
where they are.

**A band** is a chain of loops each of whose body is the next loop and the
terminator. Before checking that, ops sitting between two of the named loops are
*sunk* into the inner one when that cannot change a result: ops without side effects
and ``affine.load`` of a memref the band never writes (the matmul's ``x[i, k]``
loaded in ``k`` outside ``j``); they then run once per inner iteration. Anything
else between the loops is a ``NotPerfectlyNestedError``. A loop whose bounds use
another band loop's induction variable (the ``min(4, 10 - 4 * i_o)`` of a split's
inner loop) must stay inside that loop.

**Legality** (a sound, simple rule; otherwise ``IllegalScheduleError``). Ops in the
band may be affine loads/stores, loops, ``affine.if``/``apply``/``min`` and ops
without side effects. For every memref the band writes (memrefs that may alias,
function arguments without ``llvm.noalias``, count as one):

1. every load and store of it in the band uses the *same* index expressions;
2. each index expression that involves band loops is a sum of band induction
   variables times constants plus values fixed during the band, with no band loop
   in two expressions, and injective (each coefficient exceeds what the smaller
   terms can reach: ``4 * i_o + i_i`` with ``i_i < 4``). So two band iterations
   touch the same element only when they agree on the band loops the indices use.
   The other band loops, ``R``, revisit the same elements (``k`` for the matmul's
   ``out[i, j]``);
3. the reorder is legal if it keeps the loops of ``R`` in their relative order
   (every dependence through the memref then keeps its direction: ``i, k, j`` to
   ``k, i, j`` or ``i, j, k``, bit-identical results), **or** if the memref is
   only accumulated: one load and one store, ``store(load op e)`` with ``op`` one of
   ``addf, mulf, maximumf, minimumf, addi, muli, max/min(s|u)i, andi, ori, xori``
   whose operands and result have no other use. Then reordering ``R`` only
   reassociates the accumulation: exact for integers, max and min, **and changes
   the float summation order** (results can differ in the last bits).

An iter_args accumulator of the band revisits itself in every iteration (``R`` is
the whole band): the reorder must be the identity, or the innermost body must
update it by one op of the list above whose result is only yielded.

Errors: an unknown kernel or loop; a name listed twice; fewer than two loops; loops
that are not one perfectly nested band; a bound that would use a loop moved inside
it; a reorder that may reverse a dependence (the message names the memref and the
loops).

Before (``reorder{kernel="k" loops="j,i"}``):
```mlir
affine.for %i = 0 to 4 {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%i, %j] : memref<4x8xf32>
    affine.store %v, %y[%j, %i] : memref<8x4xf32>
  } {qd.loop = "j"}
} {qd.loop = "i"}
```
After:
```mlir
affine.for %j = 0 to 8 {
  affine.for %i = 0 to 4 {
    %v = affine.load %x[%i, %j] : memref<4x8xf32>
    affine.store %v, %y[%j, %i] : memref<8x4xf32>
  } {qd.loop = "i"}
} {qd.loop = "j"}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
    NotPerfectlyNestedError,
)
from qidao.passes.schedule.loops.linear import Linear, linear_form
from qidao.passes.schedule.loops.nest import (
    find_kernel,
    find_loop,
    iv,
    loop_name,
    max_trip_count,
    parse_loop_list,
    rebuild_loop,
)

ASSOCIATIVE = (
    arith.AddfOp,
    arith.MulfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.AddiOp,
    arith.MuliOp,
    arith.MaxSIOp,
    arith.MinSIOp,
    arith.MaxUIOp,
    arith.MinUIOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
)
"""Associative and commutative updates: an accumulation by one of them may run in
any order (for floats up to rounding)."""


def reorder_loops(module: ModuleOp, kernel: str, order: Sequence[str]) -> None:
    """Permute the band of ``kernel`` named by ``order`` into that order."""
    first = order[0] if order else ""
    if len(order) < 2:
        raise InvalidArgumentError(
            "reorder", kernel, first, f"give at least two loops, got {list(order)}"
        )
    for name in order:
        if list(order).count(name) > 1:
            raise InvalidArgumentError(
                "reorder", kernel, name, "the loop is listed twice"
            )
    fn = find_kernel(module, "reorder", kernel, first)
    loops = {name: find_loop(module, "reorder", kernel, name)[1] for name in order}
    band, sunk = _band(fn, kernel, loops)
    old_order = [str(loop_name(loop)) for loop in band]
    if old_order == list(order):
        return
    _check_bounds(band, order, kernel)
    _check_dependences(band, sunk, old_order, list(order), kernel)
    _sink_all(sunk)
    _permute(band, list(order))


def _depth(loop: affine.ForOp) -> int:
    depth = 0
    parent = loop.parent_op()
    while parent is not None:
        depth += 1
        parent = parent.parent_op()
    return depth


def _band(
    fn: func.FuncOp, kernel: str, loops: dict[str, affine.ForOp]
) -> tuple[list[affine.ForOp], list[tuple[Operation, affine.ForOp]]]:
    """The named loops, outermost first, and the ops to sink to make them a perfect
    band (each with the loop it sinks into), or a NotPerfectlyNestedError."""
    band = sorted(loops.values(), key=_depth)
    names = [str(loop_name(loop)) for loop in band]
    written = _written_memrefs(band[0])
    sunk: list[tuple[Operation, affine.ForOp]] = []
    for outer, inner, outer_name, inner_name in zip(
        band, band[1:], names, names[1:], strict=False
    ):
        if inner.parent_op() is not outer:
            raise NotPerfectlyNestedError(
                "reorder",
                kernel,
                inner_name,
                f"'{inner_name}' is not directly nested in '{outer_name}'",
            )
        before_inner = True
        for op in outer.body.block.ops:
            if op is inner:
                before_inner = False
                continue
            if isinstance(op, affine.YieldOp):
                continue
            if not before_inner or not _sinkable(op, band, written):
                raise NotPerfectlyNestedError(
                    "reorder",
                    kernel,
                    outer_name,
                    f"'{outer_name}' holds {op.name} besides '{inner_name}', "
                    "which cannot be moved into it",
                )
            sunk.append((op, band[-1]))
        if not _passes_through(outer, inner):
            raise NotPerfectlyNestedError(
                "reorder",
                kernel,
                outer_name,
                f"the iter_args of '{outer_name}' do not pass straight through "
                f"'{inner_name}'",
            )
    return band, sunk


def _passes_through(outer: affine.ForOp, inner: affine.ForOp) -> bool:
    if list(inner.inits) != list(outer.body.block.args[1:]):
        return False
    terminator = outer.body.block.last_op
    return terminator is not None and list(terminator.operands) == list(inner.results)


def _sinkable(op: Operation, band: list[affine.ForOp], written: set[object]) -> bool:
    """``op``, between two band loops, can move to the start of the innermost band
    loop's body: no regions, no side effects but a load of a memref the band does
    not write, and used only inside the innermost body or by ops that move too."""
    if op.regions:
        return False
    if isinstance(op, affine.LoadOp):
        if _alias_key(op.memref) in written:
            return False
    elif not is_side_effect_free(op):
        return False
    innermost = band[-1]
    for result in op.results:
        for use in result.uses:
            user = use.operation
            if user is not innermost and innermost.is_ancestor(user):
                continue
            if user in band or user.parent_op() not in band:
                return False
    return True


def _sink_all(sunk: list[tuple[Operation, affine.ForOp]]) -> None:
    """Move the ops, in order, to the start of the innermost band loop's body."""
    if not sunk:
        return
    block = sunk[0][1].body.block
    anchor = block.first_op
    assert anchor is not None
    for op, _ in sunk:
        op.detach()
        block.insert_op_before(op, anchor)


def _check_bounds(band: list[affine.ForOp], order: Sequence[str], kernel: str) -> None:
    """A loop whose bounds use a band loop's IV must stay inside that loop."""
    position = {name: p for p, name in enumerate(order)}
    owner = {iv(loop): str(loop_name(loop)) for loop in band}
    for loop in band:
        name = str(loop_name(loop))
        for operand in [*loop.lowerBoundOperands, *loop.upperBoundOperands]:
            for used in _band_values(operand, owner):
                if position[owner[used]] > position[name]:
                    raise IllegalScheduleError(
                        "reorder",
                        kernel,
                        name,
                        f"the bounds of '{name}' use '{owner[used]}', which the new "
                        "order puts inside it",
                    )


def _band_values(value: SSAValue, owner: dict[SSAValue, str]) -> list[SSAValue]:
    """Band IVs that ``value`` is computed from (through affine.apply)."""
    if value in owner:
        return [value]
    op = value.owner
    if isinstance(op, affine.ApplyOp):
        return [v for operand in op.mapOperands for v in _band_values(operand, owner)]
    return []


# --- dependences -----------------------------------------------------------------


def _alias_key(value: SSAValue) -> object:
    """Memrefs with the same key may alias: a noalias argument or an allocation is
    its own key; every other memref shares one."""
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        if isinstance(parent, func.FuncOp) and parent.arg_attrs is not None:
            attrs = parent.arg_attrs.data[value.index]
            if "llvm.noalias" in attrs.data:
                return value
        return "may-alias"
    if isinstance(value.owner, memref.AllocOp | memref.AllocaOp):
        return value
    return "may-alias"


def _written_memrefs(top: affine.ForOp) -> set[object]:
    return {
        _alias_key(op.memref) for op in top.walk() if isinstance(op, affine.StoreOp)
    }


@dataclass
class _Access:
    op: affine.LoadOp | affine.StoreOp
    indices: list[Linear | None]


def _access(op: affine.LoadOp | affine.StoreOp) -> _Access:
    affine_map: AffineMap = op.map.data
    operands = list(op.indices)
    return _Access(
        op,
        [
            linear_form(r, operands, affine_map.num_dims, through_apply=True)
            for r in affine_map.results
        ],
    )


def _check_dependences(
    band: list[affine.ForOp],
    sunk: list[tuple[Operation, affine.ForOp]],
    old_order: list[str],
    new_order: list[str],
    kernel: str,
) -> None:
    top = band[0]
    ivs = {iv(loop): str(loop_name(loop)) for loop in band}
    extents = {iv(loop): max_trip_count(loop) for loop in band}
    accesses: dict[object, list[_Access]] = {}
    written: set[object] = set()
    for op in top.walk():
        if op is top:
            continue
        if isinstance(op, affine.LoadOp | affine.StoreOp):
            key = _alias_key(op.memref)
            accesses.setdefault(key, []).append(_access(op))
            if isinstance(op, affine.StoreOp):
                written.add(key)
        elif isinstance(
            op,
            affine.ForOp | affine.IfOp | affine.YieldOp | affine.ApplyOp | affine.MinOp,
        ):
            continue
        elif not is_side_effect_free(op):
            raise IllegalScheduleError(
                "reorder",
                kernel,
                old_order[0],
                f"the band holds {op.name}, whose effects the dependence check "
                "cannot see",
            )

    def keeps_order(loops: set[str]) -> bool:
        return [n for n in old_order if n in loops] == [
            n for n in new_order if n in loops
        ]

    for key in written:
        group = accesses[key]
        label = _memref_label(group[0].op.memref)
        revisiting = _revisiting_loops(group, ivs, extents, top)
        if revisiting is None:
            raise IllegalScheduleError(
                "reorder",
                kernel,
                old_order[0],
                f"cannot prove which iterations of the band touch the same element "
                f"of {label} (its loads and stores must use the same affine indices, "
                "each injective in the band loops it uses)",
            )
        if keeps_order(revisiting) or _is_accumulation(group):
            continue
        moved = [n for n in old_order if n in revisiting]
        raise IllegalScheduleError(
            "reorder",
            kernel,
            moved[0],
            f"loops {', '.join(repr(n) for n in moved)} revisit the same elements of "
            f"{label} and the new order changes their relative order, but "
            f"{label} is not only accumulated (one load, one store of "
            "load op value, op associative)",
        )
    innermost = band[-1]
    block = innermost.body.block
    terminator = block.last_op
    for k, arg in enumerate(block.args[1:]):
        if keeps_order(set(ivs.values())):
            continue
        if terminator is None or not _is_iter_accumulation(arg, terminator, k):
            name = str(loop_name(innermost))
            raise IllegalScheduleError(
                "reorder",
                kernel,
                name,
                f"iter_arg #{k} of '{name}' is not updated by one associative op, "
                "so the order of its updates cannot change",
            )


def _memref_label(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a memref"


def _revisiting_loops(
    group: list[_Access],
    ivs: dict[SSAValue, str],
    extents: dict[SSAValue, int | None],
    top: affine.ForOp,
) -> set[str] | None:
    """The band loops whose iterations revisit the same elements, or None when the
    accesses do not fit rule 1-2."""
    first = group[0].indices
    for access in group[1:]:
        if access.indices != first:
            return None
    used: set[SSAValue] = set()
    for index in first:
        if index is None:
            return None
        band_terms = {v: c for v, c in index.items() if v in ivs}
        others = [v for v in index if v is not None and v not in ivs]
        inside = [v for v in others if _defined_inside(v, top)]
        if not band_terms:
            continue
        if inside or used & set(band_terms):
            return None
        if not _injective(band_terms, extents):
            return None
        used |= set(band_terms)
    return {name for value, name in ivs.items() if value not in used}


def _defined_inside(value: SSAValue, top: affine.ForOp) -> bool:
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        return parent is not None and top.is_ancestor(parent)
    owner = value.owner
    return isinstance(owner, Operation) and top.is_ancestor(owner)


def _injective(terms: dict[SSAValue, int], extents: dict[SSAValue, int | None]) -> bool:
    """Mixed radix: sorted by |coefficient|, each exceeds the reach of the smaller."""
    reach = 0
    for value, coefficient in sorted(terms.items(), key=lambda t: abs(t[1])):
        extent = extents[value]
        if extent is None or abs(coefficient) <= reach:
            return False
        reach += abs(coefficient) * max(0, extent - 1)
    return True


def _is_accumulation(group: list[_Access]) -> bool:
    loads = [a.op for a in group if isinstance(a.op, affine.LoadOp)]
    stores = [a.op for a in group if isinstance(a.op, affine.StoreOp)]
    if len(loads) != 1 or len(stores) != 1:
        return False
    load, store = loads[0], stores[0]
    update = store.value.owner
    if not isinstance(update, ASSOCIATIVE):
        return False
    if load.result not in update.operands or len(list(load.result.uses)) != 1:
        return False
    if update.lhs is update.rhs:
        return False
    return len(list(update.result.uses)) == 1


def _is_iter_accumulation(arg: SSAValue, terminator: Operation, k: int) -> bool:
    uses = list(arg.uses)
    if len(uses) != 1:
        return False
    update = uses[0].operation
    if not isinstance(update, ASSOCIATIVE) or update.lhs is update.rhs:
        return False
    result_uses = list(update.result.uses)
    return (
        len(result_uses) == 1
        and result_uses[0].operation is terminator
        and result_uses[0].index == k
    )


# --- the permutation -----------------------------------------------------------


@dataclass
class _Header:
    lower: tuple[AffineMap, list[SSAValue]]
    upper: tuple[AffineMap, list[SSAValue]]
    step: int
    attributes: dict[str, Attribute]


def _permute(band: list[affine.ForOp], order: list[str]) -> None:
    """Give level ``p`` of the band the header and IV of loop ``order[p]``."""
    level_of = {str(loop_name(loop)): p for p, loop in enumerate(band)}
    new_args: list[BlockArgument] = []
    for p, name in enumerate(order):
        arg = band[p].body.block.insert_arg(IndexType(), 0)
        arg.name_hint = name
        new_args.append(arg)
    for p, name in enumerate(order):
        old_iv = band[level_of[name]].body.block.args[1]
        old_iv.replace_all_uses_with(new_args[p])
    for loop in band:
        block = loop.body.block
        block.erase_arg(block.args[1])
    headers = {
        str(loop_name(loop)): _Header(
            (loop.lowerBoundMap.data, list(loop.lowerBoundOperands)),
            (loop.upperBoundMap.data, list(loop.upperBoundOperands)),
            loop.step.value.data,
            dict(loop.attributes),
        )
        for loop in band
    }
    for p in reversed(range(len(band))):
        header = headers[order[p]]
        new = rebuild_loop(band[p], header.lower, header.upper, header.step)
        new.attributes.clear()
        new.attributes.update(header.attributes)
        band[p] = new


@dataclass(frozen=True)
class ReorderPass(ModulePass):
    """Permute a perfectly nested band of loops into the order given."""

    name = "reorder"

    kernel: str
    loops: str | tuple[str, ...]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reorder_loops(op, self.kernel, parse_loop_list(self.loops))
