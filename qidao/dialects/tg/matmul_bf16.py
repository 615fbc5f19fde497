"""``tg.matmul_bf16``: the bfloat16 matrix product, accumulated in float32.

    %y = tg.matmul_bf16 %a, %b : (tensor<MxKxbf16>, tensor<KxNxbf16>) -> tensor<MxNxf32>

Each product of two bfloat16s is exact in float32 (8 + 8 significant bits), and
the sums are float32: the same numbers as a float32 ``matmul`` of the operands
widened (exact), in another order of additions. NumPy ``matmul`` shapes:
``[..., M, K] x [..., K, N] -> [..., M, N]``, the batch dimensions broadcast.

A model stored in bfloat16 computes each product this way (ONNX defines its
``MatMul`` on bfloat16 as the float32 product rounded once, which a ``tg.cast``
after it does); the ``bf16-matmul`` pass makes the op from ``tg.matmul`` on
widened bfloat16 operands, where the CPU has AVX512_BF16.

``rhs_layout = "vnni_panels"``: the rhs in column panels of ``w`` columns (``w``
a multiple of 16), each panel two rows at a time, the layout of ``vdpbf16ps``
(each float32 lane adds the products of two consecutive bfloat16s of A's row and
of the lane's column, ``qidao/dialects/tg/packed_matmul.py``):
``packed[n // w, k // 2, n % w, k % 2] = B[k, n]``, shape ``[N/w, K/2, w, 2]``. A
register tile ``w`` columns wide then reads its panel as one contiguous run, the
16 columns of a pair of rows one 64-byte load. Only a constant rhs of rank 2 with
K even and N a multiple of ``w`` is packed::

    %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<MxKxbf16>, tensor<(N/w)x(K/2)xwx2xbf16>) -> tensor<MxNxf32>
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import BFloat16Type, TensorType, f32
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
)
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.packed_matmul import WideningMatmulOp, packed_matmul_type
from qidao.dialects.tg.types import fmt_shape, shape_of

BF16_PANELS = "vnni_panels"
"""The ``rhs_layout`` of a rhs packed for ``vdpbf16ps`` (module docstring)."""
BF16_GROUP = 2
"""The rhs rows a ``vdpbf16ps`` lane multiplies at once (2 bfloat16s in 32 bits)."""
LANES = 16
"""The float32 lanes of a ``vdpbf16ps``: a panel's width is a multiple."""


def panel_width(n: int) -> int:
    """The panel width for ``N = n`` columns (a multiple of 16): 32, the register
    tile's two registers, where it divides N, else 16."""
    return 2 * LANES if n % (2 * LANES) == 0 else LANES


@irdl_op_definition
class MatmulBf16Op(WideningMatmulOp):
    """The bfloat16 matrix product in float32 (module docstring).

    ```mlir
    %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
    ```
    """

    KERNEL_KIND: ClassVar[str] = "matmul_bf16"
    LAYOUT: ClassVar[str] = BF16_PANELS
    STORAGE: ClassVar[bool] = True
    """It takes bf16, a storage-only type (its kernel widens each element)."""

    name = "tg.matmul_bf16"

    def panel(self) -> int:
        """``w``, the columns of a panel of the packed rhs."""
        return shape_of(self.rhs.type)[2]

    @staticmethod
    def infer(
        lhs: TensorType[Attribute], rhs: TensorType[Attribute], rhs_layout: str = ""
    ) -> Attribute:
        for what, t in (("lhs", lhs), ("rhs", rhs)):
            if t.get_element_type() != BFloat16Type():
                raise VerifyException(
                    f"tg.matmul_bf16 expects bf16 operands, but the {what} is {t}"
                )
        unpacked = None
        if rhs_layout:
            b = rhs.get_shape()
            if len(b) != 4 or b[3] != BF16_GROUP or b[2] % LANES or b[2] <= 0:
                raise VerifyException(
                    f'tg.matmul_bf16 with rhs_layout = "{BF16_PANELS}" expects a rhs '
                    f"of shape [N/w, K/2, w, 2] with w a multiple of {LANES}, got "
                    f"{fmt_shape(b)}"
                )
            unpacked = (b[1] * BF16_GROUP, b[0] * b[2])
        return packed_matmul_type("tg.matmul_bf16", lhs, rhs, unpacked, f32)


def pack_bf16(b: npt.NDArray[Any], w: int) -> npt.NDArray[Any]:
    """``[K, N] -> [N/w, K/2, w, 2]``: ``packed[n // w, k // 2, n % w, k % 2] =
    b[k, n]``."""
    k, n = b.shape
    if k % BF16_GROUP or n % w:
        raise ValueError(
            f"pack_bf16: K = {k} must be even and N = {n} a multiple of {w}"
        )
    pairs = b.reshape(k // BF16_GROUP, BF16_GROUP, n // w, w)
    return np.ascontiguousarray(pairs.transpose(2, 0, 3, 1))


def unpack_bf16(packed: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The inverse of :func:`pack_bf16`: ``[N/w, K/2, w, 2] -> [K, N]``."""
    p, q, w, g = packed.shape
    return packed.transpose(1, 3, 0, 2).reshape(q * g, p * w)


def matmul_bf16_reference(
    op: MatmulBf16Op, a: npt.NDArray[Any], b: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    """What the op computes, in NumPy: the operands widened to float32 (exact),
    their float32 ``matmul``."""
    if op.packed:
        b = unpack_bf16(b)
    product: npt.NDArray[Any] = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return product
