"""The ONNX converters composed of existing tg ops (``qidao/frontend/onnx/compose.py``).

Each model is compiled with ``qidao.compile`` and run on the CPU, and its outputs are
compared with ``onnx.reference.ReferenceEvaluator`` on the same model, on inputs that
include the special values (signed zeros, infinities, NaN, huge and tiny values) the
compositions must get right. Refusals are checked for their message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)

SPECIAL = np.array(
    [
        *(-np.inf, -1e30, -90.0, -3.0, -1.0, -0.5, -1e-7, -0.0, 0.0, 1e-7),
        *(0.5, 1.0, 1.5, 3.0, 90.0, 1e30, np.inf, np.nan),
    ],
    dtype=np.float32,
)
"""Special values; ``_special`` appends random ones."""


def _special(with_nan: bool = True) -> Array:
    values = SPECIAL if with_nan else SPECIAL[~np.isnan(SPECIAL)]
    noise = RNG.standard_normal(2 * 3 * 4 - values.size % 24).astype(np.float32)
    return np.concatenate([values, noise * 3])


def make_model(
    nodes: list[Any],
    inputs: Mapping[str, Sequence[int]],
    outputs: Sequence[str] = ("y",),
    initializers: Mapping[str, Array] | None = None,
    opset: int = 18,
) -> Any:
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in inputs.items()
        ],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(model: Any, rtol: float = 1e-5, atol: float = 1e-6, **inputs: Array) -> None:
    """qidao's outputs equal the reference's: same shapes, values close, NaN where
    NaN, infinities of the same sign."""
    with np.errstate(all="ignore"):
        expected = ReferenceEvaluator(model).run(None, inputs)
        got = qidao.compile(model)(*inputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)


def unary(op: str, opset: int = 18, **attrs: Any) -> Any:
    return make_model(
        [helper.make_node(op, ["x"], ["y"], **attrs)], {"x": [24]}, opset=opset
    )


# ---- activations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "attrs", "opset"),
    [
        ("LeakyRelu", {}, 18),
        ("LeakyRelu", {"alpha": 0.3}, 18),
        ("LeakyRelu", {"alpha": -2.0}, 18),
        ("HardSigmoid", {}, 18),
        ("HardSigmoid", {"alpha": 0.5, "beta": 0.25}, 18),
        ("HardSwish", {}, 18),
        ("Elu", {}, 18),
        ("Elu", {"alpha": 0.5}, 18),
        ("Selu", {}, 18),
        ("Celu", {"alpha": 2.0}, 18),
        ("Softplus", {}, 18),
        ("Softsign", {}, 18),
        ("Swish", {"alpha": 0.5}, 24),
        ("Sign", {}, 18),
        ("Abs", {}, 18),
        ("Reciprocal", {}, 18),
    ],
)
def test_unary_activations_on_special_values(
    op: str, attrs: dict[str, Any], opset: int
) -> None:
    check(unary(op, opset, **attrs), x=_special())


def test_sign_of_the_smallest_subnormals() -> None:
    tiny = np.array([1e-45, -1e-45, 1e-40, -1e-38, 0.0, -0.0], np.float32)
    check(unary("Sign"), x=np.concatenate([tiny, _special()[: 24 - tiny.size]]))


ROUNDING: dict[str, Callable[[Array], Array]] = {
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.round,
}


@pytest.mark.parametrize("op", list(ROUNDING))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floor_ceil_and_round_are_exact_signed_zeros_included(
    op: str, dtype: type
) -> None:
    """Composed from a truncating cast (``_floor``): equal to NumPy's bit for bit, on
    halves (Round: half to even), both zeros, the largest non-integers, huge values
    (every binade from 2^23 on, up to the largest float: ``_trunc`` scales them
    below 2^62), inf, NaN and random values."""
    edge = float(np.nextafter(dtype(2.0 ** (23 if dtype == np.float32 else 52)), 0))
    x: Array = np.array(
        [-0.0, 0.0, 0.3, -0.3, 2.5, -2.5, 1e-45, -1e-45, 3e9, -3e9, edge, -edge],
        dtype,
    )
    top = np.finfo(dtype).max
    binades = [m * 2.0**e for e in range(23, np.finfo(dtype).maxexp) for m in (1, 1.5)]
    huge: Array = np.array([*binades, top], dtype)
    rng = np.random.default_rng(3)
    halves = rng.integers(-100, 100, 64) / 2
    x = np.concatenate(
        [
            x,
            SPECIAL.astype(dtype),
            halves,
            rng.standard_normal(64) * 10,
            -0.5 - halves,
            huge,
            -huge,
        ]
    ).astype(dtype)
    tp = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", tp, [x.size])],
        [helper.make_tensor_value_info("y", tp, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    (got,) = qidao.compile(model)(x)
    want = ROUNDING[op](x)
    np.testing.assert_array_equal(got, want)
    # a NaN's sign is left open by IEEE 754 (but for neg, abs and copysign) and
    # LLVM may flip it (fmul (fneg x), c -> fmul x, -c): docs/semantics.md
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


def test_sign_of_both_zeros_is_plus_zero() -> None:
    """As NumPy's ``sign``, ONNX's reference and ONNX Runtime: ``1 / sign(-0.0)`` is
    inf (``qidao fuzz --kinds graph --seed 5297`` found -inf)."""
    x = np.array([-0.0, 0.0, np.nan, -2.0, 3.0], np.float32)
    (got,) = qidao.compile(unary("Sign"))(np.concatenate([x, np.zeros(19, np.float32)]))
    np.testing.assert_array_equal(
        np.signbit(got[:5]), [False, False, False, True, False]
    )
    np.testing.assert_array_equal(got[:5], np.sign(x))


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("ThresholdedRelu", {}),
        ("ThresholdedRelu", {"alpha": 0.0}),
        ("ThresholdedRelu", {"alpha": 1.5}),  # 1.5 is among the inputs: not > alpha
        ("Shrink", {}),
        ("Shrink", {"lambd": 1.5}),  # hard shrink
        ("Shrink", {"lambd": 1.0, "bias": 1.0}),  # soft shrink
        ("Shrink", {"lambd": 0.5, "bias": 2.0}),
        ("ThresholdedRelu", {"alpha": -1.0}),
        ("Shrink", {"lambd": -1.0}),
    ],
)
def test_where_activations(op: str, attrs: dict[str, Any]) -> None:
    """Exact, a NaN input included (0, as the reference's ``np.where``)."""
    check(unary(op, **attrs), x=_special())
    x = np.full(24, np.nan, np.float32)
    with np.errstate(all="ignore"):
        (y,) = qidao.compile(unary(op, **attrs))(x)
    np.testing.assert_array_equal(y, np.zeros(24, np.float32))


@pytest.mark.parametrize(
    ("op", "attrs", "message"),
    [
        ("Celu", {"alpha": 0.0}, "alpha must not be 0"),
    ],
)
def test_activation_refusals(op: str, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(OnnxImportError, match=message):
        import_onnx(unary(op, **attrs))


def test_prelu_slope_broadcasts() -> None:
    model = make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["y"])], {"x": [4, 6], "slope": [6]}
    )
    slope = np.array([0.1, -0.5, 0.0, 2.0, 1.0, 0.25], np.float32)
    check(model, x=_special().reshape(4, 6), slope=slope)


@pytest.mark.parametrize("slope", [np.inf, -np.inf, np.nan])
def test_infinite_or_nan_slope_keeps_x_where_x_is_not_negative(slope: float) -> None:
    """LeakyRelu and PRelu are ``x`` for ``x >= 0`` whatever the slope, as the spec
    and ONNX Runtime say (ONNX's reference evaluator gives NaN there: ``0 * inf``)."""
    import onnxruntime as ort

    x = _special().reshape(4, 6)
    leaky = unary("LeakyRelu", alpha=float(slope))
    prelu = make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["y"])],
        {"x": [4, 6]},
        initializers={"slope": np.full([6], slope, np.float32)},
    )
    for model, inputs in ((leaky, x.reshape(24)), (prelu, x)):
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        with np.errstate(all="ignore"):
            (expected,) = session.run(None, {"x": inputs})
        (got,) = qidao.compile(model)(inputs)
        np.testing.assert_array_equal(got, expected)
        keep = ~(inputs < 0)
        np.testing.assert_array_equal(got[keep], inputs[keep])


# ---- Pow, Clip, Sum, Mean ---------------------------------------------------------


@pytest.mark.parametrize("exponent", [0.0, 0.5, 1.0, 2.0, 3.0, -1.0])
def test_pow_with_a_constant_exponent(exponent: float) -> None:
    model = make_model(
        [helper.make_node("Pow", ["x", "e"], ["y"])],
        {"x": [24]},
        initializers={"e": np.array(exponent, np.float32)},
    )
    check(model, x=_special())


def test_pow_with_an_integer_exponent_array() -> None:
    model = make_model(
        [helper.make_node("Pow", ["x", "e"], ["y"])],
        {"x": [4, 6]},
        initializers={"e": np.full((1, 6), 2, np.int64)},
    )
    check(model, x=_special().reshape(4, 6))


@pytest.mark.parametrize(
    "exponent",
    [np.array(1.5, np.float32), np.array([2.0, 3.0, -2.0, 0.5], np.float32)],
)
def test_pow_with_other_constant_exponents(exponent: Array) -> None:
    """Any other constant exponent is ``tg.pow`` (NaN for a negative base and a
    non-integer exponent, as NumPy's ``power``)."""
    model = make_model(
        [helper.make_node("Pow", ["x", "e"], ["y"])],
        {"x": [6, 4]},
        initializers={"e": exponent},
    )
    check(model, rtol=2e-6, x=_special().reshape(6, 4))


def test_pow_with_a_runtime_exponent() -> None:
    model = make_model(
        [helper.make_node("Pow", ["x", "e"], ["y"])], {"x": [24], "e": [24]}
    )
    e = np.resize(np.array([2.0, -1.0, 0.5, 3.0, 0.0, -2.5], np.float32), 24)
    check(model, rtol=2e-6, x=_special(), e=e)
    assert "tg.pow" in qidao.compile(model).ir("tg")


def test_clip_with_constant_and_runtime_bounds() -> None:
    constant = make_model(
        [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
        {"x": [24]},
        initializers={
            "lo": np.array(-1.0, np.float32),
            "hi": np.array(2.0, np.float32),
        },
    )
    check(constant, x=_special())
    runtime_min = make_model(
        [helper.make_node("Clip", ["x", "lo"], ["y"])], {"x": [24], "lo": []}
    )
    check(runtime_min, x=_special(), lo=np.array(0.5, np.float32))
    max_only = make_model(
        [helper.make_node("Clip", ["x", "", "hi"], ["y"])], {"x": [24], "hi": []}
    )
    check(max_only, x=_special(), hi=np.array(-3.0, np.float32))


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_sum_and_mean_broadcast(op: str) -> None:
    model = make_model(
        [helper.make_node(op, ["a", "b", "c"], ["y"])],
        {"a": [2, 3, 4], "b": [3, 1], "c": [4]},
    )
    a = _special().reshape(2, 3, 4)
    b = RNG.standard_normal((3, 1)).astype(np.float32)
    c = RNG.standard_normal(4).astype(np.float32)
    check(model, a=a, b=b, c=c)
    single = make_model([helper.make_node(op, ["a"], ["y"])], {"a": [24]})
    check(single, a=_special())


# ---- identities -------------------------------------------------------------------


def test_dropout_is_the_identity_in_inference() -> None:
    x = _special()
    check(unary("Dropout", opset=11, ratio=0.3), x=x)
    with_ratio = make_model(
        [helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
        {"x": [24]},
        initializers={
            "r": np.array(0.5, np.float32),
            "t": np.array(False),
        },
    )
    check(with_ratio, x=x)


def test_dropout_refuses_training_and_gives_an_all_true_mask() -> None:
    training = make_model(
        [helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
        {"x": [2]},
        initializers={"r": np.array(0.5, np.float32), "t": np.array(True)},
    )
    with pytest.raises(OnnxImportError, match="training_mode=true is not supported"):
        import_onnx(training)
    mask = make_model(
        [helper.make_node("Dropout", ["x"], ["y", "m"])], {"x": [2]}, outputs=["y"]
    )
    mask.graph.output.append(helper.make_tensor_value_info("m", TensorProto.BOOL, [2]))
    y, m = qidao.compile(mask)(np.array([1.0, -2.0], np.float32))
    np.testing.assert_array_equal(y, [1.0, -2.0])
    assert m.dtype == np.bool_ and m.all()


def test_cast_float_to_float_and_castlike_of_a_constant() -> None:
    check(unary("Cast", to=TensorProto.FLOAT), x=_special())
    to_int = make_model(
        [
            helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
            helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT),
        ],
        {"x": [24]},
    )
    check(to_int, x=_special(with_nan=False).clip(-1e9, 1e9))
    to_half = make_model(
        [
            helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
            helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT),
        ],
        {"x": [24]},
    )
    check(to_half, rtol=0.0, atol=0.0, x=_special())  # rounded to f16 as NumPy
    to_bfloat = make_model(
        [
            helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT8E8M0),
            helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT),
        ],
        {"x": [2]},
        opset=24,  # float8e8m0 is new in opset 24
    )
    with pytest.raises(
        OnnxImportError, match=r"to TensorProto\.FLOAT8E8M0 is not supported"
    ):
        import_onnx(to_bfloat)
    castlike = make_model(
        [
            helper.make_node("CastLike", ["alpha", "x"], ["a"]),
            helper.make_node("Mul", ["x", "a"], ["y"]),
        ],
        {"x": [24]},
        initializers={"alpha": np.array(0.5, np.float64)},
    )
    check(castlike, x=_special())


# ---- shapes -----------------------------------------------------------------------


def _shape_model(op: str, shape: list[int], opset: int, **kwargs: Any) -> Any:
    axes = kwargs.pop("axes", None)
    if axes is not None and opset >= 13:
        node = helper.make_node(op, ["x", "axes"], ["y"], **kwargs)
        inits = {"axes": np.array(axes, np.int64)}
    else:
        attrs = {} if axes is None else {"axes": axes}
        node = helper.make_node(op, ["x"], ["y"], **attrs, **kwargs)
        inits = {}
    return make_model([node], {"x": shape}, initializers=inits, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(
    ("op", "shape", "axes"),
    [
        ("Squeeze", [1, 3, 1, 4], [0, -2]),
        ("Squeeze", [1, 3, 1, 4], None),
        ("Unsqueeze", [3, 4], [0, -1]),
        ("Unsqueeze", [3, 4], [1, 3]),
    ],
)
def test_squeeze_unsqueeze_runtime(
    op: str, shape: list[int], axes: list[int] | None, opset: int
) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    check(_shape_model(op, shape, opset, axes=axes), x=x)


def test_unsqueeze_unsorted_axes_index_the_output() -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    check(_shape_model("Unsqueeze", [3, 4], 13, axes=[3, -4]), x=x)


def test_expand_broadcasts_both_ways() -> None:
    model = make_model(
        [helper.make_node("Expand", ["x", "s"], ["y"])],
        {"x": [3, 1]},
        initializers={"s": np.array([2, 1, 4], np.int64)},
    )
    check(model, x=RNG.standard_normal((3, 1)).astype(np.float32))


@pytest.mark.parametrize("opset", [11, 18])
def test_pad_constant(opset: int) -> None:
    pads = np.array([0, 1, 2, 0, 2, 1], np.int64)
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "v"], ["y"], mode="constant")],
        {"x": [2, 3, 4]},
        initializers={"pads": pads, "v": np.array(1.5, np.float32)},
        opset=opset,
    )
    check(model, x=_special().reshape(2, 3, 4))


def test_pad_axes_input() -> None:
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
        {"x": [2, 3, 4]},
        initializers={
            "pads": np.array([1, 0, 2, 3], np.int64),
            "axes": np.array([-1, 0], np.int64),
        },
    )
    check(model, x=_special().reshape(2, 3, 4))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("pads", [[0, 1, 0, -1], [-1, 2, 1, -2], [-2, 0, 0, 0]])
def test_negative_pads_crop_as_onnxruntime_does(mode: str, pads: list[int]) -> None:
    """ONNX's reference has no negative pads (np.pad refuses them): ONNX Runtime,
    which crops first and then pads, is the oracle (RWKV's time shift crops)."""
    ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")
    model = make_model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
        {"x": [3, 5]},
        initializers={"pads": np.array(pads, np.int64)},
    )
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (want,) = session.run(None, {"x": x})
    (got,) = qidao.compile(model)(x)
    np.testing.assert_array_equal(got, want)


def test_a_pad_that_removes_more_than_the_axis_is_refused() -> None:
    model = make_model(
        [helper.make_node("Pad", ["x", "pads"], ["y"])],
        {"x": [4]},
        initializers={"pads": np.array([-3, -2], np.int64)},
    )
    with pytest.raises(OnnxImportError, match=r"remove more than the 4 elements"):
        import_onnx(model)


# ---- reductions -------------------------------------------------------------------


def _reduce_model(
    op: str, axes: list[int] | None, keepdims: int, noop: int = 0, opset: int = 18
) -> Any:
    inputs = ["x"] if axes is None else ["x", "axes"]
    inits = {} if axes is None else {"axes": np.array(axes, np.int64)}
    node = helper.make_node(
        op, inputs, ["y"], keepdims=keepdims, noop_with_empty_axes=noop
    )
    return make_model([node], {"x": [2, 3, 4]}, initializers=inits, opset=opset)


REDUCTIONS = [
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMin",
]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize(
    ("axes", "keepdims"), [([1], 1), ([0, 2], 0), ([-1], 0), (None, 1), (None, 0)]
)
def test_reductions(op: str, axes: list[int] | None, keepdims: int) -> None:
    x = RNG.uniform(0.5, 3.0, (2, 3, 4)).astype(np.float32)
    check(_reduce_model(op, axes, keepdims), rtol=1e-5, atol=1e-5, x=x)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_noop_with_empty_axes(op: str) -> None:
    """No axes and ``noop_with_empty_axes``: only the elementwise part is applied."""
    x = RNG.uniform(0.5, 3.0, (2, 3, 4)).astype(np.float32)
    check(_reduce_model(op, None, 1, noop=1), x=x)


@pytest.mark.parametrize("op", ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceMin"])
def test_reductions_on_special_values(op: str) -> None:
    x = _special().reshape(2, 3, 4)
    check(_reduce_model(op, [2], 0), x=x)


def test_reduce_log_sum_exp_does_not_overflow() -> None:
    """Large finite values (exp overflows float32), infinities and NaN in rows that
    also hold finite values; rows that are all infinite follow the definition
    (``log(sum(exp(x)))``: -inf for all -inf) where the reference's max-shift gives
    NaN."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 0] = [100.0, 200.0, -50.0, 300.0]
    x[0, 1, 1] = np.inf
    x[0, 2, 2] = -np.inf
    x[1, 0, 3] = np.nan
    x[1, 1] = [3e38, -3e38, 1.0, 3.4e38]
    check(_reduce_model("ReduceLogSumExp", [2], 1), x=x)
    all_neg_inf = np.full((2, 3, 4), -np.inf, np.float32)
    (y,) = qidao.compile(_reduce_model("ReduceLogSumExp", [2], 0))(all_neg_inf)
    assert np.all(y == -np.inf)


def test_global_max_pool() -> None:
    model = make_model(
        [helper.make_node("GlobalMaxPool", ["x"], ["y"])], {"x": [2, 3, 4, 5]}
    )
    check(model, x=RNG.standard_normal((2, 3, 4, 5)).astype(np.float32))
