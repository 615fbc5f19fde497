"""Shared pieces of ``convert-tg-to-affine``: memref types, kernel functions, loops.

A kernel is a private ``func.func`` over memrefs whose body the op-family builders
(``<family>.py`` beside this one) fill through an :class:`Emitter`. Index expressions are
``AffineExpr`` over the induction variables of the enclosing nest: ``d<k>`` is the
k-th entry of the ``ivs`` list handed to :meth:`Emitter.load` and
:meth:`Emitter.store`, which keep only the dimensions a map really uses.
"""

from __future__ import annotations

import math as pymath
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import affine, arith, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_set import (
    AffineConstraintExpr,
    AffineConstraintKind,
    AffineSet,
)

from qidao.dialects.attributes import KERNEL_ATTR, LOOP_ATTR
from qidao.dialects.tg.layout import contiguous_strides
from qidao.dialects.tg.types import storage_type
from qidao.errors import UnsupportedError

OpT = TypeVar("OpT", bound=Operation)


class TgLoweringError(UnsupportedError):
    """convert-tg-to-affine cannot lower an op; the message names the op and why."""


def memref_type(t: Attribute) -> MemRefType[Attribute]:
    """``tensor<SxT[, strided<..>]>`` -> ``memref<SxT[, strided<..>]>``, with T
    signless (``tensor<4xui8>`` -> ``memref<4xi8>``: ``types.storage_type``)."""
    if not isinstance(t, TensorType):
        raise TgLoweringError(f"convert-tg-to-affine: expected a tensor, got {t}")
    enc = t.encoding
    layout: StridedLayoutAttr | NoneAttr = (
        enc if isinstance(enc, StridedLayoutAttr) else NoneAttr()
    )
    return MemRefType(storage_type(t.get_element_type()), t.get_shape(), layout)


def shape(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def element_type(value: SSAValue) -> Attribute:
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    element: Attribute = t.get_element_type()
    return element


@dataclass(frozen=True)
class Scalar:
    """A splat constant operand, materialized inside the kernel as ``arith.constant``
    (an int for integer and bool element types, 0 or 1 for bool)."""

    value: float | int
    element_type: Attribute


Source = SSAValue | Scalar
"""How a kernel reads a tensor operand: a memref argument or a folded splat."""


# ----------------------------------------------------------------------------------
# Affine index expressions


def dim(k: int) -> AffineExpr:
    return AffineExpr.dimension(k)


def const(c: int) -> AffineExpr:
    return AffineExpr.constant(c)


def add(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    if lhs == const(0):
        return rhs
    if rhs == const(0):
        return lhs
    return lhs + rhs


def mul(expr: AffineExpr, c: int) -> AffineExpr:
    if c == 0:
        return const(0)
    return expr if c == 1 else expr * c


def broadcast_index(
    index: Sequence[AffineExpr], in_shape: Sequence[int]
) -> list[AffineExpr]:
    """The index into an operand of ``in_shape`` that NumPy-broadcasts to ``index``'s
    shape: leading dimensions drop, size-1 dimensions read element 0."""
    pad = len(index) - len(in_shape)
    return [
        const(0) if size == 1 else index[k + pad] for k, size in enumerate(in_shape)
    ]


def reshape_index(
    index: Sequence[AffineExpr], out_shape: Sequence[int], in_shape: Sequence[int]
) -> list[AffineExpr]:
    """The index into ``in_shape`` of the element that sits at ``index`` of the same
    elements laid out row-major as ``out_shape``.

    Dimensions are matched in groups of equal size products, so a split or merge costs
    one ``floordiv``/``mod`` per dimension of its group and untouched dimensions map
    straight through; size-1 dimensions read element 0.
    """
    result = [const(0)] * len(in_shape)
    outs = [k for k, s in enumerate(out_shape) if s != 1]
    ins = [k for k, s in enumerate(in_shape) if s != 1]
    i = j = 0
    while i < len(outs) and j < len(ins):
        group_out, group_in = [outs[i]], [ins[j]]
        p_out, p_in = out_shape[outs[i]], in_shape[ins[j]]
        i, j = i + 1, j + 1
        while p_out != p_in:
            if p_out < p_in:
                group_out.append(outs[i])
                p_out *= out_shape[outs[i]]
                i += 1
            else:
                group_in.append(ins[j])
                p_in *= in_shape[ins[j]]
                j += 1
        if len(group_out) == 1 and len(group_in) == 1:
            result[group_in[0]] = index[group_out[0]]
            continue
        flat = const(0)
        stride = 1
        for k in reversed(group_out):
            flat = add(flat, mul(index[k], stride))
            stride *= out_shape[k]
        stride = 1
        for pos, k in enumerate(reversed(group_in)):
            part = flat if stride == 1 else flat // stride
            result[k] = part if pos == len(group_in) - 1 else part % in_shape[k]
            stride *= in_shape[k]
    return result


def row_major_offset(index: Sequence[AffineExpr], shape_: Sequence[int]) -> AffineExpr:
    flat = const(0)
    for e, s in zip(index, contiguous_strides(shape_), strict=True):
        flat = add(flat, mul(e, s))
    return flat


def _compact(
    exprs: Sequence[AffineExpr], ivs: Sequence[SSAValue]
) -> tuple[AffineMapAttr, list[SSAValue]]:
    """A map over only the ivs that ``exprs`` use, and those ivs in order."""
    used = sorted(set().union(*(e.used_dims() for e in exprs)) if exprs else set())
    renumber = [dim(used.index(k)) if k in used else const(0) for k in range(len(ivs))]
    mapped = tuple(e.replace_dims_and_symbols(renumber, []) for e in exprs)
    return AffineMapAttr(AffineMap(len(used), 0, mapped)), [ivs[k] for k in used]


# ----------------------------------------------------------------------------------
# Emitting kernels


def float_attr(value: float, t: Attribute) -> FloatAttr:
    if not isinstance(t, AnyFloat):
        raise TgLoweringError(f"convert-tg-to-affine: expected a float type, got {t}")
    return FloatAttr(value, t)


class Emitter:
    """Appends ops at an insertion block; constants go to the top of the function."""

    def __init__(self, entry: Block) -> None:
        self.entry = entry
        self.block = entry
        self._consts: dict[tuple[bytes, Attribute], SSAValue] = {}
        self._last_const: Operation | None = None

    def add(self, op: OpT) -> OpT:
        self.block.add_op(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    @contextmanager
    def inside(self, block: Block) -> Iterator[None]:
        saved = self.block
        self.block = block
        try:
            yield
        finally:
            self.block = saved

    def constant(self, value: float | int, t: Attribute) -> SSAValue:
        """``arith.constant value : t``, emitted once per kernel at its top (an
        integer or index type takes an int: 0 or 1 for i1)."""
        attr: Attribute
        if isinstance(t, IntegerType | IndexType):
            key: tuple[bytes, Attribute] = (str(int(value)).encode(), t)
            attr = IntegerAttr(int(value), t)
        else:
            # Keyed on the bits, not the value: 0.0 == -0.0 (and nan != nan).
            key = (struct.pack("<d", value), t)
            attr = float_attr(float(value), t)
        if key in self._consts:
            return self._consts[key]
        op = arith.ConstantOp(attr)
        if self._last_const is None:
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
        else:
            self.entry.insert_op_after(op, self._last_const)
        self._last_const = op
        self._consts[key] = op.result
        return op.result

    def scalar(self, s: Scalar) -> SSAValue:
        return self.constant(s.value, s.element_type)

    def load(
        self, src: Source, ivs: Sequence[SSAValue], index: Sequence[AffineExpr]
    ) -> SSAValue:
        if isinstance(src, Scalar):
            return self.scalar(src)
        amap, operands = _compact(index, ivs)
        t = src.type
        assert isinstance(t, MemRefType)
        return self.value(
            affine.LoadOp(src, operands, amap, result_type=t.get_element_type())
        )

    def store(
        self,
        value: SSAValue,
        dest: SSAValue,
        ivs: Sequence[SSAValue],
        index: Sequence[AffineExpr],
    ) -> None:
        amap, operands = _compact(index, ivs)
        self.add(affine.StoreOp(value, dest, operands, amap))

    def for_loop(
        self, name: str, upper: int, inits: Sequence[SSAValue] = ()
    ) -> affine.ForOp:
        """``affine.for 0 to upper`` named ``qd.loop = name``; its body has no
        terminator yet."""
        types = [v.type for v in inits]
        body = Block(arg_types=[IndexType(), *types])
        loop = affine.ForOp.from_region([], [], inits, types, 0, upper, Region(body))
        loop.attributes[LOOP_ATTR] = StringAttr(name)
        body.args[0].name_hint = name
        return self.add(loop)

    @contextmanager
    def nest(
        self, names: Sequence[str], bounds: Sequence[int]
    ) -> Iterator[list[SSAValue]]:
        """A perfect nest of loops; yields their ivs, closes every body with yield."""
        ivs: list[SSAValue] = []
        blocks: list[Block] = []
        saved = self.block
        for name, bound in zip(names, bounds, strict=True):
            loop = self.for_loop(name, bound)
            blocks.append(loop.body.block)
            ivs.append(loop.body.block.args[0])
            self.block = loop.body.block
        try:
            yield ivs
        finally:
            self.block = saved
            for block in blocks:
                block.add_op(affine.YieldOp.get())

    def accumulate(
        self,
        names: Sequence[str],
        bounds: Sequence[int],
        inits: Sequence[SSAValue],
        step: Callable[[list[SSAValue], list[SSAValue]], list[SSAValue]],
        outer: Sequence[SSAValue] = (),
    ) -> list[SSAValue]:
        """Nested loops carrying ``inits`` as iter_args; ``step(ivs, accs)`` gives the
        next accumulator values in the innermost body, where ``ivs`` is ``outer``
        followed by the new loops' ivs. Returns the final values."""
        return self._accumulate(
            list(names), list(bounds), list(inits), list(outer), step
        )

    def _accumulate(
        self,
        names: list[str],
        bounds: list[int],
        accs: list[SSAValue],
        ivs: list[SSAValue],
        step: Callable[[list[SSAValue], list[SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        if not names:
            return step(ivs, accs)
        loop = self.for_loop(names[0], bounds[0], accs)
        block = loop.body.block
        with self.inside(block):
            inner = self._accumulate(
                names[1:], bounds[1:], list(block.args[1:]), [*ivs, block.args[0]], step
            )
            self.add(affine.YieldOp.get(*inner))
        return list(loop.results)

    def if_else(
        self,
        conditions: Sequence[AffineExpr],
        ivs: Sequence[SSAValue],
        then: Callable[[], list[SSAValue]],
        otherwise: list[SSAValue],
    ) -> list[SSAValue]:
        """``affine.if`` on ``all(c >= 0 for c in conditions)`` yielding ``then()``'s
        values, else ``otherwise``. No conditions: just ``then()``."""
        if not conditions:
            return then()
        used = sorted(set().union(*(c.used_dims() for c in conditions)))
        renumber = [
            dim(used.index(k)) if k in used else const(0) for k in range(len(ivs))
        ]
        constraints = tuple(
            AffineConstraintExpr(
                AffineConstraintKind.ge,
                c.replace_dims_and_symbols(renumber, []),
                const(0),
            )
            for c in conditions
        )
        then_block, else_block = Block(), Block()
        with self.inside(then_block):
            self.add(affine.YieldOp.get(*then()))
        else_block.add_op(affine.YieldOp.get(*otherwise))
        op = affine.IfOp.build(
            operands=[[ivs[k] for k in used]],
            result_types=[[v.type for v in otherwise]],
            properties={
                "condition": AffineSetAttr(AffineSet(len(used), 0, constraints))
            },
            regions=[Region(then_block), Region(else_block)],
        )
        return list(self.add(op).results)

    # arithmetic -------------------------------------------------------------------

    def addf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.AddfOp(a, b))

    def subf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.SubfOp(a, b))

    def mulf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.MulfOp(a, b))

    def divf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.DivfOp(a, b))

    def maxf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.MaximumfOp(a, b))

    # accumulation of a reduction: reassociable, so LLVM vectorizes the loop ------

    def sum_step(self, acc: SSAValue, x: SSAValue) -> SSAValue:
        """``acc + x`` with ``fastmath<reassoc,contract>`` (see REDUCTION_FASTMATH)."""
        return self.value(arith.AddfOp(acc, x, REDUCTION_FASTMATH))

    def max_step(self, acc: SSAValue, x: SSAValue) -> SSAValue:
        """``maximumf(acc, x)`` with ``fastmath<reassoc,contract>``; still propagates
        NaN (no ``nnan``)."""
        return self.value(arith.MaximumfOp(acc, x, REDUCTION_FASTMATH))

    def shift_max_step(self, acc: SSAValue, x: SSAValue) -> SSAValue:
        """``maxnumf(acc, x)`` with ``fastmath<reassoc,contract>``: a row's max that
        only shifts the row before ``exp`` (softmax). It skips a NaN where
        ``maximumf`` returns it, and may return either zero of ``max(-0, +0)``; the
        softmax is the same (a NaN in the row still makes every output NaN, through
        ``exp(NaN - max)`` in the sum). On AVX-512 each step is ``vmaxps`` and a
        NaN check, against six instructions for ``maximumf``: softmax over 1 x 4 x
        128 x 128, one thread, 31.4 -> 24.0 µs; over 1 x 3 x 197 x 197, 52.5 ->
        39 µs (ONNX Runtime: 18.2 and 29.8). Only where ``vectorize`` or LLVM
        reads the row contiguously: LLVM 22's loop vectorizer fails an assertion
        (its two cost models disagree) on a maxnum reduction over strided loads,
        and llvmlite's LLVM aborts the process there."""
        return self.value(arith.MaxnumfOp(acc, x, REDUCTION_FASTMATH))


def in_bounds(expr: AffineExpr, lo: int, hi: int, size: int) -> list[AffineExpr]:
    """Conditions (``>= 0``) that keep ``expr``, known to range over ``[lo, hi]``,
    inside ``[0, size)``; only the ones that can fail."""
    conditions = []
    if lo < 0:
        conditions.append(expr)
    if hi > size - 1:
        conditions.append(const(size - 1) + expr * -1)
    return conditions


def window_index(
    out: AffineExpr,
    tap: AffineExpr,
    stride: int,
    pad: int,
    dilation: int,
    out_size: int,
    kernel: int,
    in_size: int,
) -> tuple[AffineExpr, list[AffineExpr]]:
    """One spatial axis of a sliding window (conv, pool): the input index
    ``out * stride - pad + tap * dilation`` and the conditions that keep it inside
    ``[0, in_size)`` (only the ones padding can break)."""
    index = add(add(mul(out, stride), const(-pad)), mul(tap, dilation))
    top = (out_size - 1) * stride - pad + (kernel - 1) * dilation
    return index, in_bounds(index, -pad, top, in_size)


NEG_INF = -pymath.inf

REDUCTION_FASTMATH = arith.FastMathFlagsAttr(
    (FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT)
)
"""Flags of the accumulating ``arith.addf``/``arith.maximumf`` of a reduction (and of
nothing else): ``reassoc`` lets LLVM split the running sum into vector lanes (16
partial sums with AVX-512) and combine them at the end, so a sum's rounding differs
from NumPy's pairwise summation by a few ulp of the total, within float tolerance;
a max is unchanged. No ``nnan``/``ninf``: NaN and infinities still propagate. Built
from ``FastMathFlag`` members (not strings): xDSL's LLVM IR translator reads each
flag's ``.value``."""


# ----------------------------------------------------------------------------------
# Kernel functions


@dataclass
class Kernel:
    """A kernel being built: its function, its argument memrefs and an emitter."""

    function: func.FuncOp
    inputs: list[SSAValue]
    outputs: list[SSAValue]
    em: Emitter

    def finish(self) -> func.FuncOp:
        self.function.body.block.add_op(func.ReturnOp())
        return self.function


def _distinct(hints: Sequence[str | None]) -> list[str | None]:
    """``hints`` with each repeat suffixed ``2``, ``3``, ... (past any hint
    already spelled so)."""
    taken = {h for h in hints if h is not None}
    seen: set[str] = set()
    out: list[str | None] = []
    for hint in hints:
        if hint is not None and hint in seen:
            k = 2
            while f"{hint}{k}" in taken:
                k += 1
            hint = f"{hint}{k}"
            taken.add(hint)
        if hint is not None:
            seen.add(hint)
        out.append(hint)
    return out


def new_kernel(
    name: str,
    label: str,
    inputs: Sequence[tuple[str | None, Attribute]],
    outputs: Sequence[tuple[str | None, Attribute]],
) -> Kernel:
    """A private ``func.func @name`` over ``inputs`` then ``outputs`` (hint, memref
    type), every argument ``llvm.noalias``, tagged ``qd.kernel = label``. Two
    arguments with one hint (two graph values both named ``transpose``) get
    distinct ones (``transpose``, ``transpose2``): a schedule primitive names a
    buffer by its hint (``cache_read``), and xDSL drops a hint's ``_1`` suffix
    (the printer's own way to tell two apart, which a primitive cannot name)."""
    types = [t for _, t in [*inputs, *outputs]]
    block = Block(arg_types=types)
    hints = _distinct([hint for hint, _ in [*inputs, *outputs]])
    for arg, hint in zip(block.args, hints, strict=True):
        arg.name_hint = hint
    noalias = DictionaryAttr({"llvm.noalias": UnitAttr()})
    kernel = func.FuncOp(
        name,
        (types, []),
        Region(block),
        "private",
        arg_attrs=ArrayAttr([noalias] * len(types)),
    )
    kernel.attributes[KERNEL_ATTR] = StringAttr(label)
    n = len(inputs)
    return Kernel(kernel, list(block.args[:n]), list(block.args[n:]), Emitter(block))


def loop_names(prefix: str, rank: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(rank)]
