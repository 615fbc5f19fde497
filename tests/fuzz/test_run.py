"""The fuzzer's runner (``qidao/fuzz/run.py``; issue 12, item 6): it records a crash of
native code, a hang and a raw error as such, and survives them (a fresh worker takes
the next case)."""

from __future__ import annotations

from pathlib import Path

from qidao.fuzz.report import format_counts
from qidao.fuzz.run import run_fuzz


def test_crash_hang_and_raw_error_are_recorded_and_survived(tmp_path: Path) -> None:
    kinds = ["selftest-crash", "selftest-hang", "selftest-raw", "schedule"]
    # the hang costs the whole timeout; 6 s still leaves the schedule case, the first
    # compile of a fresh worker (1.2 s on an idle machine), room on a loaded one
    outcomes = run_fuzz(kinds, cases=1, seed=5, timeout=6, progress=False)
    status = {o.kind: o.status for o in outcomes}
    assert status == {
        "selftest-crash": "crash",
        "selftest-hang": "hang",
        "selftest-raw": "raw",
        "schedule": "ok",  # after a crash and a hang, a fresh worker
    }, format_counts(outcomes)
    raw = next(o for o in outcomes if o.kind == "selftest-raw")
    assert raw.detail.startswith("KeyError") and "--seed 5" in raw.reproduce()
