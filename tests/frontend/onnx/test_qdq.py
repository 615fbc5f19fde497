"""QDQ convolution units fused into ``QLinearConv`` before import
(``qidao/frontend/onnx/qdq.py``): what fires, what must not, and a model
quantized by ONNX Runtime's ``quantize_static`` (U8S8, QDQ) that then runs on
the int8 kernel and agrees with ONNX Runtime's int8 output bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.onnx import import_onnx
from qidao.frontend.onnx.qdq import fuse_qdq_convs

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")
quantization = pytest.importorskip("onnxruntime.quantization")

RNG = np.random.default_rng(0)
SX, SW, SY = 0.02, np.full(4, 0.01, np.float32), 0.05


def unit(**change: Any) -> Any:
    """``x_q -> DQ -> Conv(DQ(w_q), DQ(b_q)) -> Q``: one QDQ convolution; ``change``
    overrides an initializer (``zw``, ``sb``) or makes the Conv's output also a
    graph output (``conv_is_output=True``)."""
    inits = {
        "sx": np.float32(SX),
        "zx": np.uint8(128),
        "wq": RNG.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8),
        "sw": SW,
        "zw": np.zeros(4, np.int8),
        "bq": RNG.integers(-500, 500, 4).astype(np.int32),
        "sb": (np.float32(SX) * SW).astype(np.float32),
        "zb": np.zeros(4, np.int32),
        "sy": np.float32(SY),
        "zy": np.uint8(3),
    }
    conv_is_output = change.pop("conv_is_output", False)
    inits.update(change)
    nodes = [
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["x"]),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], axis=0),
        helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["b"], axis=0),
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"]),
    ]
    outputs = [helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, 4, 6, 6])]
    if conv_is_output:
        outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, 3, 6, 6])],
        outputs,
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def ops(m: Any) -> list[str]:
    return [n.op_type for n in m.graph.node]


def test_a_unit_becomes_one_qlinear_conv_on_the_int8_kernel() -> None:
    m = unit()
    fused = fuse_qdq_convs(m)
    assert ops(fused).count("QLinearConv") == 1
    assert "Conv" not in ops(fused) and "QuantizeLinear" not in ops(fused)
    assert ops(m).count("Conv") == 1  # the model given is not changed
    assert "tg.matmul_integer" in str(import_onnx(m))
    xq = RNG.integers(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    (got,) = qidao.compile(m)(xq)
    session = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (want,) = session.run(None, {"xq": xq})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "change",
    [
        {"zw": np.array([0, 0, 1, 0], np.int8)},  # a weight zero point
        {"sb": np.full(4, 0.5, np.float32)},  # a bias scale that is not sx * sw
        {"conv_is_output": True},  # the float result is read too
        {"sy": np.array([0.05, 0.05], np.float32)},  # an output scale per axis
    ],
    ids=["weight-zero-point", "bias-scale", "conv-read-twice", "output-per-axis"],
)
def test_units_that_are_not_exactly_qlinear_conv_stay(change: dict[str, Any]) -> None:
    assert "QLinearConv" not in ops(fuse_qdq_convs(unit(**change)))


class _Cnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.c3 = torch.nn.Conv2d(32, 32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        return self.c3(x) + x


class _Images(quantization.CalibrationDataReader):  # type: ignore[misc]
    def __init__(self) -> None:
        batches = [RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)] * 4
        self.batches = iter([{"x": b} for b in batches])

    def get_next(self) -> dict[str, np.ndarray[Any, Any]] | None:
        return next(self.batches, None)


def test_a_statically_quantized_u8s8_cnn_is_onnxruntime_bit_for_bit(
    tmp_path: Path,
) -> None:
    torch.manual_seed(0)
    torch.onnx.export(
        _Cnn().eval(),
        (torch.randn(1, 3, 12, 12),),
        str(tmp_path / "cnn.onnx"),
        opset_version=17,
        dynamo=False,
        input_names=["x"],
        output_names=["y"],
    )
    quantized = tmp_path / "cnn_u8s8.onnx"
    quantization.quantize_static(
        str(tmp_path / "cnn.onnx"),
        str(quantized),
        _Images(),
        quant_format=quantization.QuantFormat.QDQ,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8,
        per_channel=True,
    )
    m = onnx.load(str(quantized))
    assert ops(fuse_qdq_convs(m)).count("QLinearConv") == 3
    x = RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)
    (got,) = qidao.compile(m)(x)
    session = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(got, want)


def _qlinear_1x1(runtime: bool, scale: np.ndarray[Any, Any]) -> Any:
    """A ``QLinearConv`` 1x1 of 64 input channels to 8 (small weights, so that the
    sums stay in the output's range), per-channel weight scale ``scale``, odd
    output zero point; ``runtime``: marked as ``qdq.py`` marks the
    units it fuses."""
    inits = {
        "sx": np.float32(1.0),
        "zx": np.uint8(0),
        "w": RNG.integers(-3, 4, (8, 64, 1, 1)).astype(np.int8),
        "sw": scale.astype(np.float32),
        "zw": np.zeros(8, np.int8),
        "sy": np.float32(1.0),
        "zy": np.uint8(101),
    }
    node = helper.make_node(
        "QLinearConv", ["xq", "sx", "zx", "w", "sw", "zw", "sy", "zy"], ["yq"]
    )
    if runtime:
        node.attribute.append(helper.make_attribute("qidao_float32_requantize", 1))
    graph = helper.make_graph(
        [node],
        "q",
        [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, 64, 16, 16])],
        [helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, 8, 16, 16])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("runtime", [False, True], ids=["reference", "runtime"])
def test_requantization_arithmetic_of_each_reading(runtime: bool) -> None:
    """A fused QDQ unit requantizes as ONNX Runtime's ``MlasRequantizeOutput``
    (float32 product, clip to ``[-zp, 255 - zp]``, round half to even, plus the
    zero point); an explicit ``QLinearConv`` as ONNX's reference (float64
    product plus the zero point, clip, round). Multipliers of many mantissa bits,
    so that the two readings differ somewhere: each matches its own NumPy model
    exactly, and they differ from each other: at an exact tie (a multiplier of 0.5
    or 0.25 and odd sums) ONNX Runtime rounds before adding the odd zero point,
    the reference after."""
    scale = np.array([0.5, 0.25, *(np.arange(1, 7) * 0.123456789 / 7)], np.float32)
    m = _qlinear_1x1(runtime, scale)
    x = RNG.integers(0, 4, (1, 64, 16, 16)).astype(np.uint8)
    (got,) = qidao.compile(m)(x)
    (w,) = (numpy_helper.to_array(t) for t in m.graph.initializer if t.name == "w")
    w = w.reshape(8, 64).astype(np.int64)
    acc = np.einsum("oc,nchw->nohw", w, x.astype(np.int64)).astype(np.int32)
    multiplier = (np.float32(1.0) * scale / np.float32(1.0))[None, :, None, None]
    f32 = acc.astype(np.float32) * multiplier
    ort_like = np.round(np.clip(f32, -101, 255 - 101)) + 101
    f64 = acc.astype(np.float64) * multiplier.astype(np.float64) + 101
    reference = np.round(np.clip(f64, 0, 255))
    want, other = (ort_like, reference) if runtime else (reference, ort_like)
    np.testing.assert_array_equal(got, want.astype(np.uint8))
    assert (got != other.astype(np.uint8)).any()
    tg = qidao.compile(m).ir("tg")
    assert ("xf64>" in tg) != runtime
