"""``tg.matmul`` kernels.

matmul (``[..., M, K] x [..., K, N]``) zero-fills the output in a first nest
(``b0_init, ..., i_init, j_init``) and accumulates in a second one ordered
``b0, ..., i, k, j``: the innermost ``j`` walks the output row and the rhs row, so
LLVM vectorizes it. Batch dimensions broadcast as in NumPy.
"""

from __future__ import annotations

from xdsl.ir import Operation

from qidao.dialects import tg
from qidao.passes._tg_lower_common import (
    Kernel,
    Source,
    broadcast_index,
    dim,
    element_type,
    shape,
)
from qidao.passes._tg_lower_constants import ConstantPool


def lower_matmul(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.MatmulOp)
    em = k.em
    lhs, rhs = sources
    (out,) = k.outputs
    out_shape = shape(op.result)
    batch = len(out_shape) - 2
    m, n = out_shape[-2:]
    kk = shape(op.lhs)[-1]
    batch_names = [f"b{d}" for d in range(batch)]
    zero = em.constant(0.0, element_type(op.result))
    init_index = [dim(d) for d in range(batch + 2)]
    with em.nest(
        [f"{name}_init" for name in [*batch_names, "i", "j"]], out_shape
    ) as ivs:
        em.store(zero, out, ivs, init_index)
    with em.nest([*batch_names, "i", "k", "j"], [*out_shape[:-2], m, kk, n]) as ivs:
        b = [dim(d) for d in range(batch)]
        i, kd, j = dim(batch), dim(batch + 1), dim(batch + 2)
        lhs_index = [*broadcast_index(b, shape(op.lhs)[:-2]), i, kd]
        rhs_index = [*broadcast_index(b, shape(op.rhs)[:-2]), kd, j]
        out_index = [*b, i, j]
        a = em.load(lhs, ivs, lhs_index)
        w = em.load(rhs, ivs, rhs_index)
        acc = em.load(out, ivs, out_index)
        em.store(em.addf(acc, em.mulf(a, w)), out, ivs, out_index)
