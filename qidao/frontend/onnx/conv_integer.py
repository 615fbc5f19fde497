"""The int8 kernel of ``ConvInteger`` and ``QLinearConv``: an im2col of the uint8
input, channels last, times the int8 weight on ``tg.matmul_integer``.

    x (uint8, NCHW) --transpose--> NHWC view --pad with zx--> (for each tap kh, kw:
    a strided slice [N, OH, OW, C]) --concat--> [N, OH, OW, KH*KW*C]
    --reshape--> [N*OH*OW, KH*KW*C]  @  W [KH*KW*C, F] (int8, constant)  -> int32

The zero point of the input pads the border (so a padded tap contributes
``zx - zx = 0``) and is subtracted as one constant per output channel,
``-zx * colsum(W)``, folded with the int32 bias: ``(x - zx) w + b = x w + (b - zx
colsum(W))``, exact in int32. A 1 x 1 convolution with stride 1 needs no copy of
its input when that is channels last already (the NHWC rows are the matrix;
a channels-first input is copied once). Input channels are padded to a multiple
of 4 with the zero point (a 3-channel image), their weights 0, so that K is a
multiple of 4 and the weight packs for VNNI. The product stays channels last: the
caller requantizes it there and gives the uint8 result back as an NCHW view
(``transpose``), so that the next convolution's NHWC view of it is the tensor
itself (``simplify`` cancels the two transposes).

Taken when the input is uint8, the weight an int8 constant of a 2-D, ungrouped
convolution with a zero point of 0, the input's zero point a constant: the
ONNX Runtime quantizer's U8S8 convolutions. Any other integer convolution keeps
the exact float64 kernel (``quantize.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qidao.dialects.tg.linalg_integer import VNNI_GROUP
from qidao.dialects.tg.types import is_row_major
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]


def nhwc_int8_conv(
    g: Graph,
    x: Value,
    weight: Array,
    x_zero_point: int,
    bias: Array | None,
    strides: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    dilations: Sequence[int],
) -> Value:
    """The int32 convolution ``conv(x - x_zero_point, weight) + bias`` of a uint8
    NCHW ``x`` and an int8 ``[F, C, KH, KW]`` weight, channels last: ``[N, OH,
    OW, F]`` (module docstring)."""
    n, c, h, w = x.shape
    f, _, kh, kw = weight.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh = (h + begin[0] + end[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + begin[1] + end[1] - dw * (kw - 1) - 1) // sw + 1
    xt = g.transpose(x, (0, 2, 3, 1))
    grow = -c % VNNI_GROUP  # channels padded with zx, weighed 0: K a multiple of 4
    if any(begin) or any(end) or grow:
        xt = g.pad(
            xt,
            (0, begin[0], begin[1], 0),
            (0, end[0], end[1], grow),
            float(x_zero_point),
        )
        if grow:
            weight = np.pad(weight, ((0, 0), (0, grow), (0, 0), (0, 0)))
            c += grow
    if (kh, kw, sh, sw) == (1, 1, 1, 1):
        columns = g.reshape(xt, (n * oh * ow, c))
    else:
        taps = [
            g.slice(
                xt,
                (0, i * dh, j * dw, 0),
                (n, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1, c),
                (1, sh, sw, 1),
            )
            for i in range(kh)
            for j in range(kw)
        ]
        patches = g.concat(taps, axis=3) if len(taps) > 1 else taps[0]
        columns = g.reshape(patches, (n * oh * ow, kh * kw * c))
    if not is_row_major(columns.ssa.type):  # a channels-first tensor read NHWC
        columns = g.contiguous(columns)
    matrix = np.ascontiguousarray(weight.transpose(2, 3, 1, 0).reshape(kh * kw * c, f))
    acc = g.reshape(g.matmul_integer(columns, g.constant(matrix)), (n, oh, ow, f))
    shift = -np.int64(x_zero_point) * matrix.astype(np.int64).sum(axis=0)
    if bias is not None:
        shift = shift + bias.astype(np.int64)
    if shift.any():  # after the reshape: it fuses with the caller's requantization
        acc = acc + g.constant(shift.astype(np.int32))
    return acc
