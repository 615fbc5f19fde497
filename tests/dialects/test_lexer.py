"""xDSL's string literal regex backtracked exponentially on an unclosed string
(``qidao/dialects/lexer.py``; found by ``qidao fuzz --kinds mlir --seed 1495``):
such a file is now a parse error at once, in ``qidao.compile`` and ``qidao-opt``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from qidao.dialects.lexer import STRING_LITERAL

# a '"' typed into an op name, then an invalid escape ("\f") lines later
HANG = (
    "func.func @main(%x: tensor<3x5xf32>) -> tensor<3x2xf32> {\n"
    '  %0 = tg.c"nstant dense<[[0.0, 1.0]]> : tensor<1x2xf32>\n'
    + "  %1 = tg.relu %x : tensor<3x5xf32> -> tensor<3x5xf32>\n"
    * 3
    + "  %4 = tg.add %2, %3 : (tensor<3x2\\f32>, tensor<f32>) -> tensor<3x2xf32>\n"
    "  func.return %4 : tensor<3x2xf32>\n}\n"
)


@pytest.mark.parametrize("tool", ["compile", "opt"])
def test_an_unclosed_string_is_a_parse_error_at_once(tool: str, tmp_path: Path) -> None:
    path = tmp_path / "hang.mlir"
    path.write_text(HANG)
    command = (
        [sys.executable, "-m", "qidao", "compile", str(path)]
        if tool == "compile"
        else [
            sys.executable,
            "-c",
            "from qidao.tools.opt import main; main()",
            str(path),
        ]
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "closing string literal" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "text",
    ['"abc"', '"a\\"b"', '"\\0A\\n\\t\\\\"', '""', '"0x' + "AB" * 1000 + '"'],
)
def test_the_pattern_matches_what_xdsls_did(text: str) -> None:
    match = STRING_LITERAL.match(text + " tail")
    assert match is not None and match.group() == text


@pytest.mark.parametrize("text", ['"abc', '"a\\q"', '"line\nbreak"'])
def test_the_pattern_refuses_what_xdsls_did(text: str) -> None:
    assert STRING_LITERAL.match(text) is None
