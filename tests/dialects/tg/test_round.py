"""``tg.round`` (``qidao/dialects/tg/round.py``) compiled and in the NumPy evaluator:
half to even, exact, against NumPy's ``round`` for float16, float32 and float64:
ties of both parities and signs, the sign of a zero result, values too large to
have a fraction, infinities and NaN."""

from __future__ import annotations

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError


def _points(dtype: str) -> np.ndarray:
    big = {"float16": 1024.5, "float32": 8388607.5, "float64": 4503599627370495.5}
    huge = np.finfo(dtype).max
    special = [0.0, -0.0, -0.3, 0.3, np.inf, -np.inf, np.nan, big[dtype], huge, -huge]
    halves = np.arange(-6, 6) + 0.5
    rng = np.random.default_rng(1)
    others = rng.uniform(-100, 100, 12)
    return np.concatenate([special, halves, -halves, others]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_compiled_round_is_numpy_round(dtype: str) -> None:
    x = _points(dtype)
    g = Graph()
    g.output(g.round(g.input("x", x.shape, dtype)))
    (got,) = qidao.compile(g)(x)
    want = np.round(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all(), "a zero keeps x's sign"


def test_round_of_integers_is_refused() -> None:
    g = Graph()
    with pytest.raises(GraphError, match=r"tg\.round expects float tensors"):
        g.round(g.input("x", (3,), "int32"))
