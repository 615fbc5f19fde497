"""``tg.pad`` kernels: one pass over the padded output, the input read through its
own layout (a strided view such as the NCHW -> NHWC transpose is read in place, so
transpose and pad are one copy).

Loops ``i0, i1, ...`` over the output; the bounds test sits inside the loop of the
last padded dimension ``p``, so the loops of the dimensions after it (the channels
of an NHWC activation) are branch-free copies or fills::

    for i0 .. ip:
      if every i_d (d <= p) is inside [low_d, low_d + size_d):   (only the tests
        for i(p+1) ..:  out[i] = x[i - low]                       padding can fail)
      else:
        for i(p+1)_fill ..:  out[i] = value

With no padding at all it is a plain copy nest.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    add,
    const,
    dim,
    element_type,
    in_bounds,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool


def lower_pad(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.PadOp)
    em = k.em
    (src,) = sources
    (out,) = k.outputs
    in_shape, out_shape = shape(op.input), shape(op.result)
    rank = len(out_shape)
    low, high = op.amounts()
    padded = [d for d in range(rank) if low[d] or high[d]]
    last = padded[-1] if padded else -1
    out_index = [dim(d) for d in range(rank)]
    in_index = [add(dim(d), const(-low[d])) for d in range(rank)]
    conditions = [
        c
        for d in padded
        for c in in_bounds(in_index[d], -low[d], out_shape[d] - 1 - low[d], in_shape[d])
    ]

    def inner(names: list[str], outer: list[SSAValue], copy: bool) -> list[SSAValue]:
        """The loops of the dimensions after ``last``: copy or fill."""
        with em.nest(names, out_shape[last + 1 :]) as ivs:
            index = [*outer, *ivs]
            if copy:
                value = em.load(src, index, in_index)
            else:
                value = em.constant(op.pad_value(), element_type(out))
            em.store(value, out, index, out_index)
        return []

    tail = list(range(last + 1, rank))
    with em.nest([f"i{d}" for d in range(last + 1)], out_shape[: last + 1]) as outer:
        em.if_else(
            conditions, outer, lambda: inner([f"i{d}" for d in tail], outer, True), []
        )
        if not conditions:
            return
        # the else branch of the affine.if just emitted: the fill loops
        branch = em.block.last_op
        assert isinstance(branch, affine.IfOp)
        otherwise = branch.else_region.block
        terminator = otherwise.last_op
        assert isinstance(terminator, affine.YieldOp)
        otherwise.erase_op(terminator)
        with em.inside(otherwise):
            inner([f"i{d}_fill" for d in tail], outer, False)
            em.add(affine.YieldOp.get())
