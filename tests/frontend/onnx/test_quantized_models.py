"""Models quantized by ONNX Runtime's tools compile with ``qidao.compile`` and give
ONNX Runtime's outputs (``qidao/frontend/onnx/quantize.py``).

- ``quantize_dynamic`` of a PyTorch MLP (opset 17): ``DynamicQuantizeLinear``,
  ``MatMulInteger``, a cast and the scale products. Every step is an exact
  integer computation or the same IEEE float operation in the same order, so the
  output is ONNX Runtime's bit for bit, with its graph optimizations (fused
  kernels) on or off.
- ``quantize_static`` in QDQ format of a small CNN, calibrated on random data:
  ``QuantizeLinear``/``DequantizeLinear`` around float ``Conv``/``Gemm``, int8
  activations (S8S8). Both fuse each convolution unit into ``QLinearConv``
  (``qidao/frontend/onnx/qdq.py``); qidao computes an int8 input's
  convolution exactly in float64 and requantizes in float64 where ONNX Runtime
  uses int8 kernels with a float32 requantization; both round to the same grid,
  so the outputs agree to within one quantization step of the output (a sum that
  lands within rounding of a tie may round the other way). The U8S8 case, on
  qidao's int8 kernel and bit for bit: ``test_qdq.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import torch

import qidao

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")
quantization = pytest.importorskip("onnxruntime.quantization")

RNG = np.random.default_rng(0)


def _export(net: torch.nn.Module, example: torch.Tensor, path: Path) -> None:
    torch.onnx.export(
        net.eval(),
        (example,),
        str(path),
        opset_version=17,
        dynamo=False,
        input_names=["x"],
        output_names=["y"],
    )


def _ort(path: Path, x: np.ndarray[Any, Any], optimize: bool) -> np.ndarray[Any, Any]:
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"]
    )
    (y,) = session.run(None, {"x": x})
    return np.asarray(y)


def test_dynamically_quantized_mlp_is_onnxruntime_bit_for_bit(tmp_path: Path) -> None:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)
    )
    _export(mlp, torch.randn(4, 16), tmp_path / "mlp.onnx")
    quantized = tmp_path / "mlp_int8.onnx"
    quantization.quantize_dynamic(
        str(tmp_path / "mlp.onnx"),
        str(quantized),
        weight_type=quantization.QuantType.QInt8,
    )
    ops = {n.op_type for n in onnx.load(str(quantized)).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    (y,) = qidao.compile(onnx.load(str(quantized)))(x)
    for optimize in (False, True):
        np.testing.assert_array_equal(y, _ort(quantized, x, optimize))


class _SmallCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, stride=2)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        return self.fc(torch.flatten(x, 1))


class _RandomImages(quantization.CalibrationDataReader):  # type: ignore[misc]
    def __init__(self) -> None:
        batches = [RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)]
        self.batches = iter([{"x": b} for b in batches * 8])

    def get_next(self) -> dict[str, np.ndarray[Any, Any]] | None:
        return next(self.batches, None)


def test_statically_quantized_qdq_cnn_is_onnxruntime_to_the_step(
    tmp_path: Path,
) -> None:
    torch.manual_seed(0)
    _export(_SmallCnn(), torch.randn(1, 3, 8, 8), tmp_path / "cnn.onnx")
    quantized = tmp_path / "cnn_qdq.onnx"
    quantization.quantize_static(
        str(tmp_path / "cnn.onnx"),
        str(quantized),
        _RandomImages(),
        quant_format=quantization.QuantFormat.QDQ,
        activation_type=quantization.QuantType.QInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    model = onnx.load(str(quantized))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") >= 4 and "Conv" in ops
    scales = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    step = float(scales[model.graph.node[-1].input[1]])  # the output's scale
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    (y,) = qidao.compile(model)(x)
    for optimize in (False, True):
        want = _ort(quantized, x, optimize)
        assert np.abs(y - want).max() <= step * 1.0001
