"""``tg.matmul_blockq``: a float32 matrix times a weight kept in GGUF's quantized
blocks, the blocks decoded where they are read.

    %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<MxKxf32>, tensor<Nx(K/32)x34xi8>) -> tensor<MxNxf32>

The weight is a linear layer's, ``[N, K]`` (out by in features, as GGUF and
PyTorch store it), each row of K elements in blocks of 32 as llama.cpp encodes
them (``qidao/dialects/tg/block_quant.py``): ``Q8_0`` is a float16 scale ``d``
and 32 int8 ``q`` (34 bytes), element ``d * q``; ``Q4_0`` a float16 ``d`` and 16
bytes of nibbles (18 bytes), element ``d * (q - 8)``; ``Q4_K`` super-blocks of 256 elements (144 bytes), element
``d * sc * q - dmin * m``. The operand is those bytes as they are in the file,
``[N, K/block, bytes]`` ``i8``: never a float copy. The
result is ``x @ W.T`` for the decoded ``W``, ``[..., M, N]`` (``x``'s leading
dimensions kept)::

    y[..., m, n] = sum_k x[..., m, k] * decode(w)[n, k]

computed in float32 in an order of its own (the kernel sums 32 lanes of partial
products across the blocks, then the lanes: ``lowering/matmul_blockq.py``), so
it matches a float32 ``matmul`` of the decoded weight to float32 rounding, not
bit for bit.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import StringAttr, TensorType, f32, i8
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, tensor
from qidao.dialects.tg.block_quant import ENCODINGS, dequantize
from qidao.dialects.tg.types import fmt_shape, numel, shape_of, tensor_type

KERNEL_ENCODINGS = ("Q8_0", "Q4_0", "Q4_K")
"""The encodings ``tg.matmul_blockq`` decodes: blocks of 32 with one float16
scale, and ``Q4_K``'s super-blocks of 256 (a float16 scale and min, eight 6-bit
sub-block scales and mins, 4-bit elements)."""


@irdl_op_definition
class MatmulBlockqOp(TgOp):
    """``x @ W.T`` for a weight ``W`` in GGUF blocks (module docstring).

    ```mlir
    %y = tg.matmul_blockq %x, %w encoding = "Q4_0" : (tensor<1x64xf32>, tensor<16x2x18xi8>) -> tensor<1x16xf32>
    ```
    """

    KERNEL_KIND: ClassVar[str] = "matmul_blockq"

    name = "tg.matmul_blockq"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    encoding = prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs `encoding` `=` $encoding attr-dict `:` "
        "`(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, encoding: str) -> None:
        t = self.infer(tensor(lhs), tensor(rhs), encoding)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[t],
            properties={"encoding": StringAttr(encoding)},
        )

    @property
    def block_bytes(self) -> int:
        """The bytes of one block of 32 elements."""
        return ENCODINGS[self.encoding.data].block_bytes

    @staticmethod
    def infer(
        lhs: TensorType[Attribute], rhs: TensorType[Attribute], encoding: str
    ) -> TensorType[Attribute]:
        """The result type, or a VerifyException naming what does not fit."""
        if encoding not in KERNEL_ENCODINGS:
            raise VerifyException(
                f"tg.matmul_blockq: encoding must be one of {', '.join(KERNEL_ENCODINGS)}, "
                f'got "{encoding}"'
            )
        enc = ENCODINGS[encoding]
        if lhs.get_element_type() != f32:
            raise VerifyException(
                f"tg.matmul_blockq expects an f32 lhs, got {lhs.get_element_type()}"
            )
        if rhs.get_element_type() != i8:
            raise VerifyException(
                "tg.matmul_blockq expects the weight's bytes as i8, got "
                f"{rhs.get_element_type()}"
            )
        a, w = lhs.get_shape(), rhs.get_shape()
        if len(a) < 2:
            raise VerifyException(
                f"tg.matmul_blockq expects a lhs of rank >= 2, got {fmt_shape(a)}"
            )
        if len(w) != 3 or w[2] != enc.block_bytes or w[0] <= 0 or w[1] <= 0:
            raise VerifyException(
                f"tg.matmul_blockq: a {encoding} weight is [N, K/{enc.block}, "
                f"{enc.block_bytes}] bytes, got {fmt_shape(w)}"
            )
        if a[-1] != w[1] * enc.block:
            raise VerifyException(
                f"tg.matmul_blockq: contraction sizes differ: lhs {fmt_shape(a)} has "
                f"K = {a[-1]} but the weight's rows have {w[1]} blocks of "
                f"{enc.block} = {w[1] * enc.block}"
            )
        return tensor_type((*a[:-1], w[0]), f32)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(
            self.infer(tensor(self.lhs), tensor(self.rhs), self.encoding.data)
        )

    def contraction(self) -> int:
        """K, the length of each dot product."""
        return shape_of(self.lhs.type)[-1]

    def flops(self) -> int:
        """``2·M·N·K``: a multiply and an add per term (the decoding not counted)."""
        return 2 * numel(self.result.type) * self.contraction()


def matmul_blockq_reference(
    op: MatmulBlockqOp, x: npt.NDArray[Any], w: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    """What the op computes, in NumPy: the weight decoded (``block_quant``), then
    ``x @ W.T`` in float64, rounded to float32."""
    enc = ENCODINGS[op.encoding.data]
    blocks = w.shape[1]
    rows = np.ascontiguousarray(w).view(np.uint8).reshape(w.shape[0], -1)
    decoded = dequantize(rows, enc, blocks * enc.block)
    product: npt.NDArray[Any] = np.matmul(
        x.astype(np.float64), decoded.astype(np.float64).T
    )
    return product.astype(np.float32)
