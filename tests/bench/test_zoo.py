"""The model zoo: transformers models through ONNX and torch.compile, vs PyTorch.

The full zoo runs in ``qidao zoo``; here a tiny ResNet and a tiny GPT-2 (the
``*-tiny`` entries) go through both paths in this process, and the command's
harness is tested on what it reports: argument errors, failure rows, the exit
code, the table, the CSV and the plot. Timings are never asserted.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from qidao.bench import jobs, zoo
from qidao.bench.zoo import Job, ZooRow
from qidao.bench.zoo_models import DEFAULT_MODELS, ZOO, ZooModel
from qidao.tools.cli import main


@pytest.mark.filterwarnings("ignore:qidao. running unsupported operator")
@pytest.mark.parametrize(
    ("name", "job"),
    [
        *(
            (name, job)
            for name in ("resnet-tiny", "gpt2-tiny")
            for job in ("onnx", "torch")
        ),
        ("t5-tiny", "onnx"),  # two inputs (and torch.compile takes 14 s: left out)
    ],
)
def test_a_tiny_model_matches_pytorch(name: str, job: str) -> None:
    result = zoo.run_job_here(name, job, 1, min_time=0.0, max_runs=0)
    assert not result.error, result.error
    assert result.kernels and result.kernels > 0
    assert result.compile_s > 0
    if job == "onnx":
        assert result.ops and result.ops >= result.kernels


def test_the_default_zoo_has_the_issue_s_models() -> None:
    assert DEFAULT_MODELS[0] == "resnet50"
    for name in ("convnext", "mobilenet_v2", "efficientnet", "regnet", "vit"):
        assert name in DEFAULT_MODELS
    for name in ("swin", "bert", "gpt2", "llama"):
        assert name in DEFAULT_MODELS
    assert "resnet-tiny" not in DEFAULT_MODELS and "resnet-tiny" in ZOO


def test_the_zoo_spans_at_least_40_architectures_of_every_kind() -> None:
    assert len(DEFAULT_MODELS) >= 40
    names = {tuple(ZOO[n].input_names) for n in DEFAULT_MODELS}
    assert names == {
        ("pixel_values",),
        ("input_ids",),
        ("input_ids", "decoder_input_ids"),
        ("input_values",),
        ("input_features", "decoder_input_ids"),
    }
    decoders = [n for n in DEFAULT_MODELS if ZOO[n].model_class.endswith("CausalLM")]
    assert len(decoders) >= 10


def test_an_encoder_decoder_s_inputs_follow_its_names() -> None:
    whisper = ZOO["whisper"]
    features, ids = whisper.inputs()
    assert whisper.input_names == ["input_features", "decoder_input_ids"]
    assert features.dtype == np.float32 and features.shape == (1, 80, 256)
    assert ids.dtype == np.int64 and ids.shape == (1, whisper.decoder_seq)
    assert ids.min() >= 0 and ids.max() < whisper.config().vocab_size
    (audio,) = ZOO["wav2vec2"].inputs()
    assert audio.shape == (1, 16_000) and audio.dtype == np.float32


def test_an_unknown_model_is_an_error_naming_the_models(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["zoo", "resnet51"]) == 2
    err = capsys.readouterr().err
    assert "unknown zoo model 'resnet51'" in err
    assert "resnet50" in err and "gpt2-tiny" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--paths", "onnx,tf"], "unknown path(s) tf; the paths are: onnx, torch"),
        (["--plot", "zoo.pdf"], "must end in .png or .svg"),
    ],
)
def test_bad_options_fail_before_any_job(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["zoo", "resnet-tiny", *args]) == 2
    assert message in capsys.readouterr().err


def test_list_names_every_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zoo", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ZOO)


def _broken() -> object:
    raise RuntimeError("no such config\nsecond line")


def test_a_failing_model_is_a_failure_row_and_a_nonzero_exit(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = ZooModel("broken", "raises", _broken, "ResNetModel", (1, 3, 8, 8))
    monkeypatch.setitem(ZOO, "broken", broken)
    monkeypatch.setattr(zoo, "run_job", zoo.run_job_here)  # no subprocess
    csv = tmp_path / "zoo.csv"
    assert main(["zoo", "broken", "--threads", "1", "--csv", str(csv)]) == 1
    out = capsys.readouterr().out
    assert "FAILED eager@1: build error: RuntimeError: no such config" in out
    assert "second line" not in out
    assert "0 of 1 model(s) passed; failed: broken" in out
    assert "build error" in csv.read_text()


def test_a_failed_build_runs_no_further_job() -> None:
    calls: list[str] = []

    def runner(name: str, job: str, threads: int, *args: object, **kw: object) -> Job:
        calls.append(job)
        return Job(name, job, threads, error="build error: RuntimeError: x")

    rows = zoo.run_zoo(["resnet-tiny"], (1, 2), progress=False, runner=runner)
    assert calls == ["eager"]
    assert rows[0].errors == ("eager@1: build error: RuntimeError: x",)
    assert zoo.failed_models(rows) == ["resnet-tiny"]


def test_a_failed_onnx_compile_skips_the_other_onnx_compiles() -> None:
    calls: list[tuple[str, int]] = []

    def runner(name: str, job: str, threads: int, *args: object, **kw: object) -> Job:
        calls.append((job, threads))
        if job == "onnx":
            return Job(name, job, threads, error="compile error: X: y")
        return Job(name, job, threads, median_us=10.0, compile_s=1.0, kernels=3)

    zoo.run_zoo(["resnet-tiny"], (1, 2), progress=False, runner=runner)
    assert calls == [
        ("eager", 1),
        ("eager", 2),
        ("onnx", 1),
        ("ort", 1),
        ("ort", 2),
        ("torch", 1),
    ]


def test_rounds_interleave_the_timing_jobs_and_take_the_median() -> None:
    """``rounds=3``: qidao and ONNX Runtime timed three times each, one after the
    other; the row has the median of their medians and the first compile's time."""
    calls: list[tuple[str, int]] = []
    times = {"onnx": iter([30.0, 10.0, 20.0]), "ort": iter([5.0, 50.0, 40.0])}

    def runner(name: str, job: str, threads: int, *args: object, **kw: object) -> Job:
        calls.append((job, threads))
        us = next(times[job]) if job in times else 1.0
        return Job(name, job, threads, median_us=us, compile_s=len(calls), kernels=3)

    rows = zoo.run_zoo(
        ["resnet-tiny"], (1,), paths=["onnx"], progress=False, runner=runner, rounds=3
    )
    assert calls == [
        ("eager", 1),
        ("onnx", 1),
        ("onnx-warm", 1),
        ("ort", 1),
        *[("onnx", 1), ("ort", 1)] * 2,
    ]
    (row,) = rows
    assert (row.qidao_us, row.ort_us) == (20.0, 40.0)
    assert (row.compile_s, row.warm_s) == (2, 3)  # the cold and the warm job's
    with pytest.raises(ValueError, match="rounds must be positive"):
        zoo.run_zoo(["resnet-tiny"], (1,), progress=False, runner=runner, rounds=0)


def test_errors_are_labelled_by_phase_and_internal_errors_as_such() -> None:
    err = IndexError("list index out of range")
    err.phase = "compile"  # type: ignore[attr-defined]
    assert jobs.describe(err) == (
        "internal error (compile): IndexError: list index out of range"
    )
    unsupported = ValueError("the model uses 2 unsupported op type(s):\n  Cos: a\n")
    unsupported.phase = "compile"  # type: ignore[attr-defined]
    assert jobs.describe(unsupported) == (
        "compile error: ValueError: the model uses 2 unsupported op type(s): Cos: a"
    )


def test_a_mismatch_names_where_and_the_tolerance() -> None:
    want = np.array([[100.0, 1.0, 2.0]], np.float32)
    zoo.check_output(want + 0.05, want)  # atol = 1e-3 * 100
    with pytest.raises(zoo.Mismatch, match=r"at \(0, 2\): got 3, expected 2"):
        zoo.check_output(want + np.array([0, 0, 1], np.float32), want)
    with pytest.raises(zoo.Mismatch, match="shape"):
        zoo.check_output(want[0], want)


def test_a_worker_process_reports_its_result_as_json() -> None:
    job = zoo.run_job("resnet-tiny", "ort", 1, min_time=0.0, max_runs=0)
    assert not job.error, job.error
    assert job.compile_s > 0


def test_a_job_past_its_timeout_is_a_failure() -> None:
    job = zoo.run_job("resnet-tiny", "eager", 1, 0.0, 0, timeout=0.01)
    assert job.error == "timed out after 0.01 s"


def _rows() -> list[ZooRow]:
    return [
        ZooRow("a", 1, True, 10, 4, 1.0, 0.5, 2.0, qidao_us=10.0, ort_us=20.0,
               eager_us=40.0, torch_fallback="aten.add_.Tensor;aten.le.Tensor (x)"),
        ZooRow("a", 2, False, 10, 4, 1.0, qidao_us=5.0, ort_us=10.0, eager_us=5.0),
        ZooRow("b", 1, True, 20, 8, 1.0, qidao_us=10.0, ort_us=5.0, eager_us=10.0),
        ZooRow("b", 2, False, errors=("onnx@2: mismatch: differs",)),
    ]  # fmt: skip


def test_the_table_has_ratios_and_a_geometric_mean(tmp_path: Path) -> None:
    rows = _rows()
    assert rows[0].ort_ratio == pytest.approx(2.0)
    assert rows[0].eager_ratio == pytest.approx(4.0)
    assert math.isnan(rows[3].ort_ratio)
    table = zoo.format_table(rows)
    lines = table.splitlines()
    geo1 = next(line for line in lines if line.startswith("geomean") and " 1 " in line)
    assert geo1.split()[-2:] == ["1.00x", "2.00x"]  # sqrt(2 * 0.5), sqrt(4 * 1)
    assert "FAILED onnx@2: mismatch: differs" in table
    assert "1 of 2 model(s) passed; failed: b" in table
    assert "torch.compile ran in PyTorch: aten.add_.Tensor, aten.le.Tensor\n" in table
    zoo.write_csv(rows, tmp_path / "zoo.csv")
    header, first, *_ = (tmp_path / "zoo.csv").read_text().splitlines()
    assert header.startswith("model,threads,ops,kernels,compile_s,compile_warm_s")
    assert ",2.000,4.000," in first


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_the_plot_is_written_in_the_format_of_its_extension(
    tmp_path: Path, suffix: str
) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / f"zoo{suffix}"
    zoo.plot_ratios(_rows(), path)
    head = path.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in head
