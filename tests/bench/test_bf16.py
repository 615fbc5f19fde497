"""``qidao bench bf16``: bfloat16 models through qidao and PyTorch eager.

The tiny models go through the jobs in this process (``run_job_here``): a
feed-forward block and a one-layer BERT (parts of it in PyTorch), qidao's
bfloat16 outputs checked against PyTorch eager's bfloat16, an independent
implementation. The rest is the harness: the tolerance, what a compiled model's
bfloat16 kernels ran on, a failed check as an error row, the unknown-name error,
the table, the CSV and the exit code. Timings are never asserted.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from qidao.bench import bf16, bf16_models
from qidao.bench.bf16 import Bf16Row, Job
from qidao.tools.cli import main

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:qidao. running unsupported operator"),
]


def _bf16_hardware() -> str:
    """What ``qidao-bf16`` should run on here (``bf16=None``: where it exists)."""
    from qidao.runtime.amx import amx_bf16_available
    from qidao.runtime.cpu import host_has

    if not host_has("avx512bf16"):
        return "float32"
    return "AMX" if amx_bf16_available() else "AVX512_BF16"


@pytest.mark.parametrize(
    ("name", "job"),
    [
        *(("mlp-tiny", job) for job in bf16.JOBS),
        ("bert-tiny", "qidao-bf16"),
        ("bert-tiny", "qidao-bf16-f32"),
    ],
)
def test_a_tiny_model_s_job_checks_its_output(name: str, job: str) -> None:
    result = bf16.run_job_here(name, job, 1, min_time=0.0, max_runs=0)
    assert not result.error, result.error
    assert result.scale > 0
    if job.startswith("qidao"):
        assert result.compile_s > 0 and result.kernels
        assert result.err <= result.tol
    if job == "qidao-fp32":
        assert result.bf16_amx == result.bf16_avx512 == 0
        assert result.tol == pytest.approx(1e-3 * result.scale)
    if "bf16" in job:  # bfloat16 moved the output off the float32 model's
        assert result.err_fp32 > 1e-4 * result.scale_fp32
    if job == "qidao-bf16":
        amx, avx512 = result.bf16_amx, result.bf16_avx512
        assert amx is not None and avx512 is not None
        assert bf16_models.hardware(amx, avx512) == _bf16_hardware()
    if job == "qidao-bf16-f32":
        assert result.bf16_amx == result.bf16_avx512 == 0
    if job.startswith("qidao-bf16"):
        assert result.tol == bf16_models.bf16_tolerance(np.array([result.scale]))
        # on the tiny models qidao is PyTorch's bfloat16 to the last bit or one
        # rounding (the benchmark's 4 ulps are sized for the larger models)
        assert result.err <= bf16_models.bf16_ulp(result.scale)


def test_the_timing_loop_runs_and_reports_a_median() -> None:
    result = bf16.run_job_here("mlp-tiny", "torch-bf16", 1, 0.01, 5)
    assert not result.error, result.error
    assert 1 <= result.runs <= 5 and result.median_us > 0


def test_a_job_runs_in_a_worker_process() -> None:
    result = bf16.run_job("mlp-tiny", "torch-fp32", 1, 0.0, 0, timeout=300)
    assert not result.error, result.error
    assert result.scale > 0 and result.runs == 0


def test_the_bf16_tolerance_is_ulps_at_the_largest_magnitude() -> None:
    assert bf16_models.bf16_ulp(1.0) == 2**-7
    assert bf16_models.bf16_ulp(1.99) == 2**-7
    assert bf16_models.bf16_ulp(-4.88) == 2**-5
    assert bf16_models.bf16_ulp(0.0) == 0.0
    want = np.array([[-4.88, 1.0], [0.5, 3.0]], dtype=np.float32)
    assert bf16_models.bf16_tolerance(want) == 4 * 2**-5
    # between 2**-6 and 2**-5 of the largest magnitude, wherever it lies
    for largest in (0.3, 1.0, 1.9, 7.5, 1000.0):
        tol = bf16_models.bf16_tolerance(np.array([largest]))
        assert 2**-6 * largest < tol <= 2**-5 * largest


def test_the_hardware_comes_from_the_default_schedule_s_text() -> None:
    def compiled(*lines: str) -> Any:
        part = SimpleNamespace(
            stats={"default_schedule": {f"k{i}": t for i, t in enumerate(lines)}}
        )
        return SimpleNamespace(compiled=None, parts=[part, part])

    amx = "matmul_bf16: 32x32 blocks of float32 C in AMX tiles, tdpbf16ps, ..."
    avx = "matmul_bf16: 8x32 register tile of C, vdpbf16ps, ..."
    none = "none: one thread: no loop runs in parallel"
    assert bf16_models.bf16_counts(compiled(amx, avx, none)) == (2, 2)
    assert bf16_models.bf16_counts(compiled(none)) == (0, 0)
    assert bf16_models.hardware(2, 0) == "AMX"
    assert bf16_models.hardware(0, 3) == "AVX512_BF16"
    assert bf16_models.hardware(1, 1) == "AMX+AVX512_BF16"
    assert bf16_models.hardware(0, 0) == "float32"
    line = bf16_models.cpu_flags()
    assert line.startswith("CPU: ") and "avx512_bf16 " in line and "amx_bf16 " in line


def test_a_failed_check_is_an_error_row_never_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from qidao.frontend.torch.backend import TorchCompiled

    right = TorchCompiled.__call__

    def wrong(self: Any, *args: Any) -> Any:
        return right(self, *args) * 2

    monkeypatch.setattr(TorchCompiled, "__call__", wrong)
    (row,) = bf16.run_bf16(
        ["mlp-tiny"], min_time=0.0, max_runs=0, progress=False, runner=bf16.run_job_here
    )
    assert [e.split(":")[0] for e in row.errors] == [
        "qidao-fp32",
        "qidao-bf16",
        "qidao-bf16-f32",
    ]
    assert "mismatch: differs from PyTorch eager's bfloat16" in row.errors[1]
    assert math.isnan(row.qidao_bf16_us) and math.isnan(row.qidao_fp32_us)
    assert not math.isnan(row.torch_bf16_vs_fp32)  # PyTorch's jobs passed
    table = bf16.format_table([row])
    assert "FAILED qidao-bf16: mismatch" in table
    assert "0 of 1 model(s) passed; failed: mlp-tiny" in table


def test_the_conversion_path_must_compute_no_bf16_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bf16, "bf16_counts", lambda compiled: (1, 0))
    result = bf16.run_job_here("mlp-tiny", "qidao-bf16-f32", 1, 0.0, 0)
    assert result.error.startswith("mismatch: bf16=False, yet 1 kernel(s)")


def test_an_unknown_model_is_an_error_naming_the_models(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "bf16", "mlp", "bert3"]) == 2
    err = capsys.readouterr().err
    assert "unknown bf16 model 'bert3'" in err
    for name in bf16_models.MODELS:
        assert name in err
    assert bf16_models.DEFAULT_MODELS == ("mlp", "bert", "gpt2")
    with pytest.raises(ValueError, match="unknown bf16 model 'nope'"):
        bf16.run_bf16(["mlp-tiny", "nope"], progress=False)  # before any job
    assert (
        "unknown bf16 model" in bf16.run_job_here("nope", "torch-fp32", 1, 0, 0).error
    )


def _rows() -> list[Bf16Row]:
    good = Bf16Row(
        "mlp",
        1,
        torch_fp32_us=8_000.0,
        torch_bf16_us=2_000.0,
        qidao_fp32_us=6_000.0,
        qidao_bf16_us=1_000.0,
        qidao_bf16_f32_us=4_000.0,
        bf16_amx=2,
        bf16_avx512=0,
        bf16_err=0.01,
        bf16_f32_err=0.02,
        bf16_tol=0.125,
        bf16_scale=5.0,
        qidao_bf16_vs_fp32=0.05,
        torch_bf16_vs_fp32=0.04,
        float_scale=5.0,
        cpu="CPU: a test CPU",
    )
    bad = Bf16Row(
        "bert",
        1,
        torch_fp32_us=30_000.0,
        torch_bf16_us=9_000.0,
        errors=("qidao-bf16: compile error: ValueError: no",),
        cpu="CPU: a test CPU",
    )
    return [good, bad]


def test_the_table_has_the_ratios_errors_hardware_and_failures() -> None:
    table = bf16.format_table(_rows())
    lines = table.splitlines()
    assert lines[0] == "CPU: a test CPU"
    assert lines[1].split()[:2] == ["model", "thr"]
    mlp = next(line for line in lines if line.startswith("mlp"))
    assert "8.00 ms" in mlp and "1.00 ms" in mlp
    # eager16/q16 2x, q32/q16 6x, q16f/q16 4x, eager32/q16 8x
    assert mlp.split()[12:16] == ["2.00x", "6.00x", "4.00x", "8.00x"]
    assert "2.0e-03 (2.5e-02)" in mlp and "4.0e-03" in mlp and "1.0e-02" in mlp
    assert mlp.endswith("AMX (2 kernels)")
    bert = next(line for line in lines if line.startswith("bert"))
    assert "—" in bert and "30.00 ms" in bert
    assert "FAILED qidao-bf16: compile error: ValueError: no" in table
    assert "1 of 2 model(s) passed; failed: bert" in table


def test_the_csv_has_a_line_per_model_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "out" / "bf16.csv"
    bf16.write_csv(_rows(), path)
    with path.open() as f:
        records = list(csv.DictReader(f))
    assert [r["model"] for r in records] == ["mlp", "bert"]
    mlp, bert = records
    assert mlp["summary"].startswith("Linear(768, 3072)")
    assert float(mlp["torch_bf16_over_qidao_bf16"]) == pytest.approx(2.0)
    assert float(mlp["qidao_fp32_over_qidao_bf16"]) == pytest.approx(6.0)
    assert float(mlp["qidao_bf16_f32_over_qidao_bf16"]) == pytest.approx(4.0)
    assert float(mlp["torch_fp32_over_qidao_bf16"]) == pytest.approx(8.0)
    assert mlp["bf16_hardware"] == "AMX" and mlp["bf16_amx_kernels"] == "2"
    assert float(mlp["bf16_rel_err"]) == pytest.approx(0.002)
    assert float(mlp["bf16_err_ulps"]) == pytest.approx(0.01 / 2**-5)
    assert mlp["cpu"] == "CPU: a test CPU"
    assert bert["qidao_bf16_us"] == "" and bert["bf16_hardware"] == ""
    assert bert["error"].startswith("qidao-bf16:")


def test_a_failed_job_fails_the_command_and_a_failed_build_skips_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[tuple[str, str]] = []

    def fake(name: str, job: str, threads: int, *args: object, **kw: object) -> Job:
        ran.append((name, job))
        if name == "bert-tiny" and job == "torch-bf16":
            return Job(name, job, threads, error="build error: RuntimeError: x")
        if job == "qidao-bf16":
            return Job(name, job, threads, error="mismatch: differs")
        return Job(name, job, threads, compile_s=1.0, median_us=100.0, runs=5)

    monkeypatch.setattr(bf16, "run_job", fake)
    out = tmp_path / "bf16.csv"
    assert main(["bench", "bf16", "mlp-tiny", "bert-tiny", "--csv", str(out)]) == 1
    assert ran == [
        *(("mlp-tiny", job) for job in bf16.JOBS),
        ("bert-tiny", "torch-fp32"),
        ("bert-tiny", "torch-bf16"),
    ]
    printed = capsys.readouterr().out
    assert printed.startswith("CPU: ")
    assert "FAILED qidao-bf16: mismatch: differs" in printed
    assert "FAILED qidao-fp32: skipped: torch-bf16 failed to build" in printed
    assert "0 of 2 model(s) passed" in printed
    assert out.exists()
    assert main(["bench", "bf16", "mlp-tiny", "--backends", "torch"]) == 2
