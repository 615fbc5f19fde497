"""What ``qidao explain`` shows, gathered from one compile and a short timing.

:func:`explain` compiles the model once with ``profile=True`` (the
``instrument-kernels`` pass brackets each kernel call with a timer) and an
:class:`~qidao.compiler.print_ir.IRLog` (the IR before and after every pass), times
a few calls, and returns an :class:`Explanation`: the tg graph with its kernels
(``graph.py``), one :class:`KernelRow` per kernel, the log and the stats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from qidao.compiler.compile import compile
from qidao.compiler.host import entry_function, kernel_labels
from qidao.compiler.pipeline import Stage, stages
from qidao.compiler.print_ir import IRLog, PrintIR
from qidao.compiler.report.graph import OpGraph, op_graph
from qidao.compiler.targets.cpu.compiled import Compiled
from qidao.errors import UnsupportedError
from qidao.runtime.cpu import host_cpu
from qidao.runtime.profile import Profile

RUNS = 20
"""Timed calls of the model (after 3 warm-up calls): a short timing."""

_EXPLAIN_SETS = ("debug", "profile", "target")
"""Options ``explain`` sets itself."""


@dataclass(frozen=True)
class KernelRow:
    """One kernel of the compiled model, with every launch of it per call."""

    kernel: str
    ops: str
    """The tg ops it computes (its ``qd.kernel`` label)."""
    launches: int
    """Launches per call (``dedupe-kernels`` points identical kernels at one)."""
    bytes: int
    """Bytes its launches read and write per call: each buffer argument once."""
    flops: int
    """Floating-point operations of its launches per call (``tg.cost.flops``)."""
    seconds: float | None
    """Median time of its launches per call (None: not timed)."""
    schedule: str
    """The schedule's primitives on this kernel, as Python (one per line)."""
    default: str
    """What the default schedule did to it and why, or why nothing
    (``stats["default_schedule"]``)."""

    @property
    def gflops(self) -> float | None:
        if not self.seconds or not self.flops:
            return None
        return self.flops / self.seconds / 1e9

    @property
    def gbytes(self) -> float | None:
        if not self.seconds or not self.bytes:
            return None
        return self.bytes / self.seconds / 1e9


@dataclass
class Explanation:
    """A compiled model, explained: see :func:`explain`."""

    model: str
    compiled: Compiled
    log: IRLog
    graph: OpGraph
    kernels: list[KernelRow]
    launches: list[tuple[str, str]]
    """(kernel, tg ops) of every launch, in the host program's order."""
    pipeline: tuple[Stage, ...]
    cpu: str
    version: str
    profile: Profile | None
    runs: int

    @property
    def stats(self) -> dict[str, Any]:
        return self.compiled.stats

    @property
    def target(self) -> str:
        return self.compiled.target


def explain(
    model: Any,
    *,
    name: str = "model",
    inputs: list[np.ndarray[Any, Any]] | None = None,
    runs: int = RUNS,
    seed: int = 0,
    **options: Any,
) -> Explanation:
    """Compile ``model`` (anything ``qidao.compile`` takes; ``options`` are its
    options, ``mode``, ``threads``, ``fuse``, ``disable``, ...) with the IR of every
    pass kept, time ``runs`` calls on ``inputs`` (default: random arrays of the
    inputs' shapes, from ``seed``; ``runs=0``: no timing) and gather the page's
    facts. ``name`` is how the page names the model."""
    given = [o for o in _EXPLAIN_SETS if o in options]
    if given:
        raise TypeError(
            f"explain sets {', '.join(given)} itself: it compiles for the CPU with "
            "profile=True and keeps the IR of every pass"
        )
    if runs < 0:
        raise ValueError(f"runs must be 0 (no timing) or more, got {runs}")
    log = IRLog()
    compiled = compile(model, debug=PrintIR(log=log), profile=runs > 0, **options)
    if not isinstance(compiled, Compiled):
        why = getattr(compiled, "why", lambda: "not a plain model")()
        raise UnsupportedError(
            f"explain: {name} is compiled at its first call or wrapped "
            f"({type(compiled).__name__}: {why}); explain a model with static "
            "shapes"
        )
    affine = compiled.module("affine")
    launches = host_launches(affine)
    graph = op_graph(compiled.module("tg"), launches)
    profile = None
    if runs:
        arrays = inputs if inputs is not None else random_inputs(compiled, seed)
        profile = compiled.profile(*arrays, runs=runs)
    return Explanation(
        model=name,
        compiled=compiled,
        log=log,
        graph=graph,
        kernels=kernel_rows(compiled, affine, launches, graph, profile),
        launches=launches,
        pipeline=stages(compiled.target),
        cpu=host_cpu()[0],
        version=_version(),
        profile=profile,
        runs=runs,
    )


def host_launches(module: ModuleOp) -> list[tuple[str, str]]:
    """(kernel, tg ops) of every kernel call of ``@main``, in order."""
    labels = kernel_labels(module)
    return [
        (name, labels.get(name, "?"))
        for call in entry_function(module).walk()
        if isinstance(call, func.CallOp)
        and (name := call.callee.string_value()) in labels
    ]


def kernel_rows(
    compiled: Compiled,
    affine: ModuleOp,
    launches: list[tuple[str, str]],
    graph: OpGraph,
    profile: Profile | None,
) -> list[KernelRow]:
    """One row per kernel, in order of its first launch."""
    functions = {
        op.sym_name.data: op for op in affine.ops if isinstance(op, func.FuncOp)
    }
    work: dict[str, int] = {}
    count: dict[str, int] = {}
    for i, (kernel, _) in enumerate(launches):
        count[kernel] = count.get(kernel, 0) + 1
        if graph.matched:
            work[kernel] = work.get(kernel, 0) + graph.groups[i].flops
    times = {k.kernel: k.median_us * 1e-6 for k in profile.kernels} if profile else {}
    defaults = compiled.stats.get("default_schedule") or {}
    trace = str(compiled.stats.get("schedule") or "")
    labels = dict(launches)
    return [
        KernelRow(
            kernel=kernel,
            ops=labels[kernel],
            launches=n,
            bytes=n * _argument_bytes(functions[kernel]),
            flops=work.get(kernel, 0),
            seconds=times.get(kernel),
            schedule="\n".join(
                line for line in trace.splitlines() if f'"{kernel}"' in line
            ),
            default=str(defaults.get(kernel, "")),
        )
        for kernel, n in count.items()
    ]


def _argument_bytes(fn: func.FuncOp) -> int:
    """The bytes of the kernel's buffer arguments: what one launch reads and writes
    at least."""
    total = 0
    for t in fn.function_type.inputs.data:
        if isinstance(t, MemRefType):
            bits = getattr(t.element_type, "bitwidth", 32)
            total += math.prod(t.get_shape()) * max(1, (int(bits) + 7) // 8)
    return total


def random_inputs(compiled: Compiled, seed: int = 0) -> list[np.ndarray[Any, Any]]:
    """Arrays of the inputs' shapes and dtypes: normal floats, small integers
    (0 or 1: valid indices), random booleans."""
    rng = np.random.default_rng(seed)
    arrays: list[np.ndarray[Any, Any]] = []
    for spec in compiled.inputs:
        dtype = np.dtype(spec.dtype)
        if dtype == np.bool_:
            arrays.append(rng.random(spec.shape) < 0.5)
        elif dtype.kind in "iu":
            arrays.append(rng.integers(0, 2, spec.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(spec.shape).astype(dtype))
    return arrays


def _version() -> str:
    try:
        return version("qidao")
    except PackageNotFoundError:
        return "unknown"


def format_seconds(seconds: float | None, micro: str = "\u00b5s") -> str:
    """``1.23 ms`` or ``45.60 µs`` (``micro``: the unit's spelling), ``-`` for
    no time: the page and the text summary print times alike."""
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} {micro}"
