"""``qidao bench quant``: quantized models through qidao and ONNX Runtime.

The tiny zoo models go through the jobs in this process (``run_job_here``): a
statically quantized (QDQ) ResNet and a dynamically quantized GPT-2, with qidao's
int8 outputs checked against ONNX Runtime's, an independent implementation. The
rest is the harness: the quantized file's cache, the unknown-name error, the
table, the CSV and the exit code. Timings are never asserted.
"""

from __future__ import annotations

import csv
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")
pytest.importorskip("onnxruntime.quantization")

from qidao.bench import quant, quant_models
from qidao.bench.jobs import Mismatch
from qidao.bench.quant import Job, QuantRow
from qidao.tools.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("resnet-tiny", "ort-fp32"),
        ("resnet-tiny", "ort-int8"),
        ("resnet-tiny", "qidao-fp32"),  # gpt2-tiny's fp32 path: the zoo's test
        ("gpt2-tiny", "ort-int8"),
    ],  # qidao-int8: the next test
)
def test_a_tiny_model_s_job_checks_its_output(name: str, job: str) -> None:
    result = quant.run_job_here(name, job, 1, min_time=0.0, max_runs=0)
    assert not result.error, result.error
    assert result.compile_s > 0
    if job == "ort-fp32":  # against PyTorch eager
        assert result.err <= result.tol
    if job == "qidao-fp32":  # against ONNX Runtime's fp32
        assert result.err <= result.tol and result.kernels
    if job == "ort-int8":  # the quantization moved the output off the float's
        assert result.err_fp32 > 1e-4 * result.scale_fp32


def test_qidao_s_int8_is_onnxruntime_s_to_the_step() -> None:
    """Tighter than the benchmark's tolerance (sized for ResNet-50 and BERT): on
    the tiny models qidao's int8 output is ONNX Runtime's within one output step
    (static) or float32 rounding (dynamic), and far closer to it than the float
    model is."""
    static = quant.run_job_here("resnet-tiny", "qidao-int8", 1, 0.0, 0)
    dynamic = quant.run_job_here("gpt2-tiny", "qidao-int8", 1, 0.0, 0)
    for result in (static, dynamic):
        assert not result.error, result.error
        assert result.compile_s > 0 and result.kernels
        assert result.err <= result.tol
        assert result.err_fp32 > 1e-4 * result.scale_fp32  # it is int8, not float
        assert result.err < 0.1 * result.err_fp32
    assert (
        math.isfinite(static.step)
        and static.tol == quant_models.STATIC_STEPS * static.step
    )
    assert static.err <= static.step * 1.0001
    assert math.isnan(dynamic.step)
    assert dynamic.err <= 1e-5 * dynamic.scale
    # the dynamic tolerance rejects the float model's output as an int8 result
    assert dynamic.err_fp32 > dynamic.tol


def test_the_timing_loop_runs_and_reports_a_median() -> None:
    result = quant.run_job_here("resnet-tiny", "ort-int8", 1, 0.01, 5)
    assert not result.error, result.error
    assert 1 <= result.runs <= 5 and result.median_us > 0


def test_check_close_rejects_a_wrong_output() -> None:
    want = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    assert quant_models.check_close(
        want + 0.01, want, 0.02, 0.0, "ORT"
    ) == pytest.approx(0.01, rel=1e-3)
    wrong = want.copy()
    wrong[1, 2] += 0.5
    with pytest.raises(Mismatch, match=r"differs from ORT at \(1, 2\).*1 of 12"):
        quant_models.check_close(wrong, want, 0.02, 0.0, "ORT")
    with pytest.raises(Mismatch, match="shape"):
        quant_models.check_close(want[:2], want, 0.02, 0.0, "ORT")


def test_the_tolerances_follow_the_scheme() -> None:
    want = np.array([-2.0, 1.0], dtype=np.float32)
    assert quant_models.int8_tolerance("static", want, 0.01) == pytest.approx(0.12)
    assert quant_models.int8_tolerance("dynamic", want, math.nan) == pytest.approx(0.01)
    # a static model whose output is not a DequantizeLinear: the relative rule
    assert quant_models.int8_tolerance("static", want, math.nan) == pytest.approx(0.01)


def test_a_corrupt_cached_model_is_quantized_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the zoo's export too
    model = quant_models.get_quant_model("resnet-tiny")
    path = quant_models.quantized_path(model)
    assert path.parent == tmp_path / "qidao-zoo" and quant_models.valid_model(path)
    assert "static-int8" in path.name
    assert quant_models.quantized_path(model) == path  # cached: the same file
    path.write_bytes(b"not an onnx model")
    assert not quant_models.valid_model(path)
    assert quant_models.quantized_path(model) == path
    assert quant_models.valid_model(path)
    import onnx

    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= ops
    assert not list(path.parent.glob("*.tmp"))  # no partial file left behind


def test_an_unknown_model_is_an_error_naming_the_models(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "quant", "cnn", "resnet51"]) == 2
    err = capsys.readouterr().err
    assert "unknown quant model 'resnet51'" in err
    for name in quant_models.MODELS:
        assert name in err
    assert quant_models.DEFAULT_MODELS == ("cnn", "bert")


def _rows() -> list[QuantRow]:
    good = QuantRow(
        "cnn",
        "static",
        1,
        qidao_int8_us=20_000.0,
        ort_int8_us=10_000.0,
        qidao_fp32_us=16_000.0,
        ort_fp32_us=30_000.0,
        int8_err=0.1,
        int8_tol=0.24,
        int8_scale=2.0,
        step=0.02,
        qidao_int8_vs_fp32=0.4,
        ort_int8_vs_fp32=0.5,
        float_scale=2.0,
    )
    bad = QuantRow(
        "bert",
        "dynamic",
        1,
        ort_int8_us=900.0,
        ort_fp32_us=1_800.0,
        errors=("qidao-int8: compile error: ValueError: no",),
    )
    return [good, bad]


def test_the_table_has_the_ratios_errors_and_failures() -> None:
    table = quant.format_table(_rows())
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["model", "scheme", "thr"]
    cnn = next(line for line in lines if line.startswith("cnn"))
    assert "20.00 ms" in cnn and "10.00 ms" in cnn
    # ORT8/q8 0.50x, q32/q8 0.80x, O32/O8 3.00x
    assert cnn.split()[11:14] == ["0.50x", "0.80x", "3.00x"]
    assert "5.0e-02 (1.2e-01)" in cnn and "2.0e-01" in cnn and "2.5e-01" in cnn
    bert = next(line for line in lines if line.startswith("bert"))
    assert "—" in bert and "2.00x" in bert  # qidao missing, ORT's own speed-up
    assert "FAILED qidao-int8: compile error: ValueError: no" in table
    assert "1 of 2 model(s) passed; failed: bert" in table


def test_the_csv_has_a_line_per_model(tmp_path: Path) -> None:
    path = tmp_path / "out" / "quant.csv"
    quant.write_csv(_rows(), path)
    with path.open() as f:
        records = list(csv.DictReader(f))
    assert [r["model"] for r in records] == ["cnn", "bert"]
    cnn, bert = records
    assert cnn["zoo_model"] == "resnet50" and cnn["scheme"] == "static"
    assert float(cnn["ort_int8_over_qidao_int8"]) == pytest.approx(0.5)
    assert float(cnn["qidao_fp32_over_int8"]) == pytest.approx(0.8)
    assert float(cnn["ort_fp32_over_int8"]) == pytest.approx(3.0)
    assert float(cnn["int8_err_steps"]) == pytest.approx(5.0)
    assert float(cnn["int8_rel_err"]) == pytest.approx(0.05)
    assert bert["qidao_int8_us"] == "" and bert["error"].startswith("qidao-int8:")


def test_a_failed_job_fails_the_command_and_skips_what_would_fail_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[tuple[str, str]] = []

    def fake(name: str, job: str, threads: int, *args: object, **kw: object) -> Job:
        ran.append((name, job))
        if job == "ort-int8":
            return Job(name, job, threads, error="quantize error: RuntimeError: x")
        return Job(name, job, threads, compile_s=1.0, median_us=100.0, runs=5)

    monkeypatch.setattr(quant, "run_job", fake)
    out = tmp_path / "quant.csv"
    assert main(["bench", "quant", "gpt2-tiny", "--csv", str(out)]) == 1
    assert ran == [
        ("gpt2-tiny", "ort-fp32"),
        ("gpt2-tiny", "ort-int8"),
        ("gpt2-tiny", "qidao-fp32"),
    ]
    printed = capsys.readouterr().out
    assert "FAILED ort-int8: quantize error" in printed
    assert "FAILED qidao-int8: skipped" in printed
    assert out.exists()
