"""``qidao conformance onnx``: ONNX's node test cases through qidao, and the baseline.

The whole run (1,884 cases, 1,161 of them compiled and run) takes about two minutes
on CI's 2 cores, in one child process per core, so it runs here in full: a drop of
any operator's pass count below ``tests/data/onnx_conformance_baseline.json`` fails,
and a rise is printed with the command that records it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
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
    format_table,
    run_conformance,
)
from qidao.tools.conformance_cases import (
    FAIL,
    PASS,
    UNSUPPORTED,
    CaseResult,
    case_ops,
    classify_error,
    compare,
    dtype_refusal,
)

pytestmark = pytest.mark.slow  # ONNX's whole node suite: minutes

UPDATE = (
    "qidao conformance onnx --write-baseline tests/data/onnx_conformance_baseline.json"
)


@pytest.fixture(scope="module")
def results() -> Iterator[list[CaseResult]]:
    # the IR is verified once per stage here (qidao.compile's default), not after
    # every pass as in the rest of the suite: these 1884 cases test the importer,
    # and verifying each pass would add a minute of CI; the children inherit it
    saved = os.environ.get("QIDAO_VERIFY")
    os.environ["QIDAO_VERIFY"] = "stage"
    try:
        yield run_conformance(isolate=True, jobs=os.cpu_count() or 1)
    finally:
        if saved is None:
            del os.environ["QIDAO_VERIFY"]
        else:
            os.environ["QIDAO_VERIFY"] = saved


def test_no_operator_drops_below_the_baseline(results: list[CaseResult]) -> None:
    baseline = json.loads(BASELINE.read_text())
    worse, better = compare_baseline(results, baseline)
    if better:
        print(
            "passing more cases than the baseline (update it with "
            f"`{UPDATE}`):\n"
            + "\n".join(f"  {op}: {a} -> {b}" for op, a, b in _rows(better))
        )
    assert not worse, "fewer passing cases than the baseline:\n" + "\n".join(
        f"  {op}: {a} -> {b}" for op, a, b in _rows(worse)
    )


def test_no_case_fails(results: list[CaseResult]) -> None:
    failed = [f"{r.op} {r.case}: {r.reason}" for r in results if r.status == FAIL]
    assert not failed, "\n".join(failed)


def test_every_case_has_one_result(results: list[CaseResult]) -> None:
    names = [r.case for r in results]
    assert len(names) == len(set(names)) > 1000
    assert {r.status for r in results} <= {PASS, FAIL, UNSUPPORTED}
    assert all(r.reason for r in results if r.status != PASS)


def _rows(diff: dict[str, tuple[int, int]]) -> list[tuple[str, int, int]]:
    return [(op, a, b) for op, (a, b) in diff.items()]


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
    assert dtype_refusal(model(TensorProto.BFLOAT16, TensorProto.FLOAT)) == (
        "dtype: BFLOAT16 input"
    )
    assert dtype_refusal(model(TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN)) == (
        "dtype: FLOAT8E4M3FN output"
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
    argv = ["conformance", "onnx", "--op", "Relu", "--op", "Tan", "--op", "ReduceProd"]
    argv += ["--csv", str(csv_path), "--write-baseline", str(baseline)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    cells = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    rows = {row[0]: row[1:] for row in cells}
    assert rows["Relu"] == ["1", "1", "0", "0"]
    assert rows["Tan"] == ["2", "0", "0", "2", "op: Tan"]
    assert rows["ReduceProd"] == [
        "9",
        "0",
        "0",
        "9",
        "constant-only op given a runtime tensor input",
    ]
    assert rows["total"][:4] == ["13", "2", "0", "11"]
    assert csv_path.read_text().startswith("op,case,status,reason,seconds\n")
    assert json.loads(baseline.read_text())["pass"] == {"Relu": 1, "Relu (expanded)": 1}
    assert main(["conformance", "onnx", "--op", "NoSuchOp"]) == 2
    assert "no ONNX node test cases for operator(s) NoSuchOp" in capsys.readouterr().err


def test_format_table_counts_and_flags_failures() -> None:
    table = format_table(
        [
            CaseResult("Relu", "a", PASS),
            CaseResult("Relu", "b", FAIL, "output #0: wrong values"),
            CaseResult("Foo", "c", UNSUPPORTED, "op: Foo"),
        ]
    )
    lines = table.splitlines()
    assert lines[2].split()[:5] == ["Foo", "1", "0", "0", "1"]
    assert "FAIL output #0: wrong values" in lines[3]
    assert lines[-1].split()[:5] == ["total", "3", "1", "1", "1"]


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
