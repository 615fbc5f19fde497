"""The ONNX importer: structure of the imported tg graphs, numerics, and errors.

Numerics: ``qidao.compile`` cannot lower tg yet, so ``run_tg`` below evaluates the
imported tg function with NumPy, op by op, and the results are compared with
``onnx.reference.ReferenceEvaluator`` on the original model. That checks the
importer's translation (attribute defaults, pads order, Gemm, Softmax coercion, ...),
not qidao's code generation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

import qidao
from qidao.dialects import tg
from qidao.frontend.errors import OnnxImportError, UnsupportedOpsError
from qidao.frontend.onnx import SUPPORTED_OPS, import_onnx

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)

# ---- helpers ----------------------------------------------------------------------


def make_model(
    nodes: list[Any],
    inputs: Mapping[str, Sequence[int | str]],
    outputs: Mapping[str, Sequence[int | str] | None],
    initializers: dict[str, Array] | None = None,
    opset: int = 17,
) -> Any:
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in inputs.items()
        ],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in outputs.items()
        ],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def func_of(module: ModuleOp) -> FuncOp:
    (func,) = module.ops
    assert isinstance(func, FuncOp)
    return func


def tg_ops(module: ModuleOp) -> list[str]:
    return [
        op.name for op in func_of(module).body.block.ops if op.name != "func.return"
    ]


def result_types(module: ModuleOp) -> list[str]:
    return [str(t) for t in func_of(module).function_type.outputs]


def _windows(
    x: Array,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
) -> tuple[list[Array], int, int]:
    """Strided slices of padded NCHW ``x``, one per kernel position."""
    h, w = x.shape[2:]
    oh = (h - dilation[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (w - dilation[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    out = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r, c = i * dilation[0], j * dilation[1]
            out.append(
                x[
                    :,
                    :,
                    r : r + strides[0] * (oh - 1) + 1 : strides[0],
                    c : c + strides[1] * (ow - 1) + 1 : strides[1],
                ]
            )
    return out, oh, ow


def _pad(x: Array, padding: tuple[int, ...], value: float) -> Array:
    top, left, bottom, right = padding
    return np.pad(
        x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value
    )


def _conv2d(op: tg.Conv2dOp, x: Array, w: Array, b: Array | None) -> Array:
    strides, padding, dilation = (
        tuple(op.strides.get_values()),
        tuple(op.padding.get_values()),
        tuple(op.dilation.get_values()),
    )
    groups = op.groups.value.data
    xp = _pad(x, padding, 0.0)
    n = x.shape[0]
    f, cg, kh, kw = w.shape
    patches, oh, ow = _windows(xp, (kh, kw), strides, dilation)
    y = np.zeros((n, groups, f // groups, oh, ow), dtype=np.float64)
    wg = w.reshape(groups, f // groups, cg, kh, kw)
    for k, patch in enumerate(patches):
        pg = patch.reshape(n, groups, cg, oh, ow)
        y += np.einsum("ngchw,gfc->ngfhw", pg, wg[:, :, :, k // kw, k % kw])
    y = y.reshape(n, f, oh, ow)
    if b is not None:
        y += b.reshape(1, f, 1, 1)
    return y.astype(np.float32)


def _eval_op(op: Operation, args: list[Array]) -> Array:
    binary: dict[type[Operation], Callable[..., Any]] = {
        tg.AddOp: np.add,
        tg.SubOp: np.subtract,
        tg.MulOp: np.multiply,
        tg.DivOp: np.divide,
        tg.MaxOp: np.maximum,
        tg.MinOp: np.minimum,
    }
    unary: dict[type[Operation], Callable[..., Any]] = {
        tg.NegOp: np.negative,
        tg.ExpOp: np.exp,
        tg.LogOp: np.log,
        tg.SqrtOp: np.sqrt,
        tg.TanhOp: np.tanh,
        tg.ErfOp: np.vectorize(math.erf, otypes=[np.float64]),
        tg.SinOp: np.sin,
        tg.CosOp: np.cos,
        tg.SigmoidOp: lambda v: 1 / (1 + np.exp(-v)),
        tg.ReluOp: lambda v: np.maximum(v, 0),
    }
    out_shape = tuple(op.results[0].type.get_shape())  # type: ignore[attr-defined]
    if isinstance(op, tg.ConstantOp):
        return op.to_numpy()
    if type(op) in binary:
        return np.asarray(binary[type(op)](args[0], args[1]))
    if type(op) in unary:
        return np.asarray(unary[type(op)](args[0]))
    if isinstance(op, tg.MatmulOp):
        return np.asarray(np.matmul(args[0], args[1]))
    if isinstance(op, tg.TransposeOp):
        return np.transpose(args[0], tuple(op.perm.get_values()))
    if isinstance(op, tg.ViewOp | tg.ReshapeOp | tg.ContiguousOp):
        return np.reshape(args[0], out_shape).copy()
    if isinstance(op, tg.BroadcastOp):
        return np.broadcast_to(args[0], out_shape)
    if isinstance(op, tg.ReduceOp):
        fn: dict[type[Operation], Callable[..., Any]] = {
            tg.ReduceSumOp: np.sum,
            tg.ReduceMeanOp: np.mean,
            tg.ReduceMaxOp: np.max,
        }
        axes = tuple(op.axes.get_values())
        return np.asarray(
            fn[type(op)](args[0], axis=axes, keepdims=op.keepdims is not None)
        )
    if isinstance(op, tg.SoftmaxOp):
        axis = op.normalized_axis()
        e = np.exp(args[0] - args[0].max(axis=axis, keepdims=True))
        return np.asarray(e / e.sum(axis=axis, keepdims=True))
    if isinstance(op, tg.Conv2dOp):
        return _conv2d(op, args[0], args[1], args[2] if len(args) > 2 else None)
    if isinstance(op, tg.MaxPool2dOp):
        kernel, strides, padding = op.pool_geometry()
        xp = _pad(args[0], padding, -np.inf)
        patches, _, _ = _windows(xp, kernel, strides, op.dilations())
        return np.asarray(np.max(np.stack(patches), axis=0))
    if isinstance(op, tg.AvgPool2dOp):
        kernel, strides, padding = op.pool_geometry()
        total = sum(_windows(_pad(args[0], padding, 0.0), kernel, strides, (1, 1))[0])
        if op.count_include_pad is not None:
            return np.asarray(total / math.prod(kernel))
        ones = _pad(np.ones_like(args[0]), padding, 0.0)
        return np.asarray(total / sum(_windows(ones, kernel, strides, (1, 1))[0]))
    if isinstance(op, tg.BatchNormOp):
        x, scale, bias, mean, var = args
        shape = (1, -1) + (1,) * (x.ndim - 2)
        eps = op.epsilon.value.data
        norm = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
        return np.asarray(norm * scale.reshape(shape) + bias.reshape(shape))
    raise NotImplementedError(op.name)


def run_tg(module: ModuleOp, *inputs: Array) -> list[Array]:
    """Evaluate the tg function of ``module`` with NumPy (a test oracle, not qidao)."""
    func = func_of(module)
    env: dict[SSAValue, Array] = dict(zip(func.body.block.args, inputs, strict=True))
    for op in func.body.block.ops:
        args = [env[o] for o in op.operands]
        if isinstance(op, ReturnOp):
            return [np.asarray(a, dtype=np.float32) for a in args]
        result = _eval_op(op, args)
        assert result.shape == tuple(op.results[0].type.get_shape()), op.name  # type: ignore[attr-defined]
        env[op.results[0]] = np.asarray(result)
    raise AssertionError("no func.return")


def check_numerics(model: Any, **inputs: Array) -> ModuleOp:
    module = import_onnx(model)
    expected = ReferenceEvaluator(model).run(None, inputs)
    got = run_tg(module, *inputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    return module


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


# ---- structure --------------------------------------------------------------------


def test_mlp_structure_and_names() -> None:
    model = make_model(
        [
            helper.make_node("MatMul", ["input:0", "w1"], ["h"], name="fc1"),
            helper.make_node("Add", ["h", "b1"], ["h_b"]),
            helper.make_node("Relu", ["h_b"], ["logits"]),
        ],
        {"input:0": [2, 4]},
        {"logits": [2, 3]},
        {"w1": rand(4, 3), "b1": rand(3)},
    )
    module = import_onnx(model)
    assert tg_ops(module) == [
        "tg.constant",
        "tg.matmul",
        "tg.constant",
        "tg.add",
        "tg.relu",
    ]
    func = func_of(module)
    assert func.sym_name.data == "main"
    for key, want in [("qd.input_names", ["input:0"]), ("qd.output_names", ["logits"])]:
        attr = func.attributes[key]
        assert isinstance(attr, ArrayAttr)
        assert [a.data for a in attr.data if isinstance(a, StringAttr)] == want
    text = str(module)
    assert "@main(%input: tensor<2x4xf32>) -> tensor<2x3xf32>" in text
    assert "%w1 = tg.constant" in text
    assert "%logits = tg.relu %h_b" in text


def test_supported_ops_listed() -> None:
    for op_type in ["Add", "Conv", "Gemm", "Softmax", "BatchNormalization"]:
        assert op_type in SUPPORTED_OPS


def test_accepts_a_path(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Exp", ["x"], ["y"])], {"x": [3]}, {"y": [3]})
    path = tmp_path / "exp.onnx"
    onnx.save(model, str(path))
    assert tg_ops(import_onnx(path)) == ["tg.exp"]
    assert tg_ops(import_onnx(str(path))) == ["tg.exp"]


def test_initializer_that_is_also_an_input_is_a_constant() -> None:
    model = make_model(
        [helper.make_node("Mul", ["x", "scale"], ["y"])],
        {"x": [2, 2], "scale": [2]},
        {"y": [2, 2]},
        {"scale": np.array([2.0, 3.0], np.float32)},
    )
    module = import_onnx(model)
    assert [str(t) for t in func_of(module).function_type.inputs] == ["tensor<2x2xf32>"]
    assert tg_ops(module) == ["tg.constant", "tg.mul"]


def test_reshape_shape_input_is_not_materialized() -> None:
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        {"x": [2, 3, 4]},
        {"y": [2, 12]},
        {"shape": np.array([0, -1], np.int64)},
    )
    module = check_numerics(model, x=rand(2, 3, 4))
    assert tg_ops(module) == ["tg.reshape"]
    assert result_types(module) == ["tensor<2x12xf32>"]


def test_transpose_output_is_row_major() -> None:
    model = make_model(
        [helper.make_node("Transpose", ["x"], ["y"])],
        {"x": [2, 3, 4]},
        {"y": [4, 3, 2]},
    )
    module = check_numerics(model, x=rand(2, 3, 4))
    assert tg_ops(module) == ["tg.transpose", "tg.contiguous"]
    assert result_types(module) == ["tensor<4x3x2xf32>"]


def test_global_average_pool_is_a_mean() -> None:
    model = make_model(
        [helper.make_node("GlobalAveragePool", ["x"], ["y"])],
        {"x": [1, 3, 4, 5]},
        {"y": [1, 3, 1, 1]},
    )
    module = check_numerics(model, x=rand(1, 3, 4, 5))
    assert tg_ops(module) == ["tg.reduce_mean"]
    assert "axes = [2, 3] keepdims" in str(module)


def test_multiple_outputs_in_graph_order() -> None:
    model = make_model(
        [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Neg", ["x"], ["n"])],
        {"x": [3]},
        {"n": [3], "e": [3]},
    )
    module = check_numerics(model, x=rand(3))
    ret = func_of(module).body.block.last_op
    assert isinstance(ret, ReturnOp)
    assert [v.owner.name for v in ret.arguments] == ["tg.neg", "tg.exp"]  # type: ignore[union-attr]


# ---- numerics per op --------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_binary_broadcasting(op_type: str) -> None:
    model = make_model(
        [helper.make_node(op_type, ["x", "y"], ["z"])],
        {"x": [2, 3], "y": [3]},
        {"z": [2, 3]},
    )
    check_numerics(model, x=rand(2, 3), y=rand(3) + 3.0)


@pytest.mark.parametrize("op_type", ["Max", "Min"])
def test_variadic_max_min_fold_pairwise(op_type: str) -> None:
    model = make_model(
        [helper.make_node(op_type, ["a", "b", "c"], ["z"])],
        {"a": [4], "b": [1], "c": [2, 4]},
        {"z": [2, 4]},
    )
    module = check_numerics(model, a=rand(4), b=rand(1), c=rand(2, 4))
    assert len(tg_ops(module)) == 2


@pytest.mark.parametrize(
    "op_type",
    [
        *("Neg", "Exp", "Log", "Sqrt", "Tanh", "Erf", "Sin", "Cos"),
        *("Sigmoid", "Relu", "Identity"),
    ],
)
def test_unary(op_type: str) -> None:
    model = make_model(
        [helper.make_node(op_type, ["x"], ["y"])], {"x": [5]}, {"y": [5]}
    )
    x = rand(5)
    if op_type in ("Log", "Sqrt"):
        x = np.abs(x) + 0.1
    check_numerics(model, x=x)


@pytest.mark.parametrize("approximate", [None, "none", "tanh"])
def test_gelu_opset_20(approximate: str | None) -> None:
    attrs = {} if approximate is None else {"approximate": approximate}
    model = make_model(
        [helper.make_node("Gelu", ["x"], ["y"], **attrs)],
        {"x": [2, 6]},
        {"y": [2, 6]},
        opset=20,
    )
    module = check_numerics(model, x=rand(2, 6) * 3)
    names = set(tg_ops(module))
    assert ("tg.tanh" in names) == (approximate == "tanh")
    assert ("tg.erf" in names) == (approximate != "tanh")


def test_gelu_rejects_an_unknown_approximation() -> None:
    model = make_model(
        [helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="fast")],
        {"x": [3]},
        {"y": [3]},
        opset=20,
    )
    with pytest.raises(OnnxImportError, match=r'Gelu.*approximate must be "none" or'):
        import_onnx(model)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([3, 4], [4, 5]),
        ([4], [4, 5]),
        ([3, 4], [4]),
        ([4], [4]),
        ([2, 3, 4], [4]),
        ([4], [2, 4, 5]),
        ([2, 3, 4], [1, 4, 5]),
    ],
)
def test_matmul_numpy_rules(a: list[int], b: list[int]) -> None:
    out = list(np.matmul(np.zeros(a), np.zeros(b)).shape)
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": out}
    )
    check_numerics(model, a=rand(*a), b=rand(*b))


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"transA": 1},
        {"transB": 1, "alpha": 0.5},
        {"transA": 1, "transB": 1, "alpha": 2.0, "beta": 3.0},
        {"beta": 0.0},
    ],
)
def test_gemm(attrs: dict[str, Any]) -> None:
    a = rand(4, 3) if attrs.get("transA") else rand(3, 4)
    b = rand(5, 4) if attrs.get("transB") else rand(4, 5)
    model = make_model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)],
        {"a": list(a.shape)},
        {"y": [3, 5]},
        {"b": b, "c": rand(5)},
    )
    check_numerics(model, a=a)


def test_gemm_without_c() -> None:
    model = make_model(
        [helper.make_node("Gemm", ["a", "b"], ["y"], alpha=2.0)],
        {"a": [2, 3], "b": [3, 4]},
        {"y": [2, 4]},
    )
    check_numerics(model, a=rand(2, 3), b=rand(3, 4))


def test_transpose_with_perm() -> None:
    model = make_model(
        [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 2, 0])],
        {"x": [2, 3, 4]},
        {"y": [3, 4, 2]},
    )
    check_numerics(model, x=rand(2, 3, 4))


@pytest.mark.parametrize(
    ("shape", "allowzero", "out"),
    [([-1], 0, [24]), ([0, 0, -1], 0, [2, 3, 4]), ([4, -1, 2], 0, [4, 3, 2])],
)
def test_reshape(shape: list[int], allowzero: int, out: list[int]) -> None:
    model = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=allowzero)],
        {"x": [2, 3, 4]},
        {"y": out},
        {"s": np.array(shape, np.int64)},
    )
    check_numerics(model, x=rand(2, 3, 4))


def test_reshape_shape_from_constant_node() -> None:
    model = make_model(
        [
            helper.make_node(
                "Constant",
                [],
                ["s"],
                value=numpy_helper.from_array(np.array([3, 8], np.int64)),
            ),
            helper.make_node("Reshape", ["x", "s"], ["y"]),
        ],
        {"x": [2, 3, 4]},
        {"y": [3, 8]},
    )
    check_numerics(model, x=rand(2, 3, 4))


@pytest.mark.parametrize(("axis", "out"), [(1, [2, 12]), (0, [1, 24]), (-1, [6, 4])])
def test_flatten(axis: int, out: list[int]) -> None:
    model = make_model(
        [helper.make_node("Flatten", ["x"], ["y"], axis=axis)],
        {"x": [2, 3, 4]},
        {"y": out},
    )
    check_numerics(model, x=rand(2, 3, 4))


@pytest.mark.parametrize(
    "attrs",
    [
        {"value_float": 2.5},
        {"value_floats": [1.0, 2.0, 3.0]},
        {"value": numpy_helper.from_array(np.arange(3, dtype=np.float32))},
    ],
)
def test_constant_node(attrs: dict[str, Any]) -> None:
    model = make_model(
        [
            helper.make_node("Constant", [], ["c"], **attrs),
            helper.make_node("Add", ["x", "c"], ["y"]),
        ],
        {"x": [3]},
        {"y": [3]},
    )
    check_numerics(model, x=rand(3))


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceMax"])
@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute_or_input(
    op_type: str, opset: int, keepdims: int
) -> None:
    axes_as_input = opset >= (13 if op_type == "ReduceSum" else 18)
    axes = [0, -1]
    if axes_as_input:
        node = helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=keepdims)
        inits = {"axes": np.array(axes, np.int64)}
    else:
        node = helper.make_node(op_type, ["x"], ["y"], axes=axes, keepdims=keepdims)
        inits = {}
    out = [1, 3, 1] if keepdims else [3]
    model = make_model([node], {"x": [2, 3, 4]}, {"y": out}, inits, opset=opset)
    check_numerics(model, x=rand(2, 3, 4))


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMax"])
def test_reduce_without_axes(op_type: str) -> None:
    model = make_model(
        [helper.make_node(op_type, ["x"], ["y"])],
        {"x": [2, 3]},
        {"y": [1, 1]},
        opset=18,
    )
    check_numerics(model, x=rand(2, 3))


def test_reduce_noop_with_empty_axes() -> None:
    model = make_model(
        [helper.make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)],
        {"x": [2, 3]},
        {"y": [2, 3]},
        opset=13,
    )
    module = check_numerics(model, x=rand(2, 3))
    assert tg_ops(module) == []


@pytest.mark.parametrize(
    ("opset", "axis", "n_ops"),
    [(11, None, 3), (11, 2, 1), (11, 0, 3), (13, None, 1), (13, 1, 1)],
)
def test_softmax_opsets(opset: int, axis: int | None, n_ops: int) -> None:
    attrs: dict[str, Any] = {} if axis is None else {"axis": axis}
    model = make_model(
        [helper.make_node("Softmax", ["x"], ["y"], **attrs)],
        {"x": [2, 3, 4]},
        {"y": [2, 3, 4]},
        opset=opset,
    )
    x = rand(2, 3, 4)
    if opset >= 13:
        module = check_numerics(model, x=x)
    else:
        # onnx.reference implements only the opset-13 semantics; before 13 the input
        # is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])] (axis default 1)
        module = import_onnx(model)
        k = 1 if axis is None else axis
        flat = x.reshape(math.prod(x.shape[:k]), -1)
        e = np.exp(flat - flat.max(axis=1, keepdims=True))
        expected = (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)
        np.testing.assert_allclose(run_tg(module, x)[0], expected, rtol=1e-5, atol=1e-6)
    assert len(tg_ops(module)) == n_ops


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [1, 1, 1, 1]},
        {"pads": [0, 1, 2, 0], "strides": [2, 1]},
        {"dilations": [2, 2], "pads": [2, 1, 2, 1]},
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
        {"auto_pad": "VALID", "strides": [2, 2]},
        {"group": 2, "pads": [1, 1, 1, 1]},
    ],
)
def test_conv(attrs: dict[str, Any]) -> None:
    group = attrs.get("group", 1)
    w = rand(4, 4 // group, 3, 3)
    x = rand(1, 4, 7, 6)
    reference = ReferenceEvaluator(
        make_model(
            [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
            {"x": [1, 4, 7, 6]},
            {"y": None},
            {"w": w, "b": rand(4)},
        )
    )
    (expected,) = reference.run(None, {"x": x})
    out_shape = list(np.shape(expected))
    model = make_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
        {"x": [1, 4, 7, 6]},
        {"y": out_shape},
        {"w": w, "b": rand(4)},
    )
    module = check_numerics(model, x=x)
    assert tg_ops(module)[-1] == "tg.conv2d"


def test_conv_without_bias() -> None:
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1])],
        {"x": [2, 3, 4, 4]},
        {"y": [2, 5, 4, 4]},
        {"w": rand(5, 3, 1, 1)},
    )
    check_numerics(model, x=rand(2, 3, 4, 4))


@pytest.mark.parametrize(
    ("op_type", "attrs", "out"),
    [
        ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 2, 3, 3]),
        ("MaxPool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, [1, 2, 6, 6]),
        (
            "MaxPool",
            {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
            [1, 2, 3, 3],
        ),
        ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2]}, [1, 2, 4, 4]),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, [1, 2, 6, 6]),
        (
            "AveragePool",
            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
            [1, 2, 6, 6],
        ),
        (
            "AveragePool",
            {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"},
            [1, 2, 6, 6],
        ),
        ("AveragePool", {"kernel_shape": [2, 3], "strides": [2, 1]}, [1, 2, 3, 4]),
    ],
)
def test_pools(op_type: str, attrs: dict[str, Any], out: list[int]) -> None:
    model = make_model(
        [helper.make_node(op_type, ["x"], ["y"], **attrs)],
        {"x": [1, 2, 6, 6]},
        {"y": out},
    )
    check_numerics(model, x=rand(1, 2, 6, 6))


def test_batch_normalization() -> None:
    c = 3
    model = make_model(
        [
            helper.make_node(
                "BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3
            )
        ],
        {"x": [2, c, 4, 4]},
        {"y": [2, c, 4, 4]},
        {"s": rand(c), "b": rand(c), "m": rand(c), "v": np.abs(rand(c)) + 0.5},
    )
    module = check_numerics(model, x=rand(2, c, 4, 4))
    assert tg_ops(module)[-1] == "tg.batch_norm"


def test_small_cnn_end_to_end() -> None:
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node(
                "MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]
            ),
            helper.make_node("Flatten", ["p1"], ["f"]),
            helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], transB=1),
            helper.make_node("Softmax", ["logits"], ["probs"]),
        ],
        {"x": [2, 1, 8, 8]},
        {"probs": [2, 10]},
        {"w1": rand(4, 1, 3, 3), "b1": rand(4), "w2": rand(10, 64), "b2": rand(10)},
    )
    check_numerics(model, x=rand(2, 1, 8, 8))


# ---- errors -----------------------------------------------------------------------


def test_unsupported_ops_are_all_listed_with_their_nodes() -> None:
    model = make_model(
        [
            helper.make_node("RandomNormalLike", ["x"], ["a"], name="coin_1"),
            helper.make_node("Relu", ["a"], ["b"], name="relu"),
            helper.make_node("RandomNormalLike", ["b"], ["c"]),
            helper.make_node("RandomUniformLike", ["c"], ["y"], name="noise"),
        ],
        {"x": [3]},
        {"y": [3]},
    )
    with pytest.raises(UnsupportedOpsError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "2 unsupported op type(s)" in message
    assert "RandomNormalLike: coin_1, #2" in message
    assert "RandomUniformLike: noise" in message
    assert "Relu" not in message
    assert info.value.ops == {
        "RandomNormalLike": ["coin_1", "#2"],
        "RandomUniformLike": ["noise"],
    }
    assert isinstance(info.value, OnnxImportError)


def test_unsupported_ops_reported_before_anything_else() -> None:
    # the dynamic input would fail too, but the op scan comes first
    model = make_model(
        [helper.make_node("RandomNormalLike", ["x"], ["y"], name="c")],
        {"x": ["N", 3]},
        {"y": ["N", 3]},
    )
    with pytest.raises(UnsupportedOpsError, match="RandomNormalLike: c"):
        import_onnx(model)


def test_garbage_file(tmp_path: Path) -> None:
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\xff\xfe this is not a protobuf \x00\x01\x02" * 10)
    with pytest.raises(OnnxImportError, match=r"garbage\.onnx"):
        import_onnx(path)


def test_truncated_file(tmp_path: Path) -> None:
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        {"x": [2, 64]},
        {"y": [2, 64]},
        {"w": rand(64, 64)},
    )
    data = model.SerializeToString()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match=r"cannot read .*truncated\.onnx"):
        import_onnx(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(OnnxImportError, match="no ONNX file"):
        import_onnx(tmp_path / "nope.onnx")


def test_dynamic_input_dim_asks_for_concrete_shapes() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        {"x": ["batch", 3]},
        {"y": ["batch", 3]},
    )
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "'x'" in message and "[batch, 3]" in message and "input_shapes" in message


def test_input_shapes_fix_dynamic_dims() -> None:
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Reshape", ["r", "s"], ["y"]),
        ],
        {"x": ["batch", 3]},
        {"y": ["batch", 3, 1]},
        {"s": np.array([0, 3, 1], np.int64)},
    )
    module = import_onnx(model, input_shapes={"x": (5, 3)})
    assert [str(t) for t in func_of(module).function_type.inputs] == ["tensor<5x3xf32>"]
    assert result_types(module) == ["tensor<5x3x1xf32>"]
    with pytest.raises(OnnxImportError, match="not graph inputs"):
        import_onnx(model, input_shapes={"z": (1, 3)})
    with pytest.raises(OnnxImportError, match="rank 1"):
        import_onnx(model, input_shapes={"x": (3,)})


def test_input_of_a_dtype_tg_lacks_is_rejected() -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["ids"], ["y"])],
        "g",
        [helper.make_tensor_value_info("ids", TensorProto.FLOAT8E8M0, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E8M0, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    with pytest.raises(OnnxImportError, match="input 'ids' has dtype FLOAT8E8M0"):
        import_onnx(model)


@pytest.mark.parametrize(
    ("node", "match"),
    [
        (
            helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=0),
            "LpPool node '#0': p must be an integer >= 1, got 0",
        ),
        (
            helper.make_node(
                "MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[2, 2, 2, 2]
            ),
            r"padding \[2, 2, 2, 2\] must be smaller than the window \[2, 2\]",
        ),
        (
            helper.make_node(
                "MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2], name="mp"
            ),
            "MaxPool node 'mp'.*idx",
        ),
    ],
)
def test_unsupported_attributes_are_named(node: Any, match: str) -> None:
    model = make_model([node], {"x": [1, 1, 4, 4]}, {"y": None})
    with pytest.raises(OnnxImportError, match=match):
        import_onnx(model)


def test_batchnorm_training_mode_uses_the_batch_statistics() -> None:
    """Normalized by the batch's mean and population variance over N, H, W; the
    running statistics move by ``1 - momentum`` towards them (ONNX's reference)."""
    rng = np.random.default_rng(3)
    params = {n: rng.standard_normal(3).astype(np.float32) for n in "sbm"}
    params["v"] = rng.uniform(0.5, 2.0, 3).astype(np.float32)
    model = make_model(
        [
            helper.make_node(
                "BatchNormalization",
                ["x", "s", "b", "m", "v"],
                ["y", "running_mean", "running_var"],
                training_mode=1,
                momentum=0.8,
                epsilon=1e-3,
            )
        ],
        {"x": [2, 3, 4, 5]},
        {"y": [2, 3, 4, 5], "running_mean": [3], "running_var": [3]},
        params,
        opset=15,
    )
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float64)
    y, mean, var = qidao.compile(model)(x.astype(np.float32))
    mu, sigma2 = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    c = (slice(None), None, None)
    want = (x - mu[c]) / np.sqrt(sigma2[c] + 1e-3) * params["s"][c] + params["b"][c]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, params["m"] * 0.8 + mu * 0.2, rtol=1e-5)
    np.testing.assert_allclose(var, params["v"] * 0.8 + sigma2 * 0.2, rtol=1e-5)


def test_shape_error_names_the_node() -> None:
    # ONNX would reject this in shape inference; the message still names the op
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
        {"a": [2, 3], "b": [4, 5]},
        {"y": [2, 5]},
    )
    with pytest.raises(OnnxImportError, match=r"MatMul|mm"):
        import_onnx(model)


# ---- end to end through qidao.compile ---------------------------------------------


def _compiled_models() -> dict[str, tuple[Any, dict[str, Array]]]:
    mlp = make_model(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Softmax", ["r"], ["y"]),
        ],
        {"x": [4, 8]},
        {"y": [4, 3]},
        {"w": rand(3, 8), "b": rand(3)},
    )
    cnn = make_model(
        [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["bn"]),
            helper.make_node("Relu", ["bn"], ["r1"]),
            helper.make_node(
                "MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]
            ),
            helper.make_node(
                "AveragePool", ["p1"], ["a1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]
            ),
            helper.make_node("Flatten", ["a1"], ["f"]),
            helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], transB=1),
            helper.make_node("Softmax", ["logits"], ["probs"]),
        ],
        {"x": [2, 1, 8, 8]},
        {"probs": [2, 10]},
        {
            "w1": rand(4, 1, 3, 3),
            "b1": rand(4),
            "s": rand(4),
            "bb": rand(4),
            "m": rand(4),
            "v": np.abs(rand(4)) + 0.5,
            "w2": rand(10, 64),
            "b2": rand(10),
        },
    )
    layout = make_model(
        [
            helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
            helper.make_node("ReduceMean", ["t"], ["y"], axes=[1], keepdims=0),
            helper.make_node("MatMul", ["v", "x"], ["mv"]),
        ],
        {"x": [2, 3, 4], "v": [3]},
        {"y": [4, 3], "mv": [2, 4]},
        opset=13,
    )
    return {
        "mlp": (mlp, {"x": rand(4, 8)}),
        "cnn": (cnn, {"x": rand(2, 1, 8, 8)}),
        "layout": (layout, {"x": rand(2, 3, 4), "v": rand(3)}),
    }


@pytest.mark.parametrize("name", ["mlp", "cnn", "layout"])
def test_compiled_matches_onnx_reference(name: str) -> None:
    import qidao

    model, inputs = _compiled_models()[name]
    compiled = qidao.compile(model)
    got = compiled(*inputs.values())
    expected = ReferenceEvaluator(model).run(None, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
