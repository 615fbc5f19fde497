"""``amx.tile_config``'s 64 bytes (``qidao/passes/cpu/llvm/amx.py``) against the
palette-1 layout of Intel's manual, built byte by byte with NumPy: byte 0 the
palette, bytes 16 + 2t tile t's row bytes (u16), byte 48 + t its rows."""

from __future__ import annotations

import numpy as np

from qidao.passes.cpu.llvm.amx import config_words


def test_config_words_are_the_palette_1_layout() -> None:
    shapes = [(16, 64), (0, 0), (3, 12), (16, 64), (1, 4), (0, 0), (16, 64), (7, 28)]
    want = np.zeros(64, np.uint8)
    want[0] = 1
    colsb = want[16:32].view(np.uint16)
    rows = want[48:56]
    for t, (r, c) in enumerate(shapes):
        colsb[t], rows[t] = c, r
    got = np.array(config_words(shapes), np.int64).view(np.uint8)
    np.testing.assert_array_equal(got, want)
