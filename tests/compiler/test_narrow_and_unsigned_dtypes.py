"""The narrow and unsigned dtypes end to end against NumPy: uint8/16/32/64, int8/16
and float16.

Integers: wraparound, unsigned division (``x / 0 = 0``) and comparisons above the
signed range, ``neg``/``abs``/``relu`` as NumPy's. float16: every op computes in
float32 and rounds its result to float16 once (NumPy's float16 ufuncs), so ``+ - *
/`` and ``sqrt`` match NumPy bit for bit; casts in both directions, f64 -> f16
rounding once. Each graph is compiled with ``qidao.compile`` and compared with
NumPy and with ``numpy_eval`` (the reference semantics fold-constants uses); the
big kernels go through the default schedules with two threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.fold_constants import FoldConstantsPass
from qidao.runtime.errors import ArgumentError

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(2)
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
SIGNED = ("int8", "int16")
INTS = (*UNSIGNED, *SIGNED)
ALL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", *UNSIGNED)


def ints(dtype: str, *shape: int) -> Array:
    """Random integers over the whole range, the interesting ones first: 0, 1, the
    extremes, and (unsigned) values above the signed maximum."""
    info = np.iinfo(dtype)
    special = [0, 1, 7, info.max, info.min, info.max - 1, info.max // 2 + 1]
    if info.min < 0:
        special += [-1, -7, info.min + 1]
    values = RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = values.reshape(-1)
    flat[: min(len(special), flat.size)] = np.array(special, dtype)[: flat.size]
    return flat.reshape(shape)


def halves(*shape: int) -> Array:
    """Random float16 values, the special ones first."""
    special = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 65504.0, 6e-8, -2e-5]
    values = (RNG.standard_normal(shape) * 8).astype(np.float16).reshape(-1)
    values[: min(len(special), values.size)] = np.array(special, np.float16)[
        : values.size
    ]
    return values.reshape(shape)


def assert_same(got: Array, want: Array, ulps: int = 0) -> None:
    """Same dtype and shape; equal values (floats within ``ulps``, NaN where NaN)."""
    assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    if np.issubdtype(want.dtype, np.floating):
        both_nan = np.isnan(got) & np.isnan(want)
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(all="ignore"):
            close = (g == w) | (np.abs(g - w) <= ulps * np.spacing(np.abs(want)))
        bad = ~(close | both_nan)
    else:
        bad = got != want
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at {index}: got {got[index]!r}, expected {want[index]!r} "
            f"({int(bad.sum())} of {bad.size} differ)"
        )


def build(
    fn: Callable[..., Value | tuple[Value, ...]], *inputs: Array
) -> tuple[Graph, Any]:
    g = Graph("main")
    values = [g.input(f"x{k}", a.shape, a.dtype.name) for k, a in enumerate(inputs)]
    outputs = fn(g, *values)
    g.output(*(outputs if isinstance(outputs, tuple) else (outputs,)))
    return g, g.module()


def run(
    fn: Callable[..., Value | tuple[Value, ...]], *inputs: Array, ulps: int = 0
) -> list[Array]:
    """Compile ``fn(g, *input values)`` and run it; the reference semantics
    (``numpy_eval``) must agree with the compiled code."""
    _, module = build(fn, *inputs)
    main = module.body.block.first_op
    with np.errstate(all="ignore"):
        reference = evaluate_function(main, inputs)  # type: ignore[arg-type]
    got: list[Array] = qidao.compile(module)(*inputs)
    for got_, want in zip(got, reference, strict=True):
        assert_same(got_, want, ulps)
    return got


# ---- integer arithmetic -----------------------------------------------------------


def _div(a: Array, b: Array) -> Array:
    """tg.div on integers, in Python integers: truncation toward zero, x / 0 = 0,
    wrapped to the dtype."""
    a, b = np.broadcast_arrays(a, b)
    info = np.iinfo(a.dtype)
    span = 2 ** (a.dtype.itemsize * 8)
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True):
        q = 0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        out.append((q - info.min) % span + info.min)
    return np.array(out, a.dtype).reshape(a.shape)


INT_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _div,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_integer_binary_ops_wrap_and_broadcast(op: str, dtype: str) -> None:
    a, b = ints(dtype, 3, 12), ints(dtype, 12)[::-1].copy()
    b[2] = 0  # x / 0
    if dtype in SIGNED:
        b[3] = -1  # MIN / -1
    (got,) = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    with np.errstate(all="ignore"):
        assert_same(got, INT_BINARY[op](a, b).astype(dtype))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unsigned_division_reads_the_bits_unsigned(dtype: str) -> None:
    """The largest values divide as unsigned (a signed divide would see -1)."""
    top = np.iinfo(dtype).max
    a = np.array([top, top, top - 1, 7, 0, top, 5], dtype)
    b = np.array([2, top, 3, 0, 0, 1, top], dtype)
    (got,) = run(lambda g, x, y: g.div(x, y), a, b)
    assert got.tolist() == [top // 2, 1, (top - 1) // 3, 0, 0, top, 0]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_unary_ops_wrap_like_numpy(dtype: str) -> None:
    """neg wraps (unsigned: ``-x = 2^n - x``), abs of MIN is MIN, unsigned abs and
    relu are the identity."""
    x = ints(dtype, 4, 6)
    neg, absolute, relu = run(lambda g, v: (g.neg(v), g.abs(v), g.relu(v)), x)
    with np.errstate(all="ignore"):
        assert_same(neg, np.negative(x))
        assert_same(absolute, np.abs(x))
    assert_same(relu, np.maximum(x, np.zeros((), dtype)))


# ---- comparisons ------------------------------------------------------------------

COMPARE: dict[str, Callable[[Array, Array], Array]] = {
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
}


@pytest.mark.parametrize("dtype", [*INTS, "float16"])
@pytest.mark.parametrize("op", list(COMPARE))
def test_comparisons(op: str, dtype: str) -> None:
    """Unsigned compare unsigned (``200 > 100`` in uint8, where signed bytes would
    say -56 < 100); float16 with NaN, infinities and signed zeros."""
    make = halves if dtype == "float16" else lambda *s: ints(dtype, *s)
    a, b = make(4, 11), make(11)
    (got,) = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    assert_same(got, COMPARE[op](a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_where_and_comparisons_in_one_kernel(dtype: str) -> None:
    """A clamp written as where(x > hi, hi, x): unsigned compare and select fuse."""
    x = ints(dtype, 5, 9)
    hi = np.array(np.iinfo(dtype).max // 3, dtype)
    (got,) = run(lambda g, v: g.where(g.greater(v, g.constant(hi)), hi, v), x)
    assert_same(got, np.where(x > hi, hi, x))


# ---- float16 ----------------------------------------------------------------------

F16_EXACT: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("op", list(F16_EXACT))
def test_float16_binary_ops_round_once_per_op(op: str) -> None:
    """Computed in float32 and rounded to float16: NumPy's float16 result, to the
    bit (float32 has more than 2 * 11 + 2 bits)."""
    a, b = halves(6, 40), halves(40)[::-1].copy()
    (got,) = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    with np.errstate(all="ignore"):
        assert_same(got, F16_EXACT[op](a, b))


def test_float16_chains_round_after_every_op() -> None:
    """(a * b + c) / d rounds three times, as NumPy's float16 ufuncs do (not once
    at the end, which a fused float32 chain would)."""
    a, b, c, d = (halves(64) for _ in range(4))
    (got,) = run(lambda g, w, x, y, z: (w * x + y) / z, a, b, c, d)
    with np.errstate(all="ignore"):
        assert_same(got, (a * b + c) / d)


def test_float16_unary_ops() -> None:
    """sqrt, neg, abs, relu exact; exp, log, tanh, sigmoid, erf, sin, cos within one
    float16 ulp of NumPy (float32 math rounded to float16)."""
    x = halves(8, 16)
    exact = run(lambda g, v: (g.sqrt(v), g.neg(v), g.abs(v), g.relu(v)), x)
    with np.errstate(all="ignore"):
        want = [np.sqrt(x), -x, np.abs(x), np.maximum(x, np.float16(0))]
        for got_, want_ in zip(exact, want, strict=True):
            assert_same(got_, want_)
        approx = run(
            lambda g, v: (
                *(g.exp(v), g.log(v), g.tanh(v), g.sigmoid(v), g.erf(v)),
                *(g.sin(v), g.cos(v)),
            ),
            x,
            ulps=1,
        )
        assert_same(approx[0], np.exp(x), ulps=1)
        assert_same(approx[1], np.log(x), ulps=1)
        assert_same(approx[2], np.tanh(x), ulps=1)
        assert_same(approx[5], np.sin(x), ulps=1)
        assert_same(approx[6], np.cos(x), ulps=1)


def test_float16_pow() -> None:
    base = np.abs(halves(30)) + np.float16(0.5)
    exponent = (RNG.standard_normal(30) * 2).astype(np.float16)
    (got,) = run(lambda g, x, y: g.pow(x, y), base, exponent, ulps=1)
    with np.errstate(all="ignore"):
        assert_same(got, np.power(base, exponent), ulps=1)


def test_float16_accumulating_ops_compute_in_float32() -> None:
    """matmul, reductions and softmax on float16 take float32 inside and round
    once (softmax: each step of its formula rounded, as NumPy's)."""
    x = (RNG.standard_normal((8, 24)) / 2).astype(np.float16)
    w = (RNG.standard_normal((24, 5)) / 2).astype(np.float16)
    mm, total, top, soft = qidao.compile(
        build(
            lambda g, a, b: (
                g.matmul(a, b),
                g.reduce_sum(a, 1),
                g.reduce_max(a, 0),
                g.softmax(a, 1),
            ),
            x,
            w,
        )[1]
    )(x, w)
    want = (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16)
    assert_same(mm, want, ulps=1)
    assert_same(total, x.astype(np.float32).sum(1).astype(np.float16), ulps=1)
    assert_same(top, x.max(0))
    e = np.exp(x - x.max(1, keepdims=True))
    assert_same(soft, e / e.sum(1, keepdims=True, dtype=np.float32).astype(e.dtype), 1)


# ---- casts ------------------------------------------------------------------------


def _cast_source(source: str, target: str) -> Array:
    """Values every cast from ``source`` to ``target`` defines: no NaN and nothing
    outside an integer target's range for a float source (integer to integer
    wraps, as NumPy's)."""
    if source == "bool":
        return np.array([True, False, True, True, False, False, True])
    if source.startswith(("int", "uint")):
        return ints(source, 16)
    values = [0.0, -0.0, 2.7, 1.5, 100.9, 126.5, 0.5, 3.0]
    if target in ("bool",) or target.startswith("float"):
        values += [-2.7, -100.5, 1e4 + 0.5, -3e4, 65504.0]
    elif target.startswith("int"):
        values += [-2.7, -100.5, -127.9]
    return np.array(values, source)


@pytest.mark.parametrize("source", [*ALL, "bool"])
@pytest.mark.parametrize("target", [*ALL, "bool"])
def test_cast_is_numpy_astype(source: str, target: str) -> None:
    """float to int truncates, int to int wraps or extends (zero-extending
    unsigned), unsigned to float reads the bits unsigned, anything to bool is
    ``!= 0``, f16 <-> f32/f64 rounds to nearest even."""
    x = _cast_source(source, target)
    (got,) = run(lambda g, v: g.cast(v, target), x)
    with np.errstate(all="ignore"):
        assert_same(got, x.astype(target))


def test_cast_float64_to_float16_rounds_once() -> None:
    """Halfway cases of float16 a hair off in float64: rounding to float32 first
    and then to float16 would land on the midpoint and round to even; qidao's cast
    (round to odd in float32 first) gives the correctly rounded float16, as NumPy's
    ``astype``."""
    h = (RNG.standard_normal(4000) * 100).astype(np.float16).astype(np.float64)
    h = h[np.isfinite(h) & (h != 0)]
    ulp = np.spacing(h.astype(np.float16)).astype(np.float64)
    nudge = RNG.choice([-1.0, 1.0], h.size) * np.abs(h) * 2.0**-40
    x = np.concatenate([h + ulp / 2 + nudge, h - ulp / 2 + nudge, [1e300, -1e-300]])
    (got,) = run(lambda g, v: g.cast(v, "float16"), x)
    with np.errstate(over="ignore"):  # 1e300 -> inf, on purpose
        expected = x.astype(np.float16)
    assert_same(got, expected)


def test_cast_uint64_to_floats_above_the_signed_range() -> None:
    """uint64 values >= 2^63 convert as unsigned (LLVM's convert is signed: qidao
    halves, keeps the lost bit sticky, and doubles)."""
    x = np.array(
        [2**64 - 1, 2**63, 2**63 + 2**40 + 1, 2**63 + 1025, 2**53 + 1, 5, 0], np.uint64
    )
    got = run(lambda g, v: (g.cast(v, "float32"), g.cast(v, "float64")), x)
    assert_same(got[0], x.astype(np.float32))
    assert_same(got[1], x.astype(np.float64))


# ---- constants, folding, arguments ------------------------------------------------


@pytest.mark.parametrize("dtype", [*INTS, "float16"])
def test_constants_and_fold_constants(dtype: str) -> None:
    """Non-splat constants become globals of the dtype's bytes; a constant-only
    subgraph folds through numpy_eval to the same values the kernel computes."""
    c = halves(6) if dtype == "float16" else ints(dtype, 6)
    d = halves(6) if dtype == "float16" else ints(dtype, 6)
    g = Graph("main")
    x = g.input("x", (6,), dtype)
    folded = g.maximum(g.constant(c), g.constant(d)) * g.constant(d)
    g.output(x + g.constant(c), folded)
    module = g.module()
    FoldConstantsPass().apply(None, module)  # type: ignore[arg-type]
    assert "tg.mul" not in str(module), str(module)
    arg = halves(6) if dtype == "float16" else ints(dtype, 6)
    got = qidao.compile(module)(arg)
    with np.errstate(all="ignore"):
        assert_same(got[0], arg + c)
        assert_same(got[1], np.maximum(c, d) * d)


@pytest.mark.parametrize("dtype", [*INTS, "float16"])
def test_arguments_are_checked_for_their_dtype(dtype: str) -> None:
    g = Graph("main")
    g.output(g.input("x", (3,), dtype) + 1)
    compiled = qidao.compile(g.module())
    other = "int8" if dtype == "uint8" else "uint8"
    with pytest.raises(
        ArgumentError, match=rf"input 'x' \(#0\).*dtype {dtype}, got dtype {other}"
    ):
        compiled(np.zeros(3, other))


# ---- big kernels: default schedules, threads, vectorize ---------------------------


@pytest.mark.parametrize("dtype", ["uint8", "float16"])
def test_big_elementwise_kernels_through_the_default_schedule(dtype: str) -> None:
    """2^20 elements, two threads: the default elementwise schedule makes the outer
    loop parallel, LLVM vectorizes the rest; every element matches NumPy."""
    n = 1 << 20

    def on_bytes(g: Graph, x: Value, y: Value) -> Value:
        return g.where(g.greater(x, y), x - y, g.div(x * y, g.maximum(y, 1)))

    def on_halves(g: Graph, x: Value, y: Value) -> Value:
        return g.relu(x * y + x) / (g.abs(y) + 1.0)

    if dtype == "uint8":
        a, b = ints(dtype, 1024, n // 1024), ints(dtype, n // 1024)
        want = np.where(a > b, a - b, (a * b) // np.maximum(b, np.uint8(1)))
        fn = on_bytes
    else:
        a, b = halves(1024, n // 1024), halves(n // 1024)
        with np.errstate(all="ignore"):
            want = np.maximum(a * b + a, np.float16(0)) / (np.abs(b) + np.float16(1))
        fn = on_halves
    _, module = build(fn, a, b)
    compiled = qidao.compile(module, threads=2)
    (got,) = compiled(a, b)
    assert_same(got, want)
    report = compiled.stats["default_schedule"]
    assert any("parallel" in str(v) or "threads" in str(v) for v in report.values()), (
        report
    )


def test_vectorize_computes_float16_in_float32_lanes() -> None:
    """vectorize takes an f16 kernel: vector<16xf16> loads, extf to f32 lanes, the
    math, truncf back."""
    a, b = halves(8, 67), halves(67)
    _, module = build(lambda g, x, y: g.sqrt(g.abs(x * y)) + x, a, b)
    kernel = next(iter(Schedule.for_model(module.clone()).kernels()))

    def schedule(s: Schedule) -> None:
        s.vectorize(kernel, "i1", 16)

    compiled = qidao.compile(module, schedule=schedule)
    scheduled = compiled.ir("schedule")
    assert "vector<16xf16>" in scheduled and "arith.extf" in scheduled, scheduled
    (got,) = compiled(a, b)
    with np.errstate(all="ignore"):
        assert_same(got, np.sqrt(np.abs(a * b)) + a)


def test_vectorize_refuses_integer_kernels_with_a_reason() -> None:
    _, module = build(lambda g, x: x + 1, ints("uint8", 4, 32))
    s = Schedule.for_model(module)
    kernel = next(iter(s.kernels()))
    with pytest.raises(IllegalScheduleError, match="only float elements"):
        s.vectorize(kernel, "i1", 16)
