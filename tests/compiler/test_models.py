"""The model loader (``qidao/compiler/models.py``): a ``.mlir`` file given as a model
to ``qidao.compile`` and ``qidao compile`` / ``qidao run`` is read by
``qidao.frontend.mlir`` (issue 29, F9 and F18: the file is data, never code; what
it may hold is tested there). ``qidao-opt``, the developer's tool, still reads every
level."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import qidao
from qidao.compiler.models import load_model
from qidao.frontend.errors import MlirError
from qidao.tools.cli import main


def system_model(folder: Path) -> tuple[Path, Path]:
    """F9's reproducer: a ``@main()`` that calls libc's ``system`` to write a
    marker file; the model's path and the marker's."""
    marker = folder / "ran.txt"
    command = f"echo model file ran a shell command > {marker}".encode() + b"\0"
    encoded = "".join(f"\\{b:02X}" for b in command)
    path = folder / "model.mlir"
    path.write_text(
        f'llvm.mlir.global private constant @cmd("{encoded}") '
        f"{{addr_space = 0 : i32}} : !llvm.array<{len(command)} x i8>\n"
        "llvm.func @system(!llvm.ptr) -> i32\n"
        "func.func @main() {\n"
        "  %p = llvm.mlir.addressof @cmd : !llvm.ptr\n"
        "  %r = llvm.call @system(%p) : (!llvm.ptr) -> i32\n"
        "  func.return\n"
        "}\n"
    )
    return path, marker


def test_a_model_file_cannot_run_a_shell_command(tmp_path: Path) -> None:
    """F9: it compiled, and calling it ran ``system()``; now it is refused where
    the first llvm op is written, and nothing ran."""
    path, marker = system_model(tmp_path)
    with pytest.raises(MlirError, match=r"model.mlir:1:1: 'llvm.mlir.global' is not"):
        qidao.compile(path)
    with pytest.raises(MlirError, match=r"'llvm\.mlir\.global'"):
        load_model(str(path))
    assert not marker.exists()


def test_the_command_line_refuses_it_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, marker = system_model(tmp_path)
    for command in (["compile", str(path)], ["run", str(path)]):
        assert main(command) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "'llvm.mlir.global'" in err
    assert not marker.exists()


@pytest.mark.parametrize("where", ["main", "helper"])
def test_inline_asm_is_refused_not_an_llvm_abort(tmp_path: Path, where: str) -> None:
    """F9b: ``llvm.inline_asm`` reached LLVM, which aborted the process (SIGABRT);
    now it never leaves the parser (in-process here: the refusal comes first)."""
    asm = '  llvm.inline_asm has_side_effects "nop", "" : () -> ()\n'
    if where == "main":
        text = "func.func @main() {\n" + asm + "  func.return\n}\n"
        op, at = "llvm.inline_asm", "m.mlir:2:3"
    else:
        text = (
            "llvm.func @helper() {\n" + asm + "  llvm.return\n}\n"
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %y = tg.relu %x : tensor<4xf32> -> tensor<4xf32>\n"
            "  func.return %y : tensor<4xf32>\n}\n"
        )
        op, at = "llvm.func", "m.mlir:1:1"
    path = tmp_path / "m.mlir"
    path.write_text(text)
    with pytest.raises(MlirError, match=rf"{at}: '{op}' is not an op a .mlir model"):
        qidao.compile(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            " func.return %x : tensor<4xf32>\n}",
            r"m.mlir: the model has no function @main \(found: @other\)",
        ),
        (
            "func.func @main(%x: memref<4xf32>) {\n func.return\n}",
            r"m.mlir:1:1: argument #0 %x of @main must be a tensor, got memref<4xf32>",
        ),
    ],
)
def test_a_file_that_is_no_tg_graph_is_a_model_error(
    tmp_path: Path, text: str, message: str
) -> None:
    """F18: a bare ValueError (no @main) and TypeError (a memref @main) before."""
    path = tmp_path / "m.mlir"
    path.write_text(text)
    with pytest.raises(qidao.ModelError, match=message):
        qidao.compile(path)


def test_qidao_opt_still_reads_every_level(tmp_path: Path) -> None:
    """The restriction is the model loader's: ``qidao-opt`` parses the llvm
    dialect (and runs passes on it) as before."""
    path, marker = system_model(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "qidao.tools.opt", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "llvm.call @system" in proc.stdout
    assert not marker.exists()
