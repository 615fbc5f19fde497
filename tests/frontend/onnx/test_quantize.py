"""ONNX's quantization ops (``qidao/frontend/onnx/quantize.py``) compiled with
``qidao.compile``: ``QuantizeLinear`` and ``DequantizeLinear`` per tensor, per axis
and blocked, ``DynamicQuantizeLinear``, ``MatMulInteger``, ``ConvInteger``,
``QLinearMatMul`` and ``QLinearConv``.

The oracles are ONNX's reference evaluator and ONNX Runtime on the same model and
inputs; every result must be equal, bit for bit. Each test puts many nodes in one
model (compiling dominates). Where the two oracles part (the reference casts
``rint(inf)`` to int32, which C leaves undefined), the saturation of infinite and
huge inputs is checked against ONNX Runtime alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is an oracle")

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def model(
    nodes: Sequence[Any],
    feeds: dict[str, Array],
    constants: dict[str, Array],
    outputs: Sequence[str],
    opset: int,
) -> Any:
    """A model of ``nodes`` whose graph inputs are ``feeds`` and initializers
    ``constants``; the outputs take their types and shapes from ONNX's reference."""
    inputs = [
        helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape
        )
        for name, v in feeds.items()
    ]
    inits = [numpy_helper.from_array(v, name) for name, v in constants.items()]

    def build(declared: list[Any]) -> Any:
        graph = helper.make_graph(list(nodes), "q", inputs, declared, inits)
        return helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10
        )

    untyped = [helper.make_empty_tensor_value_info(name) for name in outputs]
    with np.errstate(invalid="ignore"):  # the reference's rint(inf).astype(int32)
        results = ReferenceEvaluator(build(untyped)).run(None, feeds)
    return build(
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(r.dtype), r.shape
            )
            for name, r in zip(outputs, results, strict=True)
        ]
    )


BOTH = ("reference", "onnxruntime")


def run_all(m: Any, feeds: dict[str, Array], oracles: Sequence[str] = BOTH) -> None:
    """qidao's outputs equal those of each of ``oracles``: ONNX's reference
    evaluator, ONNX Runtime."""
    feeds = {name: np.asarray(v) for name, v in feeds.items()}
    outputs = [o.name for o in m.graph.output]
    got = qidao.compile(m)(*feeds.values())
    answers = []
    if "reference" in oracles:
        answers.append(("reference", ReferenceEvaluator(m).run(None, feeds)))
    if "onnxruntime" in oracles:
        session = ort.InferenceSession(
            m.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        answers.append(("onnxruntime", session.run(None, feeds)))
    for oracle, results in answers:
        for name, g, w in zip(outputs, got, results, strict=True):
            assert g.dtype == w.dtype, f"{name}: dtype {g.dtype}, {oracle} {w.dtype}"
            np.testing.assert_array_equal(g, w, err_msg=f"{name} vs {oracle}")


def node(op: str, inputs: Sequence[str], output: str, **attrs: Any) -> Any:
    return helper.make_node(op, list(inputs), [output], **attrs)


def ties(scale: float, n: int) -> Array:
    """``scale * (k + 1/2)`` for ``k`` in ``[-n, n)``, exact in float32 for a power
    of two ``scale``: every ``x / scale`` is a tie."""
    return (scale * (np.arange(-n, n) + 0.5)).astype(np.float32)


# ---- QuantizeLinear ---------------------------------------------------------------


def test_quantize_linear_per_tensor_and_per_axis() -> None:
    """Ties round to even, results saturate, negative zero points, int16 and
    uint16, no zero point (uint8) and ``output_dtype``."""
    x = np.concatenate([ties(0.5, 12), RNG.uniform(-300, 300, 24)]).astype(np.float32)
    x = x.reshape(2, 3, 8)
    feeds = {"x": x, "s": np.float32(0.5), "zs": np.array([0.25, 2.0, 0.5], np.float32)}
    constants = {
        "zu8": np.uint8(128),
        "zi8": np.int8(-3),
        "zi16": np.int16(-7),
        "zu16": np.uint16(40000),
        "axis_zp": np.array([-128, 5, 127], np.int8),
        "axis_zp_u": np.array([0, 255, 17], np.uint8),
        "s_small": np.float32(1 / 512),
        "s_last": RNG.uniform(0.1, 2.0, 8).astype(np.float32),
    }
    nodes = [
        node("QuantizeLinear", ["x", "s", "zu8"], "u8"),
        node("QuantizeLinear", ["x", "s", "zi8"], "i8"),
        node("QuantizeLinear", ["x", "s_small", "zi16"], "i16"),
        node("QuantizeLinear", ["x", "s_small", "zu16"], "u16"),
        node("QuantizeLinear", ["x", "s"], "default_u8"),
        node("QuantizeLinear", ["x", "s"], "out_i8", output_dtype=TensorProto.INT8),
        node("QuantizeLinear", ["x", "zs", "axis_zp"], "axis1"),
        node("QuantizeLinear", ["x", "zs", "axis_zp_u"], "axis_u", axis=-2),
        node("QuantizeLinear", ["x", "s_last"], "axis2", axis=2),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 21), feeds)


def test_quantize_linear_blocked() -> None:
    """Blocks along either axis, a block size that divides the axis and one that
    leaves a shorter last block (ONNX Runtime has no 8-bit blocked quantization:
    the reference alone)."""
    x = RNG.uniform(-40, 40, (4, 7)).astype(np.float32)
    feeds = {"x": x}
    constants = {
        "s1": RNG.uniform(0.1, 1.0, (4, 3)).astype(np.float32),  # axis 1, block 3
        "z1": RNG.integers(-20, 20, (4, 3)).astype(np.int8),
        "s0": RNG.uniform(0.1, 1.0, (2, 7)).astype(np.float32),  # axis 0, block 2
        "z0": RNG.integers(100, 150, (2, 7)).astype(np.uint8),
    }
    nodes = [
        node("QuantizeLinear", ["x", "s1", "z1"], "b1", axis=1, block_size=3),
        node("QuantizeLinear", ["x", "s0", "z0"], "b0", axis=0, block_size=2),
        node("QuantizeLinear", ["x", "s1"], "b1_sym", axis=1, block_size=3),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 21), feeds, ["reference"])


def test_quantize_linear_float16_input() -> None:
    """float16 divides in float16 (as NumPy's float16 ufuncs)."""
    feeds = {"x": (RNG.uniform(-200, 200, 16)).astype(np.float16)}
    constants = {"s": np.float16(0.75), "z": np.int8(3)}
    nodes = [node("QuantizeLinear", ["x", "s", "z"], "q")]
    run_all(model(nodes, feeds, constants, ["q"], 21), feeds)


def test_quantize_linear_int32_input() -> None:
    """An int32 input divides in float64, as NumPy promotes it (opset 23, where the
    scale's type is not the input's; ONNX Runtime has no such kernel)."""
    feeds = {"x": RNG.integers(-(2**30), 2**30, 16).astype(np.int32)}
    constants = {"s": np.float32(9.5e6), "z": np.uint8(100)}
    nodes = [node("QuantizeLinear", ["x", "s", "z"], "q")]
    run_all(model(nodes, feeds, constants, ["q"], 23), feeds, ["reference"])


def test_quantize_linear_saturates_infinities_and_huge_values() -> None:
    """``+-inf`` and values beyond int32 go to the type's bounds, as in ONNX
    Runtime (the reference's ``astype(int32)`` is undefined there)."""
    x = np.array([np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 1e5, -1e5], np.float32)
    feeds = {"x": x}
    constants = {"s": np.float32(0.5), "z8": np.int8(-5), "z16": np.uint16(7)}
    nodes = [
        node("QuantizeLinear", ["x", "s", "z8"], "i8"),
        node("QuantizeLinear", ["x", "s", "z16"], "u16"),
        node("QuantizeLinear", ["x", "s"], "u8"),
    ]
    outputs = [n.output[0] for n in nodes]
    m = model(nodes, feeds, constants, outputs, 21)
    got = qidao.compile(m)(x)
    session = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    for name, g, w in zip(outputs, got, session.run(None, {"x": x}), strict=True):
        np.testing.assert_array_equal(g, w, err_msg=name)


# ---- DequantizeLinear -------------------------------------------------------------


def test_dequantize_linear() -> None:
    """Per tensor, per axis and blocked; int8 with negative zero points, uint8,
    int16, uint16, int32 without a zero point; a float16 scale."""
    feeds = {
        "u8": RNG.integers(0, 256, (2, 3, 4)).astype(np.uint8),
        "i8": RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8),
        "i16": RNG.integers(-32768, 32768, (6,)).astype(np.int16),
        "u16": RNG.integers(0, 65536, (6,)).astype(np.uint16),
        "i32": RNG.integers(-(2**31), 2**31 - 1, (6,)).astype(np.int32),
        "s": np.float32(0.037),
    }
    constants = {
        "zu8": np.uint8(131),
        "zi8_axis": np.array([-128, 0, 127], np.int8),
        "s_axis": np.array([0.5, 0.01, 3.0], np.float32),
        "zi16": np.int16(-300),
        "zu16": np.uint16(60000),
        "s16": np.float16(0.0123),
        "s_block": RNG.uniform(0.01, 1.0, (2, 3, 2)).astype(np.float32),
        "z_block": RNG.integers(-10, 10, (2, 3, 2)).astype(np.int8),
    }
    nodes = [
        node("DequantizeLinear", ["u8", "s", "zu8"], "d_u8"),
        node("DequantizeLinear", ["u8", "s"], "d_u8_nozp"),
        node("DequantizeLinear", ["i8", "s_axis", "zi8_axis"], "d_axis"),
        node("DequantizeLinear", ["i16", "s", "zi16"], "d_i16"),
        node("DequantizeLinear", ["u16", "s", "zu16"], "d_u16"),
        node("DequantizeLinear", ["i32", "s"], "d_i32"),
        node("DequantizeLinear", ["u8", "s16"], "d_half"),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 21), feeds)
    blocked = [
        node(
            "DequantizeLinear",
            ["i8", "s_block", "z_block"],
            "d_blk",
            axis=2,
            block_size=3,
        )
    ]
    feeds_b = {"i8": feeds["i8"]}
    m = model(blocked, feeds_b, constants, ["d_blk"], 21)
    run_all(m, feeds_b, ["reference"])


# ---- DynamicQuantizeLinear --------------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [
        RNG.standard_normal((3, 5)).astype(np.float32) * 4,
        RNG.uniform(0.5, 9.0, (7,)).astype(np.float32),  # the minimum is 0
        -RNG.uniform(0.5, 9.0, (2, 2, 3)).astype(np.float32),  # the maximum is 0
    ],
    ids=["mixed", "positive", "negative"],
)
def test_dynamic_quantize_linear(x: Array) -> None:
    feeds = {"x": x}
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero_point"])
    ]
    run_all(model(nodes, feeds, {}, ["y", "scale", "zero_point"], 11), feeds)


def test_dynamic_quantize_linear_of_zeros_has_scale_one() -> None:
    """All zeros (an empty range): scale 1 and zero point 0, ONNX Runtime's rule,
    which the reference's comment states (its code divides that 1 by 255 too)."""
    feeds = {"x": np.zeros((4,), np.float32)}
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero_point"])
    ]
    m = model(nodes, feeds, {}, ["y", "scale", "zero_point"], 11)
    run_all(m, feeds, ["onnxruntime"])


# ---- MatMulInteger / ConvInteger ---------------------------------------------------


def _u8(shape: Sequence[int]) -> Array:
    return RNG.integers(0, 256, shape).astype(np.uint8)


def _i8(shape: Sequence[int]) -> Array:
    return RNG.integers(-128, 128, shape).astype(np.int8)


def test_matmul_integer() -> None:
    """uint8 x int8 and uint8 x uint8, zero points per tensor and per column of B,
    batched and 1-D operands, and K = 300 (past float32's exact range: float64)."""
    feeds = {
        "a": _u8((4, 5)),
        "b": _i8((5, 3)),
        "bu": _u8((5, 3)),
        "a3": _u8((2, 4, 5)),
        "v": _u8((5,)),
        "long_a": _u8((3, 300)),
        "long_b": _u8((300, 2)),
    }
    constants = {
        "za": np.uint8(250),
        "zb": np.int8(-7),
        "zbu": np.uint8(3),
        "zb_cols": np.array([-128, 0, 127], np.int8),
    }
    nodes = [
        node("MatMulInteger", ["a", "b", "za", "zb"], "y"),
        node("MatMulInteger", ["a", "b"], "y_nozp"),
        node("MatMulInteger", ["a", "bu", "za", "zbu"], "y_uu"),
        node("MatMulInteger", ["a", "b", "za", "zb_cols"], "y_cols"),
        node("MatMulInteger", ["a3", "b", "za", "zb"], "y3"),
        node("MatMulInteger", ["v", "b", "za"], "yv"),
        node("MatMulInteger", ["long_a", "long_b", "za", "zbu"], "y_long"),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 10), feeds)


def test_matmul_integer_per_row_zero_point_of_a() -> None:
    """A 1-D zero point of A with M elements is per row (the spec; the reference's
    broadcast would take it per column, so NumPy in int32 is the oracle)."""
    a, b = _u8((4, 5)), _i8((5, 3))
    za = np.array([1, 200, 30, 255], np.uint8)
    graph = helper.make_graph(
        [node("MatMulInteger", ["a", "b", "za"], "y")],
        "q",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, a.shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT32, (4, 3))],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(za, "za")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    (got,) = qidao.compile(m)(a)
    want = (a.astype(np.int32) - za.astype(np.int32)[:, None]) @ b.astype(np.int32)
    np.testing.assert_array_equal(got, want)


def test_conv_integer() -> None:
    """Padding, strides, dilations, groups, auto_pad; uint8 input with a zero point,
    int8 and uint8 weights with zero points per tensor and per output channel."""
    feeds = {"x": _u8((2, 4, 9, 8)), "w": _i8((6, 4, 3, 3))}
    constants = {
        "wu": _u8((6, 2, 3, 2)),
        "zx": np.uint8(97),
        "zw": np.int8(-4),
        "zwu": np.array([0, 5, 255, 128, 7, 3], np.uint8),
        "zwu1": np.uint8(9),
    }
    nodes = [
        node("ConvInteger", ["x", "w", "zx", "zw"], "y", pads=[1, 2, 0, 1]),
        node("ConvInteger", ["x", "w"], "y_nozp", strides=[2, 1], dilations=[1, 2]),
        node("ConvInteger", ["x", "wu", "zx", "zwu1"], "y_grp", group=2),
        node("ConvInteger", ["x", "w", "zx"], "y_same", auto_pad="SAME_UPPER"),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 10), feeds)
    # a zero point per output channel: ONNX Runtime takes one per tensor only
    channel = [node("ConvInteger", ["x", "wu", "zx", "zwu"], "y_ch", group=2)]
    run_all(model(channel, feeds, constants, ["y_ch"], 10), feeds, ["reference"])


def test_conv_integer_through_winograd_is_exact() -> None:
    """A 3x3 convolution with a constant weight given to Winograd (whose transforms
    round) is still the exact int32 result: float64 and a final rounding. (A
    weight zero point of 3 keeps it off the int8 kernel, which takes 0 only.)"""
    x = _u8((1, 16, 12, 12))
    constants = {"w": _i8((16, 16, 3, 3)), "zx": np.uint8(120), "zw": np.int8(3)}
    m = model(
        [node("ConvInteger", ["x", "w", "zx", "zw"], "y", pads=[1, 1, 1, 1])],
        {"x": x},
        constants,
        ["y"],
        10,
    )
    compiled = qidao.compile(m, algo="winograd")
    assert "winograd" in str(compiled.stats.get("conv_algo", ""))
    (got,) = compiled(x)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)


# ---- QLinearMatMul / QLinearConv ---------------------------------------------------


def test_qlinear_matmul() -> None:
    """uint8 and int8, per-tensor scales and a per-column scale and zero point of
    B, batched."""
    feeds = {
        "a": _u8((3, 6)),
        "b": _u8((6, 4)),
        "ai": _i8((2, 3, 6)),
        "bi": _i8((6, 4)),
    }
    constants = {
        "sa": np.float32(0.02),
        "za": np.uint8(120),
        "sb": np.float32(0.013),
        "zb": np.uint8(130),
        "sy": np.float32(0.11),
        "zy": np.uint8(128),
        "zai": np.int8(-3),
        "zbi": np.int8(5),
        "zyi": np.int8(-10),
        "sb_cols": np.array([0.01, 0.02, 0.005, 0.03], np.float32),
        "zb_cols": np.array([-1, 0, 3, 100], np.int8),
    }
    nodes = [
        node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], "y"),
        node(
            "QLinearMatMul", ["ai", "sa", "zai", "bi", "sb", "zbi", "sy", "zyi"], "yi"
        ),
        node(
            "QLinearMatMul",
            ["ai", "sa", "zai", "bi", "sb_cols", "zb_cols", "sy", "zyi"],
            "y_cols",
        ),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 21), feeds)


def test_qlinear_conv() -> None:
    """uint8 and int8, with and without bias, per-tensor and per-output-channel
    weight scales and zero points, padding and groups."""
    feeds = {"x": _u8((1, 4, 7, 6)), "xi": _i8((2, 4, 5, 5))}
    constants = {
        "sx": np.float32(0.03),
        "zx": np.uint8(128),
        "w": _u8((6, 4, 3, 3)),
        "sw": np.float32(0.004),
        "zw": np.uint8(120),
        "sy": np.float32(0.07),
        "zy": np.uint8(100),
        "bias": RNG.integers(-3000, 3000, (6,)).astype(np.int32),
        "zxi": np.int8(3),
        "wi": _i8((6, 2, 3, 3)),
        "sw_ch": RNG.uniform(0.001, 0.01, 6).astype(np.float32),
        "zwi": np.int8(0),
        "zyi": np.int8(-5),
    }
    u8 = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"]
    i8 = ["xi", "sx", "zxi", "wi", "sw_ch", "zwi", "sy", "zyi"]
    nodes = [
        node("QLinearConv", [*u8, "bias"], "y", pads=[1, 1, 1, 1]),
        node("QLinearConv", u8, "y_nobias", strides=[2, 2]),
        node("QLinearConv", [*i8, "bias"], "yi", group=2, pads=[0, 1, 2, 1]),
    ]
    outputs = [n.output[0] for n in nodes]
    run_all(model(nodes, feeds, constants, outputs, 10), feeds)


def test_qlinear_conv_on_the_int8_kernel() -> None:
    """The U8S8 convolutions ``conv_integer.py`` computes on ``tg.matmul_integer``
    (a uint8 input, an int8 constant weight with a zero point of 0): 3x3 with
    padding, a stride of 2 and a dilation, 1x1, a 3-channel input (channels
    padded to 4), a bias, per-channel weight scales; each equal to ONNX's
    reference and to ONNX Runtime."""
    feeds = {"x": _u8((2, 8, 9, 7)), "img": _u8((1, 3, 10, 10))}
    constants = {
        "sx": np.float32(0.03),
        "zx": np.uint8(113),
        "w": _i8((32, 8, 3, 3)),
        "w1": _i8((16, 8, 1, 1)),
        "w3": _i8((16, 3, 7, 7)),
        "sw": RNG.uniform(0.001, 0.01, 32).astype(np.float32),
        "sw16": RNG.uniform(0.001, 0.01, 16).astype(np.float32),
        "zw": np.zeros(32, np.int8),
        "zw16": np.zeros(16, np.int8),
        "sy": np.float32(0.5),
        "zy": np.uint8(7),
        "bias": RNG.integers(-3000, 3000, (32,)).astype(np.int32),
    }
    nodes = [
        node(
            "QLinearConv",
            ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"],
            "y",
            pads=[1, 1, 1, 1],
        ),
        node(
            "QLinearConv",
            ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"],
            "y_strided",
            strides=[2, 2],
            dilations=[1, 2],
            pads=[0, 2, 1, 0],
        ),
        node("QLinearConv", ["x", "sx", "zx", "w1", "sw16", "zw16", "sy", "zy"], "y1"),
        node(
            "QLinearConv",
            ["img", "sx", "zx", "w3", "sw16", "zw16", "sy", "zy"],
            "y_img",
            strides=[2, 2],
            pads=[3, 3, 3, 3],
        ),
        node("ConvInteger", ["x", "w", "zx"], "acc", pads=[1, 0, 1, 2]),
    ]
    m = model(nodes, feeds, constants, [n.output[0] for n in nodes], 10)
    tg_text = str(import_onnx(m))
    assert tg_text.count("tg.matmul_integer") == 5 and "tg.conv2d" not in tg_text
    run_all(m, feeds)


# ---- refusals ---------------------------------------------------------------------


def _import(nodes: Sequence[Any], inputs: Sequence[Any], inits: Sequence[Any]) -> None:
    out = helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)
    graph = helper.make_graph(list(nodes), "q", list(inputs), [out], list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    import_onnx(m)


def test_float8_zero_point_is_refused_with_its_dtype() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (4,))
    inits = [
        numpy_helper.from_array(np.float32(0.5), "s"),
        helper.make_tensor("z", TensorProto.FLOAT8E4M3FN, (), [0.0]),
    ]
    with pytest.raises(OnnxImportError, match="zero point has dtype float8_e4m3fn"):
        _import([node("QuantizeLinear", ["x", "s", "z"], "y")], [x], inits)


def test_per_axis_scale_of_the_wrong_length_is_refused() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3))
    inits = [numpy_helper.from_array(np.ones(2, np.float32), "s")]
    with pytest.raises(OnnxImportError, match=r"1-D with 3 elements.*got shape \[2\]"):
        _import([node("QuantizeLinear", ["x", "s"], "y")], [x], inits)


def test_conv_integer_input_zero_point_must_be_a_scalar() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, (1, 2, 4, 4))
    inits = [
        numpy_helper.from_array(np.ones((3, 2, 1, 1), np.uint8), "w"),
        numpy_helper.from_array(np.ones(2, np.uint8), "zx"),
    ]
    with pytest.raises(OnnxImportError, match="input's zero point must be a scalar"):
        _import([node("ConvInteger", ["x", "w", "zx"], "y")], [x], inits)
