"""``convert-to-llvm`` handlers for the vector ops ``vectorize`` emits (not a pass),
and for arith/math float ops on 1-D vector types.

- ``vector.load %m[%i, .., %k] : memref<..xT>, vector<WxT>`` -> one inbounds GEP to
  the first element (the same address arithmetic as ``memref.load``, see
  ``memref.element_address``) and ``llvm.load`` of ``vector<WxT>`` with
  alignment ``sizeof(T)`` (the element, not the vector: rows need not be aligned).
- ``vector.store`` -> the same GEP and ``llvm.store`` of the vector.
- ``vector.broadcast %s : T to vector<WxT>`` -> a splat: ``llvm.insertelement`` into
  lane 0 of an undef vector, then ``llvm.shufflevector`` with an all-zero mask.
- ``vector.fma`` and ``math.fma`` on a vector type -> ``llvm.intr.fma`` on the vector
  type (``llvm.fma.v16f32`` in LLVM IR: one ``vfmadd`` per vector on AVX-512).
- ``vector.reduction <kind>, %v[, %acc] : vector<WxT> into T`` (kinds ``add``,
  ``maximumf``, ``minimumf``, ``maxnumf``, ``minnumf``) -> a shuffle tree: the low
  and high halves (``llvm.shufflevector``) combined lane by lane (``fadd``,
  ``llvm.maximum.v8f32``...) until one lane is left (a width that is not a power of
  two combines its last odd lanes one by one), that lane read by a ``bitcast`` of
  ``vector<1xT>`` to ``T``, then combined with ``%acc`` (``acc + v``). Its order of
  additions is the tree's, fixed: the same input gives the same bits every call.
- arith/math float ops on a vector type: the same llvm op on the vector for the
  plain ops (``fadd``, ``fneg``, ``llvm.exp``...); intrinsics named by their overload
  suffix (``llvm.maximum.f32``) get the vector one (``llvm.maximum.v16f32``). Ops on
  scalars go to the ``arith_patterns`` handler as before.
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
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.passes.cpu.llvm import arith as arith_patterns
from qidao.passes.cpu.llvm.lowering import (
    FunctionLowering,
    Handler,
    LoweringError,
    element_bytes,
)
from qidao.passes.cpu.llvm.memref import element_address


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


def _combine(
    kind: vector.CombiningKindFlag,
    lhs: SSAValue,
    rhs: SSAValue,
    fl: FunctionLowering,
) -> SSAValue:
    """``lhs <kind> rhs`` on two values of one (scalar or vector) float type."""
    t = lhs.type
    if kind == vector.CombiningKindFlag.ADD:
        return fl.emit_value(llvm.FAddOp(lhs, rhs))
    # intrinsics named with their overload suffix (xDSL's translator declares an
    # unsuffixed llvm.maxnum once, for the first type it meets: the halves of a
    # reduction tree are each a different type)
    names = {
        vector.CombiningKindFlag.MAXIMUMF: "llvm.maximum",
        vector.CombiningKindFlag.MINIMUMF: "llvm.minimum",
        vector.CombiningKindFlag.MAXNUMF: "llvm.maxnum",
        vector.CombiningKindFlag.MINNUMF: "llvm.minnum",
    }
    if kind not in names:
        raise LoweringError(f"convert-to-llvm: vector.reduction <{kind.value}> on {t}")
    if isinstance(t, VectorType):
        element = t.element_type
        assert isinstance(element, AnyFloat)
        suffix = f"v{t.get_shape()[0]}f{int(element.bitwidth)}"
    else:
        assert isinstance(t, AnyFloat)
        suffix = f"f{int(t.bitwidth)}"
    call = llvm.CallIntrinsicOp(f"{names[kind]}.{suffix}", [lhs, rhs], [t])
    return fl.emit_value(call)


def _lanes(value: SSAValue, first: int, count: int, fl: FunctionLowering) -> SSAValue:
    """Lanes ``[first, first + count)`` of ``value`` as a vector of ``count``."""
    vt = _vector_type(value.type)
    part = VectorType(vt.element_type, [count])
    mask = DenseArrayBase.from_list(i32, list(range(first, first + count)))
    return fl.emit_value(llvm.ShuffleVectorOp(value, value, mask, part))


def _reduction(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, vector.ReductionOp)
    vt = _vector_type(op.vector.type)
    kind = op.kind.data
    element = vt.element_type
    value = fl.get(op.vector)
    width = vt.get_shape()[0]
    while width % 2 == 0 and width > 1:
        width //= 2
        value = _combine(
            kind, _lanes(value, 0, width, fl), _lanes(value, width, width, fl), fl
        )
    lanes = [value] if width == 1 else [_lanes(value, k, 1, fl) for k in range(width)]
    scalars = [fl.emit_value(llvm.BitcastOp(lane, element)) for lane in lanes]
    result = scalars[0]
    for lane in scalars[1:]:
        result = _combine(kind, result, lane, fl)
    if op.acc is not None:
        result = _combine(kind, fl.get(op.acc), result, fl)
    fl.bind(op.dest, result)


_INTRINSIC: dict[type[Operation], str] = {
    math.TanhOp: "llvm.tanh",
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
    arith.MaxnumfOp: "llvm.maxnum",
    arith.MinnumfOp: "llvm.minnum",
}
"""Ops that ``arith_patterns`` lowers to an intrinsic call named by a scalar suffix."""

_SAME_OP: tuple[type[Operation], ...] = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.NegfOp,
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
    arith.ExtFOp,
    arith.TruncFOp,
)
"""Ops whose ``arith_patterns`` lowering takes its type from the operands (or, for
``extf``/``truncf``, from the op's vector result type), so it is right for vectors
as it is."""


def _lanewise(op: Operation, fl: FunctionLowering) -> None:
    scalar = arith_patterns.HANDLERS[type(op)]
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
    vector.ReductionOp: _reduction,
    **dict.fromkeys((*_INTRINSIC, *_SAME_OP), _lanewise),
}
