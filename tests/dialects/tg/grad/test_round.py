"""The vjp rule of ``tg.round``: zero, away from the steps (central differences)
and at them (PyTorch's ``round`` backward)."""

from __future__ import annotations

import numpy as np
import torch

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp, gradients

COVERS = {"tg.round"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""


def _round_times_x(g: Graph, x: Value) -> Value:
    return g.round(x) * x


def test_round_away_from_the_steps_matches_central_differences() -> None:
    x = np.array([[-2.2, -0.7, 0.2, 1.3], [2.8, -3.9, 4.1, 0.6]])
    check_vjp(_round_times_x, [x])


def test_round_at_the_steps_is_zero_as_pytorch() -> None:
    x = np.array([-1.5, -0.5, 0.5, 1.5, 2.5, 0.0])
    (ours,) = gradients(lambda g, a: g.round(a), [x], [0])
    t = torch.tensor(x, requires_grad=True)
    (torch.round(t) * torch.tensor(np.ones_like(x))).sum().backward()
    assert t.grad is not None
    np.testing.assert_array_equal(ours, t.grad.numpy())
