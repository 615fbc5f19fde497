"""vjp rules of the reductions (``reduce.py``) and softmax (``nn.py``)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.layout import num_elements
from qidao.dialects.tg.nn import SoftmaxOp
from qidao.dialects.tg.reduce import ReduceMaxOp, ReduceMeanOp, ReduceSumOp


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


@vjp(SoftmaxOp)
def _softmax(e: Emit, op: SoftmaxOp, g: SSAValue) -> Grads:
    """dx = y (g - sum(g y)) along the axis."""
    y, axis = op.result, op.normalized_axis()
    dot = e.reduce_sum(e.mul(g, y), [axis], keepdims=True)
    return [e.mul(y, e.sub(g, dot))]
