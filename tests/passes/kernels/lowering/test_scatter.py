"""The scatter kernels and the ND gather (``tg.scatter_elements``, ``tg.scatter_nd``,
``tg.gather_nd``) against NumPy and PyTorch.

Every reduction on float and integer data, i32 and i64 indices, negative indices,
repeated indices (combined in order; the last wins without a reduction), a strided
data view, out-of-range indices (a scatter skips them, the gather clamps them),
``batch_dims``; compiled in graph and eager mode, and the dialect's NumPy
reference (``numpy_eval``) must agree. Then ``checks=True`` raising a ``CheckError``
for an out-of-range index, and autodiff naming the ops it has no rule for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from xdsl.dialects import func

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.errors import UnsupportedError
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError

Array = np.ndarray[Any, Any]
MODES = ["graph", "eager"]
REDUCTIONS = ["none", "add", "mul", "max", "min"]
TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def data(shape: tuple[int, ...], dtype: str, seed: int = 0) -> Array:
    if dtype.startswith("float"):
        return rng(seed).standard_normal(shape).astype(dtype)
    return rng(seed).integers(-50, 50, shape).astype(dtype)


def _function(g: Graph) -> func.FuncOp:
    return next(op for op in g.module().walk() if isinstance(op, func.FuncOp))


def check(g: Graph, inputs: list[Array], want: Array, mode: str = "graph") -> None:
    """Compile and run ``g``; the result and the NumPy reference equal ``want``."""
    (got,) = qidao.compile(g, mode=mode)(*inputs)
    (reference,) = evaluate_function(_function(g), inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(reference, want)


def torch_scatter(x: Array, axis: int, idx: Array, upd: Array, red: str) -> Array:
    """PyTorch's scatter of in-range, non-negative indices."""
    t, i, u = (torch.from_numpy(np.ascontiguousarray(a)) for a in (x, idx, upd))
    if red == "none":
        return t.scatter(axis, i.long(), u).numpy()
    return t.scatter_reduce(axis, i.long(), u, TORCH_REDUCE[red]).numpy()


# --- tg.scatter_elements ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_scatter_elements_matches_torch(reduction: str, dtype: str, mode: str) -> None:
    """Distinct positions per row (so ``none`` is defined too), given as negative
    indices half the time."""
    a = data((3, 5), dtype)
    positions = np.stack([rng(k).permutation(5)[:3] for k in range(3)])
    indices = np.where(positions % 2 == 0, positions - 5, positions)
    u = data((3, 3), dtype, seed=1)
    g = Graph()
    x = g.input("x", a.shape, dtype)
    i = g.input("i", indices.shape, "int32")
    up = g.input("u", u.shape, dtype)
    g.output(g.scatter_elements(x, i, up, 1, reduction))
    want = torch_scatter(a, 1, positions, u, reduction)
    check(g, [a, indices.astype(np.int32), u], want, mode)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_repeated_indices_combine_in_order(reduction: str) -> None:
    """Several updates on one entry along axis 0 (more indices than rows)."""
    a = data((2, 3), "float64")
    indices = np.array([[0, 1, 1], [1, 1, 0], [0, 1, 1], [-2, 0, -1]], np.int64)
    u = data((4, 3), "float64", seed=2)
    g = Graph()
    x = g.input("x", a.shape, "float64")
    i = g.input("i", indices.shape, "int64")
    up = g.input("u", u.shape, "float64")
    g.output(g.scatter_elements(x, i, up, 0, reduction))
    check(g, [a, indices, u], torch_scatter(a, 0, indices % 2, u, reduction))


def test_repeated_indices_without_reduction_the_last_wins() -> None:
    a = np.zeros(4, np.float32)
    indices = np.array([1, 3, 1, -3], np.int64)  # entry 1 three times
    u = np.array([10, 20, 30, 40], np.float32)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    up = g.input("u", u.shape)
    g.output(g.scatter_elements(x, i, up, 0))
    check(g, [a, indices, u], np.array([0, 40, 0, 20], np.float32))


def test_out_of_range_indices_are_skipped() -> None:
    a = data((2, 4), "float32")
    indices = np.array([[4, -5, 1], [100, 3, -100]], np.int64)
    u = data((2, 3), "float32", seed=3)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    up = g.input("u", u.shape)
    g.output(g.scatter_elements(x, i, up, 1, "add"))
    want = a.copy()
    want[0, 1] += u[0, 2]
    want[1, 3] += u[1, 1]
    check(g, [a, indices, u], want)


def test_scatter_into_a_transposed_view_with_smaller_indices() -> None:
    """The data read through its strided layout; the indices smaller than the
    data in the other dimension (``torch.scatter``'s rule)."""
    a = data((4, 3), "float32")
    indices = np.array([[2, 0, 1]], np.int64)
    u = data((1, 3), "float32", seed=4)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    up = g.input("u", u.shape)
    g.output(g.scatter_elements(g.transpose(x), i, up, 0, "max"))
    check(g, [a, indices, u], torch_scatter(a.T, 0, indices, u, "max"))


def test_scatter_elements_verifier_errors_name_the_problem() -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    u = g.input("u", (3, 2), "float64")
    with pytest.raises(
        GraphError,
        match=r"tg.scatter_elements expects updates of the data's element type f32",
    ):
        g.scatter_elements(x, np.zeros((3, 2), np.int64), u, 1)
    b = g.input("b", (3, 4), "bool")
    with pytest.raises(
        GraphError, match=r"reduction 'add' combines f32, f64 or integer"
    ):
        g.scatter_elements(b, np.zeros((3, 4), np.int64), b, 1, "add")


# --- tg.scatter_nd ---------------------------------------------------------------------


def scatter_nd_reference(x: Array, indices: Array, updates: Array, red: str) -> Array:
    """ONNX's loop (``ScatterND``'s definition), for in-range indices."""
    out = x.copy()
    combines: dict[str, Callable[[Any, Any], Any]] = {
        "none": lambda a, b: b,
        "add": np.add,
        "mul": np.multiply,
        "max": np.maximum,
        "min": np.minimum,
    }
    combine = combines[red]
    for idx in np.ndindex(indices.shape[:-1]):
        at = tuple(int(v) for v in indices[idx])
        out[at] = combine(out[at], updates[idx])
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_nd_rows_matches_the_definition(reduction: str, mode: str) -> None:
    a = data((5, 2, 3), "float32")
    indices = np.array([[[1], [-1]], [[3], [0]]], np.int64)  # distinct rows
    u = data((2, 2, 2, 3), "float32", seed=5)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    up = g.input("u", u.shape)
    g.output(g.scatter_nd(x, i, up, reduction))
    check(g, [a, indices, u], scatter_nd_reference(a, indices, u, reduction), mode)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_elements_with_repeats_on_integers(reduction: str) -> None:
    a = data((3, 4), "int32")
    indices = np.array([[0, 1], [2, -1], [0, 1], [-3, -3]], np.int32)
    u = data((4,), "int32", seed=6)
    g = Graph()
    x = g.input("x", a.shape, "int32")
    i = g.input("i", indices.shape, "int32")
    up = g.input("u", u.shape, "int32")
    g.output(g.scatter_nd(x, i, up, reduction))
    positive = np.where(indices < 0, indices + np.array([3, 4]), indices)
    check(g, [a, indices, u], scatter_nd_reference(a, positive, u, reduction))


def test_scatter_nd_skips_a_tuple_with_any_component_out_of_range() -> None:
    a = data((3, 4), "float32")
    indices = np.array([[0, 4], [3, 0], [1, 1], [-4, 2]], np.int64)
    u = data((4,), "float32", seed=7)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    up = g.input("u", u.shape)
    g.output(g.scatter_nd(x, i, up))
    want = a.copy()
    want[1, 1] = u[2]
    check(g, [a, indices, u], want)


# --- tg.gather_nd ----------------------------------------------------------------------


def gather_nd_reference(x: Array, indices: Array, batch_dims: int) -> Array:
    """ONNX's GatherND definition, for in-range indices."""
    batch = x.shape[:batch_dims]
    out = []
    for b in np.ndindex(batch):
        picked = indices[b].reshape(-1, indices.shape[-1])
        out.append(np.stack([x[b][tuple(t)] for t in picked]))
    shape = (*indices.shape[:-1], *x.shape[batch_dims + indices.shape[-1] :])
    return np.stack(out).reshape(shape)


GATHER_ND_CASES = [
    # (data shape, indices shape, batch_dims)
    ((4, 3), (2, 1), 0),
    ((4, 3), (5, 2), 0),
    ((2, 4, 3), (2, 5, 1), 1),
    ((2, 3, 4, 5), (2, 3, 2, 1), 2),
    ((3, 4), (2, 2, 2), 0),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "index_shape", "batch_dims"), GATHER_ND_CASES)
def test_gather_nd_matches_the_definition(
    shape: tuple[int, ...], index_shape: tuple[int, ...], batch_dims: int, mode: str
) -> None:
    a = data(shape, "int64")
    sizes = np.array(shape[batch_dims : batch_dims + index_shape[-1]])
    raw = rng(8).integers(-sizes, sizes, index_shape)
    g = Graph()
    x = g.input("x", shape, "int64")
    i = g.input("i", index_shape, "int64")
    g.output(g.gather_nd(x, i, batch_dims))
    positive = np.where(raw < 0, raw + sizes, raw)
    check(g, [a, raw], gather_nd_reference(a, positive, batch_dims), mode)


def test_gather_nd_clamps_out_of_range_components() -> None:
    a = data((3, 4), "float32")
    indices = np.array([[5, -9], [-1, 4]], np.int64)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    g.output(g.gather_nd(x, i))
    check(g, [a, indices], np.array([a[2, 0], a[2, 3]], np.float32))


# --- checks and gradients --------------------------------------------------------------


def test_checks_raise_for_an_out_of_range_scatter_index() -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    i = g.input("i", (3, 2), "int64")
    up = g.input("u", (3, 2))
    g.output(g.scatter_elements(x, i, up, 1, "add"))
    compiled = qidao.compile(g, checks=True)
    a, u = data((3, 4), "float32"), data((3, 2), "float32")
    ok = np.array([[0, -4], [3, 1], [2, 2]], np.int64)
    np.testing.assert_array_equal(
        compiled(a, ok, u)[0], torch_scatter(a, 1, ok % 4, u, "add")
    )
    with pytest.raises(
        qidao.CheckError,
        match=r"tg.scatter_elements of .* on axis 1: index 4 is out of bounds for an "
        r"axis of size 4 \(valid indices are -4 to 3\)",
    ):
        compiled(a, np.array([[0, 1], [4, 1], [2, 2]], np.int64), u)


def test_checks_name_the_component_of_an_nd_index() -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    i = g.input("i", (2, 2), "int64")
    up = g.input("u", (2,))
    g.output(g.scatter_nd(x, i, up))
    compiled = qidao.compile(g, checks=True)
    a, u = data((3, 4), "float32"), data((2,), "float32")
    with pytest.raises(
        qidao.CheckError,
        match=r"component 1 of the index tuples \(axis 1\): index -5 is out of bounds",
    ):
        compiled(a, np.array([[0, 1], [2, -5]], np.int64), u)


def test_differentiating_through_a_scatter_names_it() -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    up = g.input("u", (3, 2))
    y = g.scatter_elements(x, np.zeros((3, 2), np.int64), up, 1, "add")
    g.output(g.reduce_sum(y))
    with pytest.raises(UnsupportedError, match=r"no vjp rule for tg.scatter_elements"):
        qidao.compile(g, grad=["x"])
