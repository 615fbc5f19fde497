"""``tg.concat``, ``tg.slice`` and ``tg.gather`` against NumPy, and their frontends.

Every compiled result must equal NumPy's bit for bit (these ops only move data), in
graph mode and in eager mode, whatever the layout of the operands (a transposed or
sliced input is read through its strides and offset). The NumPy reference of the
dialect (``numpy_eval``) must agree too. A slice is a view: it makes no kernel of
its own, and kernels downstream (elementwise, matmul, reductions, convolutions)
read it in place. Then the ONNX converters (``Concat``, ``Slice``, ``Gather``,
``Split`` on runtime tensors) and the PyTorch ones (``cat``, slicing, ``select``,
``split``, ``chunk``, ...).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects import func

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError, OnnxImportError
from qidao.frontend.onnx import import_onnx
from qidao.passes.kernels.lowering.indexing import index_runs

Array = np.ndarray[Any, Any]
MODES = ["graph", "eager"]


def rand(*shape: int, seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def check(g: Graph, inputs: list[Array], want: list[Array], mode: str) -> Any:
    """Compile ``g`` in ``mode``, run it, and compare with ``want`` exactly; the
    dialect's NumPy reference must agree as well. Returns the compiled model."""
    compiled = qidao.compile(g, mode=mode)
    got = compiled(*inputs)
    reference = evaluate_function(_function(g), inputs)
    for k, (a, r, w) in enumerate(zip(got, reference, want, strict=True)):
        assert a.shape == w.shape, f"output #{k}: shape {a.shape}, expected {w.shape}"
        np.testing.assert_array_equal(a, w, err_msg=f"output #{k}")
        np.testing.assert_array_equal(r, w, err_msg=f"reference, output #{k}")
    return compiled


def _function(g: Graph) -> func.FuncOp:
    return next(op for op in g.module().walk() if isinstance(op, func.FuncOp))


def _source(g: Graph, x: Value, a: Array, layout: str) -> tuple[Value, Array]:
    """``x`` as given, transposed (a strided view) or sliced (an offset view)."""
    if layout == "transposed":
        perm = tuple(range(x.rank - 1, -1, -1))
        return g.transpose(x, perm), np.transpose(a, perm)
    if layout == "sliced":
        start = [1] + [0] * (x.rank - 1)
        return g.slice(x, start), a[1:]
    return x, a


# --- tg.concat ----------------------------------------------------------------------


CONCAT_CASES = [
    # (shapes, axis)
    ([(2, 3), (2, 4)], 1),
    ([(2, 3), (1, 3), (3, 3)], 0),
    ([(2, 3, 4), (2, 3, 1), (2, 3, 2)], -1),
    ([(4,), (0,), (2,)], 0),
    ([(1, 2, 3, 3), (1, 5, 3, 3)], 1),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["plain", "transposed", "sliced"])
@pytest.mark.parametrize(("shapes", "axis"), CONCAT_CASES)
def test_concat_matches_numpy(
    shapes: list[tuple[int, ...]], axis: int, layout: str, mode: str
) -> None:
    g = Graph()
    values, arrays = [], []
    for k, shape in enumerate(shapes):
        # the first operand arrives in the given layout, made to have ``shape``
        if k == 0 and layout == "transposed":
            x = g.input(f"x{k}", shape[::-1])
            a = rand(*shape[::-1], seed=k)
            v, r = _source(g, x, a, layout)
            inputs_a = a
        elif k == 0 and layout == "sliced":
            x = g.input(f"x{k}", (shape[0] + 1, *shape[1:]))
            a = rand(shape[0] + 1, *shape[1:], seed=k)
            v, r = _source(g, x, a, layout)
            inputs_a = a
        else:
            a = rand(*shape, seed=k)
            v, r, inputs_a = g.input(f"x{k}", shape), a, a
        values.append(v)
        arrays.append((inputs_a, r))
    g.output(g.concat(values, axis))
    want = np.concatenate([r for _, r in arrays], axis=axis)
    check(g, [a for a, _ in arrays], [want], mode)


@pytest.mark.parametrize("mode", MODES)
def test_concat_of_one_value_twice_a_constant_and_a_computed_value(mode: str) -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    c = np.arange(6, dtype=np.float32).reshape(2, 3)
    splat = np.full((2, 1), 0.5, np.float32)
    y = g.concat([x, g.relu(x), x, g.constant(c), g.constant(splat)], axis=1)
    g.output(y * 2.0)
    a = rand(2, 3)
    want = np.concatenate([a, np.maximum(a, 0), a, c, splat], axis=1) * 2
    check(g, [a], [want], mode)


def test_concat_of_conv_outputs_through_the_layout_pass() -> None:
    """An Inception-style join: the convolutions run NHWC (the ``layout`` pass), the
    concat reads their results through the boundary transposes."""
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((8, 4, 1, 1)).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, 4, 6, 6))
    y = g.concat([g.conv2d(x, w1, padding=1), g.conv2d(x, w2)], axis=1)
    g.output(g.relu(y))
    compiled = qidao.compile(g)
    a = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    (want,) = evaluate_function(_function(g), [a])
    (got,) = compiled(a)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_concat_of_constants_folds() -> None:
    g = Graph()
    x = g.input("x", (2, 2))
    c = g.concat([g.constant(np.ones((1, 2))), g.constant(np.zeros((1, 2)))], 0)
    g.output(x + c)
    compiled = qidao.compile(g)
    assert "tg.concat" not in compiled.ir("tg")
    a = rand(2, 2)
    (got,) = compiled(a)
    np.testing.assert_array_equal(got, a + np.array([[1, 1], [0, 0]], np.float32))


def test_concat_errors_name_the_operand() -> None:
    g = Graph()
    x, y = g.input("x", (2, 3)), g.input("y", (3, 3))
    with pytest.raises(GraphError, match=r"operand #1 tensor<3x3xf32> must have"):
        g.concat([x, y], axis=1)
    with pytest.raises(GraphError, match="axis 2 is out of range"):
        g.concat([x, x], axis=2)


# --- tg.slice -----------------------------------------------------------------------


SLICE_CASES: list[tuple[tuple[int, ...], list[Any], list[Any], list[Any]]] = [
    # (shape, start, stop, step): Python's rules, None for the default
    ((5, 7), [1, 2], [4, None], [1, 1]),
    ((5, 7), [None, 1], [None, None], [2, 3]),
    ((5, 7), [-3, -100], [None, 100], [1, 2]),
    ((2, 3, 4), [0, 1, 1], [2, 3, 3], [1, 1, 1]),
    ((6,), [4], [2], [1]),  # empty
    ((4, 6), [None, None], [None, None], [-1, -2]),  # negative steps: gathers
    ((4, 6), [3, 5], [0, None], [-2, -1]),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["plain", "transposed", "sliced"])
@pytest.mark.parametrize(("shape", "start", "stop", "step"), SLICE_CASES)
def test_slice_matches_numpy(
    shape: tuple[int, ...],
    start: list[Any],
    stop: list[Any],
    step: list[Any],
    layout: str,
    mode: str,
) -> None:
    g = Graph()
    if layout == "transposed":
        x = g.input("x", shape[::-1])
        a = rand(*shape[::-1])
    elif layout == "sliced":
        x = g.input("x", (shape[0] + 1, *shape[1:]))
        a = rand(shape[0] + 1, *shape[1:])
    else:
        x, a = g.input("x", shape), rand(*shape)
    source, moved = _source(g, x, a, layout)
    y = g.slice(source, start, stop, step)
    g.output(y, g.neg(y))
    index = tuple(slice(*b) for b in zip(start, stop, step, strict=True))
    want = moved[index]
    check(g, [a], [want, -want], mode)


def test_slice_is_a_view_read_in_place() -> None:
    """No kernel for the slice: the neg kernel reads the input through the slice's
    strides and offset."""
    g = Graph()
    x = g.input("x", (4, 6))
    y = g.slice(x, [1, 1], [3, 6], [1, 2])
    assert y.type.encoding is not None
    assert "strided<[6, 2], offset: 7>" in str(y.type)
    g.output(g.neg(y))
    compiled = check(g, [a := rand(4, 6)], [-a[1:3, 1:6:2]], "graph")
    assert compiled.stats["kernels"] == 1
    assert 'qd.kernel = "tg.neg"' in compiled.ir("affine")


@pytest.mark.parametrize("mode", MODES)
def test_slices_feed_every_kind_of_kernel(mode: str) -> None:
    """Offset views as operands of matmul, reductions, softmax, conv2d and a fused
    elementwise chain."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    g = Graph()
    x = g.input("x", (5, 8))
    img = g.input("img", (2, 3, 7, 7))
    top, bottom = g.slice(x, [0, 2], [2, 5]), g.slice(x, [2, 1], [5, 4])
    m = g.matmul(top, bottom)
    r = g.reduce_sum(g.slice(x, [1], None, [2]), 1)
    s = g.softmax(g.slice(x, [0, 2], [5, 8]), -1)
    c = g.conv2d(g.slice(img, [1, 0, 1, 1]), w, padding=1)
    f = g.relu(g.slice(x, [1], [4]) * 2.0 + 1.0)
    g.output(m, r, s, c, f)
    a = rng.standard_normal((5, 8)).astype(np.float32)
    b = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    compiled = qidao.compile(g, mode=mode)
    got = compiled(a, b)
    want = evaluate_function(_function(g), [a, b])
    for k, (o, e) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-5, err_msg=f"#{k}")
    np.testing.assert_allclose(want[0], a[:2, 2:5] @ a[2:5, 1:4], rtol=1e-5)


def test_slice_of_a_conv_output_through_the_layout_pass() -> None:
    """A slice of an NHWC chain's result reads a row-major copy (``layout`` treats
    ``tg.slice`` as layout-dependent), so its type never changes under it."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, 8, 6, 6))
    y = g.relu(g.conv2d(g.relu(g.conv2d(x, w, padding=1)), w, padding=1))
    g.output(g.slice(y, [0, 2, 1, 0], [1, 6, 5, 6], [1, 2, 1, 2]))
    compiled = qidao.compile(g)
    assert 'layout = "NHWC"' in compiled.ir("tg")
    a = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    (want,) = evaluate_function(_function(g), [a])
    (got,) = compiled(a)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_full_slice_is_the_value_itself() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    assert g.slice(x, [None, 0], [None, 3]) is x


def test_slice_rejects_a_zero_step() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(GraphError, match="step must not be 0"):
        g.slice(x, [0], [1], [0])


# --- tg.gather ----------------------------------------------------------------------


def test_index_runs() -> None:
    assert index_runs((4, 5, 6, 0, 0, 7)) == [(0, 3, 4, 1), (3, 2, 0, 0), (5, 1, 7, 0)]
    assert index_runs((3, 1, -1)) == [(0, 3, 3, -2)]
    assert index_runs(()) == []
    assert index_runs((2,)) == [(0, 1, 2, 0)]


GATHER_CASES: list[tuple[tuple[int, ...], Any, int]] = [
    # (shape, indices, axis)
    ((4, 5), [3, 0, 1, 1, -1], 1),
    ((4, 5), [[0, 3], [-2, 1]], 0),
    ((4, 5), 2, 1),  # a scalar index drops the axis
    ((3, 4, 5), [4, 3, 2, 1, 0], -1),
    ((3, 4, 5), [1, 3, 0, 2, 2, 2], 1),
    ((6,), [5, 0, 4, 1, 3, 2], 0),
    ((3, 4), np.zeros((0,), np.int64), 1),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["plain", "transposed"])
@pytest.mark.parametrize(("shape", "indices", "axis"), GATHER_CASES)
def test_gather_matches_numpy(
    shape: tuple[int, ...], indices: Any, axis: int, layout: str, mode: str
) -> None:
    g = Graph()
    if layout == "transposed":
        x = g.input("x", shape[::-1])
        a = rand(*shape[::-1])
    else:
        x, a = g.input("x", shape), rand(*shape)
    source, moved = _source(g, x, a, layout)
    y = g.gather(source, indices, axis)
    g.output(y, g.neg(y) if y.rank else y)
    want = np.take(moved, np.asarray(indices, np.int64), axis=axis)
    check(g, [a], [want, -want if want.ndim else want], mode)


def test_gather_negative_indices_are_normalized() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    y = g.gather(x, [-1, -3], axis=1)
    op = y.ssa.owner
    assert "indices = [2, 0]" in str(op)


def test_gather_out_of_range_names_the_index_and_the_bound() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(GraphError, match=r"tg.gather: index 3 \(#1\) is out of range"):
        g.gather(x, [0, 3], axis=1)
    with pytest.raises(GraphError, match="must be integers"):
        g.gather(x, [0.5], axis=1)


# --- ONNX ---------------------------------------------------------------------------


def _onnx_model(
    nodes: list[Any],
    inputs: dict[str, Array],
    outputs: list[str],
    initializers: dict[str, Array],
    opset: int,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in inputs.items()
        ],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _check_onnx(
    nodes: list[Any],
    inputs: dict[str, Array],
    outputs: list[str],
    initializers: dict[str, Array] | None = None,
    opset: int = 17,
) -> str:
    model = _onnx_model(nodes, inputs, outputs, initializers or {}, opset)
    want = ReferenceEvaluator(model).run(None, inputs)
    compiled = qidao.compile(import_onnx(model))
    got = compiled(*inputs.values())
    for k, (a, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(a, w, err_msg=f"output #{k}")
    return compiled.ir("tg")


def i64(*values: int) -> Array:
    return np.array(values, dtype=np.int64)


def test_onnx_concat_of_runtime_and_constant_tensors() -> None:
    node = helper.make_node("Concat", ["x", "c", "x"], ["y"], axis=-1)
    ir = _check_onnx([node], {"x": rand(2, 3)}, ["y"], {"c": rand(2, 1, seed=1)})
    assert "tg.concat" in ir


@pytest.mark.parametrize("opset", [9, 13])
def test_onnx_slice_of_a_runtime_tensor(opset: int) -> None:
    if opset < 10:
        node = helper.make_node(
            "Slice", ["x"], ["y"], starts=[1, -4], ends=[100, -1], axes=[0, 1]
        )
        init: dict[str, Array] = {}
    else:
        node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
        init = {"s": i64(1, -4), "e": i64(100, -1), "a": i64(0, -1), "t": i64(1, 2)}
    ir = _check_onnx([node], {"x": rand(3, 6)}, ["y"], init, opset)
    assert "tg.slice" in ir or "tg.contiguous" in ir


def test_onnx_slice_with_negative_steps_gathers() -> None:
    node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    init = {"s": i64(-1, 4), "e": i64(-100, 0), "a": i64(0, 1), "t": i64(-1, -2)}
    ir = _check_onnx([node], {"x": rand(4, 5)}, ["y"], init, 13)
    assert "tg.gather" in ir


@pytest.mark.parametrize("indices", [i64(2, 0, -1), np.array([[1, 0], [2, 2]]), i64(1)])
def test_onnx_gather_of_a_runtime_tensor(indices: Array) -> None:
    indices = indices.reshape(()) if indices.size == 1 else indices
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=1)
    ir = _check_onnx([node], {"x": rand(2, 3, 4)}, ["y"], {"i": indices})
    assert "tg.gather" in ir


def test_onnx_gather_out_of_range_names_the_node() -> None:
    node = helper.make_node("Gather", ["x", "i"], ["y"], name="g")
    model = _onnx_model([node], {"x": rand(2, 3)}, ["y"], {"i": i64(0, 5)}, 13)
    with pytest.raises(OnnxImportError, match=r"Gather node 'g'.*out of range"):
        import_onnx(model)


@pytest.mark.parametrize(
    ("opset", "attrs", "init"),
    [
        (11, {"axis": 1, "split": [1, 2, 3]}, {}),
        (13, {"axis": -1}, {"s": i64(4, 0, 2)}),
        (13, {"axis": 1}, {}),  # equal parts
        (18, {"axis": 1, "num_outputs": 3}, {}),
    ],
)
def test_onnx_split_of_a_runtime_tensor(
    opset: int, attrs: dict[str, Any], init: dict[str, Array]
) -> None:
    inputs = ["x", "s"] if init else ["x"]
    node = helper.make_node("Split", inputs, ["a", "b", "c"], **attrs)
    ir = _check_onnx([node], {"x": rand(2, 6)}, ["a", "b", "c"], init, opset)
    assert "tg.slice" in ir


# --- PyTorch ------------------------------------------------------------------------


class Indexing(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.cat([x, y, x], dim=1)
        first, second = torch.chunk(x, 2, dim=1)
        parts = torch.split(y, [1, 2], dim=1)
        rows = torch.unbind(x, 0)
        return (
            a[:, 1:-1:2] * 2,
            a[1] + 1,
            a[:, -1],
            first - second,
            parts[1] + 0,
            x.narrow(1, 1, 2) * 1,
            rows[1] * 3,
            torch.split(x, 3, dim=1)[1] + 0,
        )


def test_torch_indexing_ops_compile_without_fallback() -> None:
    x, y = torch.randn(2, 4), torch.randn(2, 3)
    model = Indexing().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = qidao.compile(model, example_inputs=(x, y), strict=True)
    for got, want in zip(compiled(x, y), model(x, y), strict=True):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())


@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_concat_of_a_view_of_a_splat_constant(mode: str) -> None:
    # a broadcast (and its transpose) of a one-element constant is a splat on the
    # host; tg.concat takes no splats, so it is materialized in the view's shape
    x = rand(3, 4)
    g = Graph("main")
    xv = g.input("x", (3, 4))
    two = g.constant(np.full((1, 1), 2.0, np.float32))
    row = g.broadcast(two, (1, 4))
    block = g.transpose(g.broadcast(two, (4, 2)), (1, 0))
    g.output(g.concat([xv, row, block], 0))
    want = np.concatenate([x, np.full((1, 4), 2.0), np.full((2, 4), 2.0)], 0)
    check(g, [x], [want.astype(np.float32)], mode)
