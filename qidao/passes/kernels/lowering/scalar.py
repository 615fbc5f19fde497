"""The scalar code of each elementwise tg op, by element type (not a pass).

``convert-tg-to-affine`` computes an elementwise op one element at a time
(``elementwise.PointwiseEvaluator``); this module says which ``arith`` and
``math`` ops compute that element from the operands' scalars (:func:`binary`,
:func:`unary`, :func:`cast`, :func:`select`):

========================  ======================  ==================================
tg op                     floats                  signed integers (i8 .. i64) /
                                                  bools (i1)
========================  ======================  ==================================
add sub mul               addf subf mulf          addi subi muli (wrap around)
div                       divf                    divsi, with ``x / 0 = 0`` and
                                                  ``MIN / -1 = MIN`` selected
max min                   maximumf minimumf       maxsi minsi
neg abs relu              negf, absf, maximumf    ``0 - x``, select, maxsi
pow                       powf                    (floats only)
fmod                      llvm.frem (C fmod)      (floats only)
exp log sqrt tanh erf     math.*                  (floats only)
sin cos, tan asin acos
atan sinh cosh asinh
acosh atanh
round                     math.roundeven          (floats only)
bitwise_and/or/xor/not                            andi ori xori, ``xori x, -1``
shift_left                                        shli, 0 for an amount >= width
shift_right                                       shrsi by ``minui(s, width - 1)``
less ... not_equal        cmpf olt ole ogt oge    cmpi slt sle sgt sge eq ne
                          oeq une
logical_and/or/xor/not                            andi ori xori, ``xori x, true``
select                    select                  select
cast                      extf truncf fptosi      extsi trunci sitofp, i1: extui
                          ``cmpf une 0`` (bool)   uitofp, ``cmpi ne 0`` (bool)
========================  ======================  ==================================

Unsigned integers (``ui8 .. ui64`` in tg) are signless in memrefs and ``arith``
(``ui8`` is ``i8``: ``types.storage_type``); the tg operand's type picks the
unsigned op where the bits are read differently: ``div`` is ``divui`` (``x / 0 =
0``), ``max``/``min`` are ``maxui``/``minui``, the comparisons ``cmpi ult ule ugt
uge``, casts from them ``extui``/``uitofp`` and casts to them ``fptoui``. ``neg``
is ``0 - x`` (wraps, as NumPy's), ``abs`` and ``relu`` are ``x``, ``shift_right`` is
``shrui`` (0 for an amount >= width).

A shift by the bit width or more is poison in LLVM; the shifts shift by an amount
made 0 in that case (read unsigned) and select the defined result (``tg.shift_left``
in ``bitwise.py``), so no bits of the kernel are poison.

f16 computes in f32: each op extends its f16 operands (``extf``), computes in f32
and rounds its float result back to f16 (``truncf``), so every op rounds once to
f16, as NumPy's float16 ufuncs do (for ``+ - * /`` and ``sqrt`` that is the correctly
rounded f16 result). A cast from f64 to f16 rounds to f32 *to odd* first (an
inexact f32 whose last bit is even steps one ulp toward the f64 value), so the two
roundings give the one correctly rounded f16, as NumPy's ``astype``; casts from f16
to integers go through f32 (exact).

Casts from and to the storage-only types (bf16, the float8s, f4E2M1FN, i4, ui4,
i2, ui2) are integer code in ``low_precision.py``: a loaded element is unpacked to
an f32, i8 or ui8 and cast on from there; a result is packed from any scalar.

``tg.fmod`` is LLVM's ``frem`` instruction, which is C's ``fmod`` (exact); xDSL's
``arith`` has no ``remf``, so the kernel holds the ``llvm.frem`` op itself, which
``convert-to-llvm`` keeps as it is (the CUDA emitter writes ``fmodf``/``fmod``).

Integer division by zero and ``MIN / -1`` trap on x86 (``idiv`` raises SIGFPE), so
the divisor is made 1 in those cases and the result selected: no input can kill
the process.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import AnyFloat, IntegerType, TensorType, f16, f32
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.types import is_storage_only, is_unsigned, storage_type
from qidao.passes.kernels.lowering import low_precision
from qidao.passes.kernels.lowering.common import Emitter, TgLoweringError

Binary = Callable[[Emitter, SSAValue, SSAValue], SSAValue]
Unary = Callable[[Emitter, SSAValue], SSAValue]


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _width(t: Attribute) -> int:
    if isinstance(t, AnyFloat):
        return int(t.bitwidth)
    assert isinstance(t, IntegerType), t
    return int(t.width.data)


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _by_kind(
    on_float: Callable[[SSAValue, SSAValue], Operation],
    on_int: Callable[[SSAValue, SSAValue], Operation],
) -> Binary:
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


def _divui(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    zero, one = em.constant(0, b.type), em.constant(1, b.type)
    by_zero = em.value(arith.CmpiOp(b, zero, "eq"))
    safe = em.value(arith.SelectOp(by_zero, one, b))
    q = em.value(arith.DivUIOp(a, safe))
    return em.value(arith.SelectOp(by_zero, zero, q))


def _all_ones(t: Attribute) -> int:
    """The integer constant of ``t`` with every bit set (``true`` for i1)."""
    return 1 if _is_bool(t) else -1


def _in_range_shift(em: Emitter, s: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Whether the shift amount ``s`` (read unsigned) is below the bit width, and
    the amount to shift by: ``s``, or 0 when it is not."""
    width = em.constant(_width(s.type), s.type)
    in_range = em.value(arith.CmpiOp(s, width, "ult"))
    return in_range, em.value(arith.SelectOp(in_range, s, em.constant(0, s.type)))


def _shift_left(em: Emitter, x: SSAValue, s: SSAValue) -> SSAValue:
    in_range, amount = _in_range_shift(em, s)
    shifted = em.value(arith.ShLIOp(x, amount))
    return em.value(arith.SelectOp(in_range, shifted, em.constant(0, x.type)))


def _shift_right_unsigned(em: Emitter, x: SSAValue, s: SSAValue) -> SSAValue:
    in_range, amount = _in_range_shift(em, s)
    shifted = em.value(arith.ShRUIOp(x, amount))
    return em.value(arith.SelectOp(in_range, shifted, em.constant(0, x.type)))


def _shift_right_signed(em: Emitter, x: SSAValue, s: SSAValue) -> SSAValue:
    """Arithmetic: by ``width - 1`` at most, which fills every bit with the sign."""
    top = em.constant(_width(s.type) - 1, s.type)
    return em.value(arith.ShRSIOp(x, em.value(arith.MinUIOp(s, top))))


def _compare(float_predicate: str, int_predicate: str) -> Binary:
    def emit(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return em.value(arith.CmpfOp(a, b, float_predicate))
        return em.value(arith.CmpiOp(a, b, int_predicate))

    return emit


BINARY: dict[type[Operation], Binary] = {
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
    tg.BitwiseAndOp: lambda em, a, b: em.value(arith.AndIOp(a, b)),
    tg.BitwiseOrOp: lambda em, a, b: em.value(arith.OrIOp(a, b)),
    tg.BitwiseXorOp: lambda em, a, b: em.value(arith.XOrIOp(a, b)),
    tg.ShiftLeftOp: _shift_left,
    tg.ShiftRightOp: _shift_right_signed,
    tg.FmodOp: lambda em, a, b: em.value(llvm.FRemOp(a, b)),
}
"""The scalar code of each binary op on floats, signed integers and bools."""

UNSIGNED_BINARY: dict[type[Operation], Binary] = {
    tg.DivOp: _divui,
    tg.MaxOp: lambda em, a, b: em.value(arith.MaxUIOp(a, b)),
    tg.MinOp: lambda em, a, b: em.value(arith.MinUIOp(a, b)),
    tg.LessOp: _compare("olt", "ult"),
    tg.LessEqualOp: _compare("ole", "ule"),
    tg.GreaterOp: _compare("ogt", "ugt"),
    tg.GreaterEqualOp: _compare("oge", "uge"),
    tg.ShiftRightOp: _shift_right_unsigned,
}
"""Where unsigned operands need other code than ``BINARY``'s."""


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


UNARY: dict[type[Operation], Unary] = {
    tg.NegOp: _neg,
    tg.AbsOp: _abs,
    tg.ExpOp: lambda em, x: em.value(math.ExpOp(x)),
    tg.LogOp: lambda em, x: em.value(math.LogOp(x)),
    tg.SqrtOp: lambda em, x: em.value(math.SqrtOp(x)),
    tg.TanhOp: lambda em, x: em.value(math.TanhOp(x)),
    tg.ErfOp: lambda em, x: em.value(math.ErfOp(x)),
    tg.SinOp: lambda em, x: em.value(math.SinOp(x)),
    tg.CosOp: lambda em, x: em.value(math.CosOp(x)),
    tg.SigmoidOp: _sigmoid,
    tg.ReluOp: _relu,
    tg.LogicalNotOp: lambda em, x: em.value(arith.XOrIOp(x, em.constant(1, x.type))),
    tg.BitwiseNotOp: lambda em, x: em.value(
        arith.XOrIOp(x, em.constant(_all_ones(x.type), x.type))
    ),
    tg.TanOp: lambda em, x: em.value(math.TanOp(x)),
    tg.AsinOp: lambda em, x: em.value(math.AsinOp(x)),
    tg.AcosOp: lambda em, x: em.value(math.AcosOp(x)),
    tg.AtanOp: lambda em, x: em.value(math.AtanOp(x)),
    tg.SinhOp: lambda em, x: em.value(math.SinhOp(x)),
    tg.CoshOp: lambda em, x: em.value(math.CoshOp(x)),
    tg.AsinhOp: lambda em, x: em.value(math.AsinhOp(x)),
    tg.AcoshOp: lambda em, x: em.value(math.AcoshOp(x)),
    tg.AtanhOp: lambda em, x: em.value(math.AtanhOp(x)),
    tg.RoundOp: lambda em, x: em.value(math.RoundEvenOp(x)),
}
"""The scalar code of each unary op on floats, signed integers and bools."""

UNSIGNED_UNARY: dict[type[Operation], Unary] = {
    tg.AbsOp: lambda em, x: x,
    tg.ReluOp: lambda em, x: x,
}
"""Where unsigned operands need other code than ``UNARY``'s."""


def operand_element_type(op: Operation) -> Attribute:
    """The tg element type of ``op``'s first operand (``ui8``, ``f16``, ...)."""
    t = op.operands[0].type
    assert isinstance(t, TensorType), t
    element: Attribute = t.get_element_type()
    return element


def _in_f32(em: Emitter, compute: Callable[..., SSAValue], *xs: SSAValue) -> SSAValue:
    """``compute`` on f16 scalars, in f32: the operands extended, a float result
    rounded back to f16."""
    wide = [em.value(arith.ExtFOp(x, f32)) for x in xs]
    result = compute(em, *wide)
    if result.type == f32:
        return em.value(arith.TruncFOp(result, f16))
    return result


def binary(em: Emitter, op: Operation, a: SSAValue, b: SSAValue) -> SSAValue:
    """The scalar result of binary elementwise ``op`` on scalars ``a`` and ``b``."""
    element = operand_element_type(op)
    compute = BINARY[type(op)]
    if is_unsigned(element):
        compute = UNSIGNED_BINARY.get(type(op), compute)
    if element == f16:
        return _in_f32(em, compute, a, b)
    return compute(em, a, b)


def unary(em: Emitter, op: Operation, x: SSAValue) -> SSAValue:
    """The scalar result of unary elementwise ``op`` on scalar ``x``."""
    element = operand_element_type(op)
    compute = UNARY[type(op)]
    if is_unsigned(element):
        compute = UNSIGNED_UNARY.get(type(op), compute)
    if element == f16:
        return _in_f32(em, compute, x)
    return compute(em, x)


def select(em: Emitter, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.SelectOp(condition, a, b))


def _f64_to_f16(em: Emitter, x: SSAValue) -> SSAValue:
    """f64 -> f16 rounded once: to f32 rounded to odd, then to f16 (f32 carries more
    than 11 + 2 bits, so rounding to odd first makes the second rounding exact;
    LLVM's own f64 -> f16 is a compiler-rt call the JIT does not link)."""
    return em.value(arith.TruncFOp(low_precision.round_to_odd_f32(em, x), f16))


def _float_to_float(em: Emitter, x: SSAValue, to: Attribute) -> SSAValue:
    source = x.type
    if _width(to) > _width(source):
        return em.value(arith.ExtFOp(x, to))
    if to == f16 and _width(source) == 64:
        return _f64_to_f16(em, x)
    return em.value(arith.TruncFOp(x, to))


def cast(em: Emitter, x: SSAValue, source: Attribute, target: Attribute) -> SSAValue:
    """``x``, a scalar of tg element type ``source``, converted to tg element type
    ``target`` (``tg.cast``'s rules)."""
    if source == target:
        return x
    if is_storage_only(source):  # bf16, float8, i4...: unpacked to f32, i8 or ui8
        plain, plain_type = low_precision.unpack(em, x, source)
        return cast(em, plain, plain_type, target)
    if is_storage_only(target):
        return low_precision.pack(em, x, source, target)
    to = storage_type(target)
    if _is_bool(to):
        if is_float(source):
            return em.value(arith.CmpfOp(x, em.constant(0.0, x.type), "une"))
        return em.value(arith.CmpiOp(x, em.constant(0, x.type), "ne"))
    if is_float(to):
        assert isinstance(to, AnyFloat)
        if is_float(source):
            return _float_to_float(em, x, to)
        if _is_bool(source) or is_unsigned(source):
            return em.value(arith.UIToFPOp(x, to))
        return em.value(arith.SIToFPOp(x, to))
    if not isinstance(to, IntegerType):
        raise TgLoweringError(f"convert-tg-to-affine: tg.cast to {to} is not lowered")
    if is_float(source):
        if source == f16:
            x = em.value(arith.ExtFOp(x, f32))
        if is_unsigned(target):
            return em.value(arith.FPToUIOp(x, to))
        return em.value(arith.FPToSIOp(x, to))
    if _width(to) == _width(source):  # i32 <-> ui32: the same bits
        return x
    if _width(to) < _width(source):
        return em.value(arith.TruncIOp(x, to))
    if _is_bool(source) or is_unsigned(source):
        return em.value(arith.ExtUIOp(x, to))
    return em.value(arith.ExtSIOp(x, to))
