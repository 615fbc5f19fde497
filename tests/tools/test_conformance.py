"""``qidao conformance onnx``: ONNX's node test cases through qidao, and the baseline.

The suite runs the first case of each of ONNX's 246 operators (``--per-op 1``: 246
of the 1,884 cases, about 20 s on 2 cores) and checks them against
``tests/data/onnx_conformance_baseline.json``, which lists every case that passes.
The whole run is two and a half minutes of both cores, so it is the documented check
to make before changing the ONNX frontend (docs/onnx.md, docs/testing.md)::

    qidao conformance onnx --isolate --jobs 2 \\
        --check-baseline tests/data/onnx_conformance_baseline.json
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper

from qidao.frontend.errors import OnnxImportError, UnsupportedOpsError
from qidao.tools import conformance
from qidao.tools.cli import main
from qidao.tools.conformance import (
    BASELINE,
    compare_baseline,
    format_changes,
    format_table,
    node_cases,
    read_baseline,
    run_conformance,
)
from qidao.tools.conformance_cases import (
    DEVIATES,
    DEVIATIONS,
    FAIL,
    PASS,
    STATUSES,
    UNSUPPORTED,
    CaseResult,
    case_ops,
    classify_error,
    compare,
    dtype_refusal,
    run_case,
)

UPDATE = (
    "qidao conformance onnx --write-baseline tests/data/onnx_conformance_baseline.json"
)


@pytest.fixture(scope="module")
def sample() -> list[CaseResult]:
    return run_conformance(isolate=True, jobs=os.cpu_count() or 1, per_op=1)


@pytest.mark.slow
def test_no_sampled_case_falls_behind_the_baseline(sample: list[CaseResult]) -> None:
    worse, better = compare_baseline(sample, read_baseline(BASELINE))
    if better:
        print(
            "passing cases the baseline does not list (record them with "
            f"`{UPDATE}`):\n" + format_changes(better)
        )
    assert not worse, "cases the baseline lists as passing that fail now:\n" + (
        format_changes(worse)
    )


@pytest.mark.slow
def test_no_sampled_case_fails(sample: list[CaseResult]) -> None:
    failed = [f"{r.op} {r.case}: {r.reason}" for r in sample if r.status == FAIL]
    assert not failed, "\n".join(failed)


@pytest.mark.slow
def test_the_sample_is_one_case_per_operator(sample: list[CaseResult]) -> None:
    ops = Counter(r.op for r in sample)
    assert len(ops) > 200 and set(ops.values()) == {1}
    assert {r.status for r in sample} <= set(STATUSES)
    assert all(r.reason for r in sample if r.status != PASS)
    listed = set(read_baseline(BASELINE)["passing"])
    assert sum(r.case in listed for r in sample) > 100  # the check checks something


def test_the_baseline_counts_agree_with_its_cases() -> None:
    """The per-operator counts (for people) are the listed cases (for the check),
    and every listed case is one of ONNX's."""
    baseline = read_baseline(BASELINE)
    op_of = {case.name: op for op, case in node_cases()}
    assert set(baseline["passing"]) <= set(op_of)
    counts = Counter(op_of[name] for name in baseline["passing"])
    assert dict(counts) == baseline["pass"]
    assert baseline["totals"][PASS] == len(baseline["passing"])


def test_compare_baseline_names_each_lost_and_each_new_case() -> None:
    baseline = {"passing": ["test_relu", "test_conv_a"], "pass": {}}
    results = [
        CaseResult("Relu", "test_relu", PASS),
        CaseResult("Conv", "test_conv_a", UNSUPPORTED, "op: Conv"),
        CaseResult("Tan", "test_tan", PASS),
        CaseResult("Cos", "test_cos", UNSUPPORTED, "op: Cos"),
    ]
    worse, better = compare_baseline(results, baseline)
    assert worse == {"Conv": ["test_conv_a (unsupported: op: Conv)"]}
    assert better == {"Tan": ["test_tan"]}
    # a listed case that did not run (a sample) is not a regression
    assert compare_baseline(results[2:], baseline) == ({}, {"Tan": ["test_tan"]})


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        '{"pass": {"Relu": 1}}',
        '{"pass": {"Relu": 1}, "passing": "test_relu"}',
        '{"pass": {"Relu": "1"}, "passing": ["test_relu"]}',
    ],
)
def test_a_corrupt_or_old_baseline_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="baseline"):
        read_baseline(path)


def test_node_cases_takes_the_first_cases_of_each_operator() -> None:
    every = node_cases(["Relu", "Conv"])
    first = node_cases(["Relu", "Conv"], per_op=2)
    by_op: dict[str, list[str]] = {}
    for op, case in every:
        by_op.setdefault(op, []).append(case.name)
    expected = [(op, name) for op, names in by_op.items() for name in names[:2]]
    assert [(op, case.name) for op, case in first] == expected
    with pytest.raises(ValueError, match="per_op must be at least 1, got 0"):
        node_cases(per_op=0)


# ---- classification ----------------------------------------------------------------


def test_compare_names_the_worst_value() -> None:
    expected = [np.array([[1.0, 2.0], [3.0, np.nan]], np.float32)]
    assert compare([expected[0].copy()], expected, 1e-3, 1e-7) == ""
    got = [np.array([[1.0, 2.0], [3.5, np.nan]], np.float32)]
    message = compare(got, expected, 1e-3, 1e-7)
    assert "[1, 0]" in message and "got 3.5" in message and "expected 3" in message
    assert "shape [2]" in compare([np.zeros(2)], expected, 1e-3, 1e-7)
    assert "output count" in compare([], expected, 1e-3, 1e-7)
    nan = [np.array([[1.0, 2.0], [3.0, 0.0]], np.float32)]
    assert "expected nan" in compare(nan, expected, 1e-3, 1e-7)


def test_import_refusals_are_unsupported_and_bugs_fail() -> None:
    assert classify_error(UnsupportedOpsError({"Foo": ["#0"]})) == (
        UNSUPPORTED,
        "op: Foo",
    )
    status, reason = classify_error(
        OnnxImportError("Pad node '#3': mode 'wrap' is not supported")
    )
    assert (status, reason) == (UNSUPPORTED, "mode 'wrap' is not supported")
    status, _ = classify_error(
        OnnxImportError("Relu node 'r': qidao computed shape [2] for output 'y'")
    )
    assert status == FAIL
    status, reason = classify_error(RuntimeError("internal error: boom"))
    assert status == FAIL and reason.startswith("RuntimeError: internal error: boom")


def test_dtype_refusal_names_the_dtype() -> None:
    def model(in_type: int, out_type: int) -> Any:
        graph = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", in_type, [2])],
            [helper.make_tensor_value_info("y", out_type, [2])],
        )
        return helper.make_model(graph)

    assert dtype_refusal(model(TensorProto.FLOAT, TensorProto.FLOAT)) == ""
    assert dtype_refusal(model(TensorProto.INT64, TensorProto.FLOAT)) == ""
    assert dtype_refusal(model(TensorProto.DOUBLE, TensorProto.BOOL)) == ""
    assert dtype_refusal(model(TensorProto.INT32, TensorProto.INT64)) == ""
    assert dtype_refusal(model(TensorProto.FLOAT16, TensorProto.UINT8)) == ""
    assert dtype_refusal(model(TensorProto.INT8, TensorProto.UINT64)) == ""
    assert dtype_refusal(model(TensorProto.BFLOAT16, TensorProto.INT4)) == ""
    assert dtype_refusal(model(TensorProto.STRING, TensorProto.FLOAT)) == (
        "dtype: STRING input"
    )
    assert dtype_refusal(model(TensorProto.FLOAT, TensorProto.FLOAT8E8M0)) == (
        "dtype: FLOAT8E8M0 output"
    )


def test_expanded_cases_count_apart() -> None:
    class Case:
        def __init__(self, name: str, *ops: str) -> None:
            self.name = name
            nodes = [helper.make_node(op, ["x"], ["y"]) for op in ops]
            self.model = helper.make_model(helper.make_graph(nodes, "g", [], []))

    ops = case_ops(
        [
            Case("test_softmax_axis_0", "Softmax"),
            Case("test_softmax_axis_0_expanded_ver18", "ReduceMax", "Sub", "Exp"),
            Case("test_range_float_expanded", "Cast", "Loop"),
        ]
    )
    assert ops == {
        "test_softmax_axis_0": "Softmax",
        "test_softmax_axis_0_expanded_ver18": "Softmax (expanded)",
        "test_range_float_expanded": "Loop",
    }


# ---- the command, the table and isolation --------------------------------------------


def test_cli_table_csv_and_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv_path, baseline = tmp_path / "cases.csv", tmp_path / "baseline.json"
    argv = [
        "conformance",
        "onnx",
        "--op",
        "Relu",
        "--op",
        "Col2Im",
        "--op",
        "NonZero",
    ]
    argv += ["--csv", str(csv_path), "--write-baseline", str(baseline)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    cells = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    rows = {row[0]: row[1:] for row in cells}
    assert rows["Relu"] == ["1", "1", "0", "0", "0"]
    assert rows["Col2Im"] == ["5", "0", "0", "5", "0", "op: Col2Im"]
    assert rows["NonZero"] == ["1", "1", "0", "0", "0"]
    assert rows["total"][:5] == ["8", "3", "0", "5", "0"]
    assert csv_path.read_text().startswith("op,case,status,reason,seconds\n")
    written = json.loads(baseline.read_text())
    assert written["pass"] == {"NonZero": 1, "Relu": 1, "Relu (expanded)": 1}
    assert written["passing"] == [
        "test_nonzero_example",
        "test_relu",
        "test_relu_expanded_ver18",
    ]
    assert main(["conformance", "onnx", "--op", "NoSuchOp"]) == 2
    assert "no ONNX node test cases for operator(s) NoSuchOp" in capsys.readouterr().err


def test_cli_check_baseline_fails_on_a_lost_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A baseline that lists a case qidao does not pass (Col2Im is unsupported)
    makes ``--check-baseline`` exit with status 1, naming the case."""
    planted = tmp_path / "baseline.json"
    lost = [case.name for _, case in node_cases(["Col2Im"])]
    planted.write_text(json.dumps({"pass": {"Col2Im": len(lost)}, "passing": lost}))
    argv = ["conformance", "onnx", "--op", "Col2Im", "--op", "Relu", "--per-op", "1"]
    assert main([*argv, "--check-baseline", str(planted)]) == 1
    out = capsys.readouterr().out
    assert f"Col2Im: {lost[0]} (unsupported: op: Col2Im)" in out
    assert "passing now, not in the baseline" in out and "Relu: test_relu" in out
    assert "1 passing cases checked, 1 no longer pass" in out
    assert main([*argv, "--check-baseline", str(BASELINE)]) == 0
    assert main([*argv, "--write-baseline", str(tmp_path / "b.json")]) == 2
    assert "leave out --per-op 1" in capsys.readouterr().err


def test_format_table_counts_and_flags_failures() -> None:
    table = format_table(
        [
            CaseResult("Relu", "a", PASS),
            CaseResult("Relu", "b", FAIL, "output #0: wrong values"),
            CaseResult("Foo", "c", UNSUPPORTED, "op: Foo"),
            CaseResult("Foo", "d", DEVIATES, "matches ONNX Runtime: why"),
        ]
    )
    lines = table.splitlines()
    assert lines[0].split()[:6] == ["operator", "cases", PASS, FAIL, "unsup", "dev"]
    assert lines[2].split()[:6] == ["Foo", "2", "0", "0", "1", "1"]
    assert "FAIL output #0: wrong values" in lines[3]
    assert lines[-1].split()[:6] == ["total", "4", "1", "1", "1", "1"]


def test_a_crashed_child_fails_one_case_and_the_rest_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first child reports one case and dies (SIGSEGV); the case after it is the
    crash, and a second child runs the rest."""
    calls: list[list[Any]] = []

    def fake_run(command: list[str], input: str, **_: Any) -> Any:
        cases = json.loads(input)
        calls.append(cases)
        lines = [
            json.dumps(
                {"op": op, "case": name, "status": PASS, "reason": "", "seconds": 0}
            )
            for op, name in (cases[:1] if len(calls) == 1 else cases)
        ]
        code = -11 if len(calls) == 1 else 0
        return subprocess.CompletedProcess(command, code, "\n".join(lines), "boom")

    monkeypatch.setattr(conformance.subprocess, "run", fake_run)
    results = run_conformance(["Relu", "Conv"], isolate=True, jobs=1)
    crashed = [r for r in results if r.status == FAIL]
    assert len(crashed) == 1 and crashed[0].reason == "crashed (signal 11) boom"
    assert len(results) == 8 and len(calls) == 2


def _case(name: str) -> Any:
    return next(case for _, case in node_cases() if case.name == name)


@pytest.mark.parametrize("name", sorted(DEVIATIONS))
def test_a_listed_deviation_matches_its_oracle(name: str) -> None:
    """The listed cases: qidao's outputs differ from the expected ones and match
    the listed oracle (ONNX Runtime, or the float64 result): a deviation, not a
    pass."""
    oracle, reason = DEVIATIONS[name]
    result = run_case(_case(name), "?")
    assert (result.status, result.reason) == (DEVIATES, f"matches {oracle}: {reason}")


def test_a_listed_deviation_that_also_differs_from_onnx_runtime_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listed case is no free pass: outputs that match neither the reference nor
    ONNX Runtime are a fail with the reference's mismatch."""
    import qidao

    name = sorted(DEVIATIONS)[0]
    real = qidao.compile

    def off_by_one(model: Any) -> Any:
        compiled = real(model)
        return lambda *arrays: [y + 1 for y in compiled(*arrays)]

    monkeypatch.setattr(qidao, "compile", off_by_one)
    result = run_case(_case(name), "Resize")
    assert result.status == FAIL and result.reason.startswith("output #0: wrong values")
