"""``peel``: the last iteration of a loop becomes a copy of its own, so the bounds
that depend on the loop are constants in both parts.

    for i_o in [lb, ub)                  ==>   for i_o in [lb, ub - 1)
      for i_i in [0, min(F, N - F * i_o))        for i_i in [0, F)
        body(i_o, i_i)                             body(i_o, i_i)
                                               for i_o_t in [ub - 1, ub)
                                                 for i_i_t in [0, N mod F)
                                                   body(i_o_t, i_i_t)

What it is for: ``split`` by a factor F that does not divide N gives the inner loop
the bound ``min(F, N - F * i_o)``, which ``unroll`` and ``vectorize`` cannot take.
Peeling the outer loop's last tile leaves the main part an inner loop of exactly F
iterations and the tail one of ``N mod F``; both can then be unrolled. A matmul of
197 rows tiles its C by 8 rows this way (24 tiles of 8 and one of 5) instead of by
the one row that divides 197 (see ``compiler/targets/cpu/defaults/matmul.py``).

Options: ``kernel`` (the kernel's function name), ``loop`` (its ``qd.loop`` name)
and ``suffix`` (default ``_t``: ``'_'`` and letters, digits or ``'_'``), e.g.
``peel{kernel="main_k0_matmul" loop="i_o"}``. A second peel in the same nest names
its copy's loops apart with another suffix (the matmul default peels the last
column panel with ``_p`` and the last row tile with ``_t``).

The rule: ``loop``, with constant bounds ``[lb, ub)`` and step 1, keeps the
iterations ``[lb, ub - 1)``; a copy of it (and of everything in its body), named
``<loop><suffix>``, runs the last one, ``[ub - 1, ub)``, right after it. Every named loop in
the copy is renamed ``<name><suffix>`` (``qd.loop`` and the induction variable's name), so
loop names stay unique. iter_args flow from the first part into the copy. Then, in
each part, a bound of a loop in its body becomes a constant when it is one over the
part's range of ``loop``: an upper bound (the min of its map's results) whose map
reads only ``loop``'s induction variable has the value C over the range when one of
its results is C at every iteration and none is ever below C; a result is known over
the range when the range is one iteration, or when it has no ``mod``/``floordiv``/
``ceildiv`` (linear in the induction variable: its extremes are at the ends). A
lower bound (the max) likewise. Other bounds stay as they are.

The two parts run the iterations of the loop, in their order, so peeling is always
legal (index-set splitting); it never changes a result.

Errors (``ScheduleError`` subclasses, naming kernel and loop): an unknown kernel or
loop; bounds that are not constants or a step other than 1
(``NonConstantBoundsError``); a loop of fewer than two iterations, or one with no
bound in its body that peeling makes constant: there is nothing to peel, and the
copy would only grow the code (``IllegalScheduleError``); a suffix that is not
``'_'`` and letters, digits or ``'_'`` (``InvalidArgumentError``); a kernel that already has
one of the copy's names (``DuplicateLoopNameError``). All checks come before the
first change to the IR.

Before (``peel{kernel="k" loop="i_o"}``, after ``split`` of a loop of 10 by 4):
```mlir
affine.for %i_o = 0 to 3 {
  affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
    %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
    affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
  } {qd.loop = "i_i"}
} {qd.loop = "i_o"}
```
After:
```mlir
affine.for %i_o = 0 to 2 {
  affine.for %i_i = 0 to 4 {
    %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
    affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
  } {qd.loop = "i_i"}
} {qd.loop = "i_o"}
affine.for %i_o_t = 2 to 3 {
  affine.for %i_i_t = 0 to 2 {
    %v_1 = affine.load %x[%i_o_t * 4 + %i_i_t] : memref<10xf32>
    affine.store %v_1, %y[%i_o_t * 4 + %i_i_t] : memref<10xf32>
  } {qd.loop = "i_i_t"}
} {qd.loop = "i_o_t"}
```
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
)
from qidao.passes.schedule.loops.nest import (
    check_new_names,
    constant_map,
    find_loop,
    iv,
    loop_name,
    rename_nested_loops,
    require_constant_bounds,
    set_bounds,
)

SUFFIX = "_t"

Bounds = tuple[int | None, int | None]
"""The constants a nested loop's (lower, upper) bound becomes in one part (None:
the bound stays)."""


def peel_loop(module: ModuleOp, kernel: str, loop: str, suffix: str = SUFFIX) -> str:
    """Peel the last iteration of ``loop`` of ``kernel`` into a copy whose loops
    are named ``<name><suffix>``; return the copy's name."""
    if not re.fullmatch(r"_[A-Za-z0-9_]+", suffix):
        raise InvalidArgumentError(
            "peel",
            kernel,
            loop,
            f"the suffix must be '_' and letters, digits or '_', got {suffix!r}",
        )
    fn, old = find_loop(module, "peel", kernel, loop)
    lb, ub = require_constant_bounds(old, "peel", kernel)
    if ub - lb < 2:
        raise IllegalScheduleError(
            "peel",
            kernel,
            loop,
            f"it runs {max(0, ub - lb)} iteration(s): there is no last one to peel",
        )
    nested = [op for op in old.walk() if op is not old and isinstance(op, affine.ForOp)]
    main_plan = [_constant_bounds(op, iv(old), lb, ub - 2) for op in nested]
    tail_plan = [_constant_bounds(op, iv(old), ub - 1, ub - 1) for op in nested]
    if all(b == (None, None) for b in main_plan + tail_plan):
        raise IllegalScheduleError(
            "peel",
            kernel,
            loop,
            "no loop bound in its body depends on it in a way peeling makes "
            "constant: there is nothing to peel",
        )
    names = [str(loop_name(op)) for op in nested if loop_name(op) is not None]
    check_new_names(fn, [n + suffix for n in [loop, *names]], "peel", kernel, loop)

    tail = old.clone()
    Rewriter.insert_op(tail, InsertPoint.after(old))
    for old_result, tail_result in zip(old.results, tail.results, strict=True):
        old_result.replace_all_uses_with(tail_result)
    bounds = len(tail.operands) - len(old.results)  # the operands before inits
    tail.operands = [*tail.operands[:bounds], *old.results]
    set_bounds(old, constant_map(lb), constant_map(ub - 1))
    set_bounds(tail, constant_map(ub - 1), constant_map(ub))
    rename_nested_loops([tail], suffix)
    tail_nested = [
        op for op in tail.walk() if op is not tail and isinstance(op, affine.ForOp)
    ]
    _apply(nested, main_plan)
    _apply(tail_nested, tail_plan)
    return loop + suffix


def _apply(loops: Sequence[affine.ForOp], plan: Sequence[Bounds]) -> None:
    for op, (lower, upper) in zip(loops, plan, strict=True):
        if lower is None and upper is None:
            continue
        set_bounds(
            op,
            (op.lowerBoundMap.data, list(op.lowerBoundOperands))
            if lower is None
            else constant_map(lower),
            (op.upperBoundMap.data, list(op.upperBoundOperands))
            if upper is None
            else constant_map(upper),
        )


def _constant_bounds(
    op: affine.ForOp, value: SSAValue, first: int, last: int
) -> Bounds:
    """The constants ``op``'s bounds are while ``value`` runs over ``[first, last]``
    (None for a bound that is not one, or already was)."""
    lower = _constant_over(
        op.lowerBoundMap.data, op.lowerBoundOperands, value, first, last, upper=False
    )
    upper = _constant_over(
        op.upperBoundMap.data, op.upperBoundOperands, value, first, last, upper=True
    )
    return lower, upper


def _constant_over(
    bound: AffineMap,
    operands: Sequence[SSAValue],
    value: SSAValue,
    first: int,
    last: int,
    upper: bool,
) -> int | None:
    """The constant that ``bound`` (the min of its results when ``upper``, else the
    max) is while ``value`` runs over ``[first, last]``, or None when it may vary,
    reads another value, or reads none (it is a constant already)."""
    if not operands or any(v is not value for v in operands):
        return None
    ranges: list[tuple[int, int]] = []
    for result in bound.results:
        known = _range(result, bound, first, last)
        if known is None:
            return None
        ranges.append(known)
    if upper:
        extreme = min(low for low, _ in ranges)
    else:
        extreme = max(high for _, high in ranges)
    if (extreme, extreme) in ranges:
        return extreme
    return None


def _range(
    expr: AffineExpr, bound: AffineMap, first: int, last: int
) -> tuple[int, int] | None:
    """The least and greatest value of ``expr``, a result of ``bound`` whose every
    dim and symbol is the same value, over ``[first, last]``, when known."""
    nonlinear = (
        AffineBinaryOpKind.Mod,
        AffineBinaryOpKind.FloorDiv,
        AffineBinaryOpKind.CeilDiv,
    )
    if first != last and any(
        isinstance(e, AffineBinaryOpExpr) and e.kind in nonlinear for e in expr.dfs()
    ):
        return None
    dims, symbols = bound.num_dims, bound.num_symbols
    at_first = expr.eval([first] * dims, [first] * symbols)
    at_last = expr.eval([last] * dims, [last] * symbols)
    return min(at_first, at_last), max(at_first, at_last)


@dataclass(frozen=True)
class PeelPass(ModulePass):
    """Peel the last iteration of a loop into ``<loop>_t``, making the bounds that
    depend on it constants in both parts."""

    name = "peel"

    kernel: str
    loop: str
    suffix: str = SUFFIX

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        peel_loop(op, self.kernel, self.loop, self.suffix)
