"""The PNG of ``qidao bench-cuda``, drawn from rows made here (no GPU, no timing):
a full run of the targets suite, and a run where nothing was measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.bench.cuda.plot import plot_suite
from qidao.bench.cuda.results import GpuResult

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def targets_rows() -> list[GpuResult]:
    nbytes = 8 << 26
    rows = [
        GpuResult(
            "chain26",
            "qidao",
            150.0,
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
        GpuResult("copy26", "qidao", 140.0, 9, 1, 0, 0.0, 0, nbytes, "H200"),
        GpuResult("copy26", "memcpy", 130.0, 9, 0, 0, 0.0, 0, nbytes, "H200"),
        GpuResult("copy26", "torch", 135.0, 9, 0, 0, 0.0, 0, nbytes, "H200"),
        GpuResult(
            "softmax8192",
            "qidao",
            400.0,
            9,
            1,
            0,
            0.0,
            0,
            nbytes,
            "H200",
            target="vs_torch>=1",
        ),
        GpuResult("softmax8192", "torch", 300.0, 9, 0, 0, 0.0, 0, nbytes, "H200"),
        GpuResult(
            "matmul4096",
            "qidao",
            9000.0,
            9,
            2,
            0,
            0.0,
            1,
            0,
            "H200",
            target="vs_torch>=0.9",
        ),
        GpuResult("matmul4096", "torch", 8000.0, 9, 0, 0, 0.0, 1, 0, "H200"),
        GpuResult(
            "matmul4096_tf32",
            "qidao",
            error="not built: no tensor_cores",
            target="vs_torch>=0.7",
        ),
        GpuResult("matmul4096_tf32", "torch", 2000.0, 9, 0, 0, 0.0, 1, 0, "H200"),
        GpuResult(
            "resnet50",
            "qidao",
            error="compile: CudaEmitError: ...",
            target="vs_torch>=1",
        ),
        GpuResult("resnet50", "torch", 30000.0, 9, 0, 0, 0.0, 0, 0, "H200"),
    ]
    return rows


def test_the_plot_of_a_targets_run_is_written(tmp_path: Path) -> None:
    path = tmp_path / "plots" / "targets.png"
    plot_suite(targets_rows(), path)
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 10_000


def test_a_run_with_nothing_measured_still_plots(tmp_path: Path) -> None:
    rows = [
        GpuResult("chain26", "qidao", error="timed out", target="of_copy>=0.85"),
        GpuResult("bert", "qidao", error="skipped: budget", target="vs_torch>=1"),
    ]
    path = tmp_path / "empty.png"
    plot_suite(rows, path)
    assert path.read_bytes()[:8] == PNG
