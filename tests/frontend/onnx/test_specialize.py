"""``qidao.frontend.onnx.specialize``: ONNX models compiled at the first call, specialized
on their integer inputs' values and dynamic input shapes, cached."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper

import qidao
from qidao import Compiled
from qidao.frontend.onnx import import_onnx, specialize
from qidao.frontend.onnx.specialize import Specialized
from qidao.runtime.errors import ArgumentError


def _model(
    nodes: list[Any], inputs: list[Any], out_shape: list[Any] | None = None
) -> Any:
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _reduce_model() -> Any:
    return _model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
        ],
    )


def test_axes_input_specializes_and_caches() -> None:
    compiled = qidao.compile(_reduce_model())
    assert isinstance(compiled, Specialized) and compiled.bound == ["axes"]
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for axis in (0, 2, 0, -1):
        (y,) = compiled(x, np.array([axis], np.int64))
        np.testing.assert_allclose(y, x.sum(axis=axis), rtol=1e-5, atol=1e-6)
    assert compiled.compiles == 3  # -1 and 2 are different values: compiled apart
    assert "tg.reduce_sum" in compiled.ir("tg")
    assert [s.name for s in compiled.inputs] == ["x"]


def test_dynamic_dims_take_the_given_shape() -> None:
    model = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        ["n", 3],
    )
    compiled = qidao.compile(model)
    for n in (1, 5, 1):
        x = np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3)
        (y,) = compiled(x)
        np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert compiled.compiles == 2


def test_cache_keeps_the_most_recent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specialize, "MAX_ENTRIES", 2)
    compiled = qidao.compile(_reduce_model())
    x = np.ones((2, 3, 4), np.float32)
    for axis in (0, 1, 2, 0):
        compiled(x, np.array([axis], np.int64))
    assert len(compiled.cache) == 2 and compiled.compiles == 4


def test_static_float_models_compile_ahead_of_time() -> None:
    model = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [3],
    )
    assert isinstance(qidao.compile(model), Compiled)


def test_bad_calls_are_argument_errors() -> None:
    compiled = qidao.compile(_reduce_model())
    for what in ("stats", "inputs", "outputs"):  # a qidao error, also a RuntimeError
        with pytest.raises(qidao.QidaoError, match="call it first") as info:
            getattr(compiled, what)
        assert isinstance(info.value, RuntimeError)
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ArgumentError, match=r"takes 2 input\(s\) \(x, axes\), got 1"):
        compiled(x)
    with pytest.raises(
        ArgumentError, match=r"'axes' .* int64 tensor, got an array of float"
    ):
        compiled(x, np.array([0.5]))
    with pytest.raises(ArgumentError, match="'x'"):
        compiled(np.ones((2, 3), np.float32), np.array([0]))


def test_import_binds_constants() -> None:
    module = import_onnx(_reduce_model(), constants={"axes": np.array([1])})
    assert "tensor<2x4xf32>" in str(module)
    with pytest.raises(Exception, match="not graph inputs"):
        import_onnx(_reduce_model(), constants={"nope": np.array([1])})


def test_a_path_specializes_too(tmp_path: Any) -> None:
    import onnx

    path = tmp_path / "reduce.onnx"
    onnx.save(_reduce_model(), path)
    compiled = qidao.compile(path)
    assert isinstance(compiled, Specialized)
    (y,) = compiled(np.ones((2, 3, 4), np.float32), np.array([1]))
    np.testing.assert_array_equal(y, np.full((2, 4), 3, np.float32))


# ---- integer inputs: runtime tensors unless the import needs their values -----------


def test_an_integer_input_that_feeds_arithmetic_stays_a_runtime_input() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["n", "n"], ["sq"]),
            helper.make_node("Cast", ["sq"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "f"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("n", TensorProto.INT64, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    compiled = qidao.compile(model)
    assert isinstance(compiled, Compiled)  # ahead of time: nothing to bind
    assert [s.dtype for s in compiled.inputs] == ["float32", "int64"]
    x = np.array([0.5, 1.0, 2.0], np.float32)
    for n in ([1, 2, 3], [-4, 0, 5]):
        (y,) = compiled(x, np.array(n, np.int64))
        np.testing.assert_array_equal(y, x + np.square(n).astype(np.float32))


def _reshape_by_computed_shape() -> Any:
    """``y = reshape(x, shape + 0) * k``: ``shape`` reaches a shape position
    through arithmetic, ``k`` only feeds arithmetic."""
    return _model(
        [
            helper.make_node("Add", ["shape", "zero"], ["target"]),
            helper.make_node("Reshape", ["x", "target"], ["r"]),
            helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["r", "kf"], ["y"]),
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("zero", TensorProto.INT64, [1]),
            helper.make_tensor_value_info("k", TensorProto.INT32, []),
        ],
    )


def test_an_input_that_reaches_a_shape_position_is_bound_the_rest_is_not() -> None:
    compiled = qidao.compile(_reshape_by_computed_shape())
    assert isinstance(compiled, Specialized)
    assert compiled.bound == ["shape", "zero"]  # the inputs of the needed value
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    zero = np.array([0], np.int64)
    for shape, k in (((3, 4), 2), ((3, 4), -1), ((4, 3), 2)):
        (y,) = compiled(x, np.array(shape, np.int64), zero, np.array(k, np.int32))
        np.testing.assert_array_equal(y, x.reshape(shape) * k)
    assert compiled.compiles == 2  # k is a runtime input: no recompile for it
    assert [s.name for s in compiled.inputs] == ["x", "k"]


def test_needed_inputs_walks_up_the_producers() -> None:
    model = _reshape_by_computed_shape()
    assert specialize.needed_inputs(model, ["target"]) == ["shape", "zero"]
    assert specialize.needed_inputs(model, ["kf"]) == ["k"]
    assert specialize.needed_inputs(model, ["x"]) == ["x"]


def test_a_bool_training_mode_input_is_bound() -> None:
    model = _model(
        [helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("t", TensorProto.BOOL, []),
        ],
    )
    compiled = qidao.compile(model)
    assert isinstance(compiled, Specialized) and compiled.bound == ["t"]
    x = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    (y,) = compiled(x, np.array(0.7, np.float32), np.array(False))
    np.testing.assert_array_equal(y, x)
    with pytest.raises(ArgumentError, match=r"'t' .* bool tensor, got an array of int"):
        compiled(x, np.array(0.7, np.float32), np.array(1))


def _resize_model(scales_shape: list[int]) -> Any:
    """Resize (nearest) whose scales are a graph input; the data is [1, 1, 2, 3]."""
    return _model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 3]),
            helper.make_tensor_value_info("scales", TensorProto.FLOAT, scales_shape),
        ],
    )


def test_a_small_float_input_that_fixes_a_shape_is_bound() -> None:
    """Resize's float scales fix the output shape: the specialization binds them
    (like an integer shape input), compiles per value, and matches ONNX Runtime."""
    ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")
    model = _resize_model([4])
    compiled = qidao.compile(model)
    assert isinstance(compiled, Specialized) and compiled.bound == ["scales"]
    session = ort.InferenceSession(model.SerializeToString())
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    for values in ([1, 1, 2, 2], [1, 1, 3, 1.5], [1, 1, 2, 2]):
        scales = np.array(values, np.float32)
        (y,) = compiled(x, scales)
        (expected,) = session.run(None, {"x": x, "scales": scales})
        np.testing.assert_array_equal(y, expected)
    assert compiled.compiles == 2
    assert [s.name for s in compiled.inputs] == ["x"]


def test_a_float_input_that_is_data_is_never_bound() -> None:
    """Scales sliced out of a 65-element float input (more than a scales vector):
    not bound, so the import's error names the value it needs."""
    model = _model(
        [
            helper.make_node("Slice", ["big", "starts", "ends"], ["scales"]),
            helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest"),
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 3]),
            helper.make_tensor_value_info("big", TensorProto.FLOAT, [65]),
        ],
    )
    model.graph.initializer.extend(
        [
            helper.make_tensor("starts", TensorProto.INT64, [1], [0]),
            helper.make_tensor("ends", TensorProto.INT64, [1], [4]),
        ]
    )
    assert specialize.bindable_inputs(model) == []
    with pytest.raises(qidao.QidaoError, match=r"scales.*must be a constant"):
        qidao.compile(model)
