"""The elementwise default's cache blocking of transposed reads
(``qidao/compiler/targets/cpu/defaults/transpose.py``): which kernels it tiles,
which it leaves, and that the tiled kernels compute what NumPy does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu.defaults.transpose import (
    BLOCK_COLUMNS,
    BLOCK_ROWS,
    TILE,
)
from qidao.frontend.builder import Graph

TILES = f"in {TILE}x{TILE} tiles"
BLOCKS = f"in {BLOCK_ROWS}x{BLOCK_COLUMNS} blocks, unrolled"


def _rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def _copy(shape: Sequence[int], perm: Sequence[int]) -> Graph:
    g = Graph("main")
    g.output(g.contiguous(g.transpose(g.input("x", tuple(shape)), tuple(perm))))
    return g


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("shape", "perm", "tiled"),
    [
        ((1, 1, 200, 96), (0, 3, 1, 2), f"i1 x i3 {TILES}"),  # wav2vec2, 200 ragged
        ((130, 70), (1, 0), f"i0 x i1 {TILES}"),  # ragged: the last tiles partial
        ((4, 128, 80), (0, 2, 1), f"i1 x i2 {BLOCKS}"),  # 80 rows, 128 columns
        ((4, 120, 80), (0, 2, 1), f"i1 x i2 {TILES}"),  # 120 is not 16 x n
        ((2, 70, 3, 66), (0, 3, 2, 1), f"i1 x i3 {TILES}"),  # i3 moved inside
    ],
)
def test_a_transposed_copy_is_tiled_and_exact(
    shape: tuple[int, ...], perm: tuple[int, ...], tiled: str, threads: int
) -> None:
    compiled = qidao.compile(_copy(shape, perm), threads=threads)
    report = compiled.stats["default_schedule"]["main_k0_contiguous"]
    assert tiled in report, report
    x = _rand(*shape)
    (y,) = compiled(x)
    np.testing.assert_array_equal(y, np.transpose(x, perm))


@pytest.mark.parametrize(
    ("shape", "perm", "why"),
    [
        ((4, 128, 96), (1, 0, 2), "no load reads down a column"),  # rows move whole
        ((1, 32, 56, 56), (0, 2, 3, 1), f"fewer than {TILE} iterations"),
    ],
)
def test_copies_that_gain_nothing_are_left_as_lowered(
    shape: tuple[int, ...], perm: tuple[int, ...], why: str
) -> None:
    compiled = qidao.compile(_copy(shape, perm), threads=1)
    report = compiled.stats["default_schedule"]["main_k0_contiguous"]
    assert "tiles" not in report and "blocks" not in report, report
    if "fewer" in why:  # the reason reaches stats when nothing else applied
        assert why in report, report
    x = _rand(*shape)
    (y,) = compiled(x)
    np.testing.assert_array_equal(y, np.transpose(x, perm))


def test_an_elementwise_chain_reading_a_transposed_view_is_tiled() -> None:
    g = Graph("main")
    a, b = g.input("a", (96, 160)), g.input("b", (160, 96))
    g.output(g.relu(a + g.transpose(b, (1, 0))))
    compiled = qidao.compile(g, threads=1)
    (report,) = compiled.stats["default_schedule"].values()
    assert BLOCKS in report, report
    x, w = _rand(96, 160), _rand(160, 96)
    (y,) = compiled(x, w)
    np.testing.assert_allclose(y, np.maximum(x + w.T, 0), rtol=1e-6)
