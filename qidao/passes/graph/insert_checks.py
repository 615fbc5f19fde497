"""``insert-checks``: make the run-time domain of gathers, scatters and integer
divisions observable, so that a call can raise where ONNX Runtime and PyTorch raise.

A kernel never traps: an index outside ``[-n, n)`` is clamped and an integer
divisor of 0 gives 0 (``qidao.dialects.tg.domain``, ``docs/semantics.md``). With
``qidao.compile(model, checks=True)`` this pass runs first in the ``tg`` stage and
adds, for each such op, a few extra results of the function that the compiled
model reads after every call (``qidao.compiler.checks``): it raises
``qidao.CheckError`` naming the node if a check failed, and returns the outputs
only if none did.

- ``tg.take`` / ``tg.gather_elements`` on an axis of ``n`` entries: the largest
  index and the largest negated index (so the smallest is minus that), as ``f64``
  scalars; the call fails if the largest is ``>= n`` or the smallest ``< -n``
  (``< 0`` where the op has ``qd.nonnegative_indices``: PyTorch's ``embedding``,
  ``index_select`` and ``gather`` reject negative indices).
  (The indices are cast to ``f64`` first, where negation cannot overflow; the
  comparison stays exact, since rounding keeps the order and ``n < 2^53``.)
- ``tg.scatter_elements``: the same two results for its indices on its axis (a
  kernel skips an out-of-range update). ``tg.scatter_nd`` and ``tg.gather_nd``:
  one such check per component ``j`` of the index tuples, on the column
  ``indices[..., j]`` (a ``tg.slice`` view) against the axis it indexes.
- ``tg.div`` on integers: the count of zero divisors, as an ``f64`` scalar.

The function's ``qd.checks`` lists the checks in result order (``kind``,
``source``: the op's ``qd.source`` or its description, ``size`` of the axis and
``low``, the lowest valid index); ``qd.output_names`` names the new results
``check<k>_<what>``. The checks are ordinary tg ops (casts, negations, comparisons,
reductions) that the later graph passes fuse and fold like any other. No check is
added where it cannot fail: an empty operand, constant indices inside the range, a
constant divisor without a zero. The ops themselves are unchanged (they still clamp
and still give 0), so a failed call has read no memory outside its tensors.

Before:
```mlir
func.func @main(%x: tensor<5xf32>, %i: tensor<2xi64>) -> tensor<2xf32> attributes {qd.output_names = ["y"]} {
  %y = tg.take %x, %i axis = 0 {qd.source = "Gather node 'g'"} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
```
After:
```mlir
func.func @main(%x: tensor<5xf32>, %i: tensor<2xi64>) -> (tensor<2xf32>, tensor<f64>, tensor<f64>) attributes {qd.output_names = ["y", "check0_max", "check0_neg_min"], qd.checks = [{kind = "index", source = "Gather node 'g'", size = 5 : i64, low = -5 : i64}]} {
  %0 = tg.cast %i : tensor<2xi64> -> tensor<2xf64>
  %1 = tg.neg %0 : tensor<2xf64> -> tensor<2xf64>
  %2 = tg.reduce_max %0 axes = [0] : tensor<2xf64> -> tensor<f64>
  %3 = tg.reduce_max %1 axes = [0] : tensor<2xf64> -> tensor<f64>
  %y = tg.take %x, %i axis = 0 {qd.source = "Gather node 'g'"} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %y, %2, %3 : tensor<2xf32>, tensor<f64>, tensor<f64>
}
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    StringAttr,
    f64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects import tg
from qidao.dialects.attributes import (
    CHECKS_ATTR,
    NONNEGATIVE_ATTR,
    OUTPUT_NAMES_ATTR,
    SOURCE_ATTR,
)
from qidao.dialects.tg.base import tensor
from qidao.dialects.tg.domain import has_runtime_domain
from qidao.dialects.tg.types import dtype_name
from qidao.errors import UnsupportedError

RESULTS_PER_KIND = {"index": ("max", "neg_min"), "divisor": ("zeros",)}
"""The extra results of each kind of check, by the name they get."""


class AlreadyCheckedError(UnsupportedError):
    """The function has checks already: running the pass again would double them."""


@dataclass(frozen=True)
class InsertChecksPass(ModulePass):
    """Add the run-time checks of every gather and integer division."""

    name = "insert-checks"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                _check_function(fn)


def _check_function(fn: func.FuncOp) -> None:
    if CHECKS_ATTR in fn.attributes:
        raise AlreadyCheckedError(
            f"insert-checks: @{fn.sym_name.data} has {CHECKS_ATTR} already"
        )
    checks: list[Attribute] = []
    results: list[SSAValue] = []
    names: list[str] = []
    for op in list(fn.walk()):
        if not has_runtime_domain(op):
            continue
        for attr, values in _checks(op):
            kind = attr.data["kind"]
            assert isinstance(kind, StringAttr)
            names += [f"check{len(checks)}_{n}" for n in RESULTS_PER_KIND[kind.data]]
            checks.append(attr)
            results += values
    if not checks:
        return
    ret = fn.body.blocks[-1].last_op
    assert isinstance(ret, func.ReturnOp), "a tg function ends in func.return"
    ret.operands = [*ret.operands, *results]
    fn.function_type = FunctionType.from_lists(
        fn.function_type.inputs.data, [v.type for v in ret.operands]
    )
    fn.attributes[CHECKS_ATTR] = ArrayAttr(checks)
    old = fn.attributes.get(OUTPUT_NAMES_ATTR)
    if isinstance(old, ArrayAttr):
        fn.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr(
            [*old.data, *(StringAttr(n) for n in names)]
        )


Check = tuple[DictionaryAttr, list[SSAValue]]
"""A check's description and its result values."""


def _checks(op: Operation) -> list[Check]:
    """The checks of ``op`` (inserted before it): one per index axis (a k-tuple of
    ``tg.scatter_nd``/``tg.gather_nd`` has k), none where they cannot fail."""
    source = op.attributes.get(SOURCE_ATTR)
    label = source.data if isinstance(source, StringAttr) else _describe(op)
    low_zero = NONNEGATIVE_ATTR in op.attributes
    if isinstance(op, tg.TakeOp | tg.GatherElementsOp):
        size = tensor(op.input).get_shape()[op.normalized_axis()]
        found = _index_check(op, op.indices, size, low_zero, label)
        return [] if found is None else [found]
    if isinstance(op, tg.ScatterElementsOp):
        size = tensor(op.data).get_shape()[op.normalized_axis()]
        found = _index_check(op, op.indices, size, low_zero, label)
        return [] if found is None else [found]
    if isinstance(op, tg.ScatterNdOp | tg.GatherNdOp):
        return _tuple_checks(op, low_zero, label)
    assert isinstance(op, tg.DivOp)
    found = _divisor_check(op, label)
    return [] if found is None else [found]


def _tuple_checks(
    op: tg.ScatterNdOp | tg.GatherNdOp, low_zero: bool, label: str
) -> list[Check]:
    """One index check per component ``j`` of the k-tuples: the column
    ``indices[..., j]`` (a strided view) against axis ``first + j`` of the data."""
    if isinstance(op, tg.GatherNdOp):
        data, first = op.input, op.batch_dims.value.data
    else:
        data, first = op.data, 0
    shape = tensor(data).get_shape()
    index_shape = tensor(op.indices).get_shape()
    constant = _constant(op.indices)
    found: list[Check] = []
    for j in range(index_shape[-1]):
        size = shape[first + j]
        if constant is not None and _inside(constant[..., j], size, low_zero):
            continue
        start = [0] * (len(index_shape) - 1) + [j]
        column = tg.SliceOp(op.indices, start, [*index_shape[:-1], j + 1])
        _insert_before(op, [column])
        where = f"{label}, component {j} of the index tuples (axis {first + j})"
        check = _index_check(op, column.result, size, low_zero, where)
        if check is None:  # an empty column
            column.detach()
            column.erase()
            continue
        found.append(check)
    return found


def _inside(indices: np.ndarray, size: int, low_zero: bool) -> bool:
    """Every one of the constant ``indices`` is inside ``[low, size)``."""
    low = 0 if low_zero else -size
    return bool(np.all((indices >= low) & (indices < size)))


def _index_check(
    op: Operation, indices: SSAValue, size: int, low_zero: bool, label: str
) -> Check | None:
    """The largest index and the largest negated index (inserted before ``op``),
    or None where no index can be outside ``[low, size)``."""
    constant = _constant(indices)
    if _empty(indices) or (constant is not None and _inside(constant, size, low_zero)):
        return None
    ops: list[Operation] = []
    as_float = tg.CastOp(indices, f64)
    negated = tg.NegOp(as_float.result)
    ops += [as_float, negated]
    values = [_reduce(tg.ReduceMaxOp, v, ops) for v in (as_float, negated)]
    _insert_before(op, ops)
    low = 0 if low_zero else -size
    attr: dict[str, str | int] = {
        "kind": "index",
        "source": label,
        "size": size,
        "low": low,
    }
    return _dictionary(attr), values


def _insert_before(op: Operation, ops: list[Operation]) -> None:
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before(ops, op)


def _divisor_check(op: tg.DivOp, label: str) -> Check | None:
    """The count of zero divisors (inserted before ``op``), or None where no
    divisor can be 0."""
    divisor = op.rhs
    constant = _constant(divisor)
    if _empty(op.result) or (constant is not None and bool(np.all(constant != 0))):
        return None
    zero = tg.ConstantOp.from_numpy(
        np.array(0, dtype_name(tensor(divisor).get_element_type()))
    )
    is_zero = tg.EqualOp(divisor, zero.result)
    count = tg.CastOp(is_zero.result, f64)
    ops: list[Operation] = [zero, is_zero, count]
    values = [_reduce(tg.ReduceSumOp, count, ops)]
    _insert_before(op, ops)
    return _dictionary({"kind": "divisor", "source": label}), values


def _reduce(
    kind: type[tg.ReduceMaxOp] | type[tg.ReduceSumOp],
    value: Operation,
    ops: list[Operation],
) -> SSAValue:
    """``kind`` over every element of ``value``'s result (a scalar); the op is
    appended to ``ops``."""
    rank = len(tensor(value.results[0]).get_shape())
    if rank == 0:
        return value.results[0]
    reduced = kind(value.results[0], list(range(rank)))
    ops.append(reduced)
    return reduced.result


def _constant(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    return owner.to_numpy() if isinstance(owner, tg.ConstantOp) else None


def _empty(value: SSAValue) -> bool:
    return math.prod(tensor(value).get_shape()) == 0


def _describe(op: Operation) -> str:
    types = ", ".join(str(o.type) for o in op.operands)
    axis = getattr(op, "axis", None)
    where = f" on axis {axis.value.data}" if isinstance(axis, IntegerAttr) else ""
    return f"{op.name} of ({types}){where}"


def _dictionary(fields: dict[str, str | int]) -> DictionaryAttr:
    return DictionaryAttr(
        {
            k: StringAttr(v) if isinstance(v, str) else IntegerAttr(v, 64)
            for k, v in fields.items()
        }
    )
