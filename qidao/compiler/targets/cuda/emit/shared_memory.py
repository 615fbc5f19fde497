"""``__shared__`` staging buffers in the kernel body: their declarations, their
copies dealt out to the block's threads, and the ``__syncthreads()`` barriers.

Which buffers are staged, and why that is safe, is ``../staging.py``'s and the
package docstring's ("Shared memory", "Slices"). :class:`KernelWriter` is the
statement writer of ``statements.py`` with those buffers: the writer of a launch.

Barriers: one after each run of copies (before any read), merged with the one of
a copy at the top of a serial loop right after it that runs at least once; and,
when a serial loop is around a buffer, one that ends the block holding it,
left out when that block's last statement already was a barrier every thread ran.

A ``double_buffer``ed loop's buffers (``Staging.pipelined``) are written by
``pipeline.py`` instead: two stages, declared and first copied before the loop,
one barrier an iteration.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue

from qidao.compiler.targets.cuda.emit.c_types import c_type
from qidao.compiler.targets.cuda.emit.statements import StatementWriter, upper_guards
from qidao.compiler.targets.cuda.emit.writer import TID, Pointer
from qidao.compiler.targets.cuda.staging import Staging
from qidao.passes.schedule.bind import bound_axis
from qidao.passes.schedule.loops.nest import constant_bounds, loop_name, root_buffer


class KernelWriter(StatementWriter):
    """Writes the C body of one launch of one kernel."""

    def __init__(
        self,
        fn: func.FuncOp,
        kernel: str,
        staging: dict[memref.AllocaOp, Staging] | None = None,
        threads: int = 1,
    ) -> None:
        super().__init__(fn, kernel)
        self.staging = staging or {}
        self.copies = {s.loops[0]: s for s in self.staging.values()}
        self.repeated = {
            s.block for s in self.staging.values() if s.repeats and not s.pipelined
        }
        self.pipelined = {s.pipelined for s in self.staging.values() if s.pipelined}
        """``double_buffer``ed loops with ``__shared__`` buffers: ``pipeline.py``'s
        ``PipelineWriter`` writes them, their buffers' declarations and copies
        (this writer leaves those out)."""
        self.threads = threads
        self.carried: list[str] = []
        """Staging buffers copied just before the loop being entered, whose
        barrier the copies at the top of its body give (``stages_first``)."""

    def op(self, op: Operation) -> None:
        if isinstance(op, affine.ForOp) and op in self.copies:
            return  # a staging copy is written by ``block``
        if isinstance(op, memref.AllocaOp) and op in self.staging:
            if self.staging[op].pipelined:
                return  # declared by ``write_pipelined``
            self.declare_shared(op, self.staging[op])
            return
        super().op(op)

    def block(self, block: Block) -> None:
        """The ops of ``block``; a ``__syncthreads()`` after each run of staging
        copies, and one at the end when a staging buffer of this block is copied
        again by the next iteration of a loop around it."""
        # staging buffers written since the last barrier (with those of the block
        # around, when its barrier was left to the copies at the top of this one)
        pending, self.carried = self.carried, []
        for op in block.ops:
            copy = self.copies.get(op) if isinstance(op, affine.ForOp) else None
            if copy is not None and copy.pipelined:
                continue  # written by ``write_pipelined``
            if copy is not None:
                source = root_buffer(copy.source)
                if any(source is s.alloca.memref for s in self.staging.values()):
                    self.barrier(pending)  # it copies a buffer staged just before
                self.staged_copy(copy)
                pending.append(self.pointers[copy.alloca.memref].name)
            elif isinstance(op, memref.AllocaOp) and op in self.staging:
                pass
            elif pending and self.stages_first(op):
                self.carried, pending = pending, []  # one barrier after both copies
            else:
                self.barrier(pending)
            self.op(op)
        self.barrier(pending)
        if block in self.repeated and not self.synced:
            # (when the last statement was a barrier that every thread ran after
            # its last read, this one would add nothing)
            self.end_barrier(block)

    def barrier(self, pending: list[str]) -> None:
        if pending:
            self.line(f"__syncthreads();  // {', '.join(pending)} staged")
            pending.clear()

    def end_barrier(self, block: Block) -> None:
        """The barrier that ends ``block``: the next copy into its staging
        buffers waits for every thread's reads."""
        staged = [
            self.pointers[s.alloca.memref].name
            for s in self.staging.values()
            if s.block is block and s.repeats
        ]
        self.line(
            f"__syncthreads();  // the next copy into {', '.join(staged)} waits "
            "for every thread's reads"
        )

    def stages_first(self, op: Operation) -> bool:
        """True when ``op`` is a serial loop that runs at least once and begins
        with a staging copy: the barrier after the copies before it can wait for
        the barrier after that copy (one barrier for both)."""
        if not isinstance(op, affine.ForOp) or bound_axis(op) or op.inits:
            return False
        if op in self.pipelined:
            return False  # its copies are before it, with their own barrier
        bounds = constant_bounds(op)
        first = op.body.block.first_op
        return (
            bounds is not None
            and bounds[1] > bounds[0]
            and isinstance(first, memref.AllocaOp)
            and first in self.staging
        )

    def declare_shared(self, op: memref.AllocaOp, staging: Staging) -> str:
        """The ``__shared__`` array of a staging buffer, with a comment on its
        shape, its layout and its slices (two stages of it when it is
        double-buffered); its C name."""
        t = op.memref.type
        assert isinstance(t, MemRefType)
        elem = c_type(t.get_element_type())
        name = self.fresh(op.memref.name_hint, "buf")
        shape = " x ".join(map(str, staging.shape))
        what = "staged by the block's threads"
        if staging.slices:
            slices = ", ".join(
                f"{n} slices along dimension {d} by {self.name(counter)}"
                for d, (counter, n) in staging.slices.items()
            )
            what = f"each thread's {' x '.join(map(str, staging.extents))} slice ({slices}), {what}"
        if staging.order != sorted(staging.order):
            shape += f", stored in dimension order {staging.order}"
        size = str(math.prod(staging.shape))
        if staging.pipelined is not None:  # two stages (``pipeline.py``)
            size = f"2 * {size}"
            shape = f"2 stages of {shape}"
            what += f", double-buffered at loop '{loop_name(staging.pipelined)}'"
        self.line(
            f"__shared__ __align__(32) {elem} {name}[{size}];  // {shape}: {what}"
        )
        self.pointers[op.memref] = Pointer(name, t, staging)
        return name

    def staged_copy(
        self, staging: Staging, point: Callable[[], None] | None = None
    ) -> None:
        """The copy nest of a staging buffer, its points spread over the block's
        threads: point ``q`` is run by thread ``q % threads``. ``point`` writes
        one point instead of the copy's load and store (``pipeline.py``'s
        ``cp.async``)."""
        total = math.prod(staging.shape)
        q = self.fresh(f"{staging.loop}_cr")
        self.line(
            f"for (long long {q} = {TID}; {q} < {total}; {q} += {self.threads}) {{"
        )
        self.depth += 1
        saved = {c: self.names[c] for c, _ in staging.slices.values()}
        names = self.copy_point(staging, q, saved)
        guards = []
        for loop, name in zip(staging.loops, names, strict=True):
            upper = self.map_indices(loop.upperBoundMap.data, loop.upperBoundOperands)
            guards += upper_guards(name, upper, loop)
        if guards:
            self.line(f"if ({' && '.join(guards)}) {{")
            self.depth += 1
        if point is not None:
            point()
        else:
            for op in staging.loops[-1].body.block.ops:
                self.op(op)
        if guards:
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
        self.names.update(saved)

    def copy_point(
        self, staging: Staging, q: str, saved: dict[SSAValue, str]
    ) -> list[str]:
        """The copy loops' counters at the flattened point ``q`` (and, for a
        sliced dimension, whose slice and where in it); their C names."""
        shape = staging.shape
        total = math.prod(shape)
        names = []
        inner = total
        for d, (loop, extent) in enumerate(zip(staging.loops, shape, strict=True)):
            inner //= extent
            name = self.fresh(loop_name(loop), "i")
            self.names[loop.body.block.args[0]] = name
            names.append(name)
            index = q if inner == 1 else f"{q} / {inner}"
            if extent == 1:
                index = "0"
            elif inner * extent != total:
                index = f"({index}) % {extent}" if inner != 1 else f"{q} % {extent}"
            if d in staging.slices:  # which slice, and where in it
                counter, _ = staging.slices[d]
                slice_extent = staging.extents[d]
                point = self.fresh(f"{name}_s")
                self.line(f"const long long {point} = {index};")
                which = self.fresh(f"{saved[counter]}_s")
                self.line(f"const long long {which} = {point} / {slice_extent};")
                self.names[counter] = which
                index = f"{point} % {slice_extent}"
            self.line(f"const long long {name} = {index};")
        return names
