"""The tutorial's chapters (``docs/tutorial/*.md``) read as a student follows them.

A chapter is Markdown; every fenced block in it is either run or compared with the
repository, and an HTML comment on the line above a block (which the rendered page
does not show) says which:

=================================  ==================================================
above the block                    the block
=================================  ==================================================
(nothing), a ``console`` block     ``$ command`` lines, each followed by what it
                                   prints, stdout and stderr as a terminal shows them
                                   (a line ``...`` stands for any number of lines,
                                   ``...`` inside a line for any text); a command
                                   exits 0, or the last line shown is ``[exit N]``;
                                   ``source`` lines set up a shell and are skipped
``<!-- run -->``                   Python that runs; the next block, marked
                                   ``<!-- output -->``, is what it prints
``<!-- file PATH -->``             the whole file ``PATH``, which the student writes
``<!-- add PATH -->``              code the student adds to ``PATH`` (verbatim in it)
``<!-- edit PATH -->``             a ``diff`` the student applies to ``PATH``: ``+``
                                   lines added, ``-`` lines removed, the others kept;
                                   the lines it names may have others between them
``<!-- excerpt PATH -->``          lines of ``PATH``, in this order (others may lie
                                   between them)
=================================  ==================================================

In the repository the code a chapter has the student write is already there (it is
the reference solution), so the blocks ``file``, ``add`` and ``edit`` are compared
with it (:func:`repository_problem`). Then the chapter is replayed in a
:class:`Workspace`: a copy of the repository *without* that code, where its blocks
are applied and its commands run in order. So the commands run on the code as the
page shows it, a command placed before the code runs without it (and shows the
error a student meets first), and nothing that a chapter does lands in the
repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[3]
TUTORIAL = ROOT / "docs" / "tutorial"

CONTRIBUTES = ("file", "add", "edit")
"""The annotations of code the student writes."""
QUOTES = ("excerpt",)
"""The annotation of lines only shown."""

_FENCE = re.compile(r"^(`{3,})([\w-]*)\s*$")
_ANNOTATION = re.compile(
    r"^<!-- (file|add|edit|excerpt) (\S+) -->$|^<!-- (run|output) -->$"
)
_EXIT = re.compile(r"^\[exit (\d+)\]$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a chapter and its annotation."""

    chapter: str
    """The chapter's file name (``02-a-graph-pass.md``)."""
    line: int
    """The line of its opening fence (1-based)."""
    lang: str
    body: str
    action: str
    """``file``, ``add``, ``edit``, ``excerpt``, ``run``, ``output``, or ``""``."""
    path: str = ""
    """The repository file of ``file``/``add``/``edit``/``excerpt``."""

    @property
    def where(self) -> str:
        return f"docs/tutorial/{self.chapter} line {self.line}"


class ChapterError(Exception):
    """A chapter that does not parse, or that its replay does not follow; the
    message names the chapter and the line."""


def chapters() -> list[str]:
    """The chapter files, in order (``index.md`` is the table of contents)."""
    return sorted(p.name for p in TUTORIAL.glob("[0-9][0-9]-*.md"))


def blocks(chapter: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``chapter`` (read from ``docs/tutorial/`` unless
    ``text`` is given), each with the annotation on the line above it."""
    if text is None:
        text = (TUTORIAL / chapter).read_text(encoding="utf-8")
    lines = text.splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        ticks, lang = fence.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == ticks), None)
        if end is None:
            raise ChapterError(f"docs/tutorial/{chapter} line {i + 1}: unclosed fence")
        above = lines[i - 1] if i > 0 else ""
        note = _ANNOTATION.match(above)
        action, path = "", ""
        if note is not None:
            action = note.group(1) or note.group(3)
            path = note.group(2) or ""
        elif above.startswith("<!--"):
            raise ChapterError(
                f"docs/tutorial/{chapter} line {i}: unknown annotation {above!r}"
            )
        body = "".join(line + "\n" for line in lines[i + 1 : end])
        found.append(Block(chapter, i + 1, lang, body, action, path))
        i = end + 1
    return found


def unchecked(block: Block) -> str | None:
    """Why ``block`` is neither run nor compared with anything, or None."""
    if block.lang == "console" and not block.action:
        return None
    if block.action in (*CONTRIBUTES, *QUOTES, "output"):
        if block.action == "edit" and block.lang != "diff":
            return "an edit is a diff block"
        return None
    if block.action == "run":
        return None if block.lang == "python" else "only Python runs"
    return (
        "this block is neither run nor compared with the repository: mark it "
        "(see tests/tools/tutorial/pages.py)"
    )


# --- comparing with the repository ------------------------------------------------


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def _in_order(wanted: list[str], lines: list[str]) -> str | None:
    """None if ``wanted`` are lines of ``lines`` in this order, else the first one
    that is missing."""
    i = 0
    for line in wanted:
        while i < len(lines) and lines[i] != line:
            i += 1
        if i == len(lines):
            return line
        i += 1
    return None


def _diff_side(body: str, marks: str) -> list[str]:
    """The lines of a diff whose mark is in ``marks`` (``" "`` is context)."""
    side = []
    for line in body.splitlines():
        mark, content = (line[:1] or " "), line[1:]
        if mark in marks:
            side.append(content.rstrip())
    return side


def repository_problem(block: Block, text: str | None = None) -> str | None:
    """What in the repository differs from ``block`` and what to do, or None
    (``text``: the file's text, instead of reading it)."""
    if block.action not in (*CONTRIBUTES, *QUOTES):
        return None
    if text is None:
        path = ROOT / block.path
        if not path.is_file():
            return f"{block.where} shows {block.path}, which does not exist"
        text = path.read_text(encoding="utf-8")
    fix = (
        f"if you changed {block.path} on purpose, update the block at {block.where} "
        "to match"
    )
    if block.action == "file":
        if block.body != text:
            return (
                f"{block.where} shows another {block.path} than the repository's: {fix}"
            )
        return None
    if block.action == "add":
        if block.body not in text:
            return f"{block.where} shows code that {block.path} does not hold: {fix}"
        return None
    wanted = (
        _diff_side(block.body, " +") if block.action == "edit" else _lines(block.body)
    )
    missing = _in_order(wanted, _lines(text))
    if missing is not None:
        return (
            f"{block.where} shows lines of {block.path} that it does not hold in this "
            f"order (first missing: {missing!r}); lines added between them are fine: "
            f"{fix}"
        )
    return None


def patch(text: str, diff: str, forward: bool = True) -> str:
    """``text`` with ``diff`` applied (``forward``) or taken back.

    The lines the diff keeps or takes away are looked up in order, each after the
    one before, so other lines may lie between them (a step another pass added
    next to the one the diff adds). Added lines go right after the kept line above
    them, or in the place of the line they replace. Raises ``ChapterError`` naming
    a line not found."""
    find, put = (" -", "+") if forward else (" +", "-")
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    pending: list[str] = []
    i = 0
    for line in diff.splitlines():
        mark, content = (line[:1] or " "), line[1:]
        if mark in put:
            pending.append(content + "\n")
            continue
        if mark not in find:
            continue
        j = i
        while j < len(lines) and lines[j].rstrip() != content.rstrip():
            j += 1
        if j == len(lines):
            raise ChapterError(f"no line {content!r} (after line {i})")
        if mark == " ":  # kept: what was added above it goes right after the last
            out.extend(pending)
            out.extend(lines[i : j + 1])
        else:  # taken away: what replaces it goes in its place
            out.extend(lines[i:j])
            out.extend(pending)
        pending = []
        i = j + 1
    out.extend(pending)
    out.extend(lines[i:])
    return "".join(out)


# --- replaying in a copy of the repository -----------------------------------------


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
    """Whether ``actual`` is what ``expected`` shows (trailing spaces and blank
    lines at the end aside)."""
    lines = [line.rstrip() for line in actual.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    actual = "".join(line + "\n" for line in lines)
    return expected_pattern(expected).fullmatch(actual) is not None


def commands(block: Block) -> list[tuple[str, str, int]]:
    """(command, expected output, expected exit status) of a console block."""
    pairs: list[tuple[str, str]] = []
    for line in block.body.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].strip(), ""))
        elif not pairs:
            raise ChapterError(f"{block.where}: output before any command: {line!r}")
        else:
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line)
    found = []
    for command, expected in pairs:
        status = 0
        shown = expected.splitlines(keepends=True)
        code = _EXIT.match(shown[-1].strip()) if shown else None
        if code is not None:
            status = int(code.group(1))
            expected = "".join(shown[:-1])
        found.append((command, expected, status))
    return found


_WRAPPER = """#!{python}
import sys
sys.path.insert(0, {root!r})
from {module} import main
sys.argv[0] = {name!r}
sys.exit(main())
"""

_SCRIPTS = {"qidao": "qidao.tools.cli", "qidao-opt": "qidao.tools.opt"}

GENERATED = ("qidao pipeline --write docs/pipeline.md",)
"""The commands that regenerate the pages made from the code: run in the copy once
the chapters' code is taken back, so that those pages are as they were before the
student began (and a chapter's own run of the command shows what changed). Not run
for chapters that write no code: the pages are the repository's, which
``tests/compiler/test_pipeline.py`` holds to the code."""


class Workspace:
    """A copy of the repository's working tree in ``folder`` (its files that git
    tracks or does not ignore), where a chapter's commands import and run the
    copy's qidao: ``qidao`` and ``qidao-opt`` on ``PATH`` are scripts that put the
    copy first on ``sys.path`` (lit passes ``PATH`` to the tests it runs, not
    ``PYTHONPATH``), and ``PYTHONPATH`` does the same for Python and pytest."""

    def __init__(self, folder: Path) -> None:
        self.root = folder / "repo"
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        for name in filter(None, listed.split("\0")):
            source = ROOT / name
            if source.is_file():
                (self.root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, self.root / name)
        bin_dir = folder / "bin"
        bin_dir.mkdir()
        for name, module in _SCRIPTS.items():
            script = bin_dir / name
            script.write_text(
                _WRAPPER.format(
                    python=sys.executable, root=str(self.root), module=module, name=name
                )
            )
            script.chmod(0o755)
        self.env = dict(
            os.environ,
            PATH=os.pathsep.join(
                [str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]
            ),
            PYTHONPATH=str(self.root),
            PYTHONUNBUFFERED="1",
        )
        self._removed_at: dict[int, int] = {}
        """Where each ``add`` block's code was taken out of its file."""

    def file(self, path: str) -> Path:
        return self.root / path

    def compile_bytecode(self) -> None:
        """Byte-compile the copy's ``qidao`` once, as an installed package is, instead
        of in every command (where ``PYTHONDONTWRITEBYTECODE`` is set, each command
        compiled every module it imports: 0.3 s a command). The ``.pyc`` files are
        checked against a hash of their source on every import, so a file that a
        block changes afterwards is read from its source."""
        subprocess.run(
            [
                sys.executable,
                "-m",
                "compileall",
                "-q",
                "--invalidation-mode",
                "checked-hash",
                str(self.root / "qidao"),
            ],
            env=self.env,
            check=True,
        )

    def take_back(self, block: Block) -> None:
        """Undo what ``block`` has the student write: the state before the chapter."""
        target = self.file(block.path)
        if block.action == "file":
            target.unlink(missing_ok=True)
        elif block.action == "add":
            text = target.read_text(encoding="utf-8")
            at = text.find(block.body)
            if at < 0:
                raise ChapterError(
                    f"{block.where}: {block.path} does not hold this code"
                )
            self._removed_at[id(block)] = at
            target.write_text(
                text[:at] + text[at + len(block.body) :], encoding="utf-8"
            )
        elif block.action == "edit":
            text = target.read_text(encoding="utf-8")
            try:
                target.write_text(
                    patch(text, block.body, forward=False), encoding="utf-8"
                )
            except ChapterError as err:
                raise ChapterError(f"{block.where}: {block.path}: {err}") from None

    def apply(self, block: Block) -> None:
        """Write what ``block`` has the student write."""
        target = self.file(block.path)
        if block.action == "file":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")
        elif block.action == "add":
            at = self._removed_at[id(block)]
            text = target.read_text(encoding="utf-8")
            target.write_text(text[:at] + block.body + text[at:], encoding="utf-8")
        elif block.action == "edit":
            text = target.read_text(encoding="utf-8")
            try:
                target.write_text(patch(text, block.body), encoding="utf-8")
            except ChapterError as err:
                raise ChapterError(f"{block.where}: {block.path}: {err}") from None

    def run(self, args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
        """Run ``args`` in the copy; stdout and stderr together, as a terminal
        shows them."""
        return subprocess.run(
            args,
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )


def replay(story: list[str], workspace: Workspace, timeout: int = 600) -> None:
    """Follow the chapters of ``story`` in ``workspace``: first take back the code
    they have the student write, then apply their blocks and run their commands in
    order. Raises ``ChapterError`` at the first block the replay does not follow,
    naming it, with what was printed and what the chapter shows."""
    pages = [block for chapter in story for block in blocks(chapter)]
    written = [block for block in pages if block.action in CONTRIBUTES]
    for block in reversed(written):
        workspace.take_back(block)
    workspace.compile_bytecode()
    for command in GENERATED if written else ():  # the pages made from the code
        done = workspace.run(["bash", "-c", command], timeout)
        if done.returncode != 0:
            raise ChapterError(f"{command} failed before the chapters:\n{done.stdout}")
    for k, block in enumerate(pages):
        if block.action in CONTRIBUTES:
            workspace.apply(block)
        elif block.lang == "console" and not block.action:
            for command, expected, status in commands(block):
                if command.startswith("source "):
                    continue
                done = workspace.run(["bash", "-c", command], timeout)
                _compare(block, f"$ {command}", done, expected, status)
        elif block.action == "run":
            following = pages[k + 1] if k + 1 < len(pages) else None
            if following is None or following.action != "output":
                raise ChapterError(f"{block.where}: a run block needs an output block")
            done = workspace.run([sys.executable, "-c", block.body], timeout)
            _compare(block, "the Python block", done, following.body, 0)


def _compare(
    block: Block,
    what: str,
    done: subprocess.CompletedProcess[str],
    expected: str,
    status: int,
) -> None:
    if done.returncode != status:
        raise ChapterError(
            f"{block.where}: {what}\nexited with {done.returncode}, the chapter shows "
            f"{status}; it printed:\n{done.stdout}"
        )
    if not matches(expected, done.stdout):
        raise ChapterError(
            f"{block.where}: {what}\nprinted:\n{done.stdout}\nthe chapter shows:\n"
            f"{expected}"
        )
