"""Depthwise ``tg.conv2d`` kernels in NHWC: one filter per channel (``groups = C``,
``F = C``), the channels innermost and contiguous, in blocks of 16.

The NHWC lowering of a grouped convolution (``conv_nhwc.py``) would give a depthwise
one the loops ``n, oh, ow, kh, kw, g, c, f`` with ``c`` and ``f`` of extent 1:
nothing to vectorize. Here the group loop *is* the channel loop, innermost, and
``out[n, oh, ow, ch]``, ``x[n, ih, iw, ch]`` and the HWIO weight
``w[kh, kw, 0, ch]`` are all contiguous in it, so it runs on whole vectors of
channels. The channels come in blocks of ``B = CHANNEL_BLOCK`` (16, one
``<16 x float>``; ``B = C`` when 16 does not divide ``C``), the block loop ``cb``
outermost but for the batch::

    for n_init, oh_init, ow_init, c_init:  out[n, oh, ow, c] = bias[c]   (or 0)
    for n, cb, oh, ow:
      for kh, kw:
        if the tap is inside the input (only the bounds that can fail):
          for c in [0, B):                   ch = cb * B + c
            out[n, oh, ow, ch] += x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, ch]
                                  * w[kh, kw, 0, ch]
    for n_epi, oh_epi, ow_epi, c_epi:  out[n, oh, ow, c] = f(out[n, oh, ow, c])

Why the blocks outside the pixels: one block's pass over the image reads 64 bytes
of each input pixel, so the ``KH`` input rows its taps revisit stay in L1 (3 rows of
58 pixels: 11 KB), where all ``C`` channels (``KH * W * C * 4`` bytes: 100 KB at
144 channels) would not. Measured with the default schedule (one thread, medians
of 3, us; the same nest with ``c`` over all channels first): 96 channels on 56x56
160 -> 98, 192 on 28x28 109 -> 66, 384 on 14x14 55 -> 36, 144 on 56x56 stride 2
100 -> 54, 32 on 112x112 stride 2 52 -> 35; never slower. Blocks of 32, 48 or 64
channels were slower than 16 at every size
(``qidao/compiler/targets/cpu/defaults/depthwise.py``). The padding test depends
on ``oh, kh, ow, kw`` only, so it sits outside ``c``, as in ``conv_nhwc.py``; no
schedule can reorder across it, which is why the lowering places ``cb``.

The init (bias or zero) and a fused epilogue (``f(total, ivs)``, the ivs in the
result's order ``n, oh, ow, c``) are top-level nests of their own over all
channels; ``compute_at`` moves them into the ``ow`` body, where they cover the
block's channels.

Only a channel multiplier of 1 takes this kernel. With ``F = C * m``, ``m > 1``, the
output channel ``c * m + j`` reads input channel ``c``: no order of ``c`` and ``j``
makes all three accesses unit-stride, so those stay with ``conv_nhwc.py`` (its ``f``
loop runs over the ``m`` outputs of one channel).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    add,
    const,
    dim,
    element_type,
    mul,
    shape,
    window_index,
)

CHANNEL_BLOCK = 16
"""Channels per block ``cb`` of the main nest (one ``<16 x float>``); ``C`` itself
when 16 does not divide it."""

Epilogue = Callable[[SSAValue, list[SSAValue]], SSAValue]
"""``f(total, [n, oh, ow, c] ivs)``: the value stored for one output element."""


def is_depthwise_nhwc(op: tg.Conv2dOp) -> bool:
    """An NHWC convolution with one input and one output channel per group
    (``groups = C = F``): the kernel of this module."""
    if op.data_layout() != NHWC:
        return False
    channels = shape(op.input)[3]
    _, _, per_group, f_out = shape(op.weight)
    return op.groups.value.data == channels == f_out and per_group == 1


def lower_conv2d_depthwise(
    op: tg.Conv2dOp,
    k: Kernel,
    sources: list[Source],
    epilogue: Epilogue | None = None,
) -> None:
    """Fill ``k`` with the nests of the module docstring."""
    assert is_depthwise_nhwc(op), op
    em = k.em
    x, w = sources[0], sources[1]
    bias = sources[2] if op.bias is not None else None
    (out,) = k.outputs
    _, h, wd, _ = shape(op.input)
    kh, kw, _, channels = shape(op.weight)
    n, oh, ow, _ = shape(op.result)
    sh, sw = ints(op.strides)
    pt, pl, _, _ = ints(op.padding)
    dh, dw = ints(op.dilation)
    zero = em.constant(0.0, element_type(op.result))

    block = CHANNEL_BLOCK if channels % CHANNEL_BLOCK == 0 else channels
    # ivs: n, cb, oh, ow, kh, kw, c; the channel is cb * block + c
    nd, cbd, ohd, owd, khd, kwd, cd = (dim(d) for d in range(7))
    channel = add(mul(cbd, block), cd)
    row, row_inside = window_index(ohd, khd, sh, pt, dh, oh, kh, h)
    col, col_inside = window_index(owd, kwd, sw, pl, dw, ow, kw, wd)

    # the init and epilogue nests: n, oh, ow, c over every output element
    element, extents = [dim(d) for d in range(4)], [n, oh, ow, channels]
    with em.nest(["n_init", "oh_init", "ow_init", "c_init"], extents) as ivs:
        first = zero if bias is None else em.load(bias, ivs, [dim(3)])
        em.store(first, out, ivs, element)

    with (
        em.nest(["n", "cb", "oh", "ow"], [n, channels // block, oh, ow]) as outer,
        em.nest(["kh", "kw"], [kh, kw]) as window,
    ):
        taps = [*outer, *window]

        def tap() -> list[SSAValue]:
            with em.nest(["c"], [block]) as (c,):
                ivs = [*taps, c]
                xv = em.load(x, ivs, [nd, row, col, channel])
                wv = em.load(w, ivs, [khd, kwd, const(0), channel])
                index = [nd, ohd, owd, channel]
                acc = em.load(out, ivs, index)
                em.store(em.addf(acc, em.mulf(xv, wv)), out, ivs, index)
            return []

        em.if_else([*row_inside, *col_inside], taps, tap, [])

    if epilogue is not None:
        with em.nest(["n_epi", "oh_epi", "ow_epi", "c_epi"], extents) as ivs:
            total = em.load(out, ivs, element)
            em.store(epilogue(total, ivs), out, ivs, element)
