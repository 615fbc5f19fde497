"""The storage-only dtypes end to end against ``ml_dtypes``: bfloat16, the float8s
(e4m3fn, e4m3fnuz, e5m2, e5m2fnuz), float4_e2m1fn and int4, uint4, int2, uint2.

Casts compile to integer code (``qidao/passes/kernels/lowering/low_precision.py``)
and must give ``ml_dtypes``' ``astype`` bit for bit: every code of each small
format both ways, the midpoints between neighbouring codes (round to nearest even)
and a hair off them, subnormals, overflow, infinities, NaN and -0, from float32,
float16 and float64 (rounded once) and from integers. ONNX's ``saturate`` is
checked against ``onnx.numpy_helper.saturate_cast``. Other ops refuse the types
in tg; the ONNX importer computes them in float32 (int8/uint8), rounding each
node's result once, which is ``ml_dtypes``' own bfloat16 arithmetic.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError, OnnxImportError
from qidao.runtime.errors import ArgumentError

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(7)
SMALL_FLOATS = (
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float4_e2m1fn",
)
SMALL_INTS = ("int4", "uint4", "int2", "uint2")


def cast(x: Array, target: str, saturate: bool = False, payload: bool = True) -> Array:
    """``x`` cast to ``target`` by a compiled ``tg.cast`` (:func:`casts`)."""
    return casts(x, [target], saturate, payload)[0]


def casts(
    x: Array, targets: list[str], saturate: bool = False, payload: bool = True
) -> list[Array]:
    """``x`` cast to each of ``targets`` by one compiled graph; ``numpy_eval`` (the
    reference semantics fold-constants uses) must give the same bits."""
    g = Graph("main")
    v = g.input("x", x.shape, x.dtype.name)
    g.output(*(g.cast(v, t, saturate=saturate) for t in targets))
    module = g.module()
    got: list[Array] = qidao.compile(module)(x)
    with np.errstate(all="ignore"):
        reference = evaluate_function(module.body.block.first_op, [x])  # type: ignore[arg-type]
    for got_, want in zip(got, reference, strict=True):
        assert_bits(got_, want, payload)
    return got


def bits(a: Array) -> Array:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def assert_bits(got: Array, want: Array, payload: bool = True) -> None:
    """Same dtype, shape and bits (NaN included; only its sign where not
    ``payload``)."""
    assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape
    bad = bits(got) != bits(want)
    if not payload:
        g, w = got.astype(np.float64), want.astype(np.float64)
        same_nan = np.isnan(g) & np.isnan(w) & (np.signbit(g) == np.signbit(w))
        bad &= ~same_nan
    if bad.any():
        k = int(np.argmax(bad))
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} differ, first at {k}: got "
            f"{hex(int(bits(got)[k]))}, expected {hex(int(bits(want)[k]))} "
            f"(for {got.dtype})"
        )


def astype(x: Array, target: str) -> Array:
    with np.errstate(all="ignore"):
        return x.astype(target)


def every_code(dtype: str) -> Array:
    """Every value of a small format: all 256 (or 16) bit patterns."""
    count = 16 if dtype == "float4_e2m1fn" else 256
    return np.arange(count, dtype=np.uint8).view(dtype)


def probes(dtype: str) -> Array:
    """float32 values around every code of ``dtype``: the codes, the midpoints
    between neighbours, a hair off each, beyond the largest finite value,
    f32 subnormals, infinities, NaN and -0."""
    values = every_code(dtype).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mid = (finite[1:] + finite[:-1]) / 2
    top = finite[-1]
    edges = [top * 1.01, top * 1.5, top * 2, 1e30, 3e38, 1e-30, 1e-45]
    x = np.concatenate([finite, mid, mid * (1 + 2**-20), mid * (1 - 2**-20), edges])
    x = np.concatenate([x, -x, [np.inf, -np.inf, np.nan, -np.nan]])
    return x.astype(np.float32)


@pytest.mark.parametrize("dtype", SMALL_FLOATS)
def test_small_floats_decode_every_code_exactly(dtype: str) -> None:
    """Every code to float32, float16 and float64: the exact value (NaN as
    ``ml_dtypes`` writes it, with its sign)."""
    codes = every_code(dtype)
    targets = ["float32", "float16", "float64"]
    for got, target in zip(casts(codes, targets), targets, strict=True):
        assert_bits(got, astype(codes, target))


@pytest.mark.parametrize("dtype", SMALL_FLOATS)
def test_small_floats_round_float32_to_nearest_even(dtype: str) -> None:
    """Ties go to the even code, a hair off them to the nearer one; subnormals;
    overflow to infinity (e5m2), NaN (e4m3fn, fnuz) or the largest value (f4)."""
    x = probes(dtype)
    assert_bits(cast(x, dtype), astype(x, dtype))


@pytest.mark.parametrize("dtype", SMALL_FLOATS)
def test_small_floats_from_float16_and_float64_round_once(dtype: str) -> None:
    """Every float16 bit pattern; float64 values a hair off the midpoints, which
    rounding to float32 first (to nearest) would put on them."""
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    assert_bits(cast(halves, dtype), astype(halves, dtype))
    x = probes(dtype).astype(np.float64)
    nudged = np.concatenate([x * (1 + 2**-40), x * (1 - 2**-40), x])
    assert_bits(cast(nudged, dtype), astype(nudged, dtype))


@pytest.mark.parametrize("source", SMALL_FLOATS)
def test_small_floats_convert_among_themselves(source: str) -> None:
    """Every code of ``source`` to each other format (through float32, exact)."""
    codes = every_code(source)
    targets = [t for t in (*SMALL_FLOATS, "bfloat16") if t != source]
    for got, target in zip(casts(codes, targets), targets, strict=True):
        assert_bits(got, astype(codes, target))


def test_bfloat16_both_ways() -> None:
    """Every bfloat16 to float32 and float64; random float32 bit patterns (NaN
    payloads too) and every float16 to bfloat16, rounded to nearest even."""
    every = np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    wide = casts(every, ["float32", "float64"])
    assert_bits(wide[0], astype(every, "float32"))
    assert_bits(wide[1], astype(every, "float64"))
    # to float16 through float32: a NaN keeps payload bits NumPy's conversion drops
    want = astype(every, "float16")
    assert_bits(cast(every, "float16", payload=False), want, payload=False)
    patterns = RNG.integers(0, 1 << 32, 1 << 16, dtype=np.uint32)
    ties = (patterns & ~np.uint32(0xFFFF)) | np.uint32(0x8000)  # exact midpoints
    x = np.concatenate([patterns, ties]).view(np.float32)
    assert_bits(cast(x, "bfloat16"), astype(x, "bfloat16"))
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    assert_bits(cast(halves, "bfloat16"), astype(halves, "bfloat16"))
    with np.errstate(invalid="ignore"):
        doubles = x.astype(np.float64) * (1 + RNG.choice([-1, 1], x.size) * 2.0**-30)
    assert_bits(cast(doubles, "bfloat16"), astype(doubles, "bfloat16"))


@pytest.mark.parametrize("source", ["int8", "uint8", "int32", "int64", "bool"])
def test_integers_to_low_precision_floats(source: str) -> None:
    """Through float64 (exact), then rounded once: large int32/int64 values too."""
    if source == "bool":
        x = np.array([True, False, True])
    else:
        info = np.iinfo(source)
        x = RNG.integers(info.min, info.max, 4000, dtype=source, endpoint=True)
        x[:6] = [0, 1, info.max, info.min, 17, 300 % (int(info.max) + 1)]
    targets = ["bfloat16", *SMALL_FLOATS]
    for got, target in zip(casts(x, targets), targets, strict=True):
        assert_bits(got, astype(x, target))


@pytest.mark.parametrize("dtype", SMALL_INTS)
def test_small_integers_from_and_to_integers(dtype: str) -> None:
    """From any integer: the low bits (wraps); to any integer: sign- or
    zero-extended; to float, bool; every value of the type."""
    sources = ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"]
    xs = [
        RNG.integers(np.iinfo(t).min, np.iinfo(t).max, 500, dtype=t, endpoint=True)
        for t in sources
    ]
    xs.append(np.array([True, False]))
    g = Graph("main")
    values = [g.input(f"x{k}", x.shape, x.dtype.name) for k, x in enumerate(xs)]
    g.output(*(g.cast(v, dtype) for v in values))
    got = qidao.compile(g.module())(*xs)
    for got_, x in zip(got, xs, strict=True):
        assert_bits(got_, astype(x, dtype))
    every = astype(np.arange(-8, 16), dtype)
    targets = ["int8", "uint8", "int64", "uint16", "float32", "float16", "bool"]
    targets += [t for t in SMALL_INTS if t != dtype]
    for got, target in zip(casts(every, targets), targets, strict=True):
        assert_bits(got, astype(every, target))


@pytest.mark.parametrize("dtype", SMALL_INTS)
def test_small_integers_from_floats_truncate_and_zero_out_of_range(dtype: str) -> None:
    """Truncated toward zero; 0 where that is out of the type's range, NaN and
    infinities too (``ml_dtypes``)."""
    x = np.concatenate([np.arange(-20, 20, 0.25), [np.nan, np.inf, -np.inf, 1e30]])
    for source in ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn"):
        y = astype(x, source)
        assert_bits(cast(y, dtype), astype(y, dtype))


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"])
def test_saturating_casts_are_onnx_saturate_cast(dtype: str) -> None:
    """ONNX Cast's default ``saturate=1``: beyond the largest finite value and
    infinities give that value, NaN stays NaN; from float32, float16, float64."""
    x = probes(dtype)
    for source in ("float32", "float16", "float64", "bfloat16"):
        y = astype(x, source)
        got = cast(y, dtype, saturate=True)
        with np.errstate(all="ignore"):
            want = onnx.numpy_helper.saturate_cast(
                y.astype(np.float64), np.dtype(dtype)
            )
        assert_bits(got, want)


def test_saturate_is_for_float8_targets_only() -> None:
    g = Graph("main")
    x = g.input("x", (3,))
    with pytest.raises(GraphError, match="saturate applies to the float8 dtypes"):
        g.cast(x, "int4", saturate=True)


# ---- graph boundary, constants, views ---------------------------------------------


def test_views_and_constants_keep_the_bits() -> None:
    """A transposed, reshaped bfloat16 input and int4/float8 constants (splat and
    not) reach the outputs bit for bit."""
    h = astype(RNG.standard_normal((3, 4)), "bfloat16")
    c = astype(np.array([[-8, 7, 3], [1, -1, 0]]), "int4")
    f8 = astype(np.full((2, 2), -1.5), "float8_e5m2")
    g = Graph("main")
    x = g.input("x", h.shape, "bfloat16")
    g.output(
        g.reshape(g.transpose(x, [1, 0]), (2, 6)),
        g.cast(g.constant(c), "float32")
        + g.cast(g.input("y", (2, 3), "int4"), "float32"),
        g.cast(g.constant(f8), "float32"),
    )
    y = astype(np.arange(6).reshape(2, 3) - 3, "int4")
    got = qidao.compile(g.module())(h, y)
    assert_bits(got[0], h.T.reshape(2, 6))
    assert_bits(got[1], c.astype(np.float32) + y.astype(np.float32))
    assert_bits(got[2], f8.astype(np.float32))


def test_a_wrong_input_dtype_is_an_argument_error() -> None:
    g = Graph("main")
    g.output(g.cast(g.input("x", (3,), "bfloat16"), "float32"))
    compiled = qidao.compile(g.module())
    with pytest.raises(ArgumentError, match=r"dtype bfloat16, got dtype float16"):
        compiled(np.zeros(3, np.float16))


def test_other_ops_refuse_storage_only_types() -> None:
    g = Graph("main")
    x = g.input("x", (4,), "float8_e4m3fn")
    with pytest.raises(GraphError, match=r"tg.add does not compute on f8E4M3FN"):
        g.add(x, x)


# ---- ONNX: arithmetic in float32, rounded per node ---------------------------------


def onnx_model(nodes: list[Any], inputs: list[Any], output: Any) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_bfloat16_arithmetic_rounds_once_per_node() -> None:
    """(a * b + a) then relu and sqrt, bfloat16 in and out: each node computes in
    float32 and rounds to bfloat16, as ``ml_dtypes``' bfloat16 arithmetic."""
    bf = TensorProto.BFLOAT16
    model = onnx_model(
        [
            helper.make_node("Mul", ["a", "b"], ["m"]),
            helper.make_node("Add", ["m", "a"], ["s"]),
            helper.make_node("Relu", ["s"], ["r"]),
            helper.make_node("Sqrt", ["r"], ["y"]),
        ],
        [helper.make_tensor_value_info(n, bf, [4, 64]) for n in "ab"],
        helper.make_tensor_value_info("y", bf, [4, 64]),
    )
    a = astype(RNG.standard_normal((4, 64)) * 10, "bfloat16")
    b = astype(RNG.standard_normal((4, 64)), "bfloat16")
    (got,) = qidao.compile(model)(a, b)
    assert_bits(got, np.sqrt(np.maximum(a * b + a, astype(np.zeros(()), "bfloat16"))))


def test_int4_and_float8_data_movement_through_onnx() -> None:
    """Transpose and Reshape of int4 (in int8) and of float8 (in float32) tensors:
    the same bits back."""
    for onnx_type, dtype in (
        (TensorProto.INT4, "int4"),
        (TensorProto.FLOAT8E5M2, "float8_e5m2"),
    ):
        shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 5])
        model = onnx_model(
            [
                helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0]),
                helper.make_node("Reshape", ["t", "shape"], ["y"]),
            ],
            [helper.make_tensor_value_info("a", onnx_type, [3, 5])],
            helper.make_tensor_value_info("y", onnx_type, [3, 5]),
        )
        model.graph.initializer.append(shape)
        a = (
            every_code(dtype)[:15].reshape(3, 5)
            if dtype != "int4"
            else astype(RNG.integers(-8, 8, (3, 5)), dtype)
        )
        (got,) = qidao.compile(model)(a)
        assert_bits(got, a.T.reshape(3, 5))


def test_softmax_on_bfloat16_is_refused_by_name() -> None:
    bf = TensorProto.BFLOAT16
    model = onnx_model(
        [helper.make_node("Softmax", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", bf, [2, 3])],
        helper.make_tensor_value_info("y", bf, [2, 3]),
    )
    with pytest.raises(OnnxImportError, match="Softmax on a bfloat16 tensor"):
        qidao.compile(model)
