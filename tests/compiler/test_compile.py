"""The public surface: qidao.compile, Compiled.__call__, .ir(stage), .stats."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.pipeline import stage_names
from qidao.examples import EXAMPLES, chain_graph
from qidao.frontend.builder import Graph
from qidao.runtime.errors import ArgumentError


def book() -> qidao.Compiled:
    return qidao.compile(EXAMPLES["book"].build())


def test_book_example_gives_seven() -> None:
    x, w, b = (np.array(v, np.float32) for v in ([[2.0]], [[3.0]], [1.0]))
    (y,) = book()(x, w, b)
    assert y.shape == (1, 1) and y.dtype == np.float32
    assert y[0, 0] == 7.0


@pytest.fixture(scope="session")
def examples_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compile cache folder for the graph-mode compiles of the examples, which two
    tests below make: the second is loaded (a hit), not compiled again. Under
    pytest-xdist it is in the run's base temporary folder, which holds each worker's
    own: either worker's compile serves both tests."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / "qidao-cache-examples"


def compile_example_graph(
    name: str, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """``qidao.compile(EXAMPLES[name].build(), mode="graph")``, cached in ``cache``
    (nothing here monkeypatches the compiler)."""
    with monkeypatch.context() as m:
        m.setenv("QIDAO_CACHE", "on")
        m.setenv("QIDAO_CACHE_DIR", str(cache))
        compiled = qidao.compile(EXAMPLES[name].build(), mode="graph")
    assert compiled.stats["cache"] in ("hit", "miss, stored"), compiled.stats["cache"]
    return compiled


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_builtin_examples_match_numpy(
    name: str, examples_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = EXAMPLES[name]
    inputs = example.inputs(np.random.default_rng(1))
    got = compile_example_graph(name, examples_cache, monkeypatch)(*inputs)
    rtol, atol = example.tolerance
    for g, want in zip(got, example.reference(*inputs), strict=True):
        np.testing.assert_allclose(g, want, rtol=min(rtol, 1e-6), atol=atol / 10)


def test_every_stage_prints() -> None:
    compiled = book()
    texts = {stage: compiled.ir(stage) for stage in stage_names("cpu")}
    assert "tg.matmul" in texts["tg"] and "tg.fused" in texts["tg"]
    assert "affine.for" in texts["affine"] and 'qd.loop = "k"' in texts["affine"]
    assert "scf.for" in texts["scf"] and "affine.for" not in texts["scf"]
    assert "cf.br" in texts["cf"] or "cf.cond_br" in texts["cf"]
    assert "llvm.func" in texts["llvm-dialect"]
    assert 'define void @"main"' in texts["llvm"]
    assert "ptr noalias" in texts["llvm"]
    assert "define" in texts["llvm-opt"]
    assert "ret" in texts["asm"]


def test_unknown_stage_is_rejected_with_the_list() -> None:
    with pytest.raises(ValueError, match=r"unknown stage 'afine'.*affine"):
        book().ir("afine")


def test_stats_count_kernels_and_buffers() -> None:
    fused = qidao.compile(chain_graph(1024))
    unfused = qidao.compile(chain_graph(1024), fuse=False)
    eager = qidao.compile(chain_graph(1024), mode="eager")
    assert fused.stats["kernels"] == 1 and fused.stats["buffers"] == 0
    assert fused.stats["peak_bytes"] == 0 and fused.stats["traffic_bytes"] == 0
    # Eager: five kernels, four 4 KiB intermediates, each freed after its last use
    # (never more than two alive), each written once and read once.
    assert eager.stats["kernels"] == 5
    assert eager.stats["buffers"] == 4
    assert eager.stats["peak_bytes"] == 2 * 1024 * 4
    assert eager.stats["traffic_bytes"] == 4 * 1024 * 4 * 2
    # Unfused graph mode: the same five kernels, but plan-memory writes each
    # elementwise result over its input, so one buffer serves the whole chain.
    assert unfused.stats["kernels"] == 5
    assert unfused.stats["buffers"] == 1
    assert unfused.stats["peak_bytes"] == 1024 * 4
    assert unfused.stats["traffic_bytes"] == eager.stats["traffic_bytes"]
    x = np.random.default_rng(0).standard_normal(1024, dtype=np.float32)
    np.testing.assert_array_equal(fused(x)[0], unfused(x)[0])
    np.testing.assert_array_equal(fused(x)[0], eager(x)[0])


def test_non_contiguous_inputs_are_read_correctly() -> None:
    g = Graph("main")
    a = g.input("a", (3, 4))
    b = g.input("b", (3, 4))
    g.output(a - b)
    compiled = qidao.compile(g)
    rng = np.random.default_rng(0)
    big = rng.standard_normal((4, 6), dtype=np.float32)
    a_view = big.T[::2, :]  # transposed and strided: shape (3, 4)
    b_view = rng.standard_normal((3, 8), dtype=np.float32)[:, ::2]
    assert not a_view.flags.c_contiguous and not b_view.flags.c_contiguous
    (got,) = compiled(a_view, b_view)
    np.testing.assert_array_equal(got, a_view - b_view)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            (np.zeros((1, 1), np.float32),),
            r"takes 3 input\(s\) \('x', 'w', 'b'\), got 1",
        ),
        (
            (
                np.zeros((1, 1), np.float64),
                np.zeros((1, 1), np.float32),
                np.zeros(1, np.float32),
            ),
            r"input 'x' \(#0\): expected ndarray of shape \(1, 1\) and dtype float32, got dtype float64",
        ),
        (
            (
                np.zeros((1, 1), np.float32),
                np.zeros((2, 1), np.float32),
                np.zeros(1, np.float32),
            ),
            r"input 'w' \(#1\): expected .* got shape \(2, 1\)",
        ),
        (
            (np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32), [1.0]),
            r"input 'b' \(#2\): expected .* got an object of type list",
        ),
    ],
)
def test_bad_calls_name_the_input(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        book()(*args)


def test_a_big_endian_input_is_named_as_such() -> None:
    """Issue 12, R13: not "expected dtype float32, got dtype float32"."""
    x = np.zeros((1, 1), ">f4")
    with pytest.raises(
        ArgumentError, match=r"float32 in non-native byte order \('>f4'\)"
    ):
        book()(x, x, np.zeros(1, np.float32))


def test_bad_options_are_rejected_before_work() -> None:
    graph = EXAMPLES["book"].build()
    with pytest.raises(TypeError, match=r"unknown option.*fusion"):
        qidao.compile(graph, fusion=True)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        qidao.compile(graph, threads=0)
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        qidao.compile(graph, target="tpu")
    with pytest.raises(TypeError, match=r"qidao\.compile takes an onnx\.ModelProto"):
        qidao.compile(42)
    with pytest.raises(FileNotFoundError, match="no model file"):
        qidao.compile("/nonexistent/model.onnx")
    with pytest.raises(ValueError, match=r"opt_level must be 0, 1, 2 or 3.*got 99"):
        qidao.compile(graph, opt_level=99)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        qidao.compile(graph, threads=True)


def test_each_target_takes_its_own_options() -> None:
    graph = EXAMPLES["book"].build()
    with pytest.raises(TypeError, match=r"unknown option\(s\) profile; .*'cuda'"):
        qidao.compile(graph, target="cuda", profile=True)
    with pytest.raises(TypeError, match=r"unknown option\(s\) device; .*'cpu'"):
        qidao.compile(graph, device="emulate")
    with pytest.raises(ValueError, match=r"unknown device 'tpu'.*cuda, emulate"):
        qidao.compile(graph, target="cuda", device="tpu")


def test_mlir_file_with_a_parse_error_names_line_and_column(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from qidao.frontend.errors import MlirError

    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = tg.relu %x : tensor<2xf32> tensor<2xf32>\n"
        "  func.return %0 : tensor<2xf32>\n}\n"
    )
    with pytest.raises(MlirError, match=r"bad.mlir:2:35"):
        qidao.compile(path)


def test_unreadable_mlir_files_are_mlir_errors_naming_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 12, R8: bytes that are not UTF-8, modules nested beyond the parser's
    recursion and IR that does not verify each name the file."""
    from qidao.frontend.errors import MlirError

    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(
        MlirError, match=r"binary.mlir: not UTF-8 text \(byte 0 is 0xff\)"
    ):
        qidao.compile(binary)
    deep = tmp_path / "deep.mlir"
    deep.write_text("builtin.module {" * 3000 + "}" * 3000)
    with pytest.raises(MlirError, match=r"deep.mlir: nested too deep"):
        qidao.compile(deep)
    invalid = tmp_path / "invalid.mlir"
    invalid.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<3xf32> {\n"
        "  func.return %x : tensor<2xf32>\n}\n"
    )
    with pytest.raises(MlirError, match=r"invalid.mlir: the IR does not verify"):
        qidao.compile(invalid)


def test_input_names_that_do_not_match_the_arguments_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from qidao.frontend.errors import MlirError

    path = tmp_path / "names.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> "
        'attributes {qd.input_names = ["x"]} {\n'
        "  %0 = tg.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return %0 : tensor<2xf32>\n}\n"
    )
    with pytest.raises(MlirError, match=r"qd.input_names has 1 name\(s\) for 2"):
        qidao.compile(path)


def test_strided_graph_input_is_rejected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from qidao.frontend.errors import MlirError

    path = tmp_path / "strided.mlir"
    path.write_text(
        "func.func @main(%x: tensor<3x2xf32, strided<[1, 3]>>) -> tensor<3x2xf32> {\n"
        "  %0 = tg.relu %x : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>\n"
        "  func.return %0 : tensor<3x2xf32>\n}\n"
    )
    with pytest.raises(MlirError, match="graph inputs and outputs are row-major"):
        qidao.compile(path)


def test_debug_level_prints_stages(capsys: pytest.CaptureFixture[str]) -> None:
    qidao.compile(EXAMPLES["book"].build(), debug=2)
    err = capsys.readouterr().err
    assert "qidao: stage affine" in err and "qidao: stats" in err
    with pytest.raises(ValueError, match="debug level must be an integer 0-4"):
        qidao.compile(EXAMPLES["book"].build(), debug=7)


def test_ndarray_trampoline_and_pointer_path_agree() -> None:
    from qidao.runtime.executor import NDARRAY_DATA_OFFSET, NativeFunction

    compiled = qidao.compile(chain_graph(64))
    x = np.random.default_rng(0).standard_normal(64, dtype=np.float32)
    x.flags.writeable = False  # read-only inputs are fine on both paths
    pointer_path = NativeFunction(
        compiled.native.jit, "main", compiled.inputs, compiled.outputs
    )
    pointer_path.convention = "pointer"
    pointer_path._cfunc = pointer_path.cfunc
    pointer_path._call = pointer_path._make_caller()
    if NDARRAY_DATA_OFFSET is not None:
        assert compiled.native.convention == "ndarray"
    np.testing.assert_array_equal(compiled(x)[0], pointer_path(x)[0])
    want = np.maximum(x * np.float32(3) + np.float32(1), 0) * np.float32(
        0.5
    ) + np.float32(2)
    np.testing.assert_array_equal(compiled(x)[0], want)


# ---- eager vs graph mode, stats, plan-memory ------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_eager_and_graph_agree_on_builtin_examples(
    name: str, examples_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = EXAMPLES[name]
    inputs = example.inputs(np.random.default_rng(2))
    want = example.reference(*inputs)
    eager = qidao.compile(example.build(), mode="eager")
    graph = compile_example_graph(name, examples_cache, monkeypatch)
    assert eager.mode == "eager" and graph.mode == "graph"
    rtol, atol = example.tolerance
    rtol, atol = min(rtol, 1e-6), atol / 10
    for e, g, w in zip(eager(*inputs), graph(*inputs), want, strict=True):
        np.testing.assert_allclose(e, w, rtol=rtol, atol=atol)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


Arrays = list[np.ndarray]  # type: ignore[type-arg]


def _mlp() -> tuple[Graph, Arrays, Arrays]:
    """relu(x @ w1 + b1) @ w2 + b2, then a row-wise softmax."""
    rng = np.random.default_rng(3)
    x, w1, b1, w2, b2 = (
        rng.standard_normal(s, dtype=np.float32)
        for s in ((4, 6), (6, 8), (8,), (8, 5), (5,))
    )
    g = Graph("main")
    vx, vw1, vb1, vw2, vb2 = (
        g.input(n, a.shape)
        for n, a in zip(("x", "w1", "b1", "w2", "b2"), (x, w1, b1, w2, b2), strict=True)
    )
    g.output(g.softmax(g.relu(vx @ vw1 + vb1) @ vw2 + vb2))
    h = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return g, [x, w1, b1, w2, b2], [e / e.sum(axis=-1, keepdims=True)]


def _broadcast_chain() -> tuple[Graph, Arrays, Arrays]:
    """Ten elementwise ops whose shapes keep changing (broadcasts, a transpose), so
    fusion cannot merge them all and plan-memory has buffers to share."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal(8, dtype=np.float32)
    y = rng.standard_normal((4, 8), dtype=np.float32)
    z = rng.standard_normal((3, 8, 4), dtype=np.float32)
    g = Graph("main")
    vx, vy, vz = g.input("x", x.shape), g.input("y", y.shape), g.input("z", z.shape)
    a1 = g.exp(vx)  # (8)
    a2 = a1 + vy  # (4, 8), reads a1 broadcast
    a3 = g.relu(a2)
    a4 = g.transpose(a3, [1, 0]) * 2.0  # (8, 4), reads a3 transposed
    a5 = -a4
    a6 = a5 + vz  # (3, 8, 4)
    a7 = g.tanh(a6)
    a8 = g.sigmoid(a7)
    a9 = a8 - 1.0
    g.output(a9 * a9)
    r3 = np.maximum(np.exp(x) + y, 0)
    r9 = 1 / (1 + np.exp(-np.tanh(-(r3.T * 2) + z))) - 1
    return g, [x, y, z], [r9 * r9]


def _views_and_reductions() -> tuple[Graph, Arrays, Arrays]:
    """A transpose read twice, a reduction, a reshape and a broadcast back."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4), dtype=np.float32)
    g = Graph("main")
    va = g.input("a", a.shape)
    t = g.transpose(g.exp(va), [1, 0])  # (4, 3)
    s = g.reduce_sum(t * t, axes=1, keepdims=True)  # (4, 1)
    m = g.reshape(g.sqrt(s) + t, [12])  # (12,)
    g.output(m, g.reduce_max(va, axes=0))
    et = np.exp(a).T
    want_m = (np.sqrt((et * et).sum(axis=1, keepdims=True)) + et).reshape(12)
    return g, [a], [want_m, a.max(axis=0)]


GRAPHS = {
    "mlp": _mlp,
    "broadcast_chain": _broadcast_chain,
    "views_and_reductions": _views_and_reductions,
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("fuse", [True, False])
def test_eager_and_graph_agree_on_builder_graphs(name: str, fuse: bool) -> None:
    _, inputs, want = GRAPHS[name]()
    eager = qidao.compile(GRAPHS[name]()[0], mode="eager")
    graph = qidao.compile(GRAPHS[name]()[0], fuse=fuse)
    for e, g, w in zip(eager(*inputs), graph(*inputs), want, strict=True):
        np.testing.assert_allclose(e, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert graph.stats["kernels"] <= eager.stats["kernels"]
    assert graph.stats["buffers"] <= eager.stats["buffers"]
    assert graph.stats["peak_bytes"] <= eager.stats["peak_bytes"]
    assert graph.stats["traffic_bytes"] <= eager.stats["traffic_bytes"]


def test_eager_mode_runs_one_kernel_per_op() -> None:
    eager = qidao.compile(chain_graph(64), mode="eager")
    assert "tg.fused" not in eager.ir("tg")
    assert eager.ir("tg") == eager.ir("input")
    labels = [
        op.attributes["qd.kernel"].data  # type: ignore[attr-defined]
        for op in eager.module("affine").ops
        if "qd.kernel" in op.attributes
    ]
    assert labels == ["tg.mul", "tg.add", "tg.relu", "tg.mul", "tg.add"]
    # each kernel writes its own buffer: no call passes one buffer twice
    assert "noalias" in eager.ir("llvm")
    assert eager.stats["buffers"] == 4


def test_book_stats_in_both_modes() -> None:
    """y = relu(x·w + b) on 1x1: matmul, add, relu eagerly, two 4-byte buffers."""
    eager = qidao.compile(EXAMPLES["book"].build(), mode="eager")
    assert eager.stats["kernels"] == 3
    assert eager.stats["buffers"] == 2
    assert eager.stats["peak_bytes"] == 8
    assert eager.stats["traffic_bytes"] == 2 * 4 * 2
    graph = qidao.compile(EXAMPLES["book"].build())
    assert graph.stats["kernels"] < eager.stats["kernels"]
    assert graph.stats["traffic_bytes"] < eager.stats["traffic_bytes"]


def test_book_is_one_matmul_kernel_with_a_fused_epilogue() -> None:
    from qidao.tools.explain import kernel_rows

    graph = qidao.compile(EXAMPLES["book"].build())
    assert graph.stats["kernels"] == 1
    ((_, ops),) = kernel_rows(graph)
    assert ops.startswith("tg.matmul") and "tg.relu" in ops
    assert graph.stats["buffers"] == 0


def test_eager_mode_skips_only_graph_passes() -> None:
    from qidao.compiler.pipeline import Stage, Step, active_steps

    def names(stage: Stage, mode: str, **settings: object) -> list[str]:
        return [step.name for step in active_steps(stage, mode, settings)]

    graph = Step("fold-constants", graph_only=True)
    fuse = Step("fuse", graph_only=True, when="fuse")
    tg = Stage("tg", (graph, Step("expand-math"), fuse), "")
    assert names(tg, "eager", fuse=True) == ["expand-math"]
    assert names(tg, "graph", fuse=True) == list(tg.passes)
    assert "fuse" not in names(tg, "graph", fuse=False)
    cleanup = Stage("llvm-dialect", (Step("convert-to-llvm"), Step("dce")), "")
    assert names(cleanup, "eager") == ["convert-to-llvm", "dce"]


def test_unknown_mode_lists_the_modes() -> None:
    with pytest.raises(ValueError, match=r"unknown mode 'lazy'.*graph, eager"):
        qidao.compile(EXAMPLES["book"].build(), mode="lazy")


def _unfused_chain(n: int = 10) -> tuple[Graph, Arrays, Arrays]:
    """``n`` unary elementwise ops in a row on 256 floats."""
    x = np.random.default_rng(6).standard_normal(256, dtype=np.float32)
    g = Graph("main")
    v = g.input("x", x.shape)
    want = x
    for k in range(n):
        if k % 2 == 0:
            v, want = g.tanh(v), np.tanh(want)
        else:
            v, want = -v, -want
    g.output(v)
    return g, [x], [want]


def test_plan_memory_shares_buffers_and_writes_in_place() -> None:
    graph, inputs, want = _unfused_chain()
    planned = qidao.compile(graph, fuse=False)
    eager = qidao.compile(_unfused_chain()[0], mode="eager")
    # eager: 10 kernels, 9 intermediates of 1 KiB, two alive at a time
    assert eager.stats["kernels"] == planned.stats["kernels"] == 10
    assert eager.stats["buffers"] == 9 and eager.stats["peak_bytes"] == 2 * 1024
    # planned: each op writes over its input, one buffer for the whole chain
    assert planned.stats["buffers"] == 1 and planned.stats["peak_bytes"] == 1024
    assert planned.stats["traffic_bytes"] == eager.stats["traffic_bytes"]
    affine = planned.ir("affine")
    assert "func.call @main_k1_neg(%slot0, %slot0)" in affine
    neg = next(
        line for line in affine.splitlines() if "func.func private @main_k1_neg" in line
    )
    assert "noalias" not in neg
    np.testing.assert_allclose(planned(*inputs)[0], want[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(planned(*inputs)[0], eager(*inputs)[0])


def test_plan_memory_reduces_buffers_and_peak_on_a_changing_shape_chain() -> None:
    graph, inputs, want = _broadcast_chain()
    planned = qidao.compile(graph, fuse=False)
    eager = qidao.compile(_broadcast_chain()[0], mode="eager")
    assert planned.stats["kernels"] == eager.stats["kernels"] == 10
    assert planned.stats["buffers"] < eager.stats["buffers"]
    assert planned.stats["peak_bytes"] < eager.stats["peak_bytes"]
    np.testing.assert_allclose(planned(*inputs)[0], want[0], rtol=1e-5, atol=1e-6)


def test_fuse_option_is_kept() -> None:
    graph = qidao.compile(chain_graph(64), fuse=False)
    assert graph.mode == "graph" and graph.stats["kernels"] == 5


def test_a_builder_graph_compiles_twice() -> None:
    graph = chain_graph(32)
    first, second = qidao.compile(graph), qidao.compile(graph, fuse=False)
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    np.testing.assert_array_equal(first(x)[0], second(x)[0])


def test_big_outputs_are_never_shared_with_arrays_the_caller_holds() -> None:
    from qidao.runtime.executor import POOLED_OUTPUT_BYTES

    n = POOLED_OUTPUT_BYTES // 4  # big enough to come from the output pool
    compiled = qidao.compile(chain_graph(n))
    x = np.linspace(-1, 1, n, dtype=np.float32)
    first = compiled(x)[0]
    second = compiled(x)[0]
    assert not np.shares_memory(first, second)  # `first` is still held
    view = second[:8]
    del second
    third = compiled(2 * x)[0]
    assert not np.shares_memory(view, third)  # a view keeps its base out of the pool
    np.testing.assert_array_equal(view, first[:8])
    frozen = compiled(x)[0]
    frozen.flags.writeable = False
    del frozen
    assert compiled(x)[0].flags.writeable  # a read-only array is not handed out again


def _breaking_pass_factory(broken: str):  # type: ignore[no-untyped-def]
    """``make_pass`` whose pass ``broken`` leaves IR that does not verify: the
    entry function's type drops its results, its return still returns them."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType

    from qidao.compiler import pipeline

    real = pipeline.make_pass

    class Breaking:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def apply(self, ctx: object, module: object) -> None:
            self.inner.apply(ctx, module)  # type: ignore[attr-defined]
            fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))  # type: ignore[attr-defined]
            fn.function_type = FunctionType.from_lists(fn.function_type.inputs, [])

    def make(name: str, **options: object) -> object:
        made = real(name, **options)
        return Breaking(made) if name == broken else made

    return make


@pytest.mark.parametrize(
    ("policy", "named"),
    [("each", "after pass 'simplify'"), ("stage", "after stage 'tg' (passes: ")],
)
def test_verify_policy_names_the_pass_or_the_stage(
    policy: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qidao.compiler import pipeline

    monkeypatch.setattr(pipeline, "make_pass", _breaking_pass_factory("simplify"))
    with pytest.raises(RuntimeError, match="internal error: IR does not verify") as err:
        qidao.compile(chain_graph(), verify=policy)
    assert named in str(err.value)


def test_verify_policies_give_the_same_results() -> None:
    x = np.random.default_rng(0).standard_normal(1 << 10).astype(np.float32)
    each = qidao.compile(chain_graph(x.size), verify="each")(x)
    stage = qidao.compile(chain_graph(x.size), verify="stage")(x)
    np.testing.assert_array_equal(each, stage)


def test_unknown_verify_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="verify must be one of 'stage', 'each'"):
        qidao.compile(chain_graph(), verify="never")


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_every_target_runs_the_one_stage_loop(
    target: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """debug= prints the stages and verify= names the breaking pass, on each target."""
    compiled = qidao.compile(chain_graph(64), target=target, debug=2)
    err = capsys.readouterr().err
    assert "// ----- qidao: stage tg -----" in err and "qidao: stats" in err
    assert compiled.stats["compile_seconds"].keys() >= {"tg", "affine", "schedule"}
    from qidao.compiler import pipeline

    monkeypatch.setattr(pipeline, "make_pass", _breaking_pass_factory("fuse"))
    with pytest.raises(RuntimeError, match="after pass 'fuse'"):
        qidao.compile(chain_graph(64), target=target, verify="each")
