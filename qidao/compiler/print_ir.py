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
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from xdsl.ir import Operation

Write = Callable[[str, str], None]
"""Prints one section: a title and its text (``qidao.compiler.debug.emit``)."""


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

    def __post_init__(self) -> None:
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

    def start(self, module: Operation) -> None:
        """Remember the IR before the first pass (what the first change is
        measured against)."""
        if self._wants_text():
            self._last = str(module)

    def before(self, name: str, module: Operation) -> None:
        """Called before pass ``name`` runs on ``module``."""
        if name in self.config.before:
            self.write(f"IR before {name}", str(module))

    def after(self, name: str, module: Operation) -> None:
        """Called after pass ``name`` ran on ``module``."""
        if not self._wants_text():
            return
        text = str(module)
        previous, self._last = self._last, text
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
        """Called for a named pass that does not run in this compile."""
        if name in self.config.passes:
            self.write(f"pass {name} did not run: {why}", "")

    def _wants_text(self) -> bool:
        c = self.config
        return c.after_change or c.after_all or bool(c.after)


def _diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        fromfile=f"before {name}",
        tofile=f"after {name}",
        lineterm="",
    )
    return "\n".join(lines)
