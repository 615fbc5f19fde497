"""ONNX ``LpNormalization`` (``qidao/frontend/onnx/norm.py``) compiled with
``qidao.compile``, against ONNX Runtime and ONNX's reference: ``p`` 1 and 2, every
axis (negative too), a slice whose norm is 0 (0 out), float32 and float64; and the
error for ``p=3``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

SHAPE = (2, 3, 4)


def model(p: int, axis: int, dtype: Any = np.float32) -> Any:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis, name="lp")
    graph = helper.make_graph(
        [node],
        "lp",
        [helper.make_tensor_value_info("x", elem, SHAPE)],
        [helper.make_tensor_value_info("y", elem, SHAPE)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _lp_normalized(x: Any, p: int, axis: int) -> Any:
    """The formula of ONNX's own test cases: ``x / norm``, 0 where the norm is 0
    (ONNX's reference takes ``sum(x)``, not ``sum(|x|)``, for ``p=1``)."""
    norm = np.sum(np.abs(x) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    with np.errstate(invalid="ignore"):
        return np.where(norm == 0, 0.0, x / norm)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_against_numpy_and_onnxruntime(p: int, axis: int) -> None:
    x = np.random.default_rng(p).standard_normal(SHAPE).astype(np.float32)
    m = model(p, axis)
    (got,) = qidao.compile(m)(x)
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        got, _lp_normalized(x.astype(np.float64), p, axis), rtol=1e-6
    )


@pytest.mark.parametrize("p", [1, 2])
def test_a_zero_norm_gives_zero(p: int) -> None:
    """As ONNX's reference and test cases (ONNX Runtime gives NaN for 0 / 0)."""
    x = np.random.default_rng(p).standard_normal(SHAPE).astype(np.float32)
    x[0, :, 0] = 0.0
    m = model(p, 1)
    (got,) = qidao.compile(m)(x)
    np.testing.assert_allclose(
        got, _lp_normalized(x.astype(np.float64), p, 1), rtol=1e-6
    )
    assert (got[0, :, 0] == 0.0).all()
    if p == 2:
        (reference,) = ReferenceEvaluator(m).run(None, {"x": x})
        np.testing.assert_allclose(got, np.asarray(reference), rtol=1e-6)


def test_float64() -> None:
    x = np.random.default_rng(3).standard_normal(SHAPE)
    m = model(2, -1, np.float64)
    (got,) = qidao.compile(m)(x)
    want = x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_p_3_is_an_error_naming_the_node() -> None:
    with pytest.raises(OnnxImportError, match=r"lp.*p must be 1 or 2, got 3"):
        import_onnx(model(3, -1))
