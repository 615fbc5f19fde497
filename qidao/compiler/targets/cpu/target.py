"""The CPU target: the driver's questions answered for LLVM IR on the host CPU."""

from __future__ import annotations

import time
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.debug import emit
from qidao.compiler.host import ENTRY, host_stats, signature
from qidao.compiler.options import Settings
from qidao.compiler.schedule import Schedule, ScheduleSpec
from qidao.compiler.targets.cpu.compiled import Compiled
from qidao.compiler.targets.cpu.defaults import default_schedule
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.passes.schedule.bind import refuse_gpu_bindings
from qidao.runtime.cpu import jit_compile
from qidao.runtime.executor import NativeFunction, ndarray_entry_ir
from qidao.runtime.profile import RUNTIME_IR

HOST_STAGE = "schedule"
"""The last stage before loops are lowered: its host program is what
``compiled.stats`` counts (launches, buffers, bytes)."""


class CpuTarget:
    """LLVM IR, JIT-compiled for the host CPU."""

    name = "cpu"
    options: dict[str, Any] = {"opt_level": 3, "records": None, "profile": False}

    def check(self, settings: Settings) -> None:
        level = settings.options["opt_level"]
        if level not in (0, 1, 2, 3) or isinstance(level, bool):
            raise ValueError(f"opt_level must be 0, 1, 2 or 3 (LLVM's), got {level!r}")

    def schedule(
        self, settings: Settings, applied: dict[str, Any]
    ) -> ScheduleSpec | None:
        spec: ScheduleSpec | None = settings.options["schedule"]
        if isinstance(spec, str) and spec == "default":

            def defaults(s: Schedule) -> None:
                applied["default_schedule"] = default_schedule(s, settings.threads)

            spec = defaults
        records = settings.options["records"]
        if records is not None:  # tuned traces win: qidao/compiler/tune
            from qidao.compiler.tune.records import records_schedule

            spec = records_schedule(records, settings.threads, spec, applied)
        return spec

    def check_scheduled(self, module: ModuleOp) -> None:
        refuse_gpu_bindings(module)  # the CPU stages would run them serially

    def build(
        self,
        module: ModuleOp,
        stage_ir: dict[str, ModuleOp],
        settings: Settings,
        seconds: dict[str, float],
        applied: dict[str, Any],
    ) -> Compiled:
        profile = bool(settings.options["profile"])
        inputs, outputs = signature(stage_ir["input"])
        start = time.perf_counter()
        llvm_ir = llvm_ir_text(module)
        seconds["emit-llvm"] = time.perf_counter() - start
        start = time.perf_counter()
        jit = jit_compile(
            llvm_ir + ndarray_entry_ir(ENTRY, len(inputs) + len(outputs)),
            opt_level=int(settings.options["opt_level"]),
            runtime_ir=RUNTIME_IR if profile else None,
        )
        native = NativeFunction(jit, ENTRY, inputs, outputs)
        seconds["jit"] = time.perf_counter() - start
        stats: dict[str, Any] = {
            **host_stats(stage_ir[HOST_STAGE]),
            "threads": settings.threads,
            "compile_seconds": seconds,
            **applied,
        }
        if settings.debug >= 2:
            emit("llvm", llvm_ir)
        if settings.debug >= 4:
            emit("llvm-opt", jit.optimized_ir())
            emit("asm", jit.assembly())
        if settings.debug >= 1:
            emit(
                "stats",
                f"{settings.mode} mode: {stats['kernels']} kernel(s), "
                f"{stats['buffers']} buffer(s), peak {stats['peak_bytes']:,} bytes, "
                f"traffic {stats['traffic_bytes']:,} bytes; "
                + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in seconds.items()),
            )
        return Compiled(stage_ir, llvm_ir, jit, native, stats, settings.mode)


TARGET = CpuTarget()
