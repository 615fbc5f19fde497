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
matmul_       int8 (a ui8 x i8 rhs packed for VNNI): a register tile of int32
integer       accumulators, each 16 x 4 block of bytes one ``vpdpbusd``
              (``matmul_integer.py``)
conv2d        a register tile of output pixels x output channels (``conv.py``);
              a depthwise one: its channels on vectors (``depthwise.py``)
rows          softmax, layer norm, reductions over the last axis: the passes over
              a row vectorized (reductions 64 lanes wide: four accumulators), the
              row loop parallel when ``threads > 1`` and the work pays (``rows.py``)
elementwise   a read down a column (a transposing copy) walked in 64 x 64 tiles
              (``transpose.py``); the outermost loop parallel when ``threads > 1``
              and the work pays for the threads; LLVM vectorizes the inner loop
pool          NHWC max/avg pools: the channel loops vectorized, the output rows
              parallel when the work pays (``pool.py``)
reduce        reductions that keep the last axis innermost (NHWC global and SE
              pools): channel blocks of up to 64 accumulated in vector
              registers across the reduction (``reduce.py``)
============  =====================================================================

What a scheduler may answer, and how a failed one is undone, is shared with the
GPU defaults (``qidao/compiler/defaults.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from qidao.compiler.defaults import NotApplicable, attempt, kind_of
from qidao.compiler.schedule import Schedule

__all__ = ["default_schedule"]

Scheduler = Callable[[Schedule, str, int], str]


def _schedulers(amx: bool) -> dict[str, Scheduler]:
    from qidao.compiler.targets.cpu.defaults.loops import (
        schedule_elementwise,
        schedule_rows,
    )
    from qidao.compiler.targets.cpu.defaults.matmul import schedule_matmul
    from qidao.compiler.targets.cpu.defaults.matmul_blockq import (
        schedule_matmul_blockq,
    )
    from qidao.compiler.targets.cpu.defaults.matmul_integer import (
        schedule_matmul_bf16,
        schedule_matmul_integer,
    )
    from qidao.compiler.targets.cpu.defaults.pool import schedule_pool
    from qidao.compiler.targets.cpu.defaults.reduce import schedule_reduce
    from qidao.runtime.amx import amx_bf16_available

    def conv(s: Schedule, kernel: str, threads: int) -> str:
        from qidao.compiler.targets.cpu.defaults.conv import schedule_conv
        from qidao.compiler.targets.cpu.defaults.depthwise import (
            is_depthwise_kernel,
            schedule_depthwise,
        )

        if is_depthwise_kernel(s, kernel):
            return f"depthwise, {schedule_depthwise(s, kernel, threads)}"
        done = schedule_conv(s, kernel, threads)
        if done is None:
            raise NotApplicable("the loops are not a conv2d nest the tile handles")
        return done

    return {
        "matmul": schedule_matmul,
        "matmul_integer": functools.partial(schedule_matmul_integer, amx=amx),
        "matmul_bf16": functools.partial(
            schedule_matmul_bf16, amx=amx and amx_bf16_available()
        ),
        "matmul_blockq": schedule_matmul_blockq,
        "conv2d": conv,
        "rows": schedule_rows,
        "elementwise": schedule_elementwise,
        "pool": schedule_pool,
        "reduce": schedule_reduce,
    }


def _kind(s: Schedule, kernel: str, ops: str) -> str:
    """``kind_of(ops)``, except that a reduction lowered with its last axis
    innermost (its accumulator in the output, not a row's ``iter_args``) is a
    ``reduce`` kernel, not ``rows``."""
    from qidao.compiler.targets.cpu.defaults.reduce import is_reduce_kernel

    kind = kind_of(ops)
    if kind == "rows" and is_reduce_kernel(s, kernel):
        return "reduce"
    return kind


def default_schedule(s: Schedule, threads: int, amx: bool = False) -> dict[str, str]:
    """Apply the default schedule of each kernel of ``s``; kernel -> what was done
    (or ``"none: <reason>"``). ``amx``: int8 matmuls may use AMX tiles (the CPU
    target's ``amx`` option), and bfloat16 matmuls too where the CPU has
    AMX-BF16."""
    schedulers = _schedulers(amx)
    report: dict[str, str] = {}
    for kernel, ops in s.kernels().items():
        kind = _kind(s, kernel, ops)
        scheduler = schedulers.get(kind)
        if scheduler is None:
            report[kernel] = f"none: no default schedule for {kind} kernels"
            continue
        done = attempt(
            s,
            kernel,
            functools.partial(scheduler, s, kernel, threads),
            failed=f"the {kind} schedule failed ({{err}})",
        )
        report[kernel] = done if done.startswith("none: ") else f"{kind}: {done}"
    return report
