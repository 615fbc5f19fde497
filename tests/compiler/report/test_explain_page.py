"""``qidao.compiler.report``: the facts of ``qidao explain`` and its page.

The page is checked as text here (its graph, its escaping, its passes, its numbers
against ``compiled.stats``); ``test_explain_browser.py`` opens it in Chromium.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from itertools import pairwise

import numpy as np
import pytest
from xdsl.dialects import func

import qidao
from qidao.compiler.pipeline import active_steps
from qidao.compiler.print_ir import IRLog, PrintIR
from qidao.compiler.report import (
    Explanation,
    explain,
    graph_svg,
    render_html,
    summary_text,
)
from qidao.compiler.report.page import compact
from qidao.dialects import tg
from qidao.frontend.builder import Graph
from tests.compiler.report.conftest import EVIL_OUTPUT, hostile


class _Tags(HTMLParser):
    """Every start tag with its attributes, and every id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}  # type: ignore[misc]

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [
            a
            for t, a in self.tags
            if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())
        ]


def tags(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    return parser


def tg_ops(compiled: qidao.Compiled) -> list[str]:
    """Every tg op of the tg stage, those inside a tg.fused too."""
    main = next(
        op
        for op in compiled.module("tg").ops
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    return [
        op.name
        for op in main.walk()
        if op.name.startswith("tg.") and not isinstance(op, tg.FusedOp | tg.YieldOp)
    ]


# --- the log the page is drawn from ---------------------------------------------


def test_an_ir_log_prints_nothing_and_keeps_every_pass(
    capfd: pytest.CaptureFixture[str],
) -> None:
    log = IRLog()
    assert PrintIR(log=log) == PrintIR()  # the log is not part of what to print
    compiled = qidao.compile(hostile(), debug=PrintIR(log=log))
    assert capfd.readouterr().err == ""
    assert log.input.startswith("builtin.module")
    ran = [(p.stage, p.name) for p in log.passes]
    settings = {"fuse": True, "update_in_place": True}
    for stage in compiled_stages(compiled):
        for step in active_steps(stage, "graph", settings):
            assert (stage.name, step.name) in ran
    assert ("schedule", "schedule") in ran
    fuse = next(p for p in log.passes if p.name == "fuse")
    assert fuse.changed and "+    %1 = tg.fused" in fuse.diff()
    assert all(p.before == q.after for q, p in pairwise(log.passes))
    assert {"autodiff", "insert-checks"} <= {s.name for s in log.skipped}


def compiled_stages(compiled: qidao.Compiled) -> list:  # type: ignore[type-arg]
    from qidao.compiler.pipeline import stages

    return [s for s in stages(compiled.target) if not s.text]


# --- the graph --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_the_svg_has_a_node_per_tg_op_and_a_box_per_kernel_launch(mode: str) -> None:
    x = explain(hostile(), runs=0, mode=mode)
    svg, note = graph_svg(x.graph)
    assert note == ""
    ops = tg_ops(x.compiled)
    drawn = re.findall(r'<g class="node tg" id="node-n\d+" data-kind="(\w+)"', svg)
    assert len(drawn) == len(ops) == x.graph.tg_ops
    assert drawn.count("view") == ops.count("tg.transpose") == 1
    assert x.graph.matched
    boxes = re.findall(
        r'<g class="kernel" id="kernel-box-\d+" data-kernel="(\w+)"', svg
    )
    assert len(boxes) == x.stats["kernels"]
    assert boxes == [kernel for kernel, _ in x.launches]
    assert boxes[-1].endswith("_copy")  # the input returned as an output
    assert svg.count('class="node input"') == 2
    assert svg.count('class="node output"') == 3
    fused = x.graph.groups[0]
    assert [x.graph.node(n).label for n in fused.nodes] == (
        ["matmul", "add", "relu"] if mode == "graph" else ["matmul"]
    )


def test_a_large_graph_hides_constants_then_draws_kernels_as_boxes(
    explained: Explanation,
) -> None:
    svg, note = graph_svg(explained.graph, max_nodes=9)
    assert "constants hidden" in note and 'data-kind="constant"' not in svg
    svg, note = graph_svg(explained.graph, max_nodes=3)
    assert "each kernel drawn as one box" in note
    assert svg.count('class="node tg"') == explained.stats["kernels"] + 1  # + view


# --- the page ---------------------------------------------------------------------


def test_every_text_from_the_model_is_escaped(page: str) -> None:
    assert page.count("<script>") == page.count("</script>") == 1
    assert '<b class="evil">' not in page and "</pre><b" not in page
    assert "&lt;/pre&gt;&lt;b class=&quot;evil&quot;&gt;&amp;amp;&lt;/b&gt;" in page
    assert "hostile&lt;&amp;&gt;" in page and "hostile<&>" not in page
    diff_lines = re.findall(r'<span class="(?:add|del)">(.*?)</span>', page)
    assert diff_lines and all("<" not in line for line in diff_lines)
    assert any("tensor&lt;4x8xf32&gt;" in line for line in diff_lines)
    assert EVIL_OUTPUT not in page


def test_the_page_is_self_contained_and_its_links_resolve(page: str) -> None:
    parsed = tags(page)
    links = [a["href"] for t, a in parsed.tags if t == "a"]
    assert links and all(link and link.startswith("#") for link in links)
    ids = parsed.ids()
    assert {link[1:] for link in links} <= ids
    assert not [a for t, a in parsed.tags if "src" in a or t in ("link", "iframe")]
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"]


def test_each_stage_is_collapsible_and_each_pass_appears(
    page: str, explained: Explanation
) -> None:
    parsed = tags(page)
    stages = [a["id"] for a in parsed.find("details", class_="stage")]
    assert stages == [f"stage-{s.name}" for s in explained.pipeline]
    ids = parsed.ids()
    for p in explained.log.passes:
        assert f"pass-{p.stage}-{p.name}" in ids
        kind = "changed" if p.changed else "unchanged"
        assert parsed.find("div", class_=f"pass {kind}", id=f"pass-{p.stage}-{p.name}")
    for skipped in explained.log.skipped:
        assert f"<h4>{skipped.name} " in page
    fuse = page.split('id="pass-tg-fuse"')[1].split('<div class="pass')[0]
    assert '<pre class="diff">' in fuse and '<span class="add">+' in fuse
    assert "the IR after fuse" in fuse
    assert page.count('<div class="pass unchanged"') == sum(
        not p.changed for p in explained.log.passes
    )


def test_the_numbers_are_the_compiled_models(page: str, explained: Explanation) -> None:
    stats = explained.stats
    parsed = tags(page)
    for key in ("kernels", "buffers", "peak_bytes", "traffic_bytes"):
        (card,) = parsed.find("div", class_="card", **{"data-stat": key})
        assert card["data-value"] == str(stats[key])
    rows = {a["data-kernel"]: a for a in parsed.find("tr") if a.get("data-kernel")}
    assert list(rows) == [k.kernel for k in explained.kernels]
    assert sum(k.launches for k in explained.kernels) == stats["kernels"]
    for k in explained.kernels:
        assert k.default == stats["default_schedule"][k.kernel]
        assert k.seconds is not None and k.seconds > 0
    matmul = explained.kernels[0]
    assert matmul.flops == 2 * 4 * 8 * 4 + 2 * 16  # matmul, then add and relu
    assert matmul.bytes == 4 * (4 * 8 + 8 * 4 + 4 * 4)  # x, w, the output
    for stage, seconds in stats["compile_seconds"].items():
        (row,) = parsed.find("tr", **{"data-stage": stage})
        cell = page.split(f'<tr data-stage="{stage}">')[1].split("</tr>")[0]
        assert f'data-value="{seconds!r}"' in cell, row


def test_a_budget_keeps_the_page_small() -> None:
    g = Graph("main")
    x = g.input("x", (64, 64))
    w = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    g.output(g.relu(x @ w))
    x_ = explain(g, runs=0)
    whole, small = render_html(x_), render_html(x_, ir_budget=0, diff_lines=4)
    assert len(small) < len(whole)
    assert "the IR after fuse" in whole and "the IR after fuse" not in small
    assert "the IR after stage tg" in small  # each stage's IR stays
    assert "more lines: <code>qidao compile MODEL --print-ir-after=" in small
    assert "characters elided)&gt;" in small and "0x0000803F" not in small


def test_compact_elides_weights_and_cuts_long_lines() -> None:
    text = 'a = dense<"0x' + "AB" * 500 + '"> : tensor<1000xi8>\nb\n' + "c" * 3000
    short = compact(text)
    assert "(956 characters elided)>" in short and short.count("AB") < 30
    assert short.splitlines()[1] == "b"
    assert short.endswith("(1,800 characters cut)")
    assert compact("small") == "small"


def test_the_text_summary(explained: Explanation) -> None:
    text = summary_text(explained)
    for k in explained.kernels:
        assert k.kernel in text
    assert "compile time per stage" in text and "tg/fuse" in text


def test_explain_refuses_what_it_sets_itself() -> None:
    with pytest.raises(TypeError, match="explain sets debug itself"):
        explain(hostile(), debug=1)
    with pytest.raises(ValueError, match="runs must be 0"):
        explain(hostile(), runs=-1)
