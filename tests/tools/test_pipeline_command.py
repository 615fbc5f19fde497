"""``qidao pipeline``: prints each target's stage table from the pipeline data, and
rewrites the tables of a page between their markers, refusing a page without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.compiler.pipeline import TARGETS, stage_table
from qidao.tools.cli import main
from qidao.tools.pipeline_command import (
    END_MARKER,
    begin_marker,
    rewrite_tables,
    table_block,
)

STALE = "| stage | the IR | made by |\n|---|---|---|\n| `tg` | an old row | `fuse` |\n"


def _page(cpu: str = STALE, cuda: str = STALE) -> str:
    return (
        "# The pipeline\n\nSome text the command keeps.\n\n"
        f"{begin_marker('cpu')}\n{cpu}{END_MARKER}\n\nText between.\n\n"
        f"{begin_marker('cuda')}\n{cuda}{END_MARKER}\n\nThe end.\n"
    )


def test_prints_every_targets_table_between_its_markers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["pipeline"]) == 0
    out = capsys.readouterr().out
    for target in TARGETS:
        assert table_block(target) in out
        assert stage_table(target) in out


def test_target_prints_that_targets_table_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["pipeline", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert out == table_block("cuda")
    assert begin_marker("cpu") not in out


def test_write_updates_a_stale_page_and_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "pipeline.md"
    page.write_text(_page(), encoding="utf-8")
    assert main(["pipeline", "--write", str(page)]) == 0
    assert "updated (cpu, cuda)" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert "an old row" not in text
    assert text == (
        "# The pipeline\n\nSome text the command keeps.\n\n"
        f"{table_block('cpu')}\nText between.\n\n{table_block('cuda')}\nThe end.\n"
    )
    assert main(["pipeline", "--write", str(page)]) == 0  # a second run: no change
    assert "already up to date" in capsys.readouterr().out
    assert page.read_text(encoding="utf-8") == text


def test_write_with_a_target_leaves_the_other_tables(tmp_path: Path) -> None:
    page = tmp_path / "pipeline.md"
    page.write_text(_page(), encoding="utf-8")
    assert main(["pipeline", "--target", "cuda", "--write", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert table_block("cuda") in text
    assert f"{begin_marker('cpu')}\n{STALE}{END_MARKER}\n" in text


def test_write_refuses_a_file_without_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "notes.md"
    page.write_text("# Notes\n\nNo table here.\n", encoding="utf-8")
    assert main(["pipeline", "--write", str(page)]) == 2
    err = capsys.readouterr().err
    assert f"qidao pipeline: error: {page}: no '<!-- qidao pipeline cpu -->'" in err
    assert "'<!-- end -->' markers" in err
    assert page.read_text(encoding="utf-8") == "# Notes\n\nNo table here.\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f"{begin_marker('cpu')}\n| a table |\n",
            "line 1: '<!-- qidao pipeline cpu -->' has no",
        ),
        (f"x\n{begin_marker('tpu')}\n{END_MARKER}\n", "line 2: unknown target 'tpu'"),
    ],
)
def test_a_broken_block_is_refused_naming_its_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        rewrite_tables(text)


def test_write_of_a_missing_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pipeline", "--write", str(tmp_path / "nope.md")]) == 2
    assert "qidao pipeline: error:" in capsys.readouterr().err
