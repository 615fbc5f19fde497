"""``tile`` through ``qidao.compile``: tiled transposes and products against NumPy,
and a refused tile leaves the kernel and the trace as they were."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

import qidao
from qidao.compiler.context import make_context
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.frontend.builder import Graph

RNG = np.random.default_rng(7)


def transpose(rows: int, cols: int) -> Graph:
    g = Graph("main")
    x = g.input("x", (rows, cols))
    g.output(g.contiguous(g.transpose(x, (1, 0))))
    return g


@pytest.mark.parametrize(("rows", "cols", "f", "g"), [(64, 32, 16, 8), (37, 53, 8, 5)])
def test_tiled_transpose_matches_numpy(rows: int, cols: int, f: int, g: int) -> None:
    def schedule(s: Schedule) -> None:
        names = s.tile("main_k0_contiguous", "i0", "i1", f, g)
        assert names == ("i0_o", "i1_o", "i0_i", "i1_i")

    compiled = qidao.compile(transpose(rows, cols), schedule=schedule)
    assert s_loops(compiled.ir("schedule")) == ["i0_o", "i1_o", "i0_i", "i1_i"]
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    np.testing.assert_array_equal(compiled(x)[0], x.T)


def test_tiled_matmul_band_matches_numpy() -> None:
    g = Graph("main")
    a, b = g.input("a", (24, 20)), g.input("b", (20, 30))
    g.output(a @ b)

    def schedule(s: Schedule) -> None:
        s.reorder("main_k0_matmul", "i", "j", "k")
        s.tile("main_k0_matmul", "i", "j", 8, 16)

    compiled = qidao.compile(g, schedule=schedule)
    x, y = (
        RNG.standard_normal((24, 20), np.float32),
        RNG.standard_normal((20, 30), np.float32),
    )
    np.testing.assert_allclose(compiled(x, y)[0], x @ y, rtol=1e-5, atol=1e-5)


SHIFT = """
func.func private @shift(%y: memref<5x5xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 1 to 5 {
      %v = affine.load %y[%i + 1, %j - 1] : memref<5x5xf32>
      affine.store %v, %y[%i, %j] : memref<5x5xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}
"""


def test_a_refused_tile_changes_nothing() -> None:
    """Both splits succeed, the reorder is refused: all of it is undone."""
    s = Schedule(Parser(make_context(), SHIFT).parse_module())
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match=r"^tile: loop"):
        s.tile("shift", "i", "j", 2, 2)
    assert str(s.module) == before and s.trace == []
    assert s.loops("shift") == ["i", "j"]


def s_loops(ir: str) -> list[str]:
    return [line.split('"')[1] for line in ir.splitlines() if "qd.loop" in line][::-1]
