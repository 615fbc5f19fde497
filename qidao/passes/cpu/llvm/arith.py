"""``convert-to-llvm`` handlers for the arith and math dialects (not a pass).

Float ops keep their ``fastmath`` flags. ``arith.maximumf``/``minimumf`` use the
NaN-propagating ``llvm.maximum``/``llvm.minimum`` intrinsics; ``maxnumf``/``minnumf``
use ``llvm.maxnum``/``llvm.minnum`` (each called by its type-mangled name). ``fptosi``/``fptoui`` use the saturating
``llvm.fpto[su]i.sat`` intrinsics (the xDSL translator has no plain fptosi), and
``uitofp`` zero-extends to i64 and then converts signed (from i64, it converts
``(x >> 1) | (x & 1)`` and doubles it where x reads negative). Math functions without an
LLVM intrinsic (erf, log1p, expm1, tan, ...) call libm.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.passes.cpu.llvm import fptoint
from qidao.passes.cpu.llvm.lowering import (
    FunctionLowering,
    Handler,
    LoweringError,
    convert_type,
)

fptoint.register()


def fastmath_of(op: Operation) -> llvm.FastMathAttr:
    """The op's arith/math fastmath flags as an llvm fastmath attribute."""
    flags = op.properties.get("fastmath")
    if not isinstance(flags, arith.FastMathFlagsAttr):
        return llvm.FastMathAttr(None)
    return llvm.FastMathAttr(flags.data)


def type_suffix(t: Attribute) -> str:
    """The overload suffix of an intrinsic on scalar type ``t`` (f32, i64...)."""
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, AnyFloat):
        return f"f{int(t.bitwidth)}"
    raise LoweringError(f"convert-to-llvm: no intrinsic suffix for {t}")


def _width(t: Attribute) -> int:
    t = convert_type(t)
    if not isinstance(t, IntegerType):
        raise LoweringError(f"convert-to-llvm: expected an integer type, got {t}")
    return int(t.width.data)


def _intrinsic(
    fl: FunctionLowering, name: str, args: list[SSAValue], res: Attribute
) -> SSAValue:
    return fl.emit_value(llvm.CallIntrinsicOp(name, args, [res]))


# -- float binary/unary ops ---------------------------------------------------------

_FLOAT_BINARY: dict[type[Operation], type[llvm.AbstractFloatArithOp]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}


def _float_binary(op: Operation, fl: FunctionLowering) -> None:
    lhs, rhs = fl.operands(op)
    new = _FLOAT_BINARY[type(op)](lhs, rhs, fastmath_of(op))
    fl.bind(op.results[0], fl.emit_value(new))


def _float_intrinsic2(name: str) -> Handler:
    def handler(op: Operation, fl: FunctionLowering) -> None:
        args = fl.operands(op)
        t = op.results[0].type
        fl.bind(op.results[0], _intrinsic(fl, f"{name}.{type_suffix(t)}", args, t))

    return handler


def _negf(op: Operation, fl: FunctionLowering) -> None:
    (x,) = fl.operands(op)
    fl.bind(op.results[0], fl.emit_value(llvm.FNegOp(x, fastmath_of(op))))


def _cmpf(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, arith.CmpfOp)
    lhs, rhs = fl.operands(op)
    predicate = op.predicate.value.data
    if predicate in (0, 15):  # "false", "true"
        fl.bind(op.result, fl.const(int(predicate == 15), i1))
        return
    fl.bind(op.result, fl.emit_value(llvm.FCmpOp(lhs, rhs, IntegerAttr(predicate, 64))))


# -- integer ops --------------------------------------------------------------------

_INT_BINARY: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
    arith.AddiOp: lambda a, b: llvm.AddOp(a, b),
    arith.SubiOp: lambda a, b: llvm.SubOp(a, b),
    arith.MuliOp: lambda a, b: llvm.MulOp(a, b),
    arith.DivSIOp: lambda a, b: llvm.SDivOp(a, b),
    arith.DivUIOp: lambda a, b: llvm.UDivOp(a, b),
    arith.RemSIOp: lambda a, b: llvm.SRemOp(a, b),
    arith.RemUIOp: lambda a, b: llvm.URemOp(a, b),
    arith.AndIOp: lambda a, b: llvm.AndOp(a, b),
    arith.OrIOp: lambda a, b: llvm.OrOp(a, b),
    arith.XOrIOp: lambda a, b: llvm.XOrOp(a, b),
    arith.ShLIOp: lambda a, b: llvm.ShlOp(a, b),
    arith.ShRSIOp: lambda a, b: llvm.AShrOp(a, b),
    arith.ShRUIOp: lambda a, b: llvm.LShrOp(a, b),
}


def _int_binary(op: Operation, fl: FunctionLowering) -> None:
    lhs, rhs = fl.operands(op)
    fl.bind(op.results[0], fl.emit_value(_INT_BINARY[type(op)](lhs, rhs)))


def _icmp(fl: FunctionLowering, lhs: SSAValue, rhs: SSAValue, pred: str) -> SSAValue:
    code = [f.value for f in llvm.ICmpPredicateFlag].index(pred)
    return fl.emit_value(llvm.ICmpOp(lhs, rhs, IntegerAttr(code, 64)))


def _cmpi(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, arith.CmpiOp)
    lhs, rhs = fl.operands(op)
    code = IntegerAttr(op.predicate.value.data, 64)
    fl.bind(op.result, fl.emit_value(llvm.ICmpOp(lhs, rhs, code)))


_MINMAX_PRED: dict[type[Operation], str] = {
    arith.MinSIOp: "slt",
    arith.MaxSIOp: "sgt",
    arith.MinUIOp: "ult",
    arith.MaxUIOp: "ugt",
}


def _int_minmax(op: Operation, fl: FunctionLowering) -> None:
    lhs, rhs = fl.operands(op)
    take_lhs = _icmp(fl, lhs, rhs, _MINMAX_PRED[type(op)])
    fl.bind(op.results[0], fl.emit_value(llvm.SelectOp(take_lhs, lhs, rhs)))


def _floordivsi(op: Operation, fl: FunctionLowering) -> None:
    # q = a / b; if (a % b != 0 && (a % b < 0) != (b < 0)) q -= 1
    a, b = fl.operands(op)
    zero = fl.const(0, a.type)
    q = fl.emit_value(llvm.SDivOp(a, b))
    r = fl.emit_value(llvm.SRemOp(a, b))
    inexact = _icmp(fl, r, zero, "ne")
    signs_differ = fl.emit_value(
        llvm.XOrOp(_icmp(fl, r, zero, "slt"), _icmp(fl, b, zero, "slt"))
    )
    adjust = fl.emit_value(llvm.AndOp(inexact, signs_differ))
    q_minus_one = fl.emit_value(llvm.SubOp(q, fl.const(1, a.type)))
    fl.bind(op.results[0], fl.emit_value(llvm.SelectOp(adjust, q_minus_one, q)))


def _ceildivsi(op: Operation, fl: FunctionLowering) -> None:
    # q = a / b; if (a % b != 0 && (a % b < 0) == (b < 0)) q += 1
    a, b = fl.operands(op)
    zero = fl.const(0, a.type)
    q = fl.emit_value(llvm.SDivOp(a, b))
    r = fl.emit_value(llvm.SRemOp(a, b))
    inexact = _icmp(fl, r, zero, "ne")
    signs_same = _icmp(fl, _icmp(fl, r, zero, "slt"), _icmp(fl, b, zero, "slt"), "eq")
    adjust = fl.emit_value(llvm.AndOp(inexact, signs_same))
    q_plus_one = fl.emit_value(llvm.AddOp(q, fl.const(1, a.type)))
    fl.bind(op.results[0], fl.emit_value(llvm.SelectOp(adjust, q_plus_one, q)))


def _select(op: Operation, fl: FunctionLowering) -> None:
    cond, lhs, rhs = fl.operands(op)
    fl.bind(op.results[0], fl.emit_value(llvm.SelectOp(cond, lhs, rhs)))


def _constant(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, arith.ConstantOp)
    value = op.value
    t = convert_type(op.result.type)
    if isinstance(value, IntegerAttr):
        if isinstance(value.type, IndexType):
            value = IntegerAttr(value.value.data, i64)
        if isinstance(t, IntegerType) and t.width.data == 1:
            value = IntegerAttr(value.value.data & 1, t)
    if isinstance(value, IntegerAttr | FloatAttr):
        fl.bind(op.result, fl.scalar_constant(value, t))
        return
    new = fl.emit_value(llvm.ConstantOp(value, t))
    fl.bind(op.result, new)


# -- casts --------------------------------------------------------------------------


def _int_resize(
    fl: FunctionLowering, x: SSAValue, to: Attribute, signed: bool
) -> SSAValue:
    src, dst = _width(x.type), _width(to)
    to = convert_type(to)
    if src == dst:
        return x
    if src > dst:
        return fl.emit_value(llvm.TruncOp(x, to))
    if signed:
        return fl.emit_value(llvm.SExtOp(x, to))
    return fl.emit_value(llvm.ZExtOp(x, to))


def _int_cast(signed: bool) -> Handler:
    def handler(op: Operation, fl: FunctionLowering) -> None:
        (x,) = fl.operands(op)
        fl.bind(op.results[0], _int_resize(fl, x, op.results[0].type, signed))

    return handler


def _sitofp(op: Operation, fl: FunctionLowering) -> None:
    (x,) = fl.operands(op)
    fl.bind(op.results[0], fl.emit_value(llvm.SIToFPOp(x, op.results[0].type)))


def _uitofp(op: Operation, fl: FunctionLowering) -> None:
    (x,) = fl.operands(op)
    t = op.results[0].type
    if _width(x.type) < 64:
        wide = _int_resize(fl, x, i64, signed=False)
        fl.bind(op.results[0], fl.emit_value(llvm.SIToFPOp(wide, t)))
        return
    # x >= 2**63 reads negative as signed: convert (x >> 1) | (x & 1) (the lost bit
    # kept as a sticky bit, so the one rounding is right) and double it.
    one = fl.const(1, i64)
    direct = fl.emit_value(llvm.SIToFPOp(x, t))
    halved = fl.emit_value(
        llvm.OrOp(fl.emit_value(llvm.LShrOp(x, one)), fl.emit_value(llvm.AndOp(x, one)))
    )
    half = fl.emit_value(llvm.SIToFPOp(halved, t))
    doubled = fl.emit_value(llvm.FAddOp(half, half, llvm.FastMathAttr(None)))
    negative = _icmp(fl, x, fl.const(0, i64), "slt")
    fl.bind(op.results[0], fl.emit_value(llvm.SelectOp(negative, doubled, direct)))


_UNO = 14
"""``fcmp uno``: true when either operand is NaN (arith's and LLVM's numbering)."""
_OGE = 3
"""``fcmp oge``: ordered and greater or equal."""


def _fptoint(signed: bool) -> Handler:
    def handler(op: Operation, fl: FunctionLowering) -> None:
        (x,) = fl.operands(op)
        t = op.results[0].type
        if isinstance(t, IntegerType) and x.type in (f32, f64):
            fl.bind(op.results[0], _clamped_fptoint(fl, x, t, signed))
            return
        kind = "fptosi" if signed else "fptoui"
        name = f"llvm.{kind}.sat.{type_suffix(t)}.{type_suffix(x.type)}"
        fl.bind(op.results[0], _intrinsic(fl, name, [x], t))

    return handler


def _clamped_fptoint(
    fl: FunctionLowering, x: SSAValue, t: IntegerType, signed: bool
) -> SSAValue:
    """``llvm.fpto[su]i.sat``'s result, in ops that vectorize (``fptoint.py``):
    ``x`` clamped to ``[lo, the largest float below limit]`` (``limit``: the first
    integer above ``t``'s range), converted (truncating), ``limit - 1`` where ``x
    >= limit`` (only when the clamp's bound truncates below it: 32 and 64 bits),
    and 0 where ``x`` is NaN."""
    width = t.width.data
    lo, limit = (-(2 ** (width - 1)), 2 ** (width - 1)) if signed else (0, 2**width)
    dtype = np.float32 if x.type == f32 else np.float64
    below = dtype(np.nextafter(dtype(limit), dtype(0)))
    suffix = type_suffix(x.type)
    above = _intrinsic(
        fl, f"llvm.maxnum.{suffix}", [x, fl.const(float(lo), x.type)], x.type
    )
    inside = _intrinsic(
        fl, f"llvm.minnum.{suffix}", [above, fl.const(float(below), x.type)], x.type
    )
    cast = fptoint.FPToSIOp if signed else fptoint.FPToUIOp
    result = fl.emit_value(cast(inside, t))
    if int(below) != limit - 1:
        big = fl.emit_value(
            llvm.FCmpOp(x, fl.const(float(limit), x.type), IntegerAttr(_OGE, 64))
        )
        top = fl.const(limit - 1, t)
        result = fl.emit_value(llvm.SelectOp(big, top, result))
    nan = fl.emit_value(llvm.FCmpOp(x, x, IntegerAttr(_UNO, 64)))
    return fl.emit_value(llvm.SelectOp(nan, fl.const(0, t), result))


def _float_cast(cls: type[llvm.FPExtOp] | type[llvm.FPTruncOp]) -> Handler:
    def handler(op: Operation, fl: FunctionLowering) -> None:
        (x,) = fl.operands(op)
        fl.bind(op.results[0], fl.emit_value(cls(x, op.results[0].type)))

    return handler


def _bitcast(op: Operation, fl: FunctionLowering) -> None:
    (x,) = fl.operands(op)
    t = op.results[0].type
    fl.bind(op.results[0], fl.emit_value(llvm.BitcastOp(x, t)))


# -- math ---------------------------------------------------------------------------

_MATH_UNARY: dict[type[Operation], str] = {
    math.ExpOp: "llvm.exp",
    math.LogOp: "llvm.log",
    math.SqrtOp: "llvm.sqrt",
    math.AbsFOp: "llvm.fabs",
    math.Exp2Op: "llvm.exp2",
    math.Log2Op: "llvm.log2",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.FloorOp: "llvm.floor",
    math.CeilOp: "llvm.ceil",
}
"""Unary math ops and their LLVM intrinsics, called by their type-mangled names
(``llvm.exp.f32``, ``llvm.exp.v16f32``): xDSL's ``llvm.intr.exp`` and friends declare
one unmangled ``@llvm.exp`` per module, so f32 and f64 uses in one module clash."""

_MATH_INTRINSIC: dict[type[Operation], str] = {
    math.TanhOp: "llvm.tanh",
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.Log10Op: "llvm.log10",
    math.CopySignOp: "llvm.copysign",
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
    arith.MaxnumfOp: "llvm.maxnum",
    arith.MinnumfOp: "llvm.minnum",
}
"""Called by their type-mangled names too: xDSL's ``llvm.intr.maxnum`` declares one
unmangled ``@llvm.maxnum`` per module, for the first type it meets."""

_MATH_LIBM: dict[type[Operation], str] = {
    math.ErfOp: "erf",
    math.Log1pOp: "log1p",
    math.ExpM1Op: "expm1",
    math.TanOp: "tan",
    math.AtanOp: "atan",
    math.Atan2Op: "atan2",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.CbrtOp: "cbrt",
}


def _math_unary(op: Operation, fl: FunctionLowering) -> None:
    (x,) = fl.operands(op)
    name = f"{_MATH_UNARY[type(op)]}.{_mangled(x.type)}"
    flags = fastmath_of(op)
    call: Operation = llvm.CallIntrinsicOp(name, [x], [x.type])
    if flags.data:  # the xDSL translator takes no flags on intrinsic calls
        call = _UNARY_OPS[type(op)](x, flags)
    fl.bind(op.results[0], fl.emit_value(call))


def _mangled(t: Attribute) -> str:
    """An intrinsic's overload suffix for a float or a vector of floats."""
    if isinstance(t, VectorType):
        return f"v{t.get_shape()[0]}{type_suffix(t.element_type)}"
    return type_suffix(t)


def _abs(x: SSAValue, flags: llvm.FastMathAttr) -> Operation:
    return llvm.FAbsOp(x, x.type, flags)


_UNARY_OPS: dict[
    type[Operation], Callable[[SSAValue, llvm.FastMathAttr], Operation]
] = {
    math.ExpOp: llvm.FExpOp,
    math.LogOp: llvm.FLogOp,
    math.SqrtOp: llvm.FSqrtOp,
    math.AbsFOp: _abs,
    math.Exp2Op: llvm.FExp2Op,
    math.Log2Op: llvm.FLog2Op,
    math.SinOp: llvm.FSinOp,
    math.CosOp: llvm.FCosOp,
    math.FloorOp: llvm.FFloorOp,
    math.CeilOp: llvm.FCeilOp,
}
"""The xDSL ops of ``_MATH_UNARY`` for ops with fastmath flags (one float type per
module then)."""


def _math_libm(op: Operation, fl: FunctionLowering) -> None:
    args = fl.operands(op)
    t = op.results[0].type
    base = _MATH_LIBM[type(op)]
    if isinstance(t, Float32Type):
        name = base + "f"
    elif isinstance(t, Float64Type):
        name = base
    else:
        raise LoweringError(f"convert-to-llvm: {op.name} on {t} has no libm function")
    result = fl.call_extern(name, args, t)
    assert result is not None
    fl.bind(op.results[0], result)


def _rsqrt(op: Operation, fl: FunctionLowering) -> None:
    (x,) = fl.operands(op)
    root = fl.emit_value(llvm.FSqrtOp(x))
    one = fl.const(1.0, x.type)
    fl.bind(op.results[0], fl.emit_value(llvm.FDivOp(one, root, fastmath_of(op))))


def _powf(op: Operation, fl: FunctionLowering) -> None:
    lhs, rhs = fl.operands(op)
    fl.bind(op.results[0], fl.emit_value(llvm.FPowOp(lhs, rhs)))


def _fma(op: Operation, fl: FunctionLowering) -> None:
    a, b, c = fl.operands(op)
    fl.bind(op.results[0], fl.emit_value(llvm.FMAOp(a, b, c)))


HANDLERS: dict[type[Operation], Handler] = {
    **dict.fromkeys(_FLOAT_BINARY, _float_binary),
    **dict.fromkeys(_INT_BINARY, _int_binary),
    **dict.fromkeys(_MINMAX_PRED, _int_minmax),
    **dict.fromkeys(_MATH_UNARY, _math_unary),
    **dict.fromkeys(_MATH_LIBM, _math_libm),
    **{cls: _float_intrinsic2(name) for cls, name in _MATH_INTRINSIC.items()},
    arith.NegfOp: _negf,
    arith.CmpfOp: _cmpf,
    arith.CmpiOp: _cmpi,
    arith.FloorDivSIOp: _floordivsi,
    arith.CeilDivSIOp: _ceildivsi,
    arith.SelectOp: _select,
    arith.ConstantOp: _constant,
    arith.IndexCastOp: _int_cast(signed=True),
    arith.ExtSIOp: _int_cast(signed=True),
    arith.ExtUIOp: _int_cast(signed=False),
    arith.TruncIOp: _int_cast(signed=True),
    arith.SIToFPOp: _sitofp,
    arith.UIToFPOp: _uitofp,
    arith.FPToSIOp: _fptoint(signed=True),
    arith.FPToUIOp: _fptoint(signed=False),
    arith.ExtFOp: _float_cast(llvm.FPExtOp),
    arith.TruncFOp: _float_cast(llvm.FPTruncOp),
    arith.BitcastOp: _bitcast,
    math.RsqrtOp: _rsqrt,
    math.PowFOp: _powf,
    math.FmaOp: _fma,
}
