"""The `qidao` command: tour, compile, run (bench is exercised by its own test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qidao.tools.cli import main


def test_compile_emits_each_stage(capsys: pytest.CaptureFixture[str]) -> None:
    for stage, needle in [
        ("tg", "tg.fused"),
        ("affine", "affine.for"),
        ("llvm", "define"),
    ]:
        assert main(["compile", "book", "--emit", stage]) == 0
        assert needle in capsys.readouterr().out


def _row(out: str, label: str) -> list[str]:
    """The cells after ``label`` on its line of the side-by-side table."""
    line = next(line for line in out.splitlines() if line.startswith(label))
    return line[len(label) :].split()


def test_compile_stats_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "chain", "--stats"]) == 0
    out = capsys.readouterr().out
    assert "graph mode (after the passes): 1 kernel" in out
    assert "eager mode (before the passes): 5 kernels" in out
    assert "tg.mul+tg.add+tg.relu+tg.mul+tg.add" in out
    for op in ("tg.mul", "tg.add", "tg.relu"):
        assert f"  {op}\n" in out  # eager: one op per kernel
    assert _row(out, "per call") == ["eager", "graph"]
    assert _row(out, "kernel launches per call") == ["5", "1"]
    assert _row(out, "intermediate buffers") == ["4", "0"]
    n = 1 << 20  # the chain's floats
    assert _row(out, "peak intermediate bytes") == [f"{2 * 4 * n:,}", "0"]
    assert _row(out, "intermediate traffic bytes") == [f"{4 * 2 * 4 * n:,}", "0"]
    assert _row(out, "compile time (ms)") == ["eager", "graph"]
    for stage in ("tg", "affine", "jit", "total"):
        assert len(_row(out, stage)) == 2


def test_compile_stats_without_fusion_shows_plan_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compile", "chain", "--stats", "--no-fuse"]) == 0
    out = capsys.readouterr().out
    assert _row(out, "kernel launches per call") == ["5", "5"]
    assert _row(out, "intermediate buffers") == ["4", "1"]  # written in place


def test_compile_mode_eager(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "chain", "--mode", "eager", "--emit", "tg"]) == 0
    assert "tg.fused" not in capsys.readouterr().out
    assert main(["compile", "chain", "--mode", "eager", "--emit", "affine"]) == 0
    out = capsys.readouterr().out
    assert out.count("func.call @") == 5 and out.count("memref.alloc") == 4
    with pytest.raises(SystemExit):
        main(["compile", "book", "--mode", "lazy"])
    assert "invalid choice: 'lazy'" in capsys.readouterr().err


def test_compile_grad_appends_the_gradients(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compile", "book", "--grad", "w,b"]) == 0
    out = capsys.readouterr().out
    assert 'qd.output_names = ["output0", "grad_w", "grad_b"]' in out
    assert "tg.greater" in out  # relu's gradient: select(y > 0, g, 0)
    with pytest.raises(SystemExit):
        main(["compile", "book", "--grad", "w,,b"])
    assert "expected comma-separated input names" in capsys.readouterr().err


CHECKPOINTED = Path(__file__).parents[1] / "filecheck/passes/graph/checkpoint.mlir"


def test_compile_checkpoint_stats_show_the_trade(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    model = tmp_path / "mlp.mlir"  # the FileCheck test's first function
    model.write_text(CHECKPOINTED.read_text().split("// -----")[0])
    args = ["compile", str(model), "--grad", "w0,w1,w2", "--stats"]
    assert main([*args, "--checkpoint", "2"]) == 0
    out = capsys.readouterr().out
    # segment 1 (x @ w0, relu: 4*8*8*2 + 32 FLOPs, as the FileCheck test says)
    assert "recomputed FLOPs                        544            544" in out
    assert "checkpoint: 3 segments, 1 of 2 boundaries kept" in out
    with pytest.raises(SystemExit):
        main([*args, "--checkpoint", "often"])
    assert "expected K (a positive integer), sqrt or budget=BYTES" in (
        capsys.readouterr().err
    )


def test_run_mode_eager_gives_seven(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "book", "--mode", "eager"]) == 0
    assert "[[7.]]" in capsys.readouterr().out


def test_unknown_stage_fails_before_work(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compile", "book", "--emit", "loops"])
    assert "invalid choice: 'loops'" in capsys.readouterr().err


def test_run_with_npz_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(
        inputs,
        x=np.full((1, 1), 2, np.float32),
        w=np.full((1, 1), 3, np.float32),
        b=np.ones(1, np.float32),
    )
    out = tmp_path / "out.npz"
    assert main(["run", "book", "--inputs", str(inputs), "--save", str(out)]) == 0
    assert np.load(out)["output0"][0, 0] == 7.0
    assert "[[7.]]" in capsys.readouterr().out


def test_run_a_matmul_of_any_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``matmulMxKxN`` is a model for compile, run and profile too."""
    inputs = tmp_path / "in.npz"
    x, w = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 4), np.float32)
    np.savez(inputs, x=x, w=w)
    out = tmp_path / "out.npz"
    argv = ["run", "matmul2x3x4", "--inputs", str(inputs), "--save", str(out)]
    assert main(argv) == 0
    np.testing.assert_array_equal(np.load(out)["output0"], x @ w)
    assert main(["compile", "matmul2x3x4", "--emit", "tg"]) == 0
    assert "tg.matmul" in capsys.readouterr().out


def test_tour_prints_every_level_and_seven(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tour", "--no-bench"]) == 0
    out = capsys.readouterr().out
    for needle in (
        "== tg:",
        "== affine:",
        "== llvm:",
        "output0 = [[7.]]",
        "matches the NumPy",
    ):
        assert needle in out


def test_bad_model_file_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main( {\n")
    assert main(["compile", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "parse error" in err and "bad.mlir:1:" in err


def test_tour_of_a_model_compiled_at_its_first_call_says_so(tmp_path: Path) -> None:
    # Reshape's shape is a graph input: the model is specialized at its first call,
    # so there are no input specs to make example inputs from
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "reshape.onnx"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path
    )
    with pytest.raises(SystemExit, match="compiled at its first call"):
        main(["tour", str(path), "--no-bench"])


def _reshape_model(tmp_path: Path) -> Path:
    """A model whose Reshape shape is an integer graph input (compiled at its first
    call, when that input's value is known)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "reshape.onnx"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path
    )
    return path


def test_run_and_compile_a_model_compiled_at_its_first_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12, R10: ``run`` with --inputs runs it; without them, and ``compile``,
    say why in one line (no traceback)."""
    model = _reshape_model(tmp_path)
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    x = np.arange(6, dtype=np.float32)
    np.savez(inputs, x=x, shape=np.array([2, 3]))
    assert main(["run", str(model), "--inputs", str(inputs), "--save", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out)["y"], x.reshape(2, 3))
    capsys.readouterr()
    for argv in (["run", str(model)], ["compile", str(model)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "compiled at its first call" in err and "--inputs" in err
        assert err.count("\n") == 1


def test_run_makes_up_inputs_for_a_staged_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model compiled in stages (``NonZero`` of its data) with static float
    inputs runs on random ones; its output is NumPy's on the same inputs."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("NonZero", ["x"], ["nz"]),
            helper.make_node("Shape", ["nz"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2])],
    )
    path, out = tmp_path / "nz.onnx", tmp_path / "out.npz"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path
    )
    assert main(["run", str(path), "--seed", "3", "--save", str(out)]) == 0
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(np.load(out)["y"], [2, np.count_nonzero(x)])
    capsys.readouterr()
    assert main(["compile", str(path)]) == 2
    assert "a size or trip count may be data (NonZero" in capsys.readouterr().err


def test_bad_inputs_files_are_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12, R10: an .npy for a one-input model works; an .npy for two inputs, a
    corrupt .npz and an .npz lacking an input are one line each."""
    one = tmp_path / "x.npy"
    np.save(one, np.ones((1, 1), np.float32))
    assert main(["run", "matmul1x1x1", "--inputs", str(one)]) == 2
    assert "an .npy holds one array and the model takes 2 inputs" in (
        capsys.readouterr().err
    )
    corrupt = tmp_path / "bad.npz"
    corrupt.write_bytes(b"PK\x03\x04garbage")
    assert main(["run", "matmul1x1x1", "--inputs", str(corrupt)]) == 2
    assert "cannot read it as .npz or .npy" in capsys.readouterr().err
    partial = tmp_path / "partial.npz"
    np.savez(partial, x=np.ones((1, 1), np.float32))
    assert main(["run", "matmul1x1x1", "--inputs", str(partial)]) == 2
    assert "lacks input(s) w; it has x" in capsys.readouterr().err
    np.save(one, np.arange(6, dtype=np.float32))  # a one-input model takes an .npy
    import onnx
    from onnx import TensorProto, helper

    relu = tmp_path / "relu.onnx"
    onnx.save(
        helper.make_model(
            helper.make_graph(
                [helper.make_node("Relu", ["x"], ["y"])],
                "g",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            ),
            opset_imports=[helper.make_opsetid("", 17)],
        ),
        relu,
    )
    assert main(["run", str(relu), "--inputs", str(one)]) == 0
    assert "y: shape [6] float32" in capsys.readouterr().out


def test_run_with_checks_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--checks``: an index out of range is one line naming the node, exit 1;
    without it the call gives the clamped value."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], name="lookup")],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "gather.onnx"
    onnx.save(helper.make_model(graph), path)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.arange(5, dtype=np.float32), i=np.array([1, 5]))
    assert main(["run", str(path), "--inputs", str(inputs)]) == 0
    assert "[1. 4.]" in capsys.readouterr().out
    assert main(["run", str(path), "--inputs", str(inputs), "--checks"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Gather node 'lookup': index 5 is out of bounds" in err[0]


def test_help_lists_the_built_in_models(capsys: pytest.CaptureFixture[str]) -> None:
    """Every name MODEL takes is in ``--help`` (transpose and matmul1024 were not)."""
    from qidao.examples import EXAMPLES

    for command in ("compile", "run", "profile", "tour"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for name in (*EXAMPLES, "matmulMxKxN"):
            assert name in text, (command, name)


def test_print_ir_flags_reach_every_compiling_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "book", "--print-ir-after=fuse", "--disable-pass", "cse"]) == 0
    err = capsys.readouterr().err
    assert "// ----- qidao: IR after fuse -----" in err and "tg.fused" in err
    assert main(["compile", "book", "--print-ir-after=cse", "--disable-pass=cse"]) == 0
    assert "pass cse did not run: disable= names it" in capsys.readouterr().err


def test_print_ir_diff_alone_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "book", "--print-ir-diff"]) == 2
    assert "give it with --print-ir-after-change" in capsys.readouterr().err
