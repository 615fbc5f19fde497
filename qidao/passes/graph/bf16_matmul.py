"""``bf16-matmul``: a float32 ``tg.matmul`` of bfloat16 values made a
``tg.matmul_bf16``, its constant rhs packed for AVX512_BF16's ``vdpbf16ps``.

    %a32 = tg.cast %a : bf16 -> f32     ==>   %p = tg.constant (w as bf16 in panels: [N/w, K/2, w, 2])
    %w = tg.constant (f32, bf16 values)       %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels"
    %y = tg.matmul %a32, %w

A model stored in bfloat16 reaches tg as float32 compute between casts (each ONNX
op's bfloat16 inputs widened, its outputs rounded back: ``qidao/frontend/onnx/
importer.py``), its bfloat16 weights folded to float32 constants. Each product of
two bfloat16s is exact in float32, so a float32 matmul of widened bfloat16s is
``tg.matmul_bf16``'s product with float32 sums: the same numbers in another order
of additions. ``vdpbf16ps`` multiplies, in each of 16 float32 lanes, two
bfloat16s of A's row by two of the lane's column and adds both products to the
lane. B is packed in column panels as wide as the register tile (32 columns,
16 where 32 does not divide N), each two rows at a time (``packed[p, q, c, r] =
B[2q + r, w p + c]``): the 16 columns of a pair of rows are one 64-byte load, a
panel one contiguous run the tile reads down K (as ``pack-panels`` stores a
float32 weight), and the weight takes half the bytes of its float32 copy. The kernel's default schedule
(``qidao/compiler/targets/cpu/defaults/matmul_integer.py``) tensorizes its loops
onto ``vdpbf16ps``. ``vdpbf16ps`` treats a bfloat16 input below 2**-126 (a
denormal) as zero and flushes denormal sums to zero, as PyTorch's oneDNN kernels
on the same instruction do.

It fires on a ``tg.matmul`` whose lhs is a ``tg.cast`` from bf16 and whose rhs is
a float32 constant (or a view of one) of rank 2 whose every value is a bfloat16
(the low 16 bits of each float32 zero), with K even (a pair of rows per lane) and
N a multiple of 16 (whole registers). It does not fire on a rhs computed at run
time (attention's products: they stay float32), a float32 weight with a value
that is no bfloat16 (a float32 model keeps its float32 product), an lhs that is
no widened bfloat16, one whose bfloat16 rows are not contiguous (a transposed
view: the kernel's tile reads a row's pairs as one 32-bit word; the float32
product reads the widened copy the cast makes), or a rhs already packed. The unpacked constant goes when
nothing else uses it, the cast when the matmul was its only user (``dce``). It
runs on the CPU when the host has AVX512_BF16 (the CPU target's ``bf16`` option;
``qidao.compile(..., bf16=False)`` computes in float32).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import BFloat16Type, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qidao.dialects.tg import CastOp, MatmulOp
from qidao.dialects.tg.matmul_bf16 import (
    BF16_GROUP,
    BF16_PANELS,
    LANES,
    MatmulBf16Op,
    pack_bf16,
    panel_width,
)
from qidao.dialects.tg.types import element_of, shape_of, strides_of
from qidao.passes.graph._packed_rhs import replace_with_packed_rhs
from qidao.passes.graph.fold_constants import constant_value


class Bf16Matmul(RewritePattern):
    """``matmul(cast(a: bf16), constant w) -> matmul_bf16(a, constant pack(w))``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        cast = op.lhs.owner
        if op.rhs_layout is not None or not isinstance(cast, CastOp):
            return
        if element_of(cast.input.type) != BFloat16Type():
            return
        if strides_of(cast.input.type)[-1] != 1:  # a transposed view: see below
            return
        if element_of(op.rhs.type) != f32 or len(shape_of(op.rhs.type)) != 2:
            return
        k, n = shape_of(op.rhs.type)
        if k % BF16_GROUP or n % LANES:
            return
        weight = constant_value(op.rhs)
        if weight is None or not _all_bf16(weight):
            return
        packed = pack_bf16(weight.astype(ml_dtypes.bfloat16), panel_width(n))
        replace_with_packed_rhs(
            op,
            rewriter,
            packed,
            "bf16",
            lambda p: MatmulBf16Op(cast.input, p, BF16_PANELS),
        )


def _all_bf16(weight: np.ndarray) -> bool:
    """Whether every float32 of ``weight`` is a bfloat16 (its low 16 bits zero)."""
    bits = np.ascontiguousarray(weight, dtype=np.float32).view(np.uint32)
    return not np.any(bits & np.uint32(0xFFFF))


@dataclass(frozen=True)
class Bf16MatmulPass(ModulePass):
    """Make every float32 ``tg.matmul`` of widened bfloat16s with a constant
    bfloat16 weight a ``tg.matmul_bf16`` on the weight packed for ``vdpbf16ps``."""

    name = "bf16-matmul"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(Bf16Matmul(), apply_recursively=False).rewrite_module(op)
