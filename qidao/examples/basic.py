"""The book's example and the small benchmark workloads: chains, copies, rows, a call."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from qidao.examples.base import Arrays, Example
from qidao.frontend.builder import Graph


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


# -- issue 3: memory-bound elementwise work, softmax and layer norm --------------------

BIG_N = 1 << 24
ROWS, COLS = 4096, 1024
LAYERNORM_EPS = 1e-5


def _chain24_inputs(rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal(BIG_N, dtype=np.float32)]


def _copy_graph() -> Graph:
    """y = a contiguous copy of x: one load and one store per element."""
    g = Graph("main")
    x = g.input("x", (BIG_N,))
    g.output(g.contiguous(x))  # an output that is an input is copied all the same
    return g


def _copy_reference(x: Any) -> Arrays:
    return [x.copy()]


def _copy_torch(x: Any) -> Any:
    return x.clone()


def _copy_numpy(x: Any, out: Any) -> None:
    np.copyto(out, x)


def _rows_inputs(rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((ROWS, COLS), dtype=np.float32)]


def _softmax_graph() -> Graph:
    g = Graph("main")
    x = g.input("x", (ROWS, COLS))
    g.output(g.softmax(x, axis=-1))
    return g


def _softmax_reference(x: Any) -> Arrays:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return [e / e.sum(axis=-1, keepdims=True)]


def _softmax_torch(x: Any) -> Any:
    import torch

    return torch.softmax(x, dim=-1)


@functools.cache
def layernorm_params() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The layer norm's weight and bias: fixed, so graph and references agree."""
    rng = np.random.default_rng(1234)
    weight = (1.0 + 0.1 * rng.standard_normal(COLS)).astype(np.float32)
    bias = (0.1 * rng.standard_normal(COLS)).astype(np.float32)
    return weight, bias


def _layernorm_graph() -> Graph:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis, from tg ops."""
    weight, bias = layernorm_params()
    g = Graph("main")
    x = g.input("x", (ROWS, COLS))
    centered = x - g.reduce_mean(x, -1, keepdims=True)
    variance = g.reduce_mean(centered * centered, -1, keepdims=True)
    normalized = centered / g.sqrt(variance + LAYERNORM_EPS)
    g.output(normalized * g.constant(weight) + g.constant(bias))
    return g


def _layernorm_reference(x: Any) -> Arrays:
    weight, bias = layernorm_params()
    x64 = x.astype(np.float64)
    centered = x64 - x64.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    y = centered / np.sqrt(variance + LAYERNORM_EPS) * weight + bias
    return [y.astype(np.float32)]


@functools.cache
def _layernorm_torch_params() -> tuple[Any, Any]:
    import torch

    weight, bias = layernorm_params()
    return torch.from_numpy(weight), torch.from_numpy(bias)


def _layernorm_torch(x: Any) -> Any:
    import torch

    weight, bias = _layernorm_torch_params()
    return torch.nn.functional.layer_norm(x, (COLS,), weight, bias, LAYERNORM_EPS)


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


ERF_N = 1 << 22


def _erf_graph() -> Graph:
    g = Graph("main")
    x = g.input("x", (ERF_N,))
    g.output(g.erf(x))
    return g


def _erf_inputs(rng: np.random.Generator) -> Arrays:
    return [(3 * rng.standard_normal(ERF_N)).astype(np.float32)]


def _erf_reference(x: Any) -> Arrays:
    import math

    return [np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float32)]


def _erf_torch(x: Any) -> Any:
    import torch

    return torch.erf(x)


TRANSPOSE_N = 2048


def _transpose_graph() -> Graph:
    """y = x transposed, as a row-major copy: one kernel whose loads walk down the
    columns of x (``tile`` blocks it for the cache; see
    docs/tutorial/04-a-schedule-primitive.md)."""
    g = Graph("main")
    x = g.input("x", (TRANSPOSE_N, TRANSPOSE_N))
    g.output(g.contiguous(g.transpose(x, (1, 0))))
    return g


def _transpose_inputs(rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((TRANSPOSE_N, TRANSPOSE_N), dtype=np.float32)]


def _transpose_reference(x: Any) -> Arrays:
    return [np.ascontiguousarray(x.T)]


def _transpose_torch(x: Any) -> Any:
    return x.t().contiguous()


def _transpose_numpy(x: Any, out: Any) -> None:
    np.copyto(out, x.T)


BASIC_EXAMPLES: tuple[Example, ...] = (
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
        "chain24",
        "y = relu(x*w + b)*s + c over 2^24 float32 (the chain, memory-bound)",
        functools.partial(chain_graph, BIG_N),
        _chain24_inputs,
        _chain_reference,
        _chain_torch,
        bytes_per_call=2 * 4 * BIG_N,
    ),
    Example(
        "copy24",
        "y = a copy of x, 2^24 float32: this machine's copy bandwidth",
        _copy_graph,
        _chain24_inputs,
        _copy_reference,
        _copy_torch,
        bytes_per_call=2 * 4 * BIG_N,
        numpy_fn=_copy_numpy,
    ),
    Example(
        "softmax",
        "softmax over the last axis of 4096x1024 float32",
        _softmax_graph,
        _rows_inputs,
        _softmax_reference,
        _softmax_torch,
        bytes_per_call=2 * 4 * ROWS * COLS,
    ),
    Example(
        "layernorm",
        "layer norm over the last axis of 4096x1024 float32 (weight, bias, eps 1e-5)",
        _layernorm_graph,
        _rows_inputs,
        _layernorm_reference,
        _layernorm_torch,
        bytes_per_call=2 * 4 * ROWS * COLS + 2 * 4 * COLS,
    ),
    Example(
        "call16",
        "y = x + 1 on 16 floats: the cost of one compiled call",
        _small_graph,
        _small_inputs,
        _small_reference,
        _small_torch,
    ),
    Example(
        "transpose",
        "y = x transposed into a row-major copy, 2048x2048 float32",
        _transpose_graph,
        _transpose_inputs,
        _transpose_reference,
        _transpose_torch,
        bytes_per_call=2 * 4 * TRANSPOSE_N * TRANSPOSE_N,
        numpy_fn=_transpose_numpy,
    ),
    Example(
        "erf",
        "y = erf(x) over 2^22 float32 (expand-math's polynomial)",
        _erf_graph,
        _erf_inputs,
        _erf_reference,
        _erf_torch,
        bytes_per_call=2 * 4 * ERF_N,
    ),
)
