"""Reverse-mode derivatives of tg ops: one vjp rule per op, one file per op family.

The rules live beside the dialect (they build tg ops and know nothing else), so the
``autodiff`` pass (``qidao/passes/graph/autodiff.py``) and a frontend that meets a
backward op can both use them. ``rule_for(op)`` finds an op's rule; ``RULES`` lists
them all. Conventions, each PyTorch's (``docs/autodiff.md`` lists them with the
reason):

=====================  =============================================================
op                     gradient where the derivative is not defined
=====================  =============================================================
``relu``               0 at x = 0 (``threshold_backward``)
``abs``                0 at x = 0 (``sgn``)
``max``/``min``        ties split the gradient in half between the operands
``reduce_max``         ties share the gradient evenly (``amax``)
``max_pool2d``         the first maximum in the window, in row-major order
``sqrt``               ``g / (2 sqrt(x))``: inf at x = 0
``pow``                d/db is 0 where a = 0 and b >= 0; d/da is 0 where b = 0
``take``, ...          out-of-range indices read the clamped entry, which gets
                       the gradient (the forward's rule); indices get none
=====================  =============================================================

``tests/compiler/test_grad_special_points.py`` compiles each rule's op at its
special points (both zeros, ties, the infinities) and compares with
``torch.autograd``; it walks ``RULES``, so a new rule needs a case there, or a
reason it has no special point.

Ops whose results are not floats (comparisons, logical ops) pass no gradient
and need no rule: the autodiff pass follows float values only. ``tg.constant``
has no operand; ``tg.fused`` and the Winograd ops are made by passes after
``autodiff``.
"""

from __future__ import annotations

from qidao.dialects.tg.grad import (  # noqa: F401  (each module registers its rules)
    conv,
    cumulative,
    custom,
    elementwise,
    fmod,
    indexing,
    layout,
    linalg,
    norm,
    pool,
    reduce,
    round,
    trig,
)
from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import RULES, GradientError, Grads, rule_for, vjp

__all__ = ["RULES", "Emit", "GradientError", "Grads", "rule_for", "vjp"]
