"""The options of ``qidao.compile``, checked before any work is done.

Every target takes the options in :data:`COMMON_OPTIONS`; a target adds its own
(``qidao.compiler.targets``: the CPU's ``opt_level``, ``records`` and ``profile``,
CUDA's ``device``). An option no target of the call takes is a ``TypeError`` that
lists the ones it does take.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qidao.compiler.checkpoint import check_checkpoint
from qidao.compiler.debug import debug_level, verify_policy
from qidao.compiler.pipeline import (
    SCHEDULE_STAGE,
    check_disable,
    check_mode,
    not_in_pipeline,
    pass_names,
)
from qidao.compiler.print_ir import PrintIR

COMMON_OPTIONS: dict[str, Any] = {
    "fuse": True,
    "debug": None,
    "schedule": "default",
    "verify": None,
    "algo": "auto",
    "checks": False,
    "tensor_cores": None,
    "grad": None,
    "optimizer": None,
    "checkpoint": None,
    "disable": None,
}
"""Options every target takes, with their defaults: ``fuse`` (the fusion pass in
graph mode), ``debug`` (0-4, ``qidao.compiler.debug``), ``schedule`` (``"default"``,
a function of a ``Schedule``, a trace, or None), ``verify`` (``"stage"`` or
``"each"``) and ``algo`` (each convolution's algorithm: ``"auto"``, ``"benchmark"``
or one of ``qidao.passes.graph.select_conv_algo.ALGORITHMS``) and ``checks``
(raise ``qidao.CheckError`` on an index out of range or an integer division by
zero, as ONNX Runtime does: the ``insert-checks`` pass) and ``tensor_cores``
(``target="cuda"`` only: ``"tf32"`` or ``"fp16"`` runs the default schedule's
matmuls on tensor cores in that precision, ``targets/cuda/tensor_cores.py``;
None keeps them fp32) and ``grad`` (names of inputs or ONNX initializers: the call
also returns the gradient of ``sum(output 0)`` with respect to each, the
``autodiff`` pass) and ``optimizer`` (``qidao.optim.SGD``/``Adam``: the call
also updates those weights, held by the compiled step; the ``apply-optimizer``
pass) and ``checkpoint`` (with ``grad``: keep every k-th activation, ``"sqrt"``,
or ``{"budget": bytes}``, and recompute the rest in the backward: the
``checkpoint`` pass, ``qidao.compiler.checkpoint``) and ``disable`` (optional
passes to skip, ``qidao.compiler.pipeline.optional_passes``; a pass the program
needs is refused, saying why). ``debug`` may also be a
``qidao.PrintIR(...)``: the IR around the passes it names
(``qidao.compiler.print_ir``)."""

TENSOR_CORES: tuple[str, ...] = ("tf32", "fp16")
"""The values of ``tensor_cores`` besides None: the inputs' precision on the tensor
cores (the products accumulate in f32)."""


@dataclass(frozen=True)
class Settings:
    """The checked settings of one compile."""

    target: str
    mode: str
    threads: int
    """Threads a parallel loop starts: the ``threads`` given, at most the cores."""
    debug: int
    verify: str
    options: Mapping[str, Any]
    """Every option of the target by name: the value given, else the default."""
    print_ir: PrintIR | None = None
    """``debug=PrintIR(...)``: what to print around the passes."""

    def values(self) -> dict[str, Any]:
        """What a pipeline step may ask for: every option, and ``threads``."""
        return {**self.options, "threads": self.threads}


def check_settings(
    target: str,
    target_options: Mapping[str, Any],
    mode: object,
    threads: object,
    options: Mapping[str, Any],
) -> Settings:
    """The settings of a ``qidao.compile`` call, or the error naming the bad one."""
    check_mode(mode)
    assert isinstance(mode, str)
    known = {**COMMON_OPTIONS, **target_options}
    unknown = set(options) - set(known)
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(sorted(unknown))}; qidao.compile "
            f"(target='{target}') takes "
            f"{', '.join(f'{k}={v!r}' for k, v in known.items())}"
        )
    cores = os.cpu_count() or 1
    if threads is None:
        threads = cores
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    merged = {**known, **options}
    _check_algo(merged["algo"])
    _check_tensor_cores(merged["tensor_cores"], target, merged["schedule"])
    merged["grad"] = _check_grad(merged["grad"])
    _check_optimizer(merged["optimizer"], merged["grad"])
    merged["checkpoint"] = check_checkpoint(merged["checkpoint"], merged["grad"])
    if not isinstance(merged["checks"], bool):
        raise TypeError(f"checks must be True or False, got {merged['checks']!r}")
    merged["disable"] = sorted(check_disable(merged["disable"], target)) or None
    print_ir = merged["debug"] if isinstance(merged["debug"], PrintIR) else None
    if print_ir is not None:
        for name in print_ir.passes:
            missing = not_in_pipeline(name, target)
            if missing is not None:
                raise ValueError(missing)
        print_ir.check((*pass_names(target), SCHEDULE_STAGE), f"target {target!r}")
    return Settings(
        target=target,
        mode=mode,
        threads=min(threads, cores),
        debug=debug_level(print_ir.level if print_ir else merged["debug"]),
        verify=verify_policy(merged["verify"]),
        options=merged,
        print_ir=print_ir,
    )


def _check_grad(grad: object) -> list[str] | None:
    """``grad``: None, or a non-empty list of distinct names (as a list)."""
    if grad is None:
        return None
    if isinstance(grad, str):
        grad = [grad]
    if not isinstance(grad, list | tuple) or not all(isinstance(n, str) for n in grad):
        raise TypeError(
            f"grad must be a list of input or initializer names, got {grad!r}"
        )
    if not grad or len(set(grad)) != len(grad):
        raise ValueError(f"grad must name distinct inputs, at least one; got {grad!r}")
    return list(grad)


def _check_optimizer(optimizer: object, grad: list[str] | None) -> None:
    from qidao.compiler.optim import SGD, Adam

    if optimizer is None:
        return
    if not isinstance(optimizer, SGD | Adam):
        raise TypeError(
            "optimizer must be qidao.optim.SGD(...) or qidao.optim.Adam(...), got "
            f"{optimizer!r}"
        )
    if not grad:
        raise ValueError(
            "optimizer= updates the weights named in grad=[...]; grad is not given"
        )


def _check_tensor_cores(precision: object, target: str, schedule: object) -> None:
    if precision is None:
        return
    if precision not in TENSOR_CORES:
        raise ValueError(
            "tensor_cores must be None (fp32), "
            f"{' or '.join(repr(p) for p in TENSOR_CORES)}; got {precision!r}"
        )
    if target != "cuda":
        raise ValueError(
            f"tensor_cores={precision!r} asks for NVIDIA tensor cores, which only "
            f"target='cuda' has; target={target!r} computes matmuls in fp32"
        )
    if not (isinstance(schedule, str) and schedule == "default"):
        raise ValueError(
            f"tensor_cores={precision!r} picks the precision of the default "
            "schedule's matmuls, and schedule= is given: tensorize its tiles "
            "instead (Schedule.tensorize)"
        )


def _check_algo(algo: object) -> None:
    from qidao.passes.graph.select_conv_algo import MODES

    if algo not in MODES:
        raise ValueError(
            f"algo must be one of {', '.join(repr(m) for m in MODES)}, got {algo!r}"
        )
