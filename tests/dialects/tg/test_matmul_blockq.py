"""``tg.matmul_blockq``: a float32 matrix times a weight kept in GGUF blocks.

The reference (and the NumPy evaluator) and the compiled kernel against ``x @
W.T`` with ``W`` decoded by the ``gguf`` package's own dequantizer (independent
of qidao's), for Q8_0 and Q4_0, batched, on one and two threads; a weight read
from a GGUF file passed as it lies in the memory map; the builder's errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.dialects.tg.numpy_eval import evaluate
from qidao.frontend.builder import Graph, GraphError

gguf = pytest.importorskip("gguf", reason="the gguf package is the reference")

RNG = np.random.default_rng(11)
Array = np.ndarray[Any, Any]


def quantized(n: int, k: int, encoding: str) -> tuple[Array, Array]:
    """A random ``[n, k]`` weight quantized by gguf (``Q4_K``, which gguf does
    not quantize: by qidao's writer): its bytes ``[n, k/block, B]`` ``int8`` and
    their decoding (gguf's) in float64."""
    qtype = gguf.GGMLQuantizationType[encoding]
    weight = RNG.standard_normal((n, k)).astype(np.float32)
    if encoding == "Q4_K":
        from qidao.frontend.gguf_q4k import quantize_q4_k

        raw = quantize_q4_k(weight)
    else:
        raw = gguf.quants.quantize(weight, qtype)
    decoded = gguf.quants.dequantize(raw, qtype).astype(np.float64)
    block = 256 if encoding == "Q4_K" else 32
    return raw.view(np.int8).reshape(n, k // block, -1), decoded


def program(x_shape: tuple[int, ...], w: Array, encoding: str) -> Graph:
    g = Graph("main")
    x = g.input("x", x_shape)
    weight = g.input("w", w.shape, "int8")
    g.output(g.matmul_blockq(x, weight, encoding))
    return g


def close(got: Array, want: Array) -> None:
    """Float32 sums in another order: within float32 rounding of the sizes."""
    scale = np.abs(want).max() + 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale)


@pytest.mark.parametrize("encoding", ["Q8_0", "Q4_0"])
@pytest.mark.parametrize(
    ("x_shape", "n", "threads"),
    [
        ((1, 256), 64, 1),
        ((3, 64), 16, 1),
        ((2, 1, 96), 8, 1),
        ((2, 256), 256, 2),
        ((16, 128), 24, 1),
        ((3, 12, 64), 128, 2),
    ],
)
def test_the_kernel_is_x_times_the_decoded_weight(
    encoding: str, x_shape: tuple[int, ...], n: int, threads: int
) -> None:
    w, decoded = quantized(n, x_shape[-1], encoding)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    want = x.astype(np.float64) @ decoded.T
    compiled = qidao.compile(program(x_shape, w, encoding), threads=threads)
    (got,) = compiled(x, w)
    assert got.shape == (*x_shape[:-1], n) and got.dtype == np.float32
    close(got, want)
    schedule = next(iter(compiled.stats["default_schedule"].values()))
    if threads > 1:  # n on two threads: each has its own row of lanes
        assert "loop n" in schedule, schedule
    if x_shape[-2] % 2 == 0:  # rows in tiles: each block's products on vectors
        assert "e_mul on 16-wide vectors" in schedule, schedule
    graph = program(x_shape, w, encoding).module()
    (op,) = [o for o in graph.walk() if o.name == "tg.matmul_blockq"]
    (evaluated,) = evaluate(op, [x, w])
    close(evaluated, want)


@pytest.mark.parametrize(
    ("x_shape", "n", "threads"),
    [((1, 512), 48, 1), ((8, 256), 40, 1), ((3, 256), 64, 2)],
)
def test_a_q4_k_weight_is_decoded_in_the_kernel(
    x_shape: tuple[int, ...], n: int, threads: int
) -> None:
    """Super-blocks of 256: a 6-bit scale and min per 32, against gguf's
    decoding (one row at a time, rows in tiles, and on two threads)."""
    w, decoded = quantized(n, x_shape[-1], "Q4_K")
    assert w.shape == (n, x_shape[-1] // 256, 144)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    compiled = qidao.compile(program(x_shape, w, "Q4_K"), threads=threads)
    (got,) = compiled(x, w)
    close(got, x.astype(np.float64) @ decoded.T)


def test_a_weight_read_from_a_gguf_file_is_used_where_it_lies(tmp_path: Path) -> None:
    from qidao.frontend.gguf_file import read_gguf

    qtype = gguf.GGMLQuantizationType.Q8_0
    weight = RNG.standard_normal((48, 128)).astype(np.float32)
    writer = gguf.GGUFWriter(tmp_path / "w.gguf", "llama")
    writer.add_tensor("w", gguf.quants.quantize(weight, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    t = read_gguf(tmp_path / "w.gguf").tensor("w")
    w = t.raw.view(np.int8).reshape(48, 4, 34)  # a view of the memory map
    x = RNG.standard_normal((2, 128)).astype(np.float32)
    (got,) = qidao.compile(program((2, 128), w, "Q8_0"))(x, w)
    close(got, x.astype(np.float64) @ t.dequantize().astype(np.float64).T)
    # against the float weight: Q8_0's error, half a step (a block's largest
    # magnitude over 127, float16-rounded) a weight, summed over |x|
    steps = np.abs(weight).reshape(48, 4, 32).max(axis=-1) / 127
    half_step = np.repeat(steps, 32, axis=-1) * 0.51
    assert np.all(np.abs(got - x @ weight.T) <= np.abs(x) @ half_step.T + 1e-5)


def test_the_builder_names_what_does_not_fit() -> None:
    g = Graph("main")
    x = g.input("x", (1, 48))
    w = g.input("w", (4, 1, 34), "int8")
    with pytest.raises(GraphError, match=r"matmul_blockq\(\[1, 48\], \[4, 1, 34\]\)"):
        g.matmul_blockq(x, w, "Q8_0")
    x32 = g.input("y", (1, 32))
    with pytest.raises(
        GraphError, match=r'encoding must be one of Q8_0, Q4_0, Q4_K, got "Q6_K"'
    ):
        g.matmul_blockq(x32, w, "Q6_K")
    with pytest.raises(GraphError, match=r"a Q4_0 weight is \[N, K/32, 18\] bytes"):
        g.matmul_blockq(x32, w, "Q4_0")


def test_a_small_product_stays_on_one_thread() -> None:
    """16 rows of W by 256: 4,096 multiply-adds, under the work that pays for
    waking a second thread (the blocks are counted once, not per block)."""
    w, decoded = quantized(16, 256, "Q8_0")
    compiled = qidao.compile(program((1, 256), w, "Q8_0"), threads=2)
    (schedule,) = compiled.stats["default_schedule"].values()
    assert schedule.startswith("none: 4096 elements"), schedule
    x = RNG.standard_normal((1, 256)).astype(np.float32)
    close(compiled(x, w)[0], x.astype(np.float64) @ decoded.T)
