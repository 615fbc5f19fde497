"""vjp rule of ``tg.fmod`` (``fmod.py``), PyTorch's: ``fmod(a, b) = a - trunc(a /
b) b``, so d/da is 1 and d/db is ``-trunc(a / b)``, with ``a / b`` the rounded
float quotient (PyTorch's ``div(a, b, rounding_mode="trunc")``). Each operand's
gradient is summed back to its shape (broadcasting).

``trunc(q)`` is ``q - fmod(q, 1)``: the fractional part is exact, and so is the
difference (it is the integer ``trunc(q)``, a float of the type). An infinite
quotient (``a / b`` overflows) keeps its infinity: ``fmod(inf, 1)`` is NaN, so
the fractional part taken there is 0.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.fmod import FmodOp
from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import Grads, vjp


def _trunc(e: Emit, q: SSAValue) -> SSAValue:
    """``trunc(q)`` elementwise, infinities and NaN kept."""
    frac = e.op(FmodOp(q, e.constant(1.0, q)))
    return e.sub(q, e.select(e.eq(frac, frac), frac, 0.0))


@vjp(FmodOp)
def _fmod(e: Emit, op: FmodOp, g: SSAValue) -> Grads:
    a, b = op.lhs, op.rhs
    g_b = e.neg(e.mul(g, _trunc(e, e.div(a, b))))
    return [e.sum_to(g, a), e.sum_to(g_b, b)]
