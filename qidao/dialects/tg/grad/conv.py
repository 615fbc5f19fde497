"""vjp rule of ``tg.conv2d`` (NCHW), and ``conv2d_grads``, which a frontend reuses
for aten's ``convolution_backward``.

The tg dialect has no conv-transpose or scatter op, so both gradients are
``tg.conv2d`` ops again. Per spatial axis, with kernel ``K``, stride ``s``,
dilation ``d``, padding ``lo``/``hi`` and ``OH`` outputs, the forward reads
``xp[oh s + i d]`` of the padded input ``xp`` (``x`` starts at row ``lo`` of it):

- ``dx`` (the transposed convolution): ``g`` dilated by ``s`` (``Emit.dilate``:
  ``s - 1`` zeros after each row, so ``OH s`` rows), correlated at stride 1 and
  dilation ``d`` with the kernel flipped (``tg.gather`` with reversed indices) and
  its in/out channels swapped within each group. Row ``h`` of ``dx`` needs the
  dilated ``g`` shifted by ``d (K - 1) - lo``: the positive part of that shift (and
  of the matching end amount) is the new conv's padding, the negative part a
  ``tg.slice``, so the result is exactly ``x``'s shape; rows the forward never read
  (past the last window, or between windows when ``s > d K``) get 0.

  ```
  dx = conv2d(crop(dilate(g, s)), flip(wᵀ per group), stride 1, dilation d,
              padding max(d (K - 1) - lo, 0), ...)
  ```

- ``dw``: a convolution whose batch is the input channel within the group and whose
  channels are (group, sample): ``x`` as ``[C / groups, groups N, H, W]``, ``g`` as
  the weight ``[F, N, OH, OW]``, ``groups`` groups, stride ``d`` and dilation ``s``
  (swapped), padded like the forward but cut to the ``s (OH - 1) + d (K - 1) + 1``
  rows it read, so the result is ``[C / groups, F, K, K]``, transposed to FCHW.
  One op for every groups count (depthwise included), unlike ``K K`` matmuls.

- the bias: ``g`` summed over N, H and W.

NHWC convolutions are refused (``GradientError``): the frontends emit NCHW and
the ``layout`` pass that makes NHWC runs after ``autodiff``.
"""

from __future__ import annotations

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
    f, cg, *kernel = shape(w)
    spread = e.dilate(g, strides)  # [N, F, OH sh, OW sw]
    low, high = [], []
    for axis in range(2):
        reach = dilation[axis] * (kernel[axis] - 1)
        lo = reach - padding[axis]
        low.append(lo)
        high.append(size[axis] + reach - lo - shape(spread)[2 + axis])
    start = [max(-lo, 0) for lo in low]
    stop = [d - max(-hi, 0) for d, hi in zip(shape(spread)[2:], high, strict=True)]
    # never empty: OH s > H + top + bottom - d (K - 1) - 1, so OH s - crop >= 1
    assert all(a < b for a, b in zip(start, stop, strict=True))
    if any(start) or stop != list(shape(spread)[2:]):
        spread = e.slice(spread, [0, 0, *start], [n, f, *stop])
    fg = f // groups
    flipped = e.gather(
        e.gather(w, 2, range(kernel[0] - 1, -1, -1)), 3, range(kernel[1] - 1, -1, -1)
    )
    swapped = e.permute(e.reshape(flipped, [groups, fg, cg, *kernel]), [0, 2, 1, 3, 4])
    pads = [max(low[0], 0), max(low[1], 0), max(high[0], 0), max(high[1], 0)]
    return e.op(
        Conv2dOp(
            spread,
            e.reshape(swapped, [c, fg, *kernel]),
            strides=(1, 1),
            padding=pads,
            dilation=tuple(dilation),
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
    _, cg, *kernel = shape(w)
    out = shape(g)[2:]
    # the rows of the padded input that the windows read, and how many x fills
    read = [
        strides[k] * (out[k] - 1) + dilation[k] * (kernel[k] - 1) + 1 for k in range(2)
    ]
    inside = [min(size[k], read[k] - padding[k]) for k in range(2)]
    if min(inside) <= 0:
        return e.zeros_like(w)  # every window the forward read was padding
    if inside != size:
        x = e.slice(x, [0, 0, 0, 0], [n, c, *inside])
    pads = [padding[0], padding[1], *(read[k] - padding[k] - inside[k] for k in (0, 1))]
    batched = e.permute(e.reshape(x, [n, groups, cg, *inside]), [2, 1, 0, 3, 4])
    dw = e.op(
        Conv2dOp(
            e.reshape(batched, [cg, groups * n, *inside]),
            e.permute(g, [1, 0, 2, 3]),
            strides=tuple(dilation),
            padding=pads,
            dilation=tuple(strides),
            groups=groups,
        )
    )
    return e.permute(dw, [1, 0, 2, 3])
