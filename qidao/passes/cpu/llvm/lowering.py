"""Shared machinery of ``convert-to-llvm``: types, the per-function lowering state.

Not a pass (the leading underscore keeps it out of the registry). ``convert-to-llvm``
rebuilds each ``func.func`` as an ``llvm.func`` op by op: a handler per source op type
reads the original op (so it still sees memref layouts) and the already-converted
operands, emits llvm ops into the current block and binds the op's results. Because
values are remapped directly, no ``builtin.unrealized_conversion_cast`` is ever made.

Types: ``index`` -> ``i64``; every ``memref`` -> ``!llvm.ptr`` (bare pointer to
element 0 of the underlying allocation, see ``convert_to_llvm``); scalars unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from qidao.errors import UnsupportedError

OpT = TypeVar("OpT", bound=Operation)

NSW = llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))


class LoweringError(UnsupportedError):
    """An op or type that ``convert-to-llvm`` cannot lower; the message names it."""


def convert_type(t: Attribute) -> Attribute:
    """The llvm-dialect type that stands for ``t``."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    return t


def static_layout(t: MemRefType[Attribute]) -> tuple[tuple[int, ...], int]:
    """The static strides and offset of ``t``; raises when any is dynamic."""
    strides = t.get_strides()
    offset = t.get_offset()
    if strides is None or offset is None or any(s is None for s in strides):
        raise LoweringError(f"convert-to-llvm: {t} has no static strided layout")
    if any(d < 0 for d in t.get_shape()):
        raise LoweringError(f"convert-to-llvm: {t} has a dynamic shape")
    return tuple(s for s in strides if s is not None), offset


def element_bytes(t: Attribute) -> int:
    """Bytes per element in memory (i1 takes one byte, as in NumPy)."""
    if isinstance(t, IntegerType):
        return max(1, (int(t.width.data) + 7) // 8)
    if isinstance(t, AnyFloat):
        return int(t.bitwidth) // 8
    raise LoweringError(f"convert-to-llvm: unsupported element type {t}")


class FunctionLowering:
    """The state of one function being rebuilt: value and block maps, insertion."""

    def __init__(
        self, region: Region, externs: dict[str, llvm.LLVMFunctionType]
    ) -> None:
        self.region = region
        self.externs = externs
        """External C functions (malloc, free, erff...) the module must declare."""
        self.values: dict[SSAValue, SSAValue] = {}
        self.blocks: dict[Block, Block] = {}
        self.block: Block = Block()
        self.constants: dict[tuple[Attribute, str], SSAValue] = {}
        """Scalar constants made so far, at the top of the entry block: one
        ``llvm.mlir.constant`` per value and type in a function (index arithmetic
        asked for the same strides thousands of times)."""

    def get(self, value: SSAValue) -> SSAValue:
        if value not in self.values:
            raise LoweringError(
                f"convert-to-llvm: value {value.name_hint or value} used before "
                "it was lowered"
            )
        return self.values[value]

    def operands(self, op: Operation) -> list[SSAValue]:
        return [self.get(v) for v in op.operands]

    def bind(self, old: SSAValue, new: SSAValue) -> None:
        if old.name_hint and new.name_hint is None:
            new.name_hint = old.name_hint
        self.values[old] = new

    def bind_results(self, op: Operation, new: Sequence[SSAValue]) -> None:
        for old, value in zip(op.results, new, strict=True):
            self.bind(old, value)

    def emit(self, op: OpT) -> OpT:
        self.block.add_op(op)
        return op

    def emit_value(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    def const(self, value: int | float, t: Attribute = i64) -> SSAValue:
        t = convert_type(t)
        attr: IntegerAttr | FloatAttr
        if isinstance(t, IntegerType):
            attr = IntegerAttr(int(value), t)
        elif isinstance(t, AnyFloat):
            attr = FloatAttr(float(value), t)
        else:
            raise LoweringError(f"convert-to-llvm: no constant of type {t}")
        return self.scalar_constant(attr, t)

    def scalar_constant(self, attr: IntegerAttr | FloatAttr, t: Attribute) -> SSAValue:
        """The ``llvm.mlir.constant`` of ``attr`` (type ``t``) in the entry block,
        made once per function."""
        key = (t, repr(attr.value.data))  # repr: -0.0 and 0.0 stay apart
        known = self.constants.get(key)
        if known is not None:
            return known
        op = llvm.ConstantOp(attr, t)
        entry = self.region.blocks[0]
        if self.constants:  # after the last one: in the order they were asked for
            last = next(reversed(self.constants.values())).owner
            assert isinstance(last, Operation)
            entry.insert_op_after(op, last)
        elif entry.first_op is None:
            entry.add_op(op)
        else:
            entry.insert_op_before(op, entry.first_op)
        self.constants[key] = op.result
        return op.result

    def call_extern(
        self, name: str, args: Sequence[SSAValue], result: Attribute | None
    ) -> SSAValue | None:
        """Call the C function ``name``, declaring it in the module once."""
        fn_type = llvm.LLVMFunctionType(
            [a.type for a in args], result if result is not None else None
        )
        known = self.externs.setdefault(name, fn_type)
        if known != fn_type:
            raise LoweringError(
                f"convert-to-llvm: extern @{name} used as {fn_type} and {known}"
            )
        call = self.emit(llvm.CallOp(name, *args, return_type=result))
        return call.returned

    def new_block_after(self, arg_types: Sequence[Attribute] = ()) -> Block:
        """A fresh block placed right after the current one (for inline loops)."""
        block = Block(arg_types=arg_types)
        self.region.insert_block_after(block, self.block)
        return block


Handler = Callable[[Operation, FunctionLowering], None]
