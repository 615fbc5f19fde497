"""bfloat16 matmuls (``tg.matmul_bf16``, the ``bf16-matmul`` pass, the CPU target's
``bf16`` option) against NumPy's float32 product of the widened values: a bf16
input widened to float32 (``g.cast``) by a constant float32 weight whose values
are bfloat16s. Each product of two bfloat16s is exact in float32, so only the
order of the float32 additions differs from NumPy's (a relative error of a few
float32 ulps of the sum of the terms' magnitudes).

The numbers are checked on any CPU (without AVX512_BF16 the product stays a
float32 ``tg.matmul``); where the host has AVX512_BF16, that the weight is packed
and the default schedule's register tile is ``vdpbf16ps``, and where it has
AMX-BF16 (and Linux grants the tiles), that whole 16-row blocks go to AMX tiles
(``tdpbf16ps``): ragged rows (a peeled register tile), 16- and 32-column panels,
K off the AMX tiles, a batched lhs, a fused epilogue cast back to bfloat16, one
and two threads, ``bf16=False``, and the option's errors."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu.target import BF16_FEATURE
from qidao.frontend.builder import Graph
from qidao.runtime.amx import amx_bf16_available
from qidao.runtime.cpu import host_has

HAS_BF16 = host_has(BF16_FEATURE)
HAS_AMX_BF16 = HAS_BF16 and amx_bf16_available()
needs_bf16 = pytest.mark.skipif(
    not HAS_BF16, reason="this CPU has no AVX512_BF16 (vdpbf16ps)"
)
needs_amx_bf16 = pytest.mark.skipif(
    not HAS_AMX_BF16,
    reason="no AMX-BF16 here (the CPU lacks AVX512_BF16 or AMX-BF16, or the OS the "
    "tile state)",
)

Array = np.ndarray[Any, Any]
BFLOAT16 = ml_dtypes.bfloat16
RTOL = 1e-5
"""Of the sum of the terms' magnitudes: the products are exact, the float32
sums in another order."""


def weight(k: int, n: int, seed: int) -> Array:
    """A float32 weight whose every value is a bfloat16."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((k, n)).astype(BFLOAT16).astype(np.float32)


def lhs(shape: tuple[int, ...], seed: int) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(BFLOAT16)


def assert_matches(y: Array, x: Array, w: Array) -> None:
    """``y`` is ``x @ w`` in float32 up to the order of the additions."""
    a = x.astype(np.float32)
    want = a @ w
    scale = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
    assert y.dtype == np.float32 and y.shape == want.shape
    bad = np.abs(y.astype(np.float64) - want) > RTOL * scale + 1e-30
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} elements differ, the first at "
        f"{tuple(int(i) for i in np.argwhere(bad)[0])}"
    )


def compile_bf16(
    x_shape: tuple[int, ...], w: Array, threads: int = 1, **options: Any
) -> Any:
    """``cast(x: bf16 -> f32) @ w``, compiled."""
    g = Graph("main")
    x = g.input("a", x_shape, "bfloat16")
    g.output(g.matmul(g.cast(x, "float32"), g.constant(w)))
    return qidao.compile(g, threads=threads, **options)


def report_of(compiled: Any) -> str:
    (report,) = compiled.stats["default_schedule"].values()
    assert isinstance(report, str)
    return report


SHAPES = [
    # lhs shape, K, N, the instruction on a CPU with AMX-BF16, without
    pytest.param((64, 128), 128, 64, "tdpbf16ps", "vdpbf16ps", id="64x128x64"),
    # 5 rows past the AMX blocks
    pytest.param((37, 128), 128, 64, "tdpbf16ps", "vdpbf16ps", id="37x128x64"),
    # N = 48: panels of 16
    pytest.param((32, 64), 64, 48, "tdpbf16ps", "vdpbf16ps", id="32x64x48"),
    # K = 40: not a whole AMX tile row (32 bfloat16s)
    pytest.param((16, 40), 40, 32, "vdpbf16ps", "vdpbf16ps", id="16x40x32"),
    # a batched lhs, 8 rows a matrix
    pytest.param((2, 8, 64), 64, 32, "vdpbf16ps", "vdpbf16ps", id="2x8x64x32"),
    # one panel of 16, a peeled tile of 5 rows
    pytest.param((5, 12), 12, 16, "vdpbf16ps", "vdpbf16ps", id="5x12x16"),
]


@pytest.mark.parametrize(("x_shape", "k", "n", "amx", "avx"), SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_numpy(
    x_shape: tuple[int, ...], k: int, n: int, amx: str, avx: str, threads: int
) -> None:
    w, x = weight(k, n, seed=k + n), lhs(x_shape, seed=sum(x_shape))
    compiled = compile_bf16(x_shape, w, threads)
    assert ("tg.matmul_bf16" in compiled.ir("tg")) == HAS_BF16
    (y,) = compiled(x)
    assert_matches(y, x, w)


@needs_bf16
@pytest.mark.parametrize(("x_shape", "k", "n", "amx", "avx"), SHAPES)
def test_the_default_schedule_uses_the_bf16_instructions(
    x_shape: tuple[int, ...], k: int, n: int, amx: str, avx: str
) -> None:
    w = weight(k, n, seed=1)
    compiled = compile_bf16(x_shape, w)
    tg_ir = compiled.ir("tg")
    assert "tg.matmul_bf16" in tg_ir and 'rhs_layout = "vnni_panels"' in tg_ir
    assert "tg.matmul %" not in tg_ir, tg_ir
    report = report_of(compiled)
    instruction = amx if HAS_AMX_BF16 else avx
    assert instruction in report, report
    schedule = compiled.ir("schedule")
    llvm = compiled.ir("llvm")
    if instruction == "tdpbf16ps":
        assert "AMX tiles" in report, report
        assert "amx.tile_mulf" in schedule and "llvm.x86.tdpbf16ps" in llvm
    else:
        assert "AMX" not in report, report
        assert "amx." not in schedule
    if instruction == "vdpbf16ps" or x_shape[-2] % 16:  # the register tile
        assert "x86vector.avx512.dot" in schedule
        assert "llvm.x86.avx512bf16.dpbf16ps.512" in llvm
    (y,) = compiled(lhs(x_shape, seed=2))
    assert_matches(y, lhs(x_shape, seed=2), w)


@needs_amx_bf16
@pytest.mark.parametrize(
    ("m", "rows"),
    [
        pytest.param(64, "32x32 blocks", id="m64"),
        pytest.param(37, "the last 5 rows in a peeled", id="m37"),
        pytest.param(48, "16x32 blocks", id="m48"),
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_amx_tiles(m: int, rows: str, threads: int) -> None:
    w, x = weight(128, 64, seed=m), lhs((m, 128), seed=m + 1)
    compiled = compile_bf16((m, 128), w, threads)
    report = report_of(compiled)
    assert "float32 C in AMX tiles, tdpbf16ps" in report and rows in report, report
    assert ("j_o on 2 threads" in report) == (threads == 2), report
    (y,) = compiled(x)
    assert_matches(y, x, w)


@needs_amx_bf16
def test_amx_false_keeps_the_register_tile() -> None:
    w, x = weight(128, 64, seed=3), lhs((64, 128), seed=4)
    compiled = compile_bf16((64, 128), w, amx=False)
    report = report_of(compiled)
    assert "vdpbf16ps" in report and "AMX" not in report, report
    assert "amx." not in compiled.ir("schedule")
    (y,) = compiled(x)
    assert_matches(y, x, w)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fused_epilogue_cast_back_to_bf16(threads: int) -> None:
    """``cast(relu(x @ w + b), bf16)``, a bfloat16 model's layer: the epilogue
    joins the bf16 matmul's kernel; the result is the float32 sum rounded once
    to bfloat16 (the same as NumPy's but where the last bit of a rounding
    depends on the order of the additions)."""
    k, n = 128, 64
    w, x = weight(k, n, seed=5), lhs((2, 24, k), seed=6)
    b = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    g = Graph("main")
    a = g.input("a", (2, 24, k), "bfloat16")
    y = g.add(g.matmul(g.cast(a, "float32"), g.constant(w)), g.constant(b))
    g.output(g.cast(g.relu(y), "bfloat16"))
    compiled = qidao.compile(g, threads=threads)
    if HAS_BF16:  # 24 rows: 16 in AMX tiles where it can, 8 in the register tile
        report = report_of(compiled)
        assert "the epilogue per tile" in report, report
        if HAS_AMX_BF16:
            assert "tdpbf16ps" in report and "the last 8 rows" in report, report
        else:
            assert "vdpbf16ps" in report, report
        assert "tg.matmul_bf16" in compiled.ir("tg")
        assert "x86vector.avx512.dot" in compiled.ir("schedule")
    (got,) = compiled(x)
    assert got.dtype == BFLOAT16 and got.shape == (2, 24, n)
    exact = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + b, 0)
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)) + np.abs(b)
    err = np.abs(got.astype(np.float64) - exact)
    # half a bfloat16 ulp (2**-9 relative) for the rounding, and the sums' error
    assert (err <= 2.0**-8 * np.abs(exact) + RTOL * scale).all()
    want = np.maximum(x.astype(np.float32) @ w + b, 0).astype(BFLOAT16)
    same = got.view(np.uint16) == want.view(np.uint16)
    assert same.mean() > 0.95, f"only {same.mean():.3f} equal to NumPy's to the bit"


def test_bf16_false_computes_in_float32() -> None:
    w, x = weight(128, 64, seed=8), lhs((37, 128), seed=9)
    off = compile_bf16((37, 128), w, bf16=False)
    assert "tg.matmul_bf16" not in off.ir("tg")
    reports = " ".join(off.stats["default_schedule"].values())
    assert "dpbf16ps" not in reports and "matmul: " in reports, reports
    (y_off,) = off(x)
    assert_matches(y_off, x, w)
    (y_on,) = compile_bf16((37, 128), w)(x)
    np.testing.assert_allclose(y_on, y_off, rtol=1e-5, atol=1e-5)


@needs_bf16
def test_bf16_true_where_the_cpu_has_it() -> None:
    w, x = weight(64, 32, seed=10), lhs((8, 64), seed=11)
    compiled = compile_bf16((8, 64), w, bf16=True)
    assert "tg.matmul_bf16" in compiled.ir("tg")
    (y,) = compiled(x)
    assert_matches(y, x, w)


@needs_bf16
def test_not_a_bf16_weight_keeps_the_float32_matmul() -> None:
    """A weight with one value that is no bfloat16 (a float32 model): the float32
    product, to NumPy's float32 precision."""
    w = weight(64, 32, seed=12)
    w[3, 5] = np.float32(1.0 + 2.0**-10)
    x = lhs((8, 64), seed=13)
    compiled = compile_bf16((8, 64), w)
    assert "tg.matmul_bf16" not in compiled.ir("tg")
    (y,) = compiled(x)
    assert_matches(y, x, w)


def test_bf16_must_be_a_flag() -> None:
    with pytest.raises(TypeError, match="bf16 must be None, True or False, got 'yes'"):
        compile_bf16((2, 4), weight(4, 16, seed=0), bf16="yes")


@pytest.mark.skipif(HAS_BF16, reason="this CPU has AVX512_BF16: nothing to refuse")
def test_bf16_true_without_the_instructions_is_refused() -> None:
    with pytest.raises(ValueError, match="this CPU has no AVX512_BF16"):
        compile_bf16((2, 4), weight(4, 16, seed=0), bf16=True)
