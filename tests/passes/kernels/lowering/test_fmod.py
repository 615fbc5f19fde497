"""``tg.fmod`` (LLVM's ``frem``: C's ``fmod``) compiled with ``qidao.compile``,
bit for bit against NumPy's ``fmod`` (exact in every dtype): negative dividends and
divisors, zeros of both signs, remainders of huge quotients (``3e38 fmod 1e-38``),
``x fmod 0`` and ``inf fmod y`` (NaN), ``x fmod inf`` (``x``), NaN; f16, f32, f64.
"""

from __future__ import annotations

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

DIVIDENDS = [
    5.5,
    -5.5,
    7.0,
    -7.0,
    0.0,
    -0.0,
    3e38,
    -1e-38,
    np.inf,
    -np.inf,
    np.nan,
    1.0,
]
DIVISORS = [2.0, -2.0, 0.0, -0.0, 1e-38, -3.5, np.inf, -np.inf, np.nan, 0.1, 7.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_fmod_matches_numpy_bit_for_bit(dtype: str) -> None:
    with np.errstate(over="ignore", under="ignore"):
        a = np.array(DIVIDENDS, dtype).reshape(-1, 1)
        b = np.array(DIVISORS, dtype)
        rng = np.random.default_rng(3)
        ra, rb = (rng.uniform(-100, 100, 64).astype(dtype) for _ in range(2))
    g = Graph()
    x, y = g.input("x", a.shape, dtype), g.input("y", b.shape, dtype)
    rx, ry = g.input("rx", ra.shape, dtype), g.input("ry", rb.shape, dtype)
    g.output(g.fmod(x, y), g.fmod(rx, ry))
    grid, pairs = qidao.compile(g)(a, b, ra, rb)
    with np.errstate(invalid="ignore"):
        want_grid, want_pairs = np.fmod(a, b), np.fmod(ra, rb)
    for got, want in ((grid, want_grid), (pairs, want_pairs)):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
