"""``tg.conv2d`` kernels in NHWC (input ``[N, H, W, C]``, HWIO weight
``[KH, KW, C / groups, F]``, result ``[N, OH, OW, F]``).

The output channel ``f`` is the innermost loop: ``out[n, oh, ow, f]`` and
``w[kh, kw, c, f]`` are both contiguous in ``f`` and the input element is the same
for every ``f``, so LLVM vectorizes the loop into broadcast-multiply-adds over whole
registers of output channels::

    for n_init, oh_init, ow_init, f_init:  out[n, oh, ow, f] = bias[f]   (or 0)
    for n, oh, ow:
      for kh, kw:
        if the tap is inside the input (only the bounds that can fail):
          for c:
            v = x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c]
            for f:  out[n, oh, ow, f] += v * w[kh, kw, c, f]

The padding test depends on ``oh, kh, ow, kw`` only, so it sits outside the channel
loops and the ``c, f`` loops stay branch-free. With ``groups > 1`` a loop ``g`` over
the groups goes between ``kw`` and ``c``; ``f`` then runs over one group's
``F / groups`` output channels and ``c`` reads input channel ``g * (C / groups) + c``.
A depthwise convolution (``groups = C = F``) would get ``c`` and ``f`` of extent 1;
it has its own kernel, with the channels innermost (``conv_depthwise.py``).

The init (bias or zero) and a fused epilogue (``f(total, ivs)``, the ivs in the
result's order ``n, oh, ow, f``) are top-level nests of their own, before and after
the conv nest: ``n_init, oh_init, ow_init, f_init`` and ``n_epi, oh_epi, ow_epi,
f_epi``, once per output element, as the matmul's are. So ``n, oh, ow`` stays a band
that ``split``/``reorder`` can tile, and ``compute_at(kernel, "n_init", "ow")`` /
``compute_at(kernel, "n_epi", "ow")`` move them back to the start / end of the
``ow`` body (or into a tile loop), over the row ``out[n, oh, ow, :]`` while it is in
L1.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
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
from qidao.passes.kernels.lowering.conv_depthwise import (
    is_depthwise_nhwc,
    lower_conv2d_depthwise,
)

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
    if is_depthwise_nhwc(op):
        lower_conv2d_depthwise(op, k, sources, epilogue)
        return
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

    element = [nd, ohd, owd, dim(3)]
    with em.nest(["n_init", "oh_init", "ow_init", "f_init"], [n, oh, ow, f_out]) as ivs:
        first = zero if bias is None else em.load(bias, ivs, [dim(3)])
        em.store(first, out, ivs, element)

    with (
        em.nest(["n", "oh", "ow"], [n, oh, ow]) as outer,
        em.nest(["kh", "kw"], [kh, kw]) as window,
    ):
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
        with em.nest(["n_epi", "oh_epi", "ow_epi", "f_epi"], [n, oh, ow, f_out]) as ivs:
            total = em.load(out, ivs, element)
            em.store(epilogue(total, ivs), out, ivs, element)
