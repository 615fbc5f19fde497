"""``qidao fuzz`` (issue 12, item 6): a short run of every kind finds no failure, and
the harness itself records a crash of native code, a hang and a raw error as such,
survives them (a fresh worker takes the next case) and exits 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.tools.cli import main
from qidao.tools.fuzz import format_counts, run_fuzz
from qidao.tools.fuzz_cases import KINDS


def test_a_short_run_of_every_kind_finds_no_failure() -> None:
    outcomes = run_fuzz(KINDS, cases=2, seed=0, timeout=120, progress=False)
    assert len(outcomes) == 2 * len(KINDS)
    assert {o.kind for o in outcomes} == set(KINDS)
    assert not [o for o in outcomes if o.failed], format_counts(outcomes)
    # the graph cases compare with ONNX Runtime: most compile and match
    graph = [o for o in outcomes if o.kind == "graph"]
    assert any(o.status == "ok" for o in graph), format_counts(outcomes)


def test_crash_hang_and_raw_error_are_recorded_and_survived(tmp_path: Path) -> None:
    kinds = ["selftest-crash", "selftest-hang", "selftest-raw", "schedule"]
    outcomes = run_fuzz(kinds, cases=1, seed=5, timeout=10, progress=False)
    status = {o.kind: o.status for o in outcomes}
    assert status == {
        "selftest-crash": "crash",
        "selftest-hang": "hang",
        "selftest-raw": "raw",
        "schedule": "ok",  # after a crash and a hang, a fresh worker
    }, format_counts(outcomes)
    raw = next(o for o in outcomes if o.kind == "selftest-raw")
    assert raw.detail.startswith("KeyError") and "--seed 5" in raw.reproduce()


def test_the_command_prints_counts_writes_csv_and_fails_on_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fuzz.csv"
    argv = ["fuzz", "--kinds", "records", "selftest-raw", "--cases", "1"]
    assert main([*argv, "--csv", str(path)]) == 1
    out = capsys.readouterr().out
    assert "1 failure(s):" in out and "qidao fuzz --kinds selftest-raw --seed 0" in out
    assert path.read_text().splitlines()[0] == "kind,seed,status,seconds,detail"
