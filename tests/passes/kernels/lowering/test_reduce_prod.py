"""``tg.reduce_prod`` (``qidao/passes/kernels/lowering/reduce.py``) compiled with
``qidao.compile``, against NumPy's ``prod``: the reduced-innermost nest (the last
axis reduced) and the last-axis-innermost nest (``axes = [1, 2]`` of an NHWC-like
tensor), keepdims, float32 and float64 (within rounding), integers in their own
dtype (wrapping around on overflow, exactly as NumPy's), an empty reduced axis (1).
"""

from __future__ import annotations

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reduce_prod_floats(dtype: str) -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, (2, 5, 6, 32)).astype(dtype)
    x[0, 0, 0, 0] = np.nan
    g = Graph()
    v = g.input("x", x.shape, dtype)
    g.output(g.reduce_prod(v, [3]), g.reduce_prod(v, [1, 2], keepdims=True))
    g.output(g.reduce_prod(v, None))
    last, spatial, everything = qidao.compile(g)(x)
    rtol = 1e-5 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(last, np.prod(x, axis=3), rtol=rtol)
    np.testing.assert_allclose(
        spatial, np.prod(x, axis=(1, 2), keepdims=True), rtol=rtol
    )
    assert np.isnan(everything) and last.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "uint64"])
def test_reduce_prod_integers_wrap_around(dtype: str) -> None:
    rng = np.random.default_rng(6)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), (3, 40), dtype=dtype)
    g = Graph()
    v = g.input("x", x.shape, dtype)
    g.output(g.reduce_prod(v, [1]), g.reduce_prod(v, [0], keepdims=True))
    rows, columns = qidao.compile(g)(x)
    np.testing.assert_array_equal(rows, np.prod(x, axis=1, dtype=dtype))
    np.testing.assert_array_equal(
        columns, np.prod(x, axis=0, keepdims=True, dtype=dtype)
    )
    assert rows.dtype == np.dtype(dtype)


def test_the_product_over_an_empty_axis_is_one() -> None:
    g = Graph()
    v = g.input("x", (3, 0), "float32")
    g.output(g.reduce_prod(v, [1]))
    (got,) = qidao.compile(g)(np.zeros((3, 0), np.float32))
    np.testing.assert_array_equal(got, np.ones(3, np.float32))
