"""``tg.cumsum`` and ``tg.cumprod`` kernels against NumPy's ``cumsum``/``cumprod``.

The kernels add (multiply) in order in the input's dtype, so every result must
equal NumPy's bit for bit: any axis (first, middle, last), ``exclusive`` and
``reverse``, float and integer dtypes (integers wrap around), a strided input, in
graph and eager mode. The dialect's NumPy reference must agree as well.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]


def expected(
    x: Array, axis: int, product: bool, exclusive: bool, reverse: bool
) -> Array:
    """The running total as NumPy computes it, shifted and flipped as ONNX says."""
    y = np.flip(x, axis) if reverse else x
    total = (np.cumprod if product else np.cumsum)(y, axis=axis, dtype=x.dtype)
    if exclusive and x.shape[axis]:
        first = np.full_like(np.take(total, [0], axis=axis), 1 if product else 0)
        total = np.concatenate([first, np.delete(total, -1, axis=axis)], axis=axis)
    return np.flip(total, axis) if reverse else total


def run(g: Graph, x: Array, mode: str) -> tuple[Array, Array]:
    """The compiled result and the dialect's NumPy reference."""
    got = qidao.compile(g, mode=mode)(x)[0]
    fn = next(op for op in g.module().walk() if isinstance(op, func.FuncOp))
    return got, evaluate_function(fn, [x])[0]


def data(shape: tuple[int, ...], dtype: str) -> Array:
    rng = np.random.default_rng(0)
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


@pytest.mark.parametrize("product", [False, True])
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize(("shape", "axis"), [((7,), 0), ((2, 5, 3), 1), ((4, 3), 0)])
def test_running_totals_match_numpy(
    shape: tuple[int, ...], axis: int, exclusive: int, reverse: int, product: bool
) -> None:
    for dtype in ("float32", "int64"):
        x = data(shape, dtype)
        g = Graph()
        v = g.input("x", shape, dtype)
        scan = g.cumprod if product else g.cumsum
        g.output(scan(v, axis, bool(exclusive), bool(reverse)))
        got, reference = run(g, x, "graph")
        want = expected(x, axis, product, bool(exclusive), bool(reverse))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(reference, want)


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("dtype", ["float64", "int32", "uint32", "float16"])
def test_dtypes_a_strided_input_and_modes(dtype: str, mode: str) -> None:
    """A transposed (strided) input, the last axis; f16 computes in float32."""
    x = data((3, 6), dtype)
    g = Graph()
    v = g.input("x", (3, 6), dtype)
    g.output(g.cumsum(g.transpose(v), axis=0, reverse=True))
    got, _ = run(g, x, mode)
    if dtype == "float16":
        want = expected(x.T.astype(np.float32), 0, False, False, True).astype(dtype)
    else:
        want = expected(x.T, 0, False, False, True)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_integer_products_wrap_around() -> None:
    x = np.full((40,), 7, np.int32)
    g = Graph()
    g.output(g.cumprod(g.input("x", (40,), "int32"), 0))
    got, reference = run(g, x, "graph")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, np.cumprod(x, dtype=np.int32))
    np.testing.assert_array_equal(reference, got)


@pytest.mark.parametrize("shape", [(1, 4), (0, 3), (3, 0)])
def test_size_one_and_empty_axes(shape: tuple[int, int]) -> None:
    x = data(shape, "float32")
    g = Graph()
    g.output(g.cumsum(g.input("x", shape), 0, exclusive=True))
    got, _ = run(g, x, "graph")
    np.testing.assert_array_equal(got, expected(x, 0, False, True, False))
