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

from xdsl.ir import Operation

from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.dialects.tg import TG
from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.reduce import ReduceOp
from qidao.passes.schedule.loops.nest import kernel_functions, replace_kernel

__all__ = ["NotApplicable", "attempt", "is_lone_reduction", "kind_of"]


class NotApplicable(Exception):
    """A default scheduler does not apply to a kernel; the message says why."""


def kind_of(ops: str) -> str:
    """The kind of a kernel computing ``ops`` (its ``qd.kernel``, e.g.
    ``"tg.matmul+tg.add+tg.relu"``), from the ops' declared ``KERNEL_KIND``:
    matmul, matmul_integer, matmul_bf16, matmul_blockq, conv2d, pool or other when the first op says so, rows when any op is a
    row reduction, else elementwise (also for a label of no tg op: ``copy``)."""
    kinds = [_kind(name) for name in ops.split("+")]
    if kinds[0] in (
        "matmul",
        "matmul_integer",
        "matmul_bf16",
        "matmul_blockq",
        "conv2d",
    ):
        return kinds[0]
    if "rows" in kinds:
        return "rows"
    if kinds[0] in ("pool", "other"):
        return kinds[0]
    return "elementwise"


def is_lone_reduction(ops: str) -> bool:
    """Whether a kernel's ``qd.kernel`` is one ``tg.reduce_*`` op alone."""
    op = _OPS.get(ops)
    return op is not None and issubclass(op, ReduceOp)


_OPS: dict[str, type[Operation]] = {op.name: op for op in TG.operations}


def _kind(name: str) -> str:
    op = _OPS.get(name)
    return op.KERNEL_KIND if op is not None and issubclass(op, TgOp) else "elementwise"


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
