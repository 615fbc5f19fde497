"""Winograd F(4x4, 3x3): the two transforms around the batched matmul that replace a
3x3, stride-1 NHWC convolution (Lavin and Gray, "Fast Algorithms for Convolutional
Neural Networks", 2016).

An output tile of 4 x 4 pixels needs the 6 x 6 input tile under it. With the
constant matrices ``BT`` (6 x 6), ``G`` (6 x 3) and ``AT`` (4 x 6) below, one tile
of one channel pair is ``Y = AT [(G g G^T) * (BT d BT^T)] AT^T`` (``*`` elementwise),
so over all tiles ``t`` and channels the convolution is::

    V[t, ab, c] = (BT d_t,c BT^T)[a, b]      tg.winograd_input   [T, 36, C]
    U[ab, c, f] = (G g_c,f G^T)[a, b]        at compile time     [36, C, F]
    M = transpose(V, [1, 0, 2]) @ U          tg.matmul (batched)  [36, T, F]
    Y[n, 4 th + i, 4 tw + j, f] = (AT M_t,f AT^T)[i, j] + bias[f]
                                             tg.winograd_output  [N, 4TH, 4TW, F]

36 multiplications per 16 outputs and input channel instead of 144: four times
fewer, moved into one batched matmul that the matmul schedule makes fast. The
transforms are additions and small constant multiplications over channels.

``V`` is tile-major, ``[T, 36, C]``: the 36 values of one tile are one contiguous
store stream. Stored as ``[36, T, C]`` they were 36 streams ``T * C * 4`` bytes
apart, which for 56 x 56 pixels and 64 channels (50,176 bytes, 4 distinct offsets
modulo 4 KiB) fall into the same few L1 sets: the transform took 4.6 µs per tile
instead of 0.29 µs. The matmul reads ``V`` through a transposed view, rows
``36 * C`` apart.

Tiles are numbered ``t = (n * TH + th) * TW + tw``. The input is the zero-padded
NHWC activation, at least ``4 TH + 2`` by ``4 TW + 2``; the output covers
``4 TH`` by ``4 TW`` pixels, of which a ``tg.slice`` keeps the convolution's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, expect_length, i64_array, ints, tensor
from qidao.dialects.tg.types import fmt_shape, tensor_type

TILE = 4
"""Output pixels per tile side: F(4x4, 3x3)."""
INPUT_TILE = TILE + 2
"""Input pixels per tile side: the output tile plus the 3x3 window's border."""

BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
"""The input transform ``BT`` (6 x 6)."""
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    dtype=np.float64,
)
"""The filter transform ``G`` (6 x 3)."""
AT = np.array(
    [
        [1, 1, 1, 1, 1, 0],
        [0, 1, -1, 2, -2, 0],
        [0, 1, 1, 4, 4, 0],
        [0, 1, -1, 8, -8, 1],
    ],
    dtype=np.float64,
)
"""The output transform ``AT`` (4 x 6)."""


def transform_filter(hwio: np.ndarray) -> np.ndarray:
    """``U[a * 6 + b, c, f] = (G g G^T)[a, b]`` for a ``[3, 3, C, F]`` HWIO weight,
    computed in float64 and returned in the weight's dtype."""
    u: np.ndarray = np.einsum("ai,ijcf,bj->abcf", G, hwio.astype(np.float64), G)
    shape = (INPUT_TILE * INPUT_TILE, *hwio.shape[2:])
    result: np.ndarray = u.reshape(shape).astype(hwio.dtype)
    return result


def tiles_for(size: int) -> int:
    """Tiles along one side for ``size`` output pixels: ``ceil(size / 4)``."""
    return -(-size // TILE)


@irdl_op_definition
class WinogradInputOp(TgOp):
    """Winograd F(4x4, 3x3) input transform of a padded NHWC activation:
    ``[N, H, W, C] -> [N * TH * TW, 36, C]`` (module docstring), for ``tiles =
    [TH, TW]`` with ``H >= 4 TH + 2`` and ``W >= 4 TW + 2``.

    ```mlir
    %v = tg.winograd_input %x tiles = [2, 2] : tensor<1x10x10x8xf32> -> tensor<4x36x8xf32>
    ```
    """

    name = "tg.winograd_input"
    input = operand_def(TensorType)
    tiles = prop_def(DenseArrayBase.constr(I64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `tiles` `=` $tiles attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, tiles: Sequence[int]) -> None:
        t = self.infer(tensor(input), tuple(tiles))
        super().__init__(
            operands=[input], result_types=[t], properties={"tiles": i64_array(tiles)}
        )

    @staticmethod
    def infer(input: TensorType[Attribute], tiles: tuple[int, ...]) -> Attribute:
        op = "tg.winograd_input"
        expect_length(op, "tiles [TH, TW]", tiles, 2)
        shape = input.get_shape()
        if len(shape) != 4:
            raise VerifyException(
                f"{op} expects a rank-4 NHWC input, got {fmt_shape(shape)}"
            )
        n, h, w, c = shape
        th, tw = tiles
        if min(tiles) < 1 or h < TILE * th + 2 or w < TILE * tw + 2:
            raise VerifyException(
                f"{op}: tiles {fmt_shape(tiles)} need an input of at least "
                f"{TILE * th + 2}x{TILE * tw + 2} pixels (4 per tile + 2), got "
                f"{h}x{w}"
            )
        t = INPUT_TILE * INPUT_TILE
        return tensor_type((n * th * tw, t, c), input.get_element_type())

    def tile_counts(self) -> tuple[int, int]:
        th, tw = ints(self.tiles)
        return th, tw

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_result_type(self.infer(tensor(self.input), ints(self.tiles)))


@irdl_op_definition
class WinogradOutputOp(TgOp):
    """Winograd F(4x4, 3x3) output transform: ``[36, N * TH * TW, F]`` (the
    batched matmul's product) plus an optional bias ``[F]`` -> ``[N, 4 TH, 4 TW,
    F]`` NHWC, for ``tiles = [N, TH, TW]`` (module docstring).

    ```mlir
    %y = tg.winograd_output %m, %b tiles = [1, 2, 2] : (tensor<36x4x16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
    ```
    """

    name = "tg.winograd_output"
    input = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    tiles = prop_def(DenseArrayBase.constr(I64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input (`,` $bias^)? `tiles` `=` $tiles attr-dict `:` "
        "`(` type($input) (`,` type($bias)^)? `)` `->` type($result)"
    )

    def __init__(
        self, input: SSAValue, bias: SSAValue | None, tiles: Sequence[int]
    ) -> None:
        t = self.infer(
            tensor(input), None if bias is None else tensor(bias), tuple(tiles)
        )
        super().__init__(
            operands=[input, [] if bias is None else [bias]],
            result_types=[t],
            properties={"tiles": i64_array(tiles)},
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute],
        bias: TensorType[Attribute] | None,
        tiles: tuple[int, ...],
    ) -> Attribute:
        op = "tg.winograd_output"
        expect_length(op, "tiles [N, TH, TW]", tiles, 3)
        shape = input.get_shape()
        expected = INPUT_TILE * INPUT_TILE
        if len(shape) != 3 or shape[0] != expected:
            raise VerifyException(
                f"{op} expects a [36, tiles, F] input, got {fmt_shape(shape)}"
            )
        n, th, tw = tiles
        if min(tiles) < 1 or shape[1] != n * th * tw:
            raise VerifyException(
                f"{op}: tiles {fmt_shape(tiles)} make {n * th * tw} tiles, but the "
                f"input {fmt_shape(shape)} has {shape[1]}"
            )
        f = shape[2]
        if bias is not None and bias.get_shape() != (f,):
            raise VerifyException(
                f"{op}: bias must have shape [{f}] (one per output channel), got "
                f"{fmt_shape(bias.get_shape())}"
            )
        return tensor_type((n, TILE * th, TILE * tw, f), input.get_element_type())

    def tile_counts(self) -> tuple[int, int, int]:
        n, th, tw = ints(self.tiles)
        return n, th, tw

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_same_element_type()
        bias = None if self.bias is None else tensor(self.bias)
        self.expect_result_type(self.infer(tensor(self.input), bias, ints(self.tiles)))
