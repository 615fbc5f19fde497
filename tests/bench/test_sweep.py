"""``qidao bench sweep``: the config shrinker on real configs, the rows, CSV and
summary on made-up results, one job loop with a stand-in worker, and the command
end to end on BERT."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qidao.bench.sweep import (
    CSV_FIELDS,
    CsvStream,
    SweepRow,
    read_csv,
    run_sweep,
    select,
    summarize,
)
from qidao.bench.sweep_configs import (
    HEADS,
    SCALARS,
    WIDTH,
    architectures,
    build,
    example_inputs,
    shrink,
    small_config,
)
from qidao.bench.sweep_jobs import (
    BF16_ULPS,
    ORT_BF16,
    RTOL,
    refusal_reasons,
    relative_error,
    run_job,
    tolerance,
)
from qidao.runtime.worker import Answer

transformers = pytest.importorskip("transformers")


# --- the shrinker on real configs ---------------------------------------------


def test_bert_config_is_shrunk_and_the_rest_kept() -> None:
    default = transformers.BertConfig().to_dict()
    small = shrink(default, "bert")
    assert small["hidden_size"] == WIDTH
    assert small["num_attention_heads"] == HEADS
    assert small["num_hidden_layers"] == 2
    assert small["intermediate_size"] == 2 * WIDTH
    assert small["vocab_size"] == SCALARS["vocab_size"] < default["vocab_size"]
    assert 0 <= small["pad_token_id"] < small["vocab_size"]
    unchanged = {k for k in default if k not in SCALARS}
    assert {k: small[k] for k in unchanged} == {k: default[k] for k in unchanged}


def test_small_values_are_never_raised() -> None:
    default = transformers.GPT2Config(n_layer=1, n_head=1).to_dict()
    small = shrink(default, "gpt2")
    assert small["n_layer"] == 1
    assert small["n_head"] == 1


def test_per_layer_lists_follow_the_new_layer_count() -> None:
    default = transformers.Gemma3TextConfig().to_dict()
    assert len(default["layer_types"]) == default["num_hidden_layers"] > 2
    small = shrink(default, "gemma3_text")
    assert small["layer_types"] == default["layer_types"][: small["num_hidden_layers"]]
    config = small_config("gemma3_text")
    assert len(config.layer_types) == config.num_hidden_layers == 2


def test_per_stage_lists_keep_their_length() -> None:
    wav2vec2 = shrink(transformers.Wav2Vec2Config().to_dict(), "wav2vec2")
    assert wav2vec2["conv_dim"] == [WIDTH] * 7
    swin = shrink(transformers.SwinConfig().to_dict(), "swin")
    assert swin["depths"] == [1, 1, 1, 1]
    assert swin["num_heads"] == [1, 2, 4, 8]
    assert swin["window_size"] == 4  # OVERRIDES


def test_sub_configs_are_shrunk() -> None:
    small = shrink(transformers.CLIPConfig().to_dict(), "clip")
    assert small["text_config"]["hidden_size"] == WIDTH
    assert small["vision_config"]["hidden_size"] == WIDTH
    assert small["vision_config"]["image_size"] == SCALARS["image_size"]


def test_the_zoo_sizes_shrink_by_the_same_rules() -> None:
    from qidao.bench.zoo_archs import ZOO_SIZES

    small = shrink(transformers.BertConfig().to_dict(), "bert", ZOO_SIZES)
    assert small["hidden_size"] == ZOO_SIZES.width == 256
    assert small["intermediate_size"] == 2 * ZOO_SIZES.width
    assert small["vocab_size"] == ZOO_SIZES.vocab
    regnet = shrink(transformers.RegNetConfig().to_dict(), "regnet", ZOO_SIZES)
    assert regnet["hidden_sizes"] == [32, 64, 128, 256]


@pytest.mark.parametrize(
    ("model_type", "class_name"),
    [
        ("gptj", "GPTJForCausalLM"),  # rotary_dim 64 > the head size
        ("beit", "BeitForImageClassification"),  # out_features names stage12
        ("deit", "DeiTForImageClassification"),  # two classes, no architectures
        ("levit", "LevitForImageClassification"),  # a 16x stem whatever patch_size
        ("bit", "BitForImageClassification"),  # 32 groups over 4 channels
        ("pvt", "PvtForImageClassification"),  # a list of head counts
        ("esm", "EsmModel"),  # no default vocabulary
        ("mobilebert", "MobileBertModel"),  # bottleneck widths
    ],
)
def test_architectures_the_plain_rules_broke_build(
    model_type: str, class_name: str
) -> None:
    built = build(model_type, class_name)
    import torch

    with torch.no_grad():
        out = built.net(*map(torch.from_numpy, built.inputs))
    assert torch.isfinite(out).all()
    assert sum(p.numel() for p in built.net.parameters()) < 2_000_000


def test_the_classes_come_from_the_auto_mappings() -> None:
    found = architectures()
    assert found["vit"] == "ViTForImageClassification"
    assert found["gpt2"] == "GPT2LMHeadModel"
    assert found["bert"] == "BertModel"  # an encoder: not its causal-LM head
    assert found["whisper"] == "WhisperModel"  # an encoder-decoder
    assert list(found) == sorted(found)


def test_a_small_bert_matches_its_transformers_model() -> None:
    import torch

    built = build("bert", "BertModel")
    assert built.input_names == ["input_ids"]
    assert built.output == "last_hidden_state"
    assert sum(p.numel() for p in built.net.parameters()) < 100_000
    (ids,) = map(torch.from_numpy, built.inputs)
    with torch.no_grad():
        want = built.net.model(input_ids=ids).last_hidden_state
        np.testing.assert_array_equal(built.net(ids).numpy(), want.numpy())


def test_an_encoder_decoder_gets_decoder_input_ids() -> None:
    config = small_config("t5")
    model = transformers.T5Model(config)
    names, inputs = example_inputs(model, config)
    assert names == ["input_ids", "decoder_input_ids"]
    assert all(a.dtype == np.int64 and a.max() < config.vocab_size for a in inputs)


def test_a_main_input_without_a_rule_is_named() -> None:
    class Model:
        main_input_name = "past_values"

    with pytest.raises(ValueError, match="'past_values'"):
        example_inputs(Model(), object())


# --- errors, rows, CSV, summary ------------------------------------------------


def test_relative_error_against_numpy() -> None:
    rng = np.random.default_rng(0)
    want = rng.standard_normal((3, 4))
    got = want + rng.standard_normal((3, 4)) * 1e-4
    expected = np.max(np.abs(got - want)) / np.max(np.abs(want))
    assert relative_error(got, want) == pytest.approx(expected)
    assert relative_error(want, want) == 0.0
    assert relative_error(want[:2], want) == math.inf


def test_relative_error_of_nans_and_infinities() -> None:
    want = np.array([1.0, np.nan, np.inf, 2.0])
    assert relative_error(want.copy(), want) == 0.0
    assert relative_error(np.array([1.0, 0.0, np.inf, 2.0]), want) == math.inf


def test_refusal_reasons_name_each_op() -> None:
    from qidao.frontend.errors import UnsupportedOpsError

    err = UnsupportedOpsError({"Tile": ["/a"], "CumSum": ["/b", "/c"]})
    assert refusal_reasons(err) == ["CumSum", "Tile"]
    assert refusal_reasons(ValueError("bad axis\nmore")) == ["bad axis"]
    inferred = ValueError(
        "ONNX shape inference failed: [ShapeInferenceError] (op_type:Conv, node "
        "name: /vit/patch/Conv): X typestr: T, has unsupported type: tensor(bfloat16)"
    )
    assert refusal_reasons(inferred) == [
        "ONNX shape inference failed: [ShapeInferenceError] (op_type:Conv): X "
        "typestr: T, has unsupported type: tensor(bfloat16)"
    ]  # one reason whatever the node


def _rows() -> list[SweepRow]:
    return [
        SweepRow("a", "A", export="ok", ort="ok", qidao="ok", ort_us=100.0,
                 qidao_us=50.0, torch="ok", torch_parts=1),
        SweepRow("b", "B", export="ok", ort="ok", qidao="ok", ort_us=100.0,
                 qidao_us=200.0, torch="fell back", torch_parts=2,
                 torch_fallback="aten.cumsum.default",
                 torch_reasons=["aten.cumsum.default"]),
        SweepRow("c", "C", export="ok", ort="ok", qidao="refused",
                 qidao_error="the model uses 2 unsupported op type(s):",
                 qidao_reasons=["CumSum", "Tile"], torch="failed",
                 torch_reasons=["boom"]),
        SweepRow("d", "D", export="ok", ort="ok", qidao="refused",
                 qidao_reasons=["CumSum"], qidao_vs_ort=math.nan),
        SweepRow("e", "E", export="build failed",
                 export_error="ValueError: no example input"),
    ]  # fmt: skip


def test_the_summary_counts_against_what_ort_runs() -> None:
    text = summarize(_rows())
    assert "5 architecture(s): 4 built and exported, ONNX Runtime ran 4" in text
    assert "qidao ONNX: 2 of the 4 that ONNX Runtime runs (50%)" in text
    mean = statistics.geometric_mean([50.0 / 100.0, 200.0 / 100.0])
    assert f"geomean over 2: {mean:.2f}x" in text
    refusals = text.split("most common qidao ONNX refusals")[1].splitlines()
    assert refusals[1].split() == ["2", "CumSum"]
    assert refusals[2].split() == ["1", "Tile"]
    assert "torch.compile: 1 of 3 whole in qidao" in text
    assert "build failed: ValueError: no example input" in text
    assert "differs" not in text


def test_a_model_where_ort_differs_from_eager_is_left_out() -> None:
    rows = [*_rows(), SweepRow("vit_mae", "ViTMAEModel", export="ok", ort="differs")]
    text = summarize(rows)
    assert "6 architecture(s): 5 built and exported, ONNX Runtime ran 4" in text
    assert "qidao ONNX: 2 of the 4 that ONNX Runtime runs (50%)" in text
    assert "ONNX Runtime differs from eager on 1, left out" in text
    assert text.splitlines()[1].endswith(": vit_mae")


def test_the_csv_streams_rows_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "out" / "sweep.csv"
    stream = CsvStream(path)
    assert path.read_text().startswith("arch,model_class,")  # the header at once
    rows = _rows()
    for row in rows:
        stream.write(row)
    stream.close()
    back = read_csv(path)
    assert [r.arch for r in back] == [r.arch for r in rows]
    assert back[2].qidao_reasons == ["CumSum", "Tile"]
    assert back[1].torch_parts == 2
    assert back[0].ratio == pytest.approx(0.5)
    assert math.isnan(back[3].qidao_vs_ort)
    assert summarize(back) == summarize(rows)


def test_select_names_and_limits() -> None:
    available = {"a": "A", "b": "B", "c": "C"}
    assert select(available, limit=2) == {"a": "A", "b": "B"}
    assert select(available, ["c", "a"]) == {"c": "C", "a": "A"}
    with pytest.raises(ValueError, match=r"unknown architecture.*zz"):
        select(available, ["zz"])
    with pytest.raises(ValueError, match="--limit"):
        select(available, limit=0)


def test_crashes_and_timeouts_are_rows_and_the_sweep_goes_on(tmp_path: Path) -> None:
    def ask(job: str, request: dict[str, Any], timeout: float) -> Answer:
        arch = request["arch"]
        if arch == "crashy" and job == "qidao":
            return Answer("crash", error="the worker died (signal 11): ")
        if arch == "slow" and job == "export":
            return Answer("timeout", error=f"no answer within {timeout:g} s")
        if job == "ort":
            return Answer("ok", {"error_vs": 0.0, "median_us": 10.0})
        if job == "qidao":
            return Answer("ok", {"status": "ok", "error_vs": 0.0, "median_us": 5.0})
        if job == "torch":
            why = "aten.cumsum.default (why)"
            data = {"graphs": 1, "parts": 2, "fallback": why, "reasons": [why]}
            return Answer("fell back", {"status": "fell back", **data})
        return Answer("ok", {"inputs": "x", "output": "logits"})

    path = tmp_path / "s.csv"
    archs = {"crashy": "C", "fine": "F", "slow": "S"}
    rows = run_sweep(archs, path, timeout=7, progress=False, ask=ask)
    by = {r.arch: r for r in rows}
    assert by["crashy"].qidao == "crashed"
    assert by["crashy"].qidao_reasons == ["crashed: the worker died (signal 11): "]
    assert by["fine"].qidao == "ok" and by["fine"].ratio == 0.5
    assert (by["fine"].torch, by["fine"].torch_parts) == ("fell back", 2)
    assert by["fine"].torch_reasons == ["aten.cumsum.default (why)"]
    assert by["slow"].export == "timeout" and by["slow"].ort == ""
    assert by["slow"].export_error == "no answer within 7 s"
    assert sorted(r.arch for r in read_csv(path)) == sorted(archs)


# --- bfloat16 (--dtype bfloat16) -----------------------------------------------


def test_the_bfloat16_tolerance_is_ulps_at_the_largest_magnitude() -> None:
    assert tolerance(np.array([0.5, -2.0])) == RTOL  # float32
    ulp = 2.0**-7 * 2.0  # a bfloat16's spacing at 2.0
    got = tolerance(np.array([0.5, -2.0]), "bfloat16")
    assert got == pytest.approx(BF16_ULPS * ulp / 2.0)
    at_3 = tolerance(np.array([3.0]), "bfloat16")  # the same ulp at 3: smaller share
    assert at_3 == pytest.approx(BF16_ULPS * ulp / 3.0)
    assert tolerance(np.zeros(3), "bfloat16") == pytest.approx(BF16_ULPS * 2.0**-7)


def _bf16_ask(asked: list[tuple[str, str]]) -> Any:
    """A stand-in worker: ``noexport`` exports nothing, ``noeager`` runs no
    bfloat16 eager, ``off`` is 10 ulps off on the torch path."""

    def ask(job: str, request: dict[str, Any], timeout: float) -> Answer:
        arch = request["arch"]
        asked.append((arch, job))
        assert request["dtype"] == "bfloat16"
        if job == "export":
            if arch == "noeager":
                return Answer("eager failed", {"error": "RuntimeError: no bf16"})
            data = {"scale": 3.0, "error_vs_fp32": 0.01}
            if arch == "noexport":
                return Answer("export failed", {"error": "boom", **data})
            return Answer("ok", {"inputs": "x", "output": "logits", **data})
        if job == "qidao":
            why = ["Softmax (bfloat16: ONNX rounds each step)"]
            data = {"error": "refused", "reasons": why}
            return Answer("refused", {"status": "refused", **data})
        assert job == "torch"
        error = (10 if arch == "off" else 1) * 2.0**-7 * 2 / 3.0  # ulps at 3.0
        status = "wrong" if arch == "off" else "ok"
        data = {"error_vs": error, "error_vs_fp32": 0.02, "graphs": 1, "parts": 1}
        return Answer(status, {"status": status, **data})

    return ask


def test_bfloat16_skips_ort_and_runs_torch_wherever_eager_ran(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []
    archs = {"fine": "F", "noeager": "N", "noexport": "X", "off": "O"}
    path = tmp_path / "bf16.csv"
    rows = run_sweep(
        archs, path, progress=False, ask=_bf16_ask(asked), dtype="bfloat16"
    )
    by = {r.arch: r for r in rows}
    assert all(job != "ort" for _, job in asked)
    assert (by["fine"].ort, by["fine"].ort_error) == ("skipped", ORT_BF16)
    assert [job for arch, job in asked if arch == "noeager"] == ["export"]
    assert [job for arch, job in asked if arch == "noexport"] == ["export", "torch"]
    assert (by["noexport"].qidao, by["noexport"].torch) == ("", "ok")
    assert by["off"].torch == "wrong"
    assert by["fine"].torch_vs_eager == pytest.approx(2.0**-7 * 2 / 3.0)
    assert (by["fine"].eager_max, by["fine"].eager_vs_fp32) == (3.0, 0.01)
    assert by["fine"].torch_vs_fp32 == 0.02
    back = read_csv(path)
    assert {r.dtype for r in back} == {"bfloat16"}
    text = summarize(back)
    assert text == summarize(rows)
    assert text.startswith(
        "4 architecture(s) in bfloat16: 4 built, PyTorch eager ran 3 in bfloat16, "
        "2 of them exported to ONNX"
    )
    assert ORT_BF16 in text
    assert (
        "qidao ONNX: 0 of the 3 that eager runs in bfloat16 (0%); refused 2, "
        "not exported 1" in text
    )
    assert "torch.compile: 2 of the 3 that eager runs in bfloat16 right (67%)" in text
    assert "  torch.compile: 1.00 / 10.00 / 10.00 over 3" in text  # ulps
    assert "  eager bfloat16: 0.01 / 0.01 / 0.01 over 3" in text
    assert "     2  Softmax (bfloat16: ONNX rounds each step)" in text
    assert "eager failed: RuntimeError: no bf16" in text


def test_a_sweep_of_both_dtypes_summarizes_each() -> None:
    bf16 = SweepRow("g", "G", "bfloat16", export="ok", ort="skipped", torch="ok")
    text = summarize([*_rows(), bf16])
    float32, bfloat16 = text.split("\n\n")
    assert float32 == summarize(_rows())
    assert bfloat16.startswith("1 architecture(s) in bfloat16: 1 built")


def test_an_unknown_dtype_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--dtype"):
        run_sweep({"a": "A"}, progress=False, dtype="float16")
    request = {"job": "export", "folder": str(tmp_path), "dtype": "int8"}
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        run_job({**request, "arch": "bert", "model_class": "BertModel"})


def test_the_committed_csv_reads_as_float32() -> None:
    path = Path(__file__).resolve().parents[2] / "docs/benchmarks/sweep.csv"
    header = path.read_text().splitlines()[0].split(",")
    assert "dtype" not in header  # written before --dtype
    assert [f for f in CSV_FIELDS if f in header] == header  # the order kept
    rows = read_csv(path)
    assert len(rows) > 600 and {r.dtype for r in rows} == {"float32"}
    assert all(math.isnan(r.torch_vs_eager) for r in rows)
    assert "qidao ONNX: " in summarize(rows) and "bfloat16" not in summarize(rows)


@pytest.mark.slow
def test_the_jobs_run_bert_in_bfloat16(tmp_path: Path) -> None:
    request = {"arch": "bert", "model_class": "BertModel", "folder": str(tmp_path)}
    request |= {"dtype": "bfloat16", "time": False}
    export = run_job({**request, "job": "export"})
    assert export["inputs"] == "input_ids 1x16 int64"
    assert 0 < export["error_vs_fp32"] < 0.05  # bfloat16 against float32
    assert np.load(tmp_path / "eager.npy").dtype == np.float32
    qidao = run_job({**request, "job": "qidao"})
    assert qidao.get("status", "ok") == "ok", qidao
    assert qidao["reference"] == "eager"
    done = run_job({**request, "job": "torch"})
    assert done["status"] in ("ok", "fell back"), done
    assert done["error_vs"] <= tolerance(np.load(tmp_path / "eager.npy"), "bfloat16")
    assert 0 < done["error_vs_fp32"] < 0.05


# --- the command ----------------------------------------------------------------


def test_sweep_runs_alone() -> None:
    from qidao.tools.cli import main

    assert main(["bench", "sweep", "chain"]) == 2


def test_the_dtype_is_a_choice(capsys: Any) -> None:
    from qidao.tools.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "sweep", "--dtype", "float16"])
    assert "invalid choice: 'float16'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_sweeps_bert(tmp_path: Path, capsys: Any) -> None:
    from qidao.tools.cli import main

    path = tmp_path / "sweep.csv"
    code = main(["bench", "sweep", "--only", "bert", "--no-time", "--csv", str(path)])
    (row,) = read_csv(path)
    assert (row.arch, row.export, row.ort, row.qidao) == ("bert", "ok", "ok", "ok")
    assert row.qidao_vs_ort <= 1e-3
    assert row.torch in ("ok", "fell back")
    assert code == 0
    assert "qidao ONNX: 1 of the 1 that ONNX Runtime runs" in capsys.readouterr().out
