"""vjp rules of the reductions (``reduce.py``) and softmax (``nn.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from qidao.dialects.tg.cumulative import CumprodOp
from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.layout import num_elements
from qidao.dialects.tg.nn import SoftmaxOp
from qidao.dialects.tg.reduce import (
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceProdOp,
    ReduceSumOp,
)


@vjp(ReduceSumOp)
def _sum(e: Emit, op: ReduceSumOp, g: SSAValue) -> Grads:
    return [e.unreduce(g, shape(op.input), op.reduced_axes())]


@vjp(ReduceMeanOp)
def _mean(e: Emit, op: ReduceMeanOp, g: SSAValue) -> Grads:
    dims = shape(op.input)
    count = num_elements([dims[k] for k in op.reduced_axes()])
    return [e.unreduce(e.div(g, float(count)), dims, op.reduced_axes())]


@vjp(ReduceMaxOp)
def _max(e: Emit, op: ReduceMaxOp, g: SSAValue) -> Grads:
    """Ties share the gradient evenly, as PyTorch's ``amax``."""
    dims, axes = shape(op.input), op.reduced_axes()
    top = e.unreduce(op.result, dims, axes)
    hit = e.as_type_of(e.eq(op.input, top), g)
    count = e.unreduce(e.reduce_sum(hit, axes, keepdims=True), dims, axes)
    return [e.mul(hit, e.div(e.unreduce(g, dims, axes), count))]


def _product_of_others(e: Emit, x: SSAValue, axes: Sequence[int]) -> SSAValue:
    """Each entry of ``x`` replaced by the product of the other entries of its
    reduced slice, without a division: the reduced axes moved last and flattened,
    the exclusive running products from both ends multiplied (PyTorch's
    ``prod_safe_zeros_backward``)."""
    dims = shape(x)
    kept = [k for k in range(len(dims)) if k not in axes]
    perm = [*kept, *axes]
    moved = e.contiguous(e.transpose(x, perm))
    rows = [
        num_elements([dims[k] for k in kept]),
        num_elements([dims[k] for k in axes]),
    ]
    flat = e.reshape(moved, rows)
    before = e.op(CumprodOp(flat, 1, exclusive=True))
    after = e.op(CumprodOp(flat, 1, exclusive=True, reverse=True))
    others = e.reshape(e.mul(before, after), [dims[k] for k in perm])
    return e.transpose(others, [perm.index(k) for k in range(len(dims))])


@vjp(ReduceProdOp)
def _prod(e: Emit, op: ReduceProdOp, g: SSAValue) -> Grads:
    """PyTorch's ``prod_backward``: ``g prod / x`` when the input has no zero at
    all; else ``g`` times the product of the other entries of the slice (so a
    slice with one zero gives it all to that zero, one with two zeros nothing)."""
    x, dims, axes = op.input, shape(op.input), op.reduced_axes()
    if num_elements(dims) == 0:
        return [e.zeros_like(x)]
    spread = e.unreduce(g, dims, axes)
    quotient = e.div(e.unreduce(op.result, dims, axes), x)
    zeros = e.reduce_sum(e.as_type_of(e.eq(x, 0.0), x), range(len(dims)))
    factor = e.select(e.eq(zeros, 0.0), quotient, _product_of_others(e, x, axes))
    return [e.mul(spread, factor)]


@vjp(SoftmaxOp)
def _softmax(e: Emit, op: SoftmaxOp, g: SSAValue) -> Grads:
    """dx = y (g - sum(g y)) along the axis."""
    y, axis = op.result, op.normalized_axis()
    dot = e.reduce_sum(e.mul(g, y), [axis], keepdims=True)
    return [e.mul(y, e.sub(g, dot))]
