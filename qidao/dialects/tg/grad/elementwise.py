"""vjp rules of the elementwise ops (``elementwise.py``, ``compare.py``, ``cast.py``).

A binary op broadcasts, so each operand's gradient is summed back to its own shape
(``Emit.sum_to``). Where a derivative is undefined the rule follows PyTorch: relu'(0)
= 0, abs'(0) = 0, ties of max/min split the gradient in half.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from qidao.dialects.tg.cast import CastOp
from qidao.dialects.tg.compare import SelectOp
from qidao.dialects.tg.elementwise import (
    AbsOp,
    AddOp,
    CosOp,
    DivOp,
    ErfOp,
    ExpOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PowOp,
    ReluOp,
    SigmoidOp,
    SinOp,
    SqrtOp,
    SubOp,
    TanhOp,
)
from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.types import is_float


@vjp(AddOp)
def _add(e: Emit, op: AddOp, g: SSAValue) -> Grads:
    return [e.sum_to(g, op.lhs), e.sum_to(g, op.rhs)]


@vjp(SubOp)
def _sub(e: Emit, op: SubOp, g: SSAValue) -> Grads:
    return [e.sum_to(g, op.lhs), e.sum_to(e.neg(g), op.rhs)]


@vjp(MulOp)
def _mul(e: Emit, op: MulOp, g: SSAValue) -> Grads:
    return [e.sum_to(e.mul(g, op.rhs), op.lhs), e.sum_to(e.mul(g, op.lhs), op.rhs)]


@vjp(DivOp)
def _div(e: Emit, op: DivOp, g: SSAValue) -> Grads:
    g_lhs = e.div(g, op.rhs)  # d(a/b)/db = -(a/b)/b
    return [e.sum_to(g_lhs, op.lhs), e.sum_to(e.neg(e.mul(g_lhs, op.result)), op.rhs)]


def _tie_split(e: Emit, op: MaxOp | MinOp, g: SSAValue, lhs_wins: SSAValue) -> Grads:
    """Gradient of max/min: all to the winner, half to each on a tie."""
    tie = e.eq(op.lhs, op.rhs)
    half = e.mul(g, 0.5)
    g_lhs = e.select(tie, half, e.select(lhs_wins, g, 0.0))
    g_rhs = e.select(tie, half, e.select(lhs_wins, 0.0, g))
    return [e.sum_to(g_lhs, op.lhs), e.sum_to(g_rhs, op.rhs)]


@vjp(MaxOp)
def _max(e: Emit, op: MaxOp, g: SSAValue) -> Grads:
    return _tie_split(e, op, g, e.gt(op.lhs, op.rhs))


@vjp(MinOp)
def _min(e: Emit, op: MinOp, g: SSAValue) -> Grads:
    return _tie_split(e, op, g, e.lt(op.lhs, op.rhs))


@vjp(PowOp)
def _pow(e: Emit, op: PowOp, g: SSAValue) -> Grads:
    a, b = op.lhs, op.rhs
    # d/da = b a^(b-1), 0 where b == 0 (PyTorch: no 0 * inf at a == 0)
    d_a = e.mul(b, e.pow(a, e.sub(b, 1.0)))
    g_a = e.select(e.eq(b, 0.0), 0.0, e.mul(g, d_a))
    # d/db = a^b log(a), 0 where a == 0 and b >= 0
    zero_base = e.logical_and(e.eq(a, 0.0), e.ge(b, 0.0))
    g_b = e.select(zero_base, 0.0, e.mul(g, e.mul(op.result, e.log(a))))
    return [e.sum_to(g_a, a), e.sum_to(g_b, b)]


@vjp(NegOp)
def _neg(e: Emit, op: NegOp, g: SSAValue) -> Grads:
    return [e.neg(g)]


@vjp(AbsOp)
def _abs(e: Emit, op: AbsOp, g: SSAValue) -> Grads:
    x = op.input
    return [e.select(e.gt(x, 0.0), g, e.select(e.lt(x, 0.0), e.neg(g), 0.0))]


@vjp(ReluOp)
def _relu(e: Emit, op: ReluOp, g: SSAValue) -> Grads:
    # the result's sign, not the input's (the same mask): the backward keeps the
    # relu's output, which the next layer's weight gradient reads anyway, and the
    # input dies in the forward (PyTorch's threshold_backward reads the result too)
    return [e.select(e.gt(op.result, 0.0), g, 0.0)]


@vjp(ExpOp)
def _exp(e: Emit, op: ExpOp, g: SSAValue) -> Grads:
    return [e.mul(g, op.result)]


@vjp(LogOp)
def _log(e: Emit, op: LogOp, g: SSAValue) -> Grads:
    return [e.div(g, op.input)]


@vjp(SqrtOp)
def _sqrt(e: Emit, op: SqrtOp, g: SSAValue) -> Grads:
    return [e.div(g, e.mul(op.result, 2.0))]


@vjp(TanhOp)
def _tanh(e: Emit, op: TanhOp, g: SSAValue) -> Grads:
    y = op.result
    return [e.mul(g, e.sub(1.0, e.mul(y, y)))]


@vjp(SigmoidOp)
def _sigmoid(e: Emit, op: SigmoidOp, g: SSAValue) -> Grads:
    y = op.result
    return [e.mul(g, e.mul(y, e.sub(1.0, y)))]


@vjp(ErfOp)
def _erf(e: Emit, op: ErfOp, g: SSAValue) -> Grads:
    x = op.input
    bell = e.exp(e.neg(e.mul(x, x)))
    return [e.mul(g, e.mul(bell, 2.0 / math.sqrt(math.pi)))]


@vjp(SinOp)
def _sin(e: Emit, op: SinOp, g: SSAValue) -> Grads:
    return [e.mul(g, e.cos(op.input))]


@vjp(CosOp)
def _cos(e: Emit, op: CosOp, g: SSAValue) -> Grads:
    return [e.neg(e.mul(g, e.sin(op.input)))]


@vjp(SelectOp)
def _select(e: Emit, op: SelectOp, g: SSAValue) -> Grads:
    c = op.condition
    return [
        None,
        e.sum_to(e.select(c, g, 0.0), op.true_value),
        e.sum_to(e.select(c, 0.0, g), op.false_value),
    ]


@vjp(CastOp)
def _cast(e: Emit, op: CastOp, g: SSAValue) -> Grads:
    if not is_float(op.input.type):  # int -> float: the integers have no gradient
        return [None]
    return [e.as_type_of(g, op.input)]
