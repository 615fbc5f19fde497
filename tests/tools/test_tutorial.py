"""``docs/tutorial.md`` runs as printed: its files are the repository's, its commands
print what it shows, its Python prints what it shows.

Fenced blocks carry what to check in their info string:

- ```` ```python file=PATH ```` : the block is the whole file ``PATH`` (in a fence
  of four backticks when the file holds fences of three);
- ```` ```mlir excerpt=PATH ```` : the block appears, verbatim, in ``PATH``;
- ```` ```console ```` : ``$ command`` lines, each followed by the output it prints
  (a line ``...`` stands for any number of lines, ``...`` inside a line for any
  text); ``source`` lines set up the shell and are skipped (this test's ``PATH``
  already has the virtual environment's commands);
- ```` ```python run ```` then ```` ```text output ````: the code and what it prints.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"^(`{3,})(\w+)(?: ([^\n]*))?\n(.*?)^\1$", re.S | re.M)
"""A fenced block; a file that holds fences of its own is shown in a longer one."""
BLOCKS = [
    (m.group(2), m.group(3) or "", m.group(4)) for m in BLOCK.finditer(DOC.read_text())
]


def expected_pattern(expected: str) -> re.Pattern[str]:
    """A regex for output shown with ``...`` wildcards (see the module docstring)."""
    parts = []
    for line in expected.splitlines():
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(map(re.escape, line.split("..."))) + r"\n")
    return re.compile("".join(parts), re.S)


def matches(expected: str, actual: str) -> bool:
    return expected_pattern(expected).fullmatch(actual.rstrip("\n") + "\n") is not None


def commands(block: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block."""
    pairs: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].strip(), ""))
        else:
            assert pairs, f"output before any command: {line!r}"
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line)
    return pairs


def test_the_page_has_every_kind_of_block() -> None:
    infos = [(lang, info.split("=")[0]) for lang, info, _ in BLOCKS]
    for kind in [
        ("python", "file"),
        ("mlir", "excerpt"),
        ("console", ""),
        ("python", "run"),
    ]:
        assert kind in infos, f"no {kind} block in docs/tutorial.md"


FILE_BLOCKS = [(i, b) for _, i, b in BLOCKS if i.startswith(("file=", "excerpt="))]


@pytest.mark.parametrize(("info", "body"), FILE_BLOCKS, ids=[i for i, _ in FILE_BLOCKS])
def test_files_on_the_page_are_the_repository_files(info: str, body: str) -> None:
    kind, path = info.split("=", 1)
    text = (ROOT / path).read_text()
    if kind == "file":
        assert body == text, (
            f"docs/tutorial.md shows another {path} than the repository's"
        )
    else:
        assert body in text, f"docs/tutorial.md quotes lines that {path} does not have"


def test_the_commands_print_what_the_page_shows() -> None:
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    for lang, _, body in BLOCKS:
        if lang != "console":
            continue
        for command, expected in commands(body):
            if command.startswith("source "):
                continue
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            assert proc.returncode == 0, f"$ {command}\n{proc.stdout}{proc.stderr}"
            if expected:
                assert matches(expected, proc.stdout), (
                    f"$ {command}\nprinted:\n{proc.stdout}\nthe page shows:\n{expected}"
                )


def test_the_python_prints_what_the_page_shows() -> None:
    runs = [
        i
        for i, (lang, info, _) in enumerate(BLOCKS)
        if (lang, info) == ("python", "run")
    ]
    for i in runs:
        lang, info, expected = BLOCKS[i + 1]
        assert (lang, info) == ("text", "output"), "a python run block needs its output"
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            exec(compile(BLOCKS[i][2], f"docs/tutorial.md block {i}", "exec"), {})
        assert stdout.getvalue() == expected


def test_the_wildcards_match_only_what_they_should() -> None:
    assert matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert matches("x ... z\n", "x yyy z\n")
    assert not matches("a\nd\n", "a\nb\nd\n")
    assert not matches("x ... z\n", "x y w\n")
