"""Default schedules (``qidao.compiler.targets.cpu.defaults``): what ``qidao.compile(model)``
applies per kernel kind, checked against NumPy, with the reasons it gives when it
applies nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.defaults import is_lone_reduction, kind_of
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.compiler.targets.cpu import defaults
from qidao.compiler.targets.cpu.defaults.matmul import (
    ONE_TILE_ROWS,
    PACK_MIN_K,
    PACK_MIN_N,
    PACK_MIN_ROWS,
)
from qidao.dialects.tg import TG
from qidao.frontend.builder import Graph


def rand(*shape: int, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed + sum(shape))
    return rng.standard_normal(shape).astype(np.float32)


def matmul_graph(m: int, k: int, n: int, epilogue: bool = False) -> Graph:
    g = Graph("main")
    x = g.input("x", (m, k))
    w = g.input("w", (k, n))
    if epilogue:
        b = g.input("b", (n,))
        g.output(g.relu(x @ w + b))
    else:
        g.output(x @ w)
    return g


@pytest.mark.parametrize(
    ("ops", "kind"),
    [
        ("tg.matmul", "matmul"),
        ("tg.matmul+tg.add+tg.relu", "matmul"),
        ("tg.conv2d+tg.relu", "conv2d"),
        ("tg.softmax", "rows"),
        ("tg.sub+tg.reduce_mean+tg.mul", "rows"),
        ("tg.mul+tg.add+tg.relu", "elementwise"),
        ("tg.max_pool2d", "pool"),
        ("tg.avg_pool2d", "pool"),
        ("tg.constant", "other"),
    ],
)
def test_kind_of(ops: str, kind: str) -> None:
    assert kind_of(ops) == kind


OTHER = (
    "tg.cumprod",
    "tg.cumsum",
    "tg.grid_sample",
    "tg.nms_keep",
    "tg.nonzero_indices",
    "tg.scatter_elements",
    "tg.scatter_nd",
    "tg.top_k_indices",
)
"""Ops added after the name rule whose kernel kind is ``other``: a scan along an
axis, a sort, data-dependent reads or writes."""


def _kind_by_names(ops: str) -> str:
    """The rule as it was written before the ops declared their kind (names
    matched in the label), with the ops added since whose kernels are not
    elementwise (``OTHER``): the facts on the ops must give the same answers."""
    first = ops.split("+")[0]
    if first in (
        "tg.matmul",
        "tg.matmul_integer",
        "tg.matmul_bf16",
        "tg.matmul_blockq",
        "tg.conv2d",
    ):
        return first.removeprefix("tg.")
    rows = (
        "tg.softmax",
        "tg.reduce_sum",
        "tg.reduce_mean",
        "tg.reduce_max",
        "tg.reduce_prod",
    )
    if any(op in ops.split("+") for op in rows):
        return "rows"
    if first in ("tg.max_pool2d", "tg.avg_pool2d"):
        return "pool"
    return "other" if first in ("tg.constant", *OTHER) else "elementwise"


def test_the_ops_declared_kinds_give_the_named_rule() -> None:
    """Every tg op alone, after an add, and before a reduce_sum; and the labels
    of no tg op."""
    names = [op.name for op in TG.operations]
    labels = [
        *names,
        *(f"tg.add+{n}" for n in names),
        *(f"{n}+tg.reduce_sum" for n in names),
        "copy",
        "tg.fused",
    ]
    for label in labels:
        assert kind_of(label) == _kind_by_names(label), label
    lone = [n for n in names if is_lone_reduction(n)]
    assert sorted(lone) == [
        "tg.reduce_max",
        "tg.reduce_mean",
        "tg.reduce_prod",
        "tg.reduce_sum",
    ]
    assert not is_lone_reduction("tg.reduce_sum+tg.mul")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("m", "k", "n"),
    [
        (64, 64, 64),
        (96, 40, 128),
        (72, 33, 48),
        (100, 64, 96),
        (256, 24, 64),
        (24, 300, 64),  # K > PACK_MIN_K: packed
        (16, 8, 1024),  # N >= PACK_MIN_N: packed
        (8, 300, 1024),  # one row tile: B is read once, in place
    ],
)
def test_matmul_default_matches_numpy(m: int, k: int, n: int, threads: int) -> None:
    """B is packed from 256 rows on (PACK_MIN_ROWS), or with more than one row tile
    when K > PACK_MIN_K or N >= PACK_MIN_N; otherwise read in place."""
    compiled = qidao.compile(matmul_graph(m, k, n), threads=threads)
    report = compiled.stats["default_schedule"]["main_k0_matmul"]
    assert report.startswith("matmul: "), report
    packed = m >= PACK_MIN_ROWS or (
        m > ONE_TILE_ROWS and (k > PACK_MIN_K or n >= PACK_MIN_N)
    )
    assert "register tile" in report and ("w packed in" in report) == packed
    trace = compiled.stats["schedule"]
    assert 's.cache_write("main_k0_matmul", "i_o")' in trace
    pack = 's.cache_read("main_k0_matmul", "j_o", "w")'
    assert (pack in trace) == packed
    assert 's.compute_at("main_k0_matmul", "i_init", "i_o")' in trace
    x, w = rand(m, k), rand(k, n, seed=1)
    (got,) = compiled(x, w)
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)


def test_fused_gemm_epilogue_default_matches_numpy() -> None:
    compiled = qidao.compile(matmul_graph(128, 64, 96, epilogue=True), threads=1)
    (kernel,) = compiled.stats["default_schedule"]
    assert compiled.stats["default_schedule"][kernel].startswith("matmul: ")
    assert f's.compute_at("{kernel}", "i_epi", "i_o")' in compiled.stats["schedule"]
    x, w, b = rand(128, 64), rand(64, 96, seed=1), rand(96, seed=2)
    (got,) = compiled(x, w, b)
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)


def test_parallel_only_when_threads_and_work_pay() -> None:
    big = qidao.compile(matmul_graph(256, 256, 256), threads=2)
    assert 's.parallel("main_k0_matmul", "j_o")' in big.stats["schedule"]
    one = qidao.compile(matmul_graph(256, 256, 256), threads=1)
    assert "parallel" not in one.stats["schedule"]
    small = qidao.compile(matmul_graph(48, 64, 64), threads=2)  # < 2 * 64^3 flops
    assert "parallel" not in small.stats["schedule"]


def test_small_matmul_keeps_its_loops_and_says_why() -> None:
    compiled = qidao.compile(matmul_graph(4, 5, 6))
    assert compiled.stats["default_schedule"] == {
        "main_k0_matmul": "none: 4x5x6 is too small to tile"
    }
    assert compiled.stats["schedule"] == ""
    assert compiled.ir("schedule") == compiled.ir("affine")


def test_schedule_none_keeps_the_lowered_loops() -> None:
    compiled = qidao.compile(matmul_graph(64, 64, 64), schedule=None)
    assert "default_schedule" not in compiled.stats
    assert compiled.ir("schedule") == compiled.ir("affine")


def test_elementwise_and_rows_parallel_with_two_threads() -> None:
    g = Graph("main")
    x = g.input("x", (512, 256))
    g.output(g.softmax(g.relu(x * 2.0 + 1.0), axis=-1))
    compiled = qidao.compile(g, threads=2)
    report = compiled.stats["default_schedule"]
    assert any(r.startswith("rows: loop i0") for r in report.values()), report
    data = rand(512, 256)
    y = np.maximum(data * 2 + 1, 0)
    e = np.exp(y - y.max(-1, keepdims=True))
    (got,) = compiled(data)
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    single = qidao.compile(g, threads=1).stats["default_schedule"]
    assert all("one thread" in r for r in single.values()), single


def test_small_elementwise_stays_serial() -> None:
    g = Graph("main")
    x = g.input("x", (16, 16))
    g.output(g.relu(x))
    report = qidao.compile(g, threads=2).stats["default_schedule"]
    (line,) = report.values()
    assert "too little work" in line


def test_work_of_a_pad_counts_its_copy_or_its_fill_not_both() -> None:
    """An NHWC pad's channel loop is a copy ``i3`` or a fill ``i3_fill`` (the two
    branches of its bounds test): 7 x 7 x 128 elements, serial at two threads
    (counting both loops as nested made it 128 times more, and parallel)."""
    g = Graph("main")
    x = g.input("x", (1, 5, 5, 128))
    g.output(g.pad(g.relu(x), [0, 1, 1, 0], [0, 1, 1, 0]))
    compiled = qidao.compile(g, threads=2)
    pad = compiled.stats["default_schedule"]["main_k1_pad"]
    assert pad.startswith("none: 6272 elements: too little work"), pad
    data = rand(1, 5, 5, 128)
    want = np.pad(np.maximum(data, 0), [(0, 0), (1, 1), (1, 1), (0, 0)])
    np.testing.assert_array_equal(compiled(data)[0], want)


def test_a_failing_scheduler_puts_the_kernel_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def half_then_fail(s: Schedule, kernel: str, threads: int) -> str:
        s.split(kernel, "i", 8)
        raise IllegalScheduleError("split", kernel, "i", "injected")

    monkeypatch.setattr(defaults, "_schedulers", lambda amx: {"matmul": half_then_fail})
    compiled = qidao.compile(matmul_graph(64, 64, 64))
    (line,) = compiled.stats["default_schedule"].values()
    assert line.startswith("none: the matmul schedule failed") and "injected" in line
    assert compiled.stats["schedule"] == ""
    assert compiled.ir("schedule") == compiled.ir("affine")
    x, w = rand(64, 64), rand(64, 64, seed=1)
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)


def test_eager_mode_gets_default_schedules_too() -> None:
    compiled = qidao.compile(matmul_graph(64, 64, 64, epilogue=True), mode="eager")
    report = compiled.stats["default_schedule"]
    assert report["main_k0_matmul"].startswith("matmul: "), report


def test_batched_and_constant_weight_matmuls_match_numpy() -> None:
    g = Graph("main")
    x = g.input("x", (3, 40, 64))
    w = g.input("w", (3, 64, 48))
    g.output(x @ w)
    compiled = qidao.compile(g)
    assert compiled.stats["default_schedule"]["main_k0_matmul"].startswith("matmul:")
    a, b = rand(3, 40, 64), rand(3, 64, 48, seed=1)
    np.testing.assert_allclose(compiled(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)

    # a weight given at run time, read by PACK_MIN_ROWS rows: packed per call
    weight = rand(64, 96, seed=2)
    g = Graph("main")
    x = g.input("x", (PACK_MIN_ROWS, 64))
    g.output(g.relu(x @ g.input("w", (64, 96))))
    compiled = qidao.compile(g)
    (line,) = compiled.stats["default_schedule"].values()
    assert line.startswith("matmul:") and "packed" in line, line
    a = rand(PACK_MIN_ROWS, 64)
    want = np.maximum(a @ weight, 0)
    np.testing.assert_allclose(compiled(a, weight)[0], want, rtol=1e-4, atol=1e-4)
    # a constant one: packed once, at compile time (pack-panels), no copy per call
    g = Graph("main")
    x = g.input("x", (PACK_MIN_ROWS, 64))
    g.output(g.relu(x @ g.constant(weight)))
    compiled = qidao.compile(g)
    assert 'rhs_layout = "panels"' in compiled.ir("tg")
    assert "cache_read" not in compiled.stats["schedule"]
    np.testing.assert_allclose(compiled(a)[0], want, rtol=1e-4, atol=1e-4)


def test_transposed_rhs_is_packed_by_a_scalar_copy() -> None:
    """Attention's q @ k^T: B is a transposed view, so its pack copies columns
    into rows (not vectorized) and the tile reads the pack contiguously."""
    g = Graph("main")
    q = g.input("q", (4, 64, 32))
    k = g.input("k", (4, 64, 32))
    g.output(q @ g.transpose(k, (0, 2, 1)))
    compiled = qidao.compile(g, threads=1)
    (line,) = compiled.stats["default_schedule"].values()
    assert line.startswith("matmul:") and "packed" in line, line
    assert '"j_o_cr_i2", 16' not in compiled.stats["schedule"]
    a, b = rand(4, 64, 32), rand(4, 64, 32, seed=1)
    want = a @ b.transpose(0, 2, 1)
    np.testing.assert_allclose(compiled(a, b)[0], want, rtol=1e-4, atol=1e-4)


def _conv_pool(channels: int, pool: str, size: int = 16) -> Graph:
    """conv -> relu -> pool: the layout pass makes the chain NHWC."""
    rng = np.random.default_rng(1)
    g = Graph("main")
    x = g.input("x", (1, 4, size, size))
    w = g.constant(rng.standard_normal((channels, 4, 3, 3)).astype(np.float32))
    y = g.relu(g.conv2d(x, w, padding=1))
    if pool == "max":
        g.output(g.max_pool2d(y, 3, strides=2, padding=1))
    else:
        g.output(g.avg_pool2d(y, 3, strides=2, padding=1, count_include_pad=False))
    return g


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("channels", [32, 20])  # 20: a vector and a scalar tail
@pytest.mark.parametrize("pool", ["max", "avg"])
def test_nhwc_pool_default_vectorizes_channels(
    pool: str, channels: int, threads: int
) -> None:
    x = np.random.default_rng(2).standard_normal((1, 4, 16, 16)).astype(np.float32)
    scheduled = qidao.compile(_conv_pool(channels, pool), threads=threads)
    raw = qidao.compile(_conv_pool(channels, pool), threads=threads, schedule=None)
    np.testing.assert_allclose(scheduled(x)[0], raw(x)[0], rtol=1e-6, atol=1e-6)
    report = scheduled.stats["default_schedule"]
    (pool_kernel,) = [k for k in report if "pool" in k]
    assert report[pool_kernel].startswith("pool: channel loops c_init, c")
    assert "vectorize" in scheduled.stats["schedule"]


def test_pool_with_few_channels_keeps_its_loops_and_says_why() -> None:
    scheduled = qidao.compile(_conv_pool(8, "max"), threads=1)
    report = scheduled.stats["default_schedule"]
    (pool_kernel,) = [k for k in report if "pool" in k]
    assert "8 channels: fewer than one vector of 16" in report[pool_kernel]


@pytest.mark.parametrize(
    ("heads", "parallel"),
    [
        (4, "b0 (4 matmuls) on 2 threads"),  # even: one fork, whole matmuls
        (3, "j_o on 2 threads"),  # 3 over 2 threads: the panels of each
        (8, "b0 (8 matmuls) on 2 threads"),
        ((1, 8), "b1 (8 matmuls) on 2 threads"),  # Swin's last stage: 1 window
        ((4, 4), "b0 (4 of 4 matmuls) on 2 threads"),  # 4 windows x 4 heads
    ],
)
def test_batched_matmul_goes_parallel_by_whole_matmuls(
    heads: int | tuple[int, int], parallel: str
) -> None:
    """Attention's ``q @ k^T`` per head: at two threads the outermost batch loop
    of more than one iteration is parallel when it shares out evenly, else each
    matmul's column panels."""
    batch = heads if isinstance(heads, tuple) else (heads,)
    g = Graph("main")
    q, k = g.input("q", (*batch, 128, 128)), g.input("k", (*batch, 128, 128))
    g.output(q @ k)
    compiled = qidao.compile(g, threads=2)
    report = compiled.stats["default_schedule"]["main_k0_matmul"]
    assert parallel in report, report
    a, b = rand(*batch, 128, 128), rand(*batch, 128, 128, seed=1)
    np.testing.assert_allclose(compiled(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)
