"""``convert-to-llvm`` handlers for the vector ops ``vectorize`` emits (not a pass),
and for arith/math float ops on 1-D vector types.

- ``vector.load %m[%i, .., %k] : memref<..xT>, vector<WxT>`` -> one inbounds GEP to
  the first element (the same address arithmetic as ``memref.load``, see
  ``_llvm_memref.element_address``) and ``llvm.load`` of ``vector<WxT>`` with
  alignment ``sizeof(T)`` (the element, not the vector: rows need not be aligned).
- ``vector.store`` -> the same GEP and ``llvm.store`` of the vector.
- ``vector.broadcast %s : T to vector<WxT>`` -> a splat: ``llvm.insertelement`` into
  lane 0 of an undef vector, then ``llvm.shufflevector`` with an all-zero mask.
- ``vector.fma`` -> ``llvm.intr.fma`` on the vector type.
- arith/math float ops on a vector type: the same llvm op on the vector for the
  plain ops (``fadd``, ``fneg``, ``llvm.exp``...); intrinsics named by their overload
  suffix (``llvm.maximum.f32``) get the vector one (``llvm.maximum.v16f32``). Ops on
  scalars go to the ``_llvm_arith`` handler as before.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, math, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    MemRefType,
    VectorType,
    i32,
)
from xdsl.ir import Attribute, Operation

from qidao.passes import _llvm_arith
from qidao.passes._llvm_lowering import (
    FunctionLowering,
    Handler,
    LoweringError,
    element_bytes,
)
from qidao.passes._llvm_memref import element_address


def _memref_type(value: Attribute) -> MemRefType[Attribute]:
    if not isinstance(value, MemRefType):
        raise LoweringError(f"convert-to-llvm: expected a memref, got {value}")
    return value


def _vector_type(t: Attribute) -> VectorType[Attribute]:
    if (
        not isinstance(t, VectorType)
        or len(t.get_shape()) != 1
        or t.get_num_scalable_dims()
    ):
        raise LoweringError(
            f"convert-to-llvm: only fixed 1-D vector types are lowered, got {t}"
        )
    return t


def _load(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, vector.LoadOp)
    t = _memref_type(op.base.type)
    vt = _vector_type(op.result.type)
    indices = [fl.get(i) for i in op.indices]
    ptr = element_address(fl, t, fl.get(op.base), indices)
    load = llvm.LoadOp(ptr, vt, alignment=element_bytes(t.element_type))
    fl.bind(op.result, fl.emit_value(load))


def _store(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, vector.StoreOp)
    t = _memref_type(op.base.type)
    _vector_type(op.vector.type)
    indices = [fl.get(i) for i in op.indices]
    ptr = element_address(fl, t, fl.get(op.base), indices)
    fl.emit(
        llvm.StoreOp(fl.get(op.vector), ptr, alignment=element_bytes(t.element_type))
    )


def _broadcast(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, vector.BroadcastOp)
    vt = _vector_type(op.vector.type)
    if isinstance(op.source.type, VectorType):
        raise LoweringError(
            f"convert-to-llvm: vector.broadcast from {op.source.type} is not lowered"
        )
    undef = fl.emit_value(llvm.UndefOp(vt))
    lane0 = fl.emit_value(
        llvm.InsertElementOp(undef, fl.get(op.source), fl.const(0, i32))
    )
    mask = DenseArrayBase.from_list(i32, [0] * vt.get_shape()[0])
    fl.bind(op.vector, fl.emit_value(llvm.ShuffleVectorOp(lane0, lane0, mask, vt)))


def _fma(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, vector.FMAOp)
    a, b, c = fl.operands(op)
    fl.bind(op.res, fl.emit_value(llvm.FMAOp(a, b, c)))


_INTRINSIC: dict[type[Operation], str] = {
    math.TanhOp: "llvm.tanh",
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
}
"""Ops that ``_llvm_arith`` lowers to an intrinsic call named by a scalar suffix."""

_SAME_OP: tuple[type[Operation], ...] = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.NegfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    math.FmaOp,
    math.SqrtOp,
    math.AbsFOp,
    math.ExpOp,
    math.LogOp,
    math.Exp2Op,
    math.Log2Op,
    math.SinOp,
    math.CosOp,
    math.FloorOp,
    math.CeilOp,
)
"""Ops whose ``_llvm_arith`` lowering takes its type from the operands, so it is
right for vectors as it is."""


def _lanewise(op: Operation, fl: FunctionLowering) -> None:
    scalar = _llvm_arith.HANDLERS[type(op)]
    t = op.results[0].type
    if not isinstance(t, VectorType):
        scalar(op, fl)
        return
    vt = _vector_type(t)
    if type(op) in _INTRINSIC:
        element = vt.element_type
        if not isinstance(element, AnyFloat):
            raise LoweringError(f"convert-to-llvm: {op.name} on {t} is not lowered")
        suffix = f"v{vt.get_shape()[0]}f{int(element.bitwidth)}"
        name = f"{_INTRINSIC[type(op)]}.{suffix}"
        call = llvm.CallIntrinsicOp(name, fl.operands(op), [vt])
        fl.bind(op.results[0], fl.emit_value(call))
        return
    if type(op) in _SAME_OP:
        scalar(op, fl)
        return
    raise LoweringError(f"convert-to-llvm: {op.name} on {t} is not lowered")


HANDLERS: dict[type[Operation], Handler] = {
    vector.LoadOp: _load,
    vector.StoreOp: _store,
    vector.BroadcastOp: _broadcast,
    vector.FMAOp: _fma,
    **dict.fromkeys((*_INTRINSIC, *_SAME_OP), _lanewise),
}
