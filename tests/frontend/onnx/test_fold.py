"""Import-time constant evaluation in the ONNX importer (``qidao/frontend/onnx/fold.py``).

Every folder is compared with ``onnx.reference.ReferenceEvaluator`` on the same node
(values and dtype); the shape-computation patterns exporters emit are compiled with
``qidao.compile`` and compared with the reference on the whole model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError, UnsupportedOpsError
from qidao.frontend.onnx import CONSTANT_ONLY_OPS, SUPPORTED_OPS, import_onnx
from qidao.frontend.onnx.importer import FOLDERS, Importer
from qidao.frontend.onnx.load import infer_shapes

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)
INT_MAX = np.iinfo(np.int64).max
INT_MIN = np.iinfo(np.int64).min


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def i64(*values: int) -> Array:
    return np.array(values, dtype=np.int64)


def model_of(
    nodes: list[Any],
    inputs: dict[str, Array],
    outputs: dict[str, int],
    initializers: dict[str, Array] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A model with typed graph inputs (shapes of ``inputs``) and outputs of the given
    ONNX element types (shapes left to inference)."""
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


def folded(model: onnx.ModelProto) -> dict[str, Any]:
    """The importer's environment after the walk (arrays for folded values)."""
    importer = Importer(infer_shapes(model))
    importer.walk()
    return importer.env


def check_fold(node: Any, inputs: dict[str, Array], opset: int = 17) -> None:
    """Fold ``node`` on initializers ``inputs``; compare with ReferenceEvaluator."""
    out = str(node.output[0])
    probe = model_of([node], {}, {out: TensorProto.FLOAT}, inputs, opset)
    (expected,) = ReferenceEvaluator(probe).run(None, {})
    expected = np.asarray(expected)
    elem_type = helper.np_dtype_to_tensor_dtype(expected.dtype)
    got = folded(model_of([node], {}, {out: elem_type}, inputs, opset))[out]
    assert isinstance(got, np.ndarray), f"{node.op_type} was not folded"
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(got, expected)


def node(op_type: str, inputs: list[str], **attrs: Any) -> Any:
    return helper.make_node(op_type, inputs, ["y"], **attrs)


# ---- every folder against the reference ---------------------------------------------

ints_a = i64(7, -7, 9, -9, 0, 12)
ints_b = i64(2, 2, -4, -4, 3, 5)
BOOLS_A = np.array([True, True, False, False])
BOOLS_B = np.array([True, False, True, False])

FOLD_CASES: list[tuple[str, Any, dict[str, Array], int]] = [
    ("Add-int", node("Add", ["a", "b"]), {"a": ints_a, "b": ints_b}, 17),
    ("Sub-int-broadcast", node("Sub", ["a", "b"]), {"a": ints_a, "b": i64(3)}, 17),
    ("Mul-int", node("Mul", ["a", "b"]), {"a": ints_a, "b": ints_b}, 17),
    ("Div-int-truncates", node("Div", ["a", "b"]), {"a": ints_a, "b": ints_b}, 17),
    (
        "Div-int32",
        node("Div", ["a", "b"]),
        {"a": ints_a.astype(np.int32), "b": ints_b.astype(np.int32)},
        17,
    ),
    ("Div-float", node("Div", ["a", "b"]), {"a": rand(2, 3), "b": rand(3) + 3}, 17),
    (
        "Add-scalar",
        node("Add", ["a", "b"]),
        {"a": i64(3)[0:1].reshape(()), "b": i64(4)},
        17,
    ),
    (
        "Max-variadic",
        node("Max", ["a", "b", "c"]),
        {"a": rand(3), "b": rand(1), "c": rand(2, 3)},
        17,
    ),
    ("Min-int", node("Min", ["a", "b"]), {"a": ints_a, "b": ints_b}, 17),
    ("Equal", node("Equal", ["a", "b"]), {"a": i64(1, 2, 3), "b": i64(1, 0, 3)}, 17),
    ("Less", node("Less", ["a", "b"]), {"a": i64(1, 2, 3), "b": i64(2)}, 17),
    ("Greater", node("Greater", ["a", "b"]), {"a": rand(4), "b": rand(4)}, 17),
    (
        "LessOrEqual",
        node("LessOrEqual", ["a", "b"]),
        {"a": i64(1, 2, 3), "b": i64(2)},
        17,
    ),
    (
        "GreaterOrEqual",
        node("GreaterOrEqual", ["a", "b"]),
        {"a": rand(4), "b": rand(1)},
        17,
    ),
    ("And", node("And", ["a", "b"]), {"a": BOOLS_A, "b": BOOLS_B}, 17),
    ("Or", node("Or", ["a", "b"]), {"a": BOOLS_A, "b": BOOLS_B}, 17),
    ("Xor", node("Xor", ["a", "b"]), {"a": BOOLS_A, "b": BOOLS_B}, 17),
    ("Mod-int", node("Mod", ["a", "b"]), {"a": ints_a, "b": ints_b}, 17),
    (
        "Mod-int-fmod",
        node("Mod", ["a", "b"], fmod=1),
        {"a": ints_a, "b": ints_b},
        17,
    ),
    ("Pow-int", node("Pow", ["a", "b"]), {"a": ints_a, "b": i64(2)}, 17),
    ("Sign", node("Sign", ["x"]), {"x": ints_a}, 17),
    ("Neg-int", node("Neg", ["x"]), {"x": ints_a}, 17),
    ("Abs", node("Abs", ["x"]), {"x": ints_a}, 17),
    ("Exp", node("Exp", ["x"]), {"x": rand(4)}, 17),
    ("Log", node("Log", ["x"]), {"x": np.abs(rand(4)) + 0.1}, 17),
    ("Sqrt", node("Sqrt", ["x"]), {"x": np.abs(rand(4))}, 17),
    ("Tanh", node("Tanh", ["x"]), {"x": rand(4)}, 17),
    ("Sin", node("Sin", ["x"]), {"x": rand(4) * 5}, 17),
    ("Cos", node("Cos", ["x"]), {"x": rand(4) * 5}, 17),
    ("Cos-float64", node("Cos", ["x"]), {"x": (rand(4) * 5).astype(np.float64)}, 17),
    ("Sigmoid", node("Sigmoid", ["x"]), {"x": rand(4)}, 17),
    ("Relu", node("Relu", ["x"]), {"x": rand(2, 3)}, 17),
    ("Not", node("Not", ["x"]), {"x": np.array([True, False])}, 17),
    ("Identity", node("Identity", ["x"]), {"x": ints_a}, 17),
    (
        "Where",
        node("Where", ["c", "a", "b"]),
        {"c": np.array([True, False, True]), "a": i64(1, 2, 3), "b": i64(-1)},
        17,
    ),
    (
        "Cast-float-to-int",
        node("Cast", ["x"], to=TensorProto.INT64),
        {"x": rand(6) * 5},
        17,
    ),
    ("Cast-int-to-float", node("Cast", ["x"], to=TensorProto.FLOAT), {"x": ints_a}, 17),
    ("Cast-int-to-bool", node("Cast", ["x"], to=TensorProto.BOOL), {"x": ints_a}, 17),
    (
        "Cast-int64-to-int32",
        node("Cast", ["x"], to=TensorProto.INT32),
        {"x": ints_a},
        13,
    ),
    (
        "Gather-scalar",
        node("Gather", ["x", "i"]),
        {"x": i64(2, 3, 4), "i": i64(0).reshape(())},
        13,
    ),
    (
        "Gather-negative",
        node("Gather", ["x", "i"]),
        {"x": i64(2, 3, 4), "i": i64(-1, 1)},
        13,
    ),
    (
        "Gather-axis1",
        node("Gather", ["x", "i"], axis=1),
        {"x": rand(3, 4), "i": np.array([[0, 3], [-2, 1]], np.int64)},
        13,
    ),
    (
        "GatherElements-negative",
        node("GatherElements", ["x", "i"], axis=1),
        {"x": rand(3, 4), "i": np.array([[0, 3], [-1, 1], [2, -4]], np.int64)},
        13,
    ),
    (
        "Concat",
        node("Concat", ["a", "b", "c"], axis=0),
        {"a": i64(2), "b": i64(3, 4), "c": i64(-1)},
        13,
    ),
    (
        "Concat-axis-neg",
        node("Concat", ["a", "b"], axis=-1),
        {"a": rand(2, 1), "b": rand(2, 3)},
        13,
    ),
    (
        "Unsqueeze-attr",
        node("Unsqueeze", ["x"], axes=[0]),
        {"x": i64(5).reshape(())},
        11,
    ),
    (
        "Unsqueeze-attr-neg",
        node("Unsqueeze", ["x"], axes=[-1, 0]),
        {"x": i64(1, 2)},
        11,
    ),
    (
        "Unsqueeze-input",
        node("Unsqueeze", ["x", "axes"]),
        {"x": rand(2, 3), "axes": i64(1, -1)},
        13,
    ),
    ("Squeeze-attr", node("Squeeze", ["x"], axes=[0]), {"x": rand(1, 3, 1)}, 11),
    ("Squeeze-all", node("Squeeze", ["x"]), {"x": rand(1, 3, 1)}, 13),
    (
        "Squeeze-input",
        node("Squeeze", ["x", "axes"]),
        {"x": rand(1, 3, 1), "axes": i64(-1)},
        13,
    ),
    (
        "Slice-attrs",
        node("Slice", ["x"], starts=[1], ends=[1000]),
        {"x": i64(2, 3, 4)},
        9,
    ),
    (
        "Slice-attrs-axes",
        node("Slice", ["x"], starts=[-2], ends=[-1], axes=[1]),
        {"x": rand(3, 4)},
        9,
    ),
    (
        "Slice-int-max",
        node("Slice", ["x", "s", "e"]),
        {"x": i64(2, 3, 4, 5), "s": i64(1), "e": i64(INT_MAX)},
        13,
    ),
    (
        "Slice-negative-step",
        node("Slice", ["x", "s", "e", "a", "t"]),
        {
            "x": rand(4, 5),
            "s": i64(-1, 4),
            "e": i64(INT_MIN, 0),
            "a": i64(0, 1),
            "t": i64(-1, -2),
        },
        13,
    ),
    (
        "Slice-step-clamped",
        node("Slice", ["x", "s", "e", "a", "t"]),
        {"x": rand(6, 5), "s": i64(-100), "e": i64(100), "a": i64(-2), "t": i64(3)},
        13,
    ),
    (
        "Slice-omitted-axes",
        node("Slice", ["x", "s", "e", "", "t"]),
        {"x": rand(6), "s": i64(5), "e": i64(-10), "t": i64(-2)},
        13,
    ),
    (
        "Split-input",
        helper.make_node("Split", ["x", "s"], ["y", "z"], axis=1),
        {"x": np.arange(12, dtype=np.int64).reshape(3, 4), "s": i64(1, 3)},
        13,
    ),
    (
        "Split-attr",
        helper.make_node("Split", ["x"], ["y", "z"], axis=-1, split=[3, 1]),
        {"x": rand(3, 4)},
        11,
    ),
    (
        "Split-num-outputs",
        helper.make_node("Split", ["x"], ["y", "z"], num_outputs=2),
        {"x": i64(1, 2, 3, 4, 5)},
        18,
    ),
    ("Reshape", node("Reshape", ["x", "s"]), {"x": rand(2, 3, 4), "s": i64(0, -1)}, 13),
    ("Reshape-int", node("Reshape", ["x", "s"]), {"x": ints_a, "s": i64(3, 2)}, 13),
    ("Transpose", node("Transpose", ["x"]), {"x": rand(2, 3, 4)}, 13),
    (
        "Transpose-perm",
        node("Transpose", ["x"], perm=[1, 2, 0]),
        {"x": rand(2, 3, 4)},
        13,
    ),
    ("Flatten", node("Flatten", ["x"], axis=2), {"x": rand(2, 3, 4)}, 13),
    (
        "Range-int",
        node("Range", ["s", "l", "d"]),
        {"s": i64(10).reshape(()), "l": i64(-2).reshape(()), "d": i64(-3).reshape(())},
        13,
    ),
    (
        "Range-float",
        node("Range", ["s", "l", "d"]),
        {
            "s": np.array(0.5, np.float32),
            "l": np.array(2.0, np.float32),
            "d": np.array(0.25, np.float32),
        },
        13,
    ),
    ("Expand", node("Expand", ["x", "s"]), {"x": rand(3, 1), "s": i64(2, 1, 4)}, 13),
    ("Tile", node("Tile", ["x", "r"]), {"x": rand(2, 3), "r": i64(2, 3)}, 13),
    (
        "MelWeightMatrix",
        node("MelWeightMatrix", ["m", "n", "sr", "lo", "hi"]),
        {
            "m": np.array(8, np.int64),
            "n": np.array(32, np.int64),
            "sr": np.array(8000, np.int64),
            "lo": np.array(100.0, np.float32),
            "hi": np.array(3500.0, np.float32),
        },
        17,
    ),
    ("ConstantOfShape-default", node("ConstantOfShape", ["s"]), {"s": i64(2, 3)}, 13),
    (
        "ConstantOfShape-int",
        node("ConstantOfShape", ["s"], value=numpy_helper.from_array(i64(7))),
        {"s": i64(4)},
        13,
    ),
    (
        "ConstantOfShape-scalar",
        node(
            "ConstantOfShape",
            ["s"],
            value=numpy_helper.from_array(np.array([1.5], np.float32)),
        ),
        {"s": np.zeros(0, np.int64)},
        13,
    ),
    (
        "ReduceProd-attr",
        node("ReduceProd", ["x"], axes=[0], keepdims=0),
        {"x": i64(2, 3, 4)},
        13,
    ),
    (
        "ReduceProd-input",
        node("ReduceProd", ["x", "a"], keepdims=1),
        {"x": rand(2, 3), "a": i64(-1)},
        18,
    ),
    (
        "ReduceSum-input",
        node("ReduceSum", ["x", "a"], keepdims=0),
        {"x": rand(2, 3), "a": i64(0)},
        13,
    ),
    ("ReduceSum-all-int", node("ReduceSum", ["x"], keepdims=0), {"x": ints_a}, 13),
    ("ReduceMax-attr", node("ReduceMax", ["x"], axes=[1]), {"x": rand(2, 3)}, 13),
    (
        "ReduceMin-input",
        node("ReduceMin", ["x", "a"]),
        {"x": rand(2, 3), "a": i64(0, 1)},
        18,
    ),
    (
        "ReduceMean-attr",
        node("ReduceMean", ["x"], axes=[0], keepdims=0),
        {"x": rand(2, 3)},
        13,
    ),
    (
        "QuantizeLinear-per-axis",
        node("QuantizeLinear", ["x", "s", "z"], axis=0),
        {
            "x": rand(2, 5) * 100,
            "s": np.array([0.5, 3.0], np.float32),
            "z": np.array([-4, 9], np.int8),
        },
        21,
    ),
    (
        "DequantizeLinear-blocked",
        node("DequantizeLinear", ["x", "s", "z"], axis=1, block_size=2),
        {
            "x": np.arange(10, dtype=np.uint8).reshape(2, 5),
            "s": rand(2, 3),
            "z": np.array([[1, 2, 3], [4, 5, 6]], np.uint8),
        },
        21,
    ),
    ("NonZero", node("NonZero", ["x"]), {"x": np.array([[0, 1.5], [-2, 0]])}, 17),
    ("NonZero-bool", node("NonZero", ["x"]), {"x": BOOLS_A}, 17),
    (
        "Compress-axis",
        node("Compress", ["x", "c"], axis=1),
        {"x": rand(2, 3), "c": np.array([True, False])},
        17,
    ),
    ("Unique", node("Unique", ["x"]), {"x": i64(3, 1, 3, 2, 1)}, 17),
    (
        "Unique-axis",
        node("Unique", ["x"], axis=0),
        {"x": np.array([[2.0, 1.0], [0.0, 1.0], [2.0, 1.0]])},
        17,
    ),
    (
        "Compress-flat",
        node("Compress", ["x", "c"]),
        {"x": rand(2, 3), "c": np.array([False, True, True, False, True])},
        17,
    ),
]


@pytest.mark.parametrize(
    ("case", "fold_node", "inputs", "opset"),
    FOLD_CASES,
    ids=[case[0] for case in FOLD_CASES],
)
def test_fold_matches_reference(
    case: str, fold_node: Any, inputs: dict[str, Array], opset: int
) -> None:
    check_fold(fold_node, inputs, opset)


def test_every_folder_has_a_case() -> None:
    tested = {fold_node.op_type for _, fold_node, _, _ in FOLD_CASES}
    assert set(FOLDERS) <= tested, set(FOLDERS) - tested


# ---- Shape and Size -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "opset"),
    [
        ({}, 13),
        ({}, 15),
        ({"start": 1}, 15),
        ({"start": -2, "end": -1}, 15),
        ({"end": 10}, 15),
    ],
)
def test_shape_of_a_runtime_tensor(attrs: dict[str, Any], opset: int) -> None:
    x = rand(2, 3, 4)
    model = model_of(
        [helper.make_node("Shape", ["x"], ["s"], **attrs)],
        {"x": x},
        {"s": TensorProto.INT64},
        opset=opset,
    )
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    got = folded(model)["s"]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_size_of_a_runtime_tensor() -> None:
    x = rand(2, 3, 4)
    model = model_of(
        [helper.make_node("Size", ["x"], ["n"])], {"x": x}, {"n": TensorProto.INT64}
    )
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    got = folded(model)["n"]
    assert got.dtype == np.int64 and got.shape == ()
    np.testing.assert_array_equal(got, expected)


# ---- whole models through qidao.compile ---------------------------------------------


def check_compiled(model: onnx.ModelProto, **inputs: Array) -> None:
    expected = ReferenceEvaluator(model).run(None, inputs)
    got = qidao.compile(model)(*inputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def tg_ops(model: onnx.ModelProto) -> list[str]:
    (func,) = import_onnx(model).ops
    return [op.name for op in func.regions[0].block.ops if op.name != "func.return"]


@pytest.mark.parametrize("opset", [11, 13, 17])
def test_flatten_by_shape_pattern(opset: int) -> None:
    """``x.view(x.size(0), -1)`` as PyTorch exports it."""
    unsqueeze = (
        helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0])
        if opset < 13
        else helper.make_node("Unsqueeze", ["n", "zero"], ["n1"])
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Shape", ["r"], ["s"]),
        helper.make_node("Gather", ["s", "idx"], ["n"], axis=0),
        unsqueeze,
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["r", "target"], ["y"]),
    ]
    inits = {
        "idx": i64(0).reshape(()),
        "zero": i64(0),
        "minus_one": i64(-1),
    }
    if opset < 13:
        del inits["zero"]
    model = model_of(
        nodes, {"x": rand(2, 3, 4)}, {"y": TensorProto.FLOAT}, inits, opset
    )
    assert tg_ops(model) == ["tg.relu", "tg.reshape"]
    check_compiled(model, x=rand(2, 3, 4))


def test_constant_of_shape_feeding_add() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node(
            "ConstantOfShape",
            ["s"],
            ["c"],
            value=numpy_helper.from_array(np.array([1.5], np.float32)),
        ),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    model = model_of(nodes, {"x": rand(2, 3)}, {"y": TensorProto.FLOAT})
    assert tg_ops(model) == ["tg.constant", "tg.add"]
    check_compiled(model, x=rand(2, 3))


def test_integer_arithmetic_on_shapes() -> None:
    """[n, h*w/2, 2] from the shape of x: Gather, Mul, Div, Sub, Slice, ReduceProd,
    Cast and Concat, all folded; one runtime op uses a shape cast to float."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"]),
        helper.make_node("Slice", ["s", "one", "big"], ["hw_dims"]),
        helper.make_node("ReduceProd", ["hw_dims"], ["hw"], keepdims=1),
        helper.make_node("Div", ["hw", "two"], ["half"]),
        helper.make_node("Sub", ["three", "one"], ["two_again"]),
        helper.make_node("Concat", ["n", "half", "two_again"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Cast", ["half"], ["half_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["r", "half_f"], ["y"]),
    ]
    inits = {
        "i0": i64(0),
        "one": i64(1),
        "big": i64(INT_MAX),
        "two": i64(2),
        "three": i64(3),
    }
    model = model_of(nodes, {"x": rand(2, 3, 4)}, {"y": TensorProto.FLOAT}, inits, 13)
    assert tg_ops(model) == ["tg.reshape", "tg.constant", "tg.mul"]
    check_compiled(model, x=rand(2, 3, 4))


def test_all_constant_float_graph_folds_to_one_constant() -> None:
    nodes = [
        helper.make_node("Mul", ["a", "b"], ["ab"]),
        helper.make_node("Relu", ["ab"], ["r"]),
        helper.make_node("Add", ["x", "r"], ["y"]),
    ]
    model = model_of(
        nodes, {"x": rand(3)}, {"y": TensorProto.FLOAT}, {"a": rand(3), "b": rand(3)}
    )
    assert tg_ops(model) == ["tg.constant", "tg.add"]
    check_compiled(model, x=rand(3))


# ---- constant-only ops --------------------------------------------------------------


def test_constant_only_ops_are_supported_and_listed() -> None:
    for op_type in ["ConstantOfShape", "Range"]:
        assert op_type in CONSTANT_ONLY_OPS
        assert op_type in SUPPORTED_OPS
    # folded on constants, converted to tg.gather / tg.concat / tg.slice otherwise
    for op_type in ["Add", "Reshape", "Shape", "Conv", "Gather", "Concat", "Slice"]:
        assert op_type not in CONSTANT_ONLY_OPS


@pytest.mark.parametrize(
    ("op", "extra"),
    [
        (
            helper.make_node("Range", ["x", "limit", "delta"], ["y"], name="g"),
            {"limit": np.array(5.0, np.float32), "delta": np.array(1.0, np.float32)},
        ),
        (helper.make_node("ConstantOfShape", ["x"], ["y"], name="g"), {}),
    ],
)
def test_constant_only_op_on_runtime_tensor_is_an_error(
    op: Any, extra: dict[str, Array]
) -> None:
    x = np.array(0.0, np.float32) if op.op_type == "Range" else i64(2, 3)
    model = model_of([op], {"x": x}, {"y": TensorProto.FLOAT}, extra, 13)
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    message = str(info.value)
    assert f"{op.op_type} node 'g'" in message
    assert "supported only on constant inputs" in message
    assert "'x'" in message


def test_scan_lists_unknown_ops_but_not_constant_only_ones() -> None:
    nodes = [
        helper.make_node("Gather", ["x", "i"], ["g"], name="gather"),
        helper.make_node("RandomNormalLike", ["g"], ["y"], name="coin"),
    ]
    model = model_of(nodes, {"x": rand(2, 3)}, {"y": TensorProto.FLOAT}, {"i": i64(0)})
    with pytest.raises(UnsupportedOpsError) as info:
        import_onnx(model)
    assert info.value.ops == {"RandomNormalLike": ["coin"]}


# ---- bad constant inputs name the node ----------------------------------------------


@pytest.mark.parametrize(
    ("op", "inputs", "match"),
    [
        (
            node("Div", ["a", "b"], name="d"),
            {"a": i64(1), "b": i64(0)},
            "Div node 'd'.*zero",
        ),
        (
            node("Gather", ["x", "i"], name="g"),
            {"x": i64(1, 2), "i": i64(2)},
            "Gather node 'g'.*out of range",
        ),
        (
            node("Range", ["s", "l", "d"], name="r"),
            {"s": i64(0).reshape(()), "l": i64(3).reshape(()), "d": i64(0).reshape(())},
            "Range node 'r'.*delta",
        ),
        (
            node("Cast", ["x"], to=TensorProto.STRING, name="c"),
            {"x": i64(1)},
            "Cast node 'c'.*STRING",
        ),
    ],
)
def test_bad_constant_inputs_name_the_node(
    op: Any, inputs: dict[str, Array], match: str
) -> None:
    model = model_of([op], {}, {"y": TensorProto.UNDEFINED}, inputs, 13)
    with pytest.raises(OnnxImportError, match=match):
        folded(model)
