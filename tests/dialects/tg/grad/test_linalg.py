"""The vjp rule of ``tg.matmul`` (``grad/linalg.py``) against float64 central
differences (``gradcheck.py``) and ``torch.autograd`` (``torch_oracle.py``): plain,
batched, batch dimensions broadcast (their gradients summed back), strided operands
and one operand on both sides. ``tg.matmul`` takes operands of rank >= 2 only (the
frontends reshape a vector to a matrix), so there is no 1-D case to check."""

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

COVERS = {"tg.matmul"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(10)
DRAWN = settings(max_examples=15, deadline=None)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _matmul(g: Graph, x: Value, y: Value) -> Value:
    return x @ y


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (2, 4, 5)),
        ((2, 3, 4), (4, 5)),
        ((1, 3, 4), (2, 4, 2)),
        ((1, 1), (1, 3)),
    ],
)
def test_matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """Plain, batched, a batch dimension broadcast (summed back), K = 1."""
    a, b = _normal(*a_shape), _normal(*b_shape)
    check_vjp(_matmul, [a, b])
    check_against_torch(_matmul, torch.matmul, [a, b], (a @ b).shape)


@st.composite
def _batched(draw: Any) -> tuple[list[int], list[int]]:
    """Two operand shapes whose batch dimensions broadcast: each side drops some
    leading batch dimensions and keeps others as 1."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))

    def side() -> list[int]:
        kept = batch[draw(st.integers(0, len(batch))) :]
        return [d if draw(st.booleans()) else 1 for d in kept]

    return [*side(), m, k], [*side(), k, n]


@DRAWN
@given(_batched())
def test_matmul_drawn_batch_broadcasting(case: tuple[list[int], list[int]]) -> None:
    a_shape, b_shape = case
    a, b = _normal(*a_shape), _normal(*b_shape)
    check_vjp(_matmul, [a, b])
    check_against_torch(_matmul, torch.matmul, [a, b], (a @ b).shape)


def test_matmul_of_transposed_operands() -> None:
    """``x^T y^T``: the operands are strided views; their gradients are not."""
    a, b = _normal(4, 3), _normal(5, 4)

    def build(g: Graph, x: Value, y: Value) -> Value:
        return g.transpose(x, [1, 0]) @ g.transpose(y, [1, 0])

    check_vjp(build, [a, b])
    check_against_torch(build, lambda x, y: x.T @ y.T, [a, b], (3, 5))


def test_one_operand_on_both_sides() -> None:
    """``x x^T``: both of x's gradients (as lhs and as rhs) add up."""
    a = _normal(3, 2)

    def build(g: Graph, x: Value) -> Value:
        return x @ g.transpose(x, [1, 0])

    check_vjp(build, [a])
    check_against_torch(build, lambda x: x @ x.T, [a], (3, 3))
