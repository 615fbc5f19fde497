"""The vjp rules of the layout ops (transpose, view, reshape, contiguous,
broadcast), the reductions (sum, mean, max with ties, softmax) and matmul (batched,
broadcast batch dimensions, strided operands) against float64 central differences
and ``torch.autograd``, shapes drawn by hypothesis where it helps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
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
    "tg.reduce_sum",
    "tg.reduce_mean",
    "tg.reduce_max",
    "tg.softmax",
    "tg.matmul",
}

RNG = np.random.default_rng(8)
DRAWN = settings(max_examples=15, deadline=None)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


@DRAWN
@given(st.permutations(range(3)), st.lists(st.integers(1, 4), min_size=3, max_size=3))
def test_transpose_then_contiguous_and_reshape(
    perm: list[int], dims: list[int]
) -> None:
    x = _normal(*dims)

    def build(g: Graph, v: Value) -> Value:
        t = g.transpose(v, perm)
        return g.reshape(g.contiguous(t), [x.size]) * g.reshape(t, [x.size])  # x twice

    check_vjp(build, [x])
    check_against_torch(
        build,
        lambda t: t.permute(perm).reshape(-1) ** 2,
        [x],
        (x.size,),
    )


def test_view_and_broadcast() -> None:
    x, b = _normal(2, 6), _normal(3, 1)

    def reference(v: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return v.view(2, 2, 3) * c.expand(2, 3, 3)[:, :2, :1]

    def build_sliced(g: Graph, v: Value, c: Value) -> Value:
        return g.view(v, [2, 2, 3]) * g.slice(
            g.broadcast(c, [2, 3, 3]), [0, 0, 0], [2, 2, 1]
        )

    check_vjp(build_sliced, [x, b])
    check_against_torch(build_sliced, reference, [x, b], (2, 2, 3))


@DRAWN
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.data(),
    st.booleans(),
    st.sampled_from(["sum", "mean"]),
)
def test_sum_and_mean_drawn(
    dims: list[int], data: Any, keepdims: bool, kind: str
) -> None:
    axes = sorted(data.draw(st.sets(st.integers(0, len(dims) - 1), min_size=1)))
    x = _normal(*dims)

    def build(g: Graph, v: Value) -> Value:
        reduce = g.reduce_sum if kind == "sum" else g.reduce_mean
        return reduce(v, axes, keepdims=keepdims)

    check_vjp(build, [x])
    out = getattr(np, kind)(x, axis=tuple(axes), keepdims=keepdims).shape
    torch_reduce = torch.sum if kind == "sum" else torch.mean
    check_against_torch(
        build, lambda t: torch_reduce(t, axes, keepdim=keepdims), [x], out
    )


def test_reduce_max_away_from_ties_and_with_ties() -> None:
    x = _normal(3, 5)
    check_vjp(lambda g, v: g.reduce_max(v, [1]), [x])
    tied = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    check_against_torch(  # ties share the gradient evenly: amax's rule
        lambda g, v: g.reduce_max(v, [1]), lambda t: torch.amax(t, 1), [tied], (2,)
    )


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(axis: int) -> None:
    x = _normal(3, 4, 2)

    def build(g: Graph, v: Value) -> Value:
        return g.softmax(v, axis)

    check_vjp(build, [x])
    check_against_torch(build, lambda t: torch.softmax(t, axis), [x], x.shape)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (2, 4, 5)),
        ((2, 3, 4), (4, 5)),
        ((1, 3, 4), (2, 4, 2)),
    ],
)
def test_matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """Plain, batched, and with a batch dimension broadcast (summed back)."""
    a, b = _normal(*a_shape), _normal(*b_shape)
    check_vjp(lambda g, x, y: x @ y, [a, b])
    out = (a @ b).shape
    check_against_torch(lambda g, x, y: x @ y, torch.matmul, [a, b], out)


def test_matmul_of_transposed_operands() -> None:
    """``x^T y^T``: the operands are strided views; their gradients are not."""
    a, b = _normal(4, 3), _normal(5, 4)

    def build(g: Graph, x: Value, y: Value) -> Value:
        return g.transpose(x, [1, 0]) @ g.transpose(y, [1, 0])

    check_vjp(build, [a, b])
    check_against_torch(build, lambda x, y: x.T @ y.T, [a, b], (3, 5))
