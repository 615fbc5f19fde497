"""The vjp rules of the layout ops (``grad/layout.py``: transpose, view, reshape,
contiguous, broadcast) and of a cast between float widths, against float64 central
differences (``gradcheck.py``) and ``torch.autograd`` (``torch_oracle.py``), shapes
drawn by hypothesis. The operands are often strided views (a transpose, a slice with
an offset): the gradient of a view is row-major whatever the view's layout."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {
    "tg.transpose",
    "tg.view",
    "tg.reshape",
    "tg.contiguous",
    "tg.broadcast",
    "tg.cast",
}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(8)
DRAWN = settings(max_examples=15, deadline=None)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


@DRAWN
@given(st.permutations(range(3)), st.lists(st.integers(1, 4), min_size=3, max_size=3))
def test_transpose_then_contiguous_and_reshape(
    perm: list[int], dims: list[int]
) -> None:
    """The transpose is read twice, once copied row-major and once reshaped
    straight from its strided layout: the two gradients add up."""
    x = _normal(*dims)

    def build(g: Graph, v: Value) -> Value:
        t = g.transpose(v, perm)
        return g.reshape(g.contiguous(t), [x.size]) * g.reshape(t, [x.size])

    check_vjp(build, [x])
    check_against_torch(
        build, lambda t: t.permute(perm).reshape(-1) ** 2, [x], (x.size,)
    )


@DRAWN
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data())
def test_view_and_reshape_drawn(dims: list[int], data: Any) -> None:
    """A new shape with the same row-major order: the gradient takes the old one."""
    x = _normal(*dims)
    new = data.draw(st.permutations(dims))  # same element count, other shape

    def build(g: Graph, v: Value) -> Value:
        return g.view(v, new) * g.reshape(g.exp(v), new)

    check_vjp(build, [x])
    check_against_torch(build, lambda t: t.view(*new) * t.exp().reshape(*new), [x], new)


@st.composite
def _broadcasts(draw: Any) -> tuple[list[int], list[int]]:
    """A target shape and an input shape that broadcasts to it (leading
    dimensions dropped, some of the rest 1)."""
    target = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    kept = target[draw(st.integers(0, len(target))) :]
    source = [d if draw(st.booleans()) else 1 for d in kept]
    return source, target


@DRAWN
@given(_broadcasts())
def test_broadcast_drawn(case: tuple[list[int], list[int]]) -> None:
    """The stride-0 dimensions read each input entry several times: the gradient
    sums them (``Emit.sum_to``)."""
    source, target = case
    x = _normal(*source)

    def build(g: Graph, v: Value) -> Value:
        return g.broadcast(v, target)

    check_vjp(build, [x])
    check_against_torch(build, lambda t: t.expand(*target), [x], target)


def test_view_and_broadcast_of_an_offset_slice() -> None:
    """A broadcast of a slice (a view with an offset), sliced again, times a view."""
    x, b = _normal(2, 6), _normal(3, 1)

    def reference(v: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return v.view(2, 2, 3) * c[1:].expand(2, 2, 3)[:, :, :1]

    def build(g: Graph, v: Value, c: Value) -> Value:
        tail = g.slice(c, [1, 0], [3, 1])
        return g.view(v, [2, 2, 3]) * g.slice(
            g.broadcast(tail, [2, 2, 3]), [0, 0, 0], [2, 2, 1]
        )

    check_vjp(build, [x, b])
    check_against_torch(build, reference, [x, b], (2, 2, 3))


def test_reshape_of_a_transposed_input_copies() -> None:
    """``reshape`` of a strided view cannot be a view: it copies, and its gradient
    is the row-major gradient reshaped back."""
    x = _normal(3, 4)

    def build(g: Graph, v: Value) -> Value:
        return g.reshape(g.transpose(v, [1, 0]), [2, 6]) * 2.0

    check_vjp(build, [x])
    check_against_torch(build, lambda t: t.T.reshape(2, 6) * 2.0, [x], (2, 6))


def test_cast_through_float32_casts_the_gradient_back() -> None:
    """f64 -> f32 -> f64: the gradient is rounded to f32 on its way back, as
    PyTorch's (central differences cannot see through the rounding)."""
    x = _normal(2, 3)

    def build(g: Graph, v: Value) -> Value:
        narrow = g.cast(v, "float32") * g.cast(v * 1.5, "float32")
        return g.cast(narrow, "float64")

    check_against_torch(
        build, lambda t: (t.float() * (t * 1.5).float()).double(), [x], (2, 3)
    )


def test_cast_from_integers_gives_no_gradient_to_them() -> None:
    """Integer counts cast to float scale ``x``; only ``x`` has a gradient."""
    x, counts = _normal(2, 3), np.array([1, 0, 3], np.int64)

    def build(g: Graph, v: Value, n: Value) -> Value:
        return v * g.cast(n, "float64")

    check_vjp(build, [x, counts])
    check_against_torch(build, lambda t, n: t * n.double(), [x, counts], (2, 3))
