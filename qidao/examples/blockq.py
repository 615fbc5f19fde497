"""Built-in workloads of a linear layer whose weight stays in GGUF blocks:
``gemv_q8_0``, ``gemv_q4_0`` and ``gemv_q4_k`` (one row, 4096 by a 4096 x 4096
weight: a llama-7B projection at one decoded token), and any shape as
``q8_0_MxKxN`` / ``q4_0_MxKxN`` / ``q4_k_MxKxN`` (M rows of x, a weight of N rows
of K; K a multiple of the block, 32 or ``Q4_K``'s 256).

qidao runs ``tg.matmul_blockq`` on the weight's bytes; PyTorch eager and NumPy run
``x @ W.T`` on the weight decoded to float32 once, ahead (not timed): the
baseline the issue names where llama.cpp is not at hand. The workload is
memory-bound at one row: ``bytes_per_call`` counts the weight's bytes (and x,
y), so its GB/s reads against ``copy24``'s, and the float32 baseline moves 3.8x
(Q8_0), 7.1x (Q4_0) or 7.1x (Q4_K) the bytes for the same products.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from qidao.dialects.tg.block_quant import ENCODINGS, dequantize, quantize
from qidao.examples.base import Arrays, Example
from qidao.frontend.builder import Graph
from qidao.frontend.gguf_q4k import quantize_q4_k

BLOCKQ_SHAPE = re.compile(r"(q8_0|q4_0|q4_k)_(\d+)x(\d+)x(\d+)")
"""A workload name ``q8_0_MxKxN``, ``q4_0_MxKxN`` or ``q4_k_MxKxN``."""
MAX_WEIGHT_ELEMENTS = 1 << 28
"""The largest weight a workload may ask for."""


def _graph(encoding: str, m: int, k: int, n: int) -> Graph:
    g = Graph("main")
    x = g.input("x", (m, k))
    enc = ENCODINGS[encoding]
    w = g.input("w", (n, k // enc.block, enc.block_bytes), "int8")
    g.output(g.matmul_blockq(x, w, encoding))
    return g


def _inputs(encoding: str, m: int, k: int, n: int, rng: np.random.Generator) -> Arrays:
    weight = rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)
    if encoding == "Q4_K":
        raw = quantize_q4_k(weight).view(np.int8)
    else:
        raw = quantize(weight, ENCODINGS[encoding]).view(np.int8)
    block = ENCODINGS[encoding].block
    return [
        rng.standard_normal((m, k), dtype=np.float32),
        raw.reshape(n, k // block, -1),
    ]


_DECODED: dict[int, tuple[Any, Any]] = {}
"""``id(w)`` -> ``(w, its weight decoded)``: ``w`` kept, so the id stays its."""


def _decoded(encoding: str, w: Any) -> Any:
    """The weight whose bytes are ``w`` (a NumPy array or a torch tensor) decoded
    to float32, of ``w``'s kind: at ``w``'s first call, then kept (not timed)."""
    hit = _DECODED.get(id(w))
    if hit is not None and hit[0] is w:
        return hit[1]
    array = w if isinstance(w, np.ndarray) else w.numpy()
    n, blocks, _ = array.shape
    rows = np.ascontiguousarray(array).view(np.uint8).reshape(n, -1)
    enc = ENCODINGS[encoding]
    decoded: Any = dequantize(rows, enc, blocks * enc.block)
    if not isinstance(w, np.ndarray):
        import torch

        decoded = torch.from_numpy(decoded)
    _DECODED[id(w)] = (w, decoded)
    return decoded


def _reference(encoding: str, x: Any, w: Any) -> Arrays:
    product = x.astype(np.float64) @ _decoded(encoding, w).astype(np.float64).T
    return [product.astype(np.float32)]


def _torch(encoding: str, x: Any, w: Any) -> Any:
    import torch

    return torch.nn.functional.linear(x, _decoded(encoding, w))


def _numpy(encoding: str, x: Any, w: Any, out: Any) -> None:
    np.matmul(x, _decoded(encoding, w).T, out=out)


def blockq_example(name: str) -> Example | None:
    """The workload ``q8_0_MxKxN`` / ``q4_0_MxKxN`` / ``q4_k_MxKxN`` (or
    ``gemv_q8_0``, ``gemv_q4_0``, ``gemv_q4_k``); None for any other name."""
    fixed = {f"gemv_{enc}": f"{enc}_1x4096x4096" for enc in ("q8_0", "q4_0", "q4_k")}
    match = BLOCKQ_SHAPE.fullmatch(fixed.get(name, name))
    if match is None:
        return None
    encoding = match.group(1).upper()
    m, k, n = (int(d) for d in match.groups()[1:])
    block = ENCODINGS[encoding].block
    if min(m, k, n) < 1 or k % block or n * k > MAX_WEIGHT_ELEMENTS:
        raise ValueError(
            f"workload '{name}': M, N at least 1, K a multiple of {block} and the "
            f"weight at most {MAX_WEIGHT_ELEMENTS} elements, got {m}x{k} by {n}x{k}"
        )
    weight_bytes = n * k // block * ENCODINGS[encoding].block_bytes
    return Example(
        name,
        f"x @ W.T, {m}x{k} by a {n}x{k} weight in {encoding} blocks (decoded in "
        "registers; PyTorch and NumPy on the weight decoded to float32 ahead)",
        functools.partial(_graph, encoding, m, k, n),
        functools.partial(_inputs, encoding, m, k, n),
        functools.partial(_reference, encoding),
        functools.partial(_torch, encoding),
        numpy_fn=functools.partial(_numpy, encoding),
        bytes_per_call=weight_bytes + 4 * (m * k + m * n),
        flops_per_call=2 * m * k * n,
        tolerance=(1e-4, 1e-5 * k**0.5),
    )


BLOCKQ_EXAMPLES: tuple[Example, ...] = tuple(
    e
    for e in (blockq_example("gemv_q8_0"), blockq_example("gemv_q4_0"))
    if e is not None
)
