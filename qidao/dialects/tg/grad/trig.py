"""vjp rules of the trigonometric and hyperbolic ops (``trig.py``), PyTorch's
formulas: each derivative is written as PyTorch's backward writes it, so the
gradient is infinite where PyTorch's is (``asin``/``acos``/``acosh`` at the edges
of their domain, ``atanh`` at ``+-1``) and NaN outside the domain (where the
forward is NaN too):

- ``tan``: ``g (1 + tan(x)^2)``, from the result;
- ``asin``: ``g / sqrt(1 - x^2)``, ``acos`` its negation;
- ``atan``: ``g / (1 + x^2)``;
- ``sinh``: ``g cosh(x)``, ``cosh``: ``g sinh(x)``;
- ``asinh``: ``g / sqrt(x^2 + 1)``, ``acosh``: ``g / sqrt(x^2 - 1)``;
- ``atanh``: ``g / (1 - x^2)``.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.trig import (
    AcoshOp,
    AcosOp,
    AsinhOp,
    AsinOp,
    AtanhOp,
    AtanOp,
    CoshOp,
    SinhOp,
    TanOp,
)


def _square(e: Emit, x: SSAValue) -> SSAValue:
    return e.mul(x, x)


@vjp(TanOp)
def _tan(e: Emit, op: TanOp, g: SSAValue) -> Grads:
    return [e.mul(g, e.add(_square(e, op.result), 1.0))]


@vjp(AsinOp)
def _asin(e: Emit, op: AsinOp, g: SSAValue) -> Grads:
    return [e.div(g, e.sqrt(e.sub(1.0, _square(e, op.input))))]


@vjp(AcosOp)
def _acos(e: Emit, op: AcosOp, g: SSAValue) -> Grads:
    return [e.neg(e.div(g, e.sqrt(e.sub(1.0, _square(e, op.input)))))]


@vjp(AtanOp)
def _atan(e: Emit, op: AtanOp, g: SSAValue) -> Grads:
    return [e.div(g, e.add(_square(e, op.input), 1.0))]


@vjp(SinhOp)
def _sinh(e: Emit, op: SinhOp, g: SSAValue) -> Grads:
    return [e.mul(g, e.op(CoshOp(op.input)))]


@vjp(CoshOp)
def _cosh(e: Emit, op: CoshOp, g: SSAValue) -> Grads:
    return [e.mul(g, e.op(SinhOp(op.input)))]


@vjp(AsinhOp)
def _asinh(e: Emit, op: AsinhOp, g: SSAValue) -> Grads:
    return [e.div(g, e.sqrt(e.add(_square(e, op.input), 1.0)))]


@vjp(AcoshOp)
def _acosh(e: Emit, op: AcoshOp, g: SSAValue) -> Grads:
    return [e.div(g, e.sqrt(e.sub(_square(e, op.input), 1.0)))]


@vjp(AtanhOp)
def _atanh(e: Emit, op: AtanhOp, g: SSAValue) -> Grads:
    return [e.div(g, e.sub(1.0, _square(e, op.input)))]
