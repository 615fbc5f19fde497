"""The targets qidao compiles for, built the same way.

A target is its stages in ``qidao.compiler.pipeline.PIPELINES`` (the lowering
below the schedule) and an object of the :class:`Target` protocol,
``TARGET`` in ``targets/<name>/target.py``: its own options (and their check), its default schedules, a check of
the scheduled loops, and ``build``, which makes the text stages (its emitter) and
the compiled object from the last IR stage. ``cpu/``: LLVM IR JIT-compiled for the
host by llvmlite; ``cuda/``: CUDA C built by nvcc and launched with pycuda.

Adding a target is a folder here, its stages in the pipeline data, and its name in
:data:`qidao.compiler.pipeline.TARGETS` (the pipeline's keys).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.cache import Entry
from qidao.compiler.compiled import CompiledProgram
from qidao.compiler.options import Settings
from qidao.compiler.pipeline import check_target
from qidao.compiler.schedule import ScheduleSpec


class Target(Protocol):
    """What the compile driver asks of a target."""

    name: str
    options: Mapping[str, Any]
    """The target's own compile options and their defaults."""
    cache: bool
    """Whether its programs go to the compile cache (``to_entry``/``from_entry``)."""

    def check(self, settings: Settings) -> None:
        """Refuse a bad value of one of the target's own options, before any work."""
        ...

    def schedule(
        self, settings: Settings, applied: dict[str, Any]
    ) -> ScheduleSpec | None:
        """The schedule to apply: ``schedule=`` as given, or for ``"default"`` the
        target's default schedules (which report into ``applied``)."""
        ...

    def check_scheduled(self, module: ModuleOp) -> None:
        """Refuse loops the target cannot run as scheduled (GPU axes on the CPU)."""
        ...

    def build(
        self,
        module: ModuleOp,
        stage_ir: dict[str, ModuleOp],
        settings: Settings,
        seconds: dict[str, float],
        applied: dict[str, Any],
    ) -> CompiledProgram:
        """The compiled object, from ``module`` after the last IR stage."""
        ...

    def to_entry(self, compiled: CompiledProgram) -> Entry:
        """What the compile cache keeps of a program ``build`` made."""
        ...

    def from_entry(
        self, entry: Entry, recompile: Callable[[], CompiledProgram]
    ) -> CompiledProgram:
        """The program in a cache entry, loaded (``recompile`` makes its IR);
        raises ``CacheError`` for an entry it cannot use."""
        ...


def get_target(name: object) -> Target:
    """The target called ``name`` (``cpu``, ``cuda``); its code loads on first use."""
    module = importlib.import_module(f"{__name__}.{check_target(name)}.target")
    target: Target = module.TARGET
    return target
