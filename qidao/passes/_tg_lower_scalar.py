"""The scalar code of each elementwise tg op, by element type (not a pass).

``convert-tg-to-affine`` computes an elementwise op one element at a time
(``_tg_lower_elementwise.PointwiseEvaluator``); this module says which ``arith`` and
``math`` ops compute that element from the operands' scalars:

========================  ======================  ==================================
tg op                     floats                  integers (i32, i64) / bools (i1)
========================  ======================  ==================================
add sub mul               addf subf mulf          addi subi muli (wrap around)
div                       divf                    divsi, with ``x / 0 = 0`` and
                                                  ``MIN / -1 = MIN`` selected
max min                   maximumf minimumf       maxsi minsi
neg abs relu              negf, absf, maximumf    ``0 - x``, select, maxsi
pow                       powf                    (floats only)
exp log sqrt tanh erf     math.*                  (floats only)
less ... not_equal        cmpf olt ole ogt oge    cmpi slt sle sgt sge eq ne
                          oeq une
logical_and/or/xor/not                            andi ori xori, ``xori x, true``
select                    select                  select
cast                      extf truncf fptosi      extsi trunci sitofp, i1: extui
                          ``cmpf une 0`` (bool)   uitofp, ``cmpi ne 0`` (bool)
========================  ======================  ==================================

Integer division by zero and ``MIN / -1`` trap on x86 (``idiv`` raises SIGFPE), so
the divisor is made 1 in those two cases and the result selected: no input can kill
the process.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.dialects import tg
from qidao.passes._tg_lower_common import Emitter, TgLoweringError


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _width(t: Attribute) -> int:
    if isinstance(t, AnyFloat):
        return int(t.bitwidth)
    assert isinstance(t, IntegerType), t
    return int(t.width.data)


def _by_kind(
    on_float: Callable[[SSAValue, SSAValue], Operation],
    on_int: Callable[[SSAValue, SSAValue], Operation],
) -> Callable[[Emitter, SSAValue, SSAValue], SSAValue]:
    def emit(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
        return em.value(on_float(a, b) if is_float(a.type) else on_int(a, b))

    return emit


def _div(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    if is_float(a.type):
        return em.divf(a, b)
    zero, one, minus_one = (em.constant(c, b.type) for c in (0, 1, -1))
    by_zero = em.value(arith.CmpiOp(b, zero, "eq"))
    by_minus_one = em.value(arith.CmpiOp(b, minus_one, "eq"))
    special = em.value(arith.OrIOp(by_zero, by_minus_one))
    safe = em.value(arith.SelectOp(special, one, b))
    q = em.value(arith.DivSIOp(a, safe))
    negated = em.value(arith.SubiOp(zero, a))
    q = em.value(arith.SelectOp(by_minus_one, negated, q))
    return em.value(arith.SelectOp(by_zero, zero, q))


def _compare(float_predicate: str, int_predicate: str) -> Callable[..., SSAValue]:
    def emit(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return em.value(arith.CmpfOp(a, b, float_predicate))
        return em.value(arith.CmpiOp(a, b, int_predicate))

    return emit


BINARY: dict[type[Operation], Callable[[Emitter, SSAValue, SSAValue], SSAValue]] = {
    tg.AddOp: _by_kind(arith.AddfOp, arith.AddiOp),
    tg.SubOp: _by_kind(arith.SubfOp, arith.SubiOp),
    tg.MulOp: _by_kind(arith.MulfOp, arith.MuliOp),
    tg.DivOp: _div,
    tg.MaxOp: _by_kind(arith.MaximumfOp, arith.MaxSIOp),
    tg.MinOp: _by_kind(arith.MinimumfOp, arith.MinSIOp),
    tg.PowOp: lambda em, a, b: em.value(math.PowFOp(a, b)),
    tg.LessOp: _compare("olt", "slt"),
    tg.LessEqualOp: _compare("ole", "sle"),
    tg.GreaterOp: _compare("ogt", "sgt"),
    tg.GreaterEqualOp: _compare("oge", "sge"),
    tg.EqualOp: _compare("oeq", "eq"),
    tg.NotEqualOp: _compare("une", "ne"),
    tg.LogicalAndOp: lambda em, a, b: em.value(arith.AndIOp(a, b)),
    tg.LogicalOrOp: lambda em, a, b: em.value(arith.OrIOp(a, b)),
    tg.LogicalXorOp: lambda em, a, b: em.value(arith.XOrIOp(a, b)),
}


def _sigmoid(em: Emitter, x: SSAValue) -> SSAValue:
    one = em.constant(1.0, x.type)
    e = em.value(math.ExpOp(em.value(arith.NegfOp(x))))
    return em.divf(one, em.addf(one, e))


def _neg(em: Emitter, x: SSAValue) -> SSAValue:
    if is_float(x.type):
        return em.value(arith.NegfOp(x))
    return em.value(arith.SubiOp(em.constant(0, x.type), x))


def _abs(em: Emitter, x: SSAValue) -> SSAValue:
    if is_float(x.type):
        return em.value(math.AbsFOp(x))
    zero = em.constant(0, x.type)
    negative = em.value(arith.CmpiOp(x, zero, "slt"))
    return em.value(arith.SelectOp(negative, em.value(arith.SubiOp(zero, x)), x))


def _relu(em: Emitter, x: SSAValue) -> SSAValue:
    if is_float(x.type):
        return em.maxf(x, em.constant(0.0, x.type))
    return em.value(arith.MaxSIOp(x, em.constant(0, x.type)))


UNARY: dict[type[Operation], Callable[[Emitter, SSAValue], SSAValue]] = {
    tg.NegOp: _neg,
    tg.AbsOp: _abs,
    tg.ExpOp: lambda em, x: em.value(math.ExpOp(x)),
    tg.LogOp: lambda em, x: em.value(math.LogOp(x)),
    tg.SqrtOp: lambda em, x: em.value(math.SqrtOp(x)),
    tg.TanhOp: lambda em, x: em.value(math.TanhOp(x)),
    tg.ErfOp: lambda em, x: em.value(math.ErfOp(x)),
    tg.SigmoidOp: _sigmoid,
    tg.ReluOp: _relu,
    tg.LogicalNotOp: lambda em, x: em.value(arith.XOrIOp(x, em.constant(1, x.type))),
}


def select(em: Emitter, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.SelectOp(condition, a, b))


def cast(em: Emitter, x: SSAValue, to: Attribute) -> SSAValue:
    """``x`` converted to element type ``to`` (``tg.cast``'s rules)."""
    source = x.type
    if source == to:
        return x
    bool_in = isinstance(source, IntegerType) and source.width.data == 1
    if isinstance(to, IntegerType) and to.width.data == 1:
        if is_float(source):
            return em.value(arith.CmpfOp(x, em.constant(0.0, source), "une"))
        return em.value(arith.CmpiOp(x, em.constant(0, source), "ne"))
    if is_float(to):
        if is_float(source):
            if _width(to) > _width(source):
                return em.value(arith.ExtFOp(x, to))
            return em.value(arith.TruncFOp(x, to))
        assert isinstance(to, AnyFloat)
        if bool_in:
            return em.value(arith.UIToFPOp(x, to))
        return em.value(arith.SIToFPOp(x, to))
    if not isinstance(to, IntegerType):
        raise TgLoweringError(f"convert-tg-to-affine: tg.cast to {to} is not lowered")
    if is_float(source):
        return em.value(arith.FPToSIOp(x, to))
    if bool_in:
        return em.value(arith.ExtUIOp(x, to))
    if _width(to) > _width(source):
        return em.value(arith.ExtSIOp(x, to))
    return em.value(arith.TruncIOp(x, to))
