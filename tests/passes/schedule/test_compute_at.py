"""The ``compute_at`` schedule primitive: the fused relu(x @ w + b) register tile
(split, reorder, compute_at of the init and epilogue nests, cache_write without a
copy-in, vectorize, unroll) against NumPy, with and without split tails; the NHWC
conv init and epilogue moved back into ``ow``; its trace replays; its errors leave the
module as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import affine

import qidao
from qidao.compiler.context import make_context, make_pass
from qidao.compiler.schedule import IllegalScheduleError, LoopNotFoundError, Schedule
from qidao.frontend.builder import Graph
from qidao.passes.schedule.loops.nest import loop_name

K = "main_k0_fused"


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def fused(m: int, k: int, n: int) -> Graph:
    """relu(x @ w + b): one kernel of three nests (init, matmul, epilogue)."""
    g = Graph("main")
    x = g.input("x", (m, k))
    w = g.input("w", (k, n))
    b = g.input("b", (n,))
    g.output(g.relu(x @ w + b))
    return g


def reference(x: Any, w: Any, b: Any) -> Any:
    return np.maximum(x.astype(np.float64) @ w.astype(np.float64) + b, 0.0)


def tile(s: Schedule) -> None:
    """The 8 x 32 register tile of out, with the init and the epilogue inside it."""
    s.split(K, "i", 8)
    s.split(K, "j", 32)
    s.reorder(K, "i_o", "j_o", "k", "i_i", "j_i")
    s.compute_at(K, "i_init", "j_o")
    s.compute_at(K, "i_epi", "j_o")
    s.cache_write(K, "j_o")


def register_tile(s: Schedule) -> None:
    """``tile``, then vectors of 16 on every innermost j loop, all unrolled."""
    tile(s)
    for loop in ("j_i", "j_init", "j_epi", "j_o_wb_i1"):
        s.vectorize(K, loop, 16)
        s.unroll(K, loop, 0)
    for loop in ("i_i", "i_init", "i_epi", "j_o_wb_i0"):
        s.unroll(K, loop, 0)


def run(m: int, k: int, n: int, schedule: Any) -> qidao.Compiled:
    compiled = qidao.compile(fused(m, k, n), schedule=schedule)
    x, w, b = rand(m, k), rand(k, n), rand(n)
    (got,) = compiled(x, w, b)
    np.testing.assert_allclose(got, reference(x, w, b), rtol=1e-4, atol=1e-4)
    return compiled


def test_init_and_epilogue_move_into_the_tile() -> None:
    def schedule(s: Schedule) -> None:
        s.split(K, "i", 8)
        s.split(K, "j", 32)
        s.reorder(K, "i_o", "j_o", "k", "i_i", "j_i")
        s.compute_at(K, "i_init", "j_o")
        s.compute_at(K, "i_epi", "j_o")

    compiled = run(16, 8, 64, schedule)
    scheduled = compiled.ir("schedule")
    assert "affine.store %0, %out[%i_o * 8 + %i_init, %j_o * 32 + %j_init]" in scheduled
    assert "affine.load %b[%j_o * 32 + %j_epi]" in scheduled
    s = Schedule(compiled.module("schedule"))
    assert s.loops(K) == [
        *["i_o", "j_o", "i_init", "j_init", "k", "i_i", "j_i", "i_epi", "j_epi"]
    ]


def test_register_tile_has_no_copy_in() -> None:
    """After compute_at of the init, cache_write leaves out the copy-in."""
    compiled = run(64, 48, 96, tile)
    scheduled = compiled.ir("schedule")
    assert "%acc = memref.alloca() : memref<8x32xf32>" in scheduled
    assert "j_o_cw_i" not in scheduled
    assert "affine.store %0, %acc[%i_init, %j_init]" in scheduled
    assert 'qd.loop = "j_o_wb_i1"' in scheduled


@pytest.mark.parametrize("size", [(64, 48, 96), (512, 512, 512)])
def test_vectorized_register_tile_matches_numpy(size: tuple[int, int, int]) -> None:
    compiled = run(*size, register_tile)
    assert "<16 x float>" in compiled.ir("llvm-opt")


@pytest.mark.parametrize("size", [(100, 70, 90), (20, 7, 40), (1, 3, 1), (8, 5, 33)])
def test_split_tails_are_clipped(size: tuple[int, int, int]) -> None:
    """100 = 12 * 8 + 4, 90 = 2 * 32 + 26: the last tiles of the moved nests are
    partial."""
    scheduled = run(*size, tile).ir("schedule")
    if size[0] > 8 and size[0] % 8:
        assert "affine.for %i_init = 0 to min" in scheduled
        assert "affine.for %i_epi = 0 to min" in scheduled


def test_epilogue_at_the_row_loop() -> None:
    """At i_o, the tile is 8 rows of every column."""

    def schedule(s: Schedule) -> None:
        s.split(K, "i", 8)
        s.split(K, "j", 32)
        s.reorder(K, "i_o", "j_o", "k", "i_i", "j_i")
        s.compute_at(K, "i_epi", "i_o")

    scheduled = run(20, 6, 70, schedule).ir("schedule")
    assert "affine.for %j_epi = 0 to 70" in scheduled


def test_nhwc_conv_init_and_epilogue_back_into_ow() -> None:
    torch = pytest.importorskip("torch")
    g = Graph("main")
    x = g.input("x", (1, 8, 6, 6))
    weight, bias = rand(16, 8, 3, 3), rand(16)
    g.output(g.relu(g.conv2d(x, weight, padding=1) + bias.reshape(16, 1, 1)))
    module = g.module()
    make_pass("layout").apply(make_context(), module)
    s = Schedule.for_model(module)
    (kernel,) = [k for k, ops in s.kernels().items() if "tg.conv2d" in ops]
    loops = s.loops(kernel)
    assert loops[:4] == ["n_init", "oh_init", "ow_init", "f_init"]
    assert loops[-4:] == ["n_epi", "oh_epi", "ow_epi", "f_epi"]

    def schedule(s: Schedule) -> None:
        s.compute_at(kernel, "n_init", "ow")
        s.compute_at(kernel, "n_epi", "ow")

    compiled = qidao.compile(module, schedule=schedule)
    moved = {
        loop_name(op): op
        for op in compiled.module("schedule").walk()
        if isinstance(op, affine.ForOp) and loop_name(op) in ("n_init", "n_epi")
    }
    for op in moved.values():  # the start and the end of ow's body, one pixel
        ow = op.parent_op()
        assert ow is not None and loop_name(ow) == "ow"
    assert str(moved["n_init"]).startswith("affine.for %n_init = 0 to 1 {")
    xv = rand(1, 8, 6, 6)
    want = torch.relu(
        torch.nn.functional.conv2d(
            torch.from_numpy(xv), torch.from_numpy(weight), padding=1
        )
        + torch.from_numpy(bias).reshape(16, 1, 1)
    ).numpy()
    np.testing.assert_allclose(compiled(xv)[0], want, rtol=1e-4, atol=1e-4)


def test_trace_replays_as_python_and_pipeline(tmp_path: Path) -> None:
    s = Schedule.for_model(fused(16, 8, 64))
    tile(s)
    assert s.trace[3].pass_spec() == (
        f'compute-at{{kernel="{K}" nest="i_init" loop="j_o"}}'
    )
    assert f's.compute_at("{K}", "i_epi", "j_o")\n' in s.python()
    for trace in (s.python(), s.pipeline()):
        replayed = Schedule.replay(Schedule.for_model(fused(16, 8, 64)).module, trace)
        assert str(replayed.module) == str(s.module)
        assert replayed.trace == s.trace
    source = tmp_path / "fused.mlir"
    source.write_text(str(Schedule.for_model(fused(16, 8, 64)).module))
    opt = shutil.which("qidao-opt") or str(Path(sys.executable).parent / "qidao-opt")
    proc = subprocess.run(
        [opt, str(source), "-p", s.pipeline()],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == str(s.module).strip()


def split_and_reorder() -> Schedule:
    s = Schedule.for_model(fused(16, 8, 64))
    s.split(K, "i", 8)
    s.split(K, "j", 32)
    s.reorder(K, "i_o", "j_o", "k", "i_i", "j_i")
    return s


@pytest.mark.parametrize(
    ("nest", "loop", "error", "reason"),
    [
        ("i_init", "nope", LoopNotFoundError, "no such loop"),
        ("i_init", "k", IllegalScheduleError, "tiles repeat across the iterations"),
        ("j_init", "j_o", IllegalScheduleError, "not the outermost loop of a top"),
        ("i_epi", "j_i", IllegalScheduleError, "moves with two loops"),
        ("i_init", "i_init", IllegalScheduleError, "inside the nest 'i_init'"),
    ],
)
def test_errors_leave_the_module_unchanged(
    nest: str, loop: str, error: type[Exception], reason: str
) -> None:
    s = split_and_reorder()
    before = str(s.module)
    with pytest.raises(error, match=reason) as info:
        s.compute_at(K, nest, loop)
    assert f"kernel '{K}'" in str(info.value)
    assert str(s.module) == before
    assert len(s.trace) == 3


def test_unsplit_nest_is_not_tiled_twice() -> None:
    """compute_at into a nest where out is also used outside the loop's body."""
    s = split_and_reorder()
    s.compute_at(K, "i_epi", "j_o")
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match="also used outside its body"):
        s.compute_at(K, "i_init", "k")
    assert str(s.module) == before
