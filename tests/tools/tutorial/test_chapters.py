"""The tutorial (``docs/tutorial/``) runs as printed, chapter by chapter.

Every block of a chapter is checked (``pages.py`` says how a block is marked): the
code it has the student write is the repository's, and replayed from the state
before that code, in a copy of the repository, its commands print what the chapter
shows. A chapter that builds on the one before it is replayed after it, in the
same copy (``STORIES``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tools.tutorial.pages import (
    TUTORIAL,
    Block,
    Workspace,
    blocks,
    chapters,
    replay,
    repository_problem,
    unchecked,
)

STORIES: list[list[str]] = [
    ["01-the-tower.md"],
    ["02-a-graph-pass.md", "03-into-the-pipeline.md"],
    ["04-a-schedule-primitive.md"],
    ["05-a-kernel-lowering.md"],
    ["06-a-vjp-rule.md"],
]
"""Chapters replayed together, in one copy: the third hooks in the second's pass."""


def test_the_stories_are_the_chapters_in_order() -> None:
    assert [c for story in STORIES for c in story] == chapters()


def test_the_index_lists_every_chapter_in_order() -> None:
    index = (TUTORIAL / "index.md").read_text(encoding="utf-8")
    linked = re.findall(r"\]\((\d\d-[\w-]+\.md)\)", index)
    assert list(dict.fromkeys(linked)) == chapters()


@pytest.mark.parametrize("chapter", chapters())
def test_each_chapter_ends_with_what_you_have_and_what_comes_next(chapter: str) -> None:
    text = (TUTORIAL / chapter).read_text(encoding="utf-8")
    last = text.rsplit("\n## ", 1)[-1]
    assert last.startswith("What you have now\n"), (
        f"docs/tutorial/{chapter}: the last section is not 'What you have now'"
    )
    names = chapters()
    following = names[names.index(chapter) + 1 :]
    link = f"({following[0]})" if following else "(index.md)"
    assert link in last, f"docs/tutorial/{chapter}: the last section has no {link}"


ALL_BLOCKS = [block for chapter in chapters() for block in blocks(chapter)]


def _id(block: Block) -> str:
    return f"{block.chapter}:{block.line}"


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=_id)
def test_every_block_is_run_or_checked(block: Block) -> None:
    problem = unchecked(block)
    assert problem is None, f"{block.where}: {problem}"


SHOWN = [b for b in ALL_BLOCKS if b.path]


@pytest.mark.parametrize("block", SHOWN, ids=_id)
def test_the_code_shown_is_the_repositorys(block: Block) -> None:
    problem = repository_problem(block)
    assert problem is None, problem


@pytest.mark.slow  # 10 to 50 s a story: each copies the repository, runs qidao
@pytest.mark.parametrize("story", STORIES, ids=lambda story: "+".join(story))
def test_the_chapters_run_as_printed(story: list[str], tmp_path: Path) -> None:
    replay(story, Workspace(tmp_path))
