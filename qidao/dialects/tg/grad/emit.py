"""``Emit``: builds the tg ops of a backward graph, in order, before one anchor op.

A vjp rule (``qidao.dialects.tg.grad``) writes its gradient as calls on an ``Emit``:

```python
def _mul(e: Emit, op: MulOp, g: SSAValue) -> Grads:
    return [e.sum_to(e.mul(g, op.rhs), op.lhs), e.sum_to(e.mul(g, op.lhs), op.rhs)]
```

Each method builds one tg op (its constructor infers the result type), inserts it
before the anchor (the ``func.return`` of the function being differentiated) and
returns its result. Python scalars become rank-0 constants of the other operand's
element type, so ``e.mul(g, 0.5)`` keeps f32 as f32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.dialects.tg.cast import CastOp
from qidao.dialects.tg.compare import (
    EqualOp,
    GreaterEqualOp,
    GreaterOp,
    LessOp,
    LogicalAndOp,
    LogicalNotOp,
    SelectOp,
)
from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.elementwise import (
    AddOp,
    CosOp,
    DivOp,
    ExpOp,
    LogOp,
    MulOp,
    NegOp,
    PowOp,
    SinOp,
    SqrtOp,
    SubOp,
)
from qidao.dialects.tg.indexing import ConcatOp, GatherOp, SliceOp
from qidao.dialects.tg.layout_ops import (
    BroadcastOp,
    ContiguousOp,
    ReshapeOp,
    TransposeOp,
)
from qidao.dialects.tg.linalg import MatmulOp
from qidao.dialects.tg.pad import PadOp
from qidao.dialects.tg.reduce import ReduceSumOp
from qidao.dialects.tg.types import dtype_name, element_of, is_row_major, shape_of

Operand = SSAValue | float
"""An operand of an ``Emit`` method: a tensor value, or a Python scalar."""


def shape(value: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor value."""
    return shape_of(value.type)


class Emit:
    """Inserts tg ops before ``anchor`` and hands back their results."""

    def __init__(self, anchor: Operation) -> None:
        self.anchor = anchor

    def op(self, op: Operation) -> SSAValue:
        """Insert ``op`` before the anchor; its (first) result."""
        block = self.anchor.parent_block()
        assert block is not None, "the anchor op is not in a block"
        block.insert_op_before(op, self.anchor)
        return op.results[0]

    # --- constants ---------------------------------------------------------------

    def constant(self, value: float | np.ndarray, like: SSAValue) -> SSAValue:
        """``value`` (a scalar: rank 0) in ``like``'s element type."""
        dtype = dtype_name(element_of(like.type))
        return self.op(ConstantOp.from_numpy(np.asarray(value, dtype=dtype)))

    def full(self, shape_: Sequence[int], value: float, like: SSAValue) -> SSAValue:
        """A tensor of ``shape_`` filled with ``value``, ``like``'s element type."""
        dtype = dtype_name(element_of(like.type))
        return self.op(ConstantOp.from_numpy(np.full(tuple(shape_), value, dtype)))

    def zeros_like(self, value: SSAValue) -> SSAValue:
        return self.full(shape(value), 0.0, value)

    def _pair(self, a: Operand, b: Operand) -> tuple[SSAValue, SSAValue]:
        if isinstance(a, SSAValue) and isinstance(b, SSAValue):
            return a, b
        if isinstance(a, SSAValue):
            assert not isinstance(b, SSAValue)
            return a, self.constant(b, a)
        assert isinstance(b, SSAValue), "an Emit op needs one tensor operand"
        return self.constant(a, b), b

    # --- elementwise -------------------------------------------------------------

    def add(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(AddOp(*self._pair(a, b)))

    def sub(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(SubOp(*self._pair(a, b)))

    def mul(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(MulOp(*self._pair(a, b)))

    def div(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(DivOp(*self._pair(a, b)))

    def pow(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(PowOp(*self._pair(a, b)))

    def neg(self, a: SSAValue) -> SSAValue:
        return self.op(NegOp(a))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self.op(SqrtOp(a))

    def exp(self, a: SSAValue) -> SSAValue:
        return self.op(ExpOp(a))

    def log(self, a: SSAValue) -> SSAValue:
        return self.op(LogOp(a))

    def sin(self, a: SSAValue) -> SSAValue:
        return self.op(SinOp(a))

    def cos(self, a: SSAValue) -> SSAValue:
        return self.op(CosOp(a))

    def gt(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(GreaterOp(*self._pair(a, b)))

    def ge(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(GreaterEqualOp(*self._pair(a, b)))

    def lt(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(LessOp(*self._pair(a, b)))

    def eq(self, a: Operand, b: Operand) -> SSAValue:
        return self.op(EqualOp(*self._pair(a, b)))

    def logical_and(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(LogicalAndOp(a, b))

    def logical_not(self, a: SSAValue) -> SSAValue:
        return self.op(LogicalNotOp(a))

    def select(self, condition: SSAValue, a: Operand, b: Operand) -> SSAValue:
        """``condition ? a : b``; a scalar takes the other value's element type."""
        x, y = self._pair(a, b)
        return self.op(SelectOp(condition, x, y))

    def cast(self, a: SSAValue, element_type: Attribute) -> SSAValue:
        if element_of(a.type) == element_type:
            return a
        return self.op(CastOp(a, element_type))

    def as_type_of(self, a: SSAValue, like: SSAValue) -> SSAValue:
        """``a`` cast to ``like``'s element type (a no-op when they agree)."""
        return self.cast(a, element_of(like.type))

    # --- shapes ------------------------------------------------------------------

    def reshape(self, a: SSAValue, shape_: Sequence[int]) -> SSAValue:
        if shape(a) == tuple(shape_):
            return a
        return self.op(ReshapeOp(a, shape_))

    def transpose(self, a: SSAValue, perm: Sequence[int]) -> SSAValue:
        if tuple(perm) == tuple(range(len(perm))):
            return a
        return self.op(TransposeOp(a, perm))

    def swap_last(self, a: SSAValue) -> SSAValue:
        """``a`` with its last two dimensions swapped (a matrix transpose)."""
        rank = len(shape(a))
        return self.transpose(a, (*range(rank - 2), rank - 1, rank - 2))

    def broadcast(self, a: SSAValue, shape_: Sequence[int]) -> SSAValue:
        if shape(a) == tuple(shape_):
            return a
        return self.op(BroadcastOp(a, shape_))

    def contiguous(self, a: SSAValue) -> SSAValue:
        """``a`` row-major: a copy only when its layout is strided."""
        if is_row_major(a.type):
            return a
        return self.op(ContiguousOp(a))

    def reduce_sum(
        self, a: SSAValue, axes: Sequence[int], keepdims: bool = False
    ) -> SSAValue:
        if not axes:
            return a
        return self.op(ReduceSumOp(a, axes, keepdims))

    def sum_to(self, g: SSAValue, like: SSAValue | Sequence[int]) -> SSAValue:
        """The gradient ``g`` of a broadcast result summed back to the shape of
        ``like`` (a value or a shape): the vjp of NumPy broadcasting."""
        target = shape(like) if isinstance(like, SSAValue) else tuple(like)
        source = shape(g)
        lead = len(source) - len(target)
        axes = [k for k in range(lead)]
        axes += [
            lead + k for k, d in enumerate(target) if d == 1 and source[lead + k] != 1
        ]
        return self.reshape(self.reduce_sum(g, axes, keepdims=True), target)

    def unreduce(
        self, g: SSAValue, input_shape: Sequence[int], axes: Sequence[int]
    ) -> SSAValue:
        """``g``, the gradient of a reduction over ``axes`` (without keepdims or
        with), broadcast back to ``input_shape``."""
        kept = [1 if k in axes else d for k, d in enumerate(input_shape)]
        return self.broadcast(self.reshape(g, kept), input_shape)

    def matmul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(MatmulOp(a, b))

    def slice(
        self,
        a: SSAValue,
        start: Sequence[int],
        stop: Sequence[int],
        step: Sequence[int] | None = None,
    ) -> SSAValue:
        return self.op(SliceOp(a, start, stop, step))

    def pad(
        self,
        a: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        value: float = 0.0,
    ) -> SSAValue:
        if not any(low) and not any(high):
            return a
        return self.op(PadOp(a, low, high, value))

    def pad_or_crop(
        self, a: SSAValue, low: Sequence[int], high: Sequence[int]
    ) -> SSAValue:
        """Zero-pad where an amount is positive, cut off where it is negative."""
        dims = shape(a)
        start = [max(-lo, 0) for lo in low]
        stop = [d - max(-hi, 0) for d, hi in zip(dims, high, strict=True)]
        if any(start) or list(stop) != list(dims):
            a = self.slice(a, start, stop)
        return self.pad(a, [max(lo, 0) for lo in low], [max(hi, 0) for hi in high])

    def concat(self, values: Sequence[SSAValue], axis: int) -> SSAValue:
        if len(values) == 1:
            return values[0]
        return self.op(ConcatOp(values, axis))

    def gather(self, a: SSAValue, axis: int, indices: Sequence[int]) -> SSAValue:
        return self.op(GatherOp(a, axis, indices))

    # --- windows (conv2d and pool rules) ------------------------------------------

    def permute(self, a: SSAValue, perm: Sequence[int]) -> SSAValue:
        """``transpose(a, perm)``, as a reshape when only unit dimensions move
        (the row-major order of the elements is then unchanged)."""
        dims = shape(a)
        kept = [p for p in perm if dims[p] != 1]
        if kept == sorted(kept):
            return self.reshape(a, [dims[p] for p in perm])
        return self.transpose(a, perm)

    def dilate(self, a: SSAValue, steps: Sequence[int]) -> SSAValue:
        """Each entry of the last ``len(steps)`` dimensions followed by ``step - 1``
        zeros (the last one too): ``[..., H, W]`` becomes ``[..., H sh, W sw]``
        with ``a[..., i, j]`` at ``[..., i sh, j sw]``. As reshape (a unit
        dimension after each), pad that to ``step``, reshape back."""
        if all(s == 1 for s in steps):
            return a
        dims = shape(a)
        lead = list(dims[: len(dims) - len(steps)])
        tail = dims[len(lead) :]
        split = [*lead, *(x for d in tail for x in (d, 1))]
        high = [0] * len(lead) + [x for s in steps for x in (0, s - 1)]
        padded = self.pad(self.reshape(a, split), [0] * len(split), high)
        return self.reshape(
            padded, [*lead, *(d * s for d, s in zip(tail, steps, strict=True))]
        )
