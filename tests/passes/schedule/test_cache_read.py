"""The ``cache_read`` schedule primitive: matmul with B's panel packed (split,
reorder, cache_read) against NumPy, with and without split tails, with the copy
vectorized and unrolled, under ``parallel``, and at a size where the packed loop
runs thousands of times (the pack's alloca must not grow the stack); its trace
replays; its errors leave the module as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import (
    DuplicateLoopNameError,
    IllegalScheduleError,
    LoopNotFoundError,
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


def pack_panel(s: Schedule) -> None:
    """j_o outermost, w's K x 32 panel packed once per j_o."""
    s.split(K, "i", 8)
    s.split(K, "j", 32)
    s.reorder(K, "j_o", "i_o", "k", "i_i", "j_i")
    s.cache_read(K, "j_o", "w")


def check(
    m: int, k: int, n: int, schedule: Any = pack_panel, threads: int = 1
) -> qidao.Compiled:
    compiled = qidao.compile(matmul(m, k, n), schedule=schedule, threads=threads)
    x, w = rand(m, k), rand(k, n)
    (got,) = compiled(x, w)
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    return compiled


def test_matmul_packed_panel_matches_numpy() -> None:
    compiled = check(64, 48, 96)
    scheduled = compiled.ir("schedule")
    assert "%w_pack = memref.alloca() : memref<48x32xf32>" in scheduled
    assert "affine.load %w_pack[%k, %j_i] : memref<48x32xf32>" in scheduled
    for name in ("j_o_cr_i0", "j_o_cr_i1"):
        assert f'qd.loop = "{name}"' in scheduled
    # the only load of %w left is the copy's
    assert scheduled.count("affine.load %w[") == 1
    assert compiled.stats["schedule"].endswith(f's.cache_read("{K}", "j_o", "w")\n')


def test_pack_x_at_i_o() -> None:
    """The rows of x a tile of 8 rows reads: an 8 x K block, at i_o."""

    def schedule(s: Schedule) -> None:
        s.split(K, "i", 8)
        s.reorder(K, "i_o", "i_i", "k", "j")
        s.cache_read(K, "i_o", "x")

    scheduled = check(40, 24, 16, schedule).ir("schedule")
    assert "%x_pack = memref.alloca() : memref<8x24xf32>" in scheduled


def test_split_tails_are_clipped() -> None:
    """50 = 32 + 18: the last panel is partial; 60 = 7 * 8 + 4 for i."""
    scheduled = check(60, 40, 50).ir("schedule")
    assert "affine.for %j_o_cr_i1 = 0 to min" in scheduled
    assert "affine.for %j_o_cr_i0 = 0 to 40 {" in scheduled


def test_trace_replays_as_python_and_pipeline(tmp_path: Path) -> None:
    s = Schedule.for_model(matmul(16, 8, 64))
    pack_panel(s)
    assert (
        s.trace[-1].pass_spec() == f'cache-read{{kernel="{K}" loop="j_o" buffer="w"}}'
    )
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


def register_tile_packed(s: Schedule) -> None:
    """The register tile (cache_write at i_o) on the packed panel, everything
    vectorized and unrolled, j_o on worker threads."""
    pack_panel(s)
    s.cache_write(K, "i_o")
    s.parallel(K, "j_o")
    s.vectorize(K, "j_i", 16)
    s.unroll(K, "j_i", 0)
    s.unroll(K, "i_i", 0)
    for copy in ("cw", "wb"):
        s.vectorize(K, f"i_o_{copy}_i1", 16)
        s.unroll(K, f"i_o_{copy}_i1", 0)
        s.unroll(K, f"i_o_{copy}_i0", 0)
    s.vectorize(K, "j_o_cr_i1", 16)
    s.unroll(K, "j_o_cr_i1", 0)


def test_vectorize_and_unroll_the_copy() -> None:
    s = Schedule.for_model(matmul(64, 48, 96))
    register_tile_packed(s)
    text = str(s.module)
    assert s.loops(K) == ["i_init", "j_init", "j_o", "j_o_cr_i0", "i_o", "k"]
    # the copy: two vector loads of w and two vector stores into the pack per row
    lines = text.splitlines()
    assert text.count("vector.load %w[") == 2
    assert sum("vector.store" in line and "%w_pack[" in line for line in lines) == 2
    # the tile reads one row of the pack (two vectors) per k, once per unrolled
    # row of the tile (LLVM's GVN merges the repeats: the pack is not written there)
    assert text.count("vector.load %w_pack[") == 8 * 2


@pytest.mark.parametrize("threads", [1, 2])
def test_vectorized_packed_tile_compiles(threads: int) -> None:
    compiled = check(64, 48, 96, register_tile_packed, threads)
    assert "<16 x float>" in compiled.ir("llvm-opt")


def test_large_panel_in_a_long_loop() -> None:
    """1024 x 1024: the 1024 x 32 panel (128 KiB) is packed 32 times and the 8 x 32
    accumulator allocated 4096 times; were the allocas not hoisted to the entry
    block, the stack would grow by 8 MiB and overflow. On two threads each worker
    has its own buffers in the outlined function's frame."""
    for threads in (1, 2):
        compiled = check(1024, 1024, 1024, register_tile_packed, threads)
    llvm = compiled.ir("llvm")  # LLVM IR text, before LLVM's passes
    body = llvm[llvm.index('define void @"main_k0_matmul_j_o_par_body"(') :]
    entry = body[: body.index("br label")]
    # the pack and the accumulator, in the entry block of each thread's function
    assert "alloca float, i64 32768, align 64" in entry
    assert "alloca float, i64 256, align 64" in entry
    assert body.count("alloca") == 2


def test_errors_leave_the_module_unchanged() -> None:
    s = Schedule.for_model(matmul(1024, 512, 1024))
    s.split(K, "j", 32)
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match="no memref named %b is used"):
        s.cache_read(K, "j_o", "b")
    with pytest.raises(IllegalScheduleError, match="its body writes %out"):
        s.cache_read(K, "j_o", "out")
    with pytest.raises(IllegalScheduleError, match="512x1024 = 524288 elements"):
        s.cache_read(K, "i", "w")
    with pytest.raises(LoopNotFoundError, match="'nope' in kernel 'main_k0_matmul'"):
        s.cache_read(K, "nope", "w")
    assert str(s.module) == before
    assert len(s.trace) == 1


def test_pack_both_operands_with_tails() -> None:
    """B's panel at j_o and A's 8 x K block at i_o (one cache_read per loop: the
    copy loops' names would clash); 60 x 40 @ 40 x 50 leaves tails in i and j."""

    def schedule(s: Schedule) -> None:
        pack_panel(s)
        with pytest.raises(DuplicateLoopNameError, match="'j_o_cr_i0' is already"):
            s.cache_read(K, "j_o", "x")
        s.cache_read(K, "i_o", "x")

    scheduled = check(60, 40, 50, schedule).ir("schedule")
    assert "%x_pack = memref.alloca() : memref<8x40xf32>" in scheduled
    assert "affine.for %i_o_cr_i0 = 0 to min" in scheduled
