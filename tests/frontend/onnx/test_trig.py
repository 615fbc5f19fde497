"""ONNX ``Sin`` and ``Cos`` (``qidao/frontend/onnx/elementwise.py``): ``tg.sin`` and
``tg.cos``, compiled with ``qidao.compile`` and run on the CPU, float32 and float64;
and ``Tan``, ``Asin``, ``Acos``, ``Atan``, ``Sinh``, ``Cosh``, ``Asinh``, ``Acosh``,
``Atanh`` (the ops of ``qidao/dialects/tg/trig.py``) on their domains and edges.

The oracles are ONNX Runtime on the same model and inputs, and NumPy in float64
(within 1e-6 relative on float32: libm's ``sinf``/``cosf`` are within one ulp). The
rotary position embedding of LLaMA-style decoders (``transformers``' export:
``Cos``/``Sin`` of ``positions x inverse frequencies``, then ``q * cos +
rotate_half(q) * sin``) is checked whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper, numpy_helper

import qidao
from qidao.frontend.onnx import SUPPORTED_OPS, import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def model(
    nodes: list[Any],
    inputs: dict[str, tuple[int, ...]],
    outputs: dict[str, tuple[int, ...]],
    dtype: Any = np.float32,
    initializers: dict[str, Array] | None = None,
) -> Any:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        nodes,
        "trig",
        [helper.make_tensor_value_info(n, elem, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, elem, s) for n, s in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def run_both(m: Any, **inputs: Array) -> tuple[list[Array], list[Array]]:
    """qidao's outputs and ONNX Runtime's."""
    want = ort.InferenceSession(m.SerializeToString()).run(None, inputs)
    got = [np.asarray(y) for y in qidao.compile(m)(*inputs.values())]
    return got, want


def test_sin_and_cos_are_supported() -> None:
    assert {"Sin", "Cos"} <= set(SUPPORTED_OPS)
    m = model(
        [helper.make_node("Sin", ["x"], ["s"]), helper.make_node("Cos", ["x"], ["c"])],
        {"x": (4,)},
        {"s": (4,), "c": (4,)},
    )
    text = str(import_onnx(m))
    assert "tg.sin" in text and "tg.cos" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op_type", ["Sin", "Cos"])
def test_against_onnxruntime_and_numpy(op_type: str, dtype: Any) -> None:
    x = np.concatenate(
        [
            np.array([0.0, -0.0, np.pi, -np.pi / 2, 1e-30, 2047.5, 1e5, -3e6]),
            RNG.uniform(-10, 10, 200),
            RNG.uniform(-1e4, 1e4, 200),
        ]
    ).astype(dtype)
    m = model(
        [helper.make_node(op_type, ["x"], ["y"])], {"x": x.shape}, {"y": x.shape}, dtype
    )
    (got,), (want,) = run_both(m, x=x)
    assert got.dtype == want.dtype == np.dtype(dtype)
    reference = getattr(np, op_type.lower())(x.astype(np.float64))
    rtol = 1e-6 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(got, reference, rtol=rtol, atol=0.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def rotary_model(batch: int, seq: int, dim: int, dtype: Any) -> Any:
    """q [batch, seq, dim] rotated by positions [seq, 1], as transformers' LLaMA."""
    half = dim // 2
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("MatMul", ["positions", "inv_freq"], ["freqs"]),
        helper.make_node("Concat", ["freqs", "freqs"], ["emb"], axis=-1),
        helper.make_node("Cos", ["emb"], ["cos"]),
        helper.make_node("Sin", ["emb"], ["sin"]),
        helper.make_node("Slice", ["q", "zero", "half", "last"], ["q1"]),
        helper.make_node("Slice", ["q", "half", "end", "last"], ["q2"]),
        helper.make_node("Neg", ["q2"], ["minus_q2"]),
        helper.make_node("Concat", ["minus_q2", "q1"], ["rotated"], axis=-1),
        helper.make_node("Mul", ["q", "cos"], ["a"]),
        helper.make_node("Mul", ["rotated", "sin"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"]),
    ]
    return model(
        nodes,
        {"q": (batch, seq, dim), "positions": (seq, 1)},
        {"y": (batch, seq, dim)},
        dtype,
        {
            "inv_freq": inv_freq.reshape(1, half).astype(dtype),
            "zero": i64(0),
            "half": i64(half),
            "end": i64(dim),
            "last": i64(-1),
        },
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_rotary_embedding(dtype: Any) -> None:
    batch, seq, dim = 2, 64, 16
    q = RNG.standard_normal((batch, seq, dim)).astype(dtype)
    positions = (np.arange(seq) * 64.0).reshape(seq, 1).astype(dtype)  # up to 4032
    (got,), (want,) = run_both(
        rotary_model(batch, seq, dim, dtype), q=q, positions=positions
    )
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


INVERSE_AND_HYPERBOLIC = {
    "Tan": (np.tan, -1.5, 1.5),
    "Asin": (np.arcsin, -1.0, 1.0),
    "Acos": (np.arccos, -1.0, 1.0),
    "Atan": (np.arctan, -30.0, 30.0),
    "Sinh": (np.sinh, -20.0, 20.0),
    "Cosh": (np.cosh, -20.0, 20.0),
    "Asinh": (np.arcsinh, -100.0, 100.0),
    "Acosh": (np.arccosh, 1.0, 100.0),
    "Atanh": (np.arctanh, -1.0, 1.0),
}
"""op type -> NumPy reference and the domain sampled."""


def test_inverse_and_hyperbolic_functions_are_supported() -> None:
    assert set(INVERSE_AND_HYPERBOLIC) <= set(SUPPORTED_OPS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op_type", list(INVERSE_AND_HYPERBOLIC))
def test_inverse_and_hyperbolic_against_numpy_and_onnxruntime(
    op_type: str, dtype: Any
) -> None:
    """Within 2 ulp of NumPy in float64 (the edges and outside the domain
    included: NaN and infinities as C99's), and of ONNX Runtime on float32 where
    it has the kernel (within its own accuracy)."""
    reference, low, high = INVERSE_AND_HYPERBOLIC[op_type]
    edges = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan]
    x = np.concatenate([edges, RNG.uniform(low, high, 100)]).astype(dtype)
    m = model(
        [helper.make_node(op_type, ["x"], ["y"])], {"x": x.shape}, {"y": x.shape}, dtype
    )
    (got,) = qidao.compile(m)(x)
    assert got.dtype == np.dtype(dtype)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(dtype)
    rtol = 2 * float(np.finfo(dtype).eps)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0.0, equal_nan=True)
    if dtype == np.float32:
        (runtime,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
        finite = np.isfinite(runtime) & (np.abs(x) < 10)
        np.testing.assert_allclose(got[finite], runtime[finite], rtol=1e-5, atol=1e-6)
