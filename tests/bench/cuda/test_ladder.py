"""The GPU ladder (``qidao/bench/cuda/ladder.py``, ``--suite ladder``) without a
GPU: the rungs and their schedules, each small rung run on the CPU emulator and
checked against NumPy, its trace in the row (and replaying to the same result),
the tuned rung with and without records, the suite's selection and CSV, and the
ladder's plot from rows made here. With a GPU, the small ladder on the device
against PyTorch there."""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import subprocess
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import qidao
from qidao.bench.cuda import measure as cuda_measure
from qidao.bench.cuda.ladder import (
    LADDER,
    LADDER_SMALL,
    NAIVE_SIZE,
    RUNGS,
    SIZE,
    TUNE_COMMAND,
    rung_of,
)
from qidao.bench.cuda.measure import HostError, measure
from qidao.bench.cuda.plot import cublas_lines, plot_for, plot_ladder, plot_suite
from qidao.bench.cuda.results import GpuResult, failures, format_table, write_csv
from qidao.bench.cuda.suites import SUITES
from qidao.bench.cuda.workloads import TENSOR_CORES
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.compiler.tune.gpu_device import EMULATOR
from qidao.compiler.tune.gpu_templates import named_gpu_task
from qidao.compiler.tune.records import Record, append_records
from qidao.runtime.cuda import cuda_unavailable_reason
from qidao.tools import bench_cuda as bench_cuda_command

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ (the emulator) is not on PATH"
)
NO_GPU = cuda_unavailable_reason()
RUN = [n for n in LADDER_SMALL if rung_of(n) != "tuned"]
PNG = b"\x89PNG\r\n\x1a\n"


def one_call(call: Callable[[], object], min_time: float, max_runs: int) -> list[float]:
    call()
    return [1e-3]


def test_the_suites_are_the_rungs_in_order() -> None:
    assert SUITES["ladder"] == tuple(f"ladder_{r}" for r in RUNGS)
    assert SUITES["ladder-small"] == tuple(f"ladder_{r}_small" for r in RUNGS)
    assert RUNGS == ("naive", "bind", "shared", "register", "tensor_cores", "tuned")
    args = argparse.Namespace(suite="ladder", workloads=[])
    assert bench_cuda_command._workloads(args) == list(SUITES["ladder"])
    with pytest.raises(ValueError, match=r"unknown suite 'ladders'.*ladder-small"):
        bench_cuda_command._workloads(argparse.Namespace(suite="ladders", workloads=[]))


def test_the_rungs_schedules_and_sizes() -> None:
    by_rung = {rung_of(n): w for n, w in LADDER.items()}
    assert by_rung["naive"].schedule is None
    assert by_rung["naive"].flops_per_call == 2 * NAIVE_SIZE**3
    for rung in RUNGS[1:]:
        assert by_rung[rung].flops_per_call == 2 * SIZE**3, rung
    assert callable(by_rung["bind"].schedule) and callable(by_rung["shared"].schedule)
    for rung in ("register", "tensor_cores", "tuned"):
        assert by_rung[rung].schedule == "default", rung
    assert dict(by_rung["tensor_cores"].options) == {TENSOR_CORES: "tf32"}
    assert [w.precision for w in LADDER.values()].count("tf32") == 1
    assert by_rung["tuned"].tune_command == TUNE_COMMAND
    assert TUNE_COMMAND == "qidao tune matmul4096 --target cuda"
    for w in [*LADDER.values(), *LADDER_SMALL.values()]:
        assert w.backends == ("qidao", "torch") and w.timeout_s == 60.0, w.name
    with pytest.raises(ValueError, match="'matmul4096' is not a ladder rung"):
        rung_of("matmul4096")


@needs_gxx
@pytest.mark.parametrize("name", RUN)
def test_small_rungs_match_numpy_on_the_emulator(name: str) -> None:
    row = measure(name, "qidao", "emulate", one_call)  # checked against NumPy
    assert row.error == "" and row.rel_err is not None and row.rel_err < 1e-3
    w = LADDER_SMALL[name]
    assert row.precision == w.precision
    if w.schedule is None:
        assert row.schedule == ""
    else:
        assert row.schedule.startswith("s.") and "main_k0_matmul" in row.schedule


@needs_gxx
def test_a_rungs_trace_replays_to_the_same_program() -> None:
    w = LADDER_SMALL["ladder_bind_small"]
    row = measure(w.name, "qidao", "emulate", one_call)
    assert row.schedule.splitlines()[-1] == (
        's.bind("main_k0_matmul", "j_i", "threadIdx.x")'
    )
    again = qidao.compile(w.build(), target="cuda", schedule=row.schedule)
    first = qidao.compile(w.build(), target="cuda", schedule=w.schedule)
    assert isinstance(again, CompiledCuda) and isinstance(first, CompiledCuda)
    assert again.ir("cuda") == first.ir("cuda")
    x, y = w.inputs(np.random.default_rng(3))
    emulated = qidao.compile(
        w.build(), target="cuda", schedule=row.schedule, device="emulate"
    )
    w.check(emulated(x, y), w.reference(x, y))


@pytest.mark.parametrize("name", list(LADDER))
def test_the_full_size_rungs_compile_to_cuda(name: str) -> None:
    """At 4096 (no data, no device): only the naive rung is serial, the launches
    fit CUDA's limits, and only the tensor-core rung uses WMMA."""
    w = LADDER[name]
    compiled = qidao.compile(
        w.build(), target="cuda", schedule=w.schedule, **dict(w.options)
    )
    assert isinstance(compiled, CompiledCuda)
    serial = compiled.stats["serial_launches"]
    assert (serial != []) == (rung_of(name) == "naive"), serial
    for launch in compiled.program.launches:
        assert np.prod(launch.block) <= 1024, (name, launch.block)
        assert launch.grid[1] <= 65535 and launch.grid[2] <= 65535, (name, launch.grid)
    on_tensor_cores = "wmma::mma_sync" in compiled.ir("cuda")
    assert on_tensor_cores == (rung_of(name) == "tensor_cores")
    if rung_of(name) == "shared":
        assert "__shared__" in compiled.ir("cuda")


def test_the_tuned_rung_without_records_is_not_run_and_no_failure() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cuda_measure.worker(["emulate", "0", "3", "ladder_tuned_small:qidao"])
    (row,) = [
        GpuResult.from_json(line[len(cuda_measure.ROW_TAG) :])
        for line in out.getvalue().splitlines()
    ]
    assert code == 0
    assert LADDER_SMALL["ladder_tuned_small"].tune_command == (
        "qidao tune matmul64 --target cuda"
    )
    assert row.error == "not run: no records (qidao tune matmul64 --target cuda)"
    assert row.not_run and failures([row]) == []
    assert "not run (not counted as failures): ladder_tuned_small/qidao" in (
        format_table([row])
    )


def _records(path: Path, gpu: str) -> str:
    """A records file with one record of the 64^3 matmul on ``gpu``: the bind
    rung's trace. Returns the trace."""
    task = named_gpu_task("matmul64")
    assert task is not None
    w = LADDER_SMALL["ladder_bind_small"]
    trace = qidao.compile(w.build(), target="cuda", schedule=w.schedule).stats[
        "schedule"
    ]
    record = Record(
        task=task,
        threads=1,
        config={},
        trace=trace,
        kernel="main_k0_matmul",
        status="ok",
        times=[1e-3],
        gflops=1.0,
        target="cuda",
        gpu=gpu,
    )
    append_records(path, [record])
    return str(trace)


@needs_gxx
def test_the_tuned_rung_runs_the_records_trace(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    trace = _records(path, EMULATOR)
    out = io.StringIO()
    with redirect_stdout(out):
        code = cuda_measure.worker(
            ["emulate", "0", "3", f"--records={path}", "ladder_tuned_small:qidao"]
        )
    (row,) = [
        GpuResult.from_json(line[len(cuda_measure.ROW_TAG) :])
        for line in out.getvalue().splitlines()
    ]
    assert code == 0 and row.error == "" and row.rel_err is not None
    assert row.schedule.strip() == trace.strip()


def test_records_with_nothing_for_this_device_fail_the_tuned_rung(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h200.jsonl"
    _records(path, "NVIDIA H200 (sm_90)")
    with pytest.raises(HostError, match=r"records: .*main_k0_matmul: no record for"):
        measure("ladder_tuned_small", "qidao", "emulate", one_call, records=str(path))


def test_records_must_exist(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    bench_cuda_command.add_bench_cuda_parser(parser.add_subparsers())
    args = parser.parse_args(
        [
            *("bench-cuda", "--suite", "ladder-small", "--device", "emulate"),
            *("--records", str(tmp_path / "none.jsonl")),
        ]
    )
    with pytest.raises(ValueError, match=r"--records .*none.jsonl: no such file"):
        args.run(args)


def ladder_rows() -> list[GpuResult]:
    """A ladder run as a GPU might report it (made up here, for the plot only)."""
    big, small = 2 * SIZE**3, 2 * NAIVE_SIZE**3

    def row(
        rung: str, backend: str, us: float, flops: int = big, **kw: str
    ) -> GpuResult:
        precision = "tf32" if rung == "tensor_cores" else "fp32"
        return GpuResult(
            f"ladder_{rung}",
            backend,
            us,
            10,
            1,
            0.0,
            1e-7,
            flops,
            0,
            "H200",
            precision=precision,
            schedule='s.bind("main_k0_matmul", "i", "blockIdx.y")\n'
            if backend == "qidao"
            else "",
            **kw,
        )

    return [
        row("naive", "qidao", 5e5, small),
        row("naive", "torch", 10.0, small),
        row("bind", "qidao", 40_000.0),
        row("bind", "torch", 3000.0),
        row("shared", "qidao", 17_000.0),
        row("shared", "torch", 3100.0),
        row("register", "qidao", 5000.0),
        row("register", "torch", 2900.0),
        row("tensor_cores", "qidao", 1500.0),
        row("tensor_cores", "torch", 700.0),
        GpuResult(
            "ladder_tuned",
            "qidao",
            error=f"not run: no records ({TUNE_COMMAND})",
            flops_per_call=big,
            precision="fp32",
        ),
        row("tuned", "torch", 3000.0),
    ]


def test_the_ladder_plot_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = ladder_rows()
    lines = cublas_lines(rows)
    fp32 = [2 * SIZE**3 / (us * 1e-6) / 1e12 for us in (3000, 3100, 2900, 3000)]
    assert lines["fp32"] == pytest.approx(float(np.median(fp32)))
    assert lines["tf32"] == pytest.approx(2 * SIZE**3 / 700e-6 / 1e12)
    path = tmp_path / "plots" / "ladder.png"
    plot_ladder(rows, path)
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 10_000
    assert plot_for("ladder") is plot_ladder and plot_for("targets") is plot_suite
    assert plot_for(None) is plot_suite


def test_a_ladder_with_nothing_measured_still_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = [GpuResult("ladder_bind", "qidao", error="timed out")]
    assert cublas_lines(rows) == {}
    plot_ladder(rows, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").read_bytes()[:8] == PNG


def test_the_csv_has_each_rungs_trace_and_ratio(tmp_path: Path) -> None:
    path = tmp_path / "ladder.csv"
    write_csv(ladder_rows(), path)
    with path.open() as f:
        rows = {(r["workload"], r["backend"]): r for r in csv.DictReader(f)}
    register = rows[("ladder_register", "qidao")]
    assert register["schedule"] == 's.bind("main_k0_matmul", "i", "blockIdx.y")\n'
    assert register["vs_torch"] == "0.580"  # cuBLAS's 2,900 us over 5,000
    assert float(register["gflop_per_s"]) == pytest.approx(2 * SIZE**3 / 5e-3 / 1e9)
    assert rows[("ladder_tensor_cores", "qidao")]["precision"] == "tf32"
    assert rows[("ladder_tuned", "qidao")]["error"].startswith("not run: no records")


@pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA device: {NO_GPU}")
@pytest.mark.parametrize("name", RUN)
def test_small_rungs_on_the_gpu_match_pytorch_there(name: str) -> None:
    for backend in ("qidao", "torch"):
        row = measure(name, backend, "cuda", min_time=0.01, max_runs=10)
        assert row.error == "" and row.median_us > 0, (backend, row)
        assert row.rel_err is not None and row.rel_err < 1e-3, (backend, row)


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", [n for n in LADDER if rung_of(n) != "tuned"])
def test_nvcc_compiles_each_rung_warning_free(
    name: str, arch: str, tmp_path: Path
) -> None:
    w = LADDER[name]
    compiled = qidao.compile(
        w.build(), target="cuda", schedule=w.schedule, **dict(w.options)
    )
    source = tmp_path / f"{name}.cu"
    source.write_text(compiled.ir("cuda"))
    ptx = tmp_path / "k.ptx"
    cmd = [str(NVCC), f"-arch={arch}", "--ptx", "-o", str(ptx), str(source)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr
    assert ".entry" in ptx.read_text()
