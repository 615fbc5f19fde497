"""Property tests of ``qidao/dialects/tg/layout.py`` with PyTorch and NumPy as oracles.

``view_strides`` must agree with ``torch.Tensor.view`` exactly: the same strides when
torch's view succeeds, None exactly when torch raises. The broadcasting and
contiguity helpers must agree with NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qidao.dialects.tg.layout import (
    broadcast_shapes,
    broadcast_strides,
    contiguous_strides,
    is_contiguous,
    view_strides,
)

torch = pytest.importorskip("torch", reason="the view oracle is torch.Tensor.view")

settings.register_profile("layout", max_examples=200, deadline=None)
settings.load_profile("layout")

dims = st.integers(min_value=1, max_value=4)
shapes = st.lists(dims, min_size=0, max_size=4).map(tuple)


def torch_view_strides(
    shape: tuple[int, ...], strides: tuple[int, ...], new_shape: tuple[int, ...]
) -> tuple[int, ...] | None:
    """``torch.Tensor.view``'s strides for a tensor laid out as (shape, strides)."""
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    storage = torch.empty(max(extent, 1))
    base = torch.as_strided(storage, shape, strides)
    try:
        return tuple(base.view(new_shape).stride())
    except RuntimeError:
        return None


@st.composite
def regroupings(draw: st.DrawFn, numel: int) -> tuple[int, ...]:
    """A shape with ``numel`` elements: its prime factors dealt into dimensions,
    with some size-1 dimensions mixed in."""
    factors: list[int] = []
    n, p = numel, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    rank = draw(st.integers(min_value=1 if factors else 0, max_value=4))
    new_shape = [1] * rank
    for f in factors:
        new_shape[draw(st.integers(0, rank - 1))] *= f
    return tuple(new_shape)


@st.composite
def permuted_views(
    draw: st.DrawFn,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(shape, strides) of a permuted row-major tensor, and a shape to view it as."""
    base = draw(shapes)
    perm = draw(st.permutations(range(len(base))))
    base_strides = contiguous_strides(base)
    shape = tuple(base[p] for p in perm)
    strides = tuple(base_strides[p] for p in perm)
    new_shape = draw(regroupings(math.prod(shape)))
    return shape, strides, new_shape


@st.composite
def strided_views(
    draw: st.DrawFn,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Any strides at all (broadcast 0s, steps, overlaps), and a shape to view as."""
    shape = draw(shapes)
    strides = tuple(draw(st.integers(0, 24)) for _ in shape)
    new_shape = draw(regroupings(math.prod(shape)))
    return shape, strides, new_shape


@given(permuted_views())
def test_view_of_permutation_matches_torch(
    case: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
) -> None:
    shape, strides, new_shape = case
    assert view_strides(shape, strides, new_shape) == torch_view_strides(
        shape, strides, new_shape
    )


@given(strided_views())
def test_view_of_any_layout_matches_torch(
    case: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
) -> None:
    shape, strides, new_shape = case
    assert view_strides(shape, strides, new_shape) == torch_view_strides(
        shape, strides, new_shape
    )


@given(shapes, shapes)
def test_view_with_other_element_count_is_none(
    shape: tuple[int, ...], new_shape: tuple[int, ...]
) -> None:
    strides = contiguous_strides(shape)
    expected = torch_view_strides(shape, strides, new_shape)
    if math.prod(shape) != math.prod(new_shape):
        assert expected is None
    assert view_strides(shape, strides, new_shape) == expected


def test_view_of_transpose_flattened_is_none() -> None:
    """The book's example: a transposed 2x3 cannot be viewed as 6 elements."""
    assert view_strides((3, 2), (1, 3), (6,)) is None
    assert torch_view_strides((3, 2), (1, 3), (6,)) is None


@given(st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple))
def test_view_of_empty_tensor_succeeds_like_torch(shape: tuple[int, ...]) -> None:
    """With no elements any view of the right size succeeds (strides are arbitrary
    there: PyTorch keeps the old ones for the same shape, qidao goes row-major)."""
    empty = (*shape, 0)
    for new_shape in [(0,), (0, *shape), empty]:
        qidao = view_strides(empty, contiguous_strides(empty), new_shape)
        oracle = torch_view_strides(empty, contiguous_strides(empty), new_shape)
        assert (qidao is None) == (oracle is None)


@given(st.lists(shapes, min_size=1, max_size=3))
def test_broadcast_shapes_matches_numpy(operands: list[tuple[int, ...]]) -> None:
    try:
        expected: tuple[int, ...] | None = tuple(np.broadcast_shapes(*operands))
    except ValueError:
        expected = None
    assert broadcast_shapes(*operands) == expected


@given(st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple))
def test_contiguous_strides_match_numpy(shape: tuple[int, ...]) -> None:
    array = np.empty(shape, dtype=np.float32)
    strides = contiguous_strides(shape)
    if array.size:  # NumPy's strides for an empty array are arbitrary
        assert strides == tuple(s // array.itemsize for s in array.strides)
    assert strides == tuple(torch.empty(shape).stride())
    assert is_contiguous(shape, strides)


@st.composite
def broadcasts(
    draw: st.DrawFn,
) -> tuple[np.ndarray, tuple[int, ...]]:
    """A permuted array and a target shape it broadcasts to."""
    base = draw(shapes)
    perm = draw(st.permutations(range(len(base))))
    array = np.empty(base, dtype=np.float32).transpose(perm)
    target = list(array.shape)
    for k, size in enumerate(target):
        if size == 1:
            target[k] = draw(dims)
    lead = draw(st.lists(dims, max_size=2))
    return array, (*lead, *target)


def significant(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """Strides with those of size-1 dimensions zeroed: they never move an address,
    and NumPy sets them to 0 where qidao (like PyTorch's expand) keeps the input's."""
    return tuple(0 if n == 1 else s for n, s in zip(shape, strides, strict=True))


@given(broadcasts())
def test_broadcast_strides_match_numpy(
    case: tuple[np.ndarray, tuple[int, ...]],
) -> None:
    array, target = case
    strides = tuple(s // array.itemsize for s in array.strides)
    expected = tuple(
        s // array.itemsize for s in np.broadcast_to(array, target).strides
    )
    got = broadcast_strides(array.shape, strides, target)
    assert significant(target, got) == significant(target, expected)
