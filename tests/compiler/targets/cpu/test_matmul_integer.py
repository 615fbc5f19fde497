"""int8 matmuls (``tg.matmul_integer``) against NumPy's int64 products wrapped to
int32: the loops as lowered (any CPU), and where the host has AVX-512 VNNI the
packed weight (``pack-vnni``) and the default schedule's ``vpdpbusd`` register
tiles: ragged rows (a peeled tile), 16- and 32-column panels, batched lhs, one
and two threads, the extremes of both byte types and a sum that wraps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu.target import VNNI_FEATURE
from qidao.frontend.builder import Graph
from qidao.runtime.cpu import host_has

HAS_VNNI = host_has(VNNI_FEATURE)
needs_vnni = pytest.mark.skipif(
    not HAS_VNNI, reason="this CPU has no AVX-512 VNNI (vpdpbusd)"
)

Array = np.ndarray[Any, Any]


def reference(a: Array, b: Array) -> Array:
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)


def bytes_of(dtype: str, shape: tuple[int, ...], seed: int) -> Array:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def compile_constant_rhs(
    a_shape: tuple[int, ...], b: Array, threads: int = 1, **options: Any
) -> Any:
    g = Graph("main")
    a = g.input("a", a_shape, "uint8")
    g.output(g.matmul_integer(a, g.constant(b)))
    return qidao.compile(g, threads=threads, **options)


@pytest.mark.parametrize(
    ("m", "k", "n"),
    [
        (1, 64, 32),
        (5, 12, 16),
        (12, 256, 48),
        (13, 64, 32),
        (37, 128, 64),
        (64, 260, 80),
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_constant_rhs_matches_numpy(m: int, k: int, n: int, threads: int) -> None:
    b = bytes_of("int8", (k, n), seed=k + n)
    a = bytes_of("uint8", (m, k), seed=m)
    compiled = compile_constant_rhs((m, k), b, threads)
    (y,) = compiled(a)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, reference(a, b))


@needs_vnni
def test_the_default_schedule_uses_vpdpbusd() -> None:
    b = bytes_of("int8", (128, 64), seed=1)
    compiled = compile_constant_rhs((37, 128), b, amx=False)  # AMX: test_matmul_amx
    (report,) = compiled.stats["default_schedule"].values()
    assert "vpdpbusd" in report and "peeled" in report, report
    assert "tg.matmul_integer" in compiled.ir("tg") and 'rhs_layout = "vnni"' in (
        compiled.ir("tg")
    )
    assert "x86vector.avx512.vpdpbusd" in compiled.ir("schedule")
    assert "llvm.x86.avx512.vpdpbusd.512" in compiled.ir("llvm")


def test_vnni_false_keeps_the_rhs_and_the_loops() -> None:
    b = bytes_of("int8", (64, 32), seed=2)
    a = bytes_of("uint8", (9, 64), seed=3)
    compiled = compile_constant_rhs((9, 64), b, vnni=False)
    assert "vnni" not in compiled.ir("tg")
    (y,) = compiled(a)
    np.testing.assert_array_equal(y, reference(a, b))


def test_vnni_must_be_a_flag() -> None:
    with pytest.raises(TypeError, match="vnni must be None, True or False, got 'yes'"):
        compile_constant_rhs((2, 4), np.ones((4, 16), np.int8), vnni="yes")


@pytest.mark.skipif(HAS_VNNI, reason="this CPU has AVX-512 VNNI: nothing to refuse")
def test_vnni_true_without_the_instructions_is_refused() -> None:
    with pytest.raises(ValueError, match="this CPU has no AVX-512 VNNI"):
        compile_constant_rhs((2, 4), np.ones((4, 16), np.int8), vnni=True)


def test_the_extremes_and_a_wrapping_sum() -> None:
    """255 x -128 over K = 70000 is -2,284,800,000: past int32, wrapped as
    NumPy's int32 (and ONNX Runtime's accumulators) wrap."""
    k = 70000
    b = np.full((k, 16), -128, np.int8)
    b[:, 1] = 127
    a = np.full((2, k), 255, np.uint8)
    (y,) = compile_constant_rhs((2, k), b)(a)
    want = reference(a, b)
    assert want[0, 0] == np.int32(np.int64(-2_284_800_000).astype(np.int32))
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(
    ("lhs", "rhs"), [("int8", "int8"), ("int8", "uint8"), ("uint8", "uint8")]
)
def test_runtime_operands_of_any_signedness(lhs: str, rhs: str) -> None:
    """A rhs computed at run time and the pairs vpdpbusd does not take: the loops
    as lowered."""
    g = Graph("main")
    x, w = g.input("a", (2, 3, 20), lhs), g.input("b", (20, 7), rhs)
    g.output(g.matmul_integer(x, w))
    a, b = bytes_of(lhs, (2, 3, 20), seed=4), bytes_of(rhs, (20, 7), seed=5)
    (y,) = qidao.compile(g)(a, b)
    np.testing.assert_array_equal(y, reference(a, b))


def test_batched_lhs_with_a_packed_rhs() -> None:
    b = bytes_of("int8", (64, 32), seed=6)
    a = bytes_of("uint8", (3, 10, 64), seed=7)
    (y,) = compile_constant_rhs((3, 10, 64), b)(a)
    np.testing.assert_array_equal(y, reference(a, b))
