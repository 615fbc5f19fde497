"""The default schedule of row kernels (``qidao/compiler/targets/cpu/defaults/rows.py``):
softmax, log-softmax, layer norm and reductions over the last axis, with rows of 1024
(a multiple of 64), 1000 (vector tails), 7 (shorter than a vector) and a 3-D input,
at one and two threads, against NumPy in float64; and what the report says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.examples import get_example
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]

SHAPES = [(80, 1024), (80, 1000), (80, 7), (4, 20, 1000)]
"""Over 2^13 elements, so that two threads pay, except 80x7, which stays serial."""


def _layer_norm(g: Graph, x: Value, affine: bool) -> Value:
    centered = x - g.reduce_mean(x, -1, keepdims=True)
    variance = g.reduce_mean(centered * centered, -1, keepdims=True)
    y = centered / g.sqrt(variance + 1e-5)
    if not affine:
        return y
    row = x.shape[-1]
    weight = np.linspace(0.5, 1.5, row, dtype=np.float32)
    bias = np.linspace(-0.1, 0.1, row, dtype=np.float32)
    return y * g.constant(weight) + g.constant(bias)


def _layer_norm_ref(x: Array, affine: bool) -> Array:
    centered = x - x.mean(-1, keepdims=True)
    y = centered / np.sqrt((centered * centered).mean(-1, keepdims=True) + 1e-5)
    if not affine:
        return np.asarray(y)
    row = x.shape[-1]
    weight = np.linspace(0.5, 1.5, row, dtype=np.float32).astype(np.float64)
    bias = np.linspace(-0.1, 0.1, row, dtype=np.float32).astype(np.float64)
    return np.asarray(y * weight + bias)


def _softmax_ref(x: Array) -> Array:
    e = np.exp(x - x.max(-1, keepdims=True))
    return np.asarray(e / e.sum(-1, keepdims=True))


def _log_softmax(g: Graph, x: Value) -> Value:
    shifted = x - g.reduce_max(x, -1, keepdims=True)
    return shifted - g.log(g.reduce_sum(g.exp(shifted), -1, keepdims=True))


def _log_softmax_ref(x: Array) -> Array:
    shifted = x - x.max(-1, keepdims=True)
    return np.asarray(shifted - np.log(np.exp(shifted).sum(-1, keepdims=True)))


CASES: dict[str, tuple[Callable[[Graph, Value], Value], Callable[[Array], Array]]] = {
    "softmax": (lambda g, x: g.softmax(x, -1), _softmax_ref),
    "softmax_from_ops": (
        lambda g, x: (
            (e := g.exp(x - g.reduce_max(x, -1, keepdims=True)))
            / g.reduce_sum(e, -1, keepdims=True)
        ),
        _softmax_ref,
    ),
    "log_softmax": (_log_softmax, _log_softmax_ref),
    "layer_norm": (
        lambda g, x: _layer_norm(g, x, True),
        lambda x: _layer_norm_ref(x, True),
    ),
    "layer_norm_plain": (
        lambda g, x: _layer_norm(g, x, False),
        lambda x: _layer_norm_ref(x, False),
    ),
    "reduce_sum": (lambda g, x: g.reduce_sum(x, -1), lambda x: x.sum(-1)),
    "reduce_mean": (
        lambda g, x: g.reduce_mean(x, -1, keepdims=True),
        lambda x: x.mean(-1, keepdims=True),
    ),
    "reduce_max": (lambda g, x: g.reduce_max(x, -1), lambda x: x.max(-1)),
}


def _compile(
    case: str, shape: tuple[int, ...], threads: int
) -> tuple[qidao.Compiled, Array, Array]:
    build, reference = CASES[case]
    g = Graph("main")
    g.output(build(g, g.input("x", shape)))
    compiled = qidao.compile(g, threads=threads)
    assert isinstance(compiled, qidao.Compiled)
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    return compiled, x, reference(x.astype(np.float64))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case", list(CASES))
def test_rows_default_matches_numpy(
    case: str, shape: tuple[int, ...], threads: int
) -> None:
    compiled, x, want = _compile(case, shape, threads)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    report = " | ".join(compiled.stats["default_schedule"].values())
    if shape[-1] >= 16:
        assert "rows: " in report and "vectorized r" in report, report
    else:
        assert "fewer than 16 lanes" in report, report
    if threads == 2 and shape[-1] >= 16:
        assert "on 2 threads" in report, report


def test_layernorm_bench_kernel_is_vectorized_at_one_thread() -> None:
    compiled = qidao.compile(get_example("layernorm").build(), threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report == (
        "rows: vectorized r_mean (4 x <16 x float> accumulators), r_mean2 "
        "(4 x <16 x float> accumulators), r_out (<16 x float>); one thread: no "
        "loop runs in parallel"
    )
    scheduled = compiled.ir("schedule")
    assert "vector<64xf32>" in scheduled and "vector<16xf32>" in scheduled


def test_vectorized_reductions_stay_rolled_down_to_llvm() -> None:
    """Each vectorized reduction is ``unroll``ed by 1, and its back edge reaches
    LLVM with ``llvm.loop.unroll.disable``: after -O3 both reduction loops of the
    layer norm are still loops (LLVM would unroll them fully, and spill)."""
    compiled = qidao.compile(get_example("layernorm").build(), threads=1)
    (kernel,) = compiled.stats["default_schedule"]
    for loop in ("r_mean", "r_mean2"):
        assert f's.unroll("{kernel}", "{loop}", 1)' in compiled.stats["schedule"]
    assert compiled.ir("llvm").count(", !llvm.loop !") == 2
    optimized = compiled.ir("llvm-opt")
    assert '!"llvm.loop.unroll.disable"' in optimized
    assert optimized.count(", !llvm.loop !") >= 2


def test_softmax_leaves_the_exp_pass_to_llvm_and_says_why() -> None:
    compiled, x, want = _compile("softmax", (80, 1000), threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert "vectorized r_max (4 x <16 x float> accumulators), r_norm" in report
    assert "left as lowered: r_sum holds math.exp" in report, report
    # 1000 = 15 * 64 + 2 * 16 + 8: the max's 64-lane loop, its 16-lane tail, 8 scalar
    assert "r_max_tail_tail" in compiled.ir("schedule")
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-5, atol=1e-6)


def test_softmax_over_a_strided_axis_stays_scalar_and_says_why() -> None:
    g = Graph("main")
    g.output(g.softmax(g.input("x", (300, 40)), axis=0))
    compiled = qidao.compile(g, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report.startswith("none: left as lowered: r_max: a load from"), report
    assert "is not unit-stride in the loop" in report, report
    x = np.random.default_rng(0).standard_normal((300, 40)).astype(np.float32)
    e = np.exp(x - x.max(0, keepdims=True))
    np.testing.assert_allclose(
        compiled(x)[0], e / e.sum(0, keepdims=True), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(("heads", "loop"), [(3, "i2 (96 iterations)"), (4, "i1 (4")])
def test_few_heads_split_their_rows_instead(heads: int, loop: str) -> None:
    """A softmax over ``[1, heads, 96, 256]``: 3 heads on 2 threads leave one
    thread a third of the work idle, so the rows inside each head are split (three
    parallel regions); 4 heads split evenly, in one region."""
    shape = (1, heads, 96, 256)
    compiled, x, want = _compile("softmax", shape, 2)
    (report,) = compiled.stats["default_schedule"].values()
    assert f"loop {loop}" in report, report
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-5, atol=1e-6)


def test_a_single_row_is_vectorized_and_not_parallel() -> None:
    g = Graph("main")
    g.output(g.reduce_sum(g.input("x", (100_000,)), 0))
    compiled = qidao.compile(g, threads=2)
    (report,) = compiled.stats["default_schedule"].values()
    assert report == (
        "rows: vectorized r0 (4 x <16 x float> accumulators); one row: no row loop "
        "to run in parallel"
    )
    x = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
    np.testing.assert_allclose(compiled(x)[0], x.astype(np.float64).sum(), rtol=1e-5)


def test_float64_rows_take_eight_lanes() -> None:
    g = Graph("main")
    g.output(g.reduce_max(g.input("x", (8, 100), "float64"), -1))
    compiled = qidao.compile(g, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report.startswith("rows: vectorized r0 (4 x <8 x double> accumulators)")
    x = np.random.default_rng(0).standard_normal((8, 100))
    np.testing.assert_array_equal(compiled(x)[0], x.max(-1))


@pytest.mark.parametrize("axis", [1, 0])
def test_softmax_special_rows_match_torch(axis: int) -> None:
    """The row max is ``maxnumf`` over the last axis (it only shifts the row) and
    ``maximumf`` over another; either way a row holding NaN, +inf, or only -inf
    comes out as PyTorch's (NaN where it has NaN). 197 columns: the max on vectors
    and a scalar tail, ``llvm.maxnum`` of two types in one module."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((6, 197)).astype(np.float32)
    x[1, 50] = np.nan
    x[2, 196] = np.nan  # in the scalar tail
    x[3, 7] = np.inf
    x[4, :] = -np.inf
    x[5, :4] = [-0.0, 0.0, 0.0, -0.0]
    x = x if axis == 1 else np.ascontiguousarray(x.T)
    g = Graph("main")
    g.output(g.softmax(g.input("x", x.shape), axis=axis))
    compiled = qidao.compile(g, threads=1)
    want = torch.softmax(torch.from_numpy(x), axis).numpy()
    assert np.isnan(want).any(axis=axis).sum() == 4  # rows 1-4 are all NaN
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-5, atol=1e-7)
