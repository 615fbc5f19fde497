"""The public surface: qidao.compile, Compiled.__call__, .ir(stage), .stats."""

from __future__ import annotations

import numpy as np
import pytest

import qidao
from qidao.compiler.examples import EXAMPLES, chain_graph
from qidao.compiler.pipeline import STAGE_NAMES
from qidao.frontend.builder import Graph
from qidao.runtime.errors import ArgumentError


def book() -> qidao.Compiled:
    return qidao.compile(EXAMPLES["book"].build())


def test_book_example_gives_seven() -> None:
    x, w, b = (np.array(v, np.float32) for v in ([[2.0]], [[3.0]], [1.0]))
    (y,) = book()(x, w, b)
    assert y.shape == (1, 1) and y.dtype == np.float32
    assert y[0, 0] == 7.0


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_builtin_examples_match_numpy(name: str) -> None:
    example = EXAMPLES[name]
    inputs = example.inputs(np.random.default_rng(1))
    got = qidao.compile(example.build())(*inputs)
    for g, want in zip(got, example.reference(*inputs), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)


def test_every_stage_prints() -> None:
    compiled = book()
    texts = {stage: compiled.ir(stage) for stage in STAGE_NAMES}
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
    assert fused.stats["kernels"] == 1 and fused.stats["buffers"] == 0
    assert fused.stats["peak_bytes"] == 0
    assert unfused.stats["kernels"] == 5
    # Freed after their last use: never more than two 4 KiB intermediates alive.
    assert unfused.stats["buffers"] == 4
    assert unfused.stats["peak_bytes"] == 2 * 1024 * 4
    x = np.random.default_rng(0).standard_normal(1024, dtype=np.float32)
    np.testing.assert_array_equal(fused(x)[0], unfused(x)[0])


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


def test_bad_options_are_rejected_before_work() -> None:
    graph = EXAMPLES["book"].build()
    with pytest.raises(TypeError, match=r"unknown option.*fusion"):
        qidao.compile(graph, fusion=True)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        qidao.compile(graph, threads=0)
    with pytest.raises(ValueError, match="target 'cuda' is not supported"):
        qidao.compile(graph, target="cuda")
    with pytest.raises(TypeError, match=r"qidao\.compile takes an onnx\.ModelProto"):
        qidao.compile(42)
    with pytest.raises(FileNotFoundError, match="no model file"):
        qidao.compile("/nonexistent/model.onnx")


def test_mlir_file_with_a_parse_error_names_line_and_column(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from xdsl.utils.exceptions import ParseError

    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = tg.relu %x : tensor<2xf32> tensor<2xf32>\n"
        "  func.return %0 : tensor<2xf32>\n}\n"
    )
    with pytest.raises(ParseError, match=r"bad.mlir:2:35"):
        qidao.compile(path)


def test_strided_graph_input_is_rejected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "strided.mlir"
    path.write_text(
        "func.func @main(%x: tensor<3x2xf32, strided<[1, 3]>>) -> tensor<3x2xf32> {\n"
        "  %0 = tg.relu %x : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>\n"
        "  func.return %0 : tensor<3x2xf32>\n}\n"
    )
    with pytest.raises(ValueError, match="graph inputs and outputs are row-major"):
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
