"""Real models end to end (issue 5, part 6): a ResNet-style CNN and a transformer
encoder block, written in PyTorch (``qidao/examples/models.py``), through
every frontend: exported to ONNX, captured with torch.export, and as the
``torch.compile`` backend. Each must match PyTorch eager to 1e-4 relative.

Also the ONNX converters these models need: ``LayerNormalization`` and
``LogSoftmax`` (``qidao/frontend/onnx/norm.py``), against ONNX's reference
evaluator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.bench.workloads import run_worker, runs_on
from qidao.examples.models import (
    MODELS,
    model_inputs,
    onnx_model,
)
from qidao.frontend.errors import OnnxImportError

RTOL, ATOL = 1e-4, 1e-5
NAMES = sorted(MODELS)


def _eager(name: str, x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    build, _ = MODELS[name]
    with torch.no_grad():
        y: np.ndarray[Any, Any] = build()(torch.from_numpy(x)).numpy()
    return y


def _close(got: Any, want: np.ndarray[Any, Any]) -> None:
    if isinstance(got, torch.Tensor):
        got = got.detach().numpy()
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.fixture(scope="module", params=NAMES)
def model_case(request: pytest.FixtureRequest) -> tuple[str, np.ndarray[Any, Any]]:
    name = str(request.param)
    (x,) = model_inputs(name, np.random.default_rng(3))
    return name, x


def test_models_are_what_the_issue_asks_for() -> None:
    ops = {name: {n.op_type for n in onnx_model(name).graph.node} for name in NAMES}
    # BatchNorm is folded into the convolutions by the exporter (eval mode)
    assert {"Conv", "Relu", "Add", "MaxPool", "GlobalAveragePool", "Gemm"} <= ops[
        "resnet"
    ]
    assert {
        "LayerNormalization",
        "MatMul",
        "Reshape",
        "Transpose",
        "Softmax",
        "Erf",
    } <= (ops["encoder"])


def test_onnx_export_matches_eager(model_case: tuple[str, Any]) -> None:
    name, x = model_case
    compiled = qidao.compile(onnx_model(name))
    (y,) = compiled(x)
    _close(y, _eager(name, x))
    assert compiled.stats["default_schedule"]  # every kernel got a verdict


def test_torch_export_capture_matches_eager(model_case: tuple[str, Any]) -> None:
    name, x = model_case
    build, _ = MODELS[name]
    compiled = qidao.compile(
        build(), example_inputs=(torch.from_numpy(x),), strict=True
    )
    _close(compiled(torch.from_numpy(x)), _eager(name, x))


def test_torch_compile_backend_matches_eager(model_case: tuple[str, Any]) -> None:
    name, x = model_case
    build, _ = MODELS[name]
    torch._dynamo.reset()
    fast = torch.compile(build(), backend="qidao")
    with torch.no_grad():
        y = fast(torch.from_numpy(x))
    _close(y, _eager(name, x))


# ---- the converters of norm.py ------------------------------------------------


def _single_node_model(
    node: Any, inputs: dict[str, tuple[int, ...]], outputs: list[str], opset: int
) -> Any:
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in inputs.items()
        ],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check_against_reference(model: Any, feeds: dict[str, Any]) -> None:
    want = ReferenceEvaluator(model).run(None, feeds)
    got = qidao.compile(model)(*feeds.values())
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_normalization_with_stash_outputs(axis: int) -> None:
    rng = np.random.default_rng(0)
    shape = (3, 4, 8)
    normalized = shape[axis % 3 :]
    node = helper.make_node(
        "LayerNormalization",
        ["x", "scale", "bias"],
        ["y", "mean", "inv_std"],
        axis=axis,
        epsilon=1e-3,
    )
    model = _single_node_model(
        node,
        {"x": shape, "scale": normalized, "bias": normalized},
        ["y", "mean", "inv_std"],
        17,
    )
    feeds = {
        "x": rng.standard_normal(shape, dtype=np.float32),
        "scale": rng.standard_normal(normalized, dtype=np.float32),
        "bias": rng.standard_normal(normalized, dtype=np.float32),
    }
    _check_against_reference(model, feeds)


def test_layer_normalization_without_bias() -> None:
    rng = np.random.default_rng(1)
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y"])
    model = _single_node_model(node, {"x": (5, 16), "scale": (16,)}, ["y"], 17)
    feeds = {
        "x": rng.standard_normal((5, 16), dtype=np.float32),
        "scale": rng.standard_normal(16, dtype=np.float32),
    }
    _check_against_reference(model, feeds)


def test_layer_normalization_refuses_other_stash_types() -> None:
    node = helper.make_node(
        "LayerNormalization", ["x", "scale"], ["y"], stash_type=TensorProto.DOUBLE
    )
    model = _single_node_model(node, {"x": (2, 4), "scale": (4,)}, ["y"], 17)
    with pytest.raises(OnnxImportError, match="stash_type=11 is not supported"):
        qidao.compile(model)


def _log_softmax(x: np.ndarray[Any, Any], axis: int) -> np.ndarray[Any, Any]:
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=axis, keepdims=True)
    y = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return y.astype(np.float32)


@pytest.mark.parametrize(("opset", "axis"), [(13, -1), (13, 1), (11, 1), (11, 2)])
def test_log_softmax(opset: int, axis: int) -> None:
    """Before opset 13 the input is coerced to 2-D at ``axis`` (ONNX's reference
    evaluator implements only the opset 13 form, so NumPy is the reference)."""
    x = 3 * np.random.default_rng(2).standard_normal((2, 3, 5), dtype=np.float32)
    node = helper.make_node("LogSoftmax", ["x"], ["y"], axis=axis)
    model = _single_node_model(node, {"x": x.shape}, ["y"], opset)
    if opset >= 13:
        want = _log_softmax(x, axis)
    else:
        want = _log_softmax(x.reshape(int(np.prod(x.shape[:axis])), -1), 1)
    (y,) = qidao.compile(model)(x)
    np.testing.assert_allclose(y, want.reshape(x.shape), rtol=1e-5, atol=1e-5)


# ---- the bench's onnxruntime backend ------------------------------------------


def test_onnxruntime_backend_runs_the_models_only() -> None:
    assert runs_on("encoder", "onnxruntime") and runs_on("resnet", "onnxruntime")
    assert not runs_on("chain", "onnxruntime")
    result = run_worker("encoder", "onnxruntime", 1, 0.01, 5)  # checks the output
    assert len(result["times"]) >= 5 and result["compile_s"] > 0
