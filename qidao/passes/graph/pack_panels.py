"""``pack-panels``: a constant float32 rhs of ``tg.matmul`` stored in column panels.

    %y = tg.matmul %a, %w              ==>   %p = tg.constant (w packed: [N/32, K, 32])
      : (tensor<MxKxf32>, tensor<KxNxf32>)     %y = tg.matmul %a, %p rhs_layout = "panels"

(a batched rhs ``[..., K, N]`` likewise, each matrix in its panels: a Winograd
convolution's 36 transformed filters).

The CPU's matmul tile (``qidao/compiler/targets/cpu/defaults/matmul.py``) reads B
one panel of 32 columns at a time, down all K rows: in B's own layout that is 128
bytes from each row, rows ``4 N`` bytes apart, a new page every row or two.
Packed (``packed[p, k, c] = B[k, 32 p + c]``), a panel is one contiguous run the
hardware prefetcher follows, and nothing is copied when the kernel runs: before,
the schedule copied the panel per call (``cache_read``) from 256 rows of A on, and
read B in place below that. ONNX Runtime prepacks its GEMM weights the same way,
once, when the session starts. The lowering reads ``rhs[j floordiv 32, k, j mod
32]``; the schedule's ``split`` of ``j`` by 32 makes that ``rhs[j_o, k, j_i]``
(``schedule/loops/quotients.py``).

It fires on a ``tg.matmul`` with float32 operands whose rhs is a constant (or a
view of one) at least one panel wide, of at least ``MIN_MULTIPLY_ADDS`` (the
default schedule leaves smaller ones as lowered, where the packed index would only
cost). N need not be a multiple of 32: the last panel is zero past N (never
read), and the schedule peels it. It does not fire on a rhs computed at run
time, N under 32, one row with a ragged N (the schedule's GEMV, which reads B's
rows), another element type, or a rhs already packed. The unpacked
constant goes when nothing else uses it. It runs on the CPU under the default
schedule (the target's ``pack_weights`` option: a schedule of one's own sees the
matmul as written, unless ``pack_weights=True``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qidao.dialects.tg import MatmulOp
from qidao.dialects.tg.linalg import PANEL_WIDTH, PANELS, pack_panels
from qidao.dialects.tg.types import element_of, numel, shape_of
from qidao.passes.graph._packed_rhs import replace_with_packed_rhs
from qidao.passes.graph.fold_constants import constant_value

MIN_MULTIPLY_ADDS = 32**3
"""The default matmul schedule tiles from ``2 * 32**3`` flops (its ``MIN_FLOPS``)."""


class PackPanelWeight(RewritePattern):
    """``matmul(a, constant w) -> matmul(a, constant panels(w))``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        if op.panels or element_of(op.lhs.type) != f32:
            return
        rhs, out = shape_of(op.rhs.type), shape_of(op.result.type)
        if rhs[-1] < PANEL_WIDTH:
            return
        if out[-2] == 1 and rhs[-1] % PANEL_WIDTH:  # the schedule's GEMV: B's rows
            return
        if numel(op.result.type) * rhs[-2] < MIN_MULTIPLY_ADDS:
            return
        weight = constant_value(op.rhs)
        if weight is None:
            return
        replace_with_packed_rhs(
            op,
            rewriter,
            pack_panels(weight),
            "panels",
            lambda packed: MatmulOp(op.lhs, packed, PANELS, rhs[-1]),
        )


@dataclass(frozen=True)
class PackPanels(ModulePass):
    """Pack every constant float32 ``tg.matmul`` rhs in column panels."""

    name = "pack-panels"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(PackPanelWeight(), apply_recursively=False).rewrite_module(
            op
        )
