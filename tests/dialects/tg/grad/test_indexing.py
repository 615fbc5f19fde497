"""The vjp rules of the indexing ops (slice, pad, concat, gather, take,
gather_elements) against float64 central differences (``gradcheck.py``) and
``torch.autograd`` (``torch_oracle.py``), shapes and bounds drawn by hypothesis."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {
    "tg.slice",
    "tg.pad",
    "tg.concat",
    "tg.gather",
    "tg.take",
    "tg.gather_elements",
}

RNG = np.random.default_rng(5)
DRAWN = settings(max_examples=15, deadline=None)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


@st.composite
def _slices(draw: Any) -> tuple[tuple[int, ...], list[slice]]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    cuts = []
    for n in shape:
        lo = draw(st.integers(0, n - 1))
        hi = draw(st.integers(lo + 1, n))
        cuts.append(slice(lo, hi, draw(st.integers(1, 3))))
    return shape, cuts


@DRAWN
@given(_slices())
def test_slice_drawn(case: tuple[tuple[int, ...], list[slice]]) -> None:
    shape, cuts = case
    x = _normal(*shape)
    start, stop, step = (
        [getattr(c, a) for c in cuts] for a in ("start", "stop", "step")
    )

    def build(g: Graph, v: Value) -> Value:
        return g.slice(v, start, stop, step)

    check_vjp(build, [x])
    out = x[tuple(cuts)].shape
    check_against_torch(build, lambda t: t[tuple(cuts)], [x], out)


def test_slice_of_a_transposed_input_and_a_negative_step() -> None:
    """The slice reads a strided view (a transpose), and a negative step is a
    reversing gather after the slice (``Graph.slice``)."""
    x = _normal(4, 6)

    def build(g: Graph, v: Value) -> Value:
        return g.slice(g.transpose(v, [1, 0]), [5, 1], [0, 4], [-2, 1])

    check_vjp(build, [x])
    check_against_torch(
        build, lambda t: t.T[torch.tensor([5, 3, 1])][:, 1:4], [x], (3, 3)
    )


@DRAWN
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.data(),
)
def test_pad_drawn(shape: list[int], data: Any) -> None:
    low = data.draw(
        st.lists(st.integers(0, 2), min_size=len(shape), max_size=len(shape))
    )
    high = data.draw(
        st.lists(st.integers(0, 2), min_size=len(shape), max_size=len(shape))
    )
    x = _normal(*shape)
    value = data.draw(st.sampled_from([0.0, 1.5]))

    def build(g: Graph, v: Value) -> Value:
        return g.pad(v, low, high, value)

    check_vjp(build, [x])
    flat = [
        a
        for lo, hi in zip(reversed(low), reversed(high), strict=True)
        for a in (lo, hi)
    ]
    out = [n + lo + hi for n, lo, hi in zip(shape, low, high, strict=True)]
    check_against_torch(build, lambda t: F.pad(t, flat, value=value), [x], out)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis: int) -> None:
    a, b, c = _normal(2, 3, 2), _normal(2, 3, 2), _normal(2, 3, 2)

    def build(g: Graph, x: Value, y: Value, z: Value) -> Value:
        return g.concat([x, y * z, x], axis)  # x twice: its gradients add up

    check_vjp(build, [a, b, c])
    out = list(a.shape)
    out[axis] *= 3
    check_against_torch(
        build, lambda x, y, z: torch.cat([x, y * z, x], axis), [a, b, c], out
    )


@DRAWN
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())
def test_concat_drawn(dims: list[int], data: Any) -> None:
    """Inputs of different sizes along the axis: each gets its own slice of g."""
    axis = data.draw(st.integers(-len(dims), len(dims) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    xs = []
    for n in sizes:
        part = list(dims)
        part[axis] = n
        xs.append(_normal(*part))

    def build(g: Graph, *vs: Value) -> Value:
        return g.concat(list(vs), axis)

    check_vjp(build, xs)
    out = np.concatenate(xs, axis).shape
    check_against_torch(build, lambda *ts: torch.cat(ts, axis), xs, out)


def test_empty_slice_gives_a_zero_gradient() -> None:
    """A slice that reads nothing: the input's gradient is all zero."""
    x = _normal(3, 2)

    def build(g: Graph, v: Value) -> Value:
        return g.concat([g.slice(v, [2, 0], [2, 2]), v], 0)  # [0, 2] then x

    check_vjp(build, [x])
    check_against_torch(build, lambda t: torch.cat([t[2:2], t], 0), [x], (3, 2))


@pytest.mark.parametrize(
    ("indices", "axis"),
    [
        ([2, 0, 1], 1),
        ([2, 1, 0], 0),
        ([0, 0, 3, 0, -1], 1),
        ([1], 0),
        ([[0, 2], [2, 2]], 1),
    ],
)
def test_gather_constant_indices(indices: list[Any], axis: int) -> None:
    """Permutations (a convolution's flipped filter), repeats (their gradients add
    up), entries nobody reads (zero), negative and 2-D indices."""
    x = _normal(3, 4)

    def build(g: Graph, v: Value) -> Value:
        return g.gather(v, indices, axis)

    check_vjp(build, [x])
    index = torch.tensor(np.asarray(indices) % x.shape[axis])
    out = np.take(x, indices, axis).shape
    check_against_torch(
        build,
        lambda t: torch.index_select(t, axis, index.reshape(-1)).reshape(out),
        [x],
        out,
    )


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_take_is_the_embedding_gradient(dtype: type) -> None:
    """``F.embedding``: repeated tokens accumulate, unread rows get zero."""
    table = _normal(7, 3)
    tokens = np.array([[1, 4, 1], [6, 0, 1]], dtype)

    def build(g: Graph, t: Value, ids: Value) -> Value:
        return g.take(t, ids, 0)

    check_vjp(build, [table, tokens])
    check_against_torch(
        build, lambda t, ids: F.embedding(ids.long(), t), [table, tokens], (2, 3, 3)
    )


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_take_on_any_axis(axis: int) -> None:
    x = _normal(3, 4, 2)
    ids = np.array([[0, 2], [1, 1]], np.int64) % x.shape[axis]

    def build(g: Graph, v: Value, i: Value) -> Value:
        return g.take(v, i, axis)

    check_vjp(build, [x, ids])


def test_take_and_gather_elements_wrap_and_clamp_like_the_forward() -> None:
    """A negative index reads from the end and an out-of-range one the nearest
    end row: the gradient goes to the row the forward read (``numpy_eval``'s
    rule); central differences of the forward are the oracle."""
    x = _normal(5, 2)
    ids = np.array([-1, 9, -8, 2], np.int64)

    def take(g: Graph, v: Value, i: Value) -> Value:
        return g.take(v, i, 0)

    check_vjp(take, [x, ids])

    def gather_elements(g: Graph, v: Value, i: Value) -> Value:
        return g.gather_elements(v, i, 0)

    check_vjp(gather_elements, [x, np.stack([ids, ids[::-1]], 1)])


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements_is_torch_gather(axis: int) -> None:
    x = _normal(3, 4)
    index = np.array([[0, 1, 0], [2, 2, 1]], np.int64)  # smaller than x: the rest is 0
    if axis == 1:
        index = np.array([[3, 0], [1, 1], [0, 3]], np.int64)

    def build(g: Graph, v: Value, i: Value) -> Value:
        return g.gather_elements(v, i, axis)

    check_vjp(build, [x, index])
    check_against_torch(
        build,
        lambda t, i: torch.gather(t, axis, i),
        [x, index],
        index.shape,
    )


@st.composite
def _gathers(draw: Any) -> tuple[list[int], int, list[int]]:
    """An input shape, an axis and an index shape no larger than the input in
    the other dimensions (``torch.gather``'s rule), any size along the axis."""
    dims = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    axis = draw(st.integers(0, len(dims) - 1))
    got = [draw(st.integers(1, d)) for d in dims]
    got[axis] = draw(st.integers(1, 4))
    return dims, axis, got


@DRAWN
@given(_gathers())
def test_take_and_gather_elements_drawn(case: tuple[list[int], int, list[int]]) -> None:
    """Random in-range indices, repeats likely: ``take`` against
    ``index_select``, ``gather_elements`` against ``torch.gather``."""
    dims, axis, got = case
    x = _normal(*dims)
    index = RNG.integers(0, dims[axis], got).astype(np.int64)

    def take(g: Graph, v: Value, i: Value) -> Value:
        return g.take(v, i, axis)

    def select(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torch.index_select(t, axis, i.reshape(-1)).reshape(out)

    out = np.take(x, index, axis).shape
    check_vjp(take, [x, index])
    check_against_torch(take, select, [x, index], out)

    def gather_elements(g: Graph, v: Value, i: Value) -> Value:
        return g.gather_elements(v, i, axis)

    check_vjp(gather_elements, [x, index])
    check_against_torch(
        gather_elements, lambda t, i: torch.gather(t, axis, i), [x, index], got
    )
