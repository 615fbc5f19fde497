"""``tg.conv2d`` kernels (NCHW input, FCHW weight).

One nest ``n, f, oh, ow, c, kh, kw``: the reduction loops ``c, kh, kw`` carry the sum
as iter_args; padding is an ``affine.if`` around the read (only the bounds that can
fail are tested); groups pick the input channel
``(f floordiv (F / groups)) * (C / groups) + c``; the bias is added last. A fused
epilogue (``tg.fused``, see ``fused.py``) then maps the finished sum, still
in a register, to the stored value.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    add,
    dim,
    element_type,
    mul,
    shape,
    window_index,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.conv_nhwc import lower_conv2d_nhwc

Epilogue = Callable[[SSAValue, list[SSAValue]], SSAValue]
"""``f(total, [n, f, oh, ow] ivs)``: the value stored for one output element."""


def lower_conv2d(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.Conv2dOp)
    emit_conv2d(op, k, sources, epilogue=None)


def emit_conv2d(
    op: tg.Conv2dOp, k: Kernel, sources: list[Source], epilogue: Epilogue | None
) -> None:
    if op.data_layout() == "NHWC":  # channels last: conv_nhwc.py
        lower_conv2d_nhwc(op, k, sources, epilogue=epilogue)
        return
    em = k.em
    x, w = sources[0], sources[1]
    bias = sources[2] if op.bias is not None else None
    (out,) = k.outputs
    _, _, h, wd = shape(op.input)
    f_out, cg, kh, kw = shape(op.weight)
    n, _, oh, ow = shape(op.result)
    sh, sw = ints(op.strides)
    pt, pl, _, _ = ints(op.padding)
    dh, dw = ints(op.dilation)
    groups = op.groups.value.data
    fg = f_out // groups
    zero = em.constant(0.0, element_type(op.result))

    nd, fd, ohd, owd, cd, khd, kwd = (dim(d) for d in range(7))
    row, row_inside = window_index(ohd, khd, sh, pt, dh, oh, kh, h)
    col, col_inside = window_index(owd, kwd, sw, pl, dw, ow, kw, wd)
    channel: AffineExpr = cd if groups == 1 else add(mul(fd // fg, cg), cd)
    conditions = [*row_inside, *col_inside]

    with em.nest(["n", "f", "oh", "ow"], [n, f_out, oh, ow]) as outer:

        def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            def tap() -> list[SSAValue]:
                xv = em.load(x, ivs, [nd, channel, row, col])
                wv = em.load(w, ivs, [fd, cd, khd, kwd])
                return [em.addf(accs[0], em.mulf(xv, wv))]

            return em.if_else(conditions, ivs, tap, [accs[0]])

        (total,) = em.accumulate(["c", "kh", "kw"], [cg, kh, kw], [zero], step, outer)
        if bias is not None:
            total = em.addf(total, em.load(bias, outer, [dim(1)]))
        if epilogue is not None:
            total = epilogue(total, outer)
        em.store(total, out, outer, [dim(d) for d in range(4)])
