"""``qidao.onnx_backend``: the ONNX backend API, driven by ONNX's own harness too."""

from __future__ import annotations

import unittest
import warnings
from typing import Any

import numpy as np
import onnx.backend.test
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao.onnx_backend as backend
from qidao.frontend.errors import UnsupportedOpsError


def _relu_add_model() -> Any:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Add", ["r", "b"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_prepare_and_run_take_a_list_a_dict_or_an_array() -> None:
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2, 3], np.float32)
    rep = backend.prepare(_relu_add_model(), "CPU")
    (y,) = rep.run([x, b])
    np.testing.assert_allclose(y, np.maximum(x, 0) + b)
    (y,) = rep.run({"b": b, "x": x})
    np.testing.assert_allclose(y, np.maximum(x, 0) + b)
    (y,) = backend.run_model(_relu_add_model(), [x, b])
    np.testing.assert_allclose(y, np.maximum(x, 0) + b)
    with pytest.raises(ValueError, match=r"inputs lack \['b'\]"):
        rep.run({"x": x})


def test_devices() -> None:
    assert backend.supports_device("CPU") and backend.supports_device("cpu:0")
    assert not backend.supports_device("CUDA")
    with pytest.raises(ValueError, match="runs on CPU, not 'CUDA'"):
        backend.prepare(_relu_add_model(), "CUDA")


def test_unsupported_ops_are_reported_by_prepare() -> None:
    model = _relu_add_model()
    model.graph.node[0].op_type = "Det"
    with pytest.raises(UnsupportedOpsError, match="Det"):
        backend.prepare(model)


def test_integer_shape_input_specializes_at_run() -> None:
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    rep = backend.prepare(model)
    (y,) = rep.run([x, np.array([3, 4], np.int64)])
    np.testing.assert_array_equal(y, x.reshape(3, 4))
    (y,) = rep.run([x, np.array([4, -1], np.int64)])
    np.testing.assert_array_equal(y, x.reshape(4, 3))


def test_onnx_backend_harness_runs_node_tests() -> None:
    """ONNX's ``BackendTest`` runs a few of its node tests through qidao; node tests
    are generated in memory, so no data files are needed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        harness = onnx.backend.test.BackendTest(backend.QidaoBackend, __name__)
    wanted = [
        "test_relu_cpu",
        "test_gemm_default_single_elem_vector_bias_cpu",
        "test_reshape_negative_dim_cpu",  # the shape is a graph input: specialized
        "test_softmax_axis_0_expanded_cpu",
        "test_conv_with_strides_padding_cpu",
    ]
    for name in wanted:
        harness.include(f"^{name}$")
    result = unittest.TestResult()
    harness.test_suite.run(result)
    ran = result.testsRun - len(result.skipped)
    problems = [f"{t}: {e}" for t, e in [*result.failures, *result.errors]]
    assert not problems, "\n".join(problems)
    assert ran == len(wanted)


def test_initializers_stay_constants() -> None:
    model = _relu_add_model()
    b = np.array([1, 2, 3], np.float32)
    model.graph.initializer.append(numpy_helper.from_array(b, "b"))
    del model.graph.input[1]
    (y,) = backend.run_model(model, np.ones((2, 3), np.float32))
    np.testing.assert_allclose(y, np.broadcast_to(1 + b, (2, 3)))
