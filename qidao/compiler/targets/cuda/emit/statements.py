"""The statements of a kernel body: one op at a time, loops and ``if``.

A bound loop ``for i in [lb, ub) step s`` becomes ``i = lb + s * blockIdx.x`` in
a scope of its own (the launch has exactly the loop's extent on that axis), with
a guard ``if (i < ...)`` only for the non-constant results of a ``min`` upper
bound. Other loops are C ``for`` loops (``iter_args`` as variables updated at the
end of the body); ``affine.if`` an ``if``; ``affine.apply``/``min`` index
arithmetic; ``affine.load``/``store`` and ``memref.load``/``store`` an element of
a pointer (``writer.py``). ``memref.alloca`` (and ``alloc``) is a local C array,
per thread; the staging buffers among them are ``shared_memory.py``'s. Anything
else with one result is an arith or math op (``scalar_ops.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, MemRefType, VectorType
from xdsl.ir import Block, Operation
from xdsl.ir.affine import AffineConstantExpr

from qidao.compiler.targets.cuda.emit.affine_exprs import affine_set_c, fold
from qidao.compiler.targets.cuda.emit.block_loops import BlockLoopWriter
from qidao.compiler.targets.cuda.emit.c_types import (
    c_type,
    float_literal,
    int_literal,
    layout_of,
    np_dtype,
    span_of,
)
from qidao.compiler.targets.cuda.emit.scalar_ops import scalar_expression
from qidao.compiler.targets.cuda.emit.vectors import is_vector_op, write_vector_op
from qidao.compiler.targets.cuda.emit.wmma import write_wmma
from qidao.compiler.targets.cuda.emit.writer import Pointer
from qidao.passes.schedule.bind import bound_axis, stride_threads
from qidao.passes.schedule.loops.nest import MEMREF_VIEWS, constant_bounds, loop_name

MAX_LOCAL_BYTES = 512 * 1024
"""CUDA's limit on local memory per thread; a bigger local array is refused."""

Access = affine.LoadOp | affine.StoreOp | memref.LoadOp | memref.StoreOp


def upper_guards(name: str, upper: Sequence[str], loop: affine.ForOp) -> list[str]:
    """``name < u`` for each non-constant result ``u`` of ``loop``'s upper bound:
    the guards of a loop that is not a C ``for``."""
    return [
        f"{name} < {u}"
        for u, r in zip(upper, loop.upperBoundMap.data.results, strict=True)
        if not isinstance(r, AffineConstantExpr)
    ]


class StatementWriter(BlockLoopWriter):
    """Writes the ops of a kernel body as C statements."""

    single_stores: frozenset[Operation] = frozenset()
    """Stores that one thread of each row makes (``threadIdx.x == 0``): those
    around block-stride loops (``loops/block.py`` rule 5)."""

    def block(self, block: Block) -> None:
        """The ops of ``block`` (``KernelWriter`` adds the staging barriers)."""
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if write_wmma(self, op):  # a tensorized tile and its fragments (wmma.py)
            return
        if isinstance(op, affine.YieldOp | func.ReturnOp):
            return  # handled by the parent
        if isinstance(op, arith.ConstantOp):
            self.constant(op)
        elif isinstance(op, affine.ForOp):
            self.loop(op)
        elif isinstance(op, affine.IfOp):
            self.if_op(op)
        elif isinstance(op, affine.LoadOp | memref.LoadOp):
            self.define(op.results[0], self.access(op.memref, self.indices(op), op))
        elif isinstance(op, affine.StoreOp | memref.StoreOp):
            ref = self.access(op.memref, self.indices(op), op)
            if op in self.single_stores:
                self.line(f"if (threadIdx.x == 0) {ref} = {self.name(op.value)};")
            else:
                self.line(f"{ref} = {self.name(op.value)};")
        elif isinstance(op, affine.ApplyOp):
            (expr,) = self.map_indices(op.map.data, op.mapOperands)
            self.define(op.result, expr)
        elif isinstance(op, affine.MinOp):
            items = self.map_indices(op.map.data, op.operands)
            self.define(op.result, fold("min", items))
        elif isinstance(op, memref.AllocaOp | memref.AllocOp):
            self.local_array(op)
        elif isinstance(op, memref.DeallocOp):
            return
        elif isinstance(op, MEMREF_VIEWS):
            self.view(op)
        elif is_vector_op(op):
            write_vector_op(self, op)
        elif len(op.results) != 1 or op.regions:
            raise self.fail(op, "the CUDA emitter does not know this op")
        else:
            self.define(op.results[0], self.expression(op))

    # -- values and memory ----------------------------------------------------

    def constant(self, op: arith.ConstantOp) -> None:
        """A scalar constant: no statement, its C literal is its name."""
        value = op.value
        if isinstance(value, FloatAttr):
            self.names[op.result] = float_literal(value.value.data, value.type)
        elif isinstance(value, IntegerAttr):
            self.names[op.result] = int_literal(value.value.data, value.type)
        else:
            raise self.fail(op, f"constant {value} is not a scalar")

    def indices(self, op: Access) -> list[str]:
        """The C indices of a load or a store."""
        if isinstance(op, affine.LoadOp | affine.StoreOp):
            return self.map_indices(op.map.data, op.indices)
        return [self.name(v) for v in op.indices]

    def local_array(self, op: memref.AllocaOp | memref.AllocOp) -> None:
        """A per-thread C array, in registers or local memory."""
        t = op.memref.type
        assert isinstance(t, MemRefType)
        size = span_of(t, self.kernel)
        elem = c_type(t.get_element_type())
        if size * np.dtype(np_dtype(t.get_element_type())).itemsize > MAX_LOCAL_BYTES:
            raise self.fail(
                op,
                f"a local array of {size} elements is over CUDA's "
                f"{MAX_LOCAL_BYTES} bytes of local memory per thread",
            )
        name = self.fresh(op.memref.name_hint, "buf")
        self.line(f"{elem} {name}[{max(size, 1)}];")
        self.pointers[op.memref] = Pointer(name, t)

    def view(self, op: Operation) -> None:
        """A view: its source's pointer, read with the view's type."""
        source = self.pointers.get(op.operands[0])
        view_type = op.results[0].type
        if source is None or not isinstance(view_type, MemRefType):
            raise self.fail(op, "views a memref the emitter cannot trace")
        layout_of(view_type, self.kernel)
        if isinstance(op, memref.SubviewOp) and len(op.operands) > 1:
            raise self.fail(op, "dynamic subviews are not supported")
        self.pointers[op.results[0]] = Pointer(source.name, view_type)

    def expression(self, op: Operation) -> str:
        args = [self.name(v) for v in op.operands]
        text = scalar_expression(op, args)
        if text is None:
            raise self.fail(op, "the CUDA emitter does not know this op")
        return text

    # -- structure ------------------------------------------------------------

    def loop(self, op: affine.ForOp) -> None:
        if stride_threads(op) is not None:
            self.block_stride_loop(op)
            return
        name = self.fresh(loop_name(op) or op.body.block.args[0].name_hint, "i")
        self.names[op.body.block.args[0]] = name
        axis = bound_axis(op)
        lower = self.map_indices(op.lowerBoundMap.data, op.lowerBoundOperands)
        upper = self.map_indices(op.upperBoundMap.data, op.upperBoundOperands)
        carried = self.iter_args(op)
        if axis is not None:
            guards = self.open_bound_loop(op, name, axis, lower[0], upper)
        else:
            self.open_serial_loop(op, name, lower, upper)
            guards = []
        self.block(op.body.block)
        self.assign_yield(op.body.block, carried)
        synced = self.synced
        if axis is not None and guards:
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
        bounds = constant_bounds(op)
        runs = axis is not None or (bounds is not None and bounds[1] > bounds[0])
        self.synced = synced and runs and not guards

    def iter_args(self, op: affine.ForOp) -> list[str]:
        """The loop's ``iter_args`` as C variables set to their initial values."""
        carried: list[str] = []
        for init, arg, result in zip(
            op.inits, op.body.block.args[1:], op.results, strict=True
        ):
            if isinstance(arg.type, VectorType):
                raise self.fail(
                    op,
                    f"loop '{loop_name(op)}' carries a {arg.type} (a vectorized "
                    "reduction): the CUDA emitter takes vector loads, stores and "
                    "arithmetic, not vector accumulators; combine the row with "
                    "block_stride instead",
                )
            var = self.fresh(arg.name_hint or result.name_hint, "acc")
            self.line(f"{c_type(arg.type)} {var} = {self.name(init)};")
            self.names[arg] = var
            self.names[result] = var
            carried.append(var)
        return carried

    def open_bound_loop(
        self, op: affine.ForOp, name: str, axis: str, lb: str, upper: Sequence[str]
    ) -> list[str]:
        """The scope of a bound loop, its counter and its guard; the guard's
        tests (empty when it needs none)."""
        step = op.step.value.data
        offset = f"{step} * (long long){axis}" if step != 1 else f"(long long){axis}"
        start = offset if lb == "0" else f"{lb} + {offset}"
        self.line(f"{{  // loop '{loop_name(op)}' bound to {axis}")
        self.depth += 1
        self.line(f"const long long {name} = {start};")
        guards = upper_guards(name, upper, op)
        if guards:
            self.line(f"if ({' && '.join(guards)}) {{")
            self.depth += 1
        return guards

    def open_serial_loop(
        self,
        op: affine.ForOp,
        name: str,
        lower: list[str],
        upper: list[str],
    ) -> None:
        """The head of a C ``for`` loop."""
        step = op.step.value.data
        lb = fold("max", lower)
        ub = fold("min", upper)
        increment = f"++{name}" if step == 1 else f"{name} += {step}"
        self.line(f"for (long long {name} = {lb}; {name} < {ub}; {increment}) {{")
        self.depth += 1

    def assign_yield(self, block: Block, targets: Sequence[str]) -> None:
        """``targets`` (loop-carried or ``if`` results) set to what ``block``
        yields, through temporaries when there are several."""
        if not targets:
            return
        terminator = block.last_op
        assert terminator is not None
        values = [self.name(v) for v in terminator.operands]
        if len(targets) == 1:
            if values[0] != targets[0]:
                self.line(f"{targets[0]} = {values[0]};")
            return
        temps = []
        for value, target in zip(values, targets, strict=True):
            temp = self.fresh(f"{target}_next")
            self.line(f"const auto {temp} = {value};")
            temps.append(temp)
        for temp, target in zip(temps, targets, strict=True):
            self.line(f"{target} = {temp};")

    def if_op(self, op: affine.IfOp) -> None:
        condition = op.properties["condition"]
        affine_set = condition.data  # type: ignore[attr-defined]
        names = [self.name(v) for v in op.operands]
        dims, syms = names[: affine_set.num_dims], names[affine_set.num_dims :]
        test = affine_set_c(affine_set, dims, syms)
        results = []
        for result in op.results:
            var = self.fresh(result.name_hint, "r")
            self.line(f"{c_type(result.type)} {var};")
            self.names[result] = var
            results.append(var)
        self.line(f"if ({test}) {{")
        self.depth += 1
        self.block(op.then_region.block)
        self.assign_yield(op.then_region.block, results)
        self.depth -= 1
        if op.else_region.blocks and (list(op.else_region.block.ops)[:-1] or results):
            self.line("} else {")
            self.depth += 1
            self.block(op.else_region.block)
            self.assign_yield(op.else_region.block, results)
            self.depth -= 1
        self.line("}")
