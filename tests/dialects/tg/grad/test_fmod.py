"""The vjp rule of ``tg.fmod`` (``grad/fmod.py``): against float64 central
differences away from the jumps, and against PyTorch's ``fmod`` backward (1 for
``a``, ``-trunc(a / b)`` for ``b``) with broadcasting, at the jumps (a remainder of
0), at an infinite divisor and where the quotient overflows."""

from __future__ import annotations

import numpy as np
import torch

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {"tg.fmod"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(13)


def _fmod(g: Graph, a: Value, b: Value) -> Value:
    return g.fmod(a, b)


def _away_from_jumps() -> tuple[np.ndarray, np.ndarray]:
    """``a / b`` at least 0.1 from an integer, so no jump is within ``eps``."""
    b = RNG.uniform(0.5, 2.0, (3, 4)) * RNG.choice([-1.0, 1.0], (3, 4))
    q = RNG.integers(-4, 5, (3, 4)) + RNG.uniform(0.1, 0.9, (3, 4))
    return q * b, b


def test_central_differences() -> None:
    check_vjp(_fmod, list(_away_from_jumps()))


def test_broadcast_against_torch() -> None:
    a = RNG.uniform(-5.0, 5.0, (3, 4))
    b = RNG.uniform(0.5, 2.0, (4,)) * RNG.choice([-1.0, 1.0], (4,))
    check_against_torch(_fmod, torch.fmod, [a, b], a.shape)
    check_against_torch(_fmod, torch.fmod, [b, a], a.shape)


def test_special_points_against_torch() -> None:
    """Remainders of 0 (``-trunc`` is then ``-a / b`` exactly), signed zeros, an
    infinite divisor (``fmod(x, inf) = x``: 0 for ``b``) and a quotient that
    overflows to inf (PyTorch's ``-inf`` for ``b``)."""
    points = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 1e300]
    divisors = [1.0, -1.0, 2.5, -2.5, 0.5, 3.0, 1e-300, np.inf, -np.inf]
    a = np.repeat(np.array(points), len(divisors))
    b = np.tile(np.array(divisors), len(points))
    with np.errstate(all="ignore"):
        check_against_torch(_fmod, torch.fmod, [a, b], a.shape)
