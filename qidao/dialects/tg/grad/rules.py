"""The registry of vjp rules: one function per tg op class, found through the MRO.

A rule takes the :class:`~qidao.dialects.tg.grad.emit.Emit` that builds the backward
ops, the forward op and the gradient ``g`` of its result (row-major, the result's
shape and element type), and returns one gradient per operand: a value of the
operand's shape and element type, or None where the operand has no gradient
(integer indices, a boolean condition). The autodiff pass sums the gradients of a
value used twice and drops those nobody asked for (their ops are erased again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from xdsl.ir import Operation, SSAValue

from qidao.dialects.tg.grad.emit import Emit

Grads = Sequence[SSAValue | None]
"""A rule's answer: one gradient (or None) per operand of the op."""

Rule = Callable[[Emit, Any, SSAValue], Grads]

RULES: dict[type[Operation], Rule] = {}
"""Op class -> its vjp rule (a subclass without its own rule uses its base's)."""

F = TypeVar("F", bound=Rule)


class GradientError(ValueError):
    """A vjp rule met an op it cannot differentiate (the message names the op and
    why); the autodiff pass reports it as an unsupported construct."""


def vjp(*op_classes: type[Operation]) -> Callable[[F], F]:
    """Register the decorated function as the vjp rule of ``op_classes``."""

    def register(rule: F) -> F:
        for cls in op_classes:
            if cls in RULES:
                raise LookupError(f"two vjp rules for {cls.__name__}")
            RULES[cls] = rule
        return rule

    return register


def rule_for(op: Operation) -> Rule | None:
    """The vjp rule of ``op``'s class or its nearest base class, or None."""
    for cls in type(op).__mro__:
        if cls in RULES:
            return RULES[cls]
    return None
