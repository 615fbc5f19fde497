"""The errors of the schedule primitives: each names the primitive, the kernel, the
loop and the reason. The ``Schedule`` API (``qidao.compiler.schedule``) re-exports
them, so a user catches ``ScheduleError`` without knowing which pass raised it.
"""

from __future__ import annotations

from qidao.errors import QidaoError


class ScheduleError(QidaoError):
    """A schedule primitive cannot be applied: names the kernel, the loop, the reason."""

    def __init__(self, primitive: str, kernel: str, loop: str, reason: str) -> None:
        self.primitive = primitive
        self.kernel = kernel
        self.loop = loop
        self.reason = reason
        super().__init__(f"{primitive}: loop '{loop}' in kernel '{kernel}': {reason}")


class KernelNotFoundError(ScheduleError):
    """No ``qd.kernel`` function of that name."""


class LoopNotFoundError(ScheduleError):
    """No loop of that name in the kernel."""


class InvalidArgumentError(ScheduleError):
    """A bad factor or loop list (``factor < 1``, a loop named twice, ...)."""


class DuplicateLoopNameError(ScheduleError):
    """A primitive would give a new loop a name the kernel already uses."""


class IllegalScheduleError(ScheduleError):
    """The primitive does not apply to this loop nest, or would change its result."""


class NonConstantBoundsError(IllegalScheduleError):
    """The primitive needs a loop with constant bounds and step 1."""


class NotPerfectlyNestedError(IllegalScheduleError):
    """The loops are not a perfectly nested band."""


class SymbolicLoopError(IllegalScheduleError):
    """The loop runs to a symbolic dimension's size (``qd.symbolic``), and the
    primitive needs a trip count known when compiling (or would change how many
    times a reduction runs)."""
