"""The ``tg.nonzero_indices`` kernel: the positions of the non-zero entries, in order.

The entries of ``x`` are walked in row-major order with a running count (a loop
iter_arg) of the non-zero ones seen so far: entry ``e`` writes its position into
column ``count`` and bumps the count when it is not zero. Without branches: the
column is rewritten with its own value when the entry is zero, so a column past
the final count keeps the 0 the kernel fills it with first. The column is always
in range: before entry ``e`` at most ``e`` entries were counted, and
``e < numel``. In loops, for ``x[A, B]``::

    for d < 2, c < A * B:  out[d, c] = 0
    for i0 < A, i1 < B iter_args(%count = 0):
      %nz = x[i0, i1] != 0                       (floats: cmpf une, NaN counts)
      out[0, %count] = select %nz, i0, out[0, %count]
      out[1, %count] = select %nz, i1, out[1, %count]
      yield %count + select(%nz, 1, 0)

The stores at ``%count`` are the kernel's only accesses that are not affine. The
walk is one sequential chain (each entry needs the count before it), like
NumPy's ``nonzero``.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, i64
from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import Kernel, Source, dim, shape
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.scalar import is_float


def lower_nonzero_indices(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.NonzeroIndicesOp)
    (x,) = sources
    assert isinstance(x, SSAValue), "a position list's input is never a folded splat"
    (out,) = k.outputs
    in_shape = shape(op.input)
    rank, total = shape(op.result)
    if total == 0:
        return  # no entry, no column
    em = k.em
    zero = em.constant(0, i64)
    with em.nest(["d", "c"], [rank, total]) as ivs:
        em.store(zero, out, ivs, [dim(0), dim(1)])
    index = IndexType()
    rows = [em.constant(d, index) for d in range(rank)]
    none, one = em.constant(0, index), em.constant(1, index)

    def step(ivs: list[SSAValue], counts: list[SSAValue]) -> list[SSAValue]:
        (count,) = counts
        entry = em.load(x, ivs, [dim(d) for d in range(rank)])
        if is_float(entry.type):
            nonzero = em.value(arith.CmpfOp(entry, em.constant(0.0, entry.type), "une"))
        else:
            nonzero = em.value(arith.CmpiOp(entry, em.constant(0, entry.type), "ne"))
        for d in range(rank):
            at = [rows[d], count]
            held = em.value(memref.LoadOp.get(out, at))
            position = em.value(arith.IndexCastOp(ivs[d], i64))
            em.add(
                memref.StoreOp.get(
                    em.value(arith.SelectOp(nonzero, position, held)), out, at
                )
            )
        return [
            em.value(arith.AddiOp(count, em.value(arith.SelectOp(nonzero, one, none))))
        ]

    em.accumulate([f"i{d}" for d in range(rank)], list(in_shape), [none], step)
