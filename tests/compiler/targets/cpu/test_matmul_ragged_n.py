"""The default matmul schedule when 16 does not divide the column count N: 32-column
panels and a peeled last panel of N mod 32 columns (``j_o_p``), also when M is
ragged too (attention's ``q @ k^T``, B a transposed view), and the GEMV loops for
one row (a classifier head at batch 1); against NumPy on one and two threads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu.defaults import matmul
from qidao.frontend.builder import Graph

KERNEL = "main_k0_matmul"


def rand(*shape: int, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed + sum(shape))
    return rng.standard_normal(shape).astype(np.float32)


def gemm(
    m: int, k: int, n: int, rhs: str
) -> tuple[Graph, list[np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """``x @ B`` with B an input (``"input"``), the transpose of an ``n x k`` input
    (``"transposed"``) or a constant plus a fused bias and relu (``"constant"``);
    its inputs and NumPy's answer."""
    g = Graph("main")
    x, a = g.input("x", (m, k)), rand(m, k)
    if rhs == "transposed":
        bt = rand(n, k, seed=1)
        g.output(x @ g.transpose(g.input("w", (n, k))))
        return g, [a, bt], a @ bt.T
    b = rand(k, n, seed=1)
    if rhs == "constant":
        bias = rand(n, seed=2)
        g.output(g.relu(x @ g.constant(b) + g.input("b", (n,))))
        return g, [a, bias], np.maximum(a @ b + bias, 0)
    g.output(x @ g.input("w", (k, n)))
    return g, [a, b], a @ b


@pytest.mark.parametrize(
    ("m", "k", "n", "rhs", "threads", "tile"),
    [
        # q @ k^T: 4 tiles of 8 rows and one of 5; 2 panels of 32 columns, one of 13
        # (one thread: test_both_ragged_peels_every_tile)
        (37, 48, 77, "transposed", 2, "the last 13 columns in a peeled panel (j_o_p)"),
        # a classifier head: fewer than 256 rows, so B is not packed; 3 panels and
        # 4 columns
        (8, 96, 100, "constant", 1, "the last 4 columns in a peeled panel (j_o_p)"),
        (1, 320, 150, "constant", 1, "one row (GEMV): j on vectors, k unrolled by 4"),
        (1, 320, 150, "input", 2, "one row (GEMV): j on vectors, k unrolled by 4"),
        # a classifier head at batch 1 on two threads: B's columns in two halves
        (1, 320, 1000, "constant", 2, "j in 2 parts of 500 columns on 2 threads"),
        (1, 96, 1000, "input", 2, "one row (GEMV): j on vectors, k unrolled by 4"),
    ],
)
def test_ragged_n_matches_numpy(
    m: int,
    k: int,
    n: int,
    rhs: str,
    threads: int,
    tile: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # small shapes, but the parallel loop of a big one (the last panel outside it)
    monkeypatch.setattr(matmul, "PARALLEL_MIN_FLOPS", 0)
    g, args, want = gemm(m, k, n, rhs)
    compiled = qidao.compile(g, threads=threads)
    ((kernel, report),) = compiled.stats["default_schedule"].items()
    assert report.startswith("matmul: ") and tile in report, report
    assert "not a multiple of the vector width" not in report
    if m > 1:
        assert f's.peel("{kernel}", "j_o", "_p")' in compiled.stats["schedule"]
        packed = rhs == "transposed" or m >= matmul.PACK_MIN_ROWS
        assert ("packed" in report) == packed, report
        assert (f"j_o on {threads} threads" in report) == (threads > 1), report
    else:  # GEMV: split when B has 2^16 elements or more and the threads divide N
        split = threads > 1 and k * n >= matmul.GEMV_PARALLEL_MIN_ELEMENTS
        assert ("parts" in report) == split, report
    assert " min " not in compiled.ir("schedule")
    np.testing.assert_allclose(compiled(*args)[0], want, rtol=1e-4, atol=1e-4)


def test_both_ragged_peels_every_tile() -> None:
    """M and N both ragged: four kinds of tile, each with constant bounds and its
    own accumulator: 8 x 32, 5 x 32 (i_o_t), 8 x 13 and 5 x 13 (in j_o_p)."""
    g, args, want = gemm(37, 48, 77, "transposed")
    compiled = qidao.compile(g, threads=1)
    report = compiled.stats["default_schedule"][KERNEL]
    assert report == (
        "matmul: in1 packed in 48x32 panels, 8x32 register tile of C, "
        "the last 5 rows in a peeled 5x32 tile (i_o_t), "
        "the last 13 columns in a peeled panel (j_o_p)"
    )
    trace = compiled.stats["schedule"]
    for peel in ('"j_o", "_p"', '"i_o_p", "_t"', '"i_o", "_t"'):
        assert f's.peel("{KERNEL}", {peel})' in trace
    assert "_t_o" not in trace  # no loop renamed to make room for a peel
    scheduled = compiled.ir("schedule")
    assert "affine.for %j_o_p = 2 to 3 {" in scheduled
    for rows, cols in ((8, 32), (5, 32), (8, 13), (5, 13)):
        assert f"memref.alloca() : memref<{rows}x{cols}xf32>" in scheduled
    assert " min " not in scheduled
    np.testing.assert_allclose(compiled(*args)[0], want, rtol=1e-4, atol=1e-4)
