"""The ``tg.nonzero_indices`` kernel (``Graph.nonzero``) against NumPy's ``nonzero``.

The first ``count`` columns are NumPy's positions, in row-major order, and the
rest 0; the count is NumPy's. Floats: NaN is non-zero, ``-0.0`` is zero. Every
case runs in graph and eager mode and through the dialect's NumPy evaluator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError

Array = np.ndarray[Any, Any]


def check(x: Array, transpose: bool = False) -> None:
    """Compiled positions and count of ``x`` (or of its transposed view) against
    NumPy, in both modes and in the evaluator."""
    g = Graph()
    v = g.input("x", x.shape, str(x.dtype))
    source = g.transpose(v, list(range(x.ndim))[::-1]) if transpose else v
    positions, count = g.nonzero(source)
    g.output(positions, count)
    seen = x.T if transpose else x
    expected = np.stack(np.nonzero(seen))
    n = expected.shape[1]
    fn = next(op for op in g.module().walk() if isinstance(op, func.FuncOp))
    runs = [qidao.compile(g, mode=m)(x) for m in ("graph", "eager")]
    runs.append(evaluate_function(fn, [x]))
    for got_positions, got_count in runs:
        assert int(got_count) == n
        assert got_positions.shape == (seen.ndim, seen.size)
        np.testing.assert_array_equal(got_positions[:, :n], expected)
        assert not got_positions[:, n:].any()


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        ("float32", (3, 4)),
        ("float64", (7,)),
        ("int64", (2, 3, 4)),
        ("int8", (5, 1)),
        ("uint8", (6,)),
        ("bool", (4, 4)),
        ("float16", (3, 5)),
    ],
)
def test_positions_and_count_match_numpy(dtype: str, shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(0).integers(0, 3, shape).astype(dtype)
    check(x)


def test_nan_counts_and_negative_zero_does_not() -> None:
    x = np.array([[0.0, np.nan, -0.0], [1e-30, 0.0, -np.inf]], np.float32)
    check(x)


@pytest.mark.parametrize("fill", [0, 1])
def test_none_and_all_nonzero(fill: int) -> None:
    check(np.full((3, 2), fill, np.int32))


def test_empty_input() -> None:
    check(np.zeros((0, 4), np.float32))


def test_strided_view_walks_its_own_row_major_order() -> None:
    x = np.random.default_rng(1).integers(0, 2, (3, 5)).astype(np.float32)
    check(x, transpose=True)


def test_a_scalar_is_refused() -> None:
    g = Graph()
    v = g.input("x", (), "float32")
    with pytest.raises(GraphError, match="rank >= 1"):
        g.nonzero(v)
