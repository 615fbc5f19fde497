"""``convert-to-llvm`` handlers for the ``amx`` ops (not a pass).

Each op is one call of LLVM's AMX intrinsic that takes the tile as an immediate
(the ``_tile_*`` intrinsics of the intrinsics guide), so no ``x86_amx`` value
exists and LLVM allocates no tile registers of its own:

- ``amx.tile_config`` -> a 64-byte stack slot (in the entry block) holding the
  configuration: byte 0 the palette (1), bytes 16 + 2t the row bytes of tile t
  (``colsb``, little-endian u16), byte 48 + t its rows; stored as eight ``i64``
  words, then ``call @llvm.x86.ldtilecfg(ptr)``;
- ``amx.tile_zero t`` -> ``@llvm.x86.tilezero(i8 t)``;
- ``amx.tile_load t, %m[..]`` -> ``@llvm.x86.tileloadd64(i8 t, ptr, i64 stride)``
  with the indexed element's address and the row stride in bytes (``tile_store``:
  ``@llvm.x86.tilestored64``);
- ``amx.tile_mul c, a, b`` -> ``@llvm.x86.tdpbusd(i8 c, i8 a, i8 b)``;
  ``amx.tile_mulf c, a, b`` -> ``@llvm.x86.tdpbf16ps(i8 c, i8 a, i8 b)``;
- ``amx.tile_release`` -> ``@llvm.x86.tilerelease()``.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, MemRefType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.dialects.amx import (
    TileConfigOp,
    TileLoadOp,
    TileMulfOp,
    TileMulOp,
    TileReleaseOp,
    TileStoreOp,
    TileZeroOp,
)
from qidao.passes.cpu.llvm.lowering import FunctionLowering, Handler
from qidao.passes.cpu.llvm.memref import element_address

_I8 = IntegerType(8)
CONFIG_BYTES = 64


def config_words(shapes: list[tuple[int, int]]) -> list[int]:
    """The 64-byte palette-1 configuration for tile shapes ``(rows, colsb)`` as
    eight little-endian 64-bit words."""
    config = bytearray(CONFIG_BYTES)
    config[0] = 1
    for t, (rows, colsb) in enumerate(shapes):
        config[16 + 2 * t : 18 + 2 * t] = colsb.to_bytes(2, "little")
        config[48 + t] = rows
    return [
        int.from_bytes(config[8 * w : 8 * w + 8], "little", signed=True)
        for w in range(CONFIG_BYTES // 8)
    ]


def _imm(fl: FunctionLowering, attr: IntegerAttr[IntegerType]) -> SSAValue:
    return fl.emit_value(llvm.ConstantOp(IntegerAttr(attr.value.data, _I8), _I8))


def _config(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, TileConfigOp)
    count = llvm.ConstantOp(IntegerAttr(CONFIG_BYTES // 8, i64), i64)
    slot = llvm.AllocaOp(count, i64, alignment=64)
    opaque = llvm.BitcastOp(slot, llvm.LLVMPointerType())
    entry = fl.region.first_block
    if entry is None or entry is fl.block or entry.last_op is None:
        for new in (count, slot, opaque):
            fl.emit(new)
    else:  # the entry block is complete: before its terminator
        entry.insert_ops_before([count, slot, opaque], entry.last_op)
    base: SSAValue = opaque.results[0]
    for w, word in enumerate(config_words(op.shapes())):
        ptr: SSAValue = base
        if w:
            gep = llvm.GEPOp(
                base, [llvm.GEP_USE_SSA_VAL], i64, ssa_indices=[fl.const(w)]
            )
            ptr = fl.emit_value(gep)
        fl.emit(llvm.StoreOp(fl.const(word), ptr))
    fl.emit(llvm.CallIntrinsicOp("llvm.x86.ldtilecfg", [base], []))


def _zero(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, TileZeroOp)
    fl.emit(llvm.CallIntrinsicOp("llvm.x86.tilezero", [_imm(fl, op.tile)], []))


def _memory(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, TileLoadOp | TileStoreOp)
    t = op.memref.type
    assert isinstance(t, MemRefType)
    memref_type: MemRefType[Attribute] = t
    indices = [fl.get(i) for i in op.indices]
    ptr = element_address(fl, memref_type, fl.get(op.memref), indices)
    stride = fl.const(op.row_stride_bytes())
    name = (
        "llvm.x86.tileloadd64"
        if isinstance(op, TileLoadOp)
        else "llvm.x86.tilestored64"
    )
    fl.emit(llvm.CallIntrinsicOp(name, [_imm(fl, op.tile), ptr, stride], []))


def _mul(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, TileMulOp | TileMulfOp)
    tiles = [_imm(fl, t) for t in (op.acc, op.a, op.b)]
    name = "llvm.x86.tdpbusd" if isinstance(op, TileMulOp) else "llvm.x86.tdpbf16ps"
    fl.emit(llvm.CallIntrinsicOp(name, tiles, []))


def _release(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, TileReleaseOp)
    fl.emit(llvm.CallIntrinsicOp("llvm.x86.tilerelease", [], []))


HANDLERS: dict[type[Operation], Handler] = {
    TileConfigOp: _config,
    TileZeroOp: _zero,
    TileLoadOp: _memory,
    TileStoreOp: _memory,
    TileMulOp: _mul,
    TileMulfOp: _mul,
    TileReleaseOp: _release,
}
