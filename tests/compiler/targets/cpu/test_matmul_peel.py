"""The default matmul schedule when 8 does not divide the row count M (over 12):
8-row register tiles and a peeled tail tile of M mod 8 rows (``peel``); up to 12
rows, one tile of M rows; against NumPy,
with and without a fused epilogue, batched, on one and two threads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph


def rand(*shape: int, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed + sum(shape))
    return rng.standard_normal(shape).astype(np.float32)


def gemm(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], epilogue: bool
) -> tuple[Graph, list[np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """``x @ w`` (``relu(x @ w + b)`` with ``epilogue``), its inputs and NumPy's
    answer."""
    g = Graph("main")
    x, w = g.input("x", x_shape), g.input("w", w_shape)
    args = [rand(*x_shape), rand(*w_shape, seed=1)]
    want = args[0] @ args[1]
    if epilogue:
        n = w_shape[-1]
        g.output(g.relu(x @ w + g.input("b", (n,))))
        args.append(rand(n, seed=2))
        want = np.maximum(want + args[2], 0)
    else:
        g.output(x @ w)
    return g, args, want


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "epilogue", "tail"),
    [
        ((197, 64), (64, 96), True, 5),  # ViT: 24 tiles of 8 rows and one of 5
        ((197, 48), (48, 64), False, 5),
        ((9, 64), (64, 96), True, 0),  # up to 12 rows: one tile of M rows
        ((12, 64), (64, 96), False, 0),
        ((13, 40), (40, 64), False, 5),
        ((1, 256), (256, 128), True, 0),  # one row: a 1-row tile, nothing to peel
        ((8, 64), (64, 96), False, 0),
        ((16, 64), (64, 96), True, 0),
        ((2, 197, 64), (64, 96), True, 2),  # one 394-row matmul: 394 = 49 * 8 + 2
        ((2, 197, 64), (2, 64, 96), False, 5),
    ],
)
def test_matmul_default_with_peeled_tail_matches_numpy(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    epilogue: bool,
    tail: int,
    threads: int,
) -> None:
    g, args, want = gemm(x_shape, w_shape, epilogue)
    compiled = qidao.compile(g, threads=threads)
    (kernel, report), *_ = compiled.stats["default_schedule"].items()
    assert report.startswith("matmul: "), report
    trace = compiled.stats["schedule"]
    m = x_shape[-2] * (x_shape[0] if len(x_shape) == 3 and len(w_shape) == 2 else 1)
    rows = m if m <= 12 else 8
    assert f'"i", {rows})' in trace
    if tail:
        assert f"the last {tail} rows in a peeled {tail}x32 tile (i_o_t)" in report
        assert f's.peel("{kernel}", "i_o", "_t")' in trace
        assert f's.cache_write("{kernel}", "i_o_t")' in trace
        for loop in ("j_i_t", "i_i_t"):
            assert f's.unroll("{kernel}", "{loop}", 0)' in trace
    else:
        assert "peel" not in report and "peel" not in trace
    np.testing.assert_allclose(compiled(*args)[0], want, rtol=1e-4, atol=1e-4)


def test_peeled_schedule_leaves_no_min_bound_in_the_tile() -> None:
    """Peeled before ``cache_write``: the tail's accumulator is M mod 8 rows and
    every loop of both tiles has constant bounds (no ``min``)."""
    g, args, want = gemm((197, 64), (64, 96), epilogue=True)
    compiled = qidao.compile(g, threads=1)
    scheduled = compiled.ir("schedule")
    assert "affine.for %i_o = 0 to 24 {" in scheduled
    assert "affine.for %i_o_t = 24 to 25 {" in scheduled
    assert "memref.alloca() : memref<8x32xf32>" in scheduled
    assert "memref.alloca() : memref<5x32xf32>" in scheduled
    assert " min " not in scheduled
    np.testing.assert_allclose(compiled(*args)[0], want, rtol=1e-4, atol=1e-4)
