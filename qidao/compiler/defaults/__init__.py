"""Default schedules: what ``qidao.compile(model)`` does to the loops when the user
gives no schedule, the way a library picks a kernel by the kind of the operation.

Each kernel's ``qd.kernel`` (the tg ops it computes) names its kind; the first
scheduler of that kind that applies rewrites its loops with ordinary schedule
primitives, so the result is an ordinary trace (``compiled.stats["schedule"]``)
that prints, replays and can be tuned further:

============  =====================================================================
kind          default
============  =====================================================================
matmul        a register tile of C (8 x 32: sixteen ``<16 x float>`` accumulators
              updated with fma), B packed per column panel when ``cache-read``
              exists, the init and epilogue nests computed inside the tile;
              the outer tile loop parallel when ``threads > 1`` (``matmul.py``)
conv2d        a register tile of output pixels x output channels (``conv.py``)
rows          softmax, layer norm, reductions over the last axis: the row loop
              parallel when ``threads > 1`` and the work pays for the threads
elementwise   the outermost loop parallel when ``threads > 1`` and the work pays
              for the threads; LLVM vectorizes the inner loop as it is
pool          NHWC max/avg pools: the channel loops vectorized, the output rows
              parallel when the work pays (``pool.py``)
============  =====================================================================

A scheduler returns a one-line description of what it did, or raises
:class:`NotApplicable` with the reason (a shape it does not handle, work too small
to pay for threads); ``compiled.stats["default_schedule"]`` maps every kernel to
one or the other, so nothing is decided silently. A primitive that fails inside a
scheduler (a ``ScheduleError``: a heuristic that met a case it did not foresee)
puts the kernel back as it was and is reported the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.passes._loops import kernel_functions, replace_kernel

__all__ = ["NotApplicable", "default_schedule", "kind_of"]


class NotApplicable(Exception):
    """A default scheduler does not apply to a kernel; the message says why."""


Scheduler = Callable[[Schedule, str, int], str]


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


def _schedulers() -> dict[str, Scheduler]:
    from qidao.compiler.defaults.loops import schedule_elementwise, schedule_rows
    from qidao.compiler.defaults.matmul import schedule_matmul
    from qidao.compiler.defaults.pool import schedule_pool

    def conv(s: Schedule, kernel: str, threads: int) -> str:
        from qidao.compiler.defaults.conv import schedule_conv

        if not schedule_conv(s, kernel, threads):
            raise NotApplicable("the loops are not a conv2d nest the tile handles")
        return "register tile of output pixels x output channels"

    return {
        "matmul": schedule_matmul,
        "conv2d": conv,
        "rows": schedule_rows,
        "elementwise": schedule_elementwise,
        "pool": schedule_pool,
    }


def default_schedule(s: Schedule, threads: int) -> dict[str, str]:
    """Apply the default schedule of each kernel of ``s``; kernel -> what was done
    (or ``"none: <reason>"``)."""
    schedulers = _schedulers()
    report: dict[str, str] = {}
    for kernel, ops in s.kernels().items():
        kind = kind_of(ops)
        scheduler = schedulers.get(kind)
        if scheduler is None:
            report[kernel] = f"none: no default schedule for {kind} kernels"
            continue
        fn = kernel_functions(s.module)[kernel]
        saved, trace_length = fn.clone(), len(s.trace)
        try:
            report[kernel] = f"{kind}: {scheduler(s, kernel, threads)}"
        except NotApplicable as reason:
            report[kernel] = f"none: {reason}"
        except ScheduleError as err:
            replace_kernel(fn, saved)
            del s.trace[trace_length:]
            report[kernel] = f"none: the {kind} schedule failed ({err})"
    return report
