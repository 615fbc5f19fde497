"""``tg.matmul_integer``: the 8-bit integer matrix product, accumulated in int32.

    %y = tg.matmul_integer %a, %b : (tensor<MxKxui8>, tensor<KxNxi8>) -> tensor<MxNxi32>

Each operand is ``i8`` or ``ui8`` (each element widened by its own signedness),
every product and partial sum is an ``i32`` that wraps on overflow, as ONNX's
reference (NumPy's int32 ``matmul``) and ONNX Runtime's int32 accumulators do
(no 8-bit product sum of K <= 33025 terms overflows). Zero points are not the
op's: a frontend subtracts them around it (``qidao/frontend/onnx/quantize.py``).
NumPy ``matmul`` shapes: ``[..., M, K] x [..., K, N] -> [..., M, N]``, the batch
dimensions broadcast.

``rhs_layout = "vnni"``: the rhs is packed four rows at a time, the layout of
AVX-512 VNNI's ``vpdpbusd`` (each 32-bit lane multiplies four unsigned bytes of
the lhs by four signed bytes of the rhs and adds the four products to an int32),
``packed[k // 4, n, k % 4] = B[k, n]``: shape ``[K/4, N, 4]``, so that the 16
columns ``n .. n+15`` of rows ``4q .. 4q+3`` are 64 contiguous bytes, one
register. Only a constant ``ui8 x i8`` rhs of rank 2 is packed (the
``pack-vnni`` pass), K a multiple of 4::

    %y = tg.matmul_integer %a, %p rhs_layout = "vnni" : (tensor<MxKxui8>, tensor<(K/4)xNx4xi8>) -> tensor<MxNxi32>
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import IntegerType, Signedness, TensorType, i32
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
)
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.packed_matmul import WideningMatmulOp, packed_matmul_type
from qidao.dialects.tg.types import fmt_shape

VNNI = "vnni"
"""The ``rhs_layout`` of a rhs packed for ``vpdpbusd`` (module docstring)."""
VNNI_GROUP = 4
"""The rhs rows a VNNI lane multiplies at once (4 bytes in a 32-bit lane)."""

_UI8 = IntegerType(8, Signedness.UNSIGNED)
_I8 = IntegerType(8)
_EIGHT_BIT = (_I8, _UI8)


@irdl_op_definition
class MatmulIntegerOp(WideningMatmulOp):
    """The 8-bit integer matrix product in int32 (module docstring).

    ```mlir
    %y = tg.matmul_integer %a, %b : (tensor<4x8xui8>, tensor<8x16xi8>) -> tensor<4x16xi32>
    ```
    """

    KERNEL_KIND: ClassVar[str] = "matmul_integer"
    LAYOUT: ClassVar[str] = VNNI

    name = "tg.matmul_integer"

    @property
    def vnni(self) -> bool:
        """Whether the rhs is packed for VNNI (``[K/4, N, 4]``)."""
        return self.packed

    @staticmethod
    def infer(
        lhs: TensorType[Attribute], rhs: TensorType[Attribute], rhs_layout: str = ""
    ) -> Attribute:
        for what, t in (("lhs", lhs), ("rhs", rhs)):
            if t.get_element_type() not in _EIGHT_BIT:
                raise VerifyException(
                    f"tg.matmul_integer expects i8 or ui8 operands, but the {what} "
                    f"is {t}"
                )
        if rhs_layout and (lhs.get_element_type(), rhs.get_element_type()) != (
            _UI8,
            _I8,
        ):
            raise VerifyException(
                'tg.matmul_integer with rhs_layout = "vnni" multiplies a ui8 lhs by an '
                f"i8 rhs (vpdpbusd's operands), got {lhs} and {rhs}"
            )
        unpacked = None
        if rhs_layout:
            b = rhs.get_shape()
            if len(b) != 3 or b[2] != VNNI_GROUP:
                raise VerifyException(
                    'tg.matmul_integer with rhs_layout = "vnni" expects a rhs of '
                    f"shape [K/4, N, 4], got {fmt_shape(b)}"
                )
            unpacked = (b[0] * VNNI_GROUP, b[1])
        return packed_matmul_type("tg.matmul_integer", lhs, rhs, unpacked, i32)


def pack_vnni(b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``[K, N] -> [K/4, N, 4]``: ``packed[k // 4, n, k % 4] = b[k, n]``."""
    k, n = b.shape
    if k % VNNI_GROUP:
        raise ValueError(f"pack_vnni: K = {k} is not a multiple of {VNNI_GROUP}")
    return np.ascontiguousarray(
        b.reshape(k // VNNI_GROUP, VNNI_GROUP, n).transpose(0, 2, 1)
    )


def unpack_vnni(packed: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The inverse of :func:`pack_vnni`: ``[K/4, N, 4] -> [K, N]``."""
    q, n, g = packed.shape
    return packed.transpose(0, 2, 1).reshape(q * g, n)


def matmul_integer_reference(
    op: MatmulIntegerOp, a: npt.NDArray[Any], b: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    """What the op computes, in NumPy: int64 products and sums, wrapped to int32."""
    if op.vnni:
        b = unpack_vnni(b)
    wide: npt.NDArray[np.int64] = np.matmul(a.astype(np.int64), b.astype(np.int64))
    return wide.astype(np.int32)  # two's complement wrap, as the kernel's i32 sums
