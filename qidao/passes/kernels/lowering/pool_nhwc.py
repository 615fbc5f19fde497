"""NHWC kernels of the nn family: ``tg.max_pool2d`` / ``tg.avg_pool2d`` over
``[N, H, W, C]`` and ``tg.batch_norm`` with the channels last.

Pools keep the channel ``c`` innermost, where both the input row ``x[n, ih, iw, :]``
and the output row ``out[n, oh, ow, :]`` are contiguous, so the loop vectorizes; the
running max / sum lives in the output row::

    for n, oh, ow:
      for c_init:  out[n, oh, ow, c] = -inf                (max) or 0 (avg)
      for kh, kw:                                          (count carried for avg)
        if the tap is inside the input (only the bounds that can fail):
          for c:  out[n, oh, ow, c] = max(out[...], x[n, ih, iw, c])   (or +)
      for c_norm:  out[n, oh, ow, c] /= count                          (avg only)

Padded positions are skipped by the ``affine.if``, outside the channel loop. The avg
divisor is ``kh * kw`` with ``count_include_pad`` or without padding; otherwise the
window loops carry the number of real taps as an iter_arg.

``tg.batch_norm`` in NHWC is the NCHW nest ``i0, i1, ...`` reading its per-channel
parameters at the last index instead of index 1.
"""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.linalg import NHWC
from qidao.passes.kernels.lowering.common import (
    NEG_INF,
    Kernel,
    Source,
    dim,
    element_type,
    loop_names,
    shape,
    window_index,
)
from qidao.passes.kernels.lowering.constants import ConstantPool


def lower_pool_nhwc(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.Pool2dOp) and op.data_layout() == NHWC
    em = k.em
    (x,) = sources
    (out,) = k.outputs
    (kh, kw), (sh, sw), (pt, pl, _, _) = op.pool_geometry()
    dh, dw = op.dilations()
    _, h, w, _ = shape(op.input)
    n, oh, ow, c = shape(op.result)
    t = element_type(op.result)
    # ivs: n, oh, ow, kh, kw, c
    nd, ohd, owd, khd, kwd, cd = (dim(d) for d in range(6))
    row, row_inside = window_index(ohd, khd, sh, pt, dh, oh, kh, h)
    col, col_inside = window_index(owd, kwd, sw, pl, dw, ow, kw, w)
    conditions = [*row_inside, *col_inside]
    is_max = isinstance(op, tg.MaxPool2dOp)
    count_real = (
        isinstance(op, tg.AvgPool2dOp)
        and op.count_include_pad is None
        and bool(conditions)
    )
    zero, one = em.constant(0.0, t), em.constant(1.0, t)
    out_index = [nd, ohd, owd, dim(3)]

    with em.nest(["n", "oh", "ow"], [n, oh, ow]) as outer:
        with em.nest(["c_init"], [c]) as (c_init,):
            first = em.constant(NEG_INF, t) if is_max else zero
            em.store(first, out, [*outer, c_init], out_index)

        def tap(taps: list[SSAValue]) -> None:
            """``for c: out[n, oh, ow, c] = max/+(out[...], x[n, ih, iw, c])``."""
            with em.nest(["c"], [c]) as (ci,):
                ivs = [*taps, ci]
                index = [nd, ohd, owd, cd]
                acc = em.load(out, ivs, index)
                xv = em.load(x, ivs, [nd, row, col, cd])
                new = em.maxf(acc, xv) if is_max else em.addf(acc, xv)
                em.store(new, out, ivs, index)

        if count_real:

            def counted(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
                def inside() -> list[SSAValue]:
                    tap(ivs)
                    return [em.addf(accs[0], one)]

                return em.if_else(conditions, ivs, inside, [accs[0]])

            (count,) = em.accumulate(["kh", "kw"], [kh, kw], [zero], counted, outer)
        else:
            with em.nest(["kh", "kw"], [kh, kw]) as window:
                taps = [*outer, *window]

                def uncounted() -> list[SSAValue]:
                    tap(taps)
                    return []

                em.if_else(conditions, taps, uncounted, [])
            count = em.constant(float(kh * kw), t)

        if not is_max:
            with em.nest(["c_norm"], [c]) as (c_norm,):
                ivs = [*outer, c_norm]
                total = em.load(out, ivs, out_index)
                em.store(em.divf(total, count), out, ivs, out_index)


def lower_batch_norm_nhwc(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.BatchNormOp) and op.data_layout() == NHWC
    em = k.em
    x, scale, bias, mean, var = sources
    (out,) = k.outputs
    full = shape(op.result)
    t = element_type(op.result)
    eps = em.constant(op.epsilon.value.data, t)
    index = [dim(d) for d in range(len(full))]
    channel = [dim(op.channel_dim())]
    with em.nest(loop_names("i", len(full)), full) as ivs:
        centered = em.subf(em.load(x, ivs, index), em.load(mean, ivs, channel))
        scaled = em.mulf(em.load(scale, ivs, channel), centered)
        std = em.value(math.SqrtOp(em.addf(em.load(var, ivs, channel), eps)))
        result = em.addf(em.divf(scaled, std), em.load(bias, ivs, channel))
        em.store(result, out, ivs, index)
