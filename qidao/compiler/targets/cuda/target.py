"""The CUDA target: the driver's questions answered for CUDA C on a GPU."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.cache import Entry
from qidao.compiler.checks import Checks
from qidao.compiler.compiled import CompiledProgram
from qidao.compiler.debug import emit
from qidao.compiler.host import entry_function
from qidao.compiler.options import Settings
from qidao.compiler.schedule import Schedule, ScheduleSpec
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.compiler.targets.cuda.defaults import default_gpu_schedule
from qidao.compiler.targets.cuda.emit import emit_program
from qidao.compiler.targets.cuda.tensor_cores import requesting
from qidao.dialects.symbolic import declared_dims
from qidao.errors import UnsupportedError

DEVICES: tuple[str, ...] = ("cuda", "emulate")
"""``cuda``: a CUDA GPU through pycuda; ``emulate``: the CPU emulation, for tests."""


class CudaTarget:
    """CUDA C and a launch plan, built by nvcc and launched with pycuda."""

    name = "cuda"
    cache = False
    """Not cached: nvcc builds the CUDA C when the program is first called."""
    options: dict[str, Any] = {"device": "cuda", "opt_level": 3, "records": None}
    """``device`` (``DEVICES``), opened on the first call; ``opt_level`` is taken
    for the CPU's sake and ignored (nvcc builds with -O3); ``records``: a ``qidao
    tune --target cuda`` file, whose records of this device (its GPU model and
    compute capability, or ``"emulator"``) win over ``schedule``."""

    def check(self, settings: Settings) -> None:
        device = settings.options["device"]
        if isinstance(device, str) and device not in DEVICES:
            raise ValueError(
                f"unknown device {device!r}; target 'cuda' runs on: "
                f"{', '.join(DEVICES)}"
            )

    def schedule(
        self, settings: Settings, applied: dict[str, Any]
    ) -> ScheduleSpec | None:
        spec: ScheduleSpec | None = settings.options["schedule"]
        if isinstance(spec, str) and spec == "default":

            def defaults(s: Schedule) -> None:
                with requesting(settings.options["tensor_cores"]):  # tensor_cores=
                    applied["default_schedule"] = default_gpu_schedule(s)

            spec = defaults
        records = settings.options["records"]
        if records is not None:  # tuned traces win: qidao/compiler/tune
            from qidao.compiler.tune.gpu_device import gpu_key
            from qidao.compiler.tune.records import records_schedule

            device = gpu_key(settings.options["device"], "records= for target 'cuda'")
            spec = records_schedule(records, 1, spec, applied, "cuda", device)
        return spec

    def check_scheduled(self, module: ModuleOp) -> None:
        """Every binding is the GPU's; nothing to refuse."""

    def build(
        self,
        module: ModuleOp,
        stage_ir: dict[str, ModuleOp],
        settings: Settings,
        seconds: dict[str, float],
        applied: dict[str, Any],
    ) -> CompiledCuda:
        if declared_dims(entry_function(module)):
            raise UnsupportedError(
                "target 'cuda' does not run symbolic dimensions yet (dynamic=, "
                "Dim): compile for target 'cpu', or give every dimension one size"
            )
        start = time.perf_counter()
        program = emit_program(module)
        seconds["emit-cuda"] = time.perf_counter() - start
        stats: dict[str, Any] = {
            "kernels": len({launch.kernel for launch in program.launches}),
            "launches": len(program.launches),
            "serial_launches": [
                launch.function for launch in program.launches if launch.serial
            ],
            "compile_seconds": seconds,
            **applied,
        }
        if settings.debug >= 2:
            emit("cuda", program.source + "\n" + program.plan())
        if settings.debug >= 1:
            emit(
                "stats",
                f"{settings.mode} mode: {stats['launches']} launch(es) of "
                f"{stats['kernels']} kernel(s), "
                f"{len(stats['serial_launches'])} serial; "
                + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in seconds.items()),
            )
        return CompiledCuda(
            stage_ir,
            program,
            stats,
            settings.mode,
            settings.options["device"],
            Checks.of(stage_ir["tg"]),
        )

    def to_entry(self, compiled: CompiledProgram) -> Entry:
        raise NotImplementedError("the CUDA target is not cached")

    def from_entry(
        self, entry: Entry, recompile: Callable[[], CompiledProgram]
    ) -> CompiledProgram:
        raise NotImplementedError("the CUDA target is not cached")


TARGET = CudaTarget()
