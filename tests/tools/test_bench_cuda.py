"""``qidao bench-cuda`` without a GPU: the no-device message, a row measured on the
CPU emulator with a fake timer, the worker processes (a failed row, then a fresh
worker), and the CSV and table."""

from __future__ import annotations

import csv
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from qidao.tools import bench_cuda
from qidao.tools.bench_cuda import GpuResult, format_table, measure, write_csv
from qidao.tools.cli import main as cli_main

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ (the emulator) is not on PATH"
)


def fake_timer(seconds: list[float]) -> bench_cuda.Timer:
    def timer(
        call: Callable[[], object], min_time: float, max_runs: int
    ) -> list[float]:
        call()
        return seconds

    return timer


def test_no_cuda_device_is_said_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        "qidao.runtime.cuda.cuda_unavailable_reason", lambda: "no GPU in this test"
    )
    assert cli_main(["bench-cuda", "chain"]) == 3
    assert (
        "qidao bench-cuda: no CUDA device: no GPU in this test"
        in capsys.readouterr().err
    )


def test_list_and_unknown_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench-cuda", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tiled2048" in out and "chain24" in out and "softmax4096" in out
    assert cli_main(["bench-cuda", "nope", "--device", "emulate"]) == 2
    assert "unknown GPU workload(s) nope" in capsys.readouterr().err
    assert (
        cli_main(["bench-cuda", "chain", "--device", "emulate", "--backends", "torch"])
        == 2
    )


@needs_gxx
def test_measure_on_the_emulator_with_a_fake_timer() -> None:
    row = measure("chain", "qidao", "emulate", fake_timer([3e-3, 1e-3, 2e-3]))
    assert row.error == "" and row.device == "emulator"
    assert row.median_us == pytest.approx(2000.0) and row.runs == 3
    assert row.launches == 1 and row.rel_err is not None and row.rel_err < 1e-6
    assert row.gb_per_s == pytest.approx(8000 / 2e-3 / 1e9)


@needs_gxx
def test_a_failed_row_ends_its_worker_and_a_fresh_one_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "gpu.csv"
    rows = bench_cuda.run_bench_cuda(
        ["chain", "bogus", "softmax"],
        ("qidao",),
        "emulate",
        min_time=0.0,
        max_runs=3,
        csv_path=path,
        progress=False,
    )
    assert [(r.workload, bool(r.error)) for r in rows] == [
        ("chain", False),
        ("bogus", True),
        ("softmax", False),
    ]
    assert "unknown GPU workload 'bogus'" in rows[1].error
    with path.open() as f:
        written = list(csv.DictReader(f))
    assert [r["workload"] for r in written] == ["chain", "bogus", "softmax"]
    assert written[0]["device"] == "emulator" and float(written[0]["median_us"]) > 0


def test_csv_and_table(tmp_path: Path) -> None:
    flops = 2 * 1024**3
    results = [
        GpuResult("tiled1024", "qidao", 2000.0, 50, 2, 1.5, 1e-7, flops, 0, "H200"),
        GpuResult("tiled1024", "torch", 500.0, 200, 0, 0.0, 1e-7, flops, 0, "H200"),
        GpuResult("chain24", "qidao", 100.0, 200, 1, 0.5, 0.0, 0, 8 << 24, "H200"),
        GpuResult("chain24", "torch", error="RuntimeError: out of memory"),
    ]
    path = tmp_path / "out" / "gpu.csv"
    write_csv(results, path)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == bench_cuda.CSV_COLUMNS
    assert rows[0]["vs_torch"] == "0.250" and rows[1]["vs_torch"] == "1.000"
    assert float(rows[0]["gflop_per_s"]) == pytest.approx(flops / 2e-3 / 1e9, rel=1e-4)
    assert float(rows[2]["gb_per_s"]) == pytest.approx((8 << 24) / 1e-4 / 1e9, rel=1e-4)
    assert rows[2]["vs_torch"] == "" and rows[3]["median_us"] == ""
    assert rows[3]["error"] == "RuntimeError: out of memory"
    table = format_table(results)
    assert table.splitlines()[0] == "device: H200"
    assert "0.25x" in table and "1,073.7" in table
    assert "chain24            torch  FAILED: RuntimeError: out of memory" in table
