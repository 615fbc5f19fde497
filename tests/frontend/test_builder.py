"""The Python graph builder: ops, inferred types, the finished module, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp

from qidao.dialects import tg
from qidao.frontend.builder import Graph, Value, mlir_name
from qidao.frontend.errors import FrontendError, GraphError


def only_func(module: ModuleOp) -> FuncOp:
    ops = list(module.ops)
    assert len(ops) == 1 and isinstance(ops[0], FuncOp)
    return ops[0]


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in only_func(module).body.block.ops]


def names_attr(func: FuncOp, key: str) -> list[str]:
    attr = func.attributes[key]
    assert isinstance(attr, ArrayAttr)
    return [a.data for a in attr.data if isinstance(a, StringAttr)]


def test_linear_relu_from_the_brief() -> None:
    g = Graph("main")
    x = g.input("x", (1, 1))
    w = g.input("w", (1, 1))
    b = g.input("b", (1,))
    y = g.relu(g.matmul(x, w) + b)
    g.output(y)
    module = g.module()
    module.verify()
    assert op_names(module) == ["tg.matmul", "tg.add", "tg.relu", "func.return"]
    func = only_func(module)
    assert func.sym_name.data == "main"
    assert [str(t) for t in func.function_type.inputs] == [
        "tensor<1x1xf32>",
        "tensor<1x1xf32>",
        "tensor<1xf32>",
    ]
    assert names_attr(func, "qd.input_names") == ["x", "w", "b"]
    assert names_attr(func, "qd.output_names") == ["output0"]
    text = str(module)
    assert "func.func @main(%x: tensor<1x1xf32>, %w: tensor<1x1xf32>, %b:" in text


def test_values_know_shape_and_dtype() -> None:
    g = Graph()
    x = g.input("x", (2, 3, 4))
    assert x.shape == (2, 3, 4)
    assert x.dtype == "float32"
    assert x.rank == 3
    t = g.transpose(x)
    assert t.shape == (4, 3, 2)
    assert "strided" in str(t.type)
    assert g.reduce_sum(x, axes=1).shape == (2, 4)
    assert g.reduce_mean(x, axes=[1, 2], keepdims=True).shape == (2, 1, 1)
    assert g.reduce_max(x).shape == ()


def test_operators_build_elementwise_ops() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    y = g.input("y", (3,))
    results = [x + y, x - y, x * y, x / y, -x, x @ g.input("w", (3, 5))]
    assert [r.shape for r in results] == [(2, 3)] * 5 + [(2, 5)]
    g.output(*results)
    assert op_names(g.module()) == [
        "tg.add",
        "tg.sub",
        "tg.mul",
        "tg.div",
        "tg.neg",
        "tg.matmul",
        "func.return",
    ]


def test_python_scalars_become_rank0_constants() -> None:
    g = Graph()
    x = g.input("x", (2, 2))
    y = 1.0 - x * 2.0
    g.output(y)
    module = g.module()
    consts = [
        op for op in only_func(module).body.block.ops if isinstance(op, tg.ConstantOp)
    ]
    assert len(consts) == 2
    assert [str(c.result.type) for c in consts] == ["tensor<f32>", "tensor<f32>"]
    assert [float(c.to_numpy()) for c in consts] == [2.0, 1.0]
    sub = next(
        op for op in only_func(module).body.block.ops if isinstance(op, tg.SubOp)
    )
    assert sub.lhs.owner is consts[1]  # 1.0 - (...) keeps the operand order


def test_numpy_arrays_on_either_side() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    bias = np.arange(3, dtype=np.float32)
    left, right = bias + x, x + bias
    assert isinstance(left, Value) and left.shape == (2, 3)
    assert right.shape == (2, 3)


def test_constant_float64_defaults_to_float32() -> None:
    g = Graph()
    c = g.constant([[1.0, 2.0]])
    assert c.dtype == "float32" and c.shape == (1, 2)
    assert g.constant(np.zeros(3), dtype="float64").dtype == "float64"


def test_every_op_method() -> None:
    g = Graph()
    x = g.input("x", (1, 2, 6, 6))
    w = g.constant(np.ones((4, 2, 3, 3), np.float32))
    y = g.conv2d(x, w, np.zeros(4, np.float32), strides=1, padding=1)
    assert y.shape == (1, 4, 6, 6)
    y = g.conv2d(y, np.ones((4, 1, 3, 3), np.float32), padding=(0, 1, 2, 1), groups=4)
    assert y.shape == (1, 4, 6, 6)
    ones = np.ones(4, np.float32)
    y = g.batch_norm(y, ones, ones, ones, ones, epsilon=1e-3)
    p = g.max_pool2d(y, 2)
    assert p.shape == (1, 4, 3, 3)
    a = g.avg_pool2d(y, 3, strides=1, padding=1, count_include_pad=True)
    assert a.shape == (1, 4, 6, 6)
    m = g.maximum(g.minimum(p, 1.0), 0.0)
    u = g.sigmoid(g.cos(g.sin(g.tanh(g.sqrt(g.exp(g.log(m)))))))
    s = g.softmax(g.reshape(u, (4, 9)), axis=1)
    v = g.view(s, (2, 2, 9))
    bc = g.broadcast(g.constant(np.ones(9, np.float32)), (2, 9))
    c = g.contiguous(g.transpose(bc, (1, 0)))
    g.output(v, c, a)
    names = op_names(g.module())
    for expected in [
        "tg.conv2d",
        "tg.batch_norm",
        "tg.max_pool2d",
        "tg.avg_pool2d",
        "tg.max",
        "tg.min",
        "tg.log",
        "tg.exp",
        "tg.sqrt",
        "tg.tanh",
        "tg.sin",
        "tg.cos",
        "tg.sigmoid",
        "tg.reshape",
        "tg.softmax",
        "tg.view",
        "tg.broadcast",
        "tg.transpose",
        "tg.contiguous",
    ]:
        assert expected in names


def test_strided_outputs_are_made_row_major() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    g.output(g.transpose(x), names=["xt"])
    func = only_func(g.module())
    assert [str(t) for t in func.function_type.outputs] == ["tensor<3x2xf32>"]
    assert op_names(g.module())[-2:] == ["tg.contiguous", "func.return"]
    assert names_attr(func, "qd.output_names") == ["xt"]


def test_multiple_outputs_in_order() -> None:
    g = Graph("two")
    x = g.input("x", (4,))
    g.output(g.relu(x), names=["a"])
    g.output(g.exp(x), names=["b"])
    module = g.module()
    func = only_func(module)
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    assert [v.owner.name for v in ret.arguments] == ["tg.relu", "tg.exp"]  # type: ignore[union-attr]
    assert names_attr(func, "qd.output_names") == ["a", "b"]
    assert g.module() is module


def test_input_names_are_sanitized_but_kept() -> None:
    assert mlir_name("input:0") == "input_0"
    assert mlir_name("0weights") == "v0weights"
    assert mlir_name("106") == "v106"  # torch.onnx.export's value names
    assert mlir_name("_7") == "v_7"  # xDSL would print it as nothing
    assert mlir_name("") == "v"
    assert mlir_name("a.b-c$d") == "a.b-c$d"
    g = Graph()
    x = g.input("input:0", (2,))
    g.output(x + 1.0)
    func = only_func(g.module())
    assert names_attr(func, "qd.input_names") == ["input:0"]
    # xDSL drops a trailing ``_<digits>`` from name hints (it is its own uniquer)
    assert "@main(%input: tensor<2xf32>)" in str(func)


def test_matmul_mismatch_names_both_shapes() -> None:
    g = Graph()
    a = g.input("a", (2, 3))
    b = g.input("b", (4, 5))
    with pytest.raises(GraphError) as info:
        g.matmul(a, b)
    message = str(info.value)
    assert "matmul" in message
    assert "[2, 3]" in message and "[4, 5]" in message
    assert isinstance(info.value, FrontendError)


def test_bad_shapes_raise_graph_errors() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(GraphError, match=r"add.*not broadcastable"):
        _ = x + g.input("y", (4,))
    with pytest.raises(GraphError, match=r"reshape.*invalid for input of size 6"):
        g.reshape(x, (4, 2))
    with pytest.raises(GraphError, match="view size is not compatible"):
        g.view(g.transpose(x), (6,))
    with pytest.raises(GraphError, match="not a permutation"):
        g.transpose(x, (0, 0))
    with pytest.raises(GraphError, match="out of range"):
        g.softmax(x, axis=2)
    with pytest.raises(GraphError, match=r"conv2d.*rank-4"):
        g.conv2d(x, np.ones((1, 1, 1, 1), np.float32))
    with pytest.raises(GraphError, match=r"batch_norm.*scale must have shape \[3\]"):
        two = np.ones(2, np.float32)
        g.batch_norm(g.input("img", (1, 3, 2, 2)), two, two, two, two)
    with pytest.raises(GraphError, match="padding must be"):
        g.max_pool2d(x, 2, padding=(1, 2, 3))


def test_graph_misuse() -> None:
    g = Graph("g")
    x = g.input("x", (2,))
    with pytest.raises(GraphError, match="already has an input named 'x'"):
        g.input("x", (2,))
    with pytest.raises(GraphError, match="static shape"):
        g.input("d", (-1, 2))
    with pytest.raises(GraphError, match="dtype 'complex64' is not supported"):
        g.input("h", (2,), dtype="complex64")
    other = Graph("other")
    with pytest.raises(GraphError, match="belongs to graph 'g'"):
        other.relu(x)
    with pytest.raises(GraphError, match="no outputs"):
        g.module()
    g.output(x)
    g.module()
    with pytest.raises(GraphError, match="finished"):
        g.relu(x)


def test_compiled_builder_graph_matches_numpy() -> None:
    import qidao

    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    g = Graph()
    x = g.input("x", (2, 3))
    y = g.relu(x @ w + 1.0) * 2.0
    g.output(y, g.transpose(x))
    xs = rng.standard_normal((2, 3)).astype(np.float32)
    got = qidao.compile(g)(xs)
    np.testing.assert_allclose(got[0], np.maximum(xs @ w + 1.0, 0) * 2.0, rtol=1e-5)
    np.testing.assert_array_equal(got[1], xs.T)


def test_numeric_value_names_compile_and_run() -> None:
    """torch.onnx.export names values "22", "106": once sanitized they must not
    print as empty names (xDSL drops a trailing ``_<digits>``)."""
    import qidao

    g = Graph()
    x = g.input("22", (3,))
    y = g.relu(x)
    y.ssa.name_hint = mlir_name("106")
    g.output(y * 2.0)
    compiled = qidao.compile(g, threads=1)
    a = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    np.testing.assert_allclose(compiled(a)[0], np.maximum(a, 0) * 2)
