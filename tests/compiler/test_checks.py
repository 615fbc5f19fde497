"""``qidao.compile(model, checks=True)``: a call raises ``qidao.CheckError`` where
ONNX Runtime raises (an index out of range, an integer division or modulo by zero),
naming the node and the values, and returns ONNX Runtime's result everywhere else.
Without ``checks`` the same calls return qidao's defined values
(``docs/semantics.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import qidao
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]


def model(node: Any, inputs: dict[str, Array], out: int = TensorProto.FLOAT) -> Any:
    infos = [
        helper.make_tensor_value_info(
            n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
        )
        for n, a in inputs.items()
    ]
    graph = helper.make_graph(
        [node], "g", infos, [helper.make_tensor_value_info("y", out, None)]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def onnx_runtime(proto: Any, inputs: dict[str, Array]) -> Array:
    session = ort.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, inputs)[0]  # type: ignore[no-any-return]


X = np.arange(5, dtype=np.float32) * 10
GATHER = helper.make_node("Gather", ["x", "i"], ["y"], name="g0")
GATHER_CASES = {
    "inside": ([1, -5, 4, -1], None),
    "one past the end": (
        [0, 5, 1, 2],
        "index 5 is out of bounds for an axis of size 5",
    ),
    "one before the start": ([0, -6, 1, 2], "index -6 is out of bounds"),
    "both ends": ([7, -9, 0, 0], "index 7 is out of bounds"),
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", list(GATHER_CASES))
def test_gather_raises_where_onnx_runtime_does(case: str, dtype: Any) -> None:
    values, message = GATHER_CASES[case]
    i = np.array(values, dtype)
    proto = model(GATHER, {"x": X, "i": i})
    checked = qidao.compile(proto, checks=True)
    if message is None:
        np.testing.assert_array_equal(
            checked(X, i)[0], onnx_runtime(proto, {"x": X, "i": i})
        )
        return
    with pytest.raises(Exception, match=r"out of (data )?bounds"):
        onnx_runtime(proto, {"x": X, "i": i})  # the reference raises too
    with pytest.raises(qidao.CheckError, match=message) as error:
        checked(X, i)
    assert str(error.value).startswith("Gather node 'g0': ")
    assert "valid indices are -5 to 4" in str(error.value)
    # unchecked: the defined (clamped) value, no error
    clamped = np.clip(np.where(i < 0, i + 5, i), 0, 4)
    np.testing.assert_array_equal(qidao.compile(proto)(X, i)[0], X[clamped])


def test_gather_elements_names_its_node_and_range() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge", axis=1)
    good = np.array([[0, 3], [-4, 2], [1, -1]], np.int64)
    proto = model(node, {"x": x, "i": good})
    checked = qidao.compile(proto, checks=True)
    np.testing.assert_array_equal(
        checked(x, good)[0], onnx_runtime(proto, {"x": x, "i": good})
    )
    bad = np.array([[0, 3], [-5, 2], [1, -1]], np.int64)
    with pytest.raises(Exception):  # noqa: B017 (ORT's own exception type)
        onnx_runtime(proto, {"x": x, "i": bad})
    with pytest.raises(
        qidao.CheckError,
        match=r"GatherElements node 'ge': index -5 .* range over \[-5, 3\]",
    ):
        checked(x, bad)


@pytest.mark.parametrize("op", ["Div", "Mod"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_integer_division_by_zero_raises(op: str, dtype: Any) -> None:
    a = np.array([7, 100, 0, 9], dtype)
    node = helper.make_node(op, ["a", "b"], ["y"], name="d")
    tensor_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    b = np.array([2, 3, 5, 4], dtype)
    proto = model(node, {"a": a, "b": b}, tensor_type)
    checked = qidao.compile(proto, checks=True)
    np.testing.assert_array_equal(
        checked(a, b)[0], onnx_runtime(proto, {"a": a, "b": b})
    )
    zeros = np.array([2, 0, 5, 0], dtype)
    with pytest.raises(Exception):  # noqa: B017 (ORT's own exception type)
        onnx_runtime(proto, {"a": a, "b": zeros})
    with pytest.raises(
        qidao.CheckError,
        match=rf"^{op} node 'd': integer division by zero \(2 divisor elements are 0\)",
    ):
        checked(a, zeros)
    assert len(qidao.compile(proto)(a, zeros)) == 1  # unchecked: defined values


def test_float_division_is_not_checked() -> None:
    a = np.array([1.0, -1.0, 0.0], np.float32)
    b = np.zeros(3, np.float32)
    proto = model(helper.make_node("Div", ["a", "b"], ["y"]), {"a": a, "b": b})
    checked = qidao.compile(proto, checks=True)
    np.testing.assert_array_equal(
        checked(a, b)[0], onnx_runtime(proto, {"a": a, "b": b})
    )
    assert "qd.checks" not in checked.ir("tg")


def test_every_failure_is_listed_and_outputs_are_the_models() -> None:
    g = Graph()
    x = g.input("x", (5,))
    i = g.input("i", (3,), "int64")
    a = g.input("a", (3,), "int32")
    g.output(g.take(x, i, 0), g.div(a, a))
    checked: Any = qidao.compile(g, checks=True, mode="eager")
    assert [s.name for s in checked.outputs] == ["output0", "output1"]
    good = checked(X, np.array([0, 1, 2]), np.array([1, 2, 3], np.int32))
    assert len(good) == 2
    np.testing.assert_array_equal(good[0], X[:3])
    with pytest.raises(qidao.CheckError) as error:
        checked(X, np.array([0, 1, 8]), np.array([1, 0, 3], np.int32))
    message = str(error.value)
    assert message.startswith("tg.take of (tensor<5xf32>, tensor<3xi64>) on axis 0")
    assert "index 8" in message and "; tg.div of" in message
    assert isinstance(error.value, ValueError)  # a CheckError is a ValueError too


def test_call_into_reads_the_checks_as_a_call_does() -> None:
    """``Compiled.call_into`` (a training step's in-place call) of a program
    compiled with ``checks=True``: the model's own outputs, written into the given
    arrays, or ``qidao.CheckError`` where a plain call raises (F14: it refused
    every call)."""
    g = Graph()
    x, i = g.input("x", (5,)), g.input("i", (3,), "int64")
    g.output(g.take(x, i, 0))
    checked: Any = qidao.compile(g, checks=True)
    out = np.full(3, -1.0, np.float32)
    results = checked.call_into([X, np.array([4, 0, -1])], {0: out})
    assert len(results) == 1 and results[0] is out
    np.testing.assert_array_equal(out, checked(X, np.array([4, 0, -1]))[0])
    with pytest.raises(qidao.CheckError, match="index 5 is out of bounds"):
        checked.call_into([X, np.array([4, 5, 0])], {})


def test_torch_embedding() -> None:
    torch = pytest.importorskip("torch")
    embedding = torch.nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])
    compiled = qidao.compile(embedding, example_inputs=(ids,), checks=True)
    torch.testing.assert_close(compiled(ids), embedding(ids))
    bad = torch.tensor([[1, 2, 11]])
    with pytest.raises(IndexError):  # PyTorch's own
        embedding(bad)
    with pytest.raises(
        qidao.CheckError, match=r"node 'embedding' \(aten.embedding.default\): index 11"
    ):
        compiled(bad)


def test_torch_ops_that_reject_negative_indices() -> None:
    """PyTorch's embedding, index_select and gather raise on a negative index;
    ``x[:, i]`` counts it from the end. ``checks=True`` follows each."""
    torch = pytest.importorskip("torch")
    x = torch.arange(12.0).reshape(3, 4)
    row, column = torch.tensor([-1]), torch.tensor([[-1], [0], [0]])
    ops = {
        "embedding": (lambda i: torch.nn.functional.embedding(i, x), row),
        "index_select": (lambda i: torch.index_select(x, 0, i), row),
        "gather": (lambda i: torch.gather(x, 1, i), column),
        "index": (lambda i: x[:, i], row),
    }
    for name, (fn, negative) in ops.items():
        good = negative.abs()
        compiled = qidao.compile(fn, example_inputs=(good,), checks=True)
        torch.testing.assert_close(compiled(good), fn(good))
        try:
            want = fn(negative)
        except (IndexError, RuntimeError):  # PyTorch rejects it: so must qidao
            with pytest.raises(qidao.CheckError, match="valid indices are 0 to"):
                compiled(negative)
        else:
            assert name == "index"
            torch.testing.assert_close(compiled(negative), want)


def test_cuda_emulator() -> None:
    proto = model(GATHER, {"x": X, "i": np.array([1, 2], np.int64)})
    compiled: Any = qidao.compile(proto, target="cuda", device="emulate", checks=True)
    assert [s.name for s in compiled.outputs] == ["y"]
    np.testing.assert_array_equal(compiled(X, np.array([1, 2]))[0], X[[1, 2]])
    with pytest.raises(qidao.CheckError, match="index 9 is out of bounds"):
        compiled(X, np.array([1, 9]))


def test_a_cached_program_keeps_its_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QIDAO_CACHE", "on")
    monkeypatch.setenv("QIDAO_CACHE_DIR", str(tmp_path))
    proto = model(GATHER, {"x": X, "i": np.array([1, 2], np.int64)})
    cold = qidao.compile(proto, checks=True, verify="stage")
    warm: Any = qidao.compile(proto, checks=True, verify="stage")
    assert warm.stats["cache"] == "hit"
    assert [s.name for s in warm.outputs] == ["y"]
    np.testing.assert_array_equal(
        warm(X, np.array([4, 0]))[0], cold(X, np.array([4, 0]))[0]
    )
    with pytest.raises(qidao.CheckError, match="index 5"):
        warm(X, np.array([5, 0]))
    unchecked = qidao.compile(proto, verify="stage")  # another key: no checks
    assert unchecked.stats["cache"].startswith("miss")
    assert len(unchecked(X, np.array([5, 0]))) == 1


def test_checks_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="checks must be True or False, got 'yes'"):
        qidao.compile(
            model(GATHER, {"x": X, "i": np.array([1], np.int64)}), checks="yes"
        )
