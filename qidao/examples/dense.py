"""Built-in compute-bound models: issue 4's speed targets.

matmul N x N (``matmul1024``, ``matmul2048``) and of any shape, ``matmulMxKxN`` (an
M x K by K x N product, B a graph input like A: ``matmul128x768x3072``, also as an
ONNX file for the ``onnxruntime`` backend), the fused GEMM + bias + ReLU at 512
(``gemm512``) and a ResNet 3 x 3 convolution, 64 -> 64 channels at 56 x 56, batch 1,
padding 1 (``conv3x3``). Each states its FLOPs per call (a multiply-add counts as
two), from which ``qidao bench`` reports GFLOP/s; the matmuls have a NumPy version
(``np.matmul`` into a preallocated output) as a second baseline.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from qidao.examples.base import Arrays, Example
from qidao.frontend.builder import Graph

CONV_C, CONV_HW = 64, 56


MATMUL_SHAPE = re.compile(r"matmul(\d+)x(\d+)x(\d+)")
"""A workload name ``matmulMxKxN``."""
MAX_MATMUL_ELEMENTS = 1 << 28
"""The largest operand a ``matmulMxKxN`` workload may ask for (1 GiB of float32)."""


def _matmul_graph(m: int, k: int | None = None, n: int | None = None) -> Graph:
    k, n = k or m, n or m
    g = Graph("main")
    x = g.input("x", (m, k))
    w = g.input("w", (k, n))
    g.output(x @ w)
    return g


def _matmul_inputs(
    m: int, rng: np.random.Generator, k: int | None = None, n: int | None = None
) -> Arrays:
    k, n = k or m, n or m
    return [
        rng.standard_normal((m, k), dtype=np.float32),
        rng.standard_normal((k, n), dtype=np.float32),
    ]


def _matmul_onnx(m: int, k: int, n: int) -> Path:
    """``Y = MatMul(x, w)`` as an ONNX file in the temp dir (written once)."""
    import onnx
    from onnx import TensorProto, helper

    path = Path(tempfile.gettempdir()) / "qidao-models" / f"matmul{m}x{k}x{n}.onnx"
    if not path.exists():
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            f"matmul{m}x{k}x{n}",
            [
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k]),
                helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n]),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        onnx.save(model, str(partial))
        partial.replace(path)  # atomic: a concurrent reader sees all or nothing
    return path


def matmul_example(name: str) -> Example | None:
    """The workload ``matmulMxKxN`` (None for any other name); raises for a size
    of zero or an operand over ``MAX_MATMUL_ELEMENTS``."""
    match = MATMUL_SHAPE.fullmatch(name)
    if match is None:
        return None
    m, k, n = (int(d) for d in match.groups())
    if min(m, k, n) < 1 or max(m * k, k * n, m * n) > MAX_MATMUL_ELEMENTS:
        raise ValueError(
            f"workload '{name}': M, K and N must be at least 1 and each operand at "
            f"most {MAX_MATMUL_ELEMENTS} elements, got {m}x{k} @ {k}x{n}"
        )
    return Example(
        name,
        f"x @ w, {m}x{k} @ {k}x{n} float32 (the default schedule)",
        functools.partial(_matmul_graph, m, k, n),
        lambda rng: _matmul_inputs(m, rng, k, n),
        _matmul_reference,
        _matmul_torch,
        numpy_fn=_matmul_numpy,
        flops_per_call=2 * m * k * n,
        tolerance=(1e-3, 1e-3 * k**0.5),
        onnx_path=functools.partial(_matmul_onnx, m, k, n),
    )


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
