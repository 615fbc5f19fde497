"""vjp rule of ``tg.round`` (``round.py``): a step function, so its derivative is 0
wherever it is defined, and PyTorch's ``round`` backward gives 0 at the steps too."""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.round import RoundOp


@vjp(RoundOp)
def _round(e: Emit, op: RoundOp, g: SSAValue) -> Grads:
    return [e.zeros_like(op.input)]
