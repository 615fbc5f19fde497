"""Neural-network kernels: pools, softmax and batch normalization.

- ``tg.max_pool2d`` / ``tg.avg_pool2d``: one nest ``n, c, oh, ow, kh, kw`` reading
  row ``oh * stride - pad + kh * dilation`` (both pools take a dilation), the window
  loops carrying the running max / sum as iter_args; padded positions are skipped
  with ``affine.if`` (max never sees them; avg divides by ``kh * kw`` with
  ``count_include_pad`` or without padding, else by the number of real elements,
  counted in a second iter_arg).
- ``tg.softmax``: outer loops ``i0, i1, ...`` over every dimension but the axis, then
  three loops over the axis: ``r_max`` (running max), ``r_sum`` (stores
  ``exp(x - max)`` and sums it), ``r_norm`` (multiplies by ``1 / sum``, computed
  once per row, as PyTorch does). The max and the sum accumulate with
  ``fastmath<reassoc,contract>`` so each loop vectorizes (the sum's rounding then
  differs from NumPy's by a few ulp).
- ``tg.batch_norm``: one elementwise nest ``i0, i1, ...``:
  ``scale[c] * (x - mean[c]) / sqrt(var[c] + epsilon) + bias[c]`` with ``c`` dim 1.
"""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
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
from qidao.passes.kernels.lowering.pool_nhwc import (
    lower_batch_norm_nhwc,
    lower_pool_nhwc,
)


def lower_pool(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.Pool2dOp)
    if op.data_layout() == "NHWC":  # channels last: pool_nhwc.py
        lower_pool_nhwc(op, k, sources, pool)
        return
    em = k.em
    (x,) = sources
    (out,) = k.outputs
    (kh, kw), (sh, sw), (pt, pl, _, _) = op.pool_geometry()
    dh, dw = op.dilations()
    _, _, h, w = shape(op.input)
    n, c, oh, ow = shape(op.result)
    t = element_type(op.result)
    nd, cd, ohd, owd, khd, kwd = (dim(d) for d in range(6))
    row, row_inside = window_index(ohd, khd, sh, pt, dh, oh, kh, h)
    col, col_inside = window_index(owd, kwd, sw, pl, dw, ow, kw, w)
    conditions = [*row_inside, *col_inside]
    is_max = isinstance(op, tg.MaxPool2dOp)
    count_real = (
        isinstance(op, tg.AvgPool2dOp)
        and op.count_include_pad is None
        and bool(conditions)
    )
    one = em.constant(1.0, t)

    with em.nest(["n", "c", "oh", "ow"], [n, c, oh, ow]) as outer:

        def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            def tap() -> list[SSAValue]:
                xv = em.load(x, ivs, [nd, cd, row, col])
                if is_max:
                    return [em.maxf(accs[0], xv)]
                summed = [em.addf(accs[0], xv)]
                return [*summed, em.addf(accs[1], one)] if count_real else summed

            return em.if_else(conditions, ivs, tap, list(accs))

        if is_max:
            (result,) = em.accumulate(
                ["kh", "kw"], [kh, kw], [em.constant(NEG_INF, t)], step, outer
            )
        else:
            zero = em.constant(0.0, t)
            inits = [zero, zero] if count_real else [zero]
            accs = em.accumulate(["kh", "kw"], [kh, kw], inits, step, outer)
            count = accs[1] if count_real else em.constant(float(kh * kw), t)
            result = em.divf(accs[0], count)
        em.store(result, out, outer, [dim(d) for d in range(4)])


def lower_softmax(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.SoftmaxOp)
    em = k.em
    (x,) = sources
    (out,) = k.outputs
    full = shape(op.result)
    axis = op.normalized_axis()
    rank = len(full)
    t = element_type(op.result)
    outer_shape = [s for d, s in enumerate(full) if d != axis]
    index: list[AffineExpr] = [dim(d) for d in range(rank - 1)]
    index.insert(axis, dim(rank - 1))

    with em.nest(loop_names("i", rank - 1), outer_shape) as outer:
        # over the last axis the max is only the row's shift (maxnumf, cheaper);
        # over another, LLVM's loop vectorizer (LLVM 22) aborts on a maxnum
        # reduction with strided loads, so it keeps maximumf (shift_max_step)
        step = em.shift_max_step if axis == rank - 1 else em.max_step

        def running_max(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            return [step(accs[0], em.load(x, ivs, index))]

        (top,) = em.accumulate(
            ["r_max"], [full[axis]], [em.constant(NEG_INF, t)], running_max, outer
        )

        def exp_sum(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            e = em.value(math.ExpOp(em.subf(em.load(x, ivs, index), top)))
            em.store(e, out, ivs, index)
            return [em.sum_step(accs[0], e)]

        (total,) = em.accumulate(
            ["r_sum"], [full[axis]], [em.constant(0.0, t)], exp_sum, outer
        )
        scale = em.divf(em.constant(1.0, t), total)
        with em.nest(["r_norm"], [full[axis]]) as (r,):
            ivs = [*outer, r]
            em.store(em.mulf(em.load(out, ivs, index), scale), out, ivs, index)


def lower_batch_norm(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.BatchNormOp)
    if op.data_layout() == "NHWC":  # channels last: pool_nhwc.py
        lower_batch_norm_nhwc(op, k, sources, pool)
        return
    em = k.em
    x, scale, bias, mean, var = sources
    (out,) = k.outputs
    full = shape(op.result)
    t = element_type(op.result)
    eps = em.constant(op.epsilon.value.data, t)
    index = [dim(d) for d in range(len(full))]
    with em.nest(loop_names("i", len(full)), full) as ivs:
        channel = [dim(1)]
        centered = em.subf(em.load(x, ivs, index), em.load(mean, ivs, channel))
        scaled = em.mulf(em.load(scale, ivs, channel), centered)
        std = em.value(math.SqrtOp(em.addf(em.load(var, ivs, channel), eps)))
        result = em.addf(em.divf(scaled, std), em.load(bias, ivs, channel))
        em.store(result, out, ivs, index)
