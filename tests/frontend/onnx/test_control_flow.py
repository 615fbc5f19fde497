"""ONNX ``If``, ``Loop`` and ``Scan`` (``qidao/frontend/onnx/control_flow.py``):
subgraphs inlined into the tg graph, checked against ONNX Runtime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.onnx import control_flow, import_onnx
from qidao.frontend.onnx.specialize import Specialized
from qidao.frontend.onnx.staged import Staged
from qidao.frontend.onnx.staged_loop import LoopStep

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(0)
Array = np.ndarray[Any, Any]


def _info(name: str, dtype: int, shape: list[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, dtype, shape)


def _model(
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    initializers: list[Any] = (),  # type: ignore[assignment]
    opset: int = 17,
) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model: Any, feeds: dict[str, Array]) -> Any:
    """qidao's outputs equal ONNX Runtime's; returns the compiled model."""
    compiled = qidao.compile(model)
    got = compiled(*feeds.values())
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)
    return compiled


def _branch(name: str, op: str, out_shape: list[int]) -> Any:
    """A branch computing ``op(x)`` from the outer value ``x``."""
    return helper.make_graph(
        [helper.make_node(op, ["x"], [f"{name}_y"])],
        name,
        [],
        [_info(f"{name}_y", F, out_shape)],
    )


def _if_model(cond_input: bool) -> Any:
    node = helper.make_node(
        "If",
        ["c"],
        ["y"],
        then_branch=_branch("then", "Exp", [2, 3]),
        else_branch=_branch("else", "Neg", [2, 3]),
    )
    inputs = [_info("x", F, [2, 3])]
    inits = []
    if cond_input:
        inputs.append(_info("c", B, []))
    else:
        inits.append(numpy_helper.from_array(np.array(False), "c"))
    return _model([node], inputs, [_info("y", F, [2, 3])], inits)


@pytest.mark.parametrize("flag", [True, False])
def test_if_on_a_runtime_condition_computes_both_branches_and_selects(
    flag: bool,
) -> None:
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    compiled = _check(_if_model(True), {"x": x, "c": np.array(flag)})
    ir = compiled.ir("tg")
    assert "tg.exp" in ir and "tg.neg" in ir and "tg.select" in ir


def test_if_on_a_compile_time_condition_inlines_only_its_branch() -> None:
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    ir = _check(_if_model(False), {"x": x}).ir("tg")
    assert "tg.neg" in ir and "tg.exp" not in ir


def test_if_branches_of_different_shapes_on_a_runtime_condition_run_on_the_host() -> (
    None
):
    """The output's shape is data: the host picks the branch, each compiled as a
    program of its own (``staged_if.py``), and what follows compiles for the
    shape it gave. The else branch reads an outer initializer ``w``."""
    node = helper.make_node(
        "If",
        ["c"],
        ["y"],
        then_branch=_branch("then", "Exp", [2, 3]),
        else_branch=helper.make_graph(
            [
                helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
                helper.make_node("Add", ["total", "w"], ["else_y"]),
            ],
            "else",
            [],
            [_info("else_y", F, [])],
        ),
    )
    model = _model(
        [node, helper.make_node("Shape", ["y"], ["shape"])],
        [_info("x", F, [2, 3]), _info("c", B, [])],
        [_info("y", F, None), _info("shape", I64, [None])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "w")],
    )
    with pytest.raises(qidao.QidaoError, match="output #0 is float32 \\[2, 3\\]"):
        import_onnx(model)  # alone, the import cannot pick the branch
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for flag in (True, False, True):
        compiled = _check(model, {"x": x, "c": np.array(flag)})
        assert isinstance(compiled.latest, Staged)
        assert compiled.latest.step.taken == ("then_branch" if flag else "else_branch")


def _loop_model(trip_count_input: bool, trip: int = 4) -> Any:
    """``acc = x; for i in range(M): acc = acc * 0.5 + i (cast); stack acc``: a
    loop-carried value, the iteration number, an outer-scope read of ``x`` and
    a scan output."""
    body = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["i_f"], to=F),
            helper.make_node("Mul", ["acc_in", "half"], ["scaled"]),
            helper.make_node("Add", ["scaled", "i_f"], ["shifted"]),
            helper.make_node("Add", ["shifted", "x"], ["acc_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Identity", ["acc_out"], ["each"]),
        ],
        "body",
        [_info("i", I64, []), _info("cond_in", B, []), _info("acc_in", F, [3])],
        [_info("cond_out", B, []), _info("acc_out", F, [3]), _info("each", F, [3])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half")],
    )
    node = helper.make_node("Loop", ["M", "", "x"], ["final", "stacked"], body=body)
    inputs = [_info("x", F, [3])]
    inits = []
    if trip_count_input:
        inputs.append(_info("M", I64, []))
    else:
        inits.append(numpy_helper.from_array(np.array(trip, np.int64), "M"))
    outputs = [_info("final", F, [3]), _info("stacked", F, [None, 3])]
    return _model([node], inputs, outputs, inits)


def test_loop_with_a_constant_trip_count_unrolls() -> None:
    x = RNG.standard_normal(3).astype(np.float32)
    _check(_loop_model(False), {"x": x})


def test_loop_trip_count_from_an_integer_input_is_bound_per_value() -> None:
    model = _loop_model(True)
    compiled = qidao.compile(model)
    assert isinstance(compiled, Specialized) and compiled.bound == ["M"]
    session = ort.InferenceSession(model.SerializeToString())
    x = RNG.standard_normal(3).astype(np.float32)
    for trip in (2, 5):
        feeds = {"x": x, "M": np.array(trip, np.int64)}
        got = compiled(*feeds.values())
        for g, e in zip(got, session.run(None, feeds), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-6)
        assert got[1].shape == (trip, 3)


def test_a_loop_that_ends_on_a_computed_condition_runs_on_the_host() -> None:
    """``while sum(acc) < 10: acc = acc + acc``: the trip count is data, so the
    loop runs on the host over its body compiled once (``staged_loop.py``)."""
    body = helper.make_graph(
        [
            helper.make_node("ReduceSum", ["acc_in"], ["total"], keepdims=0),
            helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"]),
            helper.make_node("ReduceSum", ["acc_out"], ["next"], keepdims=0),
            helper.make_node("Less", ["next", "ten"], ["cond_out"]),
            helper.make_node("Identity", ["total"], ["seen"]),
        ],
        "body",
        [_info("i", I64, []), _info("cond_in", B, []), _info("acc_in", F, [3])],
        [_info("cond_out", B, []), _info("acc_out", F, [3]), _info("seen", F, [])],
        [numpy_helper.from_array(np.array(10.0, np.float32), "ten")],
    )
    node = helper.make_node("Loop", ["", "go", "x"], ["final", "sums"], body=body)
    model = _model(
        [node, helper.make_node("Shape", ["sums"], ["count"])],
        [_info("x", F, [3])],
        [_info("final", F, [3]), _info("sums", F, [None]), _info("count", I64, [1])],
        [numpy_helper.from_array(np.array(True), "go")],
    )
    with pytest.raises(qidao.QidaoError, match="the trip count is data"):
        import_onnx(model)  # alone, the import cannot unroll it
    for x in ([0.5, 0.25, 0.25], [3.0, 3.0, 3.0], [0.01, 0.0, 0.0]):
        compiled = _check(model, {"x": np.array(x, np.float32)})
    staged = compiled.latest
    assert isinstance(staged, Staged) and isinstance(staged.step, LoopStep)
    assert staged.step.iterations == 10  # 0.01 doubles 10 times to reach 10
    assert staged.step.program.compiles == 1  # one body program for every iteration


def test_a_loop_with_a_computed_trip_count_runs_on_the_host() -> None:
    """``M`` computed from the data (a float input too large to bind: no graph
    input to bind) runs on the host, with the iteration number, an outer read and
    a scan output."""
    model = _loop_model(False)
    model.graph.initializer.pop()  # M = ceil(sum(w)) now
    model.graph.input.append(_info("w", F, [100]))
    model.graph.node.insert(0, helper.make_node("Cast", ["msum"], ["M"], to=I64))
    model.graph.node.insert(0, helper.make_node("Ceil", ["wsum"], ["msum"]))
    model.graph.node.insert(
        0, helper.make_node("ReduceSum", ["w"], ["wsum"], keepdims=0)
    )
    x = RNG.standard_normal(3).astype(np.float32)
    for total in (3.0, 5.5):
        w = np.zeros(100, np.float32)
        w[7] = total
        _check(model, {"x": x, "w": w})
    final, stacked = qidao.compile(model)(x, np.zeros(100, np.float32))
    np.testing.assert_array_equal(final, x)  # no iteration: the initial value
    assert stacked.shape == (0, 3) and stacked.dtype == np.float32


def test_a_loop_past_the_unroll_limit_runs_on_the_host() -> None:
    model = _loop_model(False, trip=control_flow.MAX_ITERATIONS + 1)
    with pytest.raises(qidao.QidaoError, match="more than qidao unrolls"):
        import_onnx(model)
    x = RNG.standard_normal(3).astype(np.float32)
    compiled = _check(model, {"x": x})
    assert compiled.latest.step.iterations == control_flow.MAX_ITERATIONS + 1


@pytest.mark.parametrize(("direction", "out_axis"), [(0, 0), (1, 1), (1, -1)])
def test_scan_running_sum_matches_onnx_runtime(direction: int, out_axis: int) -> None:
    """A running sum over the rows of ``xs`` (forward or reverse), with each step's
    state stacked as a scan output on ``out_axis``."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
            helper.make_node("Identity", ["sum_out"], ["each"]),
        ],
        "body",
        [_info("sum_in", F, [2]), _info("row", F, [2])],
        [_info("sum_out", F, [2]), _info("each", F, [2])],
    )
    node = helper.make_node(
        "Scan",
        ["init", "xs"],
        ["total", "partial"],
        body=body,
        num_scan_inputs=1,
        scan_input_directions=[direction],
        scan_output_axes=[out_axis],
    )
    model = _model(
        [node],
        [_info("init", F, [2]), _info("xs", F, [5, 2])],
        [_info("total", F, [2]), _info("partial", F, None)],
    )
    feeds = {
        "init": RNG.standard_normal(2).astype(np.float32),
        "xs": RNG.standard_normal((5, 2)).astype(np.float32),
    }
    _check(model, feeds)


def test_scan_of_opset_8_is_refused_with_the_reason() -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "r"], ["t"])],
        "body",
        [_info("s", F, [2]), _info("r", F, [2])],
        [_info("t", F, [2])],
    )
    node = helper.make_node(
        "Scan", ["", "init", "xs"], ["total"], body=body, num_scan_inputs=1
    )
    model = _model(
        [node],
        [_info("init", F, [1, 2]), _info("xs", F, [1, 3, 2])],
        [_info("total", F, [1, 2])],
        opset=8,
    )
    with pytest.raises(qidao.QidaoError, match="Scan of opset 8"):
        import_onnx(model)


def test_an_if_inside_a_function_body_reads_the_bodys_values() -> None:
    """``AffineGrid``'s function body picks the 2-D or 3-D grid with an ``If`` whose
    branches read the body's values (renamed when the body is bound to the node)."""
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"])
    model = _model(
        [node],
        [_info("theta", F, [2, 2, 3]), _info("size", I64, [4])],
        [_info("grid", F, None)],
        opset=20,
    )
    theta = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    _check(model, {"theta": theta, "size": np.array([2, 1, 3, 4], np.int64)})
