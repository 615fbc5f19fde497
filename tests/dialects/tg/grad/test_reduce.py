"""The vjp rules of the reductions and softmax (``grad/reduce.py``) against float64
central differences (``gradcheck.py``) and ``torch.autograd`` (``torch_oracle.py``),
shapes and axes drawn by hypothesis. Ties of ``reduce_max`` have no derivative, so
there only PyTorch's ``amax`` is the oracle."""

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
    "tg.reduce_sum",
    "tg.reduce_mean",
    "tg.reduce_max",
    "tg.reduce_prod",
    "tg.softmax",
}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(9)
DRAWN = settings(max_examples=15, deadline=None)


@st.composite
def _reductions(draw: Any) -> tuple[list[int], list[int], bool]:
    """A shape, a nonempty set of its axes (some spelled negative), keepdims."""
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    axes = sorted(draw(st.sets(st.integers(0, len(dims) - 1), min_size=1)))
    spelled = [a - len(dims) if draw(st.booleans()) else a for a in axes]
    return dims, spelled, draw(st.booleans())


@DRAWN
@given(_reductions(), st.sampled_from(["sum", "mean"]))
def test_sum_and_mean_drawn(case: tuple[list[int], list[int], bool], kind: str) -> None:
    dims, axes, keepdims = case
    x = RNG.standard_normal(dims)

    def build(g: Graph, v: Value) -> Value:
        reduce = g.reduce_sum if kind == "sum" else g.reduce_mean
        return reduce(v, axes, keepdims=keepdims)

    check_vjp(build, [x])
    out = getattr(np, kind)(x, axis=tuple(axes), keepdims=keepdims).shape
    torch_reduce = torch.sum if kind == "sum" else torch.mean
    check_against_torch(
        build, lambda t: torch_reduce(t, axes, keepdim=keepdims), [x], out
    )


def test_reductions_over_every_axis_give_a_scalar() -> None:
    """``axes=None``: a rank-0 result whose gradient fills the whole input."""
    x = RNG.standard_normal((2, 3))

    def build(g: Graph, v: Value) -> Value:
        return g.reduce_sum(v) * g.reduce_mean(v) + g.reduce_max(v)

    check_vjp(build, [x])
    check_against_torch(build, lambda t: t.sum() * t.mean() + t.amax(), [x], ())


@DRAWN
@given(_reductions())
def test_reduce_max_drawn_away_from_ties(
    case: tuple[list[int], list[int], bool],
) -> None:
    """Distinct entries: the whole gradient goes to the maximum."""
    dims, axes, keepdims = case
    x = RNG.permutation(int(np.prod(dims))).reshape(dims) / 4.0

    def build(g: Graph, v: Value) -> Value:
        return g.reduce_max(v, axes, keepdims=keepdims)

    check_vjp(build, [x])
    out = np.amax(x, axis=tuple(axes), keepdims=keepdims).shape
    check_against_torch(build, lambda t: torch.amax(t, axes, keepdims), [x], out)


@DRAWN
@given(_reductions(), st.data())
def test_reduce_max_ties_share_the_gradient_like_amax(
    case: tuple[list[int], list[int], bool], data: Any
) -> None:
    """Entries drawn from {0, 1, 2}, so most maxima are ties: each tied entry gets
    an equal share (``amax``), as the docs' conventions table says."""
    dims, axes, keepdims = case
    values = data.draw(
        st.lists(st.integers(0, 2), min_size=int(np.prod(dims)), max_size=99)
    )
    x = np.array(values[: int(np.prod(dims))], np.float64).reshape(dims)

    def build(g: Graph, v: Value) -> Value:
        return g.reduce_max(v, axes, keepdims=keepdims)

    out = np.amax(x, axis=tuple(axes), keepdims=keepdims).shape
    check_against_torch(build, lambda t: torch.amax(t, axes, keepdims), [x], out)


@DRAWN
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_softmax_drawn(dims: list[int], data: Any) -> None:
    axis = data.draw(st.integers(-len(dims), len(dims) - 1))
    x = RNG.standard_normal(dims)

    def build(g: Graph, v: Value) -> Value:
        return g.softmax(v, axis)

    check_vjp(build, [x])
    check_against_torch(build, lambda t: torch.softmax(t, axis), [x], dims)


def test_softmax_of_a_transposed_input() -> None:
    """The input is a strided view; its gradient goes back through the transpose."""
    x = RNG.standard_normal((3, 4))

    def build(g: Graph, v: Value) -> Value:
        return g.softmax(g.transpose(v, [1, 0]), 0)

    check_vjp(build, [x])
    check_against_torch(build, lambda t: torch.softmax(t.T, 0), [x], (4, 3))


@DRAWN
@given(_reductions())
def test_prod_drawn(case: tuple[list[int], list[int], bool]) -> None:
    dims, axes, keepdims = case
    x = RNG.uniform(0.5, 1.5, dims) * RNG.choice([-1.0, 1.0], dims)
    check_vjp(lambda g, v: g.reduce_prod(v, axes, keepdims), [x])


_PROD_ROWS = np.array(
    [
        [2.0, -3.0, 0.5, 4.0],  # no zero: g prod / x
        [2.0, 0.0, 0.5, 4.0],  # one zero: it gets the product of the others
        [0.0, 3.0, -0.0, 4.0],  # two zeros: every entry gets 0
        [0.0, 0.0, 0.0, 0.0],
        [-0.0, 1.0, 1.0, 1.0],
    ]
)
"""Rows with no, one and several zeros: PyTorch's ``prod_backward`` cases."""


def test_prod_zeros_against_torch() -> None:
    """Along an axis, and over everything (one zero in the whole tensor)."""
    x = _PROD_ROWS
    check_against_torch(
        lambda g, v: g.reduce_prod(v, [1]), lambda t: t.prod(1), [x], [x.shape[0]]
    )
    check_against_torch(
        lambda g, v: g.reduce_prod(v, [0], keepdims=True),
        lambda t: t.prod(0, keepdim=True),
        [x.T.copy()],
        [1, x.shape[0]],
    )
    one_zero = x[:2]
    check_against_torch(
        lambda g, v: g.reduce_prod(v, [0, 1]), torch.prod, [one_zero], []
    )
