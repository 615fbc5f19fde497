"""ONNX ``ScatterElements``, ``ScatterND``, ``GatherND`` and ``TensorScatter`` through
``qidao.compile`` against ONNX Runtime: every reduction, negative and repeated
indices, ``batch_dims``, runtime and constant indices (a constant one out of range
is an import error naming the node), ``checks=True`` on a runtime one; and a
BEiT-style relative position bias whose index table is built by ``ScatterND``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import qidao
from qidao.frontend.errors import OnnxImportError

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def model_of(
    nodes: list[Any],
    inputs: dict[str, Array],
    initializers: dict[str, Array] | None = None,
    opset: int = 18,
) -> Any:
    """One output ``y`` of the first input's dtype; graph inputs shaped and typed
    as ``inputs``."""
    first = next(iter(inputs.values()))
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in inputs.items()
        ],
        [
            helper.make_tensor_value_info(
                "y", helper.np_dtype_to_tensor_dtype(first.dtype), None
            )
        ],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def check(model: Any, inputs: dict[str, Array]) -> Any:
    """qidao's output equals ONNX Runtime's (float results within 1e-6); returns
    the compiled model."""
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (want,) = session.run(None, inputs)
    compiled = qidao.compile(model)
    (got,) = compiled(*inputs.values())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return compiled


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_scatter_elements(reduction: str, dtype: Any) -> None:
    x = (RNG.standard_normal((3, 5)) * 10).astype(dtype)
    u = (RNG.standard_normal((3, 4)) * 10).astype(dtype)
    # distinct positions per row for "none", repeats (1 and -4) for the rest
    rows = [[0, -1, 2, 3], [4, 1, -3, 0], [1, 3, 0, 2]]
    repeats = [[1, -4, 1, 0], [4, 4, -1, 2], [0, 0, 0, 0]]
    i = np.array(rows if reduction == "none" else repeats, np.int64)
    node = helper.make_node(
        "ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction=reduction
    )
    check(model_of([node], {"x": x, "i": i, "u": u}), {"x": x, "i": i, "u": u})


def test_scatter_elements_of_constant_indices_checks_the_range() -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    u = RNG.standard_normal((1, 2)).astype(np.float32)
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="s")
    good = {"i": np.array([[2, -3]], np.int64)}
    check(model_of([node], {"x": x, "u": u}, good), {"x": x, "u": u})
    bad = {"i": np.array([[2, 3]], np.int64)}
    with pytest.raises(
        OnnxImportError,
        match=r"ScatterElements node 's': index 3 is out of range for axis 0 of size 3",
    ):
        qidao.compile(model_of([node], {"x": x, "u": u}, bad))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction: str) -> None:
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    i = np.array([[[1, 0], [-1, 2]], [[0, -3], [2, 1]]], np.int64)
    u = RNG.standard_normal((2, 2, 2)).astype(np.float32)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    check(model_of([node], {"x": x, "i": i, "u": u}), {"x": x, "i": i, "u": u})


def test_scatter_nd_add_accumulates_repeated_rows_of_ints() -> None:
    x = RNG.integers(-9, 9, (5, 3)).astype(np.int32)
    i = np.array([[1], [3], [1], [-4]], np.int64)
    u = RNG.integers(-9, 9, (4, 3)).astype(np.int32)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")
    check(model_of([node], {"x": x, "i": i, "u": u}), {"x": x, "i": i, "u": u})


@pytest.mark.parametrize(
    ("shape", "index_shape", "batch_dims"),
    [((4, 3), (2, 2), 0), ((2, 4, 3), (2, 5, 1), 1), ((2, 3, 4), (2, 2, 2), 1)],
)
def test_gather_nd(
    shape: tuple[int, ...], index_shape: tuple[int, ...], batch_dims: int
) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    sizes = np.array(shape[batch_dims : batch_dims + index_shape[-1]])
    i = RNG.integers(-sizes, sizes, index_shape).astype(np.int64)
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    check(model_of([node], {"x": x, "i": i}), {"x": x, "i": i})


def test_gather_nd_checks_a_runtime_index() -> None:
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    node = helper.make_node("GatherND", ["x", "i"], ["y"], name="g")
    i = np.array([[0, 1], [3, -1]], np.int64)
    compiled = qidao.compile(model_of([node], {"x": x, "i": i}), checks=True)
    np.testing.assert_array_equal(compiled(x, i)[0], x[[0, 3], [1, 2]])
    with pytest.raises(
        qidao.CheckError,
        match=r"GatherND node 'g', component 1 of the index tuples \(axis 1\): "
        r"index 3 is out of bounds for an axis of size 3",
    ):
        compiled(x, np.array([[0, 3], [3, 2]], np.int64))


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_with_runtime_write_indices(mode: str) -> None:
    cache = RNG.standard_normal((2, 3, 6, 4)).astype(np.float32)
    update = RNG.standard_normal((2, 3, 2, 4)).astype(np.float32)
    starts = np.array([1, 5 if mode == "circular" else 4], np.int64)
    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"], mode=mode)
    inputs: dict[str, Array] = {"c": cache, "u": update, "w": starts}
    want = cache.copy()
    for b, start in enumerate(starts):
        for s in range(2):
            want[b, :, (start + s) % 6] = update[b, :, s]
    (got,) = qidao.compile(model_of([node], inputs, opset=24))(*inputs.values())
    np.testing.assert_array_equal(got, want)


def test_beit_relative_position_bias_built_by_scatter_nd() -> None:
    """BEiT's relative position index: a ``(N + 1) x (N + 1)`` table whose patch
    block ``[1:, 1:]`` is the relative coordinates (a runtime tensor here) and whose
    first row, first column and corner are the class token's three extra entries,
    each written by a ``ScatterND``; then the bias is ``table[index]`` per head,
    added to the attention scores before the softmax."""
    window, heads = 2, 3
    n = window * window
    distances = (2 * window - 1) ** 2
    coords = np.stack(np.meshgrid(range(window), range(window), indexing="ij"))
    flat = coords.reshape(2, -1)
    rel = (flat[:, :, None] - flat[:, None, :]).transpose(1, 2, 0) + (window - 1)
    relative = (rel[..., 0] * (2 * window - 1) + rel[..., 1]).astype(np.int64)
    block = np.stack(
        np.meshgrid(range(1, n + 1), range(1, n + 1), indexing="ij"), -1
    ).astype(np.int64)
    row = np.array([[0, j] for j in range(n + 1)], np.int64)
    column = np.array([[j, 0] for j in range(n + 1)], np.int64)
    constants: dict[str, Array] = {
        "zeros": np.zeros((n + 1, n + 1), np.int64),
        "block": block,
        "row": row,
        "row_v": np.full(n + 1, distances, np.int64),
        "column": column,
        "column_v": np.full(n + 1, distances + 1, np.int64),
        "corner": np.array([[0, 0]], np.int64),
        "corner_v": np.array([distances + 2], np.int64),
        "table": RNG.standard_normal((distances + 3, heads)).astype(np.float32),
        "flat_shape": np.array([-1], np.int64),
        "bias_shape": np.array([n + 1, n + 1, heads], np.int64),
    }
    nodes = [
        helper.make_node("ScatterND", ["zeros", "block", "rel"], ["i0"]),
        helper.make_node("ScatterND", ["i0", "row", "row_v"], ["i1"]),
        helper.make_node("ScatterND", ["i1", "column", "column_v"], ["i2"]),
        helper.make_node("ScatterND", ["i2", "corner", "corner_v"], ["index"]),
        helper.make_node("Reshape", ["index", "flat_shape"], ["flat"]),
        helper.make_node("Gather", ["table", "flat"], ["picked"], axis=0),
        helper.make_node("Reshape", ["picked", "bias_shape"], ["bias3"]),
        helper.make_node("Transpose", ["bias3"], ["bias"], perm=[2, 0, 1]),
        helper.make_node("Add", ["scores", "bias"], ["biased"]),
        helper.make_node("Softmax", ["biased"], ["y"], axis=-1),
    ]
    scores = RNG.standard_normal((1, heads, n + 1, n + 1)).astype(np.float32)
    inputs = {"scores": scores, "rel": relative}
    model = model_of(nodes, inputs, constants)
    assert "tg.scatter_nd" in check(model, inputs).ir("tg")
