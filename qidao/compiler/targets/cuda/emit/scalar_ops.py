"""The arith and math ops the emitter knows, as C expressions.

One table per shape of C (``a + b``, an unsigned operation, a comparison, a
``math.h`` function: ``expf`` for ``f32``, ``exp`` for ``f64``), and
:func:`scalar_expression`, which writes one op over the C names of its operands.
NaN-propagating ``maximumf``/``minimumf`` and the rounding integer divisions go
through the preamble's helpers.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Attribute, Operation

from qidao.compiler.targets.cuda.emit.c_types import c_type

_BINARY = {
    arith.AddfOp: "+",
    arith.SubfOp: "-",
    arith.MulfOp: "*",
    arith.DivfOp: "/",
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.DivSIOp: "/",
    arith.RemSIOp: "%",
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
    arith.ShLIOp: "<<",
    arith.ShRSIOp: ">>",
}
_UNSIGNED_BINARY = {arith.DivUIOp: "/", arith.RemUIOp: "%", arith.ShRUIOp: ">>"}
_CMPI = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]
_CMPF = {
    "oeq": "{a} == {b}",
    "ogt": "{a} > {b}",
    "oge": "{a} >= {b}",
    "olt": "{a} < {b}",
    "ole": "{a} <= {b}",
    "one": "({a} < {b} || {a} > {b})",
    "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "une": "{a} != {b}",
    "uno": "({a} != {a} || {b} != {b})",
    "false": "false",
    "true": "true",
}
_CMPF_NAMES = list(arith.CMPF_COMPARISON_OPERATIONS)
_MATH = {
    mathd.ExpOp: "exp",
    mathd.Exp2Op: "exp2",
    mathd.ExpM1Op: "expm1",
    mathd.LogOp: "log",
    mathd.Log2Op: "log2",
    mathd.Log10Op: "log10",
    mathd.Log1pOp: "log1p",
    mathd.SqrtOp: "sqrt",
    mathd.RsqrtOp: "rsqrt",
    mathd.TanhOp: "tanh",
    mathd.SinOp: "sin",
    mathd.CosOp: "cos",
    mathd.TanOp: "tan",
    mathd.AsinOp: "asin",
    mathd.AcosOp: "acos",
    mathd.AtanOp: "atan",
    mathd.SinhOp: "sinh",
    mathd.CoshOp: "cosh",
    mathd.AsinhOp: "asinh",
    mathd.AcoshOp: "acosh",
    mathd.AtanhOp: "atanh",
    llvm.FRemOp: "fmod",
    mathd.ErfOp: "erf",
    mathd.AbsFOp: "fabs",
    mathd.FloorOp: "floor",
    mathd.CeilOp: "ceil",
    mathd.RoundOp: "round",
    mathd.TruncOp: "trunc",
    mathd.PowFOp: "pow",
    mathd.FmaOp: "fma",
    mathd.Atan2Op: "atan2",
    mathd.CopySignOp: "copysign",
}
_CASTS = (
    arith.IndexCastOp,
    arith.SIToFPOp,
    arith.FPToSIOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.ExtSIOp,
    arith.TruncIOp,
)
_UNSIGNED_CASTS = (arith.UIToFPOp, arith.FPToUIOp, arith.ExtUIOp)


def _math_name(base: str, t: Attribute) -> str:
    return f"{base}f" if isinstance(t, Float32Type) else base


def scalar_expression(op: Operation, args: Sequence[str]) -> str | None:
    """The C expression of the one result of ``op`` over ``args``, the C names
    of its operands; None when the table does not know ``op``."""
    kind = type(op)
    result_type = op.results[0].type
    if kind in _BINARY:
        return f"{args[0]} {_BINARY[kind]} {args[1]}"
    if kind in _UNSIGNED_BINARY:
        u = c_type(op.operands[0].type, unsigned=True)
        return f"({c_type(result_type)})(({u}){args[0]} {_UNSIGNED_BINARY[kind]} ({u}){args[1]})"
    if isinstance(op, arith.NegfOp):
        return f"-{args[0]}"
    if isinstance(op, arith.MaximumfOp | arith.MinimumfOp):
        which = "maximum" if isinstance(op, arith.MaximumfOp) else "minimum"
        return f"qd_{_math_name(which, result_type)}({args[0]}, {args[1]})"
    if isinstance(op, arith.MaxnumfOp | arith.MinnumfOp):
        which = "fmax" if isinstance(op, arith.MaxnumfOp) else "fmin"
        return f"{_math_name(which, result_type)}({args[0]}, {args[1]})"
    if isinstance(op, arith.MaxSIOp | arith.MinSIOp):
        cmp = ">" if isinstance(op, arith.MaxSIOp) else "<"
        return f"{args[0]} {cmp} {args[1]} ? {args[0]} : {args[1]}"
    if isinstance(op, arith.MaxUIOp | arith.MinUIOp):
        cmp = ">" if isinstance(op, arith.MaxUIOp) else "<"
        u = c_type(op.operands[0].type, unsigned=True)
        return f"({u}){args[0]} {cmp} ({u}){args[1]} ? {args[0]} : {args[1]}"
    if isinstance(op, arith.FloorDivSIOp):
        return f"({c_type(result_type)})qd_floordiv({args[0]}, {args[1]})"
    if isinstance(op, arith.CeilDivSIOp):
        return f"({c_type(result_type)})qd_ceildiv({args[0]}, {args[1]})"
    if isinstance(op, arith.CmpiOp | arith.CmpfOp):
        return _comparison(op, args)
    if isinstance(op, arith.SelectOp):
        return f"{args[0]} ? {args[1]} : {args[2]}"
    if isinstance(op, (*_CASTS, *_UNSIGNED_CASTS)):
        return _cast(op, args)
    if kind in _MATH:
        return f"{_math_name(_MATH[kind], result_type)}({', '.join(args)})"
    return None


def _comparison(op: arith.CmpiOp | arith.CmpfOp, args: Sequence[str]) -> str:
    """``cmpi`` (unsigned predicates through casts) or ``cmpf`` (NaN-aware)."""
    if isinstance(op, arith.CmpiOp):
        predicate = op.predicate.value.data
        if predicate >= 6:
            u = c_type(op.operands[0].type, unsigned=True)
            return f"({u}){args[0]} {_CMPI[predicate]} ({u}){args[1]}"
        return f"{args[0]} {_CMPI[predicate]} {args[1]}"
    name = _CMPF_NAMES[op.predicate.value.data]
    return _CMPF[name].format(a=args[0], b=args[1])


def _cast(op: Operation, args: Sequence[str]) -> str:
    """A C cast; through the unsigned type where the op reads or writes one."""
    result_type = op.results[0].type
    if isinstance(op, _CASTS):
        return f"({c_type(result_type)}){args[0]}"
    if isinstance(op, arith.FPToUIOp):
        u = c_type(result_type, unsigned=True)
    else:  # uitofp, extui: the operand is unsigned
        u = c_type(op.operands[0].type, unsigned=True)
    return f"({c_type(result_type)})({u}){args[0]}"
