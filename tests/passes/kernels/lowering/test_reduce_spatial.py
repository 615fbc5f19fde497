"""Reductions that keep the last axis (``lowering/reduce.py``: the kept last axis
innermost, accumulated into the output) and their CPU default schedule
(``qidao/compiler/targets/cpu/defaults/reduce.py``): the NHWC pools over H and W,
a reduction over H alone, channel counts that fill vectors, leave a tail (24, 40)
or fill none (7), float64, at one and two threads, against NumPy in float64; the
report, LLVM's vectors, NaN, and the squeeze-and-excitation block end to end."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]

REFERENCE: dict[str, Callable[..., Array]] = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
}

CASES = [
    # kind, shape, axes, dtype, keepdims
    ("mean", (1, 8, 8, 32), (1, 2), "float32", True),  # the SE pool
    ("sum", (2, 5, 6, 48), (1, 2), "float32", False),
    ("max", (1, 7, 7, 40), (1, 2), "float32", False),  # no block: a tail of 8
    ("mean", (2, 6, 5, 32), (1,), "float32", False),  # H alone: keeps W and C
    ("mean", (1, 9, 9, 24), (1, 2), "float32", True),  # C = 24
    ("sum", (1, 9, 9, 7), (1, 2), "float32", False),  # C = 7: as lowered
    ("mean", (1, 6, 6, 24), (1, 2), "float64", False),  # 3 x 8 lanes of double
    ("max", (2, 5, 5, 7), (1, 2), "float64", True),
    ("sum", (3, 5, 4, 20), (0, 2), "float32", False),  # kept 1 outside, 3 inside
    ("sum", (300, 40), (0,), "float32", False),  # columns of a matrix
    ("mean", (1, 64, 32, 32), (1, 2), "float32", False),  # 2^16: two threads pay
    ("sum", (4, 32, 32, 16), (1, 2), "float32", False),  # 2^16, parallel batch
]


def _case_id(case: tuple[Any, ...]) -> str:
    kind, shape, axes, dtype, keepdims = case
    dims = "x".join(map(str, shape))
    keep = "-keepdims" if keepdims else ""
    return f"{kind}-{dims}-axes{''.join(map(str, axes))}-{dtype}{keep}"


def _graph(
    kind: str, shape: tuple[int, ...], axes: tuple[int, ...], dtype: str, keepdims: bool
) -> Graph:
    g = Graph("main")
    x = g.input("x", shape, dtype)
    reduce = {"sum": g.reduce_sum, "mean": g.reduce_mean, "max": g.reduce_max}[kind]
    g.output(reduce(x, list(axes), keepdims))
    return g


def _compile(
    kind: str,
    shape: tuple[int, ...],
    axes: tuple[int, ...],
    dtype: str = "float32",
    keepdims: bool = False,
    **options: Any,
) -> qidao.Compiled:
    compiled = qidao.compile(_graph(kind, shape, axes, dtype, keepdims), **options)
    assert isinstance(compiled, qidao.Compiled)
    return compiled


def _input(shape: tuple[int, ...], dtype: str) -> Array:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_numpy(case: tuple[Any, ...], threads: int) -> None:
    kind, shape, axes, dtype, keepdims = case
    compiled = _compile(kind, shape, axes, dtype, keepdims, threads=threads)
    x = _input(shape, dtype)
    (got,) = compiled(x)
    want = REFERENCE[kind](x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    # a float32 sum of n terms is off by about n ulp of the sum of magnitudes
    magnitude = float(np.abs(x.astype(np.float64)).sum(axis=axes).max())
    atol = magnitude * (1e-6 if dtype == "float32" else 1e-14)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=atol)
    (report,) = compiled.stats["default_schedule"].values()
    if shape[-1] >= (16 if dtype == "float32" else 8):
        assert report.startswith("reduce: "), report
    else:
        assert "fewer than" in report and "lanes" in report, report


def test_se_pool_report_and_vectors() -> None:
    compiled = _compile("mean", (1, 16, 16, 96), (1, 2), keepdims=True, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report == (
        "reduce: i1 in blocks of 96 (6 x <16 x float> accumulators) around the "
        "reduction"
    )
    assert "<16 x float>" in compiled.ir("llvm-opt")


def test_the_lowered_nest_alone_is_vectorized_by_llvm() -> None:
    """Without a schedule the channel loop is innermost and unit-stride: LLVM's own
    loop vectorizer widens it."""
    compiled = _compile("mean", (1, 16, 16, 96), (1, 2), threads=1, schedule=None)
    assert "<16 x float>" in compiled.ir("llvm-opt")


def test_blocks_of_channels_around_the_reduction() -> None:
    """672 channels: blocks of 224 (14 vectors), the block loop outermost."""
    shape = (1, 4, 4, 672)
    compiled = _compile("mean", shape, (1, 2), keepdims=True, threads=1)
    x = _input(shape, "float32")
    want = x.astype(np.float64).mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-5, atol=1e-6)
    (report,) = compiled.stats["default_schedule"].values()
    assert "i1 in blocks of 224 (14 x <16 x float> accumulators)" in report, report
    trace = compiled.stats["schedule"]
    assert 's.reorder("main_k0_reduce_mean", "i1_o", "r0", "r1", "i1_i")' in trace
    assert 's.vectorize("main_k0_reduce_mean", "i1_i", 16)' in trace


def test_two_threads_split_the_channels_when_no_kept_loop_can() -> None:
    compiled = _compile("mean", (1, 64, 32, 32), (1, 2), threads=2)
    (report,) = compiled.stats["default_schedule"].values()
    assert report == (
        "reduce: i1 in blocks of 16 (1 x <16 x float> accumulators) around the "
        "reduction; loop i1_o (2 iterations) on 2 threads"
    )


def test_two_threads_take_the_batch() -> None:
    compiled = _compile("sum", (4, 32, 32, 16), (1, 2), threads=2)
    (report,) = compiled.stats["default_schedule"].values()
    assert report.endswith("loop i0 (4 iterations) on 2 threads"), report


def test_the_schedule_keeps_the_summation_order() -> None:
    """Each channel is still summed one addend at a time in the order of the
    reduction loops: the blocked vectors give the lowered nest's bits."""
    shape = (1, 8, 8, 240)
    x = _input(shape, "float32") * 1e3
    (scheduled,) = _compile("sum", shape, (1, 2), threads=1)(x)
    (lowered,) = _compile("sum", shape, (1, 2), threads=1, schedule=None)(x)
    np.testing.assert_array_equal(scheduled, lowered)


def test_nan_propagates_through_the_max() -> None:
    shape = (1, 8, 8, 32)
    x = _input(shape, "float32")
    x[0, 3, 5, 7] = np.nan
    (got,) = _compile("max", shape, (1, 2), threads=1)(x)
    assert np.isnan(got[0, 7])
    np.testing.assert_array_equal(np.delete(got[0], 7), np.delete(x.max((1, 2))[0], 7))


def test_a_reduction_over_the_last_axis_is_still_a_row_kernel() -> None:
    compiled = _compile("sum", (64, 48), (1,), threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report.startswith("rows: vectorized r0"), report
    assert "iter_args" in compiled.ir("affine")


def _conv(x: Array, w: Array, pad: int) -> Array:
    """NCHW convolution, stride 1."""
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    out: Array = np.einsum("nchwij,ocij->nohw", windows, w)
    return out


def test_squeeze_and_excitation_block() -> None:
    """conv -> relu -> mean over H, W -> 1x1 conv -> relu -> 1x1 conv -> sigmoid,
    scaling the conv's output: the layout pass makes it NHWC, and the mean is a
    reduce kernel over axes 1 and 2 between two conv kernels."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 8, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((8, 32, 1, 1)).astype(np.float32) * 0.3
    w3 = rng.standard_normal((32, 8, 1, 1)).astype(np.float32) * 0.3
    g = Graph("main")
    x = g.input("x", (1, 8, 10, 10))
    y = g.relu(g.conv2d(x, g.constant(w1), padding=1))
    s = g.reduce_mean(y, [2, 3], keepdims=True)
    s = g.sigmoid(g.conv2d(g.relu(g.conv2d(s, g.constant(w2))), g.constant(w3)))
    g.output(y * s)
    compiled = qidao.compile(g, threads=1)
    assert isinstance(compiled, qidao.Compiled)
    assert "tg.reduce_mean %" in compiled.ir("tg")
    assert "axes = [1, 2] keepdims : tensor<1x10x10x32xf32>" in compiled.ir("tg")
    reports = compiled.stats["default_schedule"]
    (pool,) = [r for k, r in reports.items() if k.endswith("_reduce_mean")]
    assert pool.startswith("reduce: i1 in blocks of 32"), pool

    xs = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    y_np = np.maximum(_conv(xs.astype(np.float64), w1, 1), 0)
    s_np = y_np.mean(axis=(2, 3), keepdims=True)
    s_np = 1 / (1 + np.exp(-_conv(np.maximum(_conv(s_np, w2, 0), 0), w3, 0)))
    (got,) = compiled(xs)
    np.testing.assert_allclose(got, y_np * s_np, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ (the emulator) is not on PATH"
)
def test_gpu_default_schedule_puts_the_nest_on_the_grid() -> None:
    """On the GPU target (emulated) every nest of the kernel is bound to the grid,
    a thread per output element, and the results match NumPy."""
    shape = (2, 5, 6, 40)
    compiled = qidao.compile(
        _graph("mean", shape, (1, 2), "float32", True), target="cuda", device="emulate"
    )
    assert compiled.stats["serial_launches"] == []
    (report,) = compiled.stats["default_schedule"].values()
    assert "'i0': i0 -> threadIdx.y, i1 -> threadIdx.x" in report, report
    assert "the reduction in a register" in report, report
    x = _input(shape, "float32")
    want = x.astype(np.float64).mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-5, atol=1e-6)
