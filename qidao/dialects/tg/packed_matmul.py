"""What the widening matrix products (``tg.matmul_integer``, ``tg.matmul_bf16``)
share: their operands, layout property, verifier and cost (``WideningMatmulOp``),
and their result shapes, NumPy ``matmul``'s, from a rhs that may be packed.

A dot-product instruction multiplies, in each 32-bit lane, ``g`` consecutive
elements of a row of A by ``g`` consecutive rows of one column of B and adds the
``g`` products to the lane: ``g = 4`` bytes for AVX-512 VNNI's ``vpdpbusd`` (and
AMX's ``tdpbusd``), ``g = 2`` bfloat16s for AVX512_BF16's ``vdpbf16ps``. Intel
calls a B packed ``g`` rows at a time "VNNI" layout; each op names its own
(``[K/4, N, 4]``; ``[N/w, K/2, w, 2]``) and passes the ``[K, N]`` it stands for.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import operand_def, opt_prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, tensor
from qidao.dialects.tg.layout import broadcast_shapes
from qidao.dialects.tg.types import fmt_shape, numel, shape_of, tensor_type


class WideningMatmulOp(TgOp):
    """``lhs x rhs`` summed in a wider type than the operands' (an op of its own
    defines ``name``, ``LAYOUT`` and ``infer``), the rhs as it is or packed in
    ``LAYOUT`` (``rhs_layout``)."""

    LAYOUT: ClassVar[str]
    """The one ``rhs_layout`` the op takes."""
    FUSION: ClassVar[str] = "anchor"
    """An epilogue of any element type joins it: its kernel sums in a buffer of
    its own (``lowering/matmul_integer.py``)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    rhs_layout = opt_prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`rhs_layout` `=` $rhs_layout^)? attr-dict `:` "
        "`(` type($lhs) `,` type($rhs) `)` "
        "`->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, rhs_layout: str = "") -> None:
        t = self.infer(tensor(lhs), tensor(rhs), rhs_layout)
        props: dict[str, Attribute] = {}
        if rhs_layout:
            props["rhs_layout"] = StringAttr(rhs_layout)
        super().__init__(operands=[lhs, rhs], result_types=[t], properties=props)

    @staticmethod
    def infer(
        lhs: TensorType[Attribute], rhs: TensorType[Attribute], rhs_layout: str = ""
    ) -> Attribute:
        raise NotImplementedError

    @property
    def packed(self) -> bool:
        """Whether the rhs is packed (in ``LAYOUT``)."""
        return self.rhs_layout is not None

    def verify_(self) -> None:
        self.verify_tensors()
        layout = "" if self.rhs_layout is None else self.rhs_layout.data
        if self.rhs_layout is not None and layout != self.LAYOUT:
            raise VerifyException(
                f'{self.name}: rhs_layout must be "{self.LAYOUT}" or omitted (K x N, '
                f'the default), got "{layout}"'
            )
        self.expect_result_type(self.infer(tensor(self.lhs), tensor(self.rhs), layout))

    def contraction(self) -> int:
        """K, the length of each dot product."""
        return shape_of(self.lhs.type)[-1]

    def flops(self) -> int:
        """``2·M·N·K`` per batch: a multiply and an add per term."""
        return 2 * numel(self.result.type) * self.contraction()


def packed_matmul_type(
    name: str,
    lhs: TensorType[Attribute],
    rhs: TensorType[Attribute],
    unpacked: tuple[int, ...] | None,
    result: Attribute,
) -> TensorType[Attribute]:
    """The result type of op ``name``'s ``lhs x rhs`` (NumPy ``matmul`` shapes, the
    batch dimensions broadcast) with ``result`` elements; ``unpacked``: the
    ``[K, N]`` a packed rhs stands for (its layout checked by the op), None for a
    rhs as it is."""
    a = lhs.get_shape()
    b = rhs.get_shape() if unpacked is None else unpacked
    if len(a) < 2:
        raise VerifyException(f"{name} expects a lhs of rank >= 2, got {fmt_shape(a)}")
    if len(b) < 2:
        raise VerifyException(f"{name} expects a rhs of rank >= 2, got {fmt_shape(b)}")
    if a[-1] != b[-2]:
        raise VerifyException(
            f"{name}: contraction sizes differ: lhs {fmt_shape(a)} has K = {a[-1]} "
            f"but the rhs has K = {b[-2]}"
        )
    batch = broadcast_shapes(a[:-2], b[:-2])
    if batch is None:
        raise VerifyException(
            f"{name}: batch dimensions {fmt_shape(a[:-2])} and {fmt_shape(b[:-2])} "
            "are not broadcastable"
        )
    return tensor_type((*batch, a[-2], b[-1]), result)
