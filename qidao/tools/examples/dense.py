"""Built-in compute-bound models: issue 4's speed targets.

matmul N x N (``matmul1024``, ``matmul2048``), the fused GEMM + bias + ReLU at 512
(``gemm512``) and a ResNet 3 x 3 convolution, 64 -> 64 channels at 56 x 56, batch 1,
padding 1 (``conv3x3``). Each states its FLOPs per call (a multiply-add counts as
two), from which ``qidao bench`` reports GFLOP/s; the matmuls have a NumPy version
(``np.matmul`` into a preallocated output) as a second baseline.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from qidao.frontend.builder import Graph
from qidao.tools.examples.base import Arrays, Example

CONV_C, CONV_HW = 64, 56


def _matmul_graph(n: int) -> Graph:
    g = Graph("main")
    x = g.input("x", (n, n))
    w = g.input("w", (n, n))
    g.output(x @ w)
    return g


def _matmul_inputs(n: int, rng: np.random.Generator) -> Arrays:
    return [
        rng.standard_normal((n, n), dtype=np.float32),
        rng.standard_normal((n, n), dtype=np.float32),
    ]


def _matmul_reference(x: Any, w: Any) -> Arrays:
    return [(x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)]


def _matmul_torch(x: Any, w: Any) -> Any:
    return x @ w


def _matmul_numpy(x: Any, w: Any, out: Any) -> None:
    np.matmul(x, w, out=out)


def _gemm_graph(n: int) -> Graph:
    g = Graph("main")
    x = g.input("x", (n, n))
    w = g.input("w", (n, n))
    b = g.input("b", (n,))
    g.output(g.relu(x @ w + b))
    return g


def _gemm_inputs(n: int, rng: np.random.Generator) -> Arrays:
    return [*_matmul_inputs(n, rng), rng.standard_normal(n, dtype=np.float32)]


def _gemm_reference(x: Any, w: Any, b: Any) -> Arrays:
    y = x.astype(np.float64) @ w.astype(np.float64) + b
    return [np.maximum(y, 0).astype(np.float32)]


def _gemm_torch(x: Any, w: Any, b: Any) -> Any:
    import torch

    return torch.relu(torch.addmm(b, x, w))


@functools.cache
def conv_weight() -> np.ndarray[Any, Any]:
    """The convolution's weight: fixed, so graph and references agree."""
    rng = np.random.default_rng(7)
    shape = (CONV_C, CONV_C, 3, 3)
    weight: np.ndarray[Any, Any] = rng.standard_normal(shape) / np.sqrt(9 * CONV_C)
    return weight.astype(np.float32)


def _conv_graph() -> Graph:
    g = Graph("main")
    x = g.input("x", (1, CONV_C, CONV_HW, CONV_HW))
    g.output(g.conv2d(x, g.constant(conv_weight()), padding=1))
    return g


def _conv_inputs(rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((1, CONV_C, CONV_HW, CONV_HW), dtype=np.float32)]


def _conv_reference(x: Any) -> Arrays:
    w = conv_weight().astype(np.float64)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, CONV_C, CONV_HW, CONV_HW))
    for kh in range(3):
        for kw in range(3):
            window = padded[:, :, kh : kh + CONV_HW, kw : kw + CONV_HW]
            out += np.einsum("nchw,fc->nfhw", window, w[:, :, kh, kw])
    return [out.astype(np.float32)]


@functools.cache
def _conv_torch_weight() -> Any:
    import torch

    return torch.from_numpy(conv_weight())


def _conv_torch(x: Any) -> Any:
    import torch

    return torch.nn.functional.conv2d(x, _conv_torch_weight(), padding=1)


def _matmul(n: int) -> Example:
    return Example(
        f"matmul{n}",
        f"x @ w, {n}x{n} float32 (the default schedule's register tile)",
        functools.partial(_matmul_graph, n),
        functools.partial(_matmul_inputs, n),
        _matmul_reference,
        _matmul_torch,
        numpy_fn=_matmul_numpy,
        flops_per_call=2 * n**3,
        tolerance=(1e-3, 1e-3 * n**0.5),
    )


DENSE_EXAMPLES: tuple[Example, ...] = (
    _matmul(1024),
    _matmul(2048),
    Example(
        "gemm512",
        "relu(x @ w + b), 512x512 float32 (the bias and ReLU fused as an epilogue)",
        functools.partial(_gemm_graph, 512),
        functools.partial(_gemm_inputs, 512),
        _gemm_reference,
        _gemm_torch,
        flops_per_call=2 * 512**3,
        tolerance=(1e-3, 1e-3 * 512**0.5),
    ),
    Example(
        "conv3x3",
        "conv2d 3x3, 64 -> 64 channels, 56x56, batch 1, padding 1, float32",
        _conv_graph,
        _conv_inputs,
        _conv_reference,
        _conv_torch,
        flops_per_call=2 * CONV_C * CONV_C * 9 * CONV_HW * CONV_HW,
        tolerance=(1e-3, 1e-3 * (9 * CONV_C) ** 0.5),
    ),
)
