"""``qidao.gradcheck``'s arguments: each wrong one is an ``ArgumentError`` naming
it, its value and what it takes, before anything is compiled (issue 29, F20: eps=0
was a ZeroDivisionError, elements=-3 NumPy's "negative dimensions", eps=-1 was
accepted). The checks of gradients themselves are in ``test_grad.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph


def _square_sum() -> Graph:
    g = Graph("main")
    x = g.input("x", (4,))
    g.output(g.reduce_sum(x * x))
    return g


X = [np.linspace(-1.0, 1.0, 4, dtype=np.float32)]


@pytest.mark.parametrize(
    ("given", "named", "expected"),
    [
        ({"eps": 0.0}, "eps=0.0", "> 0"),
        ({"eps": -1.0}, "eps=-1.0", "> 0"),
        ({"eps": float("nan")}, "eps=nan", "finite"),
        ({"eps": float("inf")}, "eps=inf", "finite"),
        ({"eps": "1e-6"}, "eps='1e-6'", "number"),
        ({"eps": True}, "eps=True", "number"),
        ({"rtol": -1e-5}, "rtol=-1e-05", ">= 0"),
        ({"atol": float("inf")}, "atol=inf", "finite"),
        ({"atol": None}, "atol=None", "number"),
        ({"elements": -3}, "elements=-3", "positive integer"),
        ({"elements": 0}, "elements=0", "positive integer"),
        ({"elements": 2.5}, "elements=2.5", "positive integer"),
        ({"elements": True}, "elements=True", "positive integer"),
        ({"seed": -1}, "seed=-1", "integer >= 0"),
        ({"seed": 1.5}, "seed=1.5", "integer >= 0"),
        ({"wrt": []}, "wrt", "non-empty list of distinct names"),
        ({"wrt": ["x", "x"]}, "wrt", "distinct"),
        ({"wrt": [0]}, "wrt", "names"),
    ],
)
def test_a_wrong_argument_is_named_with_what_it_takes(
    given: dict[str, Any], named: str, expected: str
) -> None:
    arguments: dict[str, Any] = {"wrt": ["x"], **given}
    with pytest.raises(qidao.ArgumentError) as info:
        qidao.gradcheck(_square_sum(), X, **arguments)
    message = str(info.value)
    assert message.startswith("gradcheck: ")
    assert named in message and expected in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize(
    ("inputs", "named"),
    [
        (X[0], "inputs must be a list"),  # one array, not a list of them
        ("x", "inputs must be a list"),
        ([np.array(["a"] * 4)], "inputs[0]"),
        ([[1.0, [2.0]]], "inputs[0]"),
        ([], "takes 1 input(s) (x), got 0"),
    ],
)
def test_wrong_inputs_are_named(inputs: Any, named: str) -> None:
    with pytest.raises(qidao.ArgumentError, match="gradcheck: ") as info:
        qidao.gradcheck(_square_sum(), inputs, wrt="x")
    assert named in str(info.value)


def test_valid_arguments_at_their_bounds_check() -> None:
    """More elements than an input has checks all of them; a tiny atol and rtol=0
    ask for near-exact agreement, which central differences of a quadratic give
    at any step."""
    assert qidao.gradcheck(_square_sum(), X, wrt="x", elements=100, seed=0)
    assert qidao.gradcheck(_square_sum(), X, wrt=("x",), eps=0.5, atol=1e-9, rtol=0)


def test_a_pytorch_model_is_pointed_to_torch_autograd() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(qidao.ArgumentError, match=r"torch\.autograd\.gradcheck"):
        qidao.gradcheck(torch.nn.Linear(4, 2), X, wrt="x")
