"""How qidao times a call: the one timing loop of every measurement.

The benchmarks (``qidao bench``, ``bench train``, ``bench checkpoint``, the ladder,
the zoo), the autotuner's trials, the convolution-algorithm selection and
``qidao profile`` all time through :func:`time_calls`, so their numbers are made the
same way and can be compared:

1. ``warmup`` untimed calls (the first call's lazy work: page faults, caches, a
   thread pool's start);
2. timed calls, each on its own ``perf_counter_ns`` reading, until there are at least
   ``min_calls`` of them **and** ``min_time`` seconds have passed, or ``max_calls``
   were made;
3. ``budget_s`` stops a slow candidate early (after at least one timed call): the
   tuner's bound on a trial.

``before`` and ``after`` run around each timed call, outside its time (the profiler
clears and reads its kernel counters there). The result is every call's seconds;
quote :func:`median` of it (the machines are noisy: a median, never a mean or a
minimum). A GPU's kernels are timed by CUDA events instead (``runtime/cuda.py``'s
``event_times``): the host's clock would time the launch, not the kernel.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_calls(
    call: Callable[[], Any],
    *,
    warmup: int = 1,
    min_calls: int = 5,
    min_time: float = 0.0,
    max_calls: int = 10_000,
    budget_s: float = math.inf,
    before: Callable[[], Any] | None = None,
    after: Callable[[], Any] | None = None,
) -> list[float]:
    """The seconds of each timed call of ``call`` (see the module docstring)."""
    if min_calls < 1 or max_calls < 1:
        raise ValueError(
            f"time_calls: min_calls and max_calls must be at least 1, got "
            f"{min_calls} and {max_calls}"
        )
    for _ in range(warmup):
        call()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max_calls:
        if before is not None:
            before()
        t0 = time.perf_counter_ns()
        call()
        times.append((time.perf_counter_ns() - t0) * 1e-9)
        if after is not None:
            after()
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s or (len(times) >= min_calls and elapsed >= min_time):
            break
    return times


def median(times: Sequence[float]) -> float:
    """The median of ``times`` (NaN for none): the number every report quotes."""
    return statistics.median(times) if times else math.nan
