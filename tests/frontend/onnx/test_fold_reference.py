"""``qidao.frontend.onnx.fold_reference``: small all-constant nodes without a NumPy
folder fold at import by ONNX's reference, so shapes computed from them fold."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.onnx.fold_reference import MAX_ELEMENTS, can_fold, reference_fold
from qidao.frontend.onnx.node import Node

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")


def _reshape_by_computed_shape() -> Any:
    """MobileViT's export: a Reshape target from ``Ceil(5 / 2.0) * 2`` (Ceil has no
    NumPy folder), cast to int64 and concatenated with -1."""
    nodes = [
        helper.make_node("Div", ["five", "two"], ["half"]),
        helper.make_node("Ceil", ["half"], ["up"]),
        helper.make_node("Mul", ["up", "two"], ["even"]),
        helper.make_node("Cast", ["even"], ["n"], to=TensorProto.INT64),
        helper.make_node("Concat", ["n", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array([5.0], np.float32), "five"),
            numpy_helper.from_array(np.array([2.0], np.float32), "two"),
            numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_shape_computed_through_an_op_without_a_folder_folds() -> None:
    model = _reshape_by_computed_shape()
    compiled = qidao.compile(model)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert y.shape == expected.shape == (6, 4)
    np.testing.assert_array_equal(y, expected)
    assert "tg.ceil" not in compiled.ir("tg")  # evaluated at import, not compiled


def _node(op_type: str, **attrs: Any) -> Node:
    return Node(helper.make_node(op_type, ["a"], ["b"], **attrs), 0, 17)


def test_what_does_not_fold_here() -> None:
    small = np.zeros(3, np.float32)
    assert can_fold(_node("Ceil"), [small])
    assert not can_fold(_node("Ceil"), [np.zeros(MAX_ELEMENTS + 1, np.float32)])
    assert not can_fold(_node("RandomUniformLike"), [small])  # random: never
    assert not can_fold(_node("Ceil"), [])  # no inputs
    body = helper.make_graph([], "body", [], [])
    assert not can_fold(_node("If", then_branch=body, else_branch=body), [small])


def test_a_node_the_reference_cannot_evaluate_is_left_to_its_converter() -> None:
    """``Gelu`` first appears in opset 20: at opset 17 the reference has no version
    of it, so the fold gives way (None) instead of raising."""
    node = Node(helper.make_node("Gelu", ["a"], ["b"]), 0, 17)
    args: list[Any] = [np.ones(3, np.float32)]
    assert can_fold(node, args) and reference_fold(node, args) is None
    node.opset = 20
    folded = reference_fold(node, args)
    assert folded is not None
    expected = 0.5 * (1 + math.erf(1 / math.sqrt(2)))
    np.testing.assert_allclose(folded[0], np.full(3, expected), rtol=1e-6)
