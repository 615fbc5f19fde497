"""The ``cache_write`` schedule primitive: the matmul register tile (split, reorder,
cache_write) against NumPy, with and without split tails; its trace replays; its
errors leave the module as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import IllegalScheduleError, LoopNotFoundError, Schedule
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


def register_tile(s: Schedule) -> None:
    """Split i by 8 and j by 32, tiles outside k, out's 8x32 tile in an alloca."""
    s.split(K, "i", 8)
    s.split(K, "j", 32)
    s.reorder(K, "i_o", "j_o", "k", "i_i", "j_i")
    s.cache_write(K, "j_o")


def check(m: int, k: int, n: int) -> qidao.Compiled:
    compiled = qidao.compile(matmul(m, k, n), schedule=register_tile)
    x, w = rand(m, k), rand(k, n)
    (got,) = compiled(x, w)
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)
    return compiled


def test_matmul_register_tile_matches_numpy() -> None:
    compiled = check(64, 48, 96)
    scheduled = compiled.ir("schedule")
    assert "%acc = memref.alloca() : memref<8x32xf32>" in scheduled
    assert "affine.store %6, %acc[%i_i, %j_i] : memref<8x32xf32>" in scheduled
    for name in ("j_o_cw_i0", "j_o_cw_i1", "j_o_wb_i0", "j_o_wb_i1"):
        assert f'qd.loop = "{name}"' in scheduled
    # the init loop before j_o still writes %out; x and w are read as before
    assert "affine.store %0, %out[%i_init, %j_init]" in scheduled
    assert "affine.load %w[%k, %j_o * 32 + %j_i]" in scheduled
    assert compiled.stats["schedule"].endswith(f's.cache_write("{K}", "j_o")\n')


def test_split_tails_are_clipped() -> None:
    """60 = 7 * 8 + 4 and 50 = 32 + 18: the last tiles are partial."""
    scheduled = check(60, 40, 50).ir("schedule")
    assert "affine.for %j_o_cw_i1 = 0 to min" in scheduled
    assert "affine.for %j_o_wb_i0 = 0 to min" in scheduled


def test_trace_replays_as_python_and_pipeline(tmp_path: Path) -> None:
    s = Schedule.for_model(matmul(16, 8, 64))
    register_tile(s)
    assert s.trace[-1].pass_spec() == f'cache-write{{kernel="{K}" loop="j_o"}}'
    fresh = Schedule.for_model(matmul(16, 8, 64))
    exec(s.python(), {"s": fresh})
    assert str(fresh.module) == str(s.module)
    for trace in (s.python(), s.pipeline()):
        replayed = Schedule.replay(Schedule.for_model(matmul(16, 8, 64)).module, trace)
        assert str(replayed.module) == str(s.module)
        assert replayed.trace == s.trace
    source = tmp_path / "matmul.mlir"
    source.write_text(str(Schedule.for_model(matmul(16, 8, 64)).module))
    opt = shutil.which("qidao-opt") or str(Path(sys.executable).parent / "qidao-opt")
    proc = subprocess.run(
        [opt, str(source), "-p", s.pipeline()],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == str(s.module).strip()


def test_vectorize_and_unroll_the_tile() -> None:
    """The schedule of the register tile: vectors on the accumulator, unrolled."""
    s = Schedule.for_model(matmul(64, 48, 96))
    register_tile(s)
    s.vectorize(K, "j_i", 16)
    s.unroll(K, "j_i", 0)
    s.unroll(K, "i_i", 0)
    for copy in ("cw", "wb"):
        s.vectorize(K, f"j_o_{copy}_i1", 16)
        s.unroll(K, f"j_o_{copy}_i1", 0)
        s.unroll(K, f"j_o_{copy}_i0", 0)
    text = str(s.module)
    assert s.loops(K) == ["i_init", "j_init", "i_o", "j_o", "k"]
    # 8 rows x 2 vectors of 16: sixteen accumulators loaded and stored per k
    assert text.count("vector.load %acc") == 16 + 16
    assert text.count("vector.store") == 16 + 16 + 16


def test_vectorized_tile_compiles() -> None:
    def schedule(s: Schedule) -> None:
        register_tile(s)
        s.vectorize(K, "j_i", 16)

    compiled = qidao.compile(matmul(64, 48, 96), schedule=schedule)
    assert "<16 x float>" in compiled.ir("llvm-opt")
    x, w = rand(64, 48), rand(48, 96)
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)


def test_errors_leave_the_module_unchanged() -> None:
    s = Schedule.for_model(matmul(128, 16, 128))
    s.split(K, "i", 64)
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match="64x128 = 8192 elements"):
        s.cache_write(K, "i_o")
    with pytest.raises(LoopNotFoundError, match="'nope' in kernel 'main_k0_matmul'"):
        s.cache_write(K, "nope")
    assert str(s.module) == before
    assert len(s.trace) == 1


@pytest.mark.parametrize("size", [(64, 48, 96), (60, 40, 50)])
def test_no_copy_in_after_the_init_moves_into_the_tile(
    size: tuple[int, int, int],
) -> None:
    """compute_at puts the init nest at the start of j_o's body: it overwrites the
    whole (clipped) tile, so the copy-in is left out; the write-back stays."""

    def schedule(s: Schedule) -> None:
        s.split(K, "i", 8)
        s.split(K, "j", 32)
        s.reorder(K, "i_o", "j_o", "k", "i_i", "j_i")
        s.compute_at(K, "i_init", "j_o")
        s.cache_write(K, "j_o")

    m, k, n = size
    compiled = qidao.compile(matmul(m, k, n), schedule=schedule)
    scheduled = compiled.ir("schedule")
    assert "j_o_cw_i" not in scheduled
    assert 'qd.loop = "j_o_wb_i1"' in scheduled
    assert "affine.store %0, %acc[%i_init, %j_init]" in scheduled
    x, w = rand(m, k), rand(k, n)
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)
