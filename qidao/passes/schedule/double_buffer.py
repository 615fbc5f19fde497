"""``double_buffer``: mark a serial loop whose body starts with ``cache_read``
staging copies, so that the GPU emitter copies iteration ``k + 1``'s tiles while
iteration ``k`` computes on two stages of each ``__shared__`` buffer.

    for k in [lb, ub)                 ==>   for k in [lb, ub) {qd.double_buffer}
      buf = alloca; buf = src[.., k]          (the same IR: only the mark)
      body(buf)

The rewrite is a mark (``qd.double_buffer``, a unit attribute on the loop): the
IR keeps its meaning, and every target that does not know the mark runs it as
before. The CUDA emitter (``qidao/compiler/targets/cuda/emit/pipeline.py``)
gives each staging buffer of the loop that it stages in ``__shared__`` two
stages, copies iteration ``lb``'s tiles before the loop and iteration ``k + 1``'s
during iteration ``k`` (``cp.async`` on sm_80+), so the loads overlap the math.

Options: ``kernel``, ``loop``: ``double-buffer{kernel="main_k0_matmul"
loop="k_o_o"}``.

What it checks, all before it marks (a refused request leaves the module as it
was), each refusal a ``ScheduleError`` subclass naming the kernel and the loop:

1. the loop exists, has constant bounds and step 1 (``NonConstantBoundsError``),
   runs at least 2 iterations, is not bound to a hardware axis, carries no
   ``iter_args`` and is not marked already (``IllegalScheduleError``);
2. its body starts with staging copies (:func:`staged_copies`): a
   ``memref.alloca`` followed by its copy nest ``<holder>_cr_i0, _i1, ...``
   (``cache_read``'s) whose innermost body stores a load into the buffer at the
   copy counters, directly at the top of the loop's body, or at the top of a loop
   of one trip (``k_o_i``, ``split(k_o, 1)``'s) that comes right after them;
3. the buffer each copy reads (its root) is not written anywhere in the kernel:
   the copy of iteration ``k + 1`` runs before iteration ``k`` is done, so it
   must read what the copy of ``k + 1`` would have read;
4. the copy's indices and the bounds of its loops use only the copy counters,
   the loop's counter, the counter of the loop of one trip (its lower bound, 0),
   and values defined outside the loop: the emitter writes the copy again before
   the loop (at ``k = lb``) and at the top of the body (at ``k + 1``).

How much ``__shared__`` memory the doubled buffers take (twice the tile each,
at most 48 KiB a block) is known only when the emitter decides which buffers are
``__shared__`` (``staging.py``): it refuses a launch over the limit, naming the
kernel and the loop.

Before (``double-buffer{kernel="k" loop="k_o"}``):
```mlir
affine.for %k_o = 0 to 4 {
  %w_pack = memref.alloca() : memref<16xf32>
  affine.for %k_o_cr_i0 = 0 to 16 {
    %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
    affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
  } {qd.loop = "k_o_cr_i0"}
  affine.for %k_i = 0 to 16 { ... %w_pack[%k_i] ... } {qd.loop = "k_i"}
} {qd.loop = "k_o"}
```
After: the same loop with ``{qd.loop = "k_o", qd.double_buffer}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, UnitAttr
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import DOUBLE_BUFFER_ATTR
from qidao.passes.schedule.bind import bound_axis
from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.nest import (
    constant_bounds,
    constant_of,
    find_loop,
    iv,
    loop_name,
    require_constant_bounds,
    root_buffer,
    step_of,
)

WRITES = ("affine.store", "memref.store", "vector.store", "affine.vector_store")
"""The ops that write their memref operand (a copy's source must have none)."""


@dataclass
class StagedCopy:
    """A ``cache_read`` buffer at the top of a double-buffered loop's body:
    its alloca, its copy loops (outer first), the load the copy reads with, and
    the loop whose body it heads (the marked loop, or its loop of one trip)."""

    alloca: memref.AllocaOp
    loops: list[affine.ForOp]
    load: affine.LoadOp
    holder: affine.ForOp


def is_double_buffered(loop: Operation) -> bool:
    return isinstance(loop, affine.ForOp) and DOUBLE_BUFFER_ATTR in loop.attributes


def one_trip(loop: affine.ForOp) -> bool:
    """A serial loop of exactly one iteration, without ``iter_args``."""
    bounds = constant_bounds(loop)
    return (
        bounds is not None
        and bounds[1] - bounds[0] == 1
        and step_of(loop) == 1
        and bound_axis(loop) is None
        and not loop.inits
    )


def staged_copies(loop: affine.ForOp) -> list[StagedCopy]:
    """The staging copies at the top of ``loop``'s body, then at the top of the
    loop of one trip right after them (the module docstring's rule 2)."""
    found = _leading_copies(loop)
    ops = list(loop.body.block.ops)
    after = ops[2 * len(found)] if len(ops) > 2 * len(found) else None
    if isinstance(after, affine.ForOp) and one_trip(after):
        found += _leading_copies(after)
    return found


def _leading_copies(holder: affine.ForOp) -> list[StagedCopy]:
    found: list[StagedCopy] = []
    ops = list(holder.body.block.ops)
    for alloca, first in zip(ops[::2], ops[1::2], strict=False):
        copy = _copy_nest(holder, alloca, first)
        if copy is None:
            break
        found.append(copy)
    return found


def _copy_nest(
    holder: affine.ForOp, alloca: Operation, first: Operation
) -> StagedCopy | None:
    """``alloca`` and its copy nest ``<holder>_cr_i0 ...`` starting at ``first``."""
    if not isinstance(alloca, memref.AllocaOp) or not isinstance(first, affine.ForOp):
        return None
    t = alloca.memref.type
    if not isinstance(t, MemRefType) or not t.get_shape():
        return None
    prefix = f"{loop_name(holder)}_cr_i"
    loops: list[affine.ForOp] = []
    op: Operation | None = first
    for d in range(len(t.get_shape())):
        if not isinstance(op, affine.ForOp) or loop_name(op) != f"{prefix}{d}":
            return None
        loops.append(op)
        body = [o for o in op.body.block.ops if not isinstance(o, affine.YieldOp)]
        op = body[0] if len(body) == 1 else None
        if d == len(t.get_shape()) - 1:
            if len(body) != 2:
                return None
            load, store = body
            if not (
                isinstance(load, affine.LoadOp)
                and isinstance(store, affine.StoreOp)
                and store.value is load.result
                and store.memref is alloca.memref
            ):
                return None
            return StagedCopy(alloca, loops, load, holder)
    return None


def _inside(value: SSAValue, loop: affine.ForOp) -> bool:
    """True when ``value`` is defined inside ``loop`` (its counter included)."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        return owner is not None and loop.is_ancestor(owner)
    assert isinstance(value, OpResult)
    return loop.is_ancestor(value.op)


def double_buffer_loop(module: ModuleOp, kernel: str, loop: str) -> None:
    """Mark ``loop`` of ``kernel`` double-buffered, after the checks above."""
    fn, target = find_loop(module, "double-buffer", kernel, loop)
    lb, ub = require_constant_bounds(target, "double-buffer", kernel)

    def refuse(reason: str) -> IllegalScheduleError:
        return IllegalScheduleError("double-buffer", kernel, loop, reason)

    if ub - lb < 2:
        raise refuse(
            f"it runs {max(0, ub - lb)} iteration(s) ([{lb}, {ub})); double "
            "buffering overlaps the copy of one iteration with the work of the "
            "one before, so it needs at least 2"
        )
    if bound_axis(target) is not None:
        raise refuse(
            f"it is bound to {bound_axis(target)}; only a serial loop runs its "
            "iterations one after the other"
        )
    if target.inits:
        raise refuse("it carries values (iter_args); expected a loop without them")
    if is_double_buffered(target):
        raise refuse("it is double-buffered already")
    copies = staged_copies(target)
    if not copies:
        raise refuse(
            "its body does not start with a cache_read staging copy (a "
            "memref.alloca followed by its copy loops '<loop>_cr_i0 ...', at the "
            "top of the body or of a loop of one trip at its top); cache_read "
            "a buffer at this loop first"
        )
    written = {root_buffer(_written(op)) for op in fn.walk() if op.name in WRITES}
    for copy in copies:
        _check_copy(target, copy, written, refuse)
    target.attributes[DOUBLE_BUFFER_ATTR] = UnitAttr()


def _written(op: Operation) -> SSAValue:
    """The memref a store writes (its operand of memref type)."""
    return next(v for v in op.operands if isinstance(v.type, MemRefType))


def _check_copy(
    target: affine.ForOp,
    copy: StagedCopy,
    written: set[SSAValue],
    refuse: Callable[[str], IllegalScheduleError],
) -> None:
    """Rules 3 and 4 of the module docstring for one copy."""
    name = f"%{copy.alloca.memref.name_hint or 'buffer'}"
    source = root_buffer(copy.load.memref)
    if source in written:
        raise refuse(
            f"the copy into {name} reads %{source.name_hint or 'a buffer'}, which "
            "the kernel writes; the copy of the next iteration runs before this "
            "one is done, so its source must not change"
        )
    allowed = {iv(lp) for lp in copy.loops} | {iv(target), iv(copy.holder)}
    operands = list(copy.load.indices)
    for lp in copy.loops:
        operands += [*lp.lowerBoundOperands, *lp.upperBoundOperands]
    for v in operands:
        if v in allowed or not _inside(v, target):
            continue
        what = f"%{v.name_hint}" if v.name_hint else "a value"
        raise refuse(
            f"the copy into {name} uses {what}, computed inside the loop; its "
            "indices and bounds may use only the copy's counters, the loop's "
            "counter, the counter of a loop of one trip and values defined "
            "outside the loop (the copy is written again for the next iteration)"
        )
    if (
        copy.holder is not target
        and constant_of(copy.holder.lowerBoundMap.data) is None
    ):
        raise refuse(f"the loop of one trip around {name} has no constant start")


@dataclass(frozen=True)
class DoubleBufferPass(ModulePass):
    """Mark a serial loop with staging copies at its top double-buffered."""

    name = "double-buffer"

    kernel: str
    loop: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        double_buffer_loop(op, self.kernel, self.loop)


__all__ = [
    "DoubleBufferPass",
    "StagedCopy",
    "double_buffer_loop",
    "is_double_buffered",
    "one_trip",
    "staged_copies",
]
