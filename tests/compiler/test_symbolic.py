"""Symbolic dimensions: one compile serves every size in a declared range.

Each model is compiled once and called at several sizes, its outputs compared with
NumPy, ONNX Runtime or PyTorch computed at that size (qidao.compiler.symbolic,
docs/dynamic-shapes.md).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.compiler.symbolic import SymbolicProgram
from qidao.dialects.symbolic import Dim
from qidao.errors import ArgumentError, UnsupportedError
from qidao.frontend.builder import Graph
from qidao.frontend.onnx.symbolic import SymbolicShapeError

RNG = np.random.default_rng(7)
W = RNG.standard_normal((8, 24)).astype(np.float32)


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _attention_graph(seq: Dim) -> Graph:
    """x [seq, 8]: a projection, attention over seq (no mask: every key counts, so
    a loop that ran past the call's size would change the result) and a sum over
    seq."""
    g = Graph()
    x = g.input("x", (seq, 8))
    h = g.tanh(g.matmul(x, g.constant(W)))
    p = g.softmax(g.matmul(x, g.transpose(x, (1, 0))), axis=-1)
    g.output(h, g.matmul(p, x), g.reduce_sum(h, axes=[0]))
    return g


def _reference(x: np.ndarray) -> list[np.ndarray]:
    h = np.tanh(x @ W)
    return [h, _softmax(x @ x.T) @ x, h.sum(0)]


@pytest.fixture(scope="module")
def attention() -> SymbolicProgram:
    compiled = qidao.compile(_attention_graph(Dim("seq", 1, 100)), threads=1)
    assert isinstance(compiled, SymbolicProgram)
    return compiled


@pytest.mark.parametrize("n", [1, 3, 64, 99, 100])
def test_one_compile_serves_every_size(attention: SymbolicProgram, n: int) -> None:
    x = RNG.standard_normal((n, 8)).astype(np.float32)
    got = attention(x)
    for out, ref in zip(got, _reference(x), strict=True):
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_the_program_is_compiled_at_the_capacity(attention: SymbolicProgram) -> None:
    assert attention.stats["symbolic"]["dims"] == {"seq": [1, 100, 128]}
    assert attention.shapes() == [("seq", 8)]
    assert attention.stats["symbolic"]["outputs"] == [["seq", ""], ["seq", ""], [""]]
    assert "qd.symbolic" in attention.ir("schedule")


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ((np.zeros((101, 8), np.float32),), "'seq' = 101, outside its declared range"),
        ((np.zeros((0, 8), np.float32),), "'seq' = 0, outside its declared range"),
        ((np.zeros((5, 7), np.float32),), "axis 1 has size 7, expected 8"),
        ((np.zeros((5, 8), np.float64),), "dtype"),
        ((np.zeros(8, np.float32),), "rank 1, expected 2 (shape [seq, 8])"),
        ((), "expected 1 input(s)"),
    ],
)
def test_bad_calls_are_refused_before_native_code(
    attention: SymbolicProgram, arrays: tuple[np.ndarray, ...], message: str
) -> None:
    with pytest.raises(ArgumentError, match=re.escape(message)):
        attention(*arrays)


def test_one_dimension_has_one_size_across_inputs() -> None:
    seq = Dim("seq", 1, 40)
    g = Graph()
    a, b = g.input("a", (seq, 4)), g.input("b", (seq, 4))
    g.output(g.add(a, b))
    compiled = qidao.compile(g, threads=1)
    a_, b_ = np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(compiled(a_, b_)[0], a_ + b_)
    with pytest.raises(ArgumentError, match="'seq' is 3 in input 'a' axis 0 but 5"):
        compiled(a_, np.ones((5, 4), np.float32))


def test_a_dimension_declared_twice_differently_is_refused() -> None:
    g = Graph()
    g.input("a", (Dim("seq", 1, 40), 4))
    with pytest.raises(Exception, match="dimension 'seq' is declared as"):
        g.input("b", (Dim("seq", 1, 50), 4))


def test_an_index_from_the_end_is_refused() -> None:
    """x[-1] at the capacity is a position that most calls do not have."""
    g = Graph()
    x = g.input("x", (Dim("seq", 1, 64), 4))
    g.output(g.slice(x, [63, 0], [64, 4], [1, 1]))
    with pytest.raises(UnsupportedError, match="covers part of it"):
        qidao.compile(g)


def test_kernels_lowered_in_other_processes_take_the_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: a model of many kernels lowers over processes, one part without
    the host; its kernels must still get the size (they ran to the capacity, and a
    softmax over seq summed the padding: BERT's outputs were off by 0.3)."""
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", "2")
    monkeypatch.setattr(
        "qidao.compiler.targets.cpu.lower.PARALLEL_MIN_KERNELS", 2
    )  # forked workers see it
    compiled = qidao.compile(
        _attention_graph(Dim("seq", 1, 60)), threads=1, mode="eager"
    )
    assert compiled.stats["compile_processes"] == 2
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    for out, ref in zip(compiled(x), _reference(x), strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# --- ONNX: dim_param ------------------------------------------------------------


def _onnx_attention(path: Path) -> Path:
    """y = softmax((x W) (x W)^T) (x W) + pos[:seq] over x [1, seq, 8]; pos is
    sliced with the size Shape reads, as exporters write position embeddings."""
    pos = RNG.standard_normal((64, 24)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Transpose", ["h"], ["ht"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h", "ht"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "h"], ["a"]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["n"], axis=0),
        helper.make_node("Slice", ["pos", "zero", "n", "zero"], ["p_n"]),
        helper.make_node("Add", ["a", "p_n"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 24])],
        [
            numpy_helper.from_array(W, "w"),
            numpy_helper.from_array(pos, "pos"),
            numpy_helper.from_array(np.array([1], np.int64), "one"),
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    out = path / "attention.onnx"
    onnx.save(model, out)
    return out


def test_an_onnx_dim_param_becomes_symbolic(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    path = _onnx_attention(tmp_path)
    session = ort.InferenceSession(str(path))
    compiled = qidao.compile(path, dynamic={"seq": (1, 64)}, threads=1)
    assert isinstance(compiled, SymbolicProgram)
    rng = np.random.default_rng(3)
    for n in (1, 17, 64):
        x = rng.standard_normal((1, n, 8)).astype(np.float32)
        (ref,) = session.run(None, {"x": x})
        (got,) = compiled(x)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_a_range_of_one_size_fixes_the_dimension(tmp_path: Path) -> None:
    compiled = qidao.compile(_onnx_attention(tmp_path), dynamic={"seq": (9, 9)})
    assert not isinstance(compiled, SymbolicProgram)
    assert compiled.inputs[0].shape == (1, 9, 8)  # type: ignore[attr-defined]


def test_a_model_that_computes_with_the_size_is_refused(tmp_path: Path) -> None:
    """y = x / seq: the size folds to the capacity, which is right at it alone."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["n"], axis=0),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["x", "nf"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mean_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 4])],
        [numpy_helper.from_array(np.array([0], np.int64), "one")],
    )
    path = tmp_path / "div.onnx"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path
    )
    with pytest.raises(SymbolicShapeError, match="computes with the size of seq"):
        qidao.compile(path, dynamic={"seq": (1, 64)})


@pytest.mark.parametrize(
    ("dynamic", "message"),
    [
        ({"seq": (1, 64), "batch": (1, 4)}, "names 'batch', which no input dimension"),
        ({"seq": (4, 2)}, "1 <= lo <= hi"),
        ({"seq": 64}, "expected a range"),
    ],
)
def test_bad_dynamic_arguments(tmp_path: Path, dynamic: dict, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        qidao.compile(_onnx_attention(tmp_path), dynamic=dynamic)


def test_an_unnamed_dynamic_axis_is_an_error(tmp_path: Path) -> None:
    model = onnx.load(_onnx_attention(tmp_path))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(ArgumentError, match="axis 0 is dynamic \\('batch'\\)"):
        qidao.compile(model, dynamic={"seq": (1, 64)})


def test_dynamic_takes_an_onnx_model() -> None:
    with pytest.raises(ArgumentError, match="a builder graph declares"):
        qidao.compile(_attention_graph(Dim("seq", 1, 8)), dynamic={"seq": (1, 8)})


def test_gpt2_exported_with_dynamic_axes_matches_pytorch(tmp_path: Path) -> None:
    """transformers' GPT-2 (1 layer, hidden 64, random weights), exported with a
    dynamic sequence axis: one compile, PyTorch eager at each size."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=512,
        n_embd=64,
        n_layer=1,
        n_head=2,
        n_positions=64,
        attn_implementation="eager",
    )
    net = transformers.GPT2LMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.net(input_ids=ids).logits

    path = tmp_path / "gpt2.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Logits().eval(),
            (torch.zeros((1, 8), dtype=torch.int64),),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["ids"],
            output_names=["logits"],
            dynamic_axes={"ids": {1: "seq"}, "logits": {1: "seq"}},
        )
    compiled = qidao.compile(path, dynamic={"seq": (1, 64)}, threads=1)
    for n in (1, 13, 64):
        ids = RNG.integers(0, 512, (1, n)).astype(np.int64)
        with torch.no_grad():
            ref = net(input_ids=torch.from_numpy(ids)).logits.numpy()
        (got,) = compiled(ids)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


# --- PyTorch: torch.export's Dim ----------------------------------------------------


def _torch_attention() -> object:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = torch.nn.Linear(16, 16)
            self.k = torch.nn.Linear(16, 16)
            self.pos = torch.nn.Parameter(torch.randn(64, 16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.pos[: x.shape[1]]  # a table of exactly the capacity's rows
            a = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2) / 4.0, -1)
            return a @ x

    return Attention().eval()


def test_a_torch_export_dim_becomes_symbolic() -> None:
    torch = pytest.importorskip("torch")
    model = _torch_attention()
    seq = torch.export.Dim("seq", min=1, max=64)
    compiled = qidao.compile(
        model,
        example_inputs=(torch.zeros((1, 8, 16)),),
        dynamic=({1: seq},),
        strict=True,
    )
    assert isinstance(compiled.compiled, SymbolicProgram)  # type: ignore[attr-defined]
    for n in (1, 9, 64):
        x = torch.randn(1, n, 16)
        with torch.no_grad():
            ref = model(x)  # type: ignore[operator]
        got = compiled(x)
        assert tuple(got.shape) == (1, n, 16)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_a_torch_dim_needs_a_max() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(ArgumentError, match="needs a max"):
        qidao.compile(
            _torch_attention(),
            example_inputs=(torch.zeros((1, 8, 16)),),
            dynamic=({1: torch.export.Dim("seq")},),
        )


def test_torch_compile_dynamic_compiles_once_for_every_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch.compile(dynamic=True) hands the backend a graph of symbolic sizes;
    with options={"dynamic": (lo, hi)} qidao compiles it once."""
    torch = pytest.importorskip("torch")
    import qidao.dynamo_backend as backend

    compiles = []

    def counted(*args: object, **kwargs: object) -> object:
        compiles.append(kwargs.get("dynamic"))
        return qidao.compile(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "compile", counted)
    torch._dynamo.reset()
    model = _torch_attention()
    fast = torch.compile(
        model, backend="qidao", dynamic=True, options={"dynamic": (2, 64)}
    )
    with torch.no_grad():
        for n in (8, 9, 64):
            x = torch.randn(1, n, 16)
            np.testing.assert_allclose(
                fast(x).numpy(),
                model(x).numpy(),
                rtol=1e-5,
                atol=1e-5,  # type: ignore[operator]
            )
    assert len(compiles) == 1 and compiles[0] is not None
    torch._dynamo.reset()
