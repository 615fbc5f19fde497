"""Per-kernel times of a compiled model: the runtime side of ``instrument-kernels``.

``qidao.compile(model, profile=True)`` brackets each kernel call of the host program
with ``qidao_profile_start()`` / ``qidao_profile_stop(k, t)``; ``RUNTIME_IR`` (LLVM
IR, JIT-compiled beside the model) defines them: ``start`` reads
``clock_gettime(CLOCK_MONOTONIC)`` in nanoseconds, ``stop`` adds the time since ``t``
to ``@qidao_profile_ns[k]`` and counts the call in ``@qidao_profile_calls[k]``.
``KernelCounters`` reads and clears the two arrays through their JIT addresses.

A timer pair costs about two ``clock_gettime`` calls (tens of nanoseconds, vDSO):
noise for kernels of microseconds, visible on kernels of a few hundred nanoseconds.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from qidao.runtime.timing import median, time_calls

CAPACITY = 4096
"""The most kernels one profiled model may have."""

NS_GLOBAL = "qidao_profile_ns"
CALLS_GLOBAL = "qidao_profile_calls"

RUNTIME_IR = f"""
@{NS_GLOBAL} = global [{CAPACITY} x i64] zeroinitializer, align 64
@{CALLS_GLOBAL} = global [{CAPACITY} x i64] zeroinitializer, align 64

declare i32 @clock_gettime(i32, ptr)

define i64 @qidao_profile_start() {{
  %ts = alloca [2 x i64], align 8
  %r = call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %np = getelementptr inbounds [2 x i64], ptr %ts, i64 0, i64 1
  %n = load i64, ptr %np, align 8
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}}

define void @qidao_profile_stop(i64 %k, i64 %t0) {{
  %t1 = call i64 @qidao_profile_start()
  %d = sub i64 %t1, %t0
  %p = getelementptr inbounds [{CAPACITY} x i64], ptr @{NS_GLOBAL}, i64 0, i64 %k
  %v = load i64, ptr %p, align 8
  %v1 = add i64 %v, %d
  store i64 %v1, ptr %p, align 8
  %c = getelementptr inbounds [{CAPACITY} x i64], ptr @{CALLS_GLOBAL}, i64 0, i64 %k
  %w = load i64, ptr %c, align 8
  %w1 = add i64 %w, 1
  store i64 %w1, ptr %c, align 8
  ret void
}}
"""


class KernelCounters:
    """The per-kernel nanosecond and call counters, at their JIT addresses."""

    def __init__(self, ns_address: int, calls_address: int, kernels: int) -> None:
        if kernels > CAPACITY:
            raise ValueError(
                f"profile: {kernels} kernels, but the counters hold {CAPACITY}"
            )
        array = ctypes.c_int64 * CAPACITY
        self.ns = np.ctypeslib.as_array(array.from_address(ns_address))[:kernels]
        self.calls = np.ctypeslib.as_array(array.from_address(calls_address))[:kernels]

    def clear(self) -> None:
        self.ns[:] = 0
        self.calls[:] = 0


@dataclass(frozen=True)
class KernelTime:
    """One kernel: its name, the tg ops it computes, calls and median time per run."""

    kernel: str
    ops: str
    calls: int
    median_us: float


@dataclass(frozen=True)
class Profile:
    """Median per-kernel times over ``runs`` calls of the model, and the median
    time of a whole call (kernels + the host program: allocation, argument checks,
    the call through ctypes)."""

    kernels: list[KernelTime]
    total_us: float
    runs: int

    def __str__(self) -> str:
        kernel_sum = sum(k.median_us for k in self.kernels)
        width = max([len(k.kernel) for k in self.kernels] + [6])
        lines = [
            f"{'kernel':<{width}}  {'median':>11}  {'share':>6}  calls  ops",
            f"{'-' * width}  {'-' * 11}  {'-' * 6}  -----  ---",
        ]
        for k in sorted(self.kernels, key=lambda k: -k.median_us):
            share = k.median_us / self.total_us if self.total_us else 0.0
            lines.append(
                f"{k.kernel:<{width}}  {k.median_us:>8.2f} us  {share:>6.1%}  "
                f"{k.calls:>5}  {k.ops}"
            )
        rest = max(self.total_us - kernel_sum, 0.0)
        lines.append(
            f"{'(host)':<{width}}  {rest:>8.2f} us  "
            f"{rest / self.total_us if self.total_us else 0.0:>6.1%}         "
            "allocation, argument checks, the call itself"
        )
        lines.append(
            f"{'total':<{width}}  {self.total_us:>8.2f} us  "
            f"{'':>6}         median of {self.runs} calls"
        )
        return "\n".join(lines)


def measure(
    call: Callable[[], object],
    counters: KernelCounters,
    kernels: Sequence[tuple[str, str]],
    runs: int,
    warmup: int = 3,
) -> Profile:
    """Call ``call`` ``warmup`` + ``runs`` times; per-kernel medians over the runs.
    ``kernels`` is (name, ops) in counter order."""
    if runs < 1:
        raise ValueError(f"profile: runs must be at least 1, got {runs}")
    per_run: list[np.ndarray[tuple[int], np.dtype[np.int64]]] = []

    def read() -> None:
        per_run.append(counters.ns.copy())

    totals = time_calls(
        call,
        warmup=warmup,
        min_calls=runs,
        max_calls=runs,
        before=counters.clear,
        after=read,
    )
    calls = counters.calls.copy()
    times = np.stack(per_run)
    rows = [
        KernelTime(name, ops, int(calls[k]), float(np.median(times[:, k])) / 1e3)
        for k, (name, ops) in enumerate(kernels)
    ]
    return Profile(rows, median(totals) * 1e6, runs)
