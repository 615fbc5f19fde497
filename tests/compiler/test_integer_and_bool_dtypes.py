"""Dtypes beyond float32, end to end against NumPy: integer arithmetic, comparisons,
logical ops, ``where``, ``cast``, ``pow``, bool inputs and outputs.

Each graph is built with the Python builder, compiled with ``qidao.compile`` (graph
mode: fusion, default schedules, LLVM) and run on the CPU; its outputs are compared
with NumPy on the same inputs, and with ``numpy_eval`` (the reference semantics
that fold-constants uses). A mismatch names the index and both values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.fold_constants import FoldConstantsPass
from qidao.runtime.errors import ArgumentError

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)
INTS = ("int32", "int64")
FLOATS = ("float32", "float64")


def ints(dtype: str, *shape: int) -> Array:
    """Random integers with the interesting ones first: 0, +-1, the extremes."""
    info = np.iinfo(dtype)
    special = np.array([0, 1, -1, 7, -7, info.max, info.min, info.min + 1], dtype)
    values = RNG.integers(-50, 50, size=shape, dtype=dtype).reshape(-1)
    values[: min(special.size, values.size)] = special[: values.size]
    return values.reshape(shape)


def floats(dtype: str, *shape: int) -> Array:
    special = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan], dtype)
    values = RNG.standard_normal(shape).astype(dtype).reshape(-1)
    values[: min(special.size, values.size)] = special[: values.size]
    return values.reshape(shape)


def assert_same(got: Array, want: Array) -> None:
    """Same dtype and shape; equal values (floats to 2 ulp, NaN where NaN)."""
    assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    if np.issubdtype(want.dtype, np.floating):
        rtol = 4 * float(np.finfo(want.dtype).eps)
        bad = ~np.isclose(got, want, rtol=rtol, atol=0.0, equal_nan=True)
    else:
        bad = got != want
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at {index}: got {got[index]!r}, expected {want[index]!r} "
            f"({int(bad.sum())} of {bad.size} differ)"
        )


def run(
    build: Callable[..., Value | tuple[Value, ...]],
    *inputs: Array,
) -> list[Array]:
    """Compile ``build(g, *input values)`` and run it on ``inputs``; also check that
    the reference semantics (``numpy_eval``) agree with the compiled code."""
    g = Graph("main")
    values = [g.input(f"x{k}", a.shape, a.dtype.name) for k, a in enumerate(inputs)]
    outputs = build(g, *values)
    g.output(*(outputs if isinstance(outputs, tuple) else (outputs,)))
    module = g.module()
    main = module.body.block.first_op
    with np.errstate(all="ignore"):
        reference = evaluate_function(main, inputs)  # type: ignore[arg-type]
    got = qidao.compile(module)(*inputs)
    for g_, r in zip(got, reference, strict=True):
        assert_same(g_, r)
    return got


# ---- integer arithmetic -----------------------------------------------------------


def _truncating_div(a: Array, b: Array) -> Array:
    """tg.div on integers, in Python integers: truncation toward zero, x / 0 = 0,
    wrapped to the dtype (so MIN / -1 = MIN)."""
    a, b = np.broadcast_arrays(a, b)
    bits = a.dtype.itemsize * 8
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True):
        q = 0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        out.append((q + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1))
    return np.array(out, a.dtype).reshape(a.shape)


INT_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _truncating_div,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_integer_binary_ops_wrap_and_broadcast(op: str, dtype: str) -> None:
    a, b = ints(dtype, 3, 8), ints(dtype, 8)[::-1].copy()
    b[2] = 0  # x / 0
    b[3] = -1  # MIN / -1
    (got,) = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    with np.errstate(all="ignore"):
        assert_same(got, INT_BINARY[op](a, b).astype(dtype))


def test_integer_division_truncates_toward_zero() -> None:
    a = np.array([7, -7, 7, -7, 0, 5, np.iinfo(np.int64).min], np.int64)
    b = np.array([2, 2, -2, -2, 3, 0, -1], np.int64)
    (got,) = run(lambda g, x, y: g.div(x, y), a, b)
    assert got.tolist() == [3, -3, -3, 3, 0, 0, np.iinfo(np.int64).min]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_unary_ops(dtype: str) -> None:
    x = ints(dtype, 4, 5)
    neg, absolute, relu = run(lambda g, v: (g.neg(v), g.abs(v), g.relu(v)), x)
    with np.errstate(all="ignore"):
        assert_same(neg, np.negative(x))
        assert_same(absolute, np.abs(x))  # abs(MIN) = MIN, as NumPy's
    assert_same(relu, np.maximum(x, 0).astype(dtype))


def test_float_only_ops_refuse_integers() -> None:
    g = Graph("main")
    x = g.input("x", (4,), "int32")
    with pytest.raises(Exception, match=r"tg\.exp expects float tensors"):
        g.exp(x)
    with pytest.raises(Exception, match=r"tg\.pow expects float tensors"):
        g.pow(x, x)


# ---- comparisons, logic, where ----------------------------------------------------

COMPARE: dict[str, Callable[[Array, Array], Array]] = {
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
}


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS])
@pytest.mark.parametrize("op", list(COMPARE))
def test_comparisons_broadcast_and_follow_ieee(op: str, dtype: str) -> None:
    """Floats with NaN, infinities and signed zeros: NaN compares false except
    ``!=``; ``-0 == 0``."""
    make = floats if dtype in FLOATS else ints
    a, b = make(dtype, 4, 7), make(dtype, 7)
    (got,) = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    assert_same(got, COMPARE[op](a, b))


def test_equal_on_bools() -> None:
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    eq, ne = run(lambda g, x, y: (g.equal(x, y), g.not_equal(x, y)), a, b)
    assert_same(eq, a == b)
    assert_same(ne, a != b)


def test_logical_ops() -> None:
    a = RNG.random((3, 5)) > 0.5
    b = RNG.random(5) > 0.5
    got = run(
        lambda g, x, y: (
            g.logical_and(x, y),
            g.logical_or(x, y),
            g.logical_xor(x, y),
            g.logical_not(x),
        ),
        a,
        b,
    )
    want = [a & b, a | b, a ^ b, ~a]
    for got_, want_ in zip(got, want, strict=True):
        assert_same(got_, want_)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_where_broadcasts_all_three(dtype: str) -> None:
    c = RNG.random((3, 1)) > 0.5
    x = (RNG.standard_normal(4) * 10).astype(dtype)
    y = (RNG.standard_normal((3, 4)) * 10).astype(dtype)
    (got,) = run(lambda g, cv, xv, yv: g.where(cv, xv, yv), c, x, y)
    assert_same(got, np.where(c, x, y))


# ---- cast -------------------------------------------------------------------------

DTYPES = ("float32", "float64", "int32", "int64", "bool")


def _cast_source(dtype: str) -> Array:
    """Values every cast defines (no NaN, nothing out of an integer's range)."""
    if dtype == "bool":
        return np.array([True, False, True, True, False, False])
    if dtype in FLOATS:
        return np.array([0.0, -0.0, 2.7, -2.7, 1e6 + 0.5, -3e4], dtype)
    return np.array([0, 1, -1, 123456789, -5, 2**31 - 1], dtype)


@pytest.mark.parametrize("source", DTYPES)
@pytest.mark.parametrize("target", DTYPES)
def test_cast_is_numpy_astype(source: str, target: str) -> None:
    """float to int truncates, anything to bool is ``!= 0``, bool is 0/1, int64
    to float32 rounds once."""
    x = _cast_source(source)
    (got,) = run(lambda g, v: g.cast(v, target), x)
    assert_same(got, x.astype(target))


def test_cast_float_to_bool_takes_nan_as_true() -> None:
    x = np.array([np.nan, 0.0, -0.0, 1e-45], np.float32)
    (got,) = run(lambda g, v: g.cast(v, "bool"), x)
    assert got.tolist() == [True, False, False, True]


def test_cast_int64_to_float32_rounds_once() -> None:
    """2^53 + 1 rounds to float32 directly, not through float64 first."""
    x = np.array([2**53 + 1, 2**24 + 1, -(2**40) - 3], np.int64)
    (got,) = run(lambda g, v: g.cast(v, "float32"), x)
    assert_same(got, x.astype(np.float32))


# ---- pow --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_matches_numpy_power(dtype: str) -> None:
    """Negative bases: integer exponents are exact powers, others NaN; x ** 0 = 1
    even for NaN; 1 ** y = 1; 0 ** -1 = inf."""
    base = np.array(
        [-2.0, -2.0, -2.0, -8.0, 0.0, 0.0, np.nan, 1.0, 2.0, -np.inf, 1.5, 1e10],
        dtype,
    )
    exponent = np.array(
        [3.0, 2.0, 0.5, 1 / 3, -1.0, 0.0, 0.0, np.nan, -2.5, 3.0, 40.0, 40.0],
        dtype,
    )
    (got,) = run(lambda g, x, y: g.pow(x, y), base, exponent)
    with np.errstate(all="ignore"):
        assert_same(got, np.power(base, exponent))


def test_pow_broadcasts_a_scalar_exponent() -> None:
    x = np.abs(RNG.standard_normal((2, 5))).astype(np.float32)
    (got,) = run(lambda g, v: g.pow(v, 2.5), x)
    np.testing.assert_allclose(got, x**2.5, rtol=2e-6)


# ---- bool inputs and outputs ------------------------------------------------------


def test_bool_inputs_and_outputs_are_numpy_bytes() -> None:
    """A bool output holds the bytes 0 and 1; any nonzero input byte is true."""
    raw = np.array([0, 1, 2, 255, 0, 1], np.uint8).view(np.bool_)
    (got,) = run(lambda g, m: g.logical_not(g.logical_not(m)), raw)
    assert got.view(np.uint8).tolist() == [0, 1, 1, 1, 0, 1]


def test_bool_and_int_arguments_are_checked() -> None:
    g = Graph("main")
    m = g.input("m", (3,), "bool")
    g.output(g.logical_not(m))
    compiled = qidao.compile(g.module())
    with pytest.raises(
        ArgumentError, match=r"input 'm' \(#0\).*dtype bool, got dtype int8"
    ):
        compiled(np.zeros(3, np.int8))
    g = Graph("main")
    n = g.input("n", (3,), "int64")
    g.output(n + 1)
    with pytest.raises(ArgumentError, match="dtype int64, got dtype int32"):
        qidao.compile(g.module())(np.zeros(3, np.int32))


# ---- fusion and folding -----------------------------------------------------------


def test_where_over_comparisons_fuses_with_float_math() -> None:
    """A masked exp: comparisons, logic, a cast, select and float math in one
    kernel that reads a bool mask input."""
    x = RNG.standard_normal((64, 33)).astype(np.float32)
    m = RNG.random((64, 33)) > 0.3
    g = Graph("main")
    xv, mv = g.input("x", x.shape), g.input("m", m.shape, "bool")
    keep = g.logical_and(g.greater(xv, -1.0), mv)
    y = g.where(keep, g.exp(xv) * 0.5, g.cast(g.less(xv, 0.0), "float32"))
    g.output(y + 1.0)
    compiled = qidao.compile(g.module())
    (got,) = compiled(x, m)
    keep_ = (x > -1.0) & m
    want = np.where(keep_, np.exp(x) * np.float32(0.5), (x < 0).astype(np.float32))
    np.testing.assert_allclose(got, want + 1, rtol=2e-6)
    assert compiled.stats["kernels"] == 1, compiled.ir("tg")


def test_a_fused_kernel_with_a_bool_output() -> None:
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    (got,) = run(lambda g, v: g.logical_not(g.greater(g.abs(v), 0.5)), x)
    assert_same(got, ~(np.abs(x) > 0.5))


def test_fold_constants_folds_integer_and_bool_graphs() -> None:
    g = Graph("main")
    a = g.constant(np.array([7, -7, 5], np.int64))
    b = g.constant(np.array([2, 2, 0], np.int64))
    q = g.div(a, b)
    g.output(q, g.where(g.less(q, 0), q, g.cast(g.greater(a, 0), "int64")))
    module = g.module()
    FoldConstantsPass().apply(None, module)  # type: ignore[arg-type]
    text = str(module)
    assert "tg.div" not in text and "tg.select" not in text, text
    got = qidao.compile(module)()
    assert got[0].tolist() == [3, -3, 0]
    assert got[1].tolist() == [1, -3, 1]


def test_a_where_in_a_matmul_epilogue_and_a_row_group() -> None:
    """A masked attention score: ``where(mask, x @ w, -1e9)`` is the matmul's
    epilogue; a softmax written out of ops over ``where(keep, s, -inf)`` is one row
    group with the select inside."""
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    w = RNG.standard_normal((32, 24)).astype(np.float32)
    m = RNG.random((16, 24)) > 0.2
    m[:, 0] = True  # no row all masked
    g = Graph("main")
    xv, wv, mv = (
        g.input("x", x.shape),
        g.input("w", w.shape),
        g.input("m", m.shape, "bool"),
    )
    s = g.where(mv, xv @ wv, -1e9)
    masked = g.where(mv, s, float("-inf"))
    e = g.exp(masked - g.reduce_max(masked, 1, keepdims=True))
    g.output(e / g.reduce_sum(e, 1, keepdims=True))
    compiled = qidao.compile(g.module())
    (got,) = compiled(x, w, m)
    z = np.where(m, x.astype(np.float64) @ w, -np.inf)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, z / z.sum(axis=1, keepdims=True), atol=2e-6)
    assert compiled.stats["kernels"] == 2, compiled.ir("tg")
