"""``qidao pipeline``: each target's stage table, generated from the pipeline data
(``qidao.compiler.pipeline.PIPELINES``), so that nobody edits the table by hand.

    qidao pipeline                              # every target's table, as Markdown
    qidao pipeline --target cuda                # one target's
    qidao pipeline --write docs/pipeline.md     # rewrite the tables in place

A page holds a target's table between two marker comments, which Markdown does not
render; ``--write`` replaces what lies between them and leaves the rest of the file
as it was::

    <!-- qidao pipeline cpu -->

    | stage | the IR | made by |
    ...

    <!-- end -->

``tests/compiler/test_pipeline.py`` fails, naming this command, when
``docs/pipeline.md`` and the data differ.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from qidao.compiler.pipeline import TARGETS, check_target, stage_table

END_MARKER = "<!-- end -->"
"""The comment that closes a table's block."""

_BEGIN = re.compile(r"^<!-- qidao pipeline (?P<target>[\w.-]+) -->$")


def begin_marker(target: str) -> str:
    """The comment that opens ``target``'s table."""
    return f"<!-- qidao pipeline {target} -->"


def table_block(target: str) -> str:
    """``target``'s table between its markers, as the page holds it."""
    return f"{begin_marker(target)}\n\n{stage_table(target)}\n{END_MARKER}\n"


def rewrite_tables(text: str, targets: tuple[str, ...] = TARGETS) -> str:
    """``text`` with the table of each target in ``targets`` regenerated between its
    markers. Raises ``ValueError`` naming the line for a marker without its end or
    of an unknown target, and when no block of ``targets`` is found."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    found: list[str] = []
    i = 0
    while i < len(lines):
        begin = _BEGIN.match(lines[i].strip())
        if begin is None:
            out.append(lines[i])
            i += 1
            continue
        target = begin["target"]
        if target not in TARGETS:
            raise ValueError(
                f"line {i + 1}: unknown target '{target}' in "
                f"'{lines[i].strip()}' (targets: {', '.join(TARGETS)})"
            )
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip() == END_MARKER),
            None,
        )
        if end is None:
            raise ValueError(
                f"line {i + 1}: '{begin_marker(target)}' has no '{END_MARKER}' after it"
            )
        if target in targets:
            out.append(table_block(target))
            found.append(target)
        else:
            out.extend(lines[i : end + 1])
        i = end + 1
    if not found:
        wanted = " or ".join(f"'{begin_marker(t)}'" for t in targets)
        raise ValueError(
            f"no {wanted} ... '{END_MARKER}' markers: put them where the table goes"
        )
    return "".join(out)


def write_tables(path: Path, targets: tuple[str, ...] = TARGETS) -> bool:
    """Rewrites the tables in ``path``; True if the file changed."""
    text = path.read_text(encoding="utf-8")
    try:
        new = rewrite_tables(text, targets)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def cmd_pipeline(args: argparse.Namespace) -> int:
    targets = (check_target(args.target),) if args.target else TARGETS
    if args.write is None:
        print("\n".join(table_block(t) for t in targets), end="")
        return 0
    path = Path(args.write)
    changed = write_tables(path, targets)
    state = "updated" if changed else "already up to date"
    print(f"{path}: {state} ({', '.join(targets)})")
    return 0


def add_pipeline_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pipeline",
        help="print each target's stage table (Markdown), or rewrite a page's",
        description="Each target's stages and the passes that make them, as the "
        "Markdown table of docs/pipeline.md, generated from "
        "qidao.compiler.pipeline.PIPELINES. With --write, the tables in FILE "
        "between '<!-- qidao pipeline TARGET -->' and '<!-- end -->' are "
        "replaced and the rest of the file is kept.",
    )
    p.add_argument(
        "--target",
        choices=TARGETS,
        default=None,
        help="only this target's table (default: every target's)",
    )
    p.add_argument(
        "--write",
        metavar="FILE",
        default=None,
        help="rewrite the tables in FILE in place (exit 2 if it has no markers)",
    )
    p.set_defaults(run=cmd_pipeline)
