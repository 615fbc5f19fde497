"""What ``qidao.compile`` returns, in each of its cases, is a ``CompiledModel``: the
same three things (``stats``, ``ir(stage)``, a call) whatever the model, target
and options; each case checked against NumPy (docs/python.md, "What compile
returns")."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.compiler.compiled import CompiledModel
from qidao.frontend.builder import Graph

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 3)).astype(np.float32)
W = RNG.standard_normal((3, 4)).astype(np.float32)


def relu_matmul() -> Graph:
    g = Graph("main")
    g.output(g.relu(g.input("x", (2, 3)) @ g.input("w", (3, 4))))
    return g


def onnx_model(batch: int | str) -> onnx.ModelProto:
    """relu(x @ w) with ``w`` an initializer; ``batch`` a size or a dim_param."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Relu", ["m"], ["y"]),
        ],
        "main",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])],
        [numpy_helper.from_array(W, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def check_contract(compiled: Any, kind: str) -> None:
    assert isinstance(compiled, CompiledModel)
    assert type(compiled).__name__ == kind
    assert isinstance(compiled.stats, dict) and compiled.stats["kernels"] >= 1
    assert "tg.matmul" in compiled.ir("tg")


def test_a_program_for_the_cpu() -> None:
    compiled = qidao.compile(relu_matmul())
    (y,) = compiled(X, W)
    np.testing.assert_allclose(y, np.maximum(X @ W, 0), rtol=1e-5)
    check_contract(compiled, "Compiled")


def test_a_program_for_the_gpu_on_the_emulator() -> None:
    compiled = qidao.compile(relu_matmul(), target="cuda", device="emulate")
    (y,) = compiled(X, W)
    np.testing.assert_allclose(y, np.maximum(X @ W, 0), rtol=1e-5)
    check_contract(compiled, "CompiledCuda")
    assert "__global__" in compiled.ir("cuda")


def test_a_model_with_dynamic_dimensions_compiles_per_shape() -> None:
    compiled = qidao.compile(onnx_model("batch"))
    for batch in (2, 5):
        x = RNG.standard_normal((batch, 3)).astype(np.float32)
        (y,) = compiled(x)
        np.testing.assert_allclose(y, np.maximum(x @ W, 0), rtol=1e-5)
    check_contract(compiled, "Specialized")  # ir and stats: the last call's program


def test_a_model_with_symbolic_dimensions_compiles_once() -> None:
    compiled = qidao.compile(onnx_model("batch"), dynamic={"batch": (1, 8)})
    for batch in (2, 5):
        x = RNG.standard_normal((batch, 3)).astype(np.float32)
        (y,) = compiled(x)
        np.testing.assert_allclose(y, np.maximum(x @ W, 0), rtol=1e-5)
    check_contract(compiled, "SymbolicProgram")


def test_a_model_with_a_size_that_is_data_compiles_in_stages() -> None:
    """relu(x @ w) of the rows of ``x`` with a positive sum (``NonZero``): the
    stage before, then the rest per count; the contract holds over both."""
    model = onnx_model(2)
    graph = model.graph
    graph.node.insert(
        0, helper.make_node("ReduceSum", ["x0", "one"], ["s"], keepdims=0)
    )
    graph.node.insert(1, helper.make_node("Greater", ["s", "zero"], ["pos"]))
    graph.node.insert(2, helper.make_node("NonZero", ["pos"], ["rows2"]))
    graph.node.insert(3, helper.make_node("Squeeze", ["rows2", "zero_i"], ["rows"]))
    graph.node.insert(4, helper.make_node("Gather", ["x0", "rows"], ["x"], axis=0))
    graph.input[0].CopyFrom(
        helper.make_tensor_value_info("x0", TensorProto.FLOAT, [4, 3])
    )
    graph.output[0].CopyFrom(
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])
    )
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array([1], np.int64), "one"),
            numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
            numpy_helper.from_array(np.array([0], np.int64), "zero_i"),
        ]
    )
    compiled = qidao.compile(model)
    x0 = RNG.standard_normal((4, 3)).astype(np.float32)
    x0[1] = np.abs(x0[1])  # at least one row kept
    (y,) = compiled(x0)
    x = x0[x0.sum(axis=1) > 0]
    np.testing.assert_allclose(y, np.maximum(x @ W, 0), rtol=1e-5)
    check_contract(compiled, "Specialized")
    assert "// stage 2 of 2: the rest" in compiled.ir("tg")


def test_held_parameters_with_grad() -> None:
    compiled = qidao.compile(onnx_model(2), grad=["w"])
    y, dw = compiled(X)
    np.testing.assert_allclose(y, np.maximum(X @ W, 0), rtol=1e-5)
    np.testing.assert_allclose(dw, X.T @ (X @ W > 0).astype(np.float32), rtol=1e-5)
    check_contract(compiled, "WithParameters")


def test_a_training_step() -> None:
    g = Graph("main")
    x, w = g.input("x", (2, 3)), g.input("w", (3, 4))
    g.output(g.reduce_sum(g.relu(x @ w), [0, 1]))
    step = qidao.compile(
        g, grad=["w"], optimizer=qidao.optim.SGD(lr=0.5), weights={"w": W.copy()}
    )
    (loss,) = step(X)
    np.testing.assert_allclose(loss, np.maximum(X @ W, 0).sum(), rtol=1e-5)
    want = W - 0.5 * X.T @ (X @ W > 0).astype(np.float32)
    np.testing.assert_allclose(step.parameters["w"], want, rtol=1e-5, atol=1e-6)
    check_contract(step, "TrainingStep")


def test_a_pytorch_module() -> None:
    torch = pytest.importorskip("torch")
    linear = torch.nn.Linear(3, 4, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(W.T.copy()))
    module = torch.nn.Sequential(linear, torch.nn.ReLU()).eval()
    compiled = qidao.compile(module, example_inputs=(torch.from_numpy(X),))
    y = compiled(torch.from_numpy(X))
    np.testing.assert_allclose(y.numpy(), np.maximum(X @ W, 0), rtol=1e-5)
    check_contract(compiled, "TorchCompiled")
