"""One kernel -> its ``__global__`` functions, in launch order (:func:`emit_kernel`).

Each top-level loop nest of a kernel that holds GPU-bound loops is one launch:
its grid and block are the extents of the loops bound to ``blockIdx`` and
``threadIdx``. A run of top-level ops without bound loops is one more, launched
``<<<1, 1>>>`` and marked ``serial``. A kernel that is one launch keeps its name;
otherwise the functions are ``<kernel>__<first loop>``. Pure top-level ops
(constants) are repeated in each function that uses them.

A function's parameters are the kernel's memref arguments: ``float*
__restrict__`` when the argument has ``llvm.noalias``, ``const`` when the launch
never writes it. Its first lines are comments: the launch shape and, with
staging buffers, their ``__shared__`` bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, func, memref, vector
from xdsl.dialects.builtin import DictionaryAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import is_side_effect_free

from qidao.compiler.targets.cuda.emit.block_loops import scratch_declarations
from qidao.compiler.targets.cuda.emit.c_types import c_type
from qidao.compiler.targets.cuda.emit.errors import CudaEmitError
from qidao.compiler.targets.cuda.emit.pipeline import PipelineWriter
from qidao.compiler.targets.cuda.emit.shared_memory import KernelWriter
from qidao.compiler.targets.cuda.emit.vectors import vector_notes
from qidao.compiler.targets.cuda.emit.writer import TID, Pointer
from qidao.compiler.targets.cuda.staging import (
    MAX_SHARED_BYTES,
    Staging,
    StagingError,
    find_staging,
)
from qidao.passes.schedule.bind import (
    BLOCK_AXES,
    bound_axis,
    check_gpu_nest,
    gpu_loops,
    launch_extent,
    stride_threads,
)
from qidao.passes.schedule.loops.block import single_thread_stores
from qidao.passes.schedule.loops.errors import ScheduleError
from qidao.passes.schedule.loops.nest import loop_name, root_buffer

Dims = tuple[int, int, int]


@dataclass
class KernelLaunch:
    """One ``__global__`` function of a kernel: its source and launch shape."""

    function: str
    source: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: tuple[str, ...]
    serial: bool


def emit_kernel(fn: func.FuncOp) -> list[KernelLaunch]:
    """The ``__global__`` functions of one kernel, in launch order."""
    kernel = fn.sym_name.data
    replicated, segments = _segments(fn)
    if not segments:
        segments = [[]]
    launches = []
    for k, segment in enumerate(segments):
        function = kernel if len(segments) == 1 else _part_name(kernel, segment, k)
        launches.append(_emit_launch(fn, function, replicated, segment))
    return launches


def _emit_launch(
    fn: func.FuncOp,
    function: str,
    replicated: Sequence[Operation],
    segment: Sequence[Operation],
) -> KernelLaunch:
    """The ``__global__`` function ``function``: the top-level ops ``segment``
    and the ``replicated`` pure ops they use."""
    kernel = fn.sym_name.data
    bound = [loop for top in segment for loop in gpu_loops(top)]
    grid, block = _launch_shape(bound)
    if bound:
        _recheck(fn, kernel, segment, bound)
    try:
        staging = find_staging(fn, kernel, function, segment)
    except StagingError as err:
        raise CudaEmitError(str(err)) from err
    writer = PipelineWriter(fn, kernel, staging, math.prod(block))
    writer.block_dims = block
    writer.single_stores = frozenset(
        store for top in segment for store in single_thread_stores(top)
    )
    params = _parameters(fn, writer, _written(segment))
    if staging:
        writer.line(_thread_index(block))
    needed = _closure(replicated, _used(segment))
    for op in replicated:
        if op in needed:
            writer.op(op)
    for op in segment:
        writer.op(op)
    writer.lines[:0] = ["  " + d for d in scratch_declarations(writer.scratch)]
    signature = ", ".join(p for _, p in params)
    source = "\n".join(
        [
            *_header(writer, bound, grid, block, staging),
            *vector_notes(writer, segment),
            f'extern "C" __global__ void {function}({signature}) {{',
            *writer.lines,
            "}",
        ]
    )
    return KernelLaunch(
        function, source, grid, block, tuple(t for t, _ in params), not bound
    )


def _segments(fn: func.FuncOp) -> tuple[list[Operation], list[list[Operation]]]:
    """The kernel's replicated pure ops, and its top-level ops split into launches."""
    replicated: list[Operation] = []
    known: set[SSAValue] = set(fn.body.block.args)
    segments: list[list[Operation]] = []
    serial: list[Operation] = []
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        pure = is_side_effect_free(op) and not op.regions
        if pure and all(v in known for v in op.operands):
            replicated.append(op)
            known.update(op.results)
            continue
        if gpu_loops(op):
            if serial:
                segments.append(serial)
                serial = []
            segments.append([op])
        else:
            serial.append(op)
    if serial:
        segments.append(serial)
    return replicated, segments


def _part_name(kernel: str, segment: Sequence[Operation], k: int) -> str:
    """``<kernel>__<first loop>`` (``<kernel>__part<k>`` without a named loop):
    the function of launch ``k`` of a kernel of several launches."""
    first = next(
        (loop_name(op) for top in segment for op in top.walk() if loop_name(op)),
        None,
    )
    return f"{kernel}__{first or f'part{k}'}"


def _launch_shape(bound: Sequence[affine.ForOp]) -> tuple[Dims, Dims]:
    """The grid and the block of a launch: each bound loop's extent on its axis."""
    grid, block = [1, 1, 1], [1, 1, 1]
    for loop in bound:
        axis = str(bound_axis(loop))
        dims = grid if axis in BLOCK_AXES else block
        dims["xyz".index(axis[-1])] = launch_extent(loop) or 1
    return (grid[0], grid[1], grid[2]), (block[0], block[1], block[2])


def _recheck(
    fn: func.FuncOp,
    kernel: str,
    segment: Sequence[Operation],
    bound: Sequence[affine.ForOp],
) -> None:
    """``bind``'s checks again, on the final nest: primitives applied after ``bind``
    (``cache_read``, ``split``, ...) do not rerun them."""
    (top,) = segment
    try:
        check_gpu_nest(fn, top, kernel, str(loop_name(bound[-1])))
    except ScheduleError as err:
        raise CudaEmitError(
            f"kernel '{kernel}': the nest of loop '{loop_name(top)}' no longer "
            f"passes bind's checks after the rest of the schedule: {err}"
        ) from err


def _parameters(
    fn: func.FuncOp, writer: KernelWriter, written: set[SSAValue]
) -> list[tuple[str, str]]:
    """The kernel's arguments as C parameters (type, declaration), each named
    and given its pointer in ``writer``."""
    kernel = fn.sym_name.data
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else None
    params = []
    for i, arg in enumerate(fn.body.block.args):
        t = arg.type
        if not isinstance(t, MemRefType):
            raise CudaEmitError(
                f"kernel '{kernel}': argument #{i} is {t}, not a memref"
            )
        name = writer.fresh(arg.name_hint, f"arg{i}")
        entry = attrs[i] if attrs is not None else None
        noalias = isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data
        elem = c_type(t.get_element_type())
        const = "" if arg in written else "const "
        restrict = " __restrict__" if noalias else ""
        params.append((f"{const}{elem}*", f"{const}{elem}*{restrict} {name}"))
        writer.pointers[arg] = Pointer(name, t)
    return params


def _thread_index(block: Dims) -> str:
    """The declaration of the flattened thread index ``qd_tid``."""
    tid = ["(long long)threadIdx.x"]
    if block[1] > 1:
        tid.append(f"{block[0]} * (long long)threadIdx.y")
    if block[2] > 1:
        tid.append(f"{block[0] * block[1]} * (long long)threadIdx.z")
    return f"const long long {TID} = {' + '.join(tid)};"


def _header(
    writer: KernelWriter,
    bound: Sequence[affine.ForOp],
    grid: Dims,
    block: Dims,
    staging: dict[memref.AllocaOp, Staging],
) -> list[str]:
    """The comments above a function: its launch shape and shared memory."""
    head = []
    if not bound:
        head.append("// serial: no loop is bound to a GPU axis; launch <<<1, 1>>>")
    else:
        shape = ", ".join(
            f"{loop_name(loop)} -> {bound_axis(loop)} ({launch_extent(loop)}"
            f"{', block-stride' if stride_threads(loop) else ''})"
            for loop in bound
        )
        head.append(f"// grid {grid}, block {block}: {shape}")
    if staging:
        shared = ", ".join(
            f"{writer.pointers[s.alloca.memref].name} ({s.nbytes * s.stages} bytes, "
            f"at loop '{s.loop}'{', 2 stages' if s.pipelined else ''})"
            for s in staging.values()
        )
        total = sum(s.nbytes * s.stages for s in staging.values())
        head.append(f"// __shared__ {total} of {MAX_SHARED_BYTES} bytes: {shared}")
    return head


def _used(ops: Sequence[Operation]) -> set[SSAValue]:
    used: set[SSAValue] = set()
    for top in ops:
        for op in top.walk():
            used.update(op.operands)
    return used


def _written(ops: Sequence[Operation]) -> set[SSAValue]:
    """The roots of the memrefs stored to in ``ops``."""
    roots: set[SSAValue] = set()
    for top in ops:
        for op in top.walk():
            if isinstance(op, affine.StoreOp | memref.StoreOp):
                roots.add(root_buffer(op.memref))
            elif isinstance(op, vector.StoreOp):
                roots.add(root_buffer(op.base))
    return roots


def _closure(replicated: Sequence[Operation], used: set[SSAValue]) -> set[Operation]:
    """The replicated ops that ``used`` values need, transitively."""
    needed: set[Operation] = set()
    for op in reversed(replicated):
        if any(r in used for r in op.results):
            needed.add(op)
            used = used | set(op.operands)
    return needed
