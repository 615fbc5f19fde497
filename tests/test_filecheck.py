"""Run every lit/FileCheck test under tests/filecheck, one pytest case per file.

The RUN lines run in this process (``tests/filecheck_runner.py``: the same
``qidao-opt``/``qidao``/``filecheck`` entry points, lit's parsing, pipes, ``not`` and
``pipefail``), not one interpreter per command as ``lit tests/filecheck`` does; the
real lit still runs two files here, so its configuration stays tested, and the
runner is checked to fail where lit fails.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.filecheck_runner import parse, real_lit, run_file

ROOT = Path(__file__).parent / "filecheck"
FILES = sorted(p for p in ROOT.rglob("*.mlir") if "Output" not in p.parts)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_lit(path: Path) -> None:
    result = run_file(path)
    assert result.passed, result.report


# The real lit (tests/filecheck/lit.cfg.py, new processes) on a file with each form of
# RUN line: a plain pipe, `not ... 2>&1` and `2>&1 >/dev/null` (one line of each).
REAL_LIT = ["pipeline/print_ir.mlir"]


def _form(run_line: str) -> str:
    if "2>&1 >/dev/null" in run_line:
        return "stderr only"
    return "not, 2>&1" if run_line.startswith("// RUN: not ") else "plain pipe"


@pytest.mark.parametrize("name", REAL_LIT)
def test_real_lit(name: str, tmp_path: Path) -> None:
    """The file with the first RUN line of each form (each a new ``qidao compile``
    process, 1.5 s; all of its RUN lines run in this process in ``test_lit``), beside
    a copy of ``lit.cfg.py``."""
    lines = (ROOT / name).read_text().splitlines(keepends=True)
    seen: set[str] = set()
    kept = []
    for line in lines:
        if line.startswith("// RUN:"):
            if _form(line) in seen:
                continue
            seen.add(_form(line))
        kept.append(line)
    assert seen == {"stderr only", "not, 2>&1", "plain pipe"}, seen
    shutil.copy(ROOT / "lit.cfg.py", tmp_path / "lit.cfg.py")
    path = tmp_path / Path(name).name
    path.write_text("".join(kept))
    result = real_lit(path)
    assert result.passed, result.report
    assert "Passed: 1" in result.report, result.report


def test_every_run_line_is_read() -> None:
    """The runner reads as many RUN lines as `grep RUN:` finds (lit's own parser)."""
    for path in FILES:
        grep = sum("RUN:" in line for line in path.read_text().splitlines())
        assert len(parse(path.resolve())) == grep, path


def _test_file(folder: Path, body: str) -> Path:
    path = folder / "case.mlir"
    path.write_text(body)
    return path


MODULE = """\
builtin.module {
  func.func @f() {
    func.return
  }
}
"""


def test_a_wrong_check_fails(tmp_path: Path) -> None:
    path = _test_file(
        tmp_path, "// RUN: qidao-opt %s | filecheck %s\n// CHECK: @f\n" + MODULE
    )
    assert run_file(path).passed
    path.write_text(path.read_text().replace("CHECK: @f", "CHECK: @g"))
    result = run_file(path)
    assert not result.passed and result.fallback is None
    assert 'match "@g"' in result.report and "exit status: 1" in result.report


def test_not_of_a_command_that_succeeds_fails(tmp_path: Path) -> None:
    path = _test_file(
        tmp_path,
        "// RUN: not qidao-opt %s 2>&1 | filecheck %s\n// CHECK: @f\n" + MODULE,
    )
    result = run_file(path)
    assert not result.passed, result.report
    assert "after `not`: 1" in result.report


def test_pipefail_a_failing_command_fails_its_line(tmp_path: Path) -> None:
    """filecheck matches the error, but qidao-opt's non-zero status fails the line."""
    path = _test_file(
        tmp_path,
        "// RUN: qidao-opt %s -p no-such-pass 2>&1 | filecheck %s\n"
        "// CHECK: no-such-pass\n" + MODULE,
    )
    result = run_file(path)
    assert not result.passed, result.report
    path.write_text("// RUN: not" + path.read_text().removeprefix("// RUN:"))
    assert run_file(path).passed


def test_stderr_only_is_piped_after_2_to_1_then_devnull(tmp_path: Path) -> None:
    path = _test_file(
        tmp_path,
        "// RUN: not qidao-opt %s -p no-such-pass 2>&1 >/dev/null | filecheck %s\n"
        "// CHECK: no-such-pass\n" + MODULE,
    )
    assert run_file(path).passed
    path.write_text(path.read_text().replace("2>&1 >/dev/null", ">/dev/null 2>&1"))
    assert not run_file(path).passed  # both to /dev/null: filecheck reads nothing


def test_other_run_lines_go_to_the_real_lit(tmp_path: Path) -> None:
    shutil.copy(ROOT / "lit.cfg.py", tmp_path / "lit.cfg.py")
    path = _test_file(tmp_path, "// RUN: echo hello | filecheck %s\n// CHECK: hello\n")
    result = run_file(path)
    assert result.passed and result.fallback, result.report
    path.write_text(path.read_text().replace("CHECK: hello", "CHECK: bye"))
    result = run_file(path)
    assert not result.passed and result.fallback, result.report
