"""vjp rule of ``tg.conv2d`` (NCHW), and ``conv2d_grads``, which a frontend reuses
for aten's ``convolution_backward``.

The tg dialect has no conv-transpose or scatter op, so the input gradient is
``tg.conv2d`` ops again and the weight gradient a ``tg.matmul``. Per spatial axis,
with kernel ``K``, stride ``s``, dilation ``d``, padding ``lo`` and ``OH`` outputs,
the forward reads ``xp[oh s + t d]`` of the padded input ``xp`` (``x`` starts at
row ``lo`` of it), so row ``h`` of ``x`` takes ``g[oh] w[t]`` wherever
``oh = (h + lo - t d) / s`` is a whole number in ``[0, OH)``:

- ``dx``, one stride-1 convolution per *phase* ``ph`` in ``[0, s)`` (per axis; the
  rows ``h = ph + s i``): only the taps with ``(ph + lo - t d) mod s = 0`` reach
  those rows, at ``g[i + a_t]``, ``a_t = (ph + lo - t d) / s``, which grows by
  ``d / gcd(s, d)`` from one reaching tap to the next as ``t`` falls. So the phase
  is a correlation of ``g`` with those taps of the kernel, flipped, with its
  in/out channels swapped within each group, at dilation ``d / gcd(s, d)``; the
  positive part of the shift ``-a`` (and of the matching end amount) is its
  padding, the negative part a ``tg.slice``. The ``s_h s_w`` phases, padded to
  whole rows, are interleaved in NHWC (``concat`` of ``[N, H/s, 1, W/s, 1, C]``
  blocks, a reshape) and cut to ``x``'s shape; a phase no tap reaches is zeros.
  Stride 1 is one phase: the whole flipped kernel. Every multiply the phases do
  is one the forward did (a stride-2 3x3 kernel splits into 1x1, 1x2, 2x1 and
  2x2 taps); the textbook form, ``g`` dilated with ``s - 1`` zeros and
  correlated with the whole kernel, did ``s_h s_w`` times as many (4x for a
  stride-2 ResNet block: 8.5 of the 22 ms of the training bench's CNN step).

  ```
  dx[ph::s] = conv2d(crop(g), flip(w[taps(ph)])ᵀ per group, stride 1,
                     dilation d / gcd(s, d), padding max(-a, 0), ...)
  ```

- ``dw``: an im2col matmul. The ``K_h K_w`` windows of the padded input that the
  forward read (``tg.slice`` with the stride as step, NHWC, so ``[N, OH, OW,
  C]`` each) are concatenated along channels, ``[N OH OW, K_h K_w C]`` per group;
  ``g`` as ``[groups, F / groups, N OH OW]`` times that is ``[groups, F /
  groups, K_h K_w C / groups]``, reshaped and transposed to FCHW. The
  convolution with ``g`` as its kernel that this replaced (``x`` batched by
  channel, ``OH x OW`` taps) became, under ``select-conv-algo``, an im2col of
  ``OH OW`` windows: 1024 of them for the bench's CNN, whose step then took
  165 s to compile (4.5 s now).

- the bias: ``g`` summed over N, H and W.

NHWC convolutions are refused (``GradientError``): the frontends emit NCHW and
the ``layout`` pass that makes NHWC runs after ``autodiff``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import SSAValue

from qidao.dialects.tg.base import ints
from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import GradientError, Grads, vjp
from qidao.dialects.tg.linalg import NCHW, Conv2dOp


@vjp(Conv2dOp)
def _conv2d(e: Emit, op: Conv2dOp, g: SSAValue) -> Grads:
    if op.data_layout() != NCHW:
        raise GradientError(
            f"tg.conv2d: no gradient for layout {op.data_layout()}; autodiff expects "
            "NCHW convolutions (the layout pass runs after it)"
        )
    dx, dw = conv2d_grads(
        e,
        op.input,
        op.weight,
        g,
        strides=ints(op.strides),
        padding=ints(op.padding),
        dilation=ints(op.dilation),
        groups=op.groups.value.data,
    )
    if op.bias is None:
        return [dx, dw]
    return [dx, dw, e.reduce_sum(g, [0, 2, 3])]


def conv2d_grads(
    e: Emit,
    x: SSAValue,
    w: SSAValue,
    g: SSAValue,
    *,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> tuple[SSAValue, SSAValue]:
    """The gradients ``(dx, dw)`` of an NCHW ``tg.conv2d`` of ``x`` ``[N, C, H, W]``
    and ``w`` ``[F, C / groups, KH, KW]`` whose result has gradient ``g``
    ``[N, F, OH, OW]``; ``padding`` is the op's ``[top, left, bottom, right]``."""
    return (
        _input_grad(e, x, w, g, strides, padding, dilation, groups),
        _weight_grad(e, x, w, g, strides, padding, dilation, groups),
    )


def _input_grad(
    e: Emit,
    x: SSAValue,
    w: SSAValue,
    g: SSAValue,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> SSAValue:
    n, c, *size = shape(x)
    if all(s == 1 for s in strides):
        whole = _phase_grad(e, w, g, (0, 0), size, padding, (1, 1), dilation, groups)
        return e.zeros_like(x) if whole is None else whole
    # one stride-1 convolution per phase (the rows h = ph + s i), interleaved in NHWC
    steps = list(strides)
    rows = [-(-size[k] // steps[k]) for k in range(2)]  # each phase padded to these
    per_row = []
    for ph in range(steps[0]):
        per_col = []
        for pw in range(steps[1]):
            phase = _phase_grad(
                e, w, g, (ph, pw), size, padding, steps, dilation, groups
            )
            if phase is None:  # no tap reaches these rows: zeros
                per_col.append(e.full([n, rows[0], 1, rows[1], 1, c], 0.0, g))
                continue
            nhwc = e.permute(phase, [0, 2, 3, 1])
            have = shape(nhwc)[1:3]
            high = [0, rows[0] - have[0], rows[1] - have[1], 0]
            nhwc = e.pad(nhwc, [0, 0, 0, 0], high)
            per_col.append(e.reshape(nhwc, [n, rows[0], 1, rows[1], 1, c]))
        per_row.append(e.concat(per_col, 4))
    woven = e.reshape(
        e.concat(per_row, 2), [n, rows[0] * steps[0], rows[1] * steps[1], c]
    )
    if list(shape(woven)[1:3]) != size:
        woven = e.slice(woven, [0, 0, 0, 0], [n, *size, c])
    return e.permute(woven, [0, 3, 1, 2])


def _phase_grad(
    e: Emit,
    w: SSAValue,
    g: SSAValue,
    phase: tuple[int, int],
    size: Sequence[int],
    padding: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> SSAValue | None:
    """The rows and columns ``(ph + sh i, pw + sw j)`` of ``dx``, ``[N, C, ceil((H -
    ph) / sh), ...]``: a stride-1 correlation of ``g`` with the taps of the flipped
    kernel that reach them (module docstring); None where no tap reaches them."""
    n, f, *out = shape(g)
    _, cg, *kernel = shape(w)
    c = cg * groups
    taps, low, high, reach = [], [], [], []
    for k in range(2):
        s, d, p, ph = strides[k], dilation[k], padding[k], phase[k]
        rows = -(-(size[k] - ph) // s)
        # tap t lands on g[i + a_t], a_t = (ph + p - t d) / s where that divides
        hits = [t for t in range(kernel[k]) if (ph + p - t * d) % s == 0]
        if not hits or rows <= 0:
            return None
        hits.reverse()  # a_t grows as t falls: the correlation's taps in order
        offset = (ph + p - hits[0] * d) // s  # the first tap's a
        step = d // math.gcd(s, d)  # a's step between reaching taps
        taps.append(hits)
        reach.append(step)
        low.append(-offset)
        high.append(rows + step * (len(hits) - 1) + offset - out[k])
    fg = f // groups
    sub = e.gather(e.gather(w, 2, taps[0]), 3, taps[1])
    swapped = e.permute(
        e.reshape(sub, [groups, fg, cg, len(taps[0]), len(taps[1])]), [0, 2, 1, 3, 4]
    )
    start = [0, 0, *(max(-lo, 0) for lo in low)]
    stop = [n, f, *(d - max(-hi, 0) for d, hi in zip(out, high, strict=True))]
    if any(a >= b for a, b in zip(start, stop, strict=True)):
        return None  # every row of g these taps reach is past its end
    source = g
    if start != [0, 0, 0, 0] or stop != [n, f, *out]:
        source = e.slice(source, start, stop)
    return e.op(
        Conv2dOp(
            source,
            e.reshape(swapped, [c, fg, len(taps[0]), len(taps[1])]),
            strides=(1, 1),
            padding=[max(low[0], 0), max(low[1], 0), max(high[0], 0), max(high[1], 0)],
            dilation=tuple(reach),
            groups=groups,
        )
    )


def _weight_grad(
    e: Emit,
    x: SSAValue,
    w: SSAValue,
    g: SSAValue,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> SSAValue:
    n, c, *size = shape(x)
    f, cg, *kernel = shape(w)
    out = shape(g)[2:]
    # the rows of the padded input that the windows read
    read = [
        strides[k] * (out[k] - 1) + dilation[k] * (kernel[k] - 1) + 1 for k in range(2)
    ]
    inside = [min(size[k], read[k] - padding[k]) for k in range(2)]
    if min(inside) <= 0:
        return e.zeros_like(w)  # every window the forward read was padding
    nhwc = e.permute(x, [0, 2, 3, 1])
    padded = e.pad_or_crop(
        nhwc,
        [0, padding[0], padding[1], 0],
        [0, read[0] - padding[0] - size[0], read[1] - padding[1] - size[1], 0],
    )
    windows = [
        e.slice(
            padded,
            [0, i * dilation[0], j * dilation[1], 0],
            [
                n,
                i * dilation[0] + strides[0] * (out[0] - 1) + 1,
                j * dilation[1] + strides[1] * (out[1] - 1) + 1,
                c,
            ],
            [1, strides[0], strides[1], 1],
        )
        for i in range(kernel[0])
        for j in range(kernel[1])
    ]
    taps = kernel[0] * kernel[1]
    pixels = n * out[0] * out[1]
    fg = f // groups
    # cols[g, pixel, (tap, cg)]: the im2col matrix of each group
    cols = e.permute(
        e.reshape(e.concat(windows, 3), [pixels, taps, groups, cg]), [2, 0, 1, 3]
    )
    cols = e.reshape(cols, [groups, pixels, taps * cg])
    # g as [group, fg, pixel]
    grads = e.permute(
        e.reshape(e.permute(g, [0, 2, 3, 1]), [pixels, groups, fg]), [1, 2, 0]
    )
    dw = e.matmul(grads, cols)  # [groups, fg, taps cg]
    dw = e.reshape(dw, [groups, fg, kernel[0], kernel[1], cg])
    return e.reshape(e.permute(dw, [0, 1, 4, 2, 3]), [f, cg, *kernel])
