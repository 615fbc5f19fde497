"""How the tutorial's blocks are read and checked (``pages.py``): the wildcards of
shown output, diffs applied and taken back with other lines between theirs, and the
case a student once met: a pass added to the pipeline right where chapter 3 shows
it must not break the tutorial's test."""

from __future__ import annotations

import pytest

from tests.tools.tutorial.pages import (
    ROOT,
    Block,
    ChapterError,
    blocks,
    commands,
    matches,
    patch,
    repository_problem,
)


def test_the_wildcards_match_only_what_they_should() -> None:
    assert matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert matches("x ... z\n", "x yyy z\n")
    assert matches("a\n", "a  \n\n\n")  # trailing spaces and blank lines aside
    assert matches("", "")
    assert not matches("a\nd\n", "a\nb\nd\n")
    assert not matches("x ... z\n", "x y w\n")
    assert not matches("", "something\n")


def test_a_console_block_gives_commands_outputs_and_exit_statuses() -> None:
    block = Block(
        "t.md", 1, "console", "$ a\none\n$ b --bad\nerror\n[exit 2]\n$ c\n", ""
    )
    assert commands(block) == [
        ("a", "one\n", 0),
        ("b --bad", "error\n", 2),
        ("c", "", 0),
    ]


def test_annotations_are_read_from_the_line_above_the_fence() -> None:
    text = (
        "Intro\n\n<!-- file a/b.py -->\n````python\nx = 1\n```mlir\nm\n```\n````\n\n"
        "<!-- edit c.py -->\n```diff\n a\n+b\n```\n\n```console\n$ ls\n```\n"
    )
    found = blocks("t.md", text)
    assert [(b.action, b.path, b.lang, b.line) for b in found] == [
        ("file", "a/b.py", "python", 4),
        ("edit", "c.py", "diff", 12),
        ("", "", "console", 17),
    ]
    assert found[0].body == "x = 1\n```mlir\nm\n```\n"  # a fence inside a longer one


def test_an_unknown_annotation_is_refused() -> None:
    with pytest.raises(ChapterError, match="unknown annotation"):
        blocks("t.md", "<!-- flie a.py -->\n```python\nx\n```\n")


DIFF = " a\n+b\n c\n-d\n+e\n"


def test_a_diff_applies_and_is_taken_back() -> None:
    before = "a\nc\nd\nf\n"
    after = patch(before, DIFF)
    assert after == "a\nb\nc\ne\nf\n"
    assert patch(after, DIFF, forward=False) == before


def test_a_diff_applies_with_other_lines_between_its_own() -> None:
    assert patch("a\nx\nc\nd\n", DIFF) == "a\nb\nx\nc\ne\n"
    assert patch("a\nb\nx\nc\ne\n", DIFF, forward=False) == "a\nx\nc\nd\n"


def test_a_diff_whose_lines_are_missing_names_the_line() -> None:
    with pytest.raises(ChapterError, match="no line 'c'"):
        patch("a\nd\n", DIFF)


def test_code_that_differs_from_the_repository_says_what_to_do() -> None:
    wrong = Block(
        "02-a-graph-pass.md", 9, "python", "x = 1\n", "file", "pyproject.toml"
    )
    problem = repository_problem(wrong)
    assert problem is not None
    assert "docs/tutorial/02-a-graph-pass.md line 9 shows another pyproject.toml" in (
        problem
    )
    assert "update the block at docs/tutorial/02-a-graph-pass.md line 9" in problem


def test_a_pass_added_where_chapter_3_shows_keeps_the_tutorial_true() -> None:
    """The student's report: a `Step` added next to `collapse-unary`, where the
    chapter shows the place, broke the tutorial's test. The chapter's diff must
    still hold, and still apply in the tutorial's replay."""
    (edit,) = [
        b
        for b in blocks("03-into-the-pipeline.md")
        if b.path == "qidao/compiler/pipeline.py" and b.action == "edit"
    ]
    original = (ROOT / "qidao" / "compiler" / "pipeline.py").read_text()
    line = '            _graph("collapse-unary"),\n'
    assert original.count(line) == 1
    student = original.replace(line, line + '            _graph("collapse-cast"),\n')

    assert repository_problem(edit, student) is None
    without = patch(student, edit.body, forward=False)
    assert line not in without and "collapse-cast" in without
    assert patch(without, edit.body) == student
