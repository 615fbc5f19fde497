"""What ``qidao.compile`` returns: a :class:`CompiledModel`, whatever the target.

Every target's compiled object derives from :class:`CompiledProgram`, which keeps
the IR of every stage the pipeline ran (``ir``, ``module``) and the stats; the
target adds the text stages it makes and how to call the program. A program loaded
from the compile cache (``qidao.compiler.cache``) has no IR: the first ``ir`` or
``module`` call compiles the model again, without the cache, and reads that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.checks import Checks
from qidao.compiler.pipeline import check_stage, stage_names
from qidao.runtime.executor import TensorSpec


@runtime_checkable
class CompiledModel(Protocol):
    """What every ``qidao.compile`` result offers, whatever the model and target:
    a program (``Compiled`` for the CPU, ``CompiledCuda``), or one wrapper around
    programs that changes how it is called: ``Specialized`` (compiled again per
    integer input value or shape), ``SymbolicProgram`` (one program for every size
    of its symbolic dimensions), ``WithParameters`` (``grad=``: the lifted
    initializers held), ``TrainingStep`` (``optimizer=``: the weights held and
    updated) or ``TorchCompiled`` (torch tensors in and out). Code that takes any
    result relies on this protocol only (``tests/compiler/test_compiled_model.py``
    checks every case)."""

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
        self,
        stage_ir: dict[str, ModuleOp] | None,
        stats: dict[str, Any],
        mode: str,
        recompile: Callable[[], CompiledProgram] | None = None,
        more_ir: Callable[[], dict[str, ModuleOp]] | None = None,
        checks: Checks | None = None,
    ) -> None:
        """``stage_ir``: the IR of the stages kept as they ran; ``more_ir`` makes
        the others (the stages below the schedule, made again from its IR) when
        one is asked for. ``stage_ir`` None (a program loaded from the cache):
        ``recompile`` makes the same program with its IR, when the IR is asked
        for. ``checks``: the run-time checks (``checks=True``) whose results the
        program returns after the model's outputs."""
        assert stage_ir is not None or recompile is not None
        self._stages = stage_ir
        self._recompile = recompile
        self._more_ir = more_ir
        self._rebuilt_program: CompiledProgram | None = None
        self.stats = stats
        self.mode = mode
        self.checks = checks or Checks()

    def release_ir(self, recompile: Callable[[], CompiledProgram]) -> None:
        """Let go of the IR kept for ``ir()``: a program held for long (a
        generator's two) then keeps its code alone, and ``ir`` compiles
        ``recompile()`` again when asked, as it does for a cache hit."""
        self._stages = None
        self._more_ir = None
        self._recompile = recompile
        self._rebuilt_program = None

    def set_more_ir(self, more_ir: Callable[[], dict[str, ModuleOp]]) -> None:
        """Make the stages that were not kept with ``more_ir`` when asked for."""
        self._more_ir = more_ir

    def _stage(self, name: str) -> ModuleOp | None:
        """The IR after stage ``name``; None for a text stage."""
        if self._stages is None:
            self._stages = self._rebuilt()._all_stages()
        if name not in self._stages and self._more_ir is not None:
            self._stages = {**self._stages, **self._more_ir()}
            self._more_ir = None
        return self._stages.get(name)

    def _all_stages(self) -> dict[str, ModuleOp]:
        for name in stage_names(self.target):
            self._stage(name)
        assert self._stages is not None
        return self._stages

    def _rebuilt(self) -> CompiledProgram:
        """The same program compiled again with its IR (a cache hit has none)."""
        if self._rebuilt_program is None:
            assert self._recompile is not None
            self._rebuilt_program = self._recompile()
        return self._rebuilt_program

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
        module = self._stage(stage)
        if module is not None:
            return str(module)
        return self._text(stage)

    def _text(self, stage: str) -> str:
        """The text of a stage the target makes (``llvm``, ``cuda``, ...)."""
        raise NotImplementedError

    def module(self, stage: str = "tg") -> ModuleOp:
        """A copy of the IR of one IR stage (``input`` ... the last before text)."""
        check_stage(stage, self.target)
        module = self._stage(stage)
        if module is None:
            raise ValueError(f"stage '{stage}' is text, not IR; use .ir('{stage}')")
        return module.clone()
