"""``unroll``: replicate a loop's body ``factor`` times per iteration.

    for i in [lb, ub)                 ==>   for i in [lb, lb + T - T mod F) step F
      body(i)                                 body(i); body(i + 1); ...; body(i + F - 1)
                                            for i_rem in [lb + T - T mod F, ub)
                                              body(i_rem)

Options: ``kernel``, ``loop``, ``factor`` (F; 0 or omitted: unroll fully):
``unroll{kernel="main_k0_fused" loop="i0_i" factor=4}``. ``T`` is the trip count.

Full unroll (``factor=0``, or F at least T): the loop is replaced by T copies of its
body, each with the induction variable a constant folded into the affine maps
(``%x[3]``). Partial: the main loop keeps the name ``<loop>`` and steps by F (times
the loop's step); copy ``k`` reads ``i + k`` (folded into the maps). When F does
not divide T the remaining ``T mod F`` iterations run in a remainder loop named
``<loop>_rem`` after it. Loops nested in the body keep loop names unique: in copy
``k >= 1`` a loop ``j`` becomes ``j_u<k>``, in the remainder loop ``j_rem``. iter_args are threaded through the copies and into the
remainder loop.

``factor=1`` keeps the loop rolled: it marks the loop ``qd.rolled`` (a unit
attribute, and nothing else changes), which goes down with it to its back edge in
LLVM IR as ``!llvm.loop`` metadata with ``llvm.loop.unroll.disable``
(``lower-scf-to-cf``, ``convert-to-llvm``, the CPU emitter), so LLVM does not
unroll it either. LLVM unrolls a loop with a small constant trip count fully on
its own; for a reduction over a row that is wrong: the copies of two passes over
the same row keep every element live in registers and spill (layer norm, see
``qidao/compiler/targets/cpu/defaults/rows.py``). The bounds need not be constants
for ``factor=1``; a main loop made by a later ``unroll`` keeps the mark.

The copies run the iterations in their original order, so unrolling is always
legal. Errors: an unknown kernel or loop; ``factor < 0``; bounds that are not
constants; a kernel that already has a loop named ``<loop>_rem`` (when one is
needed); more than ``MAX_UNROLLED_OPS`` (2^16) ops made (copies x the body's ops).

Before (``unroll{kernel="k" loop="i" factor=2}``):
```mlir
affine.for %i = 0 to 5 {
  %v = affine.load %x[%i] : memref<5xf32>
  affine.store %v, %y[%i] : memref<5xf32>
} {qd.loop = "i"}
```
After:
```mlir
affine.for %i = 0 to 4 step 2 {
  %v = affine.load %x[%i] : memref<5xf32>
  affine.store %v, %y[%i] : memref<5xf32>
  %v_1 = affine.load %x[%i + 1] : memref<5xf32>
  affine.store %v_1, %y[%i + 1] : memref<5xf32>
} {qd.loop = "i"}
affine.for %i_rem = 4 to 5 {
  %v = affine.load %x[%i_rem] : memref<5xf32>
  affine.store %v, %y[%i_rem] : memref<5xf32>
} {qd.loop = "i_rem"}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qidao.dialects.attributes import LOOP_ATTR, ROLLED_ATTR
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
)
from qidao.passes.schedule.loops.nest import (
    body_ops,
    check_new_names,
    constant_map,
    find_loop,
    fold_apply,
    iv,
    loop_name,
    make_loop,
    rebuild_loop,
    rename_nested_loops,
    require_constant_bounds,
    step_of,
)

MAX_UNROLLED_OPS = 1 << 16
"""The most ops one ``unroll`` may make (copies x the body's ops): a full unroll of a
million-iteration loop would take minutes to compile and never pay."""


def unroll_loop(module: ModuleOp, kernel: str, loop: str, factor: int = 0) -> None:
    """Unroll ``loop`` of ``kernel`` by ``factor`` (0: fully)."""
    if factor < 0:
        raise InvalidArgumentError(
            "unroll",
            kernel,
            loop,
            f"factor must be 0 (full unroll) or positive, got {factor}",
        )
    fn, old = find_loop(module, "unroll", kernel, loop)
    if factor == 1:
        old.attributes[ROLLED_ATTR] = UnitAttr()
        return
    lb, ub = require_constant_bounds(old, "unroll", kernel, step_one=False)
    step = step_of(old)
    trips = max(0, -(-(ub - lb) // step))
    nested = [
        str(loop_name(op))
        for op in old.walk()
        if op is not old and isinstance(op, affine.ForOp) and loop_name(op)
    ]
    copies = trips if factor == 0 or factor >= trips else factor
    size = sum(1 for _ in old.body.walk())
    if copies * size > MAX_UNROLLED_OPS:
        raise IllegalScheduleError(
            "unroll",
            kernel,
            loop,
            f"{copies} copies of its body ({size} ops) would be "
            f"{copies * size} ops, more than {MAX_UNROLLED_OPS}: unroll by a "
            "smaller factor",
        )
    new_names = [f"{n}_u{k}" for k in range(1, copies) for n in nested]
    if factor == 0 or factor >= trips:
        check_new_names(fn, new_names, "unroll", kernel, loop)
        _unroll_fully(old, lb, step, trips)
        return
    main_trips = trips - trips % factor
    if trips % factor:
        new_names += [f"{loop}_rem", *(f"{n}_rem" for n in nested)]
    check_new_names(fn, new_names, "unroll", kernel, loop)
    main_end = lb + main_trips * step
    main = make_loop(
        loop, constant_map(lb), constant_map(main_end), old.inits, step * factor
    )
    for key, attr in old.attributes.items():
        main.attributes[key] = attr
    Rewriter.insert_op(main, InsertPoint.before(old))
    carried = _copies(
        old,
        main.body.block,
        list(main.body.block.args[1:]),
        [(iv(main), k * step) for k in range(factor)],
    )
    main.body.block.add_op(affine.YieldOp.get(*carried))
    if trips % factor == 0:
        Rewriter.replace_op(old, [], main.results)
        return
    rest = rebuild_loop(
        old,
        constant_map(main_end),
        (old.upperBoundMap.data, list(old.upperBoundOperands)),
        step,
        inits=list(main.results),
    )
    rename_nested_loops(body_ops(rest), "_rem")
    rest.attributes[LOOP_ATTR] = StringAttr(f"{loop}_rem")
    iv(rest).name_hint = f"{loop}_rem"


def _unroll_fully(old: affine.ForOp, lb: int, step: int, trips: int) -> None:
    block = old.parent_block()
    assert block is not None
    holder = Block()
    carried = _copies(
        old, holder, list(old.inits), [(None, lb + k * step) for k in range(trips)]
    )
    for op in list(holder.ops):
        op.detach()
        block.insert_op_before(op, old)
    Rewriter.replace_op(old, [], carried)


def _copies(
    old: affine.ForOp,
    target: Block,
    carried: list[SSAValue],
    indices: Sequence[tuple[SSAValue | None, int]],
) -> list[SSAValue]:
    """Append a copy of ``old``'s body to ``target`` per ``(base, offset)``, the
    induction variable being ``base + offset`` (or the constant ``offset`` when
    ``base`` is None); return the values yielded by the last copy."""
    body = old.body.block
    ops = list(body.ops)
    terminator = ops[-1]
    for copy_number, (base, offset) in enumerate(indices):
        d0 = AffineExpr.dimension(0)
        if base is None:
            index = affine.ApplyOp([], AffineMapAttr(AffineMap.constant_map(offset)))
        else:
            index = affine.ApplyOp(
                [base], AffineMapAttr(AffineMap(1, 0, (d0 + offset,)))
            )
        target.add_op(index)
        mapper: dict[SSAValue, SSAValue] = {body.args[0]: index.result}
        for arg, value in zip(body.args[1:], carried, strict=True):
            mapper[arg] = value
        copy = [op.clone(value_mapper=mapper) for op in ops[:-1]]
        if copy_number:
            rename_nested_loops(copy, f"_u{copy_number}")
        for op in copy:
            target.add_op(op)
        carried = [mapper.get(v, v) for v in terminator.operands]
        fold_apply(index)
    return carried


@dataclass(frozen=True)
class UnrollPass(ModulePass):
    """Unroll one loop by a factor (0: fully), with a remainder loop when needed."""

    name = "unroll"

    kernel: str
    loop: str
    factor: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        unroll_loop(op, self.kernel, self.loop, self.factor)
