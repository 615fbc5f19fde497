"""The model ``qidao explain``'s tests explain, once per session: small, and
hostile to a page that forgets to escape (its input and output names hold ``<``,
``&``, quotes and markup), with a fused kernel, a view, an elementwise kernel and a
``copy`` kernel (an input returned as an output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.compiler.report import Explanation, explain, render_html
from qidao.frontend.builder import Graph

EVIL_OUTPUT = '</pre><b class="evil">&amp;</b>'
"""An output name that is markup: the page must show it as text."""


def hostile() -> Graph:
    g = Graph("main")
    x = g.input('x<&"', (4, 8))
    w = g.input("w", (8, 4))
    y = g.relu(g.matmul(x, w) + 1.0)  # one kernel: matmul, add, relu
    s = g.exp(g.transpose(y))  # a view, then an exp kernel
    g.output(y, s, x, names=[EVIL_OUTPUT, "s", "x_again"])  # x: a copy kernel
    return g


@pytest.fixture(scope="session")
def explained() -> Explanation:
    return explain(hostile(), name="hostile<&>", runs=3)


@pytest.fixture(scope="session")
def page(explained: Explanation) -> str:
    return render_html(explained)


@pytest.fixture(scope="session")
def page_file(page: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explain") / "hostile.html"
    path.write_text(page, encoding="utf-8")
    return path
