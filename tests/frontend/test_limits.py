"""Tensor size limits (``qidao/frontend/limits.py``; issue 12, R12): a model that
asks for a tensor beyond ``$QIDAO_MAX_TENSOR_BYTES`` (default a quarter of the
physical memory) is a ``ResourceError`` naming the node, raised before anything that
large is allocated."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper

import qidao
from qidao.frontend.builder import Graph
from qidao.frontend.limits import ENV, max_tensor_bytes


def _model(nodes: list[Any], inputs: list[Any], inits: list[Any]) -> Any:
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _int64(name: str, values: list[int], shape: list[int] | None = None) -> Any:
    dims = [len(values)] if shape is None else shape
    return helper.make_tensor(name, TensorProto.INT64, dims, values)


HUGE = 1 << 40

CASES = {
    "ConstantOfShape": _model(
        [helper.make_node("ConstantOfShape", ["s"], ["y"])],
        [],
        [_int64("s", [1 << 20, 1 << 20])],
    ),
    "OneHot": _model(
        [helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
        [
            _int64("d", [HUGE], []),
            helper.make_tensor("v", TensorProto.FLOAT, [2], [0.0, 1.0]),
        ],
    ),
    "Expand": _model(
        [helper.make_node("Expand", ["c", "s"], ["y"])],
        [],
        [
            helper.make_tensor("c", TensorProto.FLOAT, [1], [1.0]),
            _int64("s", [HUGE]),
        ],
    ),
    "Range": _model(
        [
            helper.make_node("Range", ["a", "b", "c"], ["r"]),
            helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT),
        ],
        [],
        [_int64("a", [0], []), _int64("b", [HUGE], []), _int64("c", [1], [])],
    ),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_a_huge_tensor_is_refused_naming_the_node(op: str) -> None:
    with pytest.raises(qidao.ResourceError, match=rf"^{op} node '#0': a tensor of"):
        qidao.compile(CASES[op])


def test_the_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Graph("main")
    x = g.input("x", (64, 64))
    g.output(x + 1.0)
    qidao.compile(g)  # 16 KiB under the default
    monkeypatch.setenv(ENV, "1024")
    assert max_tensor_bytes() == 1024
    with pytest.raises(
        qidao.ResourceError, match=r"input 'x': .* 16.0 KiB\) is larger"
    ):
        Graph("main").input("x", (64, 64))
    small = Graph("main")
    y = small.input("y", (16,))  # 64 bytes
    with pytest.raises(qidao.ResourceError, match=r"broadcast|add|1024 B"):
        small.output(y + np.ones((64, 16), np.float32))
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(ValueError, match=r"QIDAO_MAX_TENSOR_BYTES must be a number"):
        max_tensor_bytes()
