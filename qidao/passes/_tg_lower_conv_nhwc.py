"""``tg.conv2d`` kernels in NHWC (input ``[N, H, W, C]``, HWIO weight
``[KH, KW, C / groups, F]``, result ``[N, OH, OW, F]``).

The output channel ``f`` is the innermost loop: ``out[n, oh, ow, f]`` and
``w[kh, kw, c, f]`` are both contiguous in ``f`` and the input element is the same
for every ``f``, so LLVM vectorizes the loop into broadcast-multiply-adds over whole
registers of output channels::

    for n, oh, ow:
      for f_init:  out[n, oh, ow, f] = bias[f]            (or 0)
      for kh, kw:
        if the tap is inside the input (only the bounds that can fail):
          for c:
            v = x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c]
            for f:  out[n, oh, ow, f] += v * w[kh, kw, c, f]

The padding test depends on ``oh, kh, ow, kw`` only, so it sits outside the channel
loops and the ``c, f`` loops stay branch-free. With ``groups > 1`` a loop ``g`` over
the groups goes between ``kw`` and ``c``; ``f`` then runs over one group's
``F / groups`` output channels and ``c`` reads input channel ``g * (C / groups) + c``.

A fused epilogue (``f(total, ivs)``, the ivs in the result's order ``n, oh, ow, f``)
runs in a last loop ``f_epilogue`` over the finished row ``out[n, oh, ow, :]``,
which is still in L1.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
from qidao.passes._tg_lower_common import (
    Kernel,
    Source,
    add,
    dim,
    element_type,
    mul,
    shape,
    window_index,
)
from qidao.passes._tg_lower_constants import ConstantPool

Epilogue = Callable[[SSAValue, list[SSAValue]], SSAValue]
"""``f(total, [n, oh, ow, f] ivs)``: the value stored for one output element."""


def lower_conv2d_nhwc(
    op: Operation,
    k: Kernel,
    sources: list[Source],
    pool: ConstantPool | None = None,
    epilogue: Epilogue | None = None,
) -> None:
    assert isinstance(op, tg.Conv2dOp) and op.data_layout() == NHWC
    em = k.em
    x, w = sources[0], sources[1]
    bias = sources[2] if op.bias is not None else None
    (out,) = k.outputs
    _, h, wd, _ = shape(op.input)
    kh, kw, cg, f_out = shape(op.weight)
    n, oh, ow, _ = shape(op.result)
    sh, sw = ints(op.strides)
    pt, pl, _, _ = ints(op.padding)
    dh, dw = ints(op.dilation)
    groups = op.groups.value.data
    fg = f_out // groups
    zero = em.constant(0.0, element_type(op.result))

    # ivs: n, oh, ow, kh, kw, then g (only with groups), c, f
    nd, ohd, owd, khd, kwd = (dim(d) for d in range(5))
    row, row_inside = window_index(ohd, khd, sh, pt, dh, oh, kh, h)
    col, col_inside = window_index(owd, kwd, sw, pl, dw, ow, kw, wd)
    conditions = [*row_inside, *col_inside]

    def channel_loops(ivs: list[SSAValue], group: AffineExpr | None) -> None:
        """``for c: for f:`` inside the window loops (and ``g``); ``c`` and ``f``
        are the two dims after ``ivs``."""
        cd, fd = dim(len(ivs)), dim(len(ivs) + 1)
        channel = cd if group is None else add(mul(group, cg), cd)
        out_f = fd if group is None else add(mul(group, fg), fd)
        with em.nest(["c"], [cg]) as (c,):
            xv = em.load(x, [*ivs, c], [nd, row, col, channel])
            with em.nest(["f"], [fg]) as (f,):
                inner = [*ivs, c, f]
                index = [nd, ohd, owd, out_f]
                wv = em.load(w, inner, [khd, kwd, cd, out_f])
                acc = em.load(out, inner, index)
                em.store(em.addf(acc, em.mulf(xv, wv)), out, inner, index)

    with em.nest(["n", "oh", "ow"], [n, oh, ow]) as outer:
        with em.nest(["f_init"], [f_out]) as (f_init,):
            ivs = [*outer, f_init]
            first = zero if bias is None else em.load(bias, ivs, [dim(3)])
            em.store(first, out, ivs, [nd, ohd, owd, dim(3)])

        with em.nest(["kh", "kw"], [kh, kw]) as window:
            taps = [*outer, *window]

            def tap() -> list[SSAValue]:
                if groups == 1:
                    channel_loops(taps, None)
                else:
                    with em.nest(["g"], [groups]) as (g,):
                        channel_loops([*taps, g], dim(5))
                return []

            em.if_else(conditions, taps, tap, [])

        if epilogue is not None:
            with em.nest(["f_epilogue"], [f_out]) as (f_epi,):
                ivs = [*outer, f_epi]
                index = [nd, ohd, owd, dim(3)]
                total = em.load(out, ivs, index)
                em.store(epilogue(total, ivs), out, ivs, index)
