"""``qidao bench-cuda`` without a GPU: the no-device message, a row measured on the
CPU emulator with a fake timer, the worker processes (a failed row, then a fresh
worker; a row not built, and the same worker goes on), the suites, the run's
budget, and the CSV and table (ratios, the copy bandwidth, the targets)."""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from qidao.bench.cuda import bench as bench_cuda
from qidao.bench.cuda import measure as cuda_measure
from qidao.bench.cuda.bench import GpuResult, format_table, measure, write_csv
from qidao.bench.cuda.results import copy_bandwidth, failures, of_copy
from qidao.bench.cuda.suites import SUITES
from qidao.tools import bench_cuda as bench_cuda_command
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


@pytest.mark.parametrize("args", [["chain"], ["--suite", "targets"]])
def test_no_cuda_device_is_said_and_exits_3(
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(
        "qidao.runtime.cuda.cuda_unavailable_reason", lambda: "no GPU in this test"
    )
    assert cli_main(["bench-cuda", *args]) == 3
    assert (
        "qidao bench-cuda: no CUDA device: no GPU in this test"
        in capsys.readouterr().err
    )


def test_list_and_unknown_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench-cuda", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tiled2048" in out and "chain24" in out and "softmax4096" in out
    assert f"suite targets: {' '.join(SUITES['targets'])}" in out
    assert "issue13" not in out  # the old names are accepted, not listed
    assert cli_main(["bench-cuda", "nope", "--device", "emulate"]) == 2
    assert "unknown GPU workload(s) nope" in capsys.readouterr().err
    assert (
        cli_main(["bench-cuda", "chain", "--device", "emulate", "--backends", "torch"])
        == 2
    )
    assert cli_main(["bench-cuda", "--suite", "nope", "--device", "emulate"]) == 2
    assert "unknown suite 'nope'; choose from targets" in capsys.readouterr().err
    assert cli_main(["bench-cuda", "chain", "--suite", "targets"]) == 2
    assert "name workloads or a --suite, not both" in capsys.readouterr().err


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


@needs_gxx
def test_a_row_not_built_lets_its_worker_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row that fails before touching the device (here: not built) is reported
    and the same worker measures the next one (exit 0, not 4)."""
    real = cuda_measure.not_built_reason
    monkeypatch.setattr(
        cuda_measure,
        "not_built_reason",
        lambda w: "not built: in this test" if w.name == "chain" else real(w),
    )
    out = io.StringIO()
    with redirect_stdout(out):
        code = cuda_measure.worker(
            ["emulate", "0", "3", "chain:qidao", "softmax:qidao"]
        )
    assert code == 0
    rows = [
        GpuResult.from_json(line[len(cuda_measure.ROW_TAG) :])
        for line in out.getvalue().splitlines()
    ]
    assert [(r.workload, r.error) for r in rows] == [
        ("chain", "not built: in this test"),
        ("softmax", ""),
    ]
    assert rows[0].not_built and failures(rows) == []


def test_the_budget_skips_the_rows_left() -> None:
    rows = bench_cuda.run_bench_cuda(
        ["chain26_small", "copy26_small"],
        ("qidao",),
        "emulate",
        budget=0.0,
        progress=False,
    )
    assert [(r.workload, r.error) for r in rows] == [
        ("chain26_small", "skipped: the run's budget of 0 s was spent"),
        ("copy26_small", "skipped: the run's budget of 0 s was spent"),
    ]
    assert failures(rows) == rows


def test_a_row_past_its_time_or_the_budget_is_stopped() -> None:
    """The worker is killed mid-row (here: while it starts) and the row says why."""
    (row,) = bench_cuda.run_bench_cuda(
        ["chain"], ("qidao",), "emulate", timeout=0.2, progress=False
    )
    assert row.error == "timed out: no result within 0.2 s"
    rows = bench_cuda.run_bench_cuda(
        ["chain26_small", "copy26_small"],
        ("qidao",),
        "emulate",
        progress=False,
        budget=0.2,
    )
    assert [r.error for r in rows] == [
        "stopped: the run's budget of 0.2 s ran out during this row",
        "skipped: the run's budget of 0.2 s was spent",
    ]


def test_pairs_and_row_timeouts() -> None:
    assert list(
        bench_cuda.pairs(["copy26", "chain26", "bogus"], ("qidao", "memcpy"))
    ) == [
        ("copy26", "qidao"),
        ("copy26", "memcpy"),
        ("chain26", "qidao"),
        ("bogus", "qidao"),
        ("bogus", "memcpy"),
    ]
    assert bench_cuda.row_timeout("chain", 60.0) == 60.0  # no budget of its own
    assert bench_cuda.row_timeout("resnet50", 60.0) == 180.0  # its own is longer
    assert bench_cuda.row_timeout("resnet50", 900.0) == 900.0  # --timeout is longer


def fake_suite_rows(workloads: Sequence[str]) -> list[GpuResult]:
    """What ``run_bench_cuda`` would give, without running anything: each
    workload's qidao row, the tensor-core ones not built."""
    rows = []
    for name in workloads:
        if "tf32" in name or "fp16" in name:
            rows.append(GpuResult(name, "qidao", error="not built: no tensor_cores"))
        else:
            rows.append(GpuResult(name, "qidao", 10.0, 3, 1, device="emulator"))
    return rows


def test_the_targets_suite_runs_exactly_its_workloads_and_plots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    seen: list[Sequence[str]] = []

    def run(
        workloads: Sequence[str],
        backends: Sequence[str],
        device: str,
        min_time: float,
        max_runs: int,
        timeout: float,
        csv_path: Path,
        **kwargs: Any,
    ) -> list[GpuResult]:
        seen.append(workloads)
        rows = fake_suite_rows(workloads)
        write_csv(rows, csv_path)
        return rows

    monkeypatch.setattr(bench_cuda_command, "run_bench_cuda", run)
    path = tmp_path / "targets.csv"
    argv = ["bench-cuda", "--suite", "targets-small", "--device", "emulate"]
    # the not-built rows are no failure: exit 0
    assert cli_main([*argv, "--csv", str(path)]) == 0
    assert seen == [list(SUITES["targets-small"])]
    assert [n.removesuffix("_small") for n in seen[0]] == [
        "chain26",
        "copy26",
        "softmax8192",
        "layernorm8192",
        "matmul4096",
        "matmul4096_tf32",
        "matmul4096_fp16",
        "resnet50",
        "bert",
    ]
    png = path.with_suffix(".png")  # next to the CSV
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with path.open() as f:
        assert [r["workload"] for r in csv.DictReader(f)] == seen[0]


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
    assert "TF32 off" in table.splitlines()[1]
    assert "0.25x" in table and "1,073.7" in table
    assert f"{'chain24':<22} torch  FAILED: RuntimeError: out of memory" in table


def test_copy_bandwidth_and_targets(tmp_path: Path) -> None:
    """The chain's GB/s over the best copy of as many bytes, and each qidao row's
    target met or not, in the CSV and the table."""
    nbytes = 8 << 26
    gb = [
        GpuResult("copy26", "qidao", 150.0, 9, 1, 0, 0.0, 0, nbytes, "H200"),
        GpuResult("copy26", "memcpy", 140.0, 9, 0, 0, 0.0, 0, nbytes, "H200"),
        GpuResult("copy26", "torch", 125.0, 9, 0, 0, 0.0, 0, nbytes, "H200"),
        GpuResult(
            "chain26",
            "qidao",
            250.0,
            9,
            1,
            0,
            0.0,
            0,
            nbytes,
            "H200",
            target="of_copy>=0.85",
        ),
        GpuResult("chain26", "torch", 500.0, 9, 0, 0, 0.0, 0, nbytes, "H200"),
        GpuResult(
            "matmul4096",
            "qidao",
            100.0,
            9,
            2,
            0,
            0.0,
            1,
            0,
            "H200",
            target="vs_torch>=0.9",
        ),
        GpuResult("matmul4096", "torch", 95.0, 9, 0, 0, 0.0, 1, 0, "H200"),
        GpuResult(
            "matmul4096_fp16",
            "qidao",
            error="not built: no option",
            target="vs_torch>=0.7",
        ),
    ]
    copy_gb = nbytes / 125e-6 / 1e9  # the best of memcpy and torch, not qidao's copy
    assert copy_bandwidth(gb) == {nbytes: pytest.approx(copy_gb)}
    fractions = of_copy(gb)
    assert fractions[("chain26", "qidao")] == pytest.approx(125.0 / 250.0)
    assert ("matmul4096", "qidao") not in fractions
    path = tmp_path / "targets.csv"
    write_csv(gb, path)
    with path.open() as f:
        rows = {(r["workload"], r["backend"]): r for r in csv.DictReader(f)}
    chain = rows[("chain26", "qidao")]
    assert (chain["of_copy"], chain["target"], chain["meets"]) == (
        "0.500",
        "of_copy>=0.85",
        "no",
    )
    matmul = rows[("matmul4096", "qidao")]
    assert (matmul["vs_torch"], matmul["meets"]) == ("0.950", "yes")
    assert rows[("matmul4096_fp16", "qidao")]["meets"] == ""
    table = format_table(gb)
    assert f"copy bandwidth ({nbytes:,} bytes a call" in table
    assert f"{copy_gb:,.1f} GB/s" in table
    assert f"  {'chain26':<22} {'of_copy>=0.85':<15}  0.500  NOT met" in table
    assert f"  {'matmul4096':<22} {'vs_torch>=0.9':<15}  0.950  met" in table
    assert f"  {'matmul4096_fp16':<22} {'vs_torch>=0.7':<15} not built" in table
    assert "not built (not counted as failures): matmul4096_fp16/qidao" in table
    assert failures(gb) == []


@pytest.mark.parametrize(
    ("old", "new"), [("issue13", "targets"), ("issue13-small", "targets-small")]
)
def test_the_old_suite_names_still_work_with_a_note(
    old: str,
    new: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[Sequence[str]] = []
    plotted: list[str | None] = []

    def run(workloads: Sequence[str], *args: Any, **kwargs: Any) -> list[GpuResult]:
        seen.append(workloads)
        return []

    def plot_for(suite: str | None) -> Callable[[object, Path], None]:
        plotted.append(suite)
        return lambda rows, path: None

    monkeypatch.setattr(bench_cuda_command, "run_bench_cuda", run)
    monkeypatch.setattr("qidao.bench.cuda.plot.plot_for", plot_for)
    csv_path = str(tmp_path / "out.csv")
    assert (
        cli_main(
            ["bench-cuda", "--suite", old, "--device", "emulate", "--csv", csv_path]
        )
        == 0
    )
    assert seen == [list(SUITES[new])]
    assert plotted == [new]
    err = capsys.readouterr().err
    assert f"--suite {old} is deprecated: it is now --suite {new}" in err
    assert err.count("deprecated") == 1
