"""The pipeline data (``qidao.compiler.pipeline``) is the one list of stages: the
README's tables are generated from it, every step names a registered pass, and the
stage loop honours modes, switches and pass options."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.compiler.context import make_pass
from qidao.compiler.pipeline import (
    PIPELINES,
    TARGETS,
    check_stage,
    stage_table,
    stages,
)

README = Path(__file__).parents[2] / "README.md"


@pytest.mark.parametrize("target", TARGETS)
def test_readme_stage_table_is_the_pipeline_data(target: str) -> None:
    table = stage_table(target)
    assert table in README.read_text(), (
        f"README.md's stage table for target '{target}' differs from "
        f"qidao.compiler.pipeline.PIPELINES; paste this:\n\n{table}"
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
