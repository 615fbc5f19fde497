"""The CPU target's own stages (``scf``, ``cf``, ``llvm-dialect``) and its LLVM IR
text, for the whole module at once or spread over processes.

Below the schedule every kernel lowers on its own: no pass of these stages looks
from one kernel into another. So a model with many kernels (ResNet-50 has 35 after
``dedupe-kernels``) is split into one part per core: part 0 holds the host program,
the others only kernels, and each part keeps declarations of what it calls. Forked
worker processes run the stages on their part (the parent's IR, shared
copy-on-write, is never sent), optimize and compile their part to an object
(``qidao.runtime.cpu.compile_object``: LLVM's O3 and code generation, the
slowest stage of a big model, spread over the cores too) and send back the object
and the LLVM IR text; the parent loads the objects into one engine, which links
the host program's calls to the kernels of the other parts
(``JitModule.from_objects``). Each part declares the model's weights ``external``
(``emit.emit_program``) and the parent binds them once. LLVM sees one part at a
time, so a kernel of another part is called, never inlined into the host program
(in one process, GPT-2-tiny's 25 calls kept 18: the 7 smallest kernels were
inlined, which saves a call of a few nanoseconds each).

Serial instead, and the same result: a model of fewer than
``PARALLEL_MIN_KERNELS`` kernels, ``QIDAO_COMPILE_JOBS=1`` (the number of processes;
default: the cores this process may run on), ``debug`` ≥ 2 (the stages print their
IR as they run), ``profile=True`` (its counters are numbered across the module), and
when a part fails in a worker: the whole module then lowers here, so the error the
user sees is the one the serial pipeline raises.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Region

from qidao.compiler.options import Settings
from qidao.compiler.pipeline import Stage, run_stages
from qidao.compiler.targets.cpu.emit import INLINE_BYTES, aligned_bytes, emit_program
from qidao.dialects.attributes import KERNEL_ATTR, SIZES_ATTR
from qidao.runtime.cpu import compile_object

PARALLEL_MIN_KERNELS = 8
"""Fewer kernels than this lower in this process (a fork costs more than it saves)."""

JOBS_ENV = "QIDAO_COMPILE_JOBS"


def compile_jobs() -> int:
    """Processes the lowering may use: ``$QIDAO_COMPILE_JOBS``, else the cores this
    process may run on (1 where processes cannot be forked, and in a daemonic
    process such as a ``multiprocessing.Pool`` worker, which may not start any)."""
    given = os.environ.get(JOBS_ENV)
    if given:
        try:
            jobs = int(given)
        except ValueError:
            raise ValueError(
                f"{JOBS_ENV} must be a positive integer, got {given!r}"
            ) from None
        if jobs < 1:
            raise ValueError(f"{JOBS_ENV} must be a positive integer, got {given!r}")
        return jobs
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1  # Windows: the workers could not share the parent's IR
    if multiprocessing.current_process().daemon:
        return 1  # a multiprocessing.Pool worker: daemons may not start processes
    if hasattr(os, "sched_getaffinity"):  # Linux: the cores this process may use
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass
class Lowered:
    """LLVM IR text (one per part), the weights the texts declare, the processes;
    with more than one part, each part's object code (``compile_object``)."""

    texts: list[str]
    weights: dict[str, np.ndarray[Any, Any]]
    processes: int = 1
    seconds: dict[str, float] = field(default_factory=dict)
    objects: list[bytes] | None = None


def lower(
    module: ModuleOp, below: Sequence[Stage], settings: Settings, host_ir: str = ""
) -> Lowered:
    """Run ``below`` (the target's IR stages after the schedule) on ``module`` and
    emit LLVM IR, ``host_ir`` appended to the host program's part: in worker
    processes when it pays (each also compiles its part to an object), else here
    (changing ``module``). ``seconds`` gets each stage's time (the slowest
    part's)."""
    kernels = _kernels(module)
    jobs = min(compile_jobs(), len(kernels))
    serial = (
        jobs < 2
        or len(kernels) < PARALLEL_MIN_KERNELS
        or settings.debug >= 2
        or settings.print_ir is not None
        or bool(settings.options.get("profile"))
    )
    if not serial:
        lowered = _lower_in_processes(module, below, settings, jobs, host_ir)
        if lowered is not None:
            return lowered
    return _lower_here(module, below, settings, host_ir)


def _lower_here(
    module: ModuleOp, below: Sequence[Stage], settings: Settings, host_ir: str
) -> Lowered:
    seconds: dict[str, float] = {}
    _run(module, below, settings, seconds)
    start = time.perf_counter()
    program = emit_program(module)
    seconds["emit-llvm"] = time.perf_counter() - start
    return Lowered([program.text + host_ir], program.weights, 1, seconds)


def _run(
    module: ModuleOp,
    below: Sequence[Stage],
    settings: Settings,
    seconds: dict[str, float],
) -> None:
    run_stages(
        module,
        below,
        mode=settings.mode,
        settings=settings.values(),
        debug=settings.debug,
        verify=settings.verify,
        seconds=seconds,
        keep=(),
        print_ir=settings.print_ir,
    )


def _kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp)
        and KERNEL_ATTR in op.attributes
        and op.body.blocks
    ]


def _size(op: func.FuncOp) -> int:
    return sum(1 for _ in op.walk())


def partition(module: ModuleOp, jobs: int) -> list[set[str]]:
    """The kernels of each part, balanced by op count (largest first, each to the
    lightest part); part 0 also carries the host program's ops."""
    hosts = [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR not in op.attributes
    ]
    loads = [sum(_size(h) for h in hosts)] + [0] * (jobs - 1)
    parts: list[set[str]] = [set() for _ in range(jobs)]
    for kernel in sorted(_kernels(module), key=_size, reverse=True):
        lightest = loads.index(min(loads))
        parts[lightest].add(kernel.sym_name.data)
        loads[lightest] += _size(kernel)
    return parts


_WORK: tuple[ModuleOp, list[set[str]], Sequence[Stage], Settings, str] | None = None
"""What the forked workers lower: set in the parent just before the fork."""

PartResult = tuple[str, bytes, set[str], dict[str, float]]
"""A worker's part: LLVM IR text, object code, the weights it declares, seconds."""


def _lower_in_processes(
    module: ModuleOp,
    below: Sequence[Stage],
    settings: Settings,
    jobs: int,
    host_ir: str,
) -> Lowered | None:
    """The parts lowered and compiled by ``jobs`` forked workers; None when one
    failed."""
    global _WORK
    parts = partition(module, jobs)
    _WORK = (module, parts, below, settings, host_ir)
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(jobs) as pool:
            results = pool.map(_in_worker, range(jobs))
    finally:
        _WORK = None
    if any(r is None for r in results):
        return None  # lowered again here, to raise the error the user should see
    texts: list[str] = []
    objects: list[bytes] = []
    names: set[str] = set()
    seconds: dict[str, float] = {}
    for result in results:
        assert result is not None
        text, code, declared, part_seconds = result
        texts.append(text)
        objects.append(code)
        names |= declared
        for stage, spent in part_seconds.items():
            seconds[stage] = max(seconds.get(stage, 0.0), spent)
    return Lowered(texts, _weights(module, names), jobs, seconds, objects)


def _in_worker(index: int) -> PartResult | None:
    return _lower_part(index)  # looked up when called (a test replaces it)


def _lower_part(index: int) -> PartResult | None:
    """In a worker: lower part ``index`` of the module and compile it to an
    object; None if anything fails."""
    assert _WORK is not None
    module, parts, below, settings, host_ir = _WORK
    try:
        _keep_part(module, parts[index], host=index == 0)
        seconds: dict[str, float] = {}
        _run(module, below, settings, seconds)
        start = time.perf_counter()
        program = emit_program(module, copy_weights=False)
        text = program.text + (host_ir if index == 0 else "")
        seconds["emit-llvm"] = time.perf_counter() - start
        start = time.perf_counter()
        code = compile_object(text, int(settings.options["opt_level"]))
        seconds["jit"] = time.perf_counter() - start
        return text, code, set(program.weights), seconds
    except Exception:  # the parent lowers the whole module again and raises it
        return None


def _keep_part(module: ModuleOp, keep: set[str], host: bool) -> None:
    """Leave the kernels in ``keep`` (and, for part 0, the host functions, with
    declarations of the kernels they call) in this worker's copy of ``module``."""
    for op in list(module.ops):
        if not isinstance(op, func.FuncOp) or not op.body.blocks:
            continue
        is_kernel = KERNEL_ATTR in op.attributes
        if is_kernel and op.sym_name.data in keep:
            continue
        if not is_kernel and host:
            continue
        if is_kernel and host:  # the host calls it: a declaration
            declaration = func.FuncOp(
                op.sym_name.data,
                op.function_type,
                Region(),
                visibility="private",
                arg_attrs=op.arg_attrs,
            )
            if SIZES_ATTR in op.attributes:  # bound-symbolic-loops adds arguments
                declaration.attributes[SIZES_ATTR] = op.attributes[SIZES_ATTR]
            module.body.block.insert_op_before(declaration, op)
        module.body.block.erase_op(op)


def _weights(module: ModuleOp, names: set[str]) -> dict[str, np.ndarray[Any, Any]]:
    """The bytes of the weights the parts declared, from the module's globals."""
    weights: dict[str, np.ndarray[Any, Any]] = {}
    for op in module.ops:
        if isinstance(op, memref.GlobalOp) and op.sym_name.data in names:
            value = op.initial_value
            assert isinstance(value, DenseIntOrFPElementsAttr)
            assert len(value.data.data) > INLINE_BYTES
            weights[op.sym_name.data] = aligned_bytes(value)
    missing = names - set(weights)
    if missing:
        raise RuntimeError(f"weights declared but not found: {sorted(missing)}")
    return weights
