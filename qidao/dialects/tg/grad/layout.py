"""vjp rules of the layout ops (``layout_ops.py``): views move gradients, not data."""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.base import ints
from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.layout_ops import BroadcastOp, ShapeOp, TransposeOp


@vjp(TransposeOp)
def _transpose(e: Emit, op: TransposeOp, g: SSAValue) -> Grads:
    perm = ints(op.perm)
    inverse = [perm.index(k) for k in range(len(perm))]
    return [e.transpose(g, inverse)]


@vjp(ShapeOp)  # view, reshape, contiguous: same elements, in row-major order
def _reshape(e: Emit, op: ShapeOp, g: SSAValue) -> Grads:
    return [e.reshape(g, shape(op.input))]


@vjp(BroadcastOp)
def _broadcast(e: Emit, op: BroadcastOp, g: SSAValue) -> Grads:
    return [e.sum_to(g, op.input)]
