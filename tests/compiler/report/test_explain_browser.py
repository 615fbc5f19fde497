"""``qidao explain --html``'s page in a real browser: headless Chromium (Debian's
``chromium`` package) driven by Playwright, which starts it from
``/usr/bin/chromium`` (``QIDAO_CHROMIUM`` names another) with a fresh profile and
no network; Playwright never downloads a browser here.

The page loads without a console error, asks for nothing but itself, draws its
graph, its table of contents scrolls to each section, and its stages open and
close. Skipped, saying why, where Playwright (the ``dev`` extra) or Chromium
(``apt-get install chromium``) is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qidao.compiler.report import Explanation

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])"
)


def _chromium() -> str | None:
    given = os.environ.get("QIDAO_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install chromium; or set "
    "QIDAO_CHROMIUM to its path)",
)

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium with a fresh profile of its own."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


class Opened:
    """The page, and what it said and asked for while it loaded and ran."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page()
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda err: self.problems.append(f"error: {err}"))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def is_open(self, stage: str) -> bool:
        return bool(self.page.eval_on_selector(f"#stage-{stage}", "d => d.open"))


@pytest.fixture
def opened(browser: Any, page_file: Path) -> Iterator[Opened]:
    o = Opened(browser, page_file)
    yield o
    o.page.close()


def test_the_page_loads_alone_without_errors(opened: Opened, page_file: Path) -> None:
    assert opened.page.title() == "qidao explain: hostile<&>"
    assert opened.requests == [page_file.as_uri()]
    assert opened.page.locator("h1").inner_text() == "hostile<&>"
    opened.page.click("#open-all")  # every stage drawn: still no error
    assert all(opened.is_open(s) for s in ("input", "tg", "llvm"))
    opened.page.click("#close-all")
    assert not opened.is_open("tg")
    assert opened.problems == []


def test_the_graph_is_drawn(opened: Opened, explained: Explanation) -> None:
    box = opened.page.locator("svg.graph").bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    nodes = opened.page.locator("svg.graph g.node.tg")
    assert nodes.count() == explained.graph.tg_ops
    for i in range(nodes.count()):
        node = nodes.nth(i).bounding_box()
        assert node is not None and node["width"] > 0 and node["height"] > 0
    kernels = opened.page.locator("svg.graph g.kernel rect")
    assert kernels.count() == explained.stats["kernels"]
    evil = opened.page.locator("svg.graph g.node.output text").first.text_content()
    assert evil == '</pre><b class="evil">&amp;</b>'  # shown as text


def test_each_contents_link_scrolls_to_its_section(opened: Opened) -> None:
    page = opened.page
    links = page.locator("#toc a")
    assert links.count() >= 5 + 7  # the sections and the stages
    for i in range(links.count()):
        href = links.nth(i).get_attribute("href")
        assert href is not None and href.startswith("#")
        links.nth(i).click()
        # The hash changes at the click; the page's hashchange handler, which opens
        # a stage, runs as a task after it: wait for both (a timeout fails the test).
        page.wait_for_function(
            "h => location.hash === h && (!h.startsWith('#stage-')"
            " || document.getElementById(h.slice(1)).open)",
            arg=href,
        )
        top, bottom, height = page.evaluate(
            "id => { const r = document.getElementById(id).getBoundingClientRect();"
            " return [r.top, r.bottom, innerHeight]; }",
            href[1:],
        )
        assert -2 <= top < height and bottom > 0, (href, top, bottom)
    assert opened.problems == []


def test_a_stage_opens_and_closes(opened: Opened) -> None:
    page = opened.page
    body = page.locator("#stage-tg > .stage-body")
    fuse_diff = page.locator("#pass-tg-fuse pre.diff")
    assert not opened.is_open("tg") and body.is_hidden() and fuse_diff.is_hidden()
    page.click("#stage-tg > summary")
    assert opened.is_open("tg") and body.is_visible() and fuse_diff.is_visible()
    full = page.locator("#pass-tg-fuse details.full-ir pre")
    assert full.is_hidden()
    page.click("#pass-tg-fuse details.full-ir > summary")
    assert full.is_visible() and "tg.fused" in full.inner_text()
    page.click("#stage-tg > summary")
    assert not opened.is_open("tg") and body.is_hidden()
    assert opened.problems == []
