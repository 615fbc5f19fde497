"""The ``peel`` schedule primitive: split tiles whose last one is peeled, unrolled in
both parts, against NumPy; its trace replays; a refused peel leaves the module and
the trace as they were."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import (
    IllegalScheduleError,
    LoopNotFoundError,
    NonConstantBoundsError,
    Schedule,
)
from qidao.frontend.builder import Graph

K = "main_k0_matmul"


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def matmul(m: int, k: int, n: int) -> Graph:
    g = Graph("main")
    x = g.input("x", (m, k))
    w = g.input("w", (k, n))
    g.output(x @ w)
    return g


def peeled_tile(s: Schedule) -> None:
    """An 8 x 32 register tile of C whose last, shorter row tile is peeled: every
    tile loop then has constant bounds and unrolls, in both parts."""
    s.split(K, "i", 8)
    s.split(K, "j", 32)
    s.reorder(K, "j_o", "i_o", "k", "i_i", "j_i")
    assert s.peel(K, "i_o") == "i_o_t"
    for tile in ("i_o", "i_o_t"):
        s.cache_write(K, tile)
    for loop in ("j_i", "j_i_t"):
        s.vectorize(K, loop, 16)
        s.unroll(K, loop, 0)
    for loop in ("i_i", "i_i_t"):
        s.unroll(K, loop, 0)


@pytest.mark.parametrize(("m", "k", "n"), [(13, 24, 64), (197, 16, 32), (9, 8, 96)])
def test_peeled_register_tile_matches_numpy(m: int, k: int, n: int) -> None:
    compiled = qidao.compile(matmul(m, k, n), schedule=peeled_tile)
    scheduled = compiled.ir("schedule")
    assert f"affine.for %i_o = 0 to {m // 8} {{" in scheduled
    assert f"affine.for %i_o_t = {m // 8} to {m // 8 + 1} {{" in scheduled
    assert "%acc = memref.alloca() : memref<8x32xf32>" in scheduled
    assert f"%acc_1 = memref.alloca() : memref<{m % 8}x32xf32>" in scheduled
    assert " min " not in scheduled  # every tile loop unrolled or constant
    x, w = rand(m, k), rand(k, n)
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)


def test_peel_of_a_reduction_carries_its_value() -> None:
    """k split by 8 (20 = 8 + 8 + 4) and peeled: the copy continues the sums."""

    def schedule(s: Schedule) -> None:
        s.reorder(K, "i", "j", "k")
        s.split(K, "k", 8)
        s.peel(K, "k_o")
        s.unroll(K, "k_i", 0)
        s.unroll(K, "k_i_t", 0)
        assert s.loops(K) == ["i_init", "j_init", "i", "j", "k_o", "k_o_t"]

    compiled = qidao.compile(matmul(6, 20, 10), schedule=schedule)
    x, w = rand(6, 20), rand(20, 10)
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)


def test_trace_replays_as_python_and_pipeline() -> None:
    s = Schedule.for_model(matmul(13, 8, 32))
    peeled_tile(s)
    assert s.trace[3].python() == f's.peel("{K}", "i_o", "_t")'
    assert s.trace[3].pass_spec() == f'peel{{kernel="{K}" loop="i_o" suffix="_t"}}'
    for trace in (s.python(), s.pipeline()):
        replayed = Schedule.replay(Schedule.for_model(matmul(13, 8, 32)).module, trace)
        assert str(replayed.module) == str(s.module)
        assert replayed.trace == s.trace


@pytest.mark.parametrize(
    ("setup", "loop", "error", "reason"),
    [
        ([], "nope", LoopNotFoundError, "no such loop"),
        ([("i", 8)], "i_i", NonConstantBoundsError, "bounds are not constants"),
        ([("i", 4)], "i_o", IllegalScheduleError, "nothing to peel"),
        ([("i", 16)], "i_o", IllegalScheduleError, "runs 1 iteration(s)"),
    ],
)
def test_refused_peel_leaves_module_and_trace(
    setup: list[tuple[str, int]],
    loop: str,
    error: type[Exception],
    reason: str,
) -> None:
    s = Schedule.for_model(matmul(12, 8, 32))
    for name, factor in setup:
        s.split(K, name, factor)
    before, trace = str(s.module), list(s.trace)
    with pytest.raises(error, match=f"peel: loop '{loop}' in kernel '{K}'") as err:
        s.peel(K, loop)
    assert reason in str(err.value)
    assert str(s.module) == before
    assert s.trace == trace
