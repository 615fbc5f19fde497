"""``pack-vnni``: a constant 8-bit rhs of ``tg.matmul_integer`` packed for VNNI.

    %y = tg.matmul_integer %a, %w          ==>   %p = tg.constant (w packed: [K/4, N, 4])
      : (tensor<MxKxui8>, tensor<KxNxi8>)        %y = tg.matmul_integer %a, %p rhs_layout = "vnni"

AVX-512 VNNI's ``vpdpbusd`` multiplies, in each of 16 int32 lanes, four unsigned
bytes by four signed bytes and adds the four products to the lane. For a row of
A times 16 columns of B, the four bytes of A (``A[i, 4q .. 4q+3]``) are the same
in every lane (a broadcast), and lane ``n`` needs ``B[4q .. 4q+3, n]``: four
rows of one column, which in B's own layout are N bytes apart. Packed as
``packed[q, n, r] = B[4q + r, n]`` (``tg.matmul_integer``'s ``rhs_layout =
"vnni"``), the 16 columns' groups are 64 contiguous bytes, one load. The weight is
packed here, once, at compile time, as ONNX Runtime prepacks its int8 weights;
the kernel's default schedule (``qidao/compiler/targets/cpu/defaults/
matmul_integer.py``) then tensorizes its loops onto ``vpdpbusd``.

The unpacked constant goes when nothing else uses it (a view of it is left to
``dce``). It fires on a ``tg.matmul_integer`` whose lhs is ``ui8`` and whose rhs is an
``i8`` constant (or a view of one) of rank 2, with K a multiple of 4 (a ragged K
would read A past its rows). It does not fire on a signed lhs or an unsigned rhs
(``vpdpbusd``'s operands are unsigned x signed), on a rhs computed at run time,
on a batched rhs, or on one already packed. It runs on the CPU when the host has
AVX-512 VNNI (the CPU target's ``vnni`` option; ``qidao.compile(..., vnni=False)``
turns it off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntegerType, Signedness
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qidao.dialects.tg import MatmulIntegerOp
from qidao.dialects.tg.linalg_integer import VNNI, VNNI_GROUP, pack_vnni
from qidao.dialects.tg.types import element_of, shape_of
from qidao.passes.graph._packed_rhs import replace_with_packed_rhs
from qidao.passes.graph.fold_constants import constant_value

_UI8 = IntegerType(8, Signedness.UNSIGNED)
_I8 = IntegerType(8)


class PackVnniWeight(RewritePattern):
    """``matmul_integer(a, constant w) -> matmul_integer(a, constant pack(w))``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulIntegerOp, rewriter: PatternRewriter) -> None:
        if op.vnni or element_of(op.lhs.type) != _UI8:
            return
        if element_of(op.rhs.type) != _I8 or len(shape_of(op.rhs.type)) != 2:
            return
        if op.contraction() % VNNI_GROUP:
            return
        weight = constant_value(op.rhs)
        if weight is None:
            return
        replace_with_packed_rhs(
            op,
            rewriter,
            pack_vnni(weight),
            "vnni",
            lambda packed: MatmulIntegerOp(op.lhs, packed, VNNI),
        )


@dataclass(frozen=True)
class PackVnni(ModulePass):
    """Pack every constant ui8 x i8 ``tg.matmul_integer`` rhs for VNNI."""

    name = "pack-vnni"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(PackVnniWeight(), apply_recursively=False).rewrite_module(
            op
        )
