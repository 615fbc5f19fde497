"""``update-in-place``: a training step writes each updated weight (and optimizer
state) over the old one, instead of into an output buffer of its own.

    call @k_update(%w, %g, %new_w)   with %new_w an output of @main
        ==>  call @k_update(%w, %g, %w)   (the kernel stores through its %w)

Runs in the ``affine`` stage after ``plan-memory``, when ``qidao.compile`` has an
``optimizer=`` (``apply-optimizer`` names the results ``new_<w>``,
``new_momentum_<w>``, ...). For each output ``new_<n>`` of the host ``@main`` whose
``<n>`` is an input and a weight of ``wrt`` or one of its optimizer states, the
output is written over the input when:

- exactly one call writes the output, the kernel is made of elementwise ops only
  (``plan-memory``'s rule: it reads a same-shaped input at exactly the index it
  writes, before writing it), is called once in the module, and the input and the
  output have the same row-major type;
- the input (not a view of it) is read by calls at or before that call only, and
  the writing call reads it only as an input: so nothing reads the old value after
  the new one is written.

The writing call then gets the input's buffer for its output (the kernel stores
through its input argument, and both lose ``llvm.noalias``: ``plan-memory``'s
``write_in_place``), the output argument of ``@main`` is no longer written, and
``@main`` gets ``qd.in_place = [[output, input], ...]`` (positions among the
outputs and the inputs). The caller must honour it: the step's outputs at those
positions are the inputs' buffers (``qidao.compiler.trainable.TrainingStep``
passes them as the outputs, so no buffer is allocated for them). A pair that
fails a rule keeps its output buffer (the step swaps it in); ``stats["in_place"]``
lists the pairs written in place.

An update fused into the weight gradient's matmul as its epilogue is not
elementwise: the matmul accumulates into the output before the epilogue reads the
old weight, so ``apply-optimizer`` marks its ops ``qd.update`` and ``fuse`` keeps
them out of matmul and convolution epilogues.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import (
    IN_PLACE_ATTR,
    INPUT_NAMES_ATTR,
    NUM_INPUTS_ATTR,
    OUTPUT_NAMES_ATTR,
)
from qidao.passes.kernels._plan_memory_liveness import (
    Access,
    argument_access,
    call_counts,
    functions,
    is_elementwise_label,
    is_plain,
    kernel_label,
)
from qidao.passes.kernels.plan_memory import write_in_place

STATE_PREFIXES = ("momentum_", "exp_avg_", "exp_avg_sq_")
"""The optimizer states of a weight ``w``: ``momentum_w``, ``exp_avg_w``, ..."""


@dataclass(frozen=True)
class UpdateInPlacePass(ModulePass):
    """Write the updated weights and states of ``wrt`` over the old ones."""

    name = "update-in-place"

    wrt: tuple[str, ...] = field(default=())

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = functions(op)
        host = funcs.get("main")
        if host is None or kernel_label(host) is not None or not self.wrt:
            return
        inputs, outputs = (
            _names(host, INPUT_NAMES_ATTR),
            _names(host, OUTPUT_NAMES_ATTR),
        )
        count = host.attributes.get(NUM_INPUTS_ATTR)
        if not isinstance(count, IntegerAttr) or len(host.body.blocks) != 1:
            return
        args = host.body.block.args
        n_in = count.value.data
        held = {*self.wrt, *(p + w for w in self.wrt for p in STATE_PREFIXES)}
        counts = call_counts(op)
        pairs: list[tuple[int, int]] = []
        for j, name in enumerate(outputs):
            base = name.removeprefix("new_")
            if base == name or base not in held or base not in inputs:
                continue
            i = inputs.index(base)
            if n_in + j < len(args) and _update(
                host, args[i], args[n_in + j], funcs, counts
            ):
                pairs.append((j, i))
        if pairs:
            host.attributes[IN_PLACE_ATTR] = ArrayAttr(
                [
                    ArrayAttr([IntegerAttr(j, i64), IntegerAttr(i, i64)])
                    for j, i in pairs
                ]
            )


def _names(host: func.FuncOp, attr: str) -> list[str]:
    names = host.attributes.get(attr)
    if not isinstance(names, ArrayAttr):
        return []
    return [n.data for n in names.data if isinstance(n, StringAttr)]


def _update(
    host: func.FuncOp,
    old: BlockArgument,
    new: BlockArgument,
    funcs: dict[str, func.FuncOp],
    counts: dict[str, int],
) -> bool:
    """Rewrite the call that writes ``new`` to write over ``old`` if the rules of
    the module docstring hold; whether it did."""
    if old.type != new.type or not is_plain(old.type):
        return False
    ops = list(host.body.block.ops)
    position = {o: k for k, o in enumerate(ops)}
    old_uses, new_uses = _call_uses(old), _call_uses(new)
    if old_uses is None or new_uses is None:
        return False  # a copy, a return, a nested use: not this rule's case
    if any(isinstance(v, OpResult) for _, _, v in new_uses):
        return False  # the output is viewed: its writer is not a plain kernel
    writers = []
    for call, index, _ in new_uses:
        kernel = funcs.get(call.callee.string_value())
        access = argument_access(kernel) if kernel is not None else []
        if len(access) != len(call.arguments):
            return False
        if access[index] is not Access.READ:
            writers.append((call, kernel, access, index))
    if len(writers) != 1:
        return False
    call, kernel, access, w = writers[0]
    label = kernel_label(kernel)
    if (
        kernel is None
        or label is None
        or not is_elementwise_label(label)
        or counts.get(call.callee.string_value(), 0) != 1
        or access[w] is not Access.WRITE
    ):
        return False
    at = position[call]
    reads = [(k, v) for c, k, v in old_uses if c is call]
    if not reads or any(v is not old or access[k] is not Access.READ for k, v in reads):
        return False  # the writer must read the weight itself, as an input
    if any(position[c] < at for c, _, _ in new_uses):
        return False  # read before it is written: not an output's use
    later = [c for c, _, _ in old_uses if position[c] > at]
    if later and not _move_after(
        call, max(later, key=position.__getitem__), ops, funcs
    ):
        return False
    i = reads[0][0]
    call.operands[w] = old
    write_in_place(kernel, i, w)
    return True


def _move_after(
    call: func.CallOp,
    last: Operation,
    ops: list[Operation],
    funcs: dict[str, func.FuncOp],
) -> bool:
    """Move ``call`` to just after ``last`` (a later reader of the weight), with
    the deallocs of its buffers that lie between, if nothing between reads its
    results or writes its operands; whether it did."""
    block = call.parent_block()
    assert block is not None
    start, end = ops.index(call), ops.index(last)
    between = ops[start + 1 : end + 1]
    roots = {_root(v) for v in call.operands}
    deallocs: list[memref.DeallocOp] = []
    for op in between:
        if isinstance(op, memref.DeallocOp) and _root(op.memref) in roots:
            deallocs.append(op)
        elif isinstance(op, func.CallOp):
            kernel = funcs.get(op.callee.string_value())
            access = argument_access(kernel) if kernel is not None else []
            if len(access) != len(op.operands):
                return False
            if any(
                _root(v) in roots and a is not Access.READ
                for v, a in zip(op.operands, access, strict=True)
            ):
                return False  # writes what the moved call reads
        elif any(_root(v) in roots for v in op.operands):
            return False  # a view made or a copy: not a plain host
    call.detach()
    block.insert_op_after(call, last)
    anchor: Operation = call
    for d in deallocs:
        d.detach()
        block.insert_op_after(d, anchor)
        anchor = d
    return True


def _root(value: SSAValue) -> SSAValue:
    """The buffer (alloc or argument) that ``value`` views."""
    while isinstance(value, OpResult) and isinstance(
        value.op, memref.ReinterpretCastOp
    ):
        value = value.op.source
    return value


def _call_uses(
    value: SSAValue,
) -> list[tuple[func.CallOp, int, SSAValue]] | None:
    """(call, argument index, the value passed) for every call that gets ``value``
    or a view of it (``memref.reinterpret_cast``); None if anything else uses it."""
    found: list[tuple[func.CallOp, int, SSAValue]] = []
    work = [value]
    while work:
        v = work.pop()
        for use in v.uses:
            op = use.operation
            if isinstance(op, func.CallOp):
                found.append((op, use.index, v))
            elif isinstance(op, memref.ReinterpretCastOp):
                work.append(op.result)
            else:
                return None
    return found
