"""The vjp rules of the trigonometric and hyperbolic ops (``grad/trig.py``) against
float64 central differences (``gradcheck.py``) inside each domain, and against
``torch.autograd`` there and at the edges of the domains, where the derivative is
infinite (``asin``, ``acos`` at ``+-1``, ``acosh`` at 1, ``atanh`` at ``+-1``) and
outside them, where the forward and both gradients are NaN."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {
    "tg.tan",
    "tg.asin",
    "tg.acos",
    "tg.atan",
    "tg.sinh",
    "tg.cosh",
    "tg.asinh",
    "tg.acosh",
    "tg.atanh",
}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(11)

Unary = Callable[[Graph, Value], Value]

OPS: dict[str, tuple[Unary, Callable[[torch.Tensor], torch.Tensor], float, float]] = {
    "tan": (lambda g, x: g.tan(x), torch.tan, -1.4, 1.4),
    "asin": (lambda g, x: g.asin(x), torch.asin, -0.9, 0.9),
    "acos": (lambda g, x: g.acos(x), torch.acos, -0.9, 0.9),
    "atan": (lambda g, x: g.atan(x), torch.atan, -4.0, 4.0),
    "sinh": (lambda g, x: g.sinh(x), torch.sinh, -3.0, 3.0),
    "cosh": (lambda g, x: g.cosh(x), torch.cosh, -3.0, 3.0),
    "asinh": (lambda g, x: g.asinh(x), torch.asinh, -4.0, 4.0),
    "acosh": (lambda g, x: g.acosh(x), torch.acosh, 1.1, 4.0),
    "atanh": (lambda g, x: g.atanh(x), torch.atanh, -0.9, 0.9),
}
"""op -> builder, PyTorch function, and an interval inside its domain."""

EDGES = np.array(
    [0.0, -0.0, 1.0, -1.0, 1.0 + 1e-9, -1.0 - 1e-9, 2.0, -2.0, np.inf, -np.inf]
)
"""The domain edges (``+-1``), just beyond them, outside, the infinities."""


@pytest.mark.parametrize("name", sorted(OPS))
def test_central_differences(name: str) -> None:
    build, _, low, high = OPS[name]
    check_vjp(build, [RNG.uniform(low, high, (3, 4))])


@pytest.mark.parametrize("name", sorted(OPS))
def test_against_torch(name: str) -> None:
    build, reference, low, high = OPS[name]
    x = RNG.uniform(low, high, (2, 5))
    check_against_torch(build, reference, [x], x.shape)


@pytest.mark.parametrize("name", sorted(OPS))
def test_domain_edges_against_torch(name: str) -> None:
    """inf where the derivative is (``asin(1)``: ``g / sqrt(0)``), NaN outside the
    domain, PyTorch's value at the infinities (``atan``: 0, ``sinh``: inf)."""
    build, reference, _, _ = OPS[name]
    with np.errstate(all="ignore"):
        check_against_torch(build, reference, [EDGES], EDGES.shape, rtol=1e-7)


def test_infinite_derivatives() -> None:
    """The edges named in the docstring: each derivative infinite, with its sign."""
    ones = np.array([1.0, -1.0])
    cases: dict[str, list[float]] = {
        "asin": [np.inf, np.inf],
        "acos": [-np.inf, -np.inf],
        "atanh": [np.inf, np.inf],
    }
    for name, want in cases.items():
        build, reference, _, _ = OPS[name]
        t = torch.tensor(ones, requires_grad=True)
        reference(t).sum().backward()
        assert t.grad is not None
        np.testing.assert_array_equal(t.grad.numpy(), want)
        with np.errstate(all="ignore"):
            check_against_torch(build, reference, [ones], ones.shape)
