"""The ``tg.top_k_indices`` kernel (``Graph.top_k``) against NumPy and PyTorch.

The order is total: by value, NaN above every number, equal values by position.
With distinct values it is ``torch.topk``'s and ``torch.sort``'s order; with ties
and NaN it is NumPy's stable ``argsort`` (descending: of the negated ranks). Every
case checks values and indices exactly, in graph and eager mode, for float, signed
and unsigned integer dtypes, any axis, ``k`` from 0 to the whole axis, and a
strided input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from xdsl.dialects import func

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError

Array = np.ndarray[Any, Any]


def stable_order(x: Array, axis: int, largest: bool) -> Array:
    """Positions in the documented order: NumPy's stable argsort of the ranks
    (``np.unique`` puts the NaNs last, as one rank)."""

    def row(r: Array) -> Array:
        rank = np.unique(r, return_inverse=True)[1].reshape(-1)
        return np.argsort(-rank if largest else rank, kind="stable")

    return np.apply_along_axis(row, axis, x)


def top_k(
    x: Array, k: int, axis: int, largest: bool, mode: str = "graph"
) -> tuple[Array, Array, Array]:
    """Compiled values and indices, and the dialect reference's indices."""
    g = Graph()
    v = g.input("x", x.shape, str(x.dtype))
    values, indices = g.top_k(v, k, axis, largest)
    g.output(values, indices)
    got = qidao.compile(g, mode=mode)(x)
    fn = next(op for op in g.module().walk() if isinstance(op, func.FuncOp))
    reference = evaluate_function(fn, [x])
    np.testing.assert_array_equal(reference[1], got[1])
    return got[0], got[1], reference[0]


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize(("shape", "axis", "k"), [((3, 7), 1, 3), ((5, 2, 3), 0, 5)])
def test_distinct_values_match_torch_topk(
    shape: tuple[int, ...], axis: int, k: int, largest: bool, mode: str
) -> None:
    x = np.random.default_rng(1).permutation(np.prod(shape)).astype(np.float32)
    x = x.reshape(shape)
    values, indices, _ = top_k(x, k, axis, largest, mode)
    want = torch.topk(torch.from_numpy(x), k, dim=axis, largest=largest)
    np.testing.assert_array_equal(values, want.values.numpy())
    np.testing.assert_array_equal(indices, want.indices.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint64"])
@pytest.mark.parametrize("largest", [True, False])
def test_ties_and_nan_in_the_stable_order(dtype: str, largest: bool) -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, (4, 9)).astype(dtype)
    if dtype.startswith("float"):
        x[0, [1, 5]] = np.nan
        x[1, 2], x[2, 3] = np.inf, -np.inf
        x[3, 0], x[3, 4] = -0.0, 0.0
    if dtype == "uint64":
        x[0, 0] = np.iinfo(np.uint64).max  # above every other, read unsigned
    ks = (0, 1, 4, 9)
    g = Graph()
    v = g.input("x", x.shape, dtype)
    g.output(*[r for k in ks for r in g.top_k(v, k, 1, largest)])
    got = qidao.compile(g)(x)
    for k, values, indices in zip(ks, got[::2], got[1::2], strict=True):
        want = stable_order(x, 1, largest)[:, :k]
        np.testing.assert_array_equal(indices, want, err_msg=f"k = {k}")
        np.testing.assert_array_equal(values, np.take_along_axis(x, want, 1))


def test_a_strided_input_and_f16() -> None:
    x = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float16)
    g = Graph()
    v = g.input("x", (6, 4), "float16")
    values, indices = g.top_k(g.transpose(v), 2, axis=1, largest=False)
    g.output(values, indices)
    got = qidao.compile(g)(x)
    want = stable_order(x.T.astype(np.float32), 1, False)[:, :2]
    np.testing.assert_array_equal(got[1], want)
    np.testing.assert_array_equal(got[0], np.take_along_axis(x.T, want, 1))


def test_a_full_sort_is_a_stable_argsort() -> None:
    x = np.random.default_rng(4).integers(0, 5, (2, 50)).astype(np.float32)
    _, indices, _ = top_k(x, 50, -1, largest=False)
    np.testing.assert_array_equal(indices, np.argsort(x, axis=-1, kind="stable"))


def test_k_larger_than_the_axis_is_refused() -> None:
    g = Graph()
    with pytest.raises(GraphError, match=r"k = 5 must be in \[0, 4\]"):
        g.top_k(g.input("x", (3, 4)), 5, axis=1)
