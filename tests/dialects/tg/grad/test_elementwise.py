"""Every elementwise vjp rule against float64 central differences
(``gradcheck.py``), broadcasting included; the conventions where the derivative is
undefined (relu'(0), abs'(0), ties of max/min) against PyTorch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp, gradients

COVERS = {
    "tg.neg",
    "tg.abs",
    "tg.relu",
    "tg.exp",
    "tg.log",
    "tg.sqrt",
    "tg.tanh",
    "tg.erf",
    "tg.sigmoid",
    "tg.sin",
    "tg.cos",
    "tg.add",
    "tg.sub",
    "tg.mul",
    "tg.div",
    "tg.max",
    "tg.min",
    "tg.pow",
    "tg.select",
    "tg.cast",
}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(7)


def _away_from_zero(shape: tuple[int, ...]) -> np.ndarray:
    x = RNG.uniform(0.3, 1.5, shape) * RNG.choice([-1.0, 1.0], shape)
    return x.astype(np.float64)


def _positive(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.uniform(0.3, 2.0, shape)


UNARY: dict[str, tuple[Callable[[Graph, Value], Value], Callable[..., np.ndarray]]] = {
    "neg": (lambda g, x: -x, _away_from_zero),
    "abs": (lambda g, x: g.abs(x), _away_from_zero),
    "relu": (lambda g, x: g.relu(x), _away_from_zero),
    "exp": (lambda g, x: g.exp(x), _away_from_zero),
    "log": (lambda g, x: g.log(x), _positive),
    "sqrt": (lambda g, x: g.sqrt(x), _positive),
    "tanh": (lambda g, x: g.tanh(x), _away_from_zero),
    "sigmoid": (lambda g, x: g.sigmoid(x), _away_from_zero),
    "erf": (lambda g, x: g.erf(x), _away_from_zero),
    "sin": (lambda g, x: g.sin(x), _away_from_zero),
    "cos": (lambda g, x: g.cos(x), _away_from_zero),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str) -> None:
    build, draw = UNARY[name]
    check_vjp(build, [draw((3, 4))])


BINARY: dict[str, Callable[[Graph, Value, Value], Value]] = {
    "add": lambda g, a, b: a + b,
    "sub": lambda g, a, b: a - b,
    "mul": lambda g, a, b: a * b,
    "div": lambda g, a, b: a / b,
    "maximum": lambda g, a, b: g.maximum(a, b),
    "minimum": lambda g, a, b: g.minimum(a, b),
    "pow": lambda g, a, b: g.pow(a, b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3))],
)
def test_binary_broadcasting(
    name: str, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    a = _positive(lhs) if name == "pow" else _away_from_zero(lhs)
    b = _away_from_zero(rhs)
    if name in ("maximum", "minimum"):  # no ties: the derivative exists
        b = b + 0.05
    check_vjp(BINARY[name], [a, b])


def test_select() -> None:
    def build(g: Graph, c: Value, a: Value, b: Value) -> Value:
        return g.where(c, a, b) * a

    c = RNG.random((3, 4)) > 0.5
    check_vjp(build, [c, _away_from_zero((3, 4)), _away_from_zero((4,))], wrt=[1, 2])


def test_cast_between_floats_casts_the_gradient_back() -> None:
    """f32 -> f64 -> * 3: the f32 input's gradient is 3 (rounded to f32)."""
    x = _away_from_zero((4,)).astype(np.float32)
    (got,) = _plain_gradients(lambda g, a: g.cast(a, "float64") * 3.0, [x])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full(4, 3.0, np.float32))


def _torch_grads(fn: Callable[..., torch.Tensor], *xs: np.ndarray) -> list[np.ndarray]:
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    fn(*ts).backward(
        torch.ones(np.broadcast_shapes(*(x.shape for x in xs)), dtype=torch.float64)
    )
    return [t.grad.numpy() for t in ts]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "build", "reference"),
    [
        ("relu at 0", lambda g, x: g.relu(x), torch.relu),
        ("abs at 0", lambda g, x: g.abs(x), torch.abs),
    ],
)
def test_undefined_derivative_conventions_match_pytorch(
    name: str, build: Callable[..., Value], reference: Callable[..., torch.Tensor]
) -> None:
    x = np.array([-1.0, 0.0, 2.0])
    ours = _plain_gradients(build, [x])
    np.testing.assert_array_equal(ours[0], _torch_grads(reference, x)[0], err_msg=name)


@pytest.mark.parametrize(
    ("build", "reference"),
    [
        (lambda g, a, b: g.maximum(a, b), torch.maximum),
        (lambda g, a, b: g.minimum(a, b), torch.minimum),
    ],
)
def test_ties_split_like_pytorch(
    build: Callable[..., Value], reference: Callable[..., torch.Tensor]
) -> None:
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 5.0, 0.0])
    ours = _plain_gradients(build, [a, b])
    for got, want in zip(ours, _torch_grads(reference, a, b), strict=True):
        np.testing.assert_array_equal(got, want)


def _plain_gradients(
    build: Callable[..., Value], inputs: list[np.ndarray]
) -> list[np.ndarray]:
    """Gradients of ``sum(build(...))`` (no weights: PyTorch's ``backward(ones)``)."""
    from xdsl.context import Context
    from xdsl.dialects import func

    from qidao.dialects.tg.numpy_eval import evaluate_function
    from qidao.passes.graph.autodiff import AutodiffPass

    g = Graph("main")
    values = [g.input(f"in{k}", a.shape, a.dtype.name) for k, a in enumerate(inputs)]
    g.output(build(g, *values))
    module = g.module()
    AutodiffPass(wrt=tuple(f"in{k}" for k in range(len(inputs)))).apply(
        Context(), module
    )
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    return evaluate_function(fn, inputs)[1:]


def test_gradients_of_a_value_used_twice_are_summed() -> None:
    x = _away_from_zero((5,))
    (got,) = gradients(lambda g, a: a * a + g.exp(a), [x], [0])
    w = np.random.default_rng(0).uniform(0.5, 1.5, (5,))
    np.testing.assert_allclose(got, w * (2 * x + np.exp(x)), rtol=1e-12)
