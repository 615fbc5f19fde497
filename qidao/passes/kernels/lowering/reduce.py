"""Reduction kernels: ``tg.reduce_sum``, ``tg.reduce_mean``, ``tg.reduce_max``.

One nest: loops ``i0, i1, ...`` over the kept dimensions (input order), then loops
``r0, r1, ...`` over the reduced ones carrying the accumulator as iter_args (sum
from 0, max from -inf with NaN-propagating ``arith.maximumf``); mean divides the
sum by the element count. With ``keepdims`` the reduced dimensions store at 0.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    NEG_INF,
    Kernel,
    Source,
    const,
    dim,
    element_type,
    loop_names,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool


def lower_reduce(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.ReduceOp)
    em = k.em
    (x,) = sources
    (out,) = k.outputs
    in_shape = shape(op.input)
    axes = op.reduced_axes()
    kept = [d for d in range(len(in_shape)) if d not in axes]
    t = element_type(op.result)
    keepdims = op.keepdims is not None

    # input dim -> loop position: kept dims first (outer nest), reduced dims after
    position = {d: p for p, d in enumerate([*kept, *axes])}
    in_index = [dim(position[d]) for d in range(len(in_shape))]
    out_index: list[AffineExpr] = []
    for d in range(len(in_shape)):
        if d in position and d in kept:
            out_index.append(dim(position[d]))
        elif keepdims:
            out_index.append(const(0))

    is_max = isinstance(op, tg.ReduceMaxOp)
    init = em.constant(NEG_INF if is_max else 0.0, t)

    def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
        xv = em.load(x, ivs, in_index)
        return [em.maxf(accs[0], xv) if is_max else em.addf(accs[0], xv)]

    with em.nest(loop_names("i", len(kept)), [in_shape[d] for d in kept]) as outer:
        (result,) = em.accumulate(
            loop_names("r", len(axes)), [in_shape[d] for d in axes], [init], step, outer
        )
        if isinstance(op, tg.ReduceMeanOp):
            count = 1
            for d in axes:
                count *= in_shape[d]
            result = em.divf(result, em.constant(float(count), t))
        em.store(result, out, outer, out_index)
