"""The one timing loop (``qidao/runtime/timing.py``): how many calls it times, what
it leaves out of the times, and when it stops."""

from __future__ import annotations

import math
import time

import pytest

from qidao.runtime.timing import median, time_calls


class Calls:
    """A call that counts itself and takes ``seconds``."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.n = 0
        self.seconds = seconds

    def __call__(self) -> None:
        self.n += 1
        if self.seconds:
            time.sleep(self.seconds)


def test_warmup_calls_are_made_and_not_timed() -> None:
    call = Calls()
    times = time_calls(call, warmup=3, min_calls=4, max_calls=4)
    assert len(times) == 4 and call.n == 7


def test_it_times_at_least_min_calls_and_min_time() -> None:
    call = Calls(0.002)
    start = time.perf_counter()
    times = time_calls(call, warmup=0, min_calls=2, min_time=0.05)
    assert time.perf_counter() - start >= 0.05
    assert len(times) >= 2 and all(t >= 0.002 for t in times)
    quick = time_calls(Calls(), warmup=0, min_calls=7, min_time=0.0)
    assert len(quick) == 7


def test_max_calls_caps_and_budget_stops_early() -> None:
    assert (
        len(time_calls(Calls(), warmup=0, min_calls=5, min_time=10.0, max_calls=3)) == 3
    )
    slow = time_calls(Calls(0.02), warmup=0, min_calls=100, budget_s=0.05)
    assert 1 <= len(slow) < 10
    # at least one timed call, even when one call is over the budget
    assert len(time_calls(Calls(0.01), warmup=0, min_calls=5, budget_s=0.0)) == 1


def test_before_and_after_run_outside_each_timed_call() -> None:
    events: list[str] = []
    times = time_calls(
        lambda: events.append("call"),
        warmup=1,
        min_calls=2,
        max_calls=2,
        before=lambda: (events.append("before"), time.sleep(0.02)),
        after=lambda: (events.append("after"), time.sleep(0.02)),
    )
    assert events == ["call", "before", "call", "after", "before", "call", "after"]
    assert all(t < 0.015 for t in times)  # the hooks' sleeps are not in the times


def test_bad_counts_and_the_median() -> None:
    with pytest.raises(ValueError, match="min_calls and max_calls must be at least 1"):
        time_calls(Calls(), min_calls=0)
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert math.isnan(median([]))
