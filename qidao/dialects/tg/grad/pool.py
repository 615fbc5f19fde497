"""vjp rules of ``tg.max_pool2d`` and ``tg.avg_pool2d`` (NCHW).

Both send each output's gradient back to the taps of its window. The tg dialect has
no scatter op, so the rules go tap by tap: for tap ``(i, j)`` of the ``KH x KW``
window, the outputs read the input rows ``oh sh + i dh - top`` (and the columns
alike), a strided grid. Its share of the gradient, ``[N, C, OH, OW]``, goes back to
that grid by ``Emit.dilate`` (``sh - 1`` zeros after each row) and a pad or crop by
the tap's offset (``_scatter``); the ``KH KW`` grids are summed. Taps on padding
are cut off by the crop (padding gets no gradient), and a tap that only ever reads
padding is skipped.

- ``avg_pool2d``: every tap gets ``g / divisor``; the divisor is ``KH KW`` with
  ``count_include_pad``, else the number of real input elements in the window,
  counted with NumPy when the rule runs and held as a constant (as ``numpy_eval``).
- ``max_pool2d``: the gradient goes to the first maximum of each window in
  row-major tap order (PyTorch's convention, ``docs/autodiff.md``). Tap ``k`` takes
  ``g`` where its value equals the result, it is not padding and no earlier tap has
  taken it (a running ``not taken`` mask). Padding is -inf in the forward, which a
  ``tg.pad`` cannot hold, so the rule pads with 0 and masks the padded taps out with
  a constant instead. (A NaN in a window, which PyTorch's max picks, gets none.)

NHWC pools are refused (``GradientError``): the ``layout`` pass runs after autodiff.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import GradientError, Grads, vjp
from qidao.dialects.tg.linalg import NCHW
from qidao.dialects.tg.nn import AvgPool2dOp, MaxPool2dOp, Pool2dOp


class _Taps:
    """The window geometry of an NCHW pool: where each tap reads the input."""

    def __init__(self, op: Pool2dOp) -> None:
        if op.data_layout() != NCHW:
            raise GradientError(
                f"{op.name}: no gradient for layout {op.data_layout()}; autodiff "
                "expects NCHW pools (the layout pass runs after it)"
            )
        self.kernel, self.strides, self.padding = op.pool_geometry()
        self.dilation = op.dilations()
        self.size = shape(op.input)[2:]
        self.out = shape(op.result)[2:]

    def taps(self) -> list[tuple[int, int]]:
        """The taps ``(i, j)`` in row-major order."""
        return [(i, j) for i in range(self.kernel[0]) for j in range(self.kernel[1])]

    def offset(self, tap: tuple[int, int]) -> tuple[int, int]:
        """The input row and column that output ``(0, 0)`` reads at ``tap``."""
        return (
            tap[0] * self.dilation[0] - self.padding[0],
            tap[1] * self.dilation[1] - self.padding[1],
        )

    def inside(self, tap: tuple[int, int]) -> np.ndarray:
        """``[OH, OW]`` booleans: where ``tap`` reads the input, not padding."""
        axes = []
        for k in range(2):
            rows = self.offset(tap)[k] + self.strides[k] * np.arange(self.out[k])
            axes.append((rows >= 0) & (rows < self.size[k]))
        return np.outer(axes[0], axes[1])

    def counts(self) -> np.ndarray:
        """``[OH, OW]``: how many taps of each window read the input."""
        counts: np.ndarray = np.sum([self.inside(t) for t in self.taps()], axis=0)
        return counts

    def scatter(self, e: Emit, part: SSAValue, tap: tuple[int, int]) -> SSAValue:
        """``part`` ``[N, C, OH, OW]`` moved to the input rows and columns that
        ``tap`` read, zeros elsewhere: ``[N, C, H, W]``."""
        spread = e.dilate(part, self.strides)
        low = self.offset(tap)
        high = [self.size[k] - low[k] - shape(spread)[2 + k] for k in range(2)]
        return e.pad_or_crop(spread, [0, 0, *low], [0, 0, *high])


def _sum(e: Emit, parts: Sequence[SSAValue], like: SSAValue) -> SSAValue:
    """The sum of the taps' shares: zeros like the input when every window lies on
    padding (a dilated window can step over a 1-row input)."""
    if not parts:
        return e.zeros_like(like)
    total = parts[0]
    for part in parts[1:]:
        total = e.add(total, part)
    return total


@vjp(AvgPool2dOp)
def _avg_pool2d(e: Emit, op: AvgPool2dOp, g: SSAValue) -> Grads:
    taps = _Taps(op)
    if op.count_include_pad is not None:
        share = e.div(g, float(taps.kernel[0] * taps.kernel[1]))
    else:
        counts = taps.counts().reshape(1, 1, *taps.out)
        share = e.div(g, e.constant(counts.astype(np.float64), g))
    used = [t for t in taps.taps() if taps.inside(t).any()]
    return [_sum(e, [taps.scatter(e, share, t) for t in used], op.input)]


@vjp(MaxPool2dOp)
def _max_pool2d(e: Emit, op: MaxPool2dOp, g: SSAValue) -> Grads:
    taps = _Taps(op)
    n, c = shape(op.input)[:2]
    top, left, bottom, right = taps.padding
    padded = e.pad(op.input, [0, 0, top, left], [0, 0, bottom, right])
    free: SSAValue | None = None  # where no earlier tap took the gradient
    parts = []
    for tap in taps.taps():
        inside = taps.inside(tap)
        if not inside.any():
            continue
        start = [tap[k] * taps.dilation[k] for k in range(2)]
        stop = [start[k] + taps.strides[k] * (taps.out[k] - 1) + 1 for k in range(2)]
        value = e.slice(padded, [0, 0, *start], [n, c, *stop], [1, 1, *taps.strides])
        hit = e.eq(value, op.result)
        if not inside.all():
            hit = e.logical_and(hit, e.constant(inside.reshape(1, 1, *taps.out), hit))
        if free is not None:
            hit = e.logical_and(hit, free)
            free = e.logical_and(free, e.logical_not(hit))
        else:
            free = e.logical_not(hit)
        parts.append(taps.scatter(e, e.select(hit, g, 0.0), tap))
    return [_sum(e, parts, op.input)]
