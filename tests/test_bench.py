"""The benchmark harness: runs in subprocesses, checks outputs, computes ratios.

Timings are never asserted; only that the harness measures what it claims.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qidao.compiler.bench import Result, _check, run_bench, speedups


def test_bench_runs_each_backend_in_its_own_process(tmp_path: Path) -> None:
    csv = tmp_path / "bench.csv"
    results = run_bench(
        ["call16"],
        ("torch", "qidao", "qidao-raw"),
        min_time=0.01,
        max_runs=50,
        csv_path=csv,
        progress=False,
    )
    assert [r.backend for r in results] == ["torch", "qidao", "qidao-raw"]
    assert all(not r.error and r.runs >= 5 and r.median_us > 0 for r in results)
    header = csv.read_text().splitlines()[0]
    assert header.startswith("workload,backend,threads,median_us")
    assert len(csv.read_text().splitlines()) == 4


def test_a_wrong_output_records_no_time() -> None:
    want = [np.arange(4, dtype=np.float32)]
    with pytest.raises(
        AssertionError, match=r"differs from the NumPy reference at index \(2,\)"
    ):
        _check("w", "b", [np.array([0, 1, 7, 3], np.float32)], want)


def test_speedup_is_torch_over_backend() -> None:
    rows = [Result("w", "torch", 1, 10.0, 5, 0.0), Result("w", "qidao", 1, 2.5, 5, 0.1)]
    assert speedups(rows)[("w", "qidao")] == pytest.approx(4.0)
