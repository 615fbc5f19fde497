"""The ``qidao explain --html`` page: one self-contained HTML file.

Everything is inline (CSS, a few lines of JavaScript, the SVG of the graph) and
every text that comes from the model or its IR is HTML-escaped, so the file opens
from disk with no network and shows a model named ``</script>`` as text. The page,
top to bottom: a header (model, target, threads, versions), a table of contents of
in-page links, the summary (``compiled.stats``), the tg graph with its kernels
(``graph.py``), the kernel table, every stage as a collapsible ``<details>`` with
each pass's unified diff (or "unchanged", or why it did not run) and the full IR
after it, and the compile time per stage. Exact numbers ride along as ``data-*``
attributes for tests and scripts.

A large model's IR would make a page of hundreds of megabytes. Its weights are
elided first (a ``dense<...>`` of more than ``ELIDE`` characters keeps its first
ones, a line of more than ``LONG_LINE`` is cut), the diffs are of the IR so
shortened; the full IR after each pass is kept while the page has room
(``ir_budget`` characters), then only after each stage; a diff longer than
``diff_lines`` lines is cut, saying how to print it whole.
"""

from __future__ import annotations

import difflib
import html
import re

from qidao.compiler.pipeline import Stage
from qidao.compiler.print_ir import PassIR, SkippedPass
from qidao.compiler.report.collect import Explanation, format_seconds
from qidao.compiler.report.graph import graph_svg, group_colour

IR_BUDGET = 8_000_000
"""Characters of full IR the page holds before it keeps only each stage's."""
DIFF_LINES = 3000
"""Lines of one pass's diff shown before it is cut."""
TEXT_STAGE_CHARS = 400_000
"""Characters of a text stage (LLVM IR) shown."""
ELIDE = 160
"""A ``dense<...>`` literal longer than this keeps only its first characters."""
LONG_LINE = 1200
"""A longer line is cut here."""

_DENSE = re.compile(rf"dense<([^<>]{{{ELIDE},}})>")

e = html.escape


def render_html(
    x: Explanation,
    *,
    ir_budget: int = IR_BUDGET,
    diff_lines: int = DIFF_LINES,
    max_nodes: int = 160,
) -> str:
    """The page of ``x`` as one HTML document."""
    page = _Page(x, ir_budget, diff_lines)
    body = [
        _toc(x),
        "<main>",
        _header(x),
        _summary(x),
        _graph(x, max_nodes),
        _kernels(x),
        page.stages(),
        _compile_time(x),
        _footer(x),
        "</main>",
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>qidao explain: {e(x.model)}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + f"\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


# --- sections -------------------------------------------------------------------


def _toc(x: Explanation) -> str:
    stages = "".join(
        f'<li><a href="#stage-{e(s.name)}">{e(s.name)}</a></li>' for s in x.pipeline
    )
    return (
        '<nav id="toc" aria-label="contents"><div class="brand">qidao explain</div>'
        "<ol>"
        '<li><a href="#summary">Summary</a></li>'
        '<li><a href="#graph">The graph and its kernels</a></li>'
        '<li><a href="#kernels">Kernels</a></li>'
        f'<li><a href="#stages">Stages and passes</a><ol>{stages}</ol></li>'
        '<li><a href="#compile-time">Compile time</a></li>'
        "</ol>"
        '<div class="buttons"><button type="button" id="open-all">open all stages'
        '</button><button type="button" id="close-all">close all</button></div>'
        "</nav>"
    )


def _header(x: Explanation) -> str:
    threads = x.stats.get("threads")
    facts = [
        f"target <b>{e(x.target)}</b> ({e(x.cpu)})",
        f"<b>{e(str(threads))}</b> thread{'s' if threads != 1 else ''}",
        f"<b>{e(x.compiled.mode)}</b> mode",
        f"qidao {e(x.version)}",
    ]
    return (
        f'<header id="top"><h1>{e(x.model)}</h1>'
        f'<p class="meta">{" · ".join(facts)}</p></header>'
    )


_SUMMARY = (
    ("kernels", "kernel launches per call"),
    ("buffers", "intermediate buffers"),
    ("peak_bytes", "peak intermediate bytes"),
    ("traffic_bytes", "intermediate traffic bytes"),
)


def _summary(x: Explanation) -> str:
    s = x.stats
    cards = [
        _card(key, label, f"{s[key]:,}", s[key]) for key, label in _SUMMARY if key in s
    ]
    compile_s = sum(s.get("compile_seconds", {}).values())
    cards.append(
        _card("compile_seconds", "compile time", _ms(compile_s), f"{compile_s!r}")
    )
    if x.profile is not None:
        cards.append(
            _card(
                "call_us",
                f"one call (median of {x.runs})",
                format_seconds(x.profile.total_us * 1e-6),
                f"{x.profile.total_us!r}",
            )
        )
    eager = " ".join(
        [
            f"The tg graph has <b>{x.graph.tg_ops}</b> ops; the compiled model runs",
            f"<b>{s['kernels']}</b> kernel launch{'es' if s['kernels'] != 1 else ''}",
            f"of <b>{len(x.kernels)}</b> distinct kernels per call.",
        ]
    )
    return (
        '<section id="summary"><h2>Summary</h2>'
        f'<div class="cards">{"".join(cards)}</div><p>{eager}</p></section>'
    )


def _card(key: str, label: str, shown: str, value: object) -> str:
    return (
        f'<div class="card" data-stat="{e(key)}" data-value="{e(str(value))}">'
        f'<div class="value">{e(shown)}</div><div class="label">{e(label)}</div></div>'
    )


def _graph(x: Explanation, max_nodes: int) -> str:
    svg, note = graph_svg(x.graph, max_nodes)
    legend = []
    for group in x.graph.groups:
        kernel = (
            f'<a href="#kernel-{e(group.kernel)}">{e(group.kernel)}</a>'
            if x.graph.matched
            else f"launch {group.index}"
        )
        legend.append(
            f'<li><span class="swatch" style="background:{group_colour(group.index)}">'
            f"</span>{kernel} <code>{_ops(group.label)}</code></li>"
        )
    legend += [
        '<li><span class="swatch pill"></span>a graph input or output</li>',
        '<li><span class="swatch view"></span>a view: no kernel, its input\'s '
        "memory read another way (strides)</li>",
        '<li><span class="swatch constant"></span>a constant (a global, or a '
        "number folded into the kernel)</li>",
    ]
    warn = ""
    if not x.graph.matched:
        warn = (
            '<p class="warn">The kernels could not be matched to the graph\'s ops '
            "one by one: the boxes show the groups, not their kernel names.</p>"
        )
    return (
        '<section id="graph"><h2>The graph and its kernels</h2>'
        "<p>The <code>tg</code> stage after the graph passes: a node per tg op, an "
        "arrow per value from the op that makes it to each op that reads it "
        "(hover for the type). Each coloured box is one kernel launch: the ops that "
        "<code>fuse</code> grouped run as one loop nest and keep their "
        "intermediates out of memory."
        + (f" <em>{e(note)}.</em>" if note else "")
        + f'</p>{warn}<div class="graph-wrap">{svg}</div>'
        f'<ul class="legend">{"".join(legend)}</ul></section>'
    )


def _kernels(x: Explanation) -> str:
    rows = []
    for i, k in enumerate(x.kernels):
        schedule = (
            f"<details><summary>{_count(len(k.schedule.splitlines()), 'primitive')}"
            "</summary>"
            f"<pre>{e(k.schedule)}</pre></details>"
            if k.schedule
            else '<span class="muted">none</span>'
        )
        rows.append(
            f'<tr id="kernel-{e(k.kernel)}" data-kernel="{e(k.kernel)}">'
            f'<td class="num">{i}</td><td><code>{e(k.kernel)}</code></td>'
            f'<td class="ops"><code>{_ops(k.ops)}</code></td>'
            f'<td class="num" data-value="{k.launches}">{k.launches}</td>'
            f'<td class="num" data-value="{k.bytes}">{_bytes(k.bytes)}</td>'
            f'<td class="num" data-value="{k.seconds!r}">{format_seconds(k.seconds)}</td>'
            f'<td class="num" data-value="{k.flops}">{_rate(k.gflops)}</td>'
            f'<td class="num">{_rate(k.gbytes)}</td>'
            f"<td>{schedule}</td><td>{e(k.default) or '-'}</td></tr>"
        )
    launches = sum(k.launches for k in x.kernels)
    timed = [k.seconds for k in x.kernels if k.seconds is not None]
    total = (
        f'<tr class="total"><td></td><td>all kernels</td><td></td>'
        f'<td class="num" data-value="{launches}">{launches}</td>'
        f'<td class="num">{_bytes(sum(k.bytes for k in x.kernels))}</td>'
        f'<td class="num">{format_seconds(sum(timed)) if timed else "-"}</td>'
        "<td></td><td></td><td></td><td></td></tr>"
    )
    timing = (
        f"Times are medians over {x.runs} calls (after 3 warm-up calls) of each "
        "kernel's launches in one call, measured by the timers of "
        "<code>profile=True</code>."
        if x.profile is not None
        else "Not timed (<code>--runs 0</code>)."
    )
    return (
        '<section id="kernels"><h2>Kernels</h2>'
        f"<p>{timing} Bytes: every buffer a launch reads or writes, once; FLOPs "
        "from <code>qidao/dialects/tg/cost.py</code>. The schedule is the "
        "trace applied to the kernel; the last column says what the target's "
        'default schedule chose and why (<code>stats["default_schedule"]</code>).'
        '</p><div class="table-wrap"><table class="kernels"><thead><tr>'
        "<th>#</th><th>kernel</th><th>tg ops</th><th>launches per call</th>"
        "<th>bytes</th><th>time</th><th>GFLOP/s</th><th>GB/s</th><th>schedule</th>"
        "<th>the default's choice</th></tr></thead><tbody>"
        + "".join(rows)
        + total
        + "</tbody></table></div></section>"
    )


class _Page:
    """The stages section, within a budget of IR text."""

    def __init__(self, x: Explanation, ir_budget: int, diff_lines: int) -> None:
        self.x = x
        self.left = ir_budget
        self.diff_lines = diff_lines
        self._compact: dict[int, str] = {}

    def compact(self, text: str) -> str:
        """``text`` with its weights elided (once per text: a pass's IR after is
        the next one's before)."""
        key = id(text)
        if key not in self._compact:
            self._compact[key] = compact(text)
        return self._compact[key]

    def full_ir(self, title: str, text: str, always: bool = False) -> str:
        """A collapsed ``<details>`` with ``text``, while the budget lasts."""
        shown = self.compact(text)
        if len(shown) > self.left and not always:
            return ""
        self.left -= len(shown)
        return (
            f'<details class="full-ir"><summary>{e(title)} ({_lines(shown)} lines)'
            f"</summary>{_ir(shown)}</details>"
        )

    def stages(self) -> str:
        x = self.x
        changed = sum(1 for p in x.log.passes if p.changed)
        parts = [
            '<section id="stages"><h2>Stages and passes</h2>'
            f"<p>The pipeline of target <code>{e(x.target)}</code>, stage by stage; "
            f"<b>{changed}</b> of the {len(x.log.passes)} passes that ran changed "
            "the IR. Open a stage to see each pass as a unified diff (green: "
            "added, red: removed) and the full IR after it. The same, as text: "
            "<code>qidao compile MODEL --print-ir-after-change --print-ir-diff"
            "</code>.</p>"
        ]
        parts += [self.stage(stage) for stage in x.pipeline]
        parts.append("</section>")
        return "\n".join(parts)

    def stage(self, stage: Stage) -> str:
        x = self.x
        seconds = x.stats.get("compile_seconds", {})
        passes = x.log.stage_passes(stage.name)
        skipped = [s for s in x.log.skipped if s.stage == stage.name]
        if stage.text:
            body, badge = self.text_stage(stage), "text the target makes"
        elif stage.name == "input":
            body = (
                "<p>The model as the frontend imported it "
                f"({_ms(seconds.get('import', 0.0))}).</p>"
                + _ir(self.compact(x.log.input))
            )
            badge = "as imported"
        else:
            body = self.passes(stage, passes, skipped)
            ran = len(passes)
            n_changed = sum(1 for p in passes if p.changed)
            badge = f"{n_changed} of {ran} pass{'es' if ran != 1 else ''} changed it"
        time = f" · {_ms(seconds[stage.name])}" if stage.name in seconds else ""
        return (
            f'<details class="stage" id="stage-{e(stage.name)}">'
            f'<summary><span class="stage-name">{e(stage.name)}</span> '
            f'<span class="stage-summary">{e(_plain(stage.summary))}</span> '
            f'<span class="badge">{e(badge)}{time}</span></summary>'
            f'<div class="stage-body">{body}</div></details>'
        )

    def passes(
        self, stage: Stage, passes: list[PassIR], skipped: list[SkippedPass]
    ) -> str:
        ran = {p.name: p for p in passes}
        why = {s.name: s.why for s in skipped}
        names = list(dict.fromkeys([*stage.passes, *ran]))  # schedule: its own
        blocks = []
        for name in names:
            if name in ran:
                blocks.append(self.one_pass(ran[name]))
            elif name in why:
                blocks.append(
                    f'<div class="pass skipped"><h4>{e(name)} '
                    '<span class="badge">did not run</span></h4>'
                    f"<p>{e(_plain(why[name]))}</p></div>"
                )
        if not blocks:
            blocks.append(
                f"<p>No pass: {e(_plain(stage.made_by) or 'nothing ran here')}.</p>"
            )
        if passes:
            blocks.append(
                self.full_ir(
                    f"the IR after stage {stage.name}", passes[-1].after, always=True
                )
            )
        return "\n".join(blocks)

    def one_pass(self, p: PassIR) -> str:
        anchor = f"pass-{e(p.stage)}-{e(p.name)}"
        note = ""
        if p.name == "instrument-kernels":
            note = (
                '<p class="muted">explain compiles with <code>profile=True</code> '
                "to time the kernels: this pass adds the timers.</p>"
            )
        if p.name == "schedule":
            note = (
                '<p class="muted">The schedule applied at the end of the stage: '
                "the default, tuned records or <code>schedule=</code>.</p>"
            )
        if not p.changed:
            return (
                f'<div class="pass unchanged" id="{anchor}"><h4>{e(p.name)} '
                f'<span class="badge">unchanged</span> '
                f'<span class="ms">{_ms(p.seconds)}</span></h4>{note}</div>'
            )
        diff = list(
            difflib.unified_diff(
                self.compact(p.before).splitlines(),
                self.compact(p.after).splitlines(),
                fromfile=f"before {p.name}",
                tofile=f"after {p.name}",
                lineterm="",
            )
        )
        added = sum(1 for ln in diff if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(
            1 for ln in diff if ln.startswith("-") and not ln.startswith("---")
        )
        full = self.full_ir(f"the IR after {p.name}", p.after)
        if not diff:
            note += '<p class="muted">Changed only inside elided constants.</p>'
        return (
            f'<div class="pass changed" id="{anchor}"><h4>{e(p.name)} '
            f'<span class="badge changed"><span class="plus">+{added}</span> '
            f'<span class="minus">\u2212{removed}</span></span> '
            f'<span class="ms">{_ms(p.seconds)}</span></h4>{note}'
            f"{_diff(diff, self.diff_lines, p)}{full}</div>"
        )

    def text_stage(self, stage: Stage) -> str:
        made = f"Made by {e(_plain(stage.made_by))}."
        if stage.name != "llvm":
            return (
                f"<p>{made} Print it with <code>qidao compile MODEL --emit "
                f"{e(stage.name)}</code>.</p>"
            )
        text = self.x.compiled.ir(stage.name)
        cut = ""
        if len(text) > TEXT_STAGE_CHARS:
            cut = (
                f'<p class="muted">The first {TEXT_STAGE_CHARS:,} of '
                f"{len(text):,} characters.</p>"
            )
            text = text[:TEXT_STAGE_CHARS]
        return f"<p>{made}</p>{cut}{_ir(compact(text))}"


def _diff(lines: list[str], most: int, p: PassIR) -> str:
    shown = lines[:most]
    out = []
    for line in shown:
        kind = (
            "file"
            if line.startswith(("+++", "---"))
            else "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "ctx"
        )
        out.append(f'<span class="{kind}">{e(line)}</span>')
    cut = ""
    if len(lines) > most:
        cut = (
            f'<p class="muted">{len(lines) - most:,} more lines: '
            f"<code>qidao compile MODEL --print-ir-after={e(p.name)} "
            "--print-ir-diff</code></p>"
        )
    # each line a block of its own: a newline between them would be a blank line
    return f'<pre class="diff">{"".join(out)}</pre>{cut}'


def _compile_time(x: Explanation) -> str:
    seconds: dict[str, float] = dict(x.stats.get("compile_seconds", {}))
    total = sum(seconds.values()) or 1.0
    own: dict[str, float] = {}
    for p in x.log.passes:
        own[p.stage] = own.get(p.stage, 0.0) + p.seconds
    rows = []
    for stage, s in seconds.items():
        passes = f"{_ms(own[stage])}" if stage in own else ""
        rows.append(
            f'<tr data-stage="{e(stage)}"><td>{e(stage)}</td>'
            f'<td class="num" data-value="{s!r}">{_ms(s)}</td>'
            f'<td class="bar"><span style="width:{100 * s / total:.1f}%"></span></td>'
            f'<td class="num">{passes}</td></tr>'
        )
    rows.append(
        f'<tr class="total"><td>total</td><td class="num">{_ms(sum(seconds.values()))}'
        "</td><td></td><td></td></tr>"
    )
    return (
        '<section id="compile-time"><h2>Compile time</h2>'
        '<p>Each stage\'s wall time (<code>compiled.stats["compile_seconds"]</code>); '
        "the last column, its passes' own time. A stage also verifies its IR and "
        "keeps a copy of it, and here it printed the IR after every pass for this "
        "page: a plain <code>qidao compile</code> is faster. "
        "<code>import</code> reads the model, <code>emit-llvm</code> writes LLVM "
        "IR text and <code>jit</code> is LLVM's -O3 and machine code.</p>"
        '<table class="times"><thead><tr><th>stage</th><th>time</th><th></th>'
        "<th>its passes</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


def _footer(x: Explanation) -> str:
    name = e(x.model)
    return (
        "<footer><p>The same facts from the command line: "
        f"<code>qidao explain {name}</code> (text), "
        f"<code>qidao compile {name} --stats</code>, "
        f"<code>qidao profile {name}</code>, "
        f"<code>qidao compile {name} --print-ir-after-change --print-ir-diff</code>."
        '</p><p><a href="#top">back to the top</a></p></footer>'
    )


# --- formatting -----------------------------------------------------------------


def compact(text: str) -> str:
    """``text`` with long ``dense<...>`` literals (weights) and long lines cut."""

    def elide(m: re.Match[str]) -> str:
        body, keep = m.group(1), 48
        return f"dense<{body[:keep]}\u2026 ({len(body) - keep:,} characters elided)>"

    text = _DENSE.sub(elide, text)
    if len(max(text.splitlines() or [""], key=len)) <= LONG_LINE:
        return text
    return "\n".join(
        line
        if len(line) <= LONG_LINE
        else f"{line[:LONG_LINE]}\u2026 ({len(line) - LONG_LINE:,} characters cut)"
        for line in text.splitlines()
    )


def _ir(text: str) -> str:
    return f'<pre class="ir">{e(text.rstrip())}</pre>'


def _ops(label: str) -> str:
    """``tg.matmul+tg.add``, breakable after each ``+``."""
    return "+<wbr>".join(e(op) for op in label.split("+"))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _plain(text: str) -> str:
    """A summary without Markdown's backticks."""
    return text.replace("`", "")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


CSS = """
:root { --fg: #1d1f23; --muted: #6a6f78; --line: #e3e5e8; --bg: #ffffff;
  --soft: #f6f7f9; --accent: #3b6fb6; }
* { box-sizing: border-box; }
html { scroll-behavior: auto; }
body { margin: 0; color: var(--fg); background: var(--bg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12.5px; }
#toc { position: fixed; top: 0; left: 0; bottom: 0; width: 210px; overflow-y: auto;
  padding: 18px 14px; background: var(--soft); border-right: 1px solid var(--line); }
#toc .brand { font-weight: 700; margin-bottom: 10px; }
#toc ol { margin: 0; padding-left: 18px; }
#toc ol ol { padding-left: 14px; font-size: 13.5px; }
#toc a { color: var(--accent); text-decoration: none; }
#toc a:hover { text-decoration: underline; }
#toc .buttons { margin-top: 14px; display: flex; flex-direction: column; gap: 6px; }
#toc button { font: inherit; font-size: 13px; padding: 3px 8px; cursor: pointer;
  border: 1px solid var(--line); background: #fff; border-radius: 5px; }
main { margin-left: 210px; padding: 8px 32px 48px; max-width: 1500px; }
header h1 { margin: 14px 0 2px; font-size: 26px; }
.meta { color: var(--muted); margin: 0 0 8px; }
section { padding-top: 8px; }
h2 { font-size: 20px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.cards { display: grid; gap: 10px;
  grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px;
  background: var(--soft); }
.card .value { font-size: 20px; font-weight: 600; }
.card .label { color: var(--muted); font-size: 13px; }
.graph-wrap { overflow: auto; max-height: 85vh; border: 1px solid var(--line);
  border-radius: 8px; background: #fff; }
svg.graph .edge:hover { stroke: #222; stroke-width: 2.4; }
svg.graph .node:hover rect { stroke-width: 3; }
.legend { list-style: none; padding: 0; columns: 2 360px; font-size: 13.5px; }
.legend li { margin: 2px 0; break-inside: avoid; }
.swatch { display: inline-block; width: 14px; height: 14px; border-radius: 3px;
  vertical-align: -2px; margin-right: 6px; border: 1px solid #999; }
.swatch.pill { border-radius: 7px; background: #f4f4f4; border-color: #555; }
.swatch.view { background: #fff; border: 1.5px dashed #888; }
.swatch.constant { background: #eee; border-color: #aaa; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--soft); position: sticky; top: 0; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.ops { min-width: 140px; }
tr.total td { font-weight: 600; }
tr:target td { background: #fff6d5; }
.muted { color: var(--muted); }
.warn { color: #9a3b00; }
details.stage { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0;
  background: #fff; }
details.stage > summary { cursor: pointer; padding: 8px 12px; background: var(--soft);
  border-radius: 8px; }
details.stage[open] > summary { border-bottom: 1px solid var(--line);
  border-radius: 8px 8px 0 0; }
.stage-name { font-weight: 700; font-family: ui-monospace, monospace; }
.stage-summary { color: var(--muted); }
.badge { display: inline-block; font-size: 12px; padding: 0 7px; border-radius: 9px;
  background: #e9ecf1; color: #444; margin-left: 4px; }
.badge .plus { color: #1a7f37; } .badge .minus { color: #c4262e; }
.stage-body { padding: 4px 14px 12px; }
.pass h4 { margin: 12px 0 4px; font-family: ui-monospace, monospace; font-size: 14px; }
.pass.unchanged h4, .pass.skipped h4 { color: var(--muted); font-weight: 500; }
.pass.skipped p { margin: 0 0 0 14px; color: var(--muted); font-size: 13px; }
.ms { color: var(--muted); font-size: 12px; font-weight: 400; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 10px; overflow: auto; max-height: 70vh; margin: 4px 0; }
pre.diff span { display: block; white-space: pre; }
pre.diff .add { background: #e6ffec; color: #116329; }
pre.diff .del { background: #ffebe9; color: #82071e; }
pre.diff .hunk { color: #0550ae; background: #ddf4ff; }
pre.diff .file { color: var(--muted); font-weight: 600; }
details.full-ir > summary { cursor: pointer; color: var(--accent); font-size: 13.5px; }
table.times td.bar { width: 320px; }
table.times td.bar span { display: block; height: 12px; background: var(--accent);
  border-radius: 3px; min-width: 1px; }
footer { margin-top: 28px; color: var(--muted); font-size: 13.5px; }
@media (max-width: 900px) { #toc { position: static; width: auto; }
  main { margin-left: 0; padding: 8px 14px; } }
"""

SCRIPT = """
(function () {
  "use strict";
  function openTo(id) {
    var target = document.getElementById(id);
    if (!target) { return; }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
    }
    target.scrollIntoView();
  }
  function fromHash() {
    if (location.hash.length > 1) { openTo(decodeURIComponent(location.hash.slice(1))); }
  }
  function setStages(open) {
    var stages = document.querySelectorAll("details.stage");
    for (var i = 0; i < stages.length; i++) { stages[i].open = open; }
  }
  window.addEventListener("hashchange", fromHash);
  document.getElementById("open-all").addEventListener("click", function () {
    setStages(true);
  });
  document.getElementById("close-all").addEventListener("click", function () {
    setStages(false);
  });
  fromHash();
})();
"""
