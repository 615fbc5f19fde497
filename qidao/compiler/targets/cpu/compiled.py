"""The compiled object of the CPU target: NumPy arrays in, NumPy arrays out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from qidao.compiler.checks import Checks
from qidao.compiler.compiled import CompiledProgram
from qidao.compiler.host import entry_function, kernel_labels
from qidao.dialects.attributes import PROFILE_KERNELS_ATTR
from qidao.runtime.cpu import JitModule
from qidao.runtime.executor import NativeFunction, TensorSpec
from qidao.runtime.profile import (
    CALLS_GLOBAL,
    NS_GLOBAL,
    KernelCounters,
    Profile,
    measure,
)


class Compiled(CompiledProgram):
    """A model compiled for the CPU: call it with NumPy arrays in graph-input order."""

    target = "cpu"

    def __init__(
        self,
        stage_ir: dict[str, ModuleOp] | None,
        llvm_ir: str | None,
        jit: JitModule,
        native: NativeFunction,
        stats: dict[str, Any],
        mode: str = "graph",
        weights: dict[str, np.ndarray[Any, Any]] | None = None,
        recompile: Callable[[], CompiledProgram] | None = None,
        more_ir: Callable[[], dict[str, ModuleOp]] | None = None,
        checks: Checks | None = None,
    ) -> None:
        """``stage_ir`` and ``llvm_ir`` None: loaded from the compile cache;
        ``recompile`` makes them when they are asked for. ``llvm_ir`` alone None:
        compiled part by part, ``jit`` links the parts' texts when asked for.
        ``checks``: the run-time checks whose results follow the outputs of
        ``native`` (``checks=True``)."""
        super().__init__(stage_ir, stats, mode, recompile, more_ir, checks)
        self._weights = weights  # the native code reads them: kept while it lives
        self._llvm_ir = llvm_ir
        self._jit = jit
        self.native = native
        self._call = native._call  # the generated, checked caller

    def release_ir(self, recompile: Callable[[], CompiledProgram]) -> None:
        super().release_ir(recompile)
        self._llvm_ir = None

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.native.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.native.outputs[: len(self.native.outputs) - self.checks.results]

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        """Run the model; checks count, dtype and shape of every input first."""
        if self.checks.checks:
            return self.checks.split(self._call(*arrays))
        return self._call(*arrays)  # type: ignore[no-any-return]

    def call_into(
        self, arrays: Sequence[Any], given: Mapping[int, np.ndarray[Any, Any]]
    ) -> list[np.ndarray[Any, Any]]:
        """Run the model with the outputs at the positions of ``given`` written into
        those arrays (``NativeFunction.call_into``): a training step hands its
        weights as the outputs that ``update-in-place`` writes over them.

        With ``checks=True`` the checks' results (after the outputs, never among
        ``given``) are read as a plain call reads them: ``qidao.CheckError`` if one
        failed. They are read after the program ran, so the arrays of ``given``
        have been written by then: a caller that must keep them on a failure
        hands copies (``TrainingStep`` does)."""
        return self.checks.split(self.native.call_into(arrays, given))

    def _text(self, stage: str) -> str:
        # compiled part by part: the engine links the parts' texts when asked
        llvm_ir = self._llvm_ir or self._jit.linked_ir
        if llvm_ir is None:  # loaded from the cache: no IR of any kind
            return self._rebuilt()._text(stage)
        if stage == "llvm":
            return llvm_ir
        if stage == "llvm-opt":
            return self._jit.optimized_ir()
        assert stage == "asm", stage
        return self._jit.assembly()

    def profile(self, *arrays: Any, runs: int = 50) -> Profile:
        """Median time of each kernel over ``runs`` calls on ``arrays`` (after 3
        warm-up calls), and of the whole call; needs ``qidao.compile(...,
        profile=True)``. ``print(compiled.profile(x))`` prints the table."""
        scf = self._stages and self._stage("scf")  # a cache hit is never profiled
        if not scf:
            raise ValueError(
                "this model was compiled without profile=True: "
                "qidao.compile(model, profile=True) times its kernels"
            )
        host = entry_function(scf)
        names = host.attributes.get(PROFILE_KERNELS_ATTR)
        if names is None:
            raise ValueError(
                "this model was compiled without profile=True: "
                "qidao.compile(model, profile=True) times its kernels"
            )
        assert isinstance(names, ArrayAttr)
        affine = self._stage("affine")
        assert affine is not None
        labels = kernel_labels(affine)
        kernels = [
            (n.data, labels.get(n.data, ""))
            for n in names.data
            if isinstance(n, StringAttr)
        ]
        counters = KernelCounters(
            self._jit.global_address(NS_GLOBAL),
            self._jit.global_address(CALLS_GLOBAL),
            len(kernels),
        )
        self(*arrays)  # the arguments are checked once, before any timing
        return measure(lambda: self._call(*arrays), counters, kernels, runs)

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {list(s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{list(s.shape)}" for s in self.outputs)
        return (
            f"<qidao.Compiled ({ins}) -> ({outs}), {self.mode} mode, "
            f"{self.stats['kernels']} kernels>"
        )
