"""ONNX ``BitwiseAnd``/``Or``/``Xor``/``Not`` and ``BitShift``
(``qidao/frontend/onnx/bitwise.py``) compiled with ``qidao.compile``, against ONNX
Runtime on the same model and inputs: integer dtypes, broadcasting, shift amounts
past the bit width (0, as ONNX Runtime gives); and the errors a user sees for a
float input or an unknown direction.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]


def model(
    node: Any, shapes: dict[str, tuple[int, ...]], out: tuple[int, ...], dtype: Any
) -> Any:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [node],
        "bitwise",
        [helper.make_tensor_value_info(n, elem, s) for n, s in shapes.items()],
        [helper.make_tensor_value_info("z", elem, out)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def run_both(m: Any, **inputs: Array) -> tuple[Array, Array]:
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, inputs)
    (got,) = qidao.compile(m)(*inputs.values())
    return np.asarray(got), want


def _random(dtype: Any, shape: tuple[int, ...], seed: int) -> Array:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16, np.uint64])
@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_binary_bitwise_against_onnxruntime(op_type: str, dtype: Any) -> None:
    x, y = _random(dtype, (3, 4, 5), 1), _random(dtype, (5,), 2)
    node = helper.make_node(op_type, ["x", "y"], ["z"])
    got, want = run_both(
        model(node, {"x": x.shape, "y": y.shape}, x.shape, dtype), x=x, y=y
    )
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.uint16, np.int8])
def test_bitwise_not_against_onnxruntime(dtype: Any) -> None:
    x = _random(dtype, (3, 4), 3)
    node = helper.make_node("BitwiseNot", ["x"], ["z"])
    got, want = run_both(model(node, {"x": x.shape}, x.shape, dtype), x=x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_against_onnxruntime(direction: str, dtype: Any) -> None:
    """Every value shifted by every amount from 0 to twice the width (broadcast)."""
    bits = np.iinfo(dtype).bits
    x = np.array([0, 1, 3, 255, np.iinfo(dtype).max], dtype).reshape(-1, 1)
    y = np.arange(2 * bits + 1).astype(dtype)
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)
    shapes = {"x": x.shape, "y": y.shape}
    got, want = run_both(model(node, shapes, (x.size, y.size), dtype), x=x, y=y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_float_input_is_an_error_naming_the_node() -> None:
    """ONNX's own type check refuses it at import (step 3 of the importer)."""
    node = helper.make_node("BitwiseAnd", ["x", "y"], ["z"], name="mask")
    m = model(node, {"x": (4,), "y": (4,)}, (4,), np.float32)
    with pytest.raises(
        OnnxImportError, match=r"mask.*unsupported type: tensor\(float\)"
    ):
        import_onnx(m)


def test_an_unknown_direction_is_an_error() -> None:
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction="UP")
    m = model(node, {"x": (4,), "y": (4,)}, (4,), np.uint8)
    with pytest.raises(OnnxImportError, match='direction must be "LEFT" or "RIGHT"'):
        import_onnx(m)
