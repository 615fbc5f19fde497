"""ONNX on dtypes beyond float32: comparisons, logical ops, Where, Cast/CastLike,
Pow, Mod, Sign, IsNaN/IsInf, integer arithmetic, float64, bool and integer graph
inputs and outputs (``qidao/frontend/onnx/logic.py`` and friends).

Each model is compiled with ``qidao.compile`` and run on the CPU; its outputs are
compared with ``onnx.reference.ReferenceEvaluator`` on the same inputs (dtype,
shape and values). Refusals are checked for their message.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao import Compiled
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def model_of(
    nodes: list[Any],
    inputs: dict[str, Array],
    outputs: dict[str, int],
    initializers: dict[str, Array] | None = None,
    opset: int = 18,
) -> Any:
    """A model whose graph inputs have the dtypes and shapes of ``inputs``."""
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in inputs.items()
        ],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(model: Any, inputs: dict[str, Array], rtol: float = 1e-6) -> list[Array]:
    """qidao's outputs equal the reference's: dtype, shape, values (NaN where NaN)."""
    with np.errstate(all="ignore"):
        expected = ReferenceEvaluator(model).run(None, inputs)
    compiled = qidao.compile(model)
    got = compiled(*inputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        e = np.asarray(e)
        assert g.dtype == e.dtype, f"dtype {g.dtype}, expected {e.dtype}"
        assert g.shape == e.shape
        if np.issubdtype(e.dtype, np.floating):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=0, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, e)
    return got


def floats(dtype: Any, *shape: int) -> Array:
    special = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 2.5], dtype)
    values = RNG.standard_normal(shape).astype(dtype).reshape(-1)
    values[: min(special.size, values.size)] = special[: values.size]
    return values.reshape(shape)


def ints(dtype: Any, *shape: int) -> Array:
    return RNG.integers(-9, 10, size=shape).astype(dtype)


# ---- comparisons and logic ----------------------------------------------------------


@pytest.mark.parametrize(
    "op", ["Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal"]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_comparisons(op: str, dtype: Any) -> None:
    make = floats if np.issubdtype(dtype, np.floating) else ints
    inputs = {"a": make(dtype, 3, 8), "b": make(dtype, 8)}
    model = model_of(
        [helper.make_node(op, ["a", "b"], ["y"])], inputs, {"y": TensorProto.BOOL}
    )
    check(model, inputs)


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Equal"])
def test_logical_ops_on_bools(op: str) -> None:
    inputs = {"a": RNG.random((2, 5)) > 0.5, "b": RNG.random(5) > 0.5}
    model = model_of(
        [helper.make_node(op, ["a", "b"], ["y"])], inputs, {"y": TensorProto.BOOL}
    )
    check(model, inputs)


def test_not_and_where_with_a_computed_condition() -> None:
    inputs = {"x": floats(np.float32, 4, 6), "m": RNG.random(6) > 0.5}
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("Not", ["m"], ["not_m"]),
        helper.make_node("Or", ["pos", "not_m"], ["c"]),
        helper.make_node("Where", ["c", "x", "fill"], ["y"]),
    ]
    inits = {"zero": np.array(0.0, np.float32), "fill": np.array([-1.0], np.float32)}
    model = model_of(nodes, inputs, {"y": TensorProto.FLOAT}, inits)
    check(model, inputs)


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.bool_])
def test_where_on_other_dtypes(dtype: Any) -> None:
    inputs = {
        "c": RNG.random((3, 1)) > 0.5,
        "x": (RNG.standard_normal(4) * 5).astype(dtype),
        "y": (RNG.standard_normal((3, 4)) * 5).astype(dtype),
    }
    out = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of(
        [helper.make_node("Where", ["c", "x", "y"], ["z"])], inputs, {"z": out}
    )
    check(model, inputs)


def test_is_nan_and_is_inf() -> None:
    inputs = {"x": floats(np.float32, 16)}
    nodes = [
        helper.make_node("IsNaN", ["x"], ["nan"]),
        helper.make_node("IsInf", ["x"], ["inf"]),
        helper.make_node("IsInf", ["x"], ["pos"], detect_negative=0),
        helper.make_node("IsInf", ["x"], ["neg"], detect_positive=0),
    ]
    outputs = dict.fromkeys(["nan", "inf", "pos", "neg"], TensorProto.BOOL)
    check(model_of(nodes, inputs, outputs, opset=20), inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_sign(dtype: Any) -> None:
    make = floats if np.issubdtype(dtype, np.floating) else ints
    inputs = {"x": make(dtype, 16)}
    out = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    check(
        model_of([helper.make_node("Sign", ["x"], ["y"])], inputs, {"y": out}), inputs
    )


# ---- integer arithmetic, float64 ----------------------------------------------------


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_binary_arithmetic(op: str, dtype: Any) -> None:
    if np.issubdtype(dtype, np.integer):
        a, b = ints(dtype, 3, 5), ints(dtype, 5)
        b[b == 0] = 3  # ONNX leaves integer division by zero undefined
    else:
        a, b = floats(dtype, 3, 5), floats(dtype, 5)
    inputs = {"a": a, "b": b}
    out = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of([helper.make_node(op, ["a", "b"], ["y"])], inputs, {"y": out})
    check(model, inputs)


@pytest.mark.parametrize("op", ["Neg", "Abs", "Relu"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_unary_integer_arithmetic(op: str, dtype: Any) -> None:
    inputs = {"x": ints(dtype, 12)}
    out = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    check(model_of([helper.make_node(op, ["x"], ["y"])], inputs, {"y": out}), inputs)


def test_clip_on_integers() -> None:
    inputs = {"x": ints(np.int64, 12)}
    inits = {"lo": np.array(-3, np.int64), "hi": np.array(4, np.int64)}
    model = model_of(
        [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
        inputs,
        {"y": TensorProto.INT64},
        inits,
    )
    check(model, inputs)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_mod_takes_the_sign_of_fmod(fmod: int, dtype: Any) -> None:
    inputs = {
        "a": np.array([7, -7, 7, -7, 0, 9, -9, 4], dtype),
        "b": np.array([3, 3, -3, -3, 5, 4, -4, 2], dtype),
    }
    out = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of(
        [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], inputs, {"y": out}
    )
    check(model, inputs)


def test_float_mod_of_runtime_tensors_is_tg_fmod() -> None:
    """Checked against ONNX's reference in ``test_float_mod.py``."""
    inputs = {"a": floats(np.float32, 4), "b": floats(np.float32, 4)}
    model = model_of(
        [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
        inputs,
        {"y": TensorProto.FLOAT},
    )
    assert "tg.fmod" in str(import_onnx(model))


def test_float64_composition_keeps_its_dtype() -> None:
    """Scalars in compositions take the tensor's dtype: a float64 HardSigmoid and
    LeakyRelu stay float64."""
    inputs = {"x": floats(np.float64, 12)}
    nodes = [
        helper.make_node("HardSigmoid", ["x"], ["h"]),
        helper.make_node("LeakyRelu", ["h"], ["y"], alpha=0.1),
    ]
    check(model_of(nodes, inputs, {"y": TensorProto.DOUBLE}), inputs)


# ---- Cast, CastLike, Pow ------------------------------------------------------------

CAST_TYPES = {
    TensorProto.FLOAT: np.float32,
    TensorProto.DOUBLE: np.float64,
    TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64,
    TensorProto.BOOL: np.bool_,
}


def _cast_input(dtype: Any) -> Array:
    if dtype is np.bool_:
        return np.array([True, False, True, False, True, True])
    if np.issubdtype(dtype, np.floating):
        return np.array([0.0, -0.0, 2.7, -2.7, 1e6 + 0.5, -3e4], dtype)
    return np.array([0, 1, -1, 123456, -5, 77], dtype)


@pytest.mark.parametrize("source", list(CAST_TYPES), ids=str)
@pytest.mark.parametrize("target", list(CAST_TYPES), ids=str)
def test_cast_between_the_dtypes_tg_has(source: int, target: int) -> None:
    inputs = {"x": _cast_input(CAST_TYPES[source])}
    model = model_of(
        [helper.make_node("Cast", ["x"], ["y"], to=target)], inputs, {"y": target}
    )
    check(model, inputs)


def test_castlike_of_a_runtime_tensor() -> None:
    inputs = {"x": _cast_input(np.float64)}
    model = model_of(
        [helper.make_node("CastLike", ["x", "like"], ["y"])],
        inputs,
        {"y": TensorProto.INT32},
        {"like": np.zeros(1, np.int32)},
    )
    check(model, inputs)


def test_cast_to_a_dtype_tg_lacks_is_refused_by_name() -> None:
    inputs = {"x": _cast_input(np.float32)}
    model = model_of(
        [
            helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT8E8M0),
            helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT),
        ],
        inputs,
        {"y": TensorProto.FLOAT},
        opset=24,  # float8e8m0 is new in opset 24
    )
    with pytest.raises(
        OnnxImportError, match=r"to TensorProto\.FLOAT8E8M0 is not supported"
    ):
        import_onnx(model)


@pytest.mark.parametrize(
    ("base", "exponent"),
    [
        (np.float32, np.float32),
        (np.float64, np.float64),
        (np.float32, np.int64),
        (np.int64, np.int64),
        (np.int32, np.float32),
    ],
)
def test_pow_with_a_runtime_exponent_of_any_dtype(base: Any, exponent: Any) -> None:
    """The result has the base's dtype (the reference's ``astype``); an integer
    base computes in float64 and truncates."""
    if np.issubdtype(base, np.floating):
        x = np.array([-2.0, -2.0, 0.5, 3.0, 0.0, np.nan, 1.0, 4.0], base)
    else:
        x = np.array([-2, 3, 5, 0, 1, -1, 7, 2], base)
    e = np.array([3, 2, 1, 4, 0, 0, 5, 1], exponent)
    if np.issubdtype(exponent, np.floating):
        e = (e + np.array([0, 0, -2.5, 0, 0, 0, 0, 0.25])).astype(exponent)
    inputs = {"x": x, "e": e}
    out = helper.np_dtype_to_tensor_dtype(np.dtype(base))
    model = model_of([helper.make_node("Pow", ["x", "e"], ["y"])], inputs, {"y": out})
    check(model, inputs, rtol=2e-6)


# ---- graph inputs and outputs of every dtype ------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.bool_])
def test_identity_on_every_dtype_compiles_ahead_of_time(dtype: Any) -> None:
    inputs = {"x": np.array([1, 0, 1, 1], dtype)}
    out = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of([helper.make_node("Identity", ["x"], ["y"])], inputs, {"y": out})
    assert isinstance(qidao.compile(model), Compiled)
    check(model, inputs)


def test_shape_and_constant_of_shape_give_integer_outputs() -> None:
    inputs = {"x": floats(np.float32, 2, 3, 4)}
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], start=1),
        helper.make_node(
            "ConstantOfShape",
            ["s"],
            ["c"],
            value=helper.make_tensor("v", TensorProto.INT32, [1], [7]),
        ),
    ]
    outputs = {"s": TensorProto.INT64, "c": TensorProto.INT32}
    shape, filled = check(model_of(nodes, inputs, outputs), inputs)
    assert shape.tolist() == [3, 4] and filled.shape == (3, 4)


# ---- compositions with where: Trilu, ArgMax/ArgMin, Hardmax, OneHot, EyeLike ----------


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_trilu(upper: int, k: int) -> None:
    inputs = {"x": ints(np.int64, 2, 3, 5)}
    model = model_of(
        [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
        inputs,
        {"y": TensorProto.INT64},
        {"k": np.array(k, np.int64)},
    )
    check(model, inputs)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-(2**63), -6, 7, 2**63 - 1])
def test_trilu_with_k_beyond_the_corners(upper: int, k: int) -> None:
    """Issue 12, R11: a k past the matrix's corners keeps all or nothing (k = -2^63
    overflowed NumPy's triu)."""
    x = ints(np.int64, 2, 3, 5)
    model = model_of(
        [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
        {"x": x},
        {"y": TensorProto.INT64},
        {"k": np.array(k, np.int64)},
    )
    (got,) = qidao.compile(model)(x)
    keep_all = (k < 0) == bool(upper)
    np.testing.assert_array_equal(got, x if keep_all else np.zeros_like(x))


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_arg_max_and_min_find_the_first_or_last(
    op: str, last: int, keepdims: int
) -> None:
    """Ties (small integers) and a NaN slice: NumPy's index, first or last."""
    x = RNG.integers(-2, 3, size=(3, 6, 4)).astype(np.float32)
    x[1, 2, 0] = np.nan
    inputs = {"x": x}
    model = model_of(
        [
            helper.make_node(
                op, ["x"], ["y"], axis=1, keepdims=keepdims, select_last_index=last
            )
        ],
        inputs,
        {"y": TensorProto.INT64},
    )
    check(model, inputs)


def test_arg_max_of_integers() -> None:
    inputs = {"x": ints(np.int32, 4, 5)}
    model = model_of(
        [helper.make_node("ArgMax", ["x"], ["y"], axis=-1)],
        inputs,
        {"y": TensorProto.INT64},
    )
    check(model, inputs)


def test_hardmax() -> None:
    inputs = {"x": RNG.integers(-2, 3, size=(2, 3, 4)).astype(np.float32)}
    model = model_of(
        [helper.make_node("Hardmax", ["x"], ["y"])], inputs, {"y": TensorProto.FLOAT}
    )
    check(model, inputs)


def test_hardmax_before_opset_13_coerces_to_2d() -> None:
    """Opset 11: the first maximum of each row of ``x.reshape(2, 12)`` (the
    reference evaluator implements only opset 13's rule)."""
    x = RNG.integers(-2, 3, size=(2, 3, 4)).astype(np.float32)
    model = model_of(
        [helper.make_node("Hardmax", ["x"], ["y"])],
        {"x": x},
        {"y": TensorProto.FLOAT},
        opset=11,
    )
    rows = x.reshape(2, 12)
    want = np.zeros_like(rows)
    want[np.arange(2), rows.argmax(axis=1)] = 1
    (got,) = qidao.compile(model)(x)
    np.testing.assert_array_equal(got, want.reshape(x.shape))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_with_negative_indices_and_runtime_values(axis: int) -> None:
    inputs = {
        "i": np.array([[0, -1, 3], [2, 7, -4]], np.int64),  # 7 is out of range
        "v": np.array([-2.0, 5.0], np.float32),
    }
    model = model_of(
        [helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=axis)],
        inputs,
        {"y": TensorProto.FLOAT},
        {"depth": np.array(4, np.int64)},
    )
    check(model, inputs)


def test_eye_like_is_a_constant_of_the_asked_dtype() -> None:
    inputs = {"x": floats(np.float32, 3, 5)}
    model = model_of(
        [helper.make_node("EyeLike", ["x"], ["y"], k=1, dtype=TensorProto.INT32)],
        inputs,
        {"y": TensorProto.INT32},
    )
    check(model, inputs)
