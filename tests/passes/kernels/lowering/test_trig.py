"""The ops of ``qidao/dialects/tg/trig.py`` (libm calls: ``tanf``, ``asinf``, ...)
compiled with ``qidao.compile``, against NumPy in float64: within 2 ulp on float32
and float64 (libm's functions are within one), f16 computing in f32 and rounded
once; and C99's special values: the domain edges (``atanh(+-1) = +-inf``,
``acosh(1) = 0``), NaN outside the domain, signed zeros kept by the odd functions,
infinities (``cosh(+-inf) = inf``, ``atan(+-inf) = +-pi/2``, ``tan(inf)`` NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]

FUNCTIONS: dict[str, tuple[Callable[[Graph, Value], Value], Any, float, float]] = {
    "tan": (Graph.tan, np.tan, -1.5, 1.5),
    "asin": (Graph.asin, np.arcsin, -1.0, 1.0),
    "acos": (Graph.acos, np.arccos, -1.0, 1.0),
    "atan": (Graph.atan, np.arctan, -20.0, 20.0),
    "sinh": (Graph.sinh, np.sinh, -10.0, 10.0),
    "cosh": (Graph.cosh, np.cosh, -10.0, 10.0),
    "asinh": (Graph.asinh, np.arcsinh, -50.0, 50.0),
    "acosh": (Graph.acosh, np.arccosh, 1.0, 50.0),
    "atanh": (Graph.atanh, np.arctanh, -1.0, 1.0),
}
"""name -> builder method, NumPy reference, the domain sampled."""

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 1e-30, np.inf, -np.inf, np.nan]
"""Every function sees these too (inside, on the edge of, and outside its domain)."""


def _inputs(name: str, dtype: str) -> Array:
    _, _, low, high = FUNCTIONS[name]
    rng = np.random.default_rng(len(name))
    sample = rng.uniform(low, high, 200)
    return np.concatenate([np.array(SPECIAL), sample]).astype(dtype)


def _compiled(dtype: str, n: int) -> Callable[..., Any]:
    g = Graph()
    xs = [g.input(name, (n,), dtype) for name in FUNCTIONS]
    g.output(*(fn(g, x) for (fn, *_), x in zip(FUNCTIONS.values(), xs, strict=True)))
    return qidao.compile(g)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_trig_functions_match_numpy(dtype: str) -> None:
    inputs = [_inputs(name, dtype) for name in FUNCTIONS]
    got = _compiled(dtype, inputs[0].size)(*inputs)
    for name, x, y in zip(FUNCTIONS, inputs, got, strict=True):
        reference = FUNCTIONS[name][1]
        with np.errstate(all="ignore"):
            want = reference(x.astype(np.float64)).astype(dtype)
        assert y.dtype == np.dtype(dtype), name
        ulp = np.finfo(dtype).eps
        bad = ~np.isclose(y, want, rtol=2 * ulp, atol=0.0, equal_nan=True)
        assert not bad.any(), (
            f"{name}({x[bad][0]!r}) = {y[bad][0]!r}, expected {want[bad][0]!r} "
            f"({int(bad.sum())} of {x.size} differ)"
        )
        odd = name not in ("acos", "cosh", "acosh")
        if odd:  # f(-0) = -0, f(0) = 0
            assert np.signbit(y[1]) and not np.signbit(y[0]), name


def test_special_values() -> None:
    x = np.array([1.0, -1.0, np.inf, -np.inf, 1.5], np.float32)
    g = Graph()
    v = g.input("x", x.shape, "float32")
    g.output(g.atanh(v), g.acosh(v), g.cosh(v), g.atan(v), g.tan(v), g.asin(v))
    atanh, acosh, cosh, atan, tan, asin = qidao.compile(g)(x)
    np.testing.assert_array_equal(atanh[:2], [np.inf, -np.inf])
    assert acosh[0] == 0.0 and np.isnan(acosh[1])
    np.testing.assert_array_equal(cosh[2:4], [np.inf, np.inf])
    np.testing.assert_allclose(atan[2:4], np.array([np.pi / 2, -np.pi / 2], np.float32))
    assert np.isnan(tan[2:4]).all()
    assert np.isnan(asin[4]) and np.isnan(atanh[4])
