"""Run a lit/FileCheck test file's RUN lines in this process, as lit would run them.

``lit`` starts a new interpreter for every command of every RUN line (``qidao-opt``,
``qidao compile``, ``filecheck``: each imports xDSL, qidao, llvmlite again); this
runner calls the same console-script entry points in the current process instead.

What it reproduces of lit's internal shell (``lit.formats.ShTest``, ``pipefail`` on):

- the RUN lines, read by lit's own parser (``lit.TestRunner._parseKeywords``: line
  continuations with ``\\``, ``RUN:`` anywhere on a line) and split by lit's own shell
  lexer (``lit.ShUtil.ShParser``: quoting), with ``%s``, ``%S`` and ``%p`` substituted;
- each command as a fresh process would see it: ``sys.argv``, ``sys.stdin`` (the
  previous command's output, or empty), a block-buffered ``sys.stdout`` and a
  line-buffered ``sys.stderr`` (so ``2>&1`` interleaves as in a pipe), the exit status
  of ``sys.exit(main())`` (an uncaught exception: its traceback and status 1), the
  cwd (the test's folder), Python's default warning filters, and an environment
  without ``QIDAO_*``/``FILECHECK_*`` variables (lit passes none) and with the compile
  cache off;
- ``not`` (a zero status fails, non-zero passes), ``2>&1``, ``>/dev/null`` and
  ``2>/dev/null`` in the order given (``2>&1 >/dev/null`` pipes stderr only), and
  ``pipefail``: a line fails when any of its commands fails; the lines run in order
  and the first failure ends the test.

A file with anything else (another command, substitution, redirection or shell
operator, a lit directive other than ``RUN:``) is run by the real ``lit`` instead;
:func:`run_file` says so in its result.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal

import lit.ShUtil
import lit.TestRunner
from xdsl.ir import Attribute
from xdsl.utils.diagnostic import Diagnostic

TOOLS = ("qidao-opt", "qidao", "filecheck")
"""The console scripts run in-process (``[project.scripts]`` and filecheck's)."""

QIDAO_SUBCOMMANDS = ("compile",)
"""``qidao``'s subcommands run in-process (the others start workers or write files)."""

Target = Literal["pipe", "own", "null"]
"""Where a stream goes: the pipe (the next command's stdin, or what lit captures of
the last command), the command's own captured stderr, or ``/dev/null``."""


class Unsupported(Exception):
    """A RUN line (or file) outside what this runner reproduces."""


@dataclass(frozen=True)
class Command:
    """One command of a pipeline: its argv (without ``not``) and its redirections."""

    argv: tuple[str, ...]
    nots: int
    stdout: Target
    stderr: Target

    def __str__(self) -> str:
        return " ".join(["not"] * self.nots + [shlex.quote(a) for a in self.argv])


@dataclass(frozen=True)
class RunLine:
    """One RUN line (its continuation lines joined), substituted and split."""

    line: int
    text: str
    commands: tuple[Command, ...]


@dataclass(frozen=True)
class Ran:
    """One command's exit status (before and after ``not``) and what it wrote that
    did not go down the pipe."""

    command: Command
    raw_status: int
    status: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Result:
    """A test file's outcome: passed or not, lit's ``-v``-like report, and why it
    went to the real lit if it did."""

    path: Path
    passed: bool
    report: str
    fallback: str | None = None


def parse(path: Path) -> list[RunLine]:
    """The file's RUN lines, as lit reads them; :class:`Unsupported` if any is not
    in this runner's grammar."""
    try:
        keywords = lit.TestRunner._parseKeywords(str(path))
    except ValueError as err:  # no RUN line, an unterminated continuation
        raise Unsupported(str(err)) from None
    for keyword, value in keywords.items():
        if keyword not in ("RUN:", "DEFINE:", "REDEFINE:") and value:
            raise Unsupported(f"lit directive {keyword}")
    lines = []
    for directive in keywords["RUN:"]:  # DEFINE:/REDEFINE: share this list
        if not isinstance(directive, lit.TestRunner.CommandDirective):
            raise Unsupported(f"lit directive {directive.keyword}")
        match = re.fullmatch(lit.TestRunner.kPdbgRegex, directive.command)
        text = (match.group(2) if match else directive.command).strip()
        line = directive.start_line_number
        lines.append(RunLine(line, text, _commands(_substitute(text, path), line)))
    return lines


def _substitute(text: str, path: Path) -> str:
    folder = str(path.parent)
    out = text.replace("%s", str(path)).replace("%S", folder).replace("%p", folder)
    if "%" in text.replace("%s", "").replace("%S", "").replace("%p", ""):
        raise Unsupported(f"a lit substitution other than %s, %S, %p: {text}")
    return out


def _commands(text: str, line: int) -> tuple[Command, ...]:
    try:
        pipeline = lit.ShUtil.ShParser(text, False, True).parse()
    except ValueError as err:
        raise Unsupported(f"line {line}: {err}") from None
    if not isinstance(pipeline, lit.ShUtil.Pipeline) or pipeline.negate:
        raise Unsupported(f"line {line}: a shell operator other than |: {text}")
    return tuple(_command(c, line) for c in pipeline.commands)


def _command(command: Any, line: int) -> Command:
    args = list(command.args)
    if not all(isinstance(a, str) for a in args):
        raise Unsupported(f"line {line}: a glob in {args}")
    nots = 0
    while args and args[0] == "not":
        args.pop(0)
        nots += 1
    if not args or args[0] not in TOOLS:  # also `not --crash`
        raise Unsupported(f"line {line}: not one of {TOOLS}: {args}")
    if args[0] == "qidao" and (len(args) < 2 or args[1] not in QIDAO_SUBCOMMANDS):
        raise Unsupported(f"line {line}: qidao {' '.join(args[1:2])}")
    _entry_point(args[0])  # installed, or Unsupported (the file goes to the real lit)
    fds: dict[int, Target] = {1: "pipe", 2: "own"}
    for op, name in command.redirects:
        if op == (">&", 2) and name == "1":
            fds[2] = fds[1]
        elif op in ((">",), (">", 2)) and name == os.devnull:
            fds[1 if op == (">",) else 2] = "null"
        else:
            raise Unsupported(f"line {line}: redirection {op} {name}")
    return Command(tuple(args), nots, fds[1], fds[2])


def run_file(path: Path) -> Result:
    """Run the file's RUN lines in this process (or, if :func:`parse` refuses it,
    the real ``lit -v`` on it)."""
    path = path.resolve()
    try:
        lines = parse(path)
    except Unsupported as why:
        return real_lit(path, fallback=str(why))
    report: list[str] = []
    for run in lines:
        ran = run_line(run, path.parent)
        report.append(_describe(run, ran))
        if any(r.status != 0 for r in ran):  # pipefail; lit joins the lines with &&
            return Result(path, False, "\n".join(report))
    return Result(path, True, "\n".join(report))


def run_line(run: RunLine, cwd: Path) -> list[Ran]:
    """Run one RUN line's pipeline, command after command (each reads all of the
    previous one's output, as filecheck does anyway)."""
    ran = []
    stdin = b""
    for command in run.commands:
        streams: dict[Target, bytearray] = {
            "pipe": bytearray(),
            "own": bytearray(),
            "null": bytearray(),
        }
        status = call(
            command.argv, stdin, streams[command.stdout], streams[command.stderr], cwd
        )
        if command.nots % 2:
            after = 0 if status != 0 else 1
        else:
            after = 1 if command.nots and status != 0 else status
        stdout = bytes(streams["pipe"]) if command is run.commands[-1] else b""
        ran.append(Ran(command, status, after, _text(stdout), _text(streams["own"])))
        stdin = bytes(streams["pipe"])
    return ran


def call(
    argv: tuple[str, ...], stdin: bytes, out: bytearray, err: bytearray, cwd: Path
) -> int:
    """Run a console script's ``sys.exit(main())`` with ``argv``: its stdout into
    ``out``, its stderr into ``err`` (the same bytearray for ``2>&1``); the exit
    status a process would have."""
    main = _entry_point(argv[0])
    stdout = io.TextIOWrapper(
        io.BufferedWriter(_Sink(out)), encoding="utf-8", errors="surrogateescape"
    )
    stderr = io.TextIOWrapper(
        io.BufferedWriter(_Sink(err)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    stdin_stream = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdin, sys.stdout, sys.stderr, sys.argv = stdin_stream, stdout, stderr, [*argv]
    try:
        with _fresh_process(cwd):
            try:
                status = _exit_status(main())
            except SystemExit as done:
                status = _exit_status(done.code)
            except KeyboardInterrupt:
                raise
            except BaseException:
                traceback.print_exc()
                status = 1
            stdout.flush()  # the interpreter flushes stdout, then stderr, at exit
            stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
    return status


def _exit_status(code: object) -> int:
    """The status of ``sys.exit(code)``: a non-int is printed to stderr, status 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


@cache
def _entry_point(tool: str) -> Callable[[], object]:
    found = entry_points(group="console_scripts", name=tool)
    if len(found) != 1:
        raise Unsupported(f"{tool}: {len(found)} console scripts of that name")
    main: Callable[[], object] = next(iter(found)).load()
    return main


@contextlib.contextmanager
def _fresh_process(cwd: Path) -> Iterator[None]:
    """What a new process under lit starts with: lit's cwd, no QIDAO_* or
    FILECHECK_* variables (lit passes none; the compile cache off rather than
    writing to ~/.cache), Python's default warning filters, and xDSL's class state
    (``--disable-verify`` and ``--syntax-highlight`` change it) restored after."""
    environ = dict(os.environ)
    post_init, colored = vars(Attribute)["__post_init__"], Diagnostic.colored
    for name in environ:
        if name.startswith(("QIDAO_", "FILECHECK_")):
            del os.environ[name]
    os.environ["QIDAO_CACHE"] = "off"
    try:
        with contextlib.chdir(cwd), warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.filterwarnings(
                "default", category=DeprecationWarning, module="__main__"
            )
            for category in (
                DeprecationWarning,
                PendingDeprecationWarning,
                ImportWarning,
                ResourceWarning,
            ):
                warnings.simplefilter("ignore", category, append=True)
            warnings.showwarning = _show_warning
            yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        Attribute.__post_init__ = post_init  # type: ignore[method-assign]
        Diagnostic.colored = colored


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    text = warnings.formatwarning(message, category, filename, lineno, line)
    (file or sys.stderr).write(text)


class _Sink(io.RawIOBase):
    """The raw end of a captured stream: bytes appended to a bytearray."""

    def __init__(self, into: bytearray) -> None:
        self._into = into

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._into += data
        return len(data)


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def _describe(run: RunLine, ran: list[Ran]) -> str:
    """One line's commands, their statuses and output, as ``lit -v`` shows them."""
    failed = any(r.status != 0 for r in ran)
    out = [f"# RUN: at line {run.line}: {run.text}"]
    for r in ran:
        out.append(f"# executed command: {r.command}")
        for name, text in (("stdout", r.stdout), ("stderr", r.stderr)):
            if text and (failed or name == "stderr"):
                out.append(f"# .---command {name}---\n{text.rstrip()}\n# `---")
        if r.raw_status != r.status:
            out.append(f"# note: exit status {r.raw_status}, after `not`: {r.status}")
        elif r.status:
            out.append(f"# error: command failed with exit status: {r.status}")
    return "\n".join(out)


def real_lit(path: Path, fallback: str | None = None) -> Result:
    """The real ``lit -v`` on ``path`` (its folder must be under a ``lit.cfg.py``)."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "PATH": search}  # lit.cfg.py wants qidao-opt on PATH
    done = subprocess.run(
        [shutil.which("lit", path=search) or "lit", "-v", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    report = done.stdout[-8000:] + done.stderr[-2000:]
    return Result(path, done.returncode == 0, report, fallback)
