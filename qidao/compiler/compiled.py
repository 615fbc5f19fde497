"""What ``qidao.compile`` returns: a :class:`CompiledModel`, whatever the target.

Every target's compiled object derives from :class:`CompiledProgram`, which keeps
the IR of every stage the pipeline ran (``ir``, ``module``) and the stats; the
target adds the text stages it makes and how to call the program.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.pipeline import check_stage
from qidao.runtime.executor import TensorSpec


class CompiledModel(Protocol):
    """What every ``qidao.compile`` result offers, whatever the model and target:
    ``Compiled`` (CPU), ``CompiledCuda``, ``Specialized`` (compiled again per
    integer input value or shape) and ``TorchCompiled`` (torch tensors in and out)."""

    @property
    def stats(self) -> dict[str, Any]:
        """Kernel and buffer counts, compile seconds, what the schedules did."""
        ...

    def ir(self, stage: str = "tg") -> str:
        """The text of one stage of the tower (``qidao.compiler.pipeline``)."""
        ...

    def __call__(self, *args: Any) -> Any:
        """Run the model on its inputs, in graph-input order."""
        ...


class CompiledProgram:
    """The part of a compiled model every target shares: the IR of each stage the
    pipeline ran, the stats, the mode; ``ir`` of a text stage asks the target."""

    target = ""
    """The target's name, a key of ``qidao.compiler.pipeline.PIPELINES``."""

    def __init__(
        self, stage_ir: dict[str, ModuleOp], stats: dict[str, Any], mode: str
    ) -> None:
        self._stage_ir = stage_ir
        self.stats = stats
        self.mode = mode

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        raise NotImplementedError

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        raise NotImplementedError

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        raise NotImplementedError

    def ir(self, stage: str = "tg") -> str:
        """The text of one stage of this target (``qidao.compiler.pipeline``)."""
        check_stage(stage, self.target)
        if stage in self._stage_ir:
            return str(self._stage_ir[stage])
        return self._text(stage)

    def _text(self, stage: str) -> str:
        """The text of a stage the target makes (``llvm``, ``cuda``, ...)."""
        raise NotImplementedError

    def module(self, stage: str = "tg") -> ModuleOp:
        """A copy of the IR of one IR stage (``input`` ... the last before text)."""
        check_stage(stage, self.target)
        if stage not in self._stage_ir:
            raise ValueError(f"stage '{stage}' is text, not IR; use .ir('{stage}')")
        return self._stage_ir[stage].clone()
