"""Winograd F(4x4, 3x3) and F(2x2, 3x3): the two transforms around the batched
matmul that replace a 3x3, stride-1 NHWC convolution (Lavin and Gray, "Fast
Algorithms for Convolutional Neural Networks", 2016).

An output tile of m x m pixels (``size``, 4 or 2) needs the (m + 2) x (m + 2)
input tile under it. With the constant matrices ``BT`` ((m+2) x (m+2)), ``G``
((m+2) x 3) and ``AT`` (m x (m+2)) of that size (``TRANSFORMS``), one tile of one
channel pair is ``Y = AT [(G g G^T) * (BT d BT^T)] AT^T`` (``*`` elementwise), so
over all tiles ``t`` and channels the convolution is (P = (m + 2)^2 points, 36 or
16)::

    V[t, ab, c] = (BT d_t,c BT^T)[a, b]      tg.winograd_input   [T, P, C]
    U[ab, c, f] = (G g_c,f G^T)[a, b]        at compile time     [P, C, F]
    M = transpose(V, [1, 0, 2]) @ U          tg.matmul (batched)  [P, T, F]
    Y[n, m th + i, m tw + j, f] = (AT M_t,f AT^T)[i, j] + bias[f]
                                             tg.winograd_output  [N, m TH, m TW, F]

F(4x4): 36 multiplications per 16 outputs and input channel instead of 144, four
times fewer; F(2x2): 16 per 4, 2.25 times fewer, but a transformed filter of 16
points instead of 36 (``U`` is what the matmul streams: 2.25 times less of it)
and four times the tiles (the matmul's rows). The transforms are additions and
small constant multiplications over channels.

``V`` is tile-major, ``[T, P, C]``: the P values of one tile are one contiguous
store stream. Stored as ``[P, T, C]`` they were P streams ``T * C * 4`` bytes
apart, which for 56 x 56 pixels and 64 channels (50,176 bytes, 4 distinct offsets
modulo 4 KiB) fall into the same few L1 sets: the transform took 4.6 µs per tile
instead of 0.29 µs. The matmul reads ``V`` through a transposed view, rows
``P * C`` apart.

Tiles are numbered ``t = (n * TH + th) * TW + tw``. The input is the zero-padded
NHWC activation, at least ``m TH + 2`` by ``m TW + 2``; the output covers
``m TH`` by ``m TW`` pixels, of which a ``tg.slice`` keeps the convolution's. Both
ops take ``size = 2`` for F(2x2, 3x3); without it they are F(4x4, 3x3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, expect_length, i64_array, ints, tensor
from qidao.dialects.tg.types import fmt_shape, tensor_type

TILE = 4
"""Output pixels per tile side by default: F(4x4, 3x3)."""
INPUT_TILE = TILE + 2
"""Input pixels per tile side of F(4x4, 3x3): the output tile plus the 3x3 window's
border."""


@dataclass(frozen=True)
class Transform:
    """The matrices of Winograd F(m x m, 3x3) for an output tile of ``size`` = m."""

    size: int
    bt: np.ndarray
    g: np.ndarray
    at: np.ndarray

    @property
    def input_tile(self) -> int:
        """Input pixels per tile side: m + 2."""
        return self.size + 2

    @property
    def points(self) -> int:
        """Values per transformed tile: (m + 2)^2 (36 or 16)."""
        return self.input_tile**2


F4 = Transform(
    4,
    bt=np.array(
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        dtype=np.float64,
    ),
    g=np.array(
        [
            [1 / 4, 0, 0],
            [-1 / 6, -1 / 6, -1 / 6],
            [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6],
            [1 / 24, -1 / 12, 1 / 6],
            [0, 0, 1],
        ],
        dtype=np.float64,
    ),
    at=np.array(
        [
            [1, 1, 1, 1, 1, 0],
            [0, 1, -1, 2, -2, 0],
            [0, 1, 1, 4, 4, 0],
            [0, 1, -1, 8, -8, 1],
        ],
        dtype=np.float64,
    ),
)
"""F(4x4, 3x3): ``BT`` 6 x 6, ``G`` 6 x 3, ``AT`` 4 x 6."""
F2 = Transform(
    2,
    bt=np.array(
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64
    ),
    g=np.array(
        [[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]],
        dtype=np.float64,
    ),
    at=np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64),
)
"""F(2x2, 3x3): ``BT`` 4 x 4, ``G`` 4 x 3, ``AT`` 2 x 4."""
TRANSFORMS = {4: F4, 2: F2}
"""Each supported output tile size's matrices."""
BT, G, AT = F4.bt, F4.g, F4.at


def transform(size: int) -> Transform:
    """The matrices for output tiles of ``size``, or a ValueError naming the sizes."""
    if size not in TRANSFORMS:
        raise ValueError(
            f"winograd: no F({size}x{size}, 3x3); the tile sizes are "
            f"{sorted(TRANSFORMS)}"
        )
    return TRANSFORMS[size]


def transform_filter(hwio: np.ndarray, size: int = TILE) -> np.ndarray:
    """``U[a * (m+2) + b, c, f] = (G g G^T)[a, b]`` for a ``[3, 3, C, F]`` HWIO
    weight and output tiles of ``size`` = m, computed in float64 and returned in
    the weight's dtype."""
    tr = transform(size)
    u: np.ndarray = np.einsum("ai,ijcf,bj->abcf", tr.g, hwio.astype(np.float64), tr.g)
    shape = (tr.points, *hwio.shape[2:])
    result: np.ndarray = u.reshape(shape).astype(hwio.dtype)
    return result


def tiles_for(size: int, tile: int = TILE) -> int:
    """Tiles of ``tile`` pixels along one side for ``size`` output pixels:
    ``ceil(size / tile)``."""
    return -(-size // tile)


def _size_of(op: str, attr: IntegerAttr[IntegerType] | None) -> int:
    """An op's ``size`` property (absent: 4), checked against ``TRANSFORMS``."""
    size = TILE if attr is None else attr.value.data
    if size not in TRANSFORMS or (attr is not None and size == TILE):
        raise VerifyException(
            f"{op}: size must be 2 (F(2x2, 3x3)) or absent (F(4x4, 3x3)), got {size}"
        )
    return size


def _size_props(size: int) -> dict[str, Attribute]:
    """The ``size`` property for output tiles of ``size`` (none for the default)."""
    transform(size)
    return {} if size == TILE else {"size": IntegerAttr(size, 64)}


@irdl_op_definition
class WinogradInputOp(TgOp):
    """Winograd input transform of a padded NHWC activation: ``[N, H, W, C] ->
    [N * TH * TW, P, C]`` (module docstring), for ``tiles = [TH, TW]`` of ``size``
    = m output pixels a side (4, or 2 with ``size = 2``; P = (m + 2)^2) with ``H >=
    m TH + 2`` and ``W >= m TW + 2``.

    ```mlir
    %v = tg.winograd_input %x tiles = [2, 2] : tensor<1x10x10x8xf32> -> tensor<4x36x8xf32>
    %v2 = tg.winograd_input %x tiles = [4, 4] size = 2 : tensor<1x10x10x8xf32> -> tensor<16x16x8xf32>
    ```
    """

    name = "tg.winograd_input"
    input = operand_def(TensorType)
    tiles = prop_def(DenseArrayBase.constr(I64))
    size = opt_prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `tiles` `=` $tiles (`size` `=` $size^)? attr-dict `:` type($input) "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue, tiles: Sequence[int], size: int = TILE) -> None:
        t = self.infer(tensor(input), tuple(tiles), size)
        super().__init__(
            operands=[input],
            result_types=[t],
            properties={"tiles": i64_array(tiles), **_size_props(size)},
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute], tiles: tuple[int, ...], size: int = TILE
    ) -> Attribute:
        op = "tg.winograd_input"
        expect_length(op, "tiles [TH, TW]", tiles, 2)
        shape = input.get_shape()
        if len(shape) != 4:
            raise VerifyException(
                f"{op} expects a rank-4 NHWC input, got {fmt_shape(shape)}"
            )
        n, h, w, c = shape
        th, tw = tiles
        if min(tiles) < 1 or h < size * th + 2 or w < size * tw + 2:
            raise VerifyException(
                f"{op}: tiles {fmt_shape(tiles)} need an input of at least "
                f"{size * th + 2}x{size * tw + 2} pixels ({size} per tile + 2), got "
                f"{h}x{w}"
            )
        return tensor_type(
            (n * th * tw, transform(size).points, c), input.get_element_type()
        )

    def tile_counts(self) -> tuple[int, int]:
        th, tw = ints(self.tiles)
        return th, tw

    def tile_size(self) -> int:
        """Output pixels per tile side: 4, or 2 with ``size = 2``."""
        return _size_of(self.name, self.size)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        size = self.tile_size()
        self.expect_result_type(self.infer(tensor(self.input), ints(self.tiles), size))


@irdl_op_definition
class WinogradOutputOp(TgOp):
    """Winograd output transform: ``[P, N * TH * TW, F]`` (the batched matmul's
    product) plus an optional bias ``[F]`` -> ``[N, m TH, m TW, F]`` NHWC, for
    ``tiles = [N, TH, TW]`` of ``size`` = m output pixels a side (4, or 2 with
    ``size = 2``; P = (m + 2)^2; module docstring).

    ```mlir
    %y = tg.winograd_output %m, %b tiles = [1, 2, 2] : (tensor<36x4x16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
    %y2 = tg.winograd_output %m2 tiles = [1, 4, 4] size = 2 : (tensor<16x16x16xf32>) -> tensor<1x8x8x16xf32>
    ```
    """

    name = "tg.winograd_output"
    input = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    tiles = prop_def(DenseArrayBase.constr(I64))
    size = opt_prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input (`,` $bias^)? `tiles` `=` $tiles (`size` `=` $size^)? attr-dict `:` "
        "`(` type($input) (`,` type($bias)^)? `)` `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        bias: SSAValue | None,
        tiles: Sequence[int],
        size: int = TILE,
    ) -> None:
        t = self.infer(
            tensor(input), None if bias is None else tensor(bias), tuple(tiles), size
        )
        super().__init__(
            operands=[input, [] if bias is None else [bias]],
            result_types=[t],
            properties={"tiles": i64_array(tiles), **_size_props(size)},
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute],
        bias: TensorType[Attribute] | None,
        tiles: tuple[int, ...],
        size: int = TILE,
    ) -> Attribute:
        op = "tg.winograd_output"
        expect_length(op, "tiles [N, TH, TW]", tiles, 3)
        shape = input.get_shape()
        expected = transform(size).points
        if len(shape) != 3 or shape[0] != expected:
            raise VerifyException(
                f"{op} expects a [{expected}, tiles, F] input for F({size}x{size}, "
                f"3x3), got {fmt_shape(shape)}"
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
        return tensor_type((n, size * th, size * tw, f), input.get_element_type())

    def tile_counts(self) -> tuple[int, int, int]:
        n, th, tw = ints(self.tiles)
        return n, th, tw

    def tile_size(self) -> int:
        """Output pixels per tile side: 4, or 2 with ``size = 2``."""
        return _size_of(self.name, self.size)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_same_element_type()
        bias = None if self.bias is None else tensor(self.bias)
        size = self.tile_size()
        self.expect_result_type(
            self.infer(tensor(self.input), bias, ints(self.tiles), size)
        )
