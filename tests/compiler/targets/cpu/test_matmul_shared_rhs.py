"""The default matmul schedule where a batch of matmuls shares one rhs (a strided
1x1 convolution's rows through im2col: ``[1, OH, OW, K]`` rows that no view makes
one ``[OH * OW, K]`` matrix, times one ``[K, N]`` weight): B's panels go outside
the batch loops, so each panel is read once for all the rows, not once per
matmul; and a fused epilogue's columns go on vectors. Against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

SHARED = "B's panels outside the batch"


def rand(*shape: int, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed + sum(shape))
    return rng.standard_normal(shape).astype(np.float32)


def strided_rows(
    h: int, k: int, n: int
) -> tuple[Graph, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``relu(x[:, ::2, ::2, :] @ W + b)`` for an NHWC ``x`` (a 1x1, stride-2
    convolution as the matmul of its strided rows): graph, input, NumPy's answer."""
    g = Graph("main")
    x, a = g.input("x", (1, h, h, k)), rand(1, h, h, k)
    w, b = rand(k, n, seed=1), rand(n, seed=2)
    rows = g.slice(x, [0, 0, 0, 0], None, [1, 2, 2, 1])
    g.output(g.relu(rows @ g.constant(w) + g.constant(b)))
    return g, a, np.maximum(a[:, ::2, ::2, :] @ w + b, 0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("h", "k", "n"), [(14, 64, 96), (13, 96, 80)])
def test_strided_rows_read_each_panel_once(
    h: int, k: int, n: int, threads: int
) -> None:
    g, a, want = strided_rows(h, k, n)
    compiled = qidao.compile(g, threads=threads)
    reports = compiled.stats["default_schedule"]
    kernel, report = next(
        (name, r) for name, r in reports.items() if r.startswith("matmul")
    )
    assert SHARED in report, report
    assert (
        f's.reorder("{kernel}", "j_o", "b0", "b1", "i_o",' in compiled.stats["schedule"]
    )
    assert (f"j_o on {threads} threads" in report) == (threads > 1), report
    np.testing.assert_allclose(compiled(a)[0], want, rtol=1e-4, atol=1e-4)


def test_a_batch_of_rhs_keeps_the_batch_outermost() -> None:
    """Must not fire: each matmul of the batch has its own B (attention's heads),
    so no panel is shared."""
    g = Graph("main")
    q, kt = rand(4, 16, 32), rand(4, 32, 64, seed=1)
    g.output(g.input("q", q.shape) @ g.input("k", kt.shape))
    compiled = qidao.compile(g, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report.startswith("matmul: ") and SHARED not in report, report
    np.testing.assert_allclose(compiled(q, kt)[0], q @ kt, rtol=1e-4, atol=1e-4)


def test_epilogue_columns_on_vectors() -> None:
    """The bias and ReLU of each tile on <16 x float> (left to LLVM, they went on
    gathers and scatters)."""
    g = Graph("main")
    x, a = g.input("x", (49, 256)), rand(49, 256)
    w, b = rand(256, 64, seed=1), rand(64, seed=2)
    g.output(g.relu(x @ g.constant(w) + g.constant(b)))
    compiled = qidao.compile(g, threads=1)
    (kernel,) = compiled.stats["default_schedule"]
    trace = compiled.stats["schedule"]
    assert f's.vectorize("{kernel}", "j_epi", 16)' in trace
    assert f's.vectorize("{kernel}", "j_epi_t", 16)' in trace  # 49 = 6 x 8 + 1
    assert "gather" not in compiled.ir("llvm-opt")
    np.testing.assert_allclose(
        compiled(a)[0], np.maximum(a @ w + b, 0), rtol=1e-4, atol=1e-4
    )


def test_epilogue_with_scalar_only_math_stays_scalar() -> None:
    """Must not fire: a sigmoid's exp, which ``expand-math`` writes out on scalars
    only, stays in a scalar loop for LLVM to vectorize."""
    g = Graph("main")
    x, a = g.input("x", (16, 64)), rand(16, 64)
    w = rand(64, 64, seed=1)
    g.output(g.sigmoid(x @ g.constant(w)))
    compiled = qidao.compile(g, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert report.startswith("matmul: "), report
    assert '"j_epi"' not in compiled.stats["schedule"]
    np.testing.assert_allclose(
        compiled(a)[0], 1 / (1 + np.exp(-(a @ w))), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(
    ("m", "k", "n", "prefetched"),
    [
        (49, 1024, 512, True),  # 7 row tiles, a 2 MiB weight: memory-bound
        (16, 512, 768, True),  # 2 row tiles, 1.5 MiB
        (196, 1024, 512, False),  # 25 row tiles read each panel: compute-bound
        (49, 256, 256, False),  # 256 KiB stays in L2
        (49, 1024, 32, False),  # one panel: no next one
        (1, 1024, 1024, False),  # one row a tile: too little work to overlap
    ],
)
def test_next_panel_prefetched_where_memory_bounds(
    m: int, k: int, n: int, prefetched: bool
) -> None:
    """A constant weight of 1 MiB or more read by at most 8 row tiles: each
    panel's first row tile waits on memory, so the next panel is prefetched
    while the row tiles run (``prefetch``); the result is NumPy's either way."""
    g = Graph("main")
    x, a = g.input("x", (m, k)), rand(m, k)
    w, b = rand(k, n, seed=1), rand(n, seed=2)
    g.output(g.relu(x @ g.constant(w) + g.constant(b)))
    compiled = qidao.compile(g, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert ("the next panel prefetched" in report) == prefetched, report
    trace = compiled.stats["schedule"]
    assert ('"k", "panels", "j_o", 2)' in trace) == prefetched, trace
    if prefetched:
        assert "llvm.prefetch" in compiled.ir("llvm")
    np.testing.assert_allclose(
        compiled(a)[0], np.maximum(a @ w + b, 0), rtol=1e-4, atol=1e-4
    )


def test_prefetch_with_strided_rows_and_two_threads() -> None:
    """The shared-B batch (panels outside the batch loops) prefetches across the
    batch too, and on two threads each thread's panels prefetch their next."""
    g, a, want = strided_rows(14, 512, 1024)
    for threads in (1, 2):
        compiled = qidao.compile(g, threads=threads)
        report = next(
            r for r in compiled.stats["default_schedule"].values() if "matmul" in r
        )
        assert SHARED in report and "the next panel prefetched" in report, report
        np.testing.assert_allclose(compiled(a)[0], want, rtol=1e-4, atol=1e-4)
