"""Printing the IR around passes, as MLIR's ``--mlir-print-ir-*`` flags do.

``qidao.compile(model, debug=qidao.PrintIR(...))``, ``qidao compile
--print-ir-after-change`` and ``qidao-opt --print-ir-after-change`` share this
printer::

    PrintIR(after_change=True)              # the IR after each pass that changed it
    PrintIR(after_change=True, diff=True)   # ... as a unified diff against before
    PrintIR(before=["fuse"], after=["fuse"])  # around one pass, changed or not

A pass is named as the pipeline names it (``qidao.compiler.pipeline``);
``schedule`` names the schedule applied at the end of the ``schedule`` stage. A
pass is compared with the IR before it by its printed text, so a pass that only
renames values counts as a change. A named pass that did not run says why.

``PrintIR(log=IRLog())`` keeps the IR before and after every pass, with its stage
and its time, in the :class:`IRLog` instead of printing it (``qidao explain``
draws its page from one); it prints nothing unless the other fields ask.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from xdsl.ir import Operation

Write = Callable[[str, str], None]
"""Prints one section: a title and its text (``qidao.compiler.debug.emit``)."""


@dataclass(frozen=True)
class PassIR:
    """One pass as an :class:`IRLog` kept it: its stage, the IR before and after
    it, and its seconds (the pass, and its verification with ``verify="each"``;
    printing the IR not counted)."""

    stage: str
    """The stage the pass ran in (``tg``, ``affine``, ...)."""
    name: str
    """The pass, as the pipeline names it; ``schedule`` for the schedule."""
    before: str
    after: str
    seconds: float

    @property
    def changed(self) -> bool:
        """Whether the printed IR differs (a renamed value is a change)."""
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff, as ``PrintIR(diff=True)`` prints it."""
        return _diff(self.before, self.after, self.name)


@dataclass(frozen=True)
class SkippedPass:
    """A pass of the pipeline that did not run in this compile, and why."""

    stage: str
    name: str
    why: str


@dataclass
class IRLog:
    """The IR around every pass of one compile, kept rather than printed:
    ``qidao.compile(model, debug=PrintIR(log=log))`` fills it in order."""

    input: str = ""
    """The IR before the first pass (the ``input`` stage)."""
    passes: list[PassIR] = field(default_factory=list)
    """Every pass that ran, in order (the schedule too, as ``schedule``)."""
    skipped: list[SkippedPass] = field(default_factory=list)
    """The pipeline's passes that did not run, in order, with the reason."""

    def stage_passes(self, stage: str) -> list[PassIR]:
        """The passes that ran in ``stage``, in order."""
        return [p for p in self.passes if p.stage == stage]


@dataclass(frozen=True)
class PrintIR:
    """What to print around the passes of a compile (``debug=PrintIR(...)``)."""

    after_change: bool = False
    """The IR after every pass that changed it (a pass that changed nothing
    prints nothing)."""
    diff: bool = False
    """Print a changed IR as a unified diff against the IR before the pass (with
    ``after_change``, ``after`` or ``after_all``)."""
    before: tuple[str, ...] = ()
    """Passes to print the IR before."""
    after: tuple[str, ...] = ()
    """Passes to print the IR after, changed or not."""
    after_all: bool = False
    """The IR after every pass (``debug=3`` prints this too)."""
    level: int = 0
    """The debug level besides (``qidao.compiler.debug``: 1 prints the times)."""
    log: IRLog | None = field(default=None, compare=False, repr=False)
    """Keep every pass's IR before and after it here (prints nothing itself)."""

    def __post_init__(self) -> None:
        if self.log is not None and not isinstance(self.log, IRLog):
            raise TypeError(f"PrintIR(log=...) takes an IRLog, got {self.log!r}")
        for name in ("before", "after"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, Iterable) or not all(
                isinstance(v, str) for v in value
            ):
                raise TypeError(
                    f"PrintIR({name}=...) takes a list of pass names, got {value!r}"
                )
            object.__setattr__(self, name, tuple(value))
        for name in ("after_change", "diff", "after_all"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"PrintIR({name}=...) is True or False, got {getattr(self, name)!r}"
                )

    @property
    def passes(self) -> tuple[str, ...]:
        """Every pass named in ``before`` and ``after``."""
        return tuple(dict.fromkeys(self.before + self.after))

    def check(self, known: Collection[str], where: str) -> None:
        """Refuse a named pass that is not in ``known`` (``where`` says whose)."""
        for name in self.passes:
            if name in known:
                continue
            close = difflib.get_close_matches(name, list(known), n=3)
            hint = (
                f"did you mean {' or '.join(map(repr, close))}?"
                if close
                else f"the passes of {where} are: {', '.join(sorted(known))}"
                if len(known) <= 40
                else f"{where} lists its passes with --help"
            )
            raise ValueError(f"print-ir names unknown pass {name!r}; {hint}")


@dataclass
class IRPrinter:
    """Prints the IR around each pass as ``config`` asks; one per pass run."""

    config: PrintIR
    write: Write
    _last: str | None = field(default=None, init=False)
    _stage: str = field(default="", init=False)
    _started: float = field(default=0.0, init=False)

    def start(self, module: Operation) -> None:
        """Remember the IR before the first pass (what the first change is
        measured against)."""
        if self._wants_text():
            self._last = str(module)
        log = self.config.log
        if log is not None and not log.input and self._last is not None:
            log.input = self._last

    def stage(self, name: str) -> None:
        """Called as stage ``name`` begins (the log files its passes under it)."""
        self._stage = name

    def before(self, name: str, module: Operation) -> None:
        """Called before pass ``name`` runs on ``module``."""
        if name in self.config.before:
            self.write(f"IR before {name}", str(module))
        self._started = time.perf_counter()

    def after(self, name: str, module: Operation) -> None:
        """Called after pass ``name`` ran on ``module``."""
        seconds = time.perf_counter() - self._started
        if not self._wants_text():
            return
        text = str(module)
        previous, self._last = self._last, text
        if self.config.log is not None:
            self.config.log.passes.append(
                PassIR(self._stage, name, previous or "", text, seconds)
            )
        changed = previous is None or previous != text
        named = name in self.config.after or self.config.after_all
        if not (named or (self.config.after_change and changed)):
            return
        if not changed:
            self.write(f"IR after {name} (unchanged)", "")
        elif self.config.diff and previous is not None:
            self.write(f"IR after {name} (diff)", _diff(previous, text, name))
        else:
            self.write(f"IR after {name}", text)

    def skipped(self, name: str, why: str) -> None:
        """Called for a pass of the pipeline that does not run in this compile."""
        if self.config.log is not None:
            self.config.log.skipped.append(SkippedPass(self._stage, name, why))
        if name in self.config.passes:
            self.write(f"pass {name} did not run: {why}", "")

    def _wants_text(self) -> bool:
        c = self.config
        return c.after_change or c.after_all or bool(c.after) or c.log is not None


def _diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        fromfile=f"before {name}",
        tofile=f"after {name}",
        lineterm="",
    )
    return "\n".join(lines)
