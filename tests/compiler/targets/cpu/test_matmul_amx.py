"""int8 matmuls on AMX tiles (the CPU target's ``amx`` option, ``tensorize``'s
``amx_int8``) against NumPy's int64 products wrapped to int32: whole 32 x 32 and
16 x 16 blocks, rows past the last block in a peeled VNNI tile, one and two
threads; shapes the tiles do not fit fall back to the VNNI schedule, and the
option's errors. The tile tests need a CPU with AMX-INT8 and a Linux that grants
the tile state; the option's checks run everywhere."""

from __future__ import annotations

import numpy as np
import pytest

from qidao.runtime.amx import amx_available
from tests.compiler.targets.cpu.test_matmul_integer import (
    bytes_of,
    compile_constant_rhs,
    reference,
)

HAS_AMX = amx_available()
needs_amx = pytest.mark.skipif(
    not HAS_AMX, reason="no AMX here (the CPU lacks AMX-INT8 or the OS its tile state)"
)


@needs_amx
@pytest.mark.parametrize(
    ("m", "k", "n", "rows"),
    [
        (16, 64, 16, "16x16 blocks"),
        (32, 128, 32, "32x32 blocks"),
        (37, 128, 64, "the last 5 rows in a peeled VNNI tile"),
        (49, 256, 64, "the last 1 rows in a peeled VNNI tile"),
        (40, 64, 48, "32x16 blocks"),
        (48, 64, 16, "16x16 blocks"),
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_tiles_match_numpy(m: int, k: int, n: int, rows: str, threads: int) -> None:
    b = bytes_of("int8", (k, n), seed=k + n)
    a = bytes_of("uint8", (m, k), seed=m)
    compiled = compile_constant_rhs((m, k), b, threads)
    (report,) = compiled.stats["default_schedule"].values()
    assert "AMX tiles" in report and rows in report, report
    assert "amx.tile_mul" in compiled.ir("schedule")
    assert "llvm.x86.tdpbusd" in compiled.ir("llvm")
    (y,) = compiled(a)
    np.testing.assert_array_equal(y, reference(a, b))


@needs_amx
def test_extremes_wrap_on_tiles() -> None:
    """All 255 x -128 over K = 65,536: the int32 sum wraps, as NumPy's does."""
    k = 65536
    a = np.full((16, k), 255, np.uint8)
    b = np.full((k, 16), -128, np.int8)
    (y,) = compile_constant_rhs((16, k), b)(a)
    np.testing.assert_array_equal(y, reference(a, b))


@needs_amx
@pytest.mark.parametrize(("m", "k", "n"), [(8, 64, 16), (32, 96, 32)])
def test_shapes_off_the_tiles_keep_vnni(m: int, k: int, n: int) -> None:
    """Under 16 rows, or K not a multiple of 64 bytes: the VNNI register tile."""
    b = bytes_of("int8", (k, n), seed=3)
    a = bytes_of("uint8", (m, k), seed=4)
    compiled = compile_constant_rhs((m, k), b)
    (report,) = compiled.stats["default_schedule"].values()
    assert "vpdpbusd" in report and "AMX" not in report, report
    (y,) = compiled(a)
    np.testing.assert_array_equal(y, reference(a, b))


@needs_amx
def test_amx_false_keeps_vnni() -> None:
    b = bytes_of("int8", (128, 32), seed=5)
    compiled = compile_constant_rhs((32, 128), b, amx=False)
    assert "amx." not in compiled.ir("schedule")
    (y,) = compiled(bytes_of("uint8", (32, 128), seed=6))
    assert y.shape == (32, 32)


def test_amx_must_be_a_flag() -> None:
    with pytest.raises(TypeError, match="amx must be None, True or False, got 1"):
        compile_constant_rhs((2, 4), np.ones((4, 16), np.int8), amx=1)


@pytest.mark.skipif(HAS_AMX, reason="this process can run AMX: nothing to refuse")
def test_amx_true_where_it_cannot_run_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot run AMX tile instructions"):
        compile_constant_rhs((2, 4), np.ones((4, 16), np.int8), amx=True)
