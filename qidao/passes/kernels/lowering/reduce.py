"""Reduction kernels: ``tg.reduce_sum``, ``tg.reduce_mean``, ``tg.reduce_max``,
``tg.reduce_prod``.

Two nests, chosen by where the contiguous axis of the input is.

**Reduced axes innermost** (the last axis is reduced, or the input is strided so
that the last axis is not contiguous): loops ``i0, i1, ...`` over the kept
dimensions (input order), then loops ``r0, r1, ...`` over the reduced ones
carrying the accumulator as iter_args (sum from 0, max from -inf with
NaN-propagating ``arith.maximumf``, prod from 1 with ``mulf``, or ``muli`` on
integers); mean divides the sum by the element count.
These are the row kernels (a reduction over the last axis of a softmax or a layer
norm); the CPU's ``defaults/rows.py`` vectorizes their passes over the row.

**Last axis innermost** (the last axis is kept and has stride 1: a global average
pool or a squeeze-and-excitation pool of an NHWC tensor, ``axes = [1, 2]`` of
``[N, H, W, C]``). Reducing innermost would walk ``H`` or ``W`` with stride ``C``,
one scalar at a time. Instead the kept last axis stays innermost, inside the
reduced loops, and the accumulator is the output element itself (no iter_args),
in three nests::

    for i0 in N:  for i1_init in C:  out[i0, i1_init] = 0       (max: -inf)
    for i0 in N:                                                 (kept, but the last)
      for r0 in H:  for r1 in W:                                 (reduced)
        for i1 in C:                                             (the kept last axis)
          out[i0, i1] = out[i0, i1] + x[i0, r0, r1, i1]          (max: maximumf)
    for i0 in N:  for i1_norm in C:  out[i0, i1_norm] /= H * W   (mean only)

Every access of the ``i1`` loop is unit-stride, so LLVM vectorizes it as it is
(``<16 x float>``) and, when the loop is short (a few vectors), keeps the row of
accumulators in registers across ``r1``; the CPU default schedule blocks the
channels for registers on purpose (``targets/cpu/defaults/reduce.py``). The GPU's
default schedule binds ``i1`` and the kept loops around the reduction to the grid, a
thread per output element, as it did with the other nest. In general the kept
dimensions but the last are the outer loops (input order), then the reduced
dimensions (input order), then the last: ``axes = [1]`` of ``[N, H, W, C]`` is ``i0
(N), i1 (W), r0 (H), i2 (C)``. Each output element is still summed in the order of
the reduced loops, one addend at a time, as the other nest sums it (no
reassociation): the two nests give the same bits.

Measured (AMD EPYC, AVX-512, one thread, float32, kernel medians): EfficientNet's
SE pools ``1x64x64x32`` 106 -> 4.8 µs, ``1x32x32x96`` 76 -> 3.5 µs,
``1x16x16x144`` 24 -> 2.3 µs as lowered here (LLVM alone), against PyTorch's
``mean(dim=(2, 3))`` on a channels-last tensor at 12.6, 10.7 and 8.3 µs a call;
``defaults/reduce.py`` has the table with the schedule on top.

With ``keepdims`` the reduced dimensions store at 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import AbstractContextManager

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, MemRefType, StridedLayoutAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.types import storage_type
from qidao.passes.kernels.lowering.common import (
    NEG_INF,
    Emitter,
    Kernel,
    Source,
    const,
    dim,
    element_type,
    loop_names,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool

INIT_SUFFIX = "_init"
NORM_SUFFIX = "_norm"


def lower_reduce(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.ReduceOp)
    (x,) = sources
    assert isinstance(x, SSAValue), "a reduction's input is never a folded splat"
    if last_axis_innermost(op, x):
        _lower_last_axis_innermost(op, k, x)
    else:
        _lower_reduced_innermost(op, k, x)


def last_axis_innermost(op: tg.ReduceOp, x: SSAValue) -> bool:
    """True when ``op`` keeps the last axis of its input and the input ``x`` (a
    memref) is contiguous along it: the nest runs that axis innermost."""
    rank = len(shape(op.input))
    if rank - 1 in op.reduced_axes():
        return False
    t = x.type
    assert isinstance(t, MemRefType)
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        return layout.get_strides()[-1] == 1
    return True


def _out_index(
    op: tg.ReduceOp, position: dict[int, int], keepdims: bool
) -> list[AffineExpr]:
    """The output index of the element that input dimension ``d`` at loop
    ``position[d]`` (kept dimensions only) reduces into."""
    axes = op.reduced_axes()
    index: list[AffineExpr] = []
    for d in range(len(shape(op.input))):
        if d not in axes:
            index.append(dim(position[d]))
        elif keepdims:
            index.append(const(0))
    return index


def _lower_last_axis_innermost(op: tg.ReduceOp, k: Kernel, x: SSAValue) -> None:
    em = k.em
    (out,) = k.outputs
    in_shape = shape(op.input)
    axes = op.reduced_axes()
    kept = [d for d in range(len(in_shape)) if d not in axes]
    keepdims = op.keepdims is not None
    t = storage_type(element_type(op.result))  # ui8 is i8 in arith
    names = {d: f"i{p}" for p, d in enumerate(kept)}
    names.update({d: f"r{p}" for p, d in enumerate(axes)})

    # the init nest (and the norm nest) walk the output in the kept dims' order
    at_kept = {d: p for p, d in enumerate(kept)}
    out_index = _out_index(op, at_kept, keepdims)
    init = em.constant(_identity(op), t)
    with _kept_nest(em, kept, in_shape, names, INIT_SUFFIX) as ivs:
        em.store(init, out, ivs, out_index)

    order = [*kept[:-1], *axes, kept[-1]]
    bounds = [in_shape[d] for d in order]
    at = {d: p for p, d in enumerate(order)}
    with em.nest([names[d] for d in order], bounds) as ivs:
        acc_index = _out_index(op, at, keepdims)
        acc = em.load(out, ivs, acc_index)
        xv = em.load(x, ivs, [dim(at[d]) for d in range(len(in_shape))])
        em.store(_combine(em, op, acc, xv), out, ivs, acc_index)

    if isinstance(op, tg.ReduceMeanOp):
        count = em.constant(float(_count(in_shape, axes)), t)
        with _kept_nest(em, kept, in_shape, names, NORM_SUFFIX) as ivs:
            total = em.load(out, ivs, out_index)
            em.store(em.divf(total, count), out, ivs, out_index)


def _identity(op: tg.ReduceOp) -> float:
    """The value the accumulator starts from: -inf (max), 1 (prod) or 0."""
    if isinstance(op, tg.ReduceMaxOp):
        return NEG_INF
    return 1.0 if isinstance(op, tg.ReduceProdOp) else 0.0


def _combine(em: Emitter, op: tg.ReduceOp, acc: SSAValue, x: SSAValue) -> SSAValue:
    """The accumulator after one more element ``x``."""
    if isinstance(op, tg.ReduceMaxOp):
        return em.maxf(acc, x)
    if isinstance(op, tg.ReduceProdOp):
        if isinstance(x.type, IntegerType):
            return em.value(arith.MuliOp(acc, x))
        return em.mulf(acc, x)
    return em.addf(acc, x)


def _kept_nest(
    em: Emitter,
    kept: list[int],
    in_shape: Sequence[int],
    names: dict[int, str],
    suffix: str,
) -> AbstractContextManager[list[SSAValue]]:
    return em.nest([names[d] + suffix for d in kept], [in_shape[d] for d in kept])


def _count(in_shape: Sequence[int], axes: Sequence[int]) -> int:
    return math.prod(in_shape[d] for d in axes)


def _lower_reduced_innermost(op: tg.ReduceOp, k: Kernel, x: SSAValue) -> None:
    em = k.em
    (out,) = k.outputs
    in_shape = shape(op.input)
    axes = op.reduced_axes()
    kept = [d for d in range(len(in_shape)) if d not in axes]
    t = storage_type(element_type(op.result))  # ui8 is i8 in arith
    keepdims = op.keepdims is not None

    # input dim -> loop position: kept dims first (outer nest), reduced dims after
    position = {d: p for p, d in enumerate([*kept, *axes])}
    in_index = [dim(position[d]) for d in range(len(in_shape))]
    out_index = _out_index(op, position, keepdims)

    init = em.constant(_identity(op), t)

    def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
        return [_combine(em, op, accs[0], em.load(x, ivs, in_index))]

    with em.nest(loop_names("i", len(kept)), [in_shape[d] for d in kept]) as outer:
        (result,) = em.accumulate(
            loop_names("r", len(axes)), [in_shape[d] for d in axes], [init], step, outer
        )
        if isinstance(op, tg.ReduceMeanOp):
            result = em.divf(result, em.constant(float(_count(in_shape, axes)), t))
        em.store(result, out, outer, out_index)
