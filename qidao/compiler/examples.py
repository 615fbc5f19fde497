"""Built-in models: the book's examples, so every command has a default to run.

Each entry builds a tg graph with the Python builder, gives a NumPy reference, a
PyTorch eager version for side-by-side timing, and inputs to run it on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.frontend.builder import Graph

Arrays = list[np.ndarray[Any, Any]]


@dataclass(frozen=True)
class Example:
    name: str
    summary: str
    build: Callable[[], Graph]
    inputs: Callable[[np.random.Generator], Arrays]
    reference: Callable[..., Arrays]
    torch_fn: Callable[..., Any]


def _book_graph() -> Graph:
    g = Graph("main")
    x = g.input("x", (1, 1))
    w = g.input("w", (1, 1))
    b = g.input("b", (1,))
    g.output(g.relu(g.matmul(x, w) + b))
    return g


def _book_inputs(rng: np.random.Generator) -> Arrays:
    del rng  # the book's numbers: x = 2, w = 3, b = 1 gives relu(2*3 + 1) = 7
    return [
        np.array([[2.0]], np.float32),
        np.array([[3.0]], np.float32),
        np.array([1.0], np.float32),
    ]


def _book_reference(x: Any, w: Any, b: Any) -> Arrays:
    return [np.maximum(x @ w + b, 0)]


def _book_torch(x: Any, w: Any, b: Any) -> Any:
    import torch

    return torch.relu(x @ w + b)


CHAIN_N = 1 << 20
W, B, S, C = 3.0, 1.0, 0.5, 2.0


def chain_graph(n: int = CHAIN_N) -> Graph:
    """y = relu(x*w + b)*s + c over n floats, with scalar weights."""
    g = Graph("main")
    x = g.input("x", (n,))
    g.output(g.relu(x * W + B) * S + C)
    return g


def _chain_inputs(rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal(CHAIN_N, dtype=np.float32)]


def _chain_reference(x: Any) -> Arrays:
    return [
        np.maximum(x * np.float32(W) + np.float32(B), 0) * np.float32(S) + np.float32(C)
    ]


def _chain_torch(x: Any) -> Any:
    import torch

    return torch.relu(x * W + B) * S + C


def _small_graph() -> Graph:
    g = Graph("main")
    x = g.input("x", (16,))
    g.output(x + 1.0)
    return g


def _small_inputs(rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal(16, dtype=np.float32)]


def _small_reference(x: Any) -> Arrays:
    return [x + np.float32(1.0)]


def _small_torch(x: Any) -> Any:
    return x + 1.0


EXAMPLES: dict[str, Example] = {
    e.name: e
    for e in (
        Example(
            "book",
            "y = relu(x·w + b) on 1x1 matrices (x=2, w=3, b=1 gives 7)",
            _book_graph,
            _book_inputs,
            _book_reference,
            _book_torch,
        ),
        Example(
            "chain",
            "y = relu(x*w + b)*s + c over 2^20 float32 (five ops, scalar weights)",
            chain_graph,
            _chain_inputs,
            _chain_reference,
            _chain_torch,
        ),
        Example(
            "call16",
            "y = x + 1 on 16 floats: the cost of one compiled call",
            _small_graph,
            _small_inputs,
            _small_reference,
            _small_torch,
        ),
    )
}


def get_example(name: str) -> Example:
    if name not in EXAMPLES:
        raise ValueError(
            f"unknown built-in model '{name}'; choose from {', '.join(EXAMPLES)}"
        )
    return EXAMPLES[name]
