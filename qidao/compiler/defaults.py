"""What every target's default schedules share: the kind of a kernel, and a scheduler
that may decline or fail without leaving a half-scheduled kernel behind.

A default scheduler (``targets/cpu/defaults/``, ``targets/cuda/defaults.py``)
returns a one-line description of what it did, or raises :class:`NotApplicable`
with the reason; ``compiled.stats["default_schedule"]`` maps every kernel to one or
the other, so nothing is decided silently. A primitive that fails inside a
scheduler (a ``ScheduleError``: a heuristic meeting a case it did not foresee)
puts the kernel and the trace back as they were (:func:`attempt`) and is reported
the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.passes.schedule.loops.nest import kernel_functions, replace_kernel

__all__ = ["NotApplicable", "attempt", "kind_of"]


class NotApplicable(Exception):
    """A default scheduler does not apply to a kernel; the message says why."""


def kind_of(ops: str) -> str:
    """The kind of a kernel computing ``ops`` (its ``qd.kernel``, e.g.
    ``"tg.matmul+tg.add+tg.relu"``): matmul, conv2d, rows, pool, elementwise or
    other."""
    first = ops.split("+")[0]
    if first == "tg.matmul":
        return "matmul"
    if first == "tg.conv2d":
        return "conv2d"
    if any(
        op in ops
        for op in ("tg.softmax", "tg.reduce_sum", "tg.reduce_mean", "tg.reduce_max")
    ):
        return "rows"
    if first in ("tg.max_pool2d", "tg.avg_pool2d"):
        return "pool"
    if first == "tg.constant":
        return "other"
    return "elementwise"


def attempt(
    s: Schedule, kernel: str, step: Callable[[], str], failed: str = "{err}"
) -> str:
    """``step()``, which schedules ``kernel``; when it raises :class:`NotApplicable`,
    ``"none: <reason>"``, and when a primitive raises a ``ScheduleError``,
    ``"none: "`` + ``failed`` formatted with ``err``. Either way the kernel and the
    trace are put back as they were."""
    saved, length = kernel_functions(s.module)[kernel].clone(), len(s.trace)
    try:
        return step()
    except (NotApplicable, ScheduleError) as err:
        replace_kernel(kernel_functions(s.module)[kernel], saved)
        del s.trace[length:]
        reason = str(err) if isinstance(err, NotApplicable) else failed.format(err=err)
        return f"none: {reason}"
