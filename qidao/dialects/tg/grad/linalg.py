"""vjp rules of ``tg.matmul`` (and, in ``conv.py``, ``tg.conv2d``)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import GradientError, Grads, vjp
from qidao.dialects.tg.linalg import MatmulOp


@vjp(MatmulOp)
def _matmul(e: Emit, op: MatmulOp, g: SSAValue) -> Grads:
    """[..., M, K] x [..., K, N]: dA = g Bᵀ, dB = Aᵀ g, batch dims summed back."""
    if op.panels:  # pack-panels runs on inference graphs, after autodiff
        raise GradientError(
            'autodiff: tg.matmul with rhs_layout = "panels" (a weight packed for '
            "the CPU's register tile) has no gradient rule; differentiate the "
            "graph before pack-panels"
        )
    g_lhs = e.matmul(g, e.swap_last(op.rhs))
    g_rhs = e.matmul(e.swap_last(op.lhs), g)
    return [e.sum_to(g_lhs, op.lhs), e.sum_to(g_rhs, op.rhs)]
