"""An int8 product with its requantization fused (``sink-reshape``, ``fuse``'s
int8 epilogues, the default schedule's epilogue per tile) against NumPy: an int8
convolution's shape (the product reshaped to NHWC, then bias, scale, a residual
block's input, clamp, round, cast to ui8), exact, on AMX tiles (where the CPU has
them) and on VNNI register tiles, whole tiles and peeled rows, one and two
threads; and a batched product whose epilogue stays int32 (BERT's zero-point
term)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu.target import VNNI_FEATURE
from qidao.frontend.builder import Graph
from qidao.runtime.amx import amx_available
from qidao.runtime.cpu import host_has
from tests.compiler.targets.cpu.test_matmul_integer import bytes_of

Array = np.ndarray[Any, Any]

needs_vnni = pytest.mark.skipif(
    not host_has(VNNI_FEATURE), reason="no AVX-512 VNNI on this CPU"
)
ENGINES = [
    pytest.param(False, id="vnni"),
    pytest.param(
        True,
        id="amx",
        marks=pytest.mark.skipif(
            not amx_available(),
            reason="no AMX here (the CPU lacks AMX-INT8 or the OS its tile state)",
        ),
    ),
]


def _requantized_conv(
    m: int, k: int, n: int, hw: tuple[int, int], w: Array, scale: Array
) -> Graph:
    h, wd = hw
    g = Graph("main")
    a = g.input("a", (m, k), "uint8")
    bias = g.input("bias", (n,), "int32")
    res = g.input("res", (1, h, wd, n), "uint8")
    p = g.reshape(g.matmul_integer(a, g.constant(w)), (1, h, wd, n))
    y = g.mul(g.cast(g.add(p, bias), "float64"), g.constant(scale, "float64"))
    y = g.add(y, g.cast(res, "float64"))
    low, high = g.constant(0.0, "float64"), g.constant(255.0, "float64")
    y = g.minimum(g.maximum(y, low), high)
    g.output(g.cast(g.round(y), "uint8"))
    return g


def _reference(a: Array, w: Array, bias: Array, res: Array, scale: Array) -> Array:
    acc = (a.astype(np.int64) @ w.astype(np.int64) + bias).astype(np.int32)
    y = acc.astype(np.float64).reshape(res.shape) * scale + res
    return np.round(np.clip(y, 0, 255)).astype(np.uint8)


@needs_vnni
@pytest.mark.parametrize("amx", ENGINES)
@pytest.mark.parametrize(
    ("m", "k", "n", "hw"),
    [
        (64, 128, 32, (8, 8)),  # whole tiles
        (200, 256, 64, (10, 20)),  # 8 rows past the last 32-row block
        (37, 64, 48, (1, 37)),  # 16-column blocks, 5 rows peeled
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_requantized_product_matches_numpy(
    m: int, k: int, n: int, hw: tuple[int, int], threads: int, amx: bool
) -> None:
    w = bytes_of("int8", (k, n), seed=k + n)
    scale = np.random.default_rng(n).uniform(0.001, 0.004, n)
    compiled = qidao.compile(
        _requantized_conv(m, k, n, hw, w, scale), threads=threads, amx=amx
    )
    fused = [
        report
        for name, report in compiled.stats["default_schedule"].items()
        if name.endswith("_fused")
    ]
    assert len(fused) == 1, compiled.stats["default_schedule"]
    assert "the epilogue per tile" in fused[0], fused[0]
    assert ("AMX tiles" in fused[0]) == amx, fused[0]
    schedule = compiled.ir("schedule")
    assert f"memref<{m}x{n}xi32>" not in schedule  # the sums never leave the tile
    rng = np.random.default_rng(m)
    a = bytes_of("uint8", (m, k), seed=m)
    bias = rng.integers(-20000, 20000, n, dtype=np.int32)
    res = bytes_of("uint8", (1, *hw, n), seed=n)
    (y,) = compiled(a, bias, res)
    np.testing.assert_array_equal(y, _reference(a, w, bias, res, scale))


@needs_vnni
@pytest.mark.parametrize("amx", ENGINES)
def test_batched_product_with_an_int32_epilogue(amx: bool) -> None:
    """``[1, 128, 256] x [256, 512]`` minus a per-column int32 term (a dynamically
    quantized linear layer's zero-point correction): the epilogue keeps int32 and
    the batch dimension."""
    k, n = 256, 512
    w = bytes_of("int8", (k, n), seed=1)
    g = Graph("main")
    a = g.input("a", (1, 128, k), "uint8")
    z = g.input("z", (1, n), "int32")
    g.output(g.sub(g.matmul_integer(a, g.constant(w)), z))
    compiled = qidao.compile(g, threads=1, amx=amx)
    (report,) = compiled.stats["default_schedule"].values()
    assert "the epilogue per tile" in report, report
    x = bytes_of("uint8", (1, 128, k), seed=2)
    zv = np.random.default_rng(3).integers(-(2**20), 2**20, (1, n), dtype=np.int32)
    (y,) = compiled(x, zv)
    want = (x.astype(np.int64) @ w.astype(np.int64) - zv).astype(np.int32)
    np.testing.assert_array_equal(y, want)


@needs_vnni
def test_without_fusion_the_product_has_its_own_kernel() -> None:
    """``fuse=False``: the product and the requantization are two kernels, with
    the same result (the reference for what the fused kernel computes)."""
    k, n, m = 128, 32, 64
    w = bytes_of("int8", (k, n), seed=4)
    scale = np.full(n, 0.002)
    g = _requantized_conv(m, k, n, (8, 8), w, scale)
    fused, apart = qidao.compile(g, threads=1), qidao.compile(g, threads=1, fuse=False)
    kinds = apart.stats["default_schedule"]
    assert any(name.endswith("matmul_integer") for name in kinds), kinds
    a, bias = bytes_of("uint8", (m, k), seed=5), np.arange(n, dtype=np.int32) * 97
    res = bytes_of("uint8", (1, 8, 8, n), seed=6)
    np.testing.assert_array_equal(fused(a, bias, res)[0], apart(a, bias, res)[0])
