"""``qidao explain``: one compiled model explained, as text or one HTML page.

    x = explain(model, name="book")      # compile, keep every pass's IR, time it
    print(summary_text(x))               # the kernel table and stage times
    Path("book.html").write_text(render_html(x))   # the page

``collect.py`` gathers the facts (one compile with an ``IRLog`` and
``profile=True``, a short timing), ``graph.py`` draws the tg graph with its kernels
as SVG (networkx's layered layout), ``page.py`` writes the self-contained page and
``text.py`` the terminal summary. The command line is
``qidao/tools/explain_command.py``.
"""

from __future__ import annotations

from qidao.compiler.report.collect import Explanation, KernelRow, explain
from qidao.compiler.report.graph import OpGraph, graph_svg, op_graph
from qidao.compiler.report.page import render_html
from qidao.compiler.report.text import summary_text

__all__ = [
    "Explanation",
    "KernelRow",
    "OpGraph",
    "explain",
    "graph_svg",
    "op_graph",
    "render_html",
    "summary_text",
]
