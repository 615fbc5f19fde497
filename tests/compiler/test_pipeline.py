"""The pipeline data (``qidao.compiler.pipeline``) is the one list of stages: the
tables of ``docs/pipeline.md`` are generated from it (``qidao pipeline``), every step
names a registered pass, and the stage loop honours modes, switches and pass
options."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from qidao.compiler.context import make_pass
from qidao.compiler.pipeline import (
    PIPELINES,
    TARGETS,
    InternalCompilerError,
    Stage,
    Step,
    check_stage,
    run_stages,
    stage_table,
    stages,
)
from qidao.dialects import tg
from qidao.dialects.tg.linalg import NHWC
from qidao.frontend.builder import Graph
from qidao.tools.pipeline_command import rewrite_tables, table_block

PIPELINE_PAGE = Path(__file__).parents[2] / "docs" / "pipeline.md"


@pytest.mark.parametrize("target", TARGETS)
def test_the_pages_stage_table_is_the_pipeline_data(target: str) -> None:
    assert stage_table(target) in table_block(target)
    assert table_block(target) in PIPELINE_PAGE.read_text(encoding="utf-8"), (
        f"docs/pipeline.md's stage table for target '{target}' differs from "
        "qidao.compiler.pipeline.PIPELINES; regenerate it with\n\n"
        "    qidao pipeline --write docs/pipeline.md\n"
    )


def test_the_page_is_what_qidao_pipeline_writes() -> None:
    text = PIPELINE_PAGE.read_text(encoding="utf-8")
    assert rewrite_tables(text) == text, (
        "docs/pipeline.md's tables differ from the pipeline data; regenerate them "
        "with\n\n    qidao pipeline --write docs/pipeline.md\n"
    )


@pytest.mark.parametrize("target", TARGETS)
def test_every_step_is_a_registered_pass(target: str) -> None:
    for stage in PIPELINES[target]:
        for step in stage.steps:
            make_pass(step.name)  # raises, naming the pass, if unknown
        assert not (stage.text and stage.steps), f"text stage {stage.name} has passes"


def test_text_stages_come_last() -> None:
    for target, pipeline in PIPELINES.items():
        kinds = [stage.text for stage in pipeline]
        assert kinds == sorted(kinds), f"{target}: an IR stage after a text stage"


def test_stage_ranges_and_unknown_stages() -> None:
    assert [s.name for s in stages("cpu", "scf", "llvm-dialect")] == [
        "scf",
        "cf",
        "llvm-dialect",
    ]
    with pytest.raises(ValueError, match="unknown stage 'llvm' for target 'cuda'"):
        check_stage("llvm", "cuda")
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        stages("tpu")


# --- a failing pass is reported as qidao's bug, naming the pass and the op ----------


class _BuildsABadConv:
    """A pass with a bug: it builds an NHWC conv on an NCHW input, whose constructor
    raises ``VerifyException`` (as ``layout`` once did, issue 11)."""

    def apply(self, ctx: Context, module: ModuleOp) -> None:
        fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
        x, w = fn.body.block.args
        tg.Conv2dOp(x, w, layout=NHWC)


class _RefusesOnPurpose:
    """A pass that refuses the program with an error meant for the user."""

    def apply(self, ctx: Context, module: ModuleOp) -> None:
        raise ValueError("this program is not supported")


def _run_one_pass(apply: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "qidao.compiler.pipeline.make_pass", lambda name, **options: apply
    )
    g = Graph("main")
    x, w = g.input("x", (1, 8, 4, 4)), g.input("w", (8, 8, 1, 1))
    g.output(g.conv2d(x, w))
    run_stages(g.module(), [Stage("tg", (Step("broken"),), "one pass")])


def test_internal_error_of_a_pass_names_the_pass_and_the_op(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InternalCompilerError) as info:
        _run_one_pass(_BuildsABadConv(), monkeypatch)
    err = info.value
    assert str(err).startswith("internal error: pass 'broken' failed on tg.conv2d: ")
    assert "tg.conv2d (NHWC): weight [8, 8, 1, 1]" in str(err)  # the verifier's words
    assert (err.where, err.op) == ("pass 'broken'", "tg.conv2d")
    assert isinstance(err.__cause__, VerifyException)
    assert isinstance(err, RuntimeError)


def test_error_a_pass_raises_on_purpose_is_not_wrapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match=r"^this program is not supported$"):
        _run_one_pass(_RefusesOnPurpose(), monkeypatch)
