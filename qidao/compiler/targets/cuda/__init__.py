"""``qidao.compile(model, target="cuda")``: the GPU branch of the tower.

    compiled = qidao.compile(model, target="cuda", schedule=gpu_schedule)
    print(compiled.ir("cuda"))       # the CUDA C and, as comments, the launch plan
    y, = compiled(x)                 # nvcc + pycuda, on the first call

The model goes through the stages up to ``schedule`` as on the CPU
(``input``, ``tg``, ``affine``, ``schedule``); the schedule binds loops to
``blockIdx``/``threadIdx`` (``s.bind(kernel, loop, "blockIdx.x")``); then
``emit.emit_program`` writes CUDA C and a launch plan, and
``qidao.runtime.cuda.CudaFunction`` runs it. The device is opened on the first
call, so ``ir("cuda")`` works on a machine without a GPU.

``schedule="default"`` (``qidao.compile``'s default) applies the default GPU
schedules (``defaults.py``: elementwise nests on the grid, the matmul
register-tiled with ``__shared__`` tiles, a thread per row for softmax and layer
norm); ``stats["default_schedule"]`` says what each kernel got, or why it got
nothing. ``schedule=None`` keeps the loops as lowered: a kernel with no bound
loop runs on one GPU thread. ``stats["serial_launches"]`` lists those launches,
and the plan marks them ``serial``.

``device="emulate"`` (``compile_cuda`` only) runs the same CUDA C on the CPU,
block after block, a block's threads as threads so that ``__shared__`` memory and
``__syncthreads()`` work (see ``qidao.runtime.cuda.EmulatedDevice``): for tests.

A ``cache_read`` inside a ``blockIdx`` loop and outside the ``threadIdx`` loops is
staged in ``__shared__`` memory by the block's threads (see ``emit.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.context import make_context, make_pass
from qidao.compiler.models import load_model
from qidao.compiler.pipeline import STAGES
from qidao.compiler.schedule import Schedule, ScheduleSpec, apply_schedule
from qidao.compiler.targets.cuda.defaults import default_gpu_schedule
from qidao.compiler.targets.cuda.emit import CudaEmitError, emit_program
from qidao.runtime.cuda import CudaFunction, CudaProgram, Device
from qidao.runtime.executor import TensorSpec

SCHEDULE_STAGE = "schedule"
CUDA_STAGES: tuple[str, ...] = (
    *[s.name for s in STAGES[: [s.name for s in STAGES].index(SCHEDULE_STAGE) + 1]],
    "cuda",
)
"""The stages of a CUDA compile: the IR stages up to ``schedule``, then ``cuda``."""

_OPTIONS = ("fuse", "debug", "schedule", "opt_level")


class CompiledCuda:
    """A model compiled for CUDA: call it with NumPy arrays in graph-input order."""

    def __init__(
        self,
        stage_ir: dict[str, ModuleOp],
        program: CudaProgram,
        stats: dict[str, Any],
        mode: str,
        device: Device | str,
    ) -> None:
        self._stage_ir = stage_ir
        self.program = program
        self.stats = stats
        self.mode = mode
        self._device = device
        self._function: CudaFunction | None = None

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.program.outputs

    def load(self) -> CudaFunction:
        """Compile and load the kernels on the device (done by the first call)."""
        if self._function is None:
            self._function = CudaFunction(self.program, self._device)
        return self._function

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        return self.load()(*arrays)

    def ir(self, stage: str = "tg") -> str:
        """The text of one stage of ``CUDA_STAGES``; ``cuda`` is the CUDA C source
        followed by the launch plan as comments."""
        if stage not in CUDA_STAGES:
            raise ValueError(
                f"unknown stage '{stage}' for target 'cuda'; the stages are: "
                f"{', '.join(CUDA_STAGES)}"
            )
        if stage == "cuda":
            return self.program.source + "\n" + self.program.plan() + "\n"
        return str(self._stage_ir[stage])

    def __repr__(self) -> str:
        return (
            f"<qidao.CompiledCuda {len(self.program.launches)} launch(es), "
            f"{self.mode} mode>"
        )


def compile_cuda(
    model: Any,
    mode: str = "graph",
    device: Device | str = "cuda",
    threads: int | None = None,
    **options: Any,
) -> CompiledCuda:
    """Compile ``model`` to CUDA C and a launch plan (see the module docstring).

    Options as ``qidao.compile``: ``fuse``, ``schedule`` (its ``bind`` calls map
    loops to the grid; ``"default"``, the default: ``defaults.py``; None: the
    loops as lowered), ``debug`` and ``opt_level`` (both ignored here).
    ``threads`` is ignored (CPU only). ``device`` is ``"cuda"`` (pycuda) or
    ``"emulate"`` (the CPU emulator), opened on the first call.
    """
    del threads
    from qidao.compiler.compile import check_mode, stage_passes

    check_mode(mode)
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(sorted(unknown))}; target 'cuda' takes "
            f"{', '.join(_OPTIONS)}"
        )
    schedule: ScheduleSpec | None = options.get("schedule", "default")
    applied: dict[str, Any] = {}
    if isinstance(schedule, str) and schedule == "default":
        schedule = _default_schedule(applied)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    module = load_model(model)
    seconds["import"] = time.perf_counter() - start
    ctx = make_context()
    snapshots: dict[str, ModuleOp] = {}
    for stage in STAGES:
        start = time.perf_counter()
        for name in stage_passes(stage, mode, bool(options.get("fuse", True))):
            make_pass(name).apply(ctx, module)
            module.verify()
        if schedule is not None and stage.name == SCHEDULE_STAGE:
            applied["schedule"] = apply_schedule(module, schedule).python()
        seconds[stage.name] = time.perf_counter() - start
        snapshots[stage.name] = module.clone()
        if stage.name == SCHEDULE_STAGE:
            break
    start = time.perf_counter()
    program = emit_program(module)
    seconds["emit-cuda"] = time.perf_counter() - start
    stats: dict[str, Any] = {
        "kernels": len({launch.kernel for launch in program.launches}),
        "launches": len(program.launches),
        "serial_launches": [lch.function for lch in program.launches if lch.serial],
        "compile_seconds": seconds,
        **applied,
    }
    return CompiledCuda(snapshots, program, stats, mode, device)


def _default_schedule(applied: dict[str, Any]) -> Callable[[Schedule], None]:
    """The default GPU schedules as a schedule function; what each kernel got goes
    to ``applied["default_schedule"]``."""

    def apply(s: Schedule) -> None:
        applied["default_schedule"] = default_gpu_schedule(s)

    return apply


__all__ = ["CUDA_STAGES", "CompiledCuda", "CudaEmitError", "compile_cuda"]
