"""Gathers by a runtime index tensor, ``tg.take`` and ``tg.gather_elements``, against
NumPy, ``onnx.reference`` and PyTorch.

These ops only move data, so every compiled result must equal the reference bit for
bit, in graph and in eager mode, for float and integer data, i32 and i64 indices,
any axis, negative indices, and data or indices read through a strided view. The
dialect's NumPy reference (``numpy_eval``) must agree too. An index outside
``[-n, n)`` is clamped into the axis after one wrap (``dynamic_indexing.py``): the
kernels never read out of bounds. Then the frontends: ONNX ``Gather`` with runtime
indices (the constant path keeps ``tg.gather``) and ``GatherElements``, an
embedding lookup followed by a matmul end to end through ONNX and through
``qidao.compile(nn.Module)`` with ``nn.Embedding``, and ``index_select``,
``torch.gather`` and ``x[:, i]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from torch import nn
from xdsl.dialects import func

import qidao
from qidao import Compiled
from qidao.dialects.tg.dynamic_indexing import wrap_and_clamp
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError, OnnxImportError
from qidao.frontend.onnx import import_onnx

Array = np.ndarray[Any, Any]
MODES = ["graph", "eager"]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def data(shape: tuple[int, ...], dtype: str, seed: int = 0) -> Array:
    if dtype.startswith("float"):
        return rng(seed).standard_normal(shape).astype(dtype)
    if dtype == "bool":
        return rng(seed).integers(0, 2, shape).astype(bool)
    return rng(seed).integers(-1000, 1000, shape).astype(dtype)


def clamped(indices: Array, size: int) -> Array:
    """The entries the documented rule reads: wrap once, then clamp."""
    flat = [wrap_and_clamp(int(i), size) for i in indices.reshape(-1)]
    return np.array(flat, np.int64).reshape(indices.shape)


def take_reference(x: Array, indices: Array, axis: int) -> Array:
    return np.take(x, clamped(indices, x.shape[axis]), axis=axis)


def gather_elements_reference(x: Array, indices: Array, axis: int) -> Array:
    cut = tuple(
        slice(None) if d == axis % x.ndim else slice(0, n)
        for d, n in enumerate(indices.shape)
    )
    entries = clamped(indices, x.shape[axis])
    return np.take_along_axis(x[cut], entries, axis=axis)


def _function(g: Graph) -> func.FuncOp:
    return next(op for op in g.module().walk() if isinstance(op, func.FuncOp))


def check(g: Graph, inputs: list[Array], want: list[Array], mode: str) -> Any:
    """Compile ``g`` in ``mode``, run it, compare with ``want`` exactly; the dialect's
    NumPy reference must agree as well. Returns the compiled model."""
    compiled = qidao.compile(g, mode=mode)
    got = compiled(*inputs)
    reference = evaluate_function(_function(g), inputs)
    for k, (a, r, w) in enumerate(zip(got, reference, want, strict=True)):
        assert a.shape == w.shape, f"output #{k}: shape {a.shape}, expected {w.shape}"
        assert a.dtype == w.dtype, f"output #{k}: dtype {a.dtype}, expected {w.dtype}"
        np.testing.assert_array_equal(a, w, err_msg=f"output #{k}")
        np.testing.assert_array_equal(r, w, err_msg=f"reference, output #{k}")
    return compiled


def _view(g: Graph, x: Value, a: Array, layout: str) -> tuple[Value, Array]:
    """``x`` as given, or transposed (a strided view) of the reversed input."""
    if layout == "transposed":
        perm = tuple(range(x.rank - 1, -1, -1))
        return g.transpose(x, perm), np.transpose(a, perm)
    return x, a


# --- tg.take --------------------------------------------------------------------------


TAKE_CASES: list[tuple[tuple[int, ...], tuple[int, ...], int]] = [
    # (data shape, indices shape, axis)
    ((10, 4), (2, 3), 0),  # an embedding lookup
    ((4, 5), (3,), 1),
    ((4, 5), (), 1),  # a rank-0 index drops the axis
    ((3, 4, 5), (2, 2), -1),
    ((3, 4, 5), (6,), 1),
    ((7,), (4, 2), 0),
    ((3, 4), (0,), 1),  # nothing to take
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize(("shape", "index_shape", "axis"), TAKE_CASES)
def test_take_matches_numpy(
    shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    index_dtype: str,
    mode: str,
) -> None:
    n = shape[axis]
    indices = rng(1).integers(-n, n, index_shape).astype(index_dtype)
    a = data(shape, "float32")
    g = Graph()
    x = g.input("x", shape)
    i = g.input("i", index_shape, index_dtype)
    g.output(g.take(x, i, axis))
    check(g, [a, indices], [np.take(a, indices.astype(np.int64), axis=axis)], mode)


@pytest.mark.parametrize("dtype", ["float64", "int32", "int64", "bool"])
def test_take_of_every_dtype(dtype: str) -> None:
    a = data((6, 3), dtype)
    indices = np.array([[5, -1], [0, -6]], np.int64)
    g = Graph()
    x = g.input("x", a.shape, dtype)
    i = g.input("i", indices.shape, "int64")
    g.output(g.take(x, i, 0))
    check(g, [a, indices], [np.take(a, indices, axis=0)], "graph")


@pytest.mark.parametrize("layout", ["plain", "transposed"])
def test_take_reads_strided_data_and_indices(layout: str) -> None:
    """A transposed table and transposed indices are read in place."""
    a = data((5, 6), "float32")
    indices = np.array([[0, 4, -2], [3, 3, 1]], np.int32)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int32")
    source, moved = _view(g, x, a, layout)
    ids, moved_ids = _view(g, i, indices, layout)
    g.output(g.take(source, ids, 1))
    want = np.take(moved, moved_ids.astype(np.int64), axis=1)
    for mode in MODES:
        check(g, [a, indices], [want], mode)


def test_take_out_of_range_indices_are_clamped() -> None:
    """The documented rule: wrapped once if negative, then clamped into [0, n-1];
    the extremes of int64 read the first and the last entry, never out of bounds."""
    a = data((5, 3), "float32")
    big = np.iinfo(np.int64)
    indices = np.array([5, 6, 1000, big.max, -6, -7, -1000, big.min, -5, 4], np.int64)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    g.output(g.take(x, i, 0))
    entries = np.array([4, 4, 4, 4, 0, 0, 0, 0, 0, 4])
    assert list(clamped(indices, 5)) == list(entries)
    compiled = check(g, [a, indices], [a[entries]], "graph")
    small = np.iinfo(np.int32)
    (y,) = qidao.compile(_take_graph((5, 3), (2,), "int32"))(
        a, np.array([small.max, small.min], np.int32)
    )
    np.testing.assert_array_equal(y, a[[4, 0]])
    assert compiled.stats["kernels"] == 1


def _take_graph(
    shape: tuple[int, ...], index_shape: tuple[int, ...], dtype: str
) -> Graph:
    g = Graph()
    x = g.input("x", shape)
    i = g.input("i", index_shape, dtype)
    g.output(g.take(x, i, 0))
    return g


def test_take_verifier_errors_name_the_problem() -> None:
    g = Graph()
    x = g.input("x", (4, 3))
    f = g.input("f", (2,))
    with pytest.raises(GraphError, match=r"tg.take expects i32 or i64 indices"):
        g.take(x, f, 0)
    with pytest.raises(GraphError, match=r"axis 2 is out of range"):
        g.take(x, np.array([0]), 2)
    with pytest.raises(GraphError, match="must be integers"):
        g.take(x, [0.5], 0)
    empty = g.input("e", (0, 3))
    with pytest.raises(GraphError, match="is empty"):
        g.take(empty, np.array([0]), 0)


def test_take_of_constants_folds() -> None:
    g = Graph()
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = g.input("x", (2, 3))
    y = g.take(g.constant(table), np.array([3, -4]), 0)
    g.output(x + y)
    compiled = check(g, [table[:2]], [table[:2] + table[[3, 0]]], "graph")
    assert "tg.take" not in compiled.ir("tg")


def test_take_between_kernels_never_shares_its_input_buffer() -> None:
    """exp -> take -> neg: the take reads the exp's buffer at loaded positions, so
    plan-memory must not write its result over that buffer (only elementwise
    kernels work in place)."""
    a = data((6, 5), "float32")
    indices = np.array([5, 0, 5, 2, -1, 3], np.int64)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    g.output(g.neg(g.take(g.exp(x), i, 0)))
    want = -np.exp(a.astype(np.float64))[indices].astype(np.float32)
    compiled = qidao.compile(g)
    (y,) = compiled(a, indices)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    assert compiled.stats["kernels"] == 3


def test_take_is_its_own_kernel_and_takes_the_default_schedule() -> None:
    """fuse leaves the take alone (its elementwise consumer is another kernel); the
    default schedule treats it like a copy: the outer loop parallel when the work
    pays for the threads, else the reason."""
    table = data((1000, 128), "float32")
    ids = rng(2).integers(0, 1000, (8, 64)).astype(np.int64)
    g = Graph()
    w = g.constant(table)
    i = g.input("ids", ids.shape, "int64")
    g.output(g.relu(g.take(w, i, 0)))
    compiled = qidao.compile(g, threads=2)
    (y,) = compiled(ids)
    np.testing.assert_array_equal(y, np.maximum(table[ids], 0))
    assert compiled.stats["kernels"] == 2
    report = compiled.stats["default_schedule"]
    take = next(v for k, v in report.items() if k.endswith("_take"))
    assert take.startswith("elementwise: loop i0"), report
    small = qidao.compile(_take_graph((4, 3), (2,), "int64"), threads=2)
    assert "too little work" in next(iter(small.stats["default_schedule"].values()))


# --- tg.gather_elements ---------------------------------------------------------------


GATHER_ELEMENTS_CASES: list[tuple[tuple[int, ...], tuple[int, ...], int]] = [
    # (data shape, indices shape, axis)
    ((3, 4), (3, 2), 1),
    ((3, 4), (5, 4), 0),  # the axis may be longer than the data's
    ((3, 4), (2, 3), -1),  # and the other dimensions shorter (torch.gather)
    ((2, 3, 4), (2, 3, 4), 1),
    ((5,), (7,), 0),
    ((3, 4), (3, 0), 1),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize(("shape", "index_shape", "axis"), GATHER_ELEMENTS_CASES)
def test_gather_elements_matches_numpy(
    shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    index_dtype: str,
    mode: str,
) -> None:
    n = shape[axis]
    indices = rng(3).integers(-n, n, index_shape).astype(index_dtype)
    a = data(shape, "int64")
    g = Graph()
    x = g.input("x", shape, "int64")
    i = g.input("i", index_shape, index_dtype)
    g.output(g.gather_elements(x, i, axis))
    want = gather_elements_reference(a, indices, axis)
    check(g, [a, indices], [want], mode)
    if index_shape[axis % len(shape)] and all(
        m <= s for m, s in zip(index_shape, shape, strict=True)
    ):
        positive = torch.from_numpy(clamped(indices, n))
        torch_want = torch.gather(torch.from_numpy(a), axis, positive).numpy()
        np.testing.assert_array_equal(want, torch_want)


def test_gather_elements_out_of_range_indices_are_clamped() -> None:
    a = data((2, 3), "float32")
    indices = np.array([[3, -4, 100], [-100, 2, -3]], np.int64)
    g = Graph()
    x = g.input("x", a.shape)
    i = g.input("i", indices.shape, "int64")
    g.output(g.gather_elements(x, i, 1))
    want = np.array([[a[0, 2], a[0, 0], a[0, 2]], [a[1, 0], a[1, 2], a[1, 0]]])
    check(g, [a, indices], [want], "graph")


def test_gather_elements_verifier_errors_name_the_problem() -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    with pytest.raises(GraphError, match="indices of the input's rank 2"):
        g.gather_elements(x, np.array([0, 1]), 0)
    with pytest.raises(GraphError, match="larger than the input"):
        g.gather_elements(x, np.zeros((3, 5), np.int64), 0)


# --- ONNX -----------------------------------------------------------------------------


def _model(
    nodes: list[Any],
    inputs: dict[str, Array],
    outputs: dict[str, int],
    initializers: dict[str, Array] | None = None,
    opset: int = 17,
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
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def reference(model: onnx.ModelProto, inputs: dict[str, Array]) -> list[Array]:
    """The outputs ``onnx.reference`` computes."""
    return [np.asarray(a) for a in ReferenceEvaluator(model).run(None, inputs)]


def _run_onnx(model: onnx.ModelProto, inputs: dict[str, Array]) -> Compiled:
    """``qidao.compile`` of the model (ahead of time: the integer inputs are runtime
    inputs), checked exactly against ``onnx.reference``."""
    want = reference(model, inputs)
    compiled = qidao.compile(model)
    assert isinstance(compiled, Compiled), "an index input must not specialize"
    got = compiled(*inputs.values())
    for k, (a, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(a, w, err_msg=f"output #{k}")
    return compiled


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize(
    ("shape", "indices", "axis"),
    [
        ((5, 4), [[0, 4], [-1, -5]], 0),
        ((2, 5, 3), [4, -2, 0], 1),
        ((2, 3, 4), 3, -1),
    ],
)
def test_onnx_gather_of_runtime_indices(
    shape: tuple[int, ...], indices: Any, axis: int, index_dtype: Any
) -> None:
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    inputs = {"x": data(shape, "float32"), "i": np.array(indices, index_dtype)}
    compiled = _run_onnx(_model([node], inputs, {"y": TensorProto.FLOAT}), inputs)
    assert "tg.take" in compiled.ir("tg")
    assert [s.dtype for s in compiled.inputs] == ["float32", np.dtype(index_dtype).name]


def test_onnx_gather_of_constant_indices_stays_affine() -> None:
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=1)
    inputs = {"x": data((2, 3), "float32")}
    model = _model([node], inputs, {"y": TensorProto.FLOAT}, {"i": np.array([2, 0])})
    ir = _run_onnx(model, inputs).ir("tg")
    assert "tg.gather" in ir and "tg.take" not in ir


def test_onnx_gather_elements() -> None:
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)
    inputs = {
        "x": data((3, 4), "float32"),
        "i": np.array([[0, 3], [-1, 1], [2, -4]], np.int64),
    }
    compiled = _run_onnx(_model([node], inputs, {"y": TensorProto.FLOAT}), inputs)
    assert "tg.gather_elements" in compiled.ir("tg")


def test_onnx_gather_elements_of_constants_folds_and_checks_the_range() -> None:
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=0, name="ge")
    init = {"x": data((2, 2), "float32"), "i": np.array([[1, 0]])}
    model = _model([node], {}, {"y": TensorProto.FLOAT}, init)
    compiled = qidao.compile(model)
    (y,) = compiled()
    np.testing.assert_array_equal(y, reference(model, {})[0])
    init["i"] = np.array([[2, 0]])
    bad = _model([node], {}, {"y": TensorProto.FLOAT}, init)
    with pytest.raises(
        OnnxImportError, match=r"GatherElements node 'ge'.*out of range"
    ):
        import_onnx(bad)


def test_onnx_embedding_lookup_and_matmul_end_to_end() -> None:
    """Token ids (a runtime int64 input) pick rows of an embedding table, which a
    MatMul projects: a transformer's first layer. The ids stay a runtime input, so
    other ids run the same compiled code."""
    vocab, dim, out = 50, 16, 8
    init = {
        "table": data((vocab, dim), "float32", seed=4),
        "w": data((dim, out), "float32", seed=5),
    }
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
        helper.make_node("MatMul", ["emb", "w"], ["y"]),
    ]
    ids = rng(6).integers(0, vocab, (2, 7)).astype(np.int64)
    model = _model(nodes, {"ids": ids}, {"y": TensorProto.FLOAT}, init)
    compiled = qidao.compile(model)
    assert isinstance(compiled, Compiled)
    for seed in (6, 7):
        ids = rng(seed).integers(0, vocab, (2, 7)).astype(np.int64)
        (y,) = compiled(ids)
        (want,) = reference(model, {"ids": ids})
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    # the take, the matmul (of 2 * 7 rows: collapse-matmul-batch), and the copy of
    # its 2-D result, viewed back to [2, 7, 8], into the output buffer
    assert compiled.stats["kernels"] == 3


# --- PyTorch --------------------------------------------------------------------------


class EmbeddingModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 16)
        self.proj = nn.Linear(16, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(self.embed(ids)))


def test_torch_embedding_compiles_whole() -> None:
    torch.manual_seed(0)
    model = EmbeddingModel().eval()
    ids = torch.randint(0, 40, (2, 5))
    compiled = qidao.compile(model, example_inputs=(ids,), strict=True)
    assert "tg.take" in compiled.ir("input")
    for seed in (1, 2):
        other = torch.randint(
            0, 40, (2, 5), generator=torch.Generator().manual_seed(seed)
        )
        torch.testing.assert_close(compiled(other), model(other))


class Indexing(nn.Module):
    def forward(
        self, x: torch.Tensor, i: torch.Tensor, j: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return torch.gather(x, 1, i), x.index_select(0, j), x[:, j] * 2.0


def test_torch_index_select_gather_and_tensor_indexing() -> None:
    x = torch.randn(3, 4)
    i = torch.tensor([[0, 3], [1, 1], [2, 0]])
    j = torch.tensor([2, 0, 1], dtype=torch.int32)
    compiled = qidao.compile(Indexing(), example_inputs=(x, i, j), strict=True)
    for got, want in zip(compiled(x, i, j), Indexing()(x, i, j), strict=True):
        torch.testing.assert_close(got, want)
