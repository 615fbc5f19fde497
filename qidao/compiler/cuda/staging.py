"""Which ``cache_read`` buffers of a launch become ``__shared__`` staging buffers.

The rules are in ``emit.py``'s docstring ("Shared memory"); this file finds the
buffers that follow them (:func:`find_staging`) and refuses, with a
``CudaEmitError`` naming the kernel, the loop and the reason, the ones that are
placed for sharing but cannot be shared safely (non-uniform control around them,
over 48 KiB per block). An alloca that is not a ``cache_read`` buffer, or that sits
inside a ``threadIdx`` loop or outside every ``blockIdx`` loop, stays a per-thread
local array, as ``bind``'s rule 4 assumes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import Float64Type, IndexType, IntegerType, MemRefType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineSymExpr
from xdsl.traits import is_side_effect_free

from qidao.passes._loops import constant_of, iv, loop_name, step_of
from qidao.passes.bind import BLOCK_AXES, THREAD_AXES, bound_axis, launch_extent

MAX_SHARED_BYTES = 48 * 1024
"""CUDA's limit on static ``__shared__`` memory per block; more is refused."""


class StagingError(ValueError):
    """A ``cache_read`` buffer placed for sharing that cannot be shared (the emitter
    raises it as a ``CudaEmitError``)."""


@dataclass
class Staging:
    """A ``cache_read`` buffer staged in ``__shared__`` memory.

    ``loops`` are its copy loops ``<loop>_cr_i<d>`` (outer first; their bodies
    are run cooperatively by the block's threads), ``extents`` the buffer's shape.
    ``repeats`` is set when a serial loop is around it: the block that holds it
    runs more than once, so a barrier ends it before the next copy overwrites it.
    """

    alloca: memref.AllocaOp
    loop: str
    loops: list[affine.ForOp]
    extents: list[int]
    nbytes: int
    repeats: bool

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


def _staging(fn: func.FuncOp, kernel: str, alloca: memref.AllocaOp) -> Staging | None:
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
    if any(axis in THREAD_AXES for axis in axes):
        return None  # inside a threadIdx loop: each thread's own copy
    if not any(axis in BLOCK_AXES for axis in axes):
        return None  # outside every blockIdx loop: no block to share it
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
    itemsize = _itemsize(t.get_element_type())
    return Staging(
        alloca,
        name,
        loops,
        extents,
        math.prod(extents) * itemsize,
        any(isinstance(a, affine.ForOp) and bound_axis(a) is None for a in around),
    )


def _itemsize(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        width: int = t.width.data
        return max(1, width // 8)
    if isinstance(t, Float64Type | IndexType):
        return 8
    return 4


def find_staging(
    fn: func.FuncOp, kernel: str, function: str, ops: Sequence[Operation]
) -> dict[memref.AllocaOp, Staging]:
    """The ``__shared__`` staging buffers of one launch (``ops``, its top-level
    ops; ``function``, its ``__global__`` name), by alloca."""
    found: dict[memref.AllocaOp, Staging] = {}
    for top in ops:
        for op in top.walk():
            if isinstance(op, memref.AllocaOp):
                staging = _staging(fn, kernel, op)
                if staging is not None:
                    found[op] = staging
    total = sum(s.nbytes for s in found.values())
    if total > MAX_SHARED_BYTES:
        each = ", ".join(
            f"%{s.alloca.memref.name_hint or 'buffer'} at loop '{s.loop}': "
            f"{s.nbytes} bytes"
            for s in found.values()
        )
        raise StagingError(
            f"kernel '{kernel}': launch '{function}': its __shared__ staging "
            f"buffers take {total} bytes ({each}), over the {MAX_SHARED_BYTES} bytes "
            "(48 KiB) of shared memory a block may use; cache_read a smaller tile "
            "(split the loops inside the cached loop by less)"
        )
    return found


__all__ = ["MAX_SHARED_BYTES", "Staging", "StagingError", "find_staging"]
