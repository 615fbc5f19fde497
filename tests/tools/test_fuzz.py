"""``qidao fuzz``, the command (``qidao/tools/fuzz.py``; issue 12, item 6): it prints
the counts and every failure with the line that reproduces it, writes the CSV, and
exits 1 on a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.tools.cli import main


def test_the_command_prints_counts_writes_csv_and_fails_on_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fuzz.csv"
    argv = ["fuzz", "--kinds", "records", "selftest-raw", "--cases", "1"]
    assert main([*argv, "--csv", str(path)]) == 1
    out = capsys.readouterr().out
    assert "1 failure(s):" in out and "qidao fuzz --kinds selftest-raw --seed 0" in out
    assert path.read_text().splitlines()[0] == "kind,seed,status,seconds,detail"
