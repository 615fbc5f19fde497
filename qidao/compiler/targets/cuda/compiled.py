"""The compiled object of the CUDA target: the CUDA C, the launch plan, the device."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.checks import Checks
from qidao.compiler.compiled import CompiledProgram
from qidao.runtime.cuda import CudaFunction, CudaProgram, Device
from qidao.runtime.executor import TensorSpec


class CompiledCuda(CompiledProgram):
    """A model compiled for CUDA: call it with NumPy arrays in graph-input order."""

    target = "cuda"

    def __init__(
        self,
        stage_ir: dict[str, ModuleOp],
        program: CudaProgram,
        stats: dict[str, Any],
        mode: str,
        device: Device | str,
        checks: Checks | None = None,
    ) -> None:
        """``checks``: the run-time checks whose results follow the model's outputs
        among the program's (``checks=True``)."""
        super().__init__(stage_ir, stats, mode, checks=checks)
        self.program = program
        self._device = device
        self._function: CudaFunction | None = None

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.program.outputs[: len(self.program.outputs) - self.checks.results]

    def load(self) -> CudaFunction:
        """Compile and load the kernels on the device (done by the first call)."""
        if self._function is None:
            self._function = CudaFunction(self.program, self._device)
        return self._function

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        return self.checks.split(self.load()(*arrays))

    def _text(self, stage: str) -> str:
        """``cuda``: the CUDA C source followed by the launch plan as comments."""
        assert stage == "cuda", stage
        return self.program.source + "\n" + self.program.plan() + "\n"

    def __repr__(self) -> str:
        return (
            f"<qidao.CompiledCuda {len(self.program.launches)} launch(es), "
            f"{self.mode} mode>"
        )
