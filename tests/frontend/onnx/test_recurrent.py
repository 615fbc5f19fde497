"""ONNX ``RNN``, ``GRU`` and ``LSTM`` (``qidao/frontend/onnx/recurrent.py``): the
layers unrolled over time, checked against ONNX Runtime."""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 3, 3, 5, 4


def _model(
    op: str,
    *,
    direction: str = "forward",
    layout: int = 0,
    dtype: type = np.float32,
    bias: bool = True,
    initial: bool = False,
    lens: bool = False,
    peepholes: bool = False,
    outputs: tuple[str, ...] = ("Y", "Y_h", "Y_c"),
    seed: int = 0,
    **attrs: Any,
) -> tuple[Any, dict[str, Array]]:
    """An ``op`` node with random weights (initializers) and its runtime feeds."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    gh = GATES[op] * HIDDEN
    elem = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT

    def rand(*shape: int) -> Array:
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)

    x_shape = [BATCH, SEQ, INPUT] if layout else [SEQ, BATCH, INPUT]
    state = [BATCH, dirs, HIDDEN] if layout else [dirs, BATCH, HIDDEN]
    feeds = {"X": rand(*x_shape)}
    inits = [
        numpy_helper.from_array(rand(dirs, gh, INPUT), "W"),
        numpy_helper.from_array(rand(dirs, gh, HIDDEN), "R"),
    ]
    names = ["X", "W", "R", "", "", "", "", ""]
    if bias:
        inits.append(numpy_helper.from_array(rand(dirs, 2 * gh), "B"))
        names[3] = "B"
    if lens:
        feeds["sequence_lens"] = np.array([SEQ, 1, 2], np.int32)
        names[4] = "sequence_lens"
    if initial:
        feeds["initial_h"] = rand(*state)
        names[5] = "initial_h"
        if op == "LSTM":
            feeds["initial_c"] = rand(*state)
            names[6] = "initial_c"
    if peepholes:
        inits.append(numpy_helper.from_array(rand(dirs, 3 * HIDDEN), "P"))
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    wanted = [o for o in ("Y", "Y_h", "Y_c")[: 3 if op == "LSTM" else 2]]
    node_outputs = [o if o in outputs else "" for o in wanted]
    while node_outputs and not node_outputs[-1]:
        node_outputs.pop()
    node = helper.make_node(
        op,
        names,
        node_outputs,
        hidden_size=HIDDEN,
        direction=direction,
        layout=layout,
        **attrs,
    )
    infos = []
    for name, array in feeds.items():
        kind = TensorProto.INT32 if array.dtype == np.int32 else elem
        infos.append(helper.make_tensor_value_info(name, kind, list(array.shape)))
    outs = [helper.make_tensor_value_info(o, elem, None) for o in node_outputs if o]
    graph = helper.make_graph([node], "g", infos, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model, feeds


def _check(model: Any, feeds: dict[str, Array], tol: float = 2e-5) -> None:
    """qidao's outputs equal ONNX Runtime's."""
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = qidao.compile(model)(*feeds.values())
    got = got if isinstance(got, list | tuple) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_every_direction_with_initial_state_and_sequence_lens(
    op: str, direction: str
) -> None:
    """Past its length a batch entry keeps its state and its ``Y`` rows are zero."""
    _check(*_model(op, direction=direction, initial=True, lens=True))


def _swap(array: Array) -> Array:
    return np.swapaxes(array, 0, 1)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_batch_first_layout(op: str) -> None:
    """``layout = 1`` equals ``layout = 0`` on the swapped tensors (ONNX Runtime
    has no ``layout = 1``): ``Y`` is ``[batch, seq, dirs, hidden]``, the states
    ``[batch, dirs, hidden]``."""
    model, feeds = _model(op, direction="bidirectional", layout=1, initial=True)
    plain, _ = _model(op, direction="bidirectional", initial=True)
    expected = ort.InferenceSession(plain.SerializeToString()).run(
        None, {k: _swap(v) for k, v in feeds.items()}
    )
    got = qidao.compile(model)(*feeds.values())
    y = np.transpose(expected[0], (2, 0, 1, 3))
    np.testing.assert_allclose(got[0], y, rtol=2e-5, atol=2e-5)
    for g, e in zip(got[1:], expected[1:], strict=True):
        np.testing.assert_allclose(g, _swap(e), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_without_bias_and_with_clip(op: str) -> None:
    _check(*_model(op, direction="reverse", bias=False, clip=0.4))


def test_gru_linear_before_reset() -> None:
    _check(*_model("GRU", direction="bidirectional", lens=True, linear_before_reset=1))


def test_lstm_peepholes_and_input_forget() -> None:
    _check(*_model("LSTM", peepholes=True, initial=True, input_forget=1))
    _check(*_model("LSTM", direction="bidirectional", peepholes=True, lens=True))


@pytest.mark.parametrize(
    ("op", "activations"),
    [
        ("RNN", ["Relu"]),
        ("GRU", ["Tanh", "Sigmoid", "Relu", "Tanh"]),
        ("LSTM", ["Tanh", "Relu", "Sigmoid"]),
    ],
)
def test_activations(op: str, activations: list[str]) -> None:
    direction = "bidirectional" if len(activations) == 4 else "forward"
    _check(*_model(op, direction=direction, activations=activations))


@pytest.mark.parametrize("outputs", [("Y",), ("Y_h", "Y_c")])
def test_any_output_may_be_omitted(outputs: tuple[str, ...]) -> None:
    _check(*_model("LSTM", outputs=outputs, lens=True))


def test_float64() -> None:
    """ONNX Runtime has no float64 LSTM: ONNX's reference evaluator is the oracle."""
    model, feeds = _model("LSTM", direction="bidirectional", dtype=np.float64)
    expected = ReferenceEvaluator(model).run(None, feeds)
    got = qidao.compile(model)(*feeds.values())
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_an_unsupported_activation_is_named() -> None:
    model, _ = _model("RNN", activations=["Softsign"])
    with pytest.raises(OnnxImportError, match="activation 'Softsign' is not supported"):
        qidao.compile(model)


def test_weights_of_the_wrong_shape_are_refused() -> None:
    model, _ = _model("GRU")
    model.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(np.zeros((1, 3 * HIDDEN, INPUT + 1), np.float32), "W")
    )
    with pytest.raises(OnnxImportError, match=r"GRU node .*W must be float32"):
        qidao.compile(model)


@pytest.mark.slow
def test_a_torch_exported_lstm_matches_pytorch() -> None:
    """``nn.LSTM`` (two layers, bidirectional, batch first) through
    ``torch.onnx.export``: two LSTM nodes between Transposes and Reshapes."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(5, 4, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(3, 2, 5)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(lstm.eval(), (x,), buffer, dynamo=False, opset_version=17)
    got = qidao.compile(onnx.load_from_string(buffer.getvalue()))(x.numpy())
    with torch.no_grad():
        y, (h, c) = lstm(x)
    for g, e in zip(got, [y, h, c], strict=True):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)
