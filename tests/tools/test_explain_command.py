"""``qidao explain``: the text summary, the page, and a clear error for a model
that does not exist (``qidao/tools/explain_command.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from qidao.frontend.builder import Graph
from qidao.tools.cli import main


def test_explain_writes_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tmp" / "x.html"
    out.parent.mkdir()
    assert main(["explain", "transpose", "--html", str(out), "--runs", "2"]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert "<title>qidao explain: transpose</title>" in page
    assert 'data-kernel="main_k0_contiguous"' in page
    assert f"wrote {out}" in capsys.readouterr().err


def test_explain_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "book", "--runs", "0", "--mode", "eager"]) == 0
    out = capsys.readouterr().out
    assert "qidao explain: book (cpu," in out and "eager mode" in out
    for kernel in ("main_k0_matmul", "main_k1_add", "main_k2_relu"):
        assert kernel in out
    assert "compile time per stage (ms):" in out


def test_explain_a_model_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = Graph("main")
    x = g.input("x", (3, 5))
    g.output(g.exp(x) * 2.0)
    path = tmp_path / "m.mlir"
    path.write_text(str(g.module()))
    assert main(["explain", str(path), "--runs", "1", "--disable-pass", "fuse"]) == 0
    out = capsys.readouterr().out
    assert "main_k0_exp" in out and "main_k1_mul" in out  # not fused


def test_an_unknown_model_is_a_clear_error_with_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "qidao", "explain", "no-such-model", "--html", "x.html"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "qidao explain: error: 'no-such-model' is neither a file nor a built-in model"
    )
    assert "transpose" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.html").exists()
