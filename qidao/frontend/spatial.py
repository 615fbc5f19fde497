"""Convolutions and pools of ``[N, C, *spatial]`` tensors with 1, 2 or 3 spatial axes,
built from the 2-D tg ops (``tg.conv2d``, ``tg.max_pool2d``, ``tg.avg_pool2d``), so
that every rank gets the one 2-D lowering, its algorithms (direct, depthwise,
im2col, Winograd), the ``layout`` pass, epilogue fusion, the default schedules and
the vjp rules. Both frontends build their N-D convolutions and pools here.

**1-D** ``[N, C, L]`` is the 2-D op on the view ``[N, C, 1, L]`` (the weight
``[F, C / groups, K]`` as ``[F, C / groups, 1, K]``): a unit height, free.

**3-D convolution** ``[N, C, D, H, W]`` with weight ``[F, C / groups, KD, KH, KW]``
gathers the depth windows into channels, then makes one 2-D convolution over
(H, W) whose batch is ``N * OD``::

    planes[n * OD + od, c * KD + kd, h, w] = x_padded[n, c, od * sd + kd * dd, h, w]
    y = conv2d(planes, weight as [F, C / groups * KD, KH, KW])   # [N * OD, F, OH, OW]
    result = y as [N, OD, F, OH, OW], transposed to [N, F, OD, OH, OW]

Output ``(od, oh, ow)`` sums ``x_padded[od * sd + kd * dd, oh * sh + kh * dh, ow *
sw + kw * dw] * W[kd, kh, kw]`` over ``c, kd, kh, kw``; the 2-D convolution sums over
its channels ``(c, kd)`` and ``(kh, kw)``: the same terms. Channel ``c * KD + kd``
keeps each group's channels together (``c`` outer), so ``groups`` (depthwise
included) carries over unchanged. The gather is ``KD`` strided slices of the
depth-padded input, stacked by one ``tg.concat``: a copy ``KD / sd`` times the input
(the 2-D pads stay the convolution's own, free). A direct 3-D nest would read the
input in place but get none of the 2-D algorithms, layouts or schedules, and would
be a second lowering to keep in step with the first.

**3-D pools** are separable (a max of maxes; a mean of means whose divisors
multiply, both for real-element counts and for whole windows): a 2-D pool over
(H, W) of the view ``[N, C * D, H, W]``, then a 2-D pool over D of the view ``[N, C,
D, OH * OW]`` with a ``[kd, 1]`` window. This reads ``kd + kh * kw`` elements per
output instead of ``kd * kh * kw``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy.typing as npt

from qidao.dialects.tg.linalg import conv_output_size
from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError

Window = tuple[int, int, int, int, int]
"""One spatial axis of a pool window: ``(kernel, stride, dilation, pad_begin,
pad_end)``."""

UNIT: Window = (1, 1, 1, 0, 0)
"""An axis the window does not slide along."""

SPATIAL_RANKS = (1, 2, 3)
"""The numbers of spatial axes the convolutions and pools take."""


def _check_conv(
    x: Value,
    weight: Value,
    bias: Value | None,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> None:
    """Raise ``GraphError`` naming the N-D shapes when the convolution is invalid
    (before the 2-D op would name its reshaped operands)."""
    rank = x.rank - 2
    if rank not in SPATIAL_RANKS:
        raise GraphError(
            "conv expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions, "
            f"got input shape {list(x.shape)}"
        )
    if weight.rank != x.rank:
        raise GraphError(
            f"conv: the weight shape {list(weight.shape)} must have rank {x.rank} "
            f"([F, C / groups, *kernel]) for the input shape {list(x.shape)}"
        )
    for name, values, count in (
        ("strides", strides, rank),
        ("padding", padding, 2 * rank),
        ("dilation", dilation, rank),
    ):
        if len(values) != count:
            raise GraphError(
                f"conv: {name} must have {count} values for a {rank}-D convolution, "
                f"got {list(values)}"
            )
    if min(strides) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise GraphError(
            f"conv: strides {list(strides)} and dilation {list(dilation)} must be "
            f">= 1 and padding {list(padding)} >= 0"
        )
    channels, filters, per_group = x.shape[1], weight.shape[0], weight.shape[1]
    if groups < 1 or channels % groups or filters % groups:
        raise GraphError(
            f"conv: groups = {groups} must divide the input channels ({channels}) "
            f"and the output channels ({filters})"
        )
    if per_group != channels // groups:
        raise GraphError(
            f"conv: the weight shape {list(weight.shape)} has {per_group} input "
            f"channels per group, expected C / groups = {channels} / {groups}"
        )
    if bias is not None and bias.shape != (filters,):
        raise GraphError(
            f"conv: the bias must have shape [{filters}] (one per output channel), "
            f"got {list(bias.shape)}"
        )
    for axis, (size, k, s, d) in enumerate(
        zip(x.shape[2:], weight.shape[2:], strides, dilation, strict=True)
    ):
        pads = padding[axis] + padding[rank + axis]
        if conv_output_size(size, k, s, pads, d) < 1:
            raise GraphError(
                f"conv: the kernel {list(weight.shape[2:])} (dilation "
                f"{list(dilation)}) does not fit the input shape {list(x.shape)} "
                f"with padding {list(padding)}"
            )


def conv_nd(
    g: Graph,
    x: Value,
    weight: Value | npt.NDArray[Any],
    bias: Value | None = None,
    *,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
) -> Value:
    """Cross-correlation of ``[N, C, *spatial]`` (1 to 3 spatial axes) with the
    weight ``[F, C / groups, *kernel]`` and an optional bias ``[F]``; ``padding``
    is ONNX's ``[begin per axis..., end per axis...]``. Built from one
    ``tg.conv2d`` (the module docstring); a NumPy weight keeps its dtype. A float16
    convolution computes in float32 and rounds its result once."""
    if isinstance(weight, Value):
        w = weight
    else:
        w = g.constant(weight, dtype=str(weight.dtype))
    _check_conv(x, w, bias, strides, padding, dilation, groups)
    if x.dtype == "float16":  # in float32 (as tg.conv2d's f16), rounded once
        y = conv_nd(
            g,
            g.cast(x, "float32"),
            g.cast(w, "float32"),
            None if bias is None else g.cast(bias, "float32"),
            strides=strides,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )
        return g.cast(y, "float16")
    rank = x.rank - 2
    begin, end = tuple(padding[:rank]), tuple(padding[rank:])
    if rank == 2:
        return g.conv2d(
            x,
            w,
            bias,
            strides=tuple(strides),
            padding=(*begin, *end),
            dilation=tuple(dilation),
            groups=groups,
        )
    if rank == 1:
        n, c, length = x.shape
        f, per_group, k = w.shape
        y = g.conv2d(
            g.reshape(x, [n, c, 1, length]),
            g.reshape(w, [f, per_group, 1, k]),
            bias,
            strides=(1, strides[0]),
            padding=(0, begin[0], 0, end[0]),
            dilation=(1, dilation[0]),
            groups=groups,
        )
        return g.reshape(y, [n, f, y.shape[3]])
    return _conv3d(g, x, w, bias, strides, begin, end, dilation, groups)


def _conv3d(
    g: Graph,
    x: Value,
    w: Value,
    bias: Value | None,
    strides: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Value:
    """The 3-D convolution as a 2-D one over gathered depth windows (the module
    docstring)."""
    n, c, depth, h, wd = x.shape
    f, per_group, kd, kh, kw = w.shape
    sd, dd = strides[0], dilation[0]
    if begin[0] or end[0]:
        x = g.pad(x, [0, 0, begin[0], 0, 0], [0, 0, end[0], 0, 0])
    od = conv_output_size(depth + begin[0] + end[0], kd, sd, 0, dd)
    taps = []
    for tap in range(kd):
        start = tap * dd
        plane = g.slice(x, [0, 0, start], [n, c, start + (od - 1) * sd + 1], [1, 1, sd])
        taps.append(
            g.reshape(g.transpose(plane, [0, 2, 1, 3, 4]), [n, od, c, 1, h, wd])
        )
    stacked = taps[0] if kd == 1 else g.concat(taps, axis=3)  # [N, OD, C, KD, H, W]
    y = g.conv2d(
        g.reshape(stacked, [n * od, c * kd, h, wd]),
        g.reshape(w, [f, per_group * kd, kh, kw]),
        bias,
        strides=(strides[1], strides[2]),
        padding=(begin[1], begin[2], end[1], end[2]),
        dilation=(dilation[1], dilation[2]),
        groups=groups,
    )
    oh, ow = y.shape[2:]
    return g.transpose(g.reshape(y, [n, od, f, oh, ow]), [0, 2, 1, 3, 4])


# ---- pools --------------------------------------------------------------------------


def _pool2d(
    g: Graph, x: Value, kind: str, rows: Window, cols: Window, include_pad: bool
) -> Value:
    """One ``tg.max_pool2d`` / ``tg.avg_pool2d`` over the last two axes of the
    rank-4 ``x``, or ``x`` itself when neither axis has a window."""
    if rows == UNIT and cols == UNIT:
        return x
    kernel = (rows[0], cols[0])
    strides = (rows[1], cols[1])
    dilation = (rows[2], cols[2])
    padding = (rows[3], cols[3], rows[4], cols[4])
    if kind == "max":
        return g.max_pool2d(x, kernel, strides, padding, dilation)
    return g.avg_pool2d(x, kernel, strides, padding, include_pad, dilation)


def pool_nd(
    g: Graph, x: Value, kind: str, axes: Sequence[Window], include_pad: bool
) -> Value:
    """A max (``kind="max"``) or mean (``"avg"``) pool of ``[N, C, *spatial]`` with 1
    to 3 spatial axes, one window per axis; ``include_pad`` counts the padding in a
    mean's divisor. Built from 2-D pools over views (the module docstring)."""
    if kind not in ("max", "avg"):
        raise GraphError(f'pool: kind must be "max" or "avg", got "{kind}"')
    if x.rank - 2 not in SPATIAL_RANKS or len(axes) != x.rank - 2:
        raise GraphError(
            "pool expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions and "
            f"one window per spatial axis, got input shape {list(x.shape)} and "
            f"{len(axes)} window(s)"
        )
    n, c, *sizes = x.shape
    if len(axes) == 1:
        y = _pool2d(
            g, g.reshape(x, [n, c, 1, sizes[0]]), kind, UNIT, axes[0], include_pad
        )
        return g.reshape(y, [n, c, y.shape[3]])
    if len(axes) == 2:
        return _pool2d(g, x, kind, axes[0], axes[1], include_pad)
    d, h, w = sizes
    planes = g.reshape(x, [n, c * d, h, w])
    planes = _pool2d(g, planes, kind, axes[1], axes[2], include_pad)
    oh, ow = planes.shape[2:]
    depth = g.reshape(planes, [n, c, d, oh * ow])
    depth = _pool2d(g, depth, kind, axes[0], UNIT, include_pad)
    return g.reshape(depth, [n, c, depth.shape[2], oh, ow])
