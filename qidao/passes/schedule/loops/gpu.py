"""What a GPU binding is on a loop: the attributes ``bind`` and ``block_stride`` set,
and the readers every GPU pass and the CUDA emitter share (``qd.bind``: the axis;
``qd.threads``: a block-stride loop's threads; a bound loop's launch extent and
guard). Writing them, and the legality of doing so, is ``bind.py``'s and
``block_stride.py``'s."""

from __future__ import annotations

from xdsl.dialects import affine, func, memref, vector
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineConstantExpr

from qidao.dialects.attributes import BIND_ATTR, THREADS_ATTR
from qidao.passes.schedule.loops.nest import constant_of, root_buffer, step_of

BLOCK_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
GPU_AXES = BLOCK_AXES + THREAD_AXES
AXES = ("threads", *GPU_AXES)
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = {"x": 1024, "y": 1024, "z": 64}
MAX_GRID_DIM = {"x": 2**31 - 1, "y": 65535, "z": 65535}


def bound_axis(loop: Operation) -> str | None:
    """The GPU axis ``loop`` is bound to (``qd.bind``), or None."""
    attr = loop.attributes.get(BIND_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def stride_threads(loop: Operation) -> int | None:
    """The threads of a block-stride loop (``qd.threads``, set by ``block_stride``),
    or None for any other loop."""
    attr = loop.attributes.get(THREADS_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def gpu_loops(op: Operation) -> list[affine.ForOp]:
    """The GPU-bound loops in ``op`` (a kernel or a nest), outer before inner."""
    return [
        loop
        for loop in op.walk()
        if isinstance(loop, affine.ForOp) and bound_axis(loop) is not None
    ]


def top_level_nest(kernel_fn: func.FuncOp, op: Operation) -> Operation:
    """The op of the kernel's body that holds ``op`` (its loop nest)."""
    while op.parent_block() is not kernel_fn.body.block:
        parent = op.parent_op()
        assert parent is not None, "the op is not inside the kernel"
        op = parent
    return op


def launch_extent(loop: affine.ForOp) -> int | None:
    """The iterations a bound loop spans (its launch dimension): a constant lower
    bound and the smallest constant result of its upper bound map; else None. A
    block-stride loop spans its threads, whatever its bounds."""
    threads = stride_threads(loop)
    if threads is not None:
        return threads
    lb = constant_of(loop.lowerBoundMap.data)
    upper = loop.upperBoundMap.data
    if lb is None or upper.num_symbols:
        return None
    constants = [r.value for r in upper.results if isinstance(r, AffineConstantExpr)]
    if not constants:
        return None
    return max(0, -(-(min(constants) - lb) // step_of(loop)))


def needs_guard(loop: affine.ForOp) -> bool:
    """True when the upper bound has non-constant results (``min(256, N - 256 o)``):
    some points of the launch must skip the body."""
    return any(
        not isinstance(r, AffineConstantExpr) for r in loop.upperBoundMap.data.results
    )


def accessed_memref(op: Operation) -> SSAValue:
    """The memref a load or a store (affine, memref or vector) accesses."""
    if isinstance(op, vector.LoadOp | vector.StoreOp):
        return op.base
    assert isinstance(
        op, affine.LoadOp | affine.StoreOp | memref.LoadOp | memref.StoreOp
    ), op
    return op.memref


def allocated_in(value: SSAValue, scope: Operation) -> bool:
    """True when the buffer behind ``value`` is allocated inside ``scope`` (each
    thread's own, in a GPU nest)."""
    root = root_buffer(value)
    return (
        isinstance(root, OpResult)
        and isinstance(root.owner, memref.AllocOp | memref.AllocaOp)
        and scope.is_ancestor(root.owner)
    )


__all__ = [
    "AXES",
    "BLOCK_AXES",
    "GPU_AXES",
    "MAX_BLOCK_DIM",
    "MAX_GRID_DIM",
    "MAX_THREADS_PER_BLOCK",
    "THREAD_AXES",
    "accessed_memref",
    "allocated_in",
    "bound_axis",
    "gpu_loops",
    "launch_extent",
    "needs_guard",
    "stride_threads",
    "top_level_nest",
]
