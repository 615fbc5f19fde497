"""``convert-to-llvm`` handlers for the memref dialect (not a pass).

A memref value is a bare ``!llvm.ptr`` to element 0 of its underlying allocation; the
static layout of the memref's type says where its elements lie:
``&m[i0, .., ik] = ptr + offset + sum(i_j * stride_j)`` (in elements, one inbounds
GEP). So views (``reinterpret_cast``, ``subview``, ``cast``, ``expand_shape``,
``collapse_shape``), whose result types carry offsets relative to the same
allocation, are pointer pass-throughs. ``alloc`` calls ``aligned_alloc(64, bytes)``
(bytes rounded up to 64) and ``dealloc`` calls ``free``; ``alloca`` is a 64-byte
aligned ``llvm.alloca`` hoisted to the entry block of its function (so an alloca in
a loop body, such as ``cache-write``'s and ``cache-read``'s local buffers, takes
constant stack space; in a loop that ``convert-parallel-to-gomp`` outlined, the
entry block of the outlined body, so each thread has its own buffer); one that a
branch carries to the next iteration stays in place. ``copy`` is a ``memcpy`` when both sides are dense row-major,
and an element loop otherwise. ``memref.global`` (with a dense initial value) becomes an
``llvm.mlir.global`` array and ``get_global`` its ``llvm.mlir.addressof``.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import cf, llvm, memref
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ShapedType,
    TensorType,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.passes.cpu.llvm.lowering import (
    NSW,
    FunctionLowering,
    Handler,
    LoweringError,
    element_bytes,
    static_layout,
)

ALIGNMENT = 64
PAGE = 4096
PAGE_ALIGNED_MIN_BYTES = 1 << 16
"""Buffers of at least 64 KiB start on a 4 KiB page (``aligned_alloc(4096, ..)``),
so two large buffers always sit at the same offset modulo 4 KiB. The CPU's
store-to-load check compares address bits 11..0 first, so whether a kernel's loads
of one buffer falsely wait on its stores to another ("4K aliasing") otherwise
depends on where ``malloc`` happened to put them: Winograd's input transform took
54 µs or 900-1050 µs for the same 56 x 56 x 64 activation depending only on a
64-byte shift of the heap. At a fixed 0 offset it takes the fast path."""


def _memref_type(value: SSAValue) -> MemRefType[Attribute]:
    t = value.type
    if not isinstance(t, MemRefType):
        raise LoweringError(f"convert-to-llvm: expected a memref, got {t}")
    return t


def memory_type(element: Attribute) -> Attribute:
    """The type of an element in memory: ``i8`` for ``i1`` (NumPy's one-byte bool),
    the element type otherwise."""
    return i8 if element == i1 else element


def load_element(fl: FunctionLowering, ptr: SSAValue, element: Attribute) -> SSAValue:
    """The element at ``ptr``; a bool is its byte compared with 0."""
    if element != i1:
        return fl.emit_value(llvm.LoadOp(ptr, element))
    byte = fl.emit_value(llvm.LoadOp(ptr, i8))
    ne = [f.value for f in llvm.ICmpPredicateFlag].index("ne")
    return fl.emit_value(llvm.ICmpOp(byte, fl.const(0, i8), IntegerAttr(ne, 64)))


def store_element(fl: FunctionLowering, value: SSAValue, ptr: SSAValue) -> None:
    """Store ``value`` at ``ptr``; a bool as the byte 0 or 1."""
    if value.type == i1:
        value = fl.emit_value(llvm.ZExtOp(value, i8))
    fl.emit(llvm.StoreOp(value, ptr))


def element_address(
    fl: FunctionLowering,
    t: MemRefType[Attribute],
    base: SSAValue,
    indices: Sequence[SSAValue],
) -> SSAValue:
    """``base + offset + sum(index * stride)`` as one inbounds GEP on the element
    type; constant indices fold into the offset."""
    strides, offset = static_layout(t)
    linear: SSAValue | None = None
    for index, stride in zip(indices, strides, strict=True):
        if stride == 0:
            continue
        known = _known_index(index)
        if known is not None:
            offset += known * stride
            continue
        term = index
        if stride != 1:
            term = fl.emit_value(llvm.MulOp(index, fl.const(stride), overflow=NSW))
        linear = (
            term
            if linear is None
            else fl.emit_value(llvm.AddOp(linear, term, overflow=NSW))
        )
    if offset != 0:
        linear = (
            fl.const(offset)
            if linear is None
            else fl.emit_value(llvm.AddOp(linear, fl.const(offset), overflow=NSW))
        )
    if linear is None:
        return base
    gep = llvm.GEPOp(
        base,
        [llvm.GEP_USE_SSA_VAL],
        memory_type(t.element_type),
        ssa_indices=[linear],
        inbounds=True,
    )
    return fl.emit_value(gep)


def _known_index(value: SSAValue) -> int | None:
    """The value of an index that is an ``llvm.mlir.constant``, else None."""
    owner = value.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return int(owner.value.value.data)
    return None


def footprint(t: MemRefType[Attribute]) -> int:
    """Elements from the allocation's start to one past the last element of ``t``."""
    strides, offset = static_layout(t)
    shape = t.get_shape()
    if any(d == 0 for d in shape):
        return offset
    return offset + 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))


def _load(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, memref.LoadOp)
    t = _memref_type(op.memref)
    indices = [fl.get(i) for i in op.indices]
    ptr = element_address(fl, t, fl.get(op.memref), indices)
    fl.bind(op.res, load_element(fl, ptr, t.element_type))


def _store(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, memref.StoreOp)
    t = _memref_type(op.memref)
    indices = [fl.get(i) for i in op.indices]
    ptr = element_address(fl, t, fl.get(op.memref), indices)
    store_element(fl, fl.get(op.value), ptr)


def _alloc(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, memref.AllocOp)
    t = _memref_type(op.memref)
    size = footprint(t) * element_bytes(t.element_type)
    alignment = PAGE if size >= PAGE_ALIGNED_MIN_BYTES else ALIGNMENT
    size = max(alignment, -(-size // alignment) * alignment)
    ptr = fl.call_extern(
        "aligned_alloc",
        [fl.const(alignment), fl.const(size)],
        llvm.LLVMPointerType(),
    )
    assert ptr is not None
    fl.bind(op.memref, ptr)


def _alloca(op: Operation, fl: FunctionLowering) -> None:
    """A static ``llvm.alloca`` in the function's entry block, wherever the
    ``memref.alloca`` was: one stack slot per function call, reused by every
    iteration of the loops around it (an alloca in a loop body would grow the stack
    on every iteration; an entry-block one is also what SROA/mem2reg promote). The
    value is undefined on entry to each iteration either way: a ``memref.alloca``
    has no initial value. A buffer that a branch passes on (carried from one
    iteration to the next) stays where it is."""
    assert isinstance(op, memref.AllocaOp)
    t = _memref_type(op.memref)
    count = llvm.ConstantOp(IntegerAttr(max(1, footprint(t)), i64), i64)
    alloca = llvm.AllocaOp(count, memory_type(t.element_type), alignment=ALIGNMENT)
    # llvmlite types an alloca's pointer by its element (float*) and then refuses
    # vector stores through it; a no-op bitcast makes it an opaque ptr like every
    # other memref pointer.
    opaque = llvm.BitcastOp(alloca, llvm.LLVMPointerType())
    ops = [count, alloca, opaque]
    entry = fl.region.first_block
    # a buffer passed along a branch (a loop-carried memref) may be live together
    # with the next iteration's: that one keeps an alloca of its own
    carried = any(
        isinstance(use.operation, cf.BranchOp | cf.ConditionalBranchOp)
        for use in op.memref.uses
    )
    if carried or entry is None or entry is fl.block or entry.last_op is None:
        for new in ops:
            fl.emit(new)
    else:
        # the entry block is complete (blocks lower in order): before its terminator
        entry.insert_ops_before(ops, entry.last_op)
    fl.bind(op.memref, opaque.results[0])


def _dealloc(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, memref.DeallocOp)
    fl.call_extern("free", [fl.get(op.memref)], None)


def _view(op: Operation, fl: FunctionLowering) -> None:
    """A view of static layout is the same pointer (offsets live in the type)."""
    static_layout(_memref_type(op.results[0]))
    fl.bind(op.results[0], fl.get(op.operands[0]))


def _is_dense(t: MemRefType[Attribute]) -> bool:
    strides, _ = static_layout(t)
    expected = ShapedType.strides_for_shape(t.get_shape())
    return all(
        d == 1 or s == e
        for d, s, e in zip(t.get_shape(), strides, expected, strict=True)
    )


def _copy(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, memref.CopyOp)
    src_t, dst_t = _memref_type(op.source), _memref_type(op.destination)
    src, dst = fl.get(op.source), fl.get(op.destination)
    rank = len(src_t.get_shape())
    count = prod(src_t.get_shape())
    if count == 0:
        return
    if _is_dense(src_t) and _is_dense(dst_t):
        zeros = [fl.const(0)] * rank
        src_ptr = element_address(fl, src_t, src, zeros)
        dst_ptr = element_address(fl, dst_t, dst, zeros)
        nbytes = fl.const(count * element_bytes(src_t.element_type))
        volatile = fl.const(0, i1)
        fl.emit(
            llvm.CallIntrinsicOp(
                "llvm.memcpy.p0.p0.i64", [dst_ptr, src_ptr, nbytes, volatile], []
            )
        )
        return
    _copy_loop(fl, src_t, src, dst_t, dst, count)


def _copy_loop(
    fl: FunctionLowering,
    src_t: MemRefType[Attribute],
    src: SSAValue,
    dst_t: MemRefType[Attribute],
    dst: SSAValue,
    count: int,
) -> None:
    """for (i = 0; i < count; ++i) dst[unravel(i)] = src[unravel(i)]"""
    exit_block = fl.new_block_after()
    body = fl.new_block_after()
    header = fl.new_block_after([i64])
    fl.emit(llvm.BrOp(header, fl.const(0)))

    fl.block = header
    i: SSAValue = header.args[0]
    in_range = fl.emit_value(
        llvm.ICmpOp(i, fl.const(count), IntegerAttr(2, 64))  # slt
    )
    fl.emit(llvm.CondBrOp(in_range, body, [], exit_block, []))

    fl.block = body
    indices: list[SSAValue] = []
    shape = src_t.get_shape()
    for k, (dim, inner) in enumerate(
        zip(shape, ShapedType.strides_for_shape(shape), strict=True)
    ):
        index: SSAValue = i
        assert inner is not None
        if inner != 1:
            index = fl.emit_value(llvm.SDivOp(index, fl.const(inner)))
        if k != 0:  # the outermost index is already below its extent
            index = fl.emit_value(llvm.SRemOp(index, fl.const(dim)))
        indices.append(index)
    value = load_element(
        fl, element_address(fl, src_t, src, indices), src_t.element_type
    )
    store_element(fl, value, element_address(fl, dst_t, dst, indices))
    next_i = fl.emit_value(llvm.AddOp(i, fl.const(1), overflow=NSW))
    fl.emit(llvm.BrOp(header, next_i))

    fl.block = exit_block


def _get_global(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, memref.GetGlobalOp)
    address = llvm.AddressOfOp(op.name_.string_value(), llvm.LLVMPointerType())
    fl.bind(op.memref, fl.emit_value(address))


def lower_global(op: memref.GlobalOp) -> llvm.GlobalOp:
    """``memref.global`` -> an ``llvm.mlir.global`` array of the same elements."""
    t = op.type
    if not isinstance(op.initial_value, DenseIntOrFPElementsAttr):
        raise LoweringError(
            f"convert-to-llvm: memref.global @{op.sym_name.data} has no initial value"
        )
    private = op.sym_visibility.data == "private"
    value: Attribute = op.initial_value
    element = memory_type(t.element_type)
    if footprint(t) == 0:  # an empty tensor: one unused element, zero
        zero = BytesAttr(bytes(element_bytes(element)))
        value = DenseIntOrFPElementsAttr(TensorType(element, [1]), zero)  # type: ignore[type-var, arg-type]  # an int or float element
    elif t.element_type == i1:  # bytes 0, 1 (xDSL stores a parsed `true` as 0xff)
        data = [int(b != 0) for b in op.initial_value.data.data]
        shape = op.initial_value.type.get_shape()
        value = DenseIntOrFPElementsAttr.from_list(TensorType(i8, shape), data)
    return llvm.GlobalOp(
        llvm.LLVMArrayType(IntAttr(max(1, footprint(t))), element),
        op.sym_name.data,
        "internal" if private else "external",
        constant=op.constant is not None,
        value=value,
        alignment=ALIGNMENT,
    )


HANDLERS: dict[type[Operation], Handler] = {
    memref.GetGlobalOp: _get_global,
    memref.LoadOp: _load,
    memref.StoreOp: _store,
    memref.AllocOp: _alloc,
    memref.AllocaOp: _alloca,
    memref.DeallocOp: _dealloc,
    memref.ReinterpretCastOp: _view,
    memref.SubviewOp: _view,
    memref.CastOp: _view,
    memref.ExpandShapeOp: _view,
    memref.CollapseShapeOp: _view,
    memref.CopyOp: _copy,
}
