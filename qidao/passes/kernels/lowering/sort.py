"""The ``tg.top_k_indices`` kernel: the ``k`` first positions of each row, in order.

Each row along the axis is an independent selection (the loops over the other
dimensions are parallel). The output row, ``k`` slots, is kept sorted while the
entries of the input row arrive one by one, an insertion that walks the slots from
the first: the arriving entry takes the first slot it comes *before* (the order of
``qidao/dialects/tg/sort.py``: by value, NaN above everything, ties by position),
and the entry it displaces moves on to the next slot, and so on to the last slot,
whose displaced entry drops out. A slot the walk has not filled yet (slot ``p``
while fewer than ``p + 1`` entries have arrived) is taken without a comparison. In
loops, for ``x[R, n]`` along axis 1 (``k`` slots)::

    for i0 < R:
      for p_init < k:  out[i0, p_init] = 0                   (a valid position)
      for i1 < n:                                            (entries, in order)
        %moving, %v = i1, x[i0, i1]
        for p < k iter_args(%moving, %v):                    (slots, in order)
          %held  = affine.load out[i0, p]
          %hv    = memref.load x[i0, %held]                   (its value)
          %take  = p >= i1  or  before(%v, %moving, %hv, %held)
          out[i0, p] = select %take, %moving, %held
          yield select(%take, %held, %moving), select(%take, %hv, %v)

That is ``n * k`` steps a row, without branches: ``k = n`` (an ``argsort``,
``torch.sort``) is quadratic in the row length, fine for the rows models sort
(a few hundred patches, a vocabulary's top 50) but not meant for long ones. The
one access that is not affine reads the value of a slot's position, which is
always in ``[0, n)``: the slots start at 0 and only ever hold loop positions.

``before(v, i, w, j)`` (``v`` at position ``i`` comes before ``w`` at position
``j``), with ``largest``: ``v > w``, or both equal and ``i < j``; floats: ``v > w``
is ``cmpf ogt`` or (``v`` is NaN and ``w`` is not), equal is ``cmpf oeq`` or both
NaN. Without ``largest``: ``v < w`` (``cmpf olt``, or ``w`` is NaN and ``v`` is
not). Integers compare with ``cmpi`` (``sgt``/``slt``, unsigned types
``ugt``/``ult``).
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.types import element_of, is_unsigned
from qidao.passes.kernels.lowering.common import (
    Emitter,
    Kernel,
    Source,
    dim,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.scalar import is_float


def _is_nan(em: Emitter, v: SSAValue) -> SSAValue:
    return em.value(arith.CmpfOp(v, v, "uno"))


def _and(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.AndIOp(a, b))


def _or(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.OrIOp(a, b))


def _not(em: Emitter, a: SSAValue) -> SSAValue:
    return em.value(arith.XOrIOp(a, em.constant(1, a.type)))


def _ahead(
    em: Emitter, v: SSAValue, w: SSAValue, largest: bool, unsigned: bool
) -> SSAValue:
    """Whether value ``v`` comes strictly before value ``w`` (NaN the largest)."""
    if not is_float(v.type):
        predicate = ("ugt" if largest else "ult") if unsigned else None
        predicate = predicate or ("sgt" if largest else "slt")
        return em.value(arith.CmpiOp(v, w, predicate))
    strict = em.value(arith.CmpfOp(v, w, "ogt" if largest else "olt"))
    nan_v, nan_w = _is_nan(em, v), _is_nan(em, w)
    if largest:  # a NaN comes before every number
        return _or(em, strict, _and(em, nan_v, _not(em, nan_w)))
    return _or(em, strict, _and(em, nan_w, _not(em, nan_v)))


def _same(em: Emitter, v: SSAValue, w: SSAValue) -> SSAValue:
    """Whether ``v`` and ``w`` are equal in the order (two NaNs are)."""
    if not is_float(v.type):
        return em.value(arith.CmpiOp(v, w, "eq"))
    equal = em.value(arith.CmpfOp(v, w, "oeq"))
    return _or(em, equal, _and(em, _is_nan(em, v), _is_nan(em, w)))


def lower_top_k_indices(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.TopKIndicesOp)
    (x,) = sources
    assert isinstance(x, SSAValue), "a selection's input is never a folded splat"
    (out,) = k.outputs
    if 0 in shape(op.result):
        return  # nothing to select
    em = k.em
    axis = op.normalized_axis()
    in_shape = shape(op.input)
    n, count = in_shape[axis], op.count()
    largest = op.is_largest()
    unsigned = is_unsigned(element_of(op.input.type))
    others = [d for d in range(len(in_shape)) if d != axis]
    names = [f"i{d}" for d in others]

    def at(ivs: list[SSAValue], position: SSAValue) -> list[SSAValue]:
        """A full index: the row's ivs around ``position`` on the axis."""
        return [*ivs[:axis], position, *ivs[axis:]]

    def row(along: int) -> list[AffineExpr]:
        """The affine index of the entry at loop ``along`` on the axis."""
        rows = [dim(p) for p in range(len(others))]
        return [*rows[:axis], dim(along), *rows[axis:]]

    zero = em.constant(0, i64)
    with em.nest(names, [in_shape[d] for d in others]) as outer:
        with em.nest(["p_init"], [count]) as (slot,):
            em.store(zero, out, [*outer, slot], row(len(others)))
        with em.nest([f"i{axis}"], [n]) as (entry,):
            ivs = [*outer, entry]
            first = em.load(x, ivs, row(len(others)))
            position = em.value(arith.IndexCastOp(entry, i64))

            def step(ivs: list[SSAValue], moving: list[SSAValue]) -> list[SSAValue]:
                index, value = moving
                slot = ivs[-1]
                where = row(len(others) + 1)
                held = em.load(out, ivs, where)
                held_at = em.value(arith.IndexCastOp(held, IndexType()))
                rows = list(ivs[: len(others)])
                held_value = em.value(memref.LoadOp.get(x, at(rows, held_at)))
                empty = em.value(arith.CmpiOp(slot, ivs[len(others)], "sge"))
                earlier = em.value(arith.CmpiOp(index, held, "slt"))
                before = _or(
                    em,
                    _ahead(em, value, held_value, largest, unsigned),
                    _and(em, _same(em, value, held_value), earlier),
                )
                take = _or(em, empty, before)
                em.store(em.value(arith.SelectOp(take, index, held)), out, ivs, where)
                return [
                    em.value(arith.SelectOp(take, held, index)),
                    em.value(arith.SelectOp(take, held_value, value)),
                ]

            em.accumulate(["p"], [count], [position, first], step, ivs)
