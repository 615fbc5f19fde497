"""Which ``cache_read`` buffers of a launch become ``__shared__`` staging buffers.

The rules are in ``emit/``'s docstring ("Shared memory"); this file finds the
buffers that follow them (:func:`find_staging`) and refuses, with a
``CudaEmitError`` naming the kernel, the loop and the reason, the ones that are
placed for sharing but cannot be shared safely (non-uniform control around them,
over 48 KiB per block). An alloca that is not a ``cache_read`` buffer, or that sits
outside every ``blockIdx`` loop, stays a per-thread local array, as ``bind``'s
rule 4 assumes.

Inside ``threadIdx`` loops a ``cache_read`` buffer is each thread's own slice (the
register-tiled matmul: thread ``ty`` packs rows ``ty * 4 .. ty * 4 + 3`` of the
block's tile of A, every thread of that row of threads the same rows). It is
staged too when the slices tile a block-wide box (:func:`_thread_slices`): the
``__shared__`` array holds every slice, side by side along the dimension whose
index the thread counter moves by exactly the slice's extent (``a[4 * ty + r,
k]`` with 4 rows a slice: the 16 slices of 4 rows are the block's 64 rows, in
the source's order), the block's threads copy all of it together, and each thread
reads its slice at ``ty * 4 + r``. It stays per-thread (valid, just not shared)
unless: the ``threadIdx`` loops around it have no guard (every thread reaches the
barriers), the code around it is uniform as in rule 3, the copy reads a buffer
the launch does not write, each thread counter it uses moves one dimension by
the slice's extent, and some threads share a slice (else there is nothing to
share).

A buffer whose copy heads a ``double_buffer``ed loop (:func:`pipelined_loop`) is
``Staging.pipelined``: ``emit/pipeline.py`` keeps two stages of it, so it counts
twice against the 48 KiB; the defaults call :func:`double_buffer_step`, which asks
for two stages only when they fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineSymExpr
from xdsl.traits import is_side_effect_free

from qidao.errors import QidaoError
from qidao.passes.schedule.bind import (
    BLOCK_AXES,
    THREAD_AXES,
    bound_axis,
    gpu_loops,
    launch_extent,
    needs_guard,
)
from qidao.passes.schedule.double_buffer import (
    is_double_buffered,
    one_trip,
    staged_copies,
)
from qidao.passes.schedule.loops.errors import ScheduleError
from qidao.passes.schedule.loops.linear import Linear, linear_form
from qidao.passes.schedule.loops.nest import (
    constant_of,
    iv,
    loop_name,
    root_buffer,
    step_of,
)

if TYPE_CHECKING:
    from qidao.compiler.schedule import Schedule

MAX_SHARED_BYTES = 48 * 1024
"""CUDA's limit on static ``__shared__`` memory per block; more is refused."""


class StagingError(QidaoError, ValueError):
    """A ``cache_read`` buffer placed for sharing that cannot be shared (the emitter
    raises it as a ``CudaEmitError``)."""


@dataclass
class Staging:
    """A ``cache_read`` buffer staged in ``__shared__`` memory.

    ``loops`` are its copy loops ``<loop>_cr_i<d>`` (outer first; their bodies
    are run cooperatively by the block's threads), ``extents`` the buffer's shape.
    ``repeats`` is set when a serial loop is around it: the block that holds it
    runs more than once, so a barrier ends it before the next copy overwrites it.
    ``slices`` (a buffer inside ``threadIdx`` loops): dimension ``d`` -> the thread
    counter that picks a slice along it and the number of slices; the
    ``__shared__`` array has ``shape``, and a thread's slice starts at
    ``counter * extents[d]`` along ``d``.
    """

    alloca: memref.AllocaOp
    loop: str
    loops: list[affine.ForOp]
    extents: list[int]
    nbytes: int
    repeats: bool
    slices: dict[int, tuple[SSAValue, int]] = field(default_factory=dict)
    pipelined: affine.ForOp | None = None
    """The ``double_buffer``ed loop whose body starts with its copy
    (``emit/pipeline.py``): two stages of ``shape``, ``2 * nbytes`` bytes."""

    @property
    def stages(self) -> int:
        return 2 if self.pipelined is not None else 1

    @property
    def shape(self) -> list[int]:
        """The shape of the ``__shared__`` array: ``extents``, times the number of
        slices along the dimensions threads slice."""
        return [
            extent * self.slices[d][1] if d in self.slices else extent
            for d, extent in enumerate(self.extents)
        ]

    @property
    def order(self) -> list[int]:
        """The dimensions of ``shape`` in memory, outer first: the sliced ones
        last, so that a thread's slice is contiguous where it reads along them
        (the register tile reads ``tm`` rows of A at one k: with A's tile stored
        k-major, two 16-byte loads instead of eight, and threads of different
        slices hit different banks)."""
        rank = len(self.extents)
        sliced = [d for d in range(rank) if d in self.slices and self.extents[d] > 1]
        return [d for d in range(rank) if d not in sliced] + sliced

    @property
    def strides(self) -> list[int]:
        """The stride of each dimension of ``shape`` (in elements), laid out in
        ``order``."""
        shape, strides = self.shape, [0] * len(self.extents)
        step = 1
        for d in reversed(self.order):
            strides[d] = step
            step *= shape[d]
        return strides

    @property
    def block(self) -> Block:
        parent = self.alloca.parent_block()
        assert parent is not None
        return parent

    @property
    def source(self) -> SSAValue:
        """The memref the copy reads."""
        load = next(iter(self.loops[-1].body.block.ops))
        assert isinstance(load, affine.LoadOp)
        return load.memref


def _copy_loops(alloca: memref.AllocaOp) -> list[affine.ForOp] | None:
    """The copy nest ``cache_read`` put right after ``alloca``, or None when the
    alloca is not a ``cache_read`` buffer of that shape."""
    parent = alloca.parent_op()
    t = alloca.memref.type
    if not isinstance(parent, affine.ForOp) or not isinstance(t, MemRefType):
        return None
    name = loop_name(parent)
    shape = t.get_shape()
    if name is None or not shape or any(n <= 0 for n in shape):
        return None
    loops: list[affine.ForOp] = []
    op: Operation | None = alloca.next_op
    first = loop_name(op) if isinstance(op, affine.ForOp) else None
    if first is None or not first.startswith(f"{name}_cr") or first[-3:] != "_i0":
        return None
    prefix = first[:-1]  # <loop>_cr_i
    for d, extent in enumerate(shape):
        if (
            not isinstance(op, affine.ForOp)
            or loop_name(op) != f"{prefix}{d}"
            or op.inits
            or bound_axis(op) is not None
            or step_of(op) != 1
            or constant_of(op.lowerBoundMap.data) != 0
            or launch_extent(op) != extent
        ):
            return None
        loops.append(op)
        body = [o for o in op.body.block.ops if not isinstance(o, affine.YieldOp)]
        op = body[0] if len(body) == 1 else None
        if d == len(shape) - 1:
            op = None
            if not _is_copy(body, alloca.memref, [iv(lp) for lp in loops]):
                return None
    return loops


def _is_copy(body: Sequence[Operation], target: SSAValue, ivs: list[SSAValue]) -> bool:
    """``target[i0, ..., in] = load(...)``: each point of the nest writes its own
    element, so the points can be spread over threads."""
    if len(body) != 2:
        return False
    load, store = body
    if not (
        isinstance(load, affine.LoadOp)
        and isinstance(store, affine.StoreOp)
        and store.value is load.result
        and store.memref is target
        and load.memref is not target
    ):
        return False
    affine_map = store.map.data
    operands = list(store.indices)
    indices: list[SSAValue] = []
    for r in affine_map.results:
        if isinstance(r, AffineDimExpr):
            indices.append(operands[r.position])
        elif isinstance(r, AffineSymExpr):
            indices.append(operands[affine_map.num_dims + r.position])
        else:
            return False
    return len(indices) == len(ivs) and all(
        a is b for a, b in zip(indices, ivs, strict=True)
    )


def _only_read_after_copy(alloca: memref.AllocaOp, loops: list[affine.ForOp]) -> bool:
    """Every use of the buffer but the copy's store is a load (views or other
    writes keep it per-thread)."""
    store = list(loops[-1].body.block.ops)[1]
    return all(
        use.operation is store
        or isinstance(use.operation, affine.LoadOp | memref.LoadOp)
        for use in alloca.memref.uses
    )


def _uniform(value: SSAValue) -> bool:
    """True when ``value`` is the same in every thread of a block: built by pure ops
    from constants and the counters of loops that are not ``threadIdx`` loops."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        return (
            isinstance(owner, affine.ForOp)
            and value.index == 0
            and bound_axis(owner) not in THREAD_AXES
        )
    op = value.owner
    assert isinstance(op, Operation)
    return (
        is_side_effect_free(op)
        and not op.regions
        and all(_uniform(v) for v in op.operands)
    )


def _staging(
    fn: func.FuncOp,
    kernel: str,
    alloca: memref.AllocaOp,
    threads: int,
    written: set[SSAValue],
) -> Staging | None:
    """``threads``: the launch's threads per block; ``written``: the buffers (roots)
    the launch stores to."""
    loops = _copy_loops(alloca)
    if loops is None or not _only_read_after_copy(alloca, loops):
        return None
    parent = alloca.parent_op()
    assert isinstance(parent, affine.ForOp)
    name = str(loop_name(parent))
    buffer = f"%{alloca.memref.name_hint or 'the buffer'}"
    around: list[Operation] = []
    op: Operation | None = parent
    while op is not None and op is not fn:
        around.append(op)
        op = op.parent_op()
    axes = [bound_axis(a) for a in around if isinstance(a, affine.ForOp)]
    if not any(axis in BLOCK_AXES for axis in axes):
        return None  # outside every blockIdx loop: no block to share it
    if any(axis in THREAD_AXES for axis in axes):
        return _thread_slices(fn, alloca, name, loops, around, threads, written)
    for a in around:
        if isinstance(a, affine.ForOp):
            operands = [*a.lowerBoundOperands, *a.upperBoundOperands]
            what = f"the bounds of loop '{loop_name(a)}'"
        elif isinstance(a, affine.IfOp):
            operands = list(a.operands)
            what = "the condition of an affine.if"
        else:
            raise StagingError(
                f"kernel '{kernel}': loop '{name}': {buffer} cannot be staged in "
                f"__shared__ memory: '{a.name}' around it is not an affine loop or "
                "condition, so the emitter cannot tell that every thread of the "
                "block reaches its __syncthreads()"
            )
        if not all(_uniform(v) for v in operands):
            raise StagingError(
                f"kernel '{kernel}': loop '{name}': {buffer} cannot be staged in "
                f"__shared__ memory: {what} around it use a value loaded from "
                "memory or carried by iter_args, which the emitter does not prove "
                "to be the same in every thread of the block; every thread must "
                "reach the __syncthreads() around the copy, so only constants and "
                "loop counters may bound the code around a staging buffer"
            )
    t = alloca.memref.type
    assert isinstance(t, MemRefType)
    extents = list(t.get_shape())
    itemsize = element_bytes(t.get_element_type())
    return Staging(
        alloca,
        name,
        loops,
        extents,
        math.prod(extents) * itemsize,
        any(isinstance(a, affine.ForOp) and bound_axis(a) is None for a in around),
    )


def element_bytes(t: Attribute) -> int:
    """The bytes of one element of type ``t`` (4 for f32, 8 for f64 and index)."""
    if isinstance(t, IntegerType):
        width: int = t.width.data
        return max(1, width // 8)
    if isinstance(t, Float64Type | IndexType):
        return 8
    return 4


def _noalias(fn: func.FuncOp, root: SSAValue) -> bool:
    """False for a kernel argument without ``llvm.noalias`` (it may be another
    argument's memory)."""
    if not (isinstance(root, BlockArgument) and root.owner is fn.body.block):
        return True
    attrs = fn.arg_attrs
    entry = attrs.data[root.index] if attrs is not None else None
    return isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data


def _thread_slices(
    fn: func.FuncOp,
    alloca: memref.AllocaOp,
    name: str,
    loops: list[affine.ForOp],
    around: list[Operation],
    threads: int,
    written: set[SSAValue],
) -> Staging | None:
    """A ``cache_read`` buffer inside ``threadIdx`` loops staged as the slices of a
    block-wide box (module docstring), or None: it stays each thread's own."""
    counters: dict[SSAValue, int] = {}  # thread counter -> its extent
    for a in around:
        if isinstance(a, affine.ForOp) and bound_axis(a) in THREAD_AXES:
            extent = launch_extent(a)
            if (
                needs_guard(a)
                or extent is None
                or constant_of(a.lowerBoundMap.data) != 0
                or step_of(a) != 1
            ):
                return None  # some threads would skip the barriers
            counters[iv(a)] = extent
        elif isinstance(a, affine.ForOp):
            operands = [*a.lowerBoundOperands, *a.upperBoundOperands]
            if not all(_uniform(v) for v in operands):
                return None
        elif isinstance(a, affine.IfOp):
            if not all(_uniform(v) for v in a.operands):
                return None
        else:
            return None
    load = next(iter(loops[-1].body.block.ops))
    assert isinstance(load, affine.LoadOp)
    source = root_buffer(load.memref)
    if source in written or (
        not _noalias(fn, source) and not all(_noalias(fn, w) for w in written)
    ):
        return None  # another thread may write what the copy reads
    ivs = {iv(loop): d for d, loop in enumerate(loops)}
    affine_map = load.map.data
    results: list[Linear] = []
    for r in affine_map.results:
        terms = linear_form(r, list(load.indices), affine_map.num_dims)
        if terms is None:
            return None
        results.append(terms)
    t = alloca.memref.type
    assert isinstance(t, MemRefType)
    extents = list(t.get_shape())
    slices: dict[int, tuple[SSAValue, int]] = {}
    for terms in results:
        used = [v for v in terms if v is not None and v in counters]
        for v in terms:
            if v is not None and v not in counters and v not in ivs and not _uniform(v):
                return None
        if not used:
            continue
        dims = [ivs[v] for v in terms if v is not None and v in ivs]
        if len(used) != 1 or len(dims) != 1:
            return None  # a counter with another, or in no copy dimension
        (counter,), (d,) = used, dims
        if (
            terms[iv(loops[d])] != 1
            or terms[counter] != extents[d]  # slices side by side, no overlap
            or d in slices
            or any(counter is c for c, _ in slices.values())
        ):
            return None
        slices[d] = (counter, counters[counter])
    for d, loop in enumerate(loops):  # the clipped bounds of the copy
        for v in loop.upperBoundOperands:
            inner = {iv(lp) for lp in loops[:d]}
            if v in inner or _uniform(v):
                continue
            if not any(v is c for c, _ in slices.values()):
                return None
    if not slices or math.prod(n for _, n in slices.values()) >= threads:
        return None  # nothing to share
    shape = [e * slices[d][1] if d in slices else e for d, e in enumerate(extents)]
    return Staging(
        alloca,
        name,
        loops,
        extents,
        math.prod(shape) * element_bytes(t.get_element_type()),
        any(isinstance(a, affine.ForOp) and bound_axis(a) is None for a in around),
        slices,
    )


def find_staging(
    fn: func.FuncOp, kernel: str, function: str, ops: Sequence[Operation]
) -> dict[memref.AllocaOp, Staging]:
    """The ``__shared__`` staging buffers of one launch (``ops``, its top-level
    ops; ``function``, its ``__global__`` name), by alloca."""
    found: dict[memref.AllocaOp, Staging] = {}
    threads = math.prod(
        launch_extent(loop) or 1
        for top in ops
        for loop in gpu_loops(top)
        if bound_axis(loop) in THREAD_AXES
    )
    written: set[SSAValue] = {
        root_buffer(op.memref)
        for top in ops
        for op in top.walk()
        if isinstance(op, affine.StoreOp | memref.StoreOp)
    }
    for top in ops:
        for op in top.walk():
            if isinstance(op, memref.AllocaOp):
                staging = _staging(fn, kernel, op, threads, written)
                if staging is not None:
                    found[op] = staging
    for staging in found.values():  # (emit/pipeline.py)
        staging.pipelined = pipelined_loop(staging.alloca)
    total = sum(s.nbytes * s.stages for s in found.values())
    if total > MAX_SHARED_BYTES:
        each = ", ".join(
            f"%{s.alloca.memref.name_hint or 'buffer'} at loop '{s.loop}': "
            + (
                f"2 x {s.nbytes} bytes (double-buffered at loop "
                f"'{loop_name(s.pipelined)}')"
                if s.pipelined is not None
                else f"{s.nbytes} bytes"
            )
            for s in found.values()
        )
        raise StagingError(
            f"kernel '{kernel}': launch '{function}': its __shared__ staging "
            f"buffers take {total} bytes ({each}), over the {MAX_SHARED_BYTES} bytes "
            "(48 KiB) of shared memory a block may use; cache_read a smaller tile "
            "(split the loops inside the cached loop by less), or do not "
            "double_buffer the loop"
        )
    return found


def double_buffer_step(s: Schedule, kernel: str, loop: str, staged_bytes: int) -> str:
    """A default schedule's last step: ``double_buffer`` ``loop`` (the k-tile loop
    whose body stages ``staged_bytes`` of ``__shared__`` memory a block) when it
    runs at least twice and two stages fit in ``MAX_SHARED_BYTES``; what it did,
    or why not (the schedule goes on without it)."""
    trips = s.extents(kernel).get(loop)
    if trips is None or trips < 2:
        return f"{loop} not double-buffered: it runs {trips} time(s), not 2 or more"
    if 2 * staged_bytes > MAX_SHARED_BYTES:
        return (
            f"{loop} not double-buffered: two stages of its {staged_bytes} bytes of "
            f"__shared__ staging would take {2 * staged_bytes} bytes, over "
            f"{MAX_SHARED_BYTES}"
        )
    try:
        s.double_buffer(kernel, loop)
    except ScheduleError as err:
        return f"{loop} not double-buffered: {err.reason}"
    return f"{loop} double-buffered ({2 * staged_bytes} bytes of __shared__)"


def pipelined_loop(alloca: memref.AllocaOp) -> affine.ForOp | None:
    """The ``double_buffer``ed loop whose body (or whose loop of one trip's body)
    starts with the copy into ``alloca``, or None."""
    holder = alloca.parent_op()
    if not isinstance(holder, affine.ForOp):
        return None
    candidates = [holder]
    outer = holder.parent_op()
    if isinstance(outer, affine.ForOp) and one_trip(holder):
        candidates.append(outer)
    for loop in candidates:
        if is_double_buffered(loop) and any(
            c.alloca is alloca for c in staged_copies(loop)
        ):
            return loop
    return None


__all__ = [
    "MAX_SHARED_BYTES",
    "Staging",
    "StagingError",
    "double_buffer_step",
    "element_bytes",
    "find_staging",
    "pipelined_loop",
]
