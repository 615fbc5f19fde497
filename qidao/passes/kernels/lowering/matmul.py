"""``tg.matmul`` kernels, alone or with a fused lhs prologue and epilogue.

matmul (``[..., M, K] x [..., K, N]``) zero-fills the output in a first nest
(``b0_init, ..., i_init, j_init``) and accumulates in a second one ordered
``b0, ..., i, k, j``: the lhs element ``x[i, k]`` is read once per ``(i, k)`` in the
``k`` body, and the innermost ``j`` walks the output row and the rhs row, so LLVM
vectorizes it. Batch dimensions broadcast as in NumPy.

A ``tg.fused`` group around a matmul (see the ``fuse`` pass) changes two places:

- **lhs prologue**: ``x[i, k]`` is the prologue's value at ``[b, i, k]``, computed
  in the ``k`` body, outside ``j``: once per lhs element, never recomputed.
- **epilogue**: a third nest ``b0_epi, ..., i_epi, j_epi`` after the matmul nest
  replaces each ``out[b, i, j]`` by the epilogue applied to it, once per output
  element. It is a separate nest so that ``b.., i, k, j`` stays a perfect band
  (``split``/``reorder`` tile it); ``compute_at(kernel, "i_epi", loop)`` moves it
  back into a tile loop, where the tile is still in cache (or in registers).

So a fused kernel is three top-level nests::

    for b_init, i_init, j_init:  out[b, i, j] = 0
    for b, i, k:  a = prologue(x)[b, i, k];  for j:  out[b, i, j] += a * w[b, k, j]
    for b_epi, i_epi, j_epi:     out[b, i, j] = epilogue(out[b, i, j], ...)
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.linalg import PANEL_WIDTH
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    TgLoweringError,
    broadcast_index,
    dim,
    element_type,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.elementwise import PointwiseEvaluator

ElementAt = Callable[[list[SSAValue], list[AffineExpr]], SSAValue]
"""``f(ivs, index)``: a scalar at ``index`` (``d<k>`` is ``ivs[k]``), emitted at the
current insertion point."""


def lower_matmul(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.MatmulOp)
    lhs, rhs = sources
    emit_matmul(
        op, k, lambda ivs, index: k.em.load(lhs, ivs, index), rhs, epilogue=None
    )


def emit_matmul(
    op: tg.MatmulOp,
    k: Kernel,
    lhs_at: ElementAt,
    rhs: Source,
    epilogue: ElementAt | None,
) -> None:
    """The init and matmul nests, then the epilogue nest if any; ``lhs_at`` gives
    ``x[b, i, k]``, ``epilogue`` the final value of ``out[b, i, j]`` (it may load
    ``out`` there, the finished sum)."""
    em = k.em
    (out,) = k.outputs
    out_shape = shape(op.result)
    batch = len(out_shape) - 2
    m, n = out_shape[-2:]
    kk = shape(op.lhs)[-1]
    batch_names = [f"b{d}" for d in range(batch)]
    zero = em.constant(0.0, element_type(op.result))
    element_index = [dim(d) for d in range(batch + 2)]
    with em.nest(
        [f"{name}_init" for name in [*batch_names, "i", "j"]], out_shape
    ) as ivs:
        em.store(zero, out, ivs, element_index)
    b = [dim(d) for d in range(batch)]
    i, kd, j = dim(batch), dim(batch + 1), dim(batch + 2)
    lhs_index = [*broadcast_index(b, shape(op.lhs)[:-2]), i, kd]
    rhs_batch = broadcast_index(b, list(op.rhs_matrix_shape()[:-2]))
    if op.panels:  # rhs[.., j floordiv 32, k, j mod 32]: split j by 32 makes it plain
        rhs_index = [*rhs_batch, j // PANEL_WIDTH, kd, j % PANEL_WIDTH]
    else:
        rhs_index = [*rhs_batch, kd, j]
    out_index = [*b, i, j]
    with (
        em.nest([*batch_names, "i"], [*out_shape[:-2], m]) as row,
        em.nest(["k"], [kk]) as (kv,),
    ):
        a = lhs_at([*row, kv], lhs_index)
        with em.nest(["j"], [n]) as (jv,):
            ivs = [*row, kv, jv]
            w = em.load(rhs, ivs, rhs_index)
            acc = em.load(out, ivs, out_index)
            em.store(em.addf(acc, em.mulf(a, w)), out, ivs, out_index)
    if epilogue is not None:
        with em.nest(
            [f"{name}_epi" for name in [*batch_names, "i", "j"]], out_shape
        ) as ivs:
            em.store(epilogue(ivs, element_index), out, ivs, element_index)


def lower_matmul_group(
    group: tg.FusedOp,
    matmul: tg.MatmulOp,
    k: Kernel,
    args: dict[SSAValue, Source],
    pool: ConstantPool,
) -> None:
    """A ``tg.fused`` holding one matmul, an optional elementwise prologue producing
    its lhs, and an optional elementwise epilogue ending at the group's result."""
    yielded = single_result(group)
    if shape(yielded) != shape(matmul.result):
        raise TgLoweringError(
            f"convert-tg-to-affine: tg.fused around tg.matmul returns a "
            f"{list(shape(yielded))} tensor; a matmul epilogue keeps the matmul's "
            f"shape {list(shape(matmul.result))}"
        )
    if matmul.rhs not in args:
        raise TgLoweringError(
            "convert-tg-to-affine: tg.fused computes the rhs of tg.matmul in its "
            "body; a prologue on the rhs would run once per lhs row (fuse only the lhs)"
        )
    out_batch = shape(matmul.result)[:-2]
    if matmul.lhs not in args and shape(matmul.lhs)[:-2] != out_batch:
        raise TgLoweringError(
            "convert-tg-to-affine: tg.fused computes the lhs of tg.matmul in its "
            "body, but the matmul broadcasts it over batch dimensions; the prologue "
            "would be recomputed per batch"
        )
    (out,) = k.outputs

    def lhs_at(ivs: list[SSAValue], index: list[AffineExpr]) -> SSAValue:
        return PointwiseEvaluator(k.em, ivs, args, pool).at(matmul.lhs, index)

    epilogue: ElementAt | None = None
    if yielded is not matmul.result:
        finished = {**args, matmul.result: out}

        def epilogue(ivs: list[SSAValue], index: list[AffineExpr]) -> SSAValue:
            return PointwiseEvaluator(k.em, ivs, finished, pool).at(yielded, index)

    emit_matmul(matmul, k, lhs_at, args[matmul.rhs], epilogue)


def single_result(group: tg.FusedOp) -> SSAValue:
    """The one value a matmul or conv2d group yields."""
    terminator = group.body.block.last_op
    assert isinstance(terminator, tg.YieldOp)
    if len(terminator.values) != 1:
        raise TgLoweringError(
            "convert-tg-to-affine: tg.fused around a matmul or conv2d must have one "
            f"result, got {len(terminator.values)}"
        )
    return terminator.values[0]
