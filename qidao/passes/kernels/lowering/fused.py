"""``tg.fused`` kernels: which kernel a fusion group becomes.

The ``fuse`` pass makes three kinds of group; the body says which one it is:

- a ``tg.matmul`` (with an lhs prologue and/or an epilogue): the matmul nest
  ``b.., i, k, j`` with the prologue in the ``k`` body, then the epilogue in a
  top-level nest of its own, ``b.._epi, i_epi, j_epi`` (``matmul.py``);
- a ``tg.matmul_integer`` with an epilogue (the requantization), or a
  ``tg.matmul_bf16`` with one (the cast back to bfloat16): the product summed in
  an int32 (float32) buffer of the kernel's own, then the epilogue nest
  ``b.._epi, i_epi, j_epi`` writing the output from it (``matmul_integer.py``);
- a ``tg.conv2d`` with an epilogue: NCHW, the nest ``n, f, oh, ow, c, kh, kw`` with
  the epilogue applied to the finished sum before its store (no extra loop); NHWC,
  the epilogue nest ``n_epi, oh_epi, ow_epi, f_epi`` after the conv nest
  (``conv_nhwc.py``). Either way the epilogue gets the output index in
  the result's dimension order. ``compute_at`` moves an epilogue nest back into a
  tile loop once the main nest is scheduled;
- row-wise reductions with elementwise ops: outer loops and one pass per
  reduction over the row (``rows.py``);
- otherwise elementwise ops only: one nest over the output
  (``elementwise.py``).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.packed_matmul import WideningMatmulOp
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    TgLoweringError,
    dim,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.conv import emit_conv2d
from qidao.passes.kernels.lowering.elementwise import (
    PointwiseEvaluator,
    lower_pointwise_group,
)
from qidao.passes.kernels.lowering.matmul import lower_matmul_group, single_result
from qidao.passes.kernels.lowering.matmul_integer import lower_matmul_integer_group
from qidao.passes.kernels.lowering.rows import lower_row_group


def lower_fused(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.FusedOp)
    block = op.body.block
    args: dict[SSAValue, Source] = dict(zip(block.args, sources, strict=True))
    anchors = [
        o
        for o in block.ops
        if isinstance(o, tg.MatmulOp | WideningMatmulOp | tg.Conv2dOp)
    ]
    reductions = [o for o in block.ops if isinstance(o, tg.ReduceOp)]
    if len(anchors) > 1 or (anchors and reductions):
        names = ", ".join(o.name for o in [*anchors, *reductions])
        raise TgLoweringError(
            f"convert-tg-to-affine: tg.fused holds {names}; a fused kernel has at "
            "most one matmul or conv2d, and no reduction next to it"
        )
    if anchors and isinstance(anchors[0], tg.MatmulOp):
        lower_matmul_group(op, anchors[0], k, args, pool)
    elif anchors and isinstance(anchors[0], WideningMatmulOp):
        lower_matmul_integer_group(op, anchors[0], k, args, pool)
    elif anchors and isinstance(anchors[0], tg.Conv2dOp):
        _lower_conv2d_group(op, anchors[0], k, args, pool)
    elif reductions:
        lower_row_group(op, k, args, pool)
    else:
        lower_pointwise_group(op, k, args, pool)


def _lower_conv2d_group(
    group: tg.FusedOp,
    conv: tg.Conv2dOp,
    k: Kernel,
    args: dict[SSAValue, Source],
    pool: ConstantPool,
) -> None:
    """A conv2d whose inputs are the group's inputs, and an elementwise epilogue
    evaluated at the output element the conv lowering hands it (its ``outer`` ivs
    index the result in its own dimension order, NCHW or NHWC)."""
    if any(operand not in args for operand in conv.operands):
        raise TgLoweringError(
            "convert-tg-to-affine: tg.fused computes an input of tg.conv2d in its "
            "body; a conv2d prologue would be recomputed for every tap (KH·KW·F "
            "times per input element), so conv2d inputs must be the group's inputs"
        )
    yielded = single_result(group)
    if shape(yielded) != shape(conv.result):
        raise TgLoweringError(
            f"convert-tg-to-affine: tg.fused around tg.conv2d returns a "
            f"{list(shape(yielded))} tensor; a conv2d epilogue keeps the conv's "
            f"shape {list(shape(conv.result))}"
        )
    sources = [args[operand] for operand in conv.operands]

    def epilogue(total: SSAValue, outer: list[SSAValue]) -> SSAValue:
        ev = PointwiseEvaluator(k.em, outer, args, pool, {conv.result: total})
        return ev.at(yielded, [dim(d) for d in range(4)])

    emit_conv2d(conv, k, sources, epilogue if yielded is not conv.result else None)


def fused_label(op: tg.FusedOp) -> str:
    """``"tg.mul+tg.add+tg.relu"``: the body's ops in order, tg.yield left out."""
    return "+".join(o.name for o in op.body.block.ops if not isinstance(o, tg.YieldOp))
