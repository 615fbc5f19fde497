"""Long elementwise chains (issue 12, R7): a fused chain of thousands of ops, and an
ONNX Sum of hundreds of inputs, compile (no ``RecursionError`` in the elementwise
lowering) and compute what NumPy computes."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import qidao
from qidao.frontend.builder import Graph


def test_a_fused_chain_of_3000_ops_matches_numpy() -> None:
    g = Graph("main")
    x = g.input("x", (8,))
    y = x
    for i in range(3000):
        y = g.relu(y) + 0.001 if i % 2 else y * 0.999
    g.output(y)
    compiled = qidao.compile(g)
    assert compiled.stats["kernels"] == 1  # one fused kernel
    v = np.linspace(-1, 1, 8, dtype=np.float32)
    expected = v.copy()
    for i in range(3000):
        expected = (
            np.maximum(expected, 0) + np.float32(0.001)
            if i % 2
            else expected * np.float32(0.999)
        )
    (got,) = compiled(v)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_an_onnx_sum_of_700_inputs_matches_numpy() -> None:
    names = [f"x{i}" for i in range(700)]
    graph = helper.make_graph(
        [helper.make_node("Sum", names, ["y"])],
        "sum",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in names],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(4).astype(np.float32) for _ in names]
    (got,) = qidao.compile(model)(*inputs)
    np.testing.assert_allclose(got, np.sum(inputs, axis=0), rtol=1e-4, atol=1e-4)
