"""The elementwise default's vectorization of short inner loops
(``qidao/compiler/targets/cpu/defaults/loops.py``): an inner loop of at least one
register and fewer than ``SHORT_INNER`` elements is vectorized by the schedule
(LLVM vectorized the loop around it with gathers); longer ones, shorter ones, and
loops the primitive cannot take are left to LLVM. Each compiled kernel is checked
against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu.defaults.loops import SHORT_INNER
from qidao.frontend.builder import Graph


def _rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def _chain(shape: tuple[int, ...]) -> Graph:
    g = Graph("main")
    a, b = g.input("a", shape), g.input("b", shape)
    g.output(g.relu(a * b - 0.5))
    return g


@pytest.mark.parametrize(
    ("shape", "vectorized"),
    [
        ((4, 6, 5, 16), "i3 vectorized (<16 x float>, 16 elements)"),  # NHWC, 16 ch
        ((3, 7, 32), "i2 vectorized (<16 x float>, 32 elements)"),
        ((40, 24), "i1 vectorized (<16 x float>, 24 elements)"),  # a tail of 8
        ((9, 63), "i1 vectorized (<16 x float>, 63 elements)"),
    ],
)
def test_a_short_inner_loop_is_vectorized_and_exact(
    shape: tuple[int, ...], vectorized: str
) -> None:
    compiled = qidao.compile(_chain(shape), threads=1)
    report = compiled.stats["default_schedule"]["main_k0_fused"]
    assert vectorized in report, report
    a, b = _rand(*shape), _rand(*reversed(shape)).reshape(shape)
    (y,) = compiled(a, b)
    np.testing.assert_allclose(y, np.maximum(a * b - 0.5, 0), rtol=1e-6)


@pytest.mark.parametrize(
    "shape",
    [
        (5, SHORT_INNER),  # long enough: LLVM vectorizes it well
        (64, 8),  # shorter than a register
        (2, 3, 15),
    ],
)
def test_other_inner_loops_are_left_to_llvm(shape: tuple[int, ...]) -> None:
    compiled = qidao.compile(_chain(shape), threads=1)
    report = compiled.stats["default_schedule"]["main_k0_fused"]
    assert "vectorized" not in report, report
    a, b = _rand(*shape), _rand(*reversed(shape)).reshape(shape)
    (y,) = compiled(a, b)
    np.testing.assert_allclose(y, np.maximum(a * b - 0.5, 0), rtol=1e-6)


def test_math_expanded_on_scalars_is_left_to_llvm() -> None:
    """``exp`` is written out on scalars by expand-math: vectorizing its loop would
    leave a vector op the expansion cannot take."""
    g = Graph("main")
    x = g.input("x", (8, 16))
    g.output(g.exp(x) + x)
    compiled = qidao.compile(g, threads=1)
    report = compiled.stats["default_schedule"]["main_k0_fused"]
    assert "vectorized" not in report, report
    a = _rand(8, 16)
    (y,) = compiled(a)
    np.testing.assert_allclose(y, np.exp(a) + a, rtol=1e-5, atol=1e-6)


def test_a_broadcast_operand_is_read_in_the_vector_loop() -> None:
    """A per-channel scale (NHWC batch norm's ``gamma``) is read along the vector
    loop; a per-pixel one (stride 0 there) broadcast within it."""
    g = Graph("main")
    x = g.input("x", (2, 5, 7, 32))
    gamma = g.input("gamma", (32,))
    pixel = g.input("pixel", (2, 5, 7, 1))
    g.output(x * gamma + pixel)
    compiled = qidao.compile(g, threads=1)
    report = compiled.stats["default_schedule"]["main_k0_fused"]
    assert "i3 vectorized" in report, report
    a, s, p = _rand(2, 5, 7, 32), _rand(32), _rand(2, 5, 7, 1)
    (y,) = compiled(a, s, p)
    np.testing.assert_allclose(y, a * s + p, rtol=1e-6, atol=1e-6)
