"""The bitwise ops and the shifts (``qidao/dialects/tg/bitwise.py``, their scalar code
in ``qidao/passes/kernels/lowering/scalar.py``) compiled with ``qidao.compile``,
against NumPy on every integer dtype (and bools), broadcasting, and every shift
amount from 0 past the bit width, negative signed amounts included: LLVM's shifts
by the width or more are poison, NumPy's give 0 (or -1, arithmetic right shift of
a negative value), and so must the kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]

Array = np.ndarray[Any, Any]


def _random(dtype: str, shape: tuple[int, ...], seed: int) -> Array:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_bitwise_ops_match_numpy(dtype: str) -> None:
    a, b = _random(dtype, (3, 8), 1), _random(dtype, (8,), 2)
    g = Graph()
    x, y = g.input("x", a.shape, dtype), g.input("y", b.shape, dtype)
    g.output(g.bitwise_and(x, y), g.bitwise_or(x, y), g.bitwise_xor(x, y))
    g.output(g.bitwise_not(x))
    got = qidao.compile(g)(a, b)
    want = [a & b, a | b, a ^ b, ~a]
    for k, (r, w) in enumerate(zip(got, want, strict=True)):
        assert r.dtype == np.dtype(dtype), k
        np.testing.assert_array_equal(r, w)


def test_bitwise_ops_on_bools_are_the_logical_ops() -> None:
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    g = Graph()
    x, y = g.input("x", (4,), "bool"), g.input("y", (4,), "bool")
    g.output(g.bitwise_and(x, y), g.bitwise_or(x, y), g.bitwise_xor(x, y))
    g.output(g.bitwise_not(x))
    got = qidao.compile(g)(a, b)
    for r, w in zip(got, [a & b, a | b, a ^ b, ~a], strict=True):
        assert r.dtype == np.bool_
        np.testing.assert_array_equal(r, w)


def _amounts(dtype: str) -> Array:
    """Every amount from 0 to twice the width, and (signed) negative ones."""
    bits = np.iinfo(dtype).bits
    amounts = [*range(2 * bits + 1), np.iinfo(dtype).max]
    if np.iinfo(dtype).min < 0:
        amounts += [-1, -bits, np.iinfo(dtype).min]
    return np.array(amounts, dtype)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_shifts_match_numpy_for_every_amount(dtype: str) -> None:
    """Each value shifted by each amount (a broadcast of ``[v, 1]`` by ``[s]``)."""
    info = np.iinfo(dtype)
    values = np.array([info.min, info.max, 0, 1, 5, info.max // 3], dtype)
    if info.min < 0:
        values = np.concatenate([values, np.array([-1, -8], dtype)])
    amounts = _amounts(dtype)
    g = Graph()
    x = g.input("x", (values.size, 1), dtype)
    s = g.input("s", amounts.shape, dtype)
    g.output(g.shift_left(x, s), g.shift_right(x, s))
    left, right = qidao.compile(g)(values.reshape(-1, 1), amounts)
    column = values.reshape(-1, 1)
    np.testing.assert_array_equal(left, np.left_shift(column, amounts))
    np.testing.assert_array_equal(right, np.right_shift(column, amounts))
    assert left.dtype == right.dtype == np.dtype(dtype)


def test_shift_right_is_arithmetic_on_signed_and_logical_on_unsigned() -> None:
    g = Graph()
    x = g.input("x", (3,), "int8")
    u = g.input("u", (3,), "uint8")
    g.output(g.shift_right(x, 1), g.shift_right(u, 1))
    signed, unsigned = qidao.compile(g)(
        np.array([-8, -1, -128], np.int8), np.array([248, 255, 128], np.uint8)
    )
    np.testing.assert_array_equal(signed, np.array([-8, -1, -128], np.int8) >> 1)
    np.testing.assert_array_equal(unsigned, np.array([248, 255, 128], np.uint8) >> 1)
