"""The scalar code of casts from and to the storage-only element types (not a pass).

bf16, the float8s (f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ), f4E2M1FN and the
4- and 2-bit integers (i4, ui4, i2, ui2) live in memory as the integers
``types.storage_type`` names (bf16 in an i16, the others in an i8, a small
integer in the low bits of its byte). ``scalar.cast`` calls :func:`unpack` on a
loaded element of such a type and :func:`pack` to make one; both are integer bit
manipulation and f32 arithmetic, exact, with ``ml_dtypes``' results bit for bit:

- **decoding** a small float (:func:`_decode`): the magnitude bits shifted into an
  f32 and rebiased; a subnormal is ``mantissa * 2^(1 - bias - M)`` (exact); NaN
  and infinity by their codes. bf16 is the top half of an f32.
- **encoding** an f32 (:func:`_encode`): round to nearest even on the bits
  (``bits + half - 1 + lowest kept bit``, then shift: a carry moves into the
  exponent as it should); below the smallest normal, one f32 addition of
  ``2^(24 - bias - M)`` rounds to the subnormal grid (its ulp is the format's
  subnormal step) and the code is the difference of the bits. Past the largest
  finite code: infinity (f8E5M2), NaN (f8E4M3FN, FNUZ) or the largest finite
  value (f4E2M1FN). An f64 rounds to f32 *to odd* first
  (:func:`round_to_odd_f32`), so the second rounding is the correct one; an
  integer goes through f64.
- **small integers**: a loaded byte is sign-extended from its N bits (i4, i2) or
  masked (ui4, ui2); a result keeps its low N bits. A float becomes one by
  truncation toward zero, 0 when that is out of range (NaN too), as ``ml_dtypes``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    IntegerType,
    Signedness,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
)
from xdsl.ir import Attribute, SSAValue

from qidao.passes.kernels.lowering.common import Emitter


@dataclass(frozen=True)
class SmallFloat:
    """A float format of at most 8 bits: sign, ``exponent`` bits, ``mantissa``
    bits, stored in the low bits of a byte."""

    exponent: int
    mantissa: int
    bias: int
    max_code: int
    """The code of the largest finite value (sign bit clear)."""
    infinity: int | None
    """The code of +infinity, if the format has one."""
    nan: int | None
    """The code of +NaN made (the sign bit gives -NaN), if the format has a signed
    NaN; every code above the last number reads as NaN."""
    fnuz: bool
    """One NaN, ``0x80``, and no -0 (the FNUZ formats)."""

    @property
    def sign_bit(self) -> int:
        return 1 << (self.exponent + self.mantissa)


FORMATS: dict[Attribute, SmallFloat] = {
    Float8E4M3FNType(): SmallFloat(4, 3, 7, 0x7E, None, 0x7F, False),
    Float8E4M3FNUZType(): SmallFloat(4, 3, 8, 0x7F, None, None, True),
    Float8E5M2Type(): SmallFloat(5, 2, 15, 0x7B, 0x7C, 0x7E, False),
    Float8E5M2FNUZType(): SmallFloat(5, 2, 16, 0x7F, None, None, True),
    Float4E2M1FNType(): SmallFloat(2, 1, 1, 0x7, None, None, False),
}
"""The small float formats tg has, as ``ml_dtypes`` defines them."""

_F32_SIGN = -(1 << 31)  # 0x80000000 as an i32
_F32_INF = 0x7F800000
_F32_NAN = 0x7FC00000


def _i32(em: Emitter, value: int) -> SSAValue:
    """An i32 constant from the bits ``value`` (the top bit set gives a negative)."""
    value &= 0xFFFFFFFF
    return em.constant(value - (1 << 32) if value >> 31 else value, i32)


def _and(em: Emitter, x: SSAValue, mask: int) -> SSAValue:
    return em.value(arith.AndIOp(x, _i32(em, mask)))


def _or(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.OrIOp(a, b))


def _add(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.AddiOp(a, b))


def _shr(em: Emitter, x: SSAValue, amount: int) -> SSAValue:
    return em.value(arith.ShRUIOp(x, _i32(em, amount)))


def _shl(em: Emitter, x: SSAValue, amount: int) -> SSAValue:
    return em.value(arith.ShLIOp(x, _i32(em, amount)))


def _cmp(em: Emitter, a: SSAValue, predicate: str, b: int) -> SSAValue:
    return em.value(arith.CmpiOp(a, _i32(em, b), predicate))


def _select(em: Emitter, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    return em.value(arith.SelectOp(c, a, b))


def is_small_int(t: Attribute) -> bool:
    """i4, ui4, i2 or ui2."""
    return isinstance(t, IntegerType) and t.width.data in (2, 4)


def _is_signed(t: IntegerType) -> bool:
    return t.signedness.data != Signedness.UNSIGNED


# ---- f64 -> f32 ---------------------------------------------------------------------


def round_to_odd_f32(em: Emitter, x: SSAValue) -> SSAValue:
    """f64 ``x`` rounded to f32 *to odd*: an inexact result whose last bit is even
    steps one ulp toward ``x``. f32 keeps more than M + 2 bits of every narrower
    format, so rounding this f32 once more to nearest even gives the correctly
    rounded result of ``x``."""
    r = em.value(arith.TruncFOp(x, f32))
    back = em.value(arith.ExtFOp(r, x.type))
    inexact = em.value(arith.CmpfOp(back, x, "one"))
    outward = em.value(
        arith.CmpfOp(em.value(math.AbsFOp(x)), em.value(math.AbsFOp(back)), "ogt")
    )
    bits = em.value(arith.BitcastOp(r, i32))
    one = em.constant(1, i32)
    even = _cmp(em, _and(em, bits, 1), "eq", 0)
    step = _select(em, outward, one, em.constant(-1, i32))
    to_odd = em.value(arith.AndIOp(inexact, even))
    bits = _select(em, to_odd, _add(em, bits, step), bits)
    return em.value(arith.BitcastOp(bits, f32))


def _to_f32(em: Emitter, x: SSAValue, source: Attribute) -> SSAValue:
    """A float (f16, f32, f64), integer or bool scalar as an f32 that rounds
    correctly once more (exact, or to odd)."""
    if source == f32:
        return x
    if source == f16:
        return em.value(arith.ExtFOp(x, f32))
    if source == f64:
        return round_to_odd_f32(em, x)
    assert isinstance(source, IntegerType), source
    if source.width.data == 1 or not _is_signed(source):
        wide = em.value(arith.UIToFPOp(x, f64))
    else:
        wide = em.value(arith.SIToFPOp(x, f64))
    return round_to_odd_f32(em, wide)


# ---- bf16 ---------------------------------------------------------------------------


def _bf16_to_f32(em: Emitter, x: SSAValue) -> SSAValue:
    wide = em.value(arith.ExtUIOp(x, i32))
    return em.value(arith.BitcastOp(_shl(em, wide, 16), f32))


def _f32_to_bf16(em: Emitter, x: SSAValue) -> SSAValue:
    """Round to nearest even on the low 16 bits; NaN is the quiet NaN, signed."""
    bits = em.value(arith.BitcastOp(x, i32))
    lowest_kept = _and(em, _shr(em, bits, 16), 1)
    rounded = _shr(em, _add(em, _add(em, bits, _i32(em, 0x7FFF)), lowest_kept), 16)
    is_nan = _cmp(em, _and(em, bits, 0x7FFFFFFF), "ugt", _F32_INF)
    nan = _or(em, _and(em, _shr(em, bits, 16), 0x8000), _i32(em, 0x7FC0))
    return em.value(arith.TruncIOp(_select(em, is_nan, nan, rounded), i16))


# ---- float8, float4 -----------------------------------------------------------------


def _decode(em: Emitter, code: SSAValue, fmt: SmallFloat) -> SSAValue:
    """The f32 value of an i8 ``code`` of format ``fmt`` (exact)."""
    m = fmt.mantissa
    c = _and(em, em.value(arith.ExtUIOp(code, i32)), 2 * fmt.sign_bit - 1)
    mag = _and(em, c, fmt.sign_bit - 1)
    normal = _add(em, _shl(em, mag, 23 - m), _i32(em, (127 - fmt.bias) << 23))
    step = em.constant(2.0 ** (1 - fmt.bias - m), f32)
    subnormal = em.value(arith.MulfOp(em.value(arith.UIToFPOp(mag, f32)), step))
    is_subnormal = _cmp(em, mag, "ult", 1 << m)
    subnormal_bits = em.value(arith.BitcastOp(subnormal, i32))
    bits = _select(em, is_subnormal, subnormal_bits, normal)
    if fmt.infinity is not None:
        bits = _select(em, _cmp(em, mag, "eq", fmt.infinity), _i32(em, _F32_INF), bits)
    if fmt.nan is not None:  # every code above the last number
        last = fmt.max_code if fmt.infinity is None else fmt.infinity
        bits = _select(em, _cmp(em, mag, "ugt", last), _i32(em, _F32_NAN), bits)
    negative = _cmp(em, _and(em, c, fmt.sign_bit), "ne", 0)
    bits = _select(em, negative, _or(em, bits, _i32(em, _F32_SIGN)), bits)
    if fmt.fnuz:
        bits = _select(
            em, _cmp(em, c, "eq", fmt.sign_bit), _i32(em, _F32_NAN | 1 << 31), bits
        )
    return em.value(arith.BitcastOp(bits, f32))


def _encode(em: Emitter, x: SSAValue, fmt: SmallFloat) -> SSAValue:
    """The i8 code of f32 ``x`` in format ``fmt``, rounded to nearest even."""
    m, shift = fmt.mantissa, 23 - fmt.mantissa
    bits = em.value(arith.BitcastOp(x, i32))
    magnitude = _and(em, bits, 0x7FFFFFFF)
    lowest_kept = _and(em, _shr(em, magnitude, shift), 1)
    rounded = _add(
        em, _add(em, magnitude, _i32(em, (1 << (shift - 1)) - 1)), lowest_kept
    )
    normal = em.value(
        arith.SubiOp(_shr(em, rounded, shift), _i32(em, (127 - fmt.bias) << m))
    )
    grid_exponent = 24 - fmt.bias - m  # 2^this has the ulp of the subnormal step
    grid = em.constant(2.0**grid_exponent, f32)
    on_grid = em.value(arith.AddfOp(em.value(arith.BitcastOp(magnitude, f32)), grid))
    grid_bits = _i32(em, (grid_exponent + 127) << 23)
    subnormal = em.value(
        arith.SubiOp(em.value(arith.BitcastOp(on_grid, i32)), grid_bits)
    )
    below_normal = _cmp(em, magnitude, "ult", (128 - fmt.bias) << 23)
    code = _select(em, below_normal, subnormal, normal)
    beyond = fmt.infinity if fmt.infinity is not None else fmt.nan
    overflow = fmt.max_code if beyond is None and not fmt.fnuz else beyond
    too_big = _cmp(em, code, "sgt", fmt.max_code)
    if overflow is not None:
        code = _select(em, too_big, _i32(em, overflow), code)
    is_nan = _cmp(em, magnitude, "ugt", _F32_INF)
    negative = _cmp(em, bits, "slt", 0)
    if fmt.nan is not None:
        code = _select(em, is_nan, _i32(em, fmt.nan), code)
    elif not fmt.fnuz:  # f4E2M1FN: NaN is a zero of the other sign (ml_dtypes)
        code = _select(em, is_nan, _i32(em, 0), code)
        negative = em.value(arith.XOrIOp(negative, is_nan))
    signed = _or(em, code, _i32(em, fmt.sign_bit))
    if fmt.fnuz:  # no -0; one NaN (for NaN and, not saturating, what is too big)
        nonzero = _cmp(em, code, "ne", 0)
        negative = em.value(arith.AndIOp(negative, nonzero))
    code = _select(em, negative, signed, code)
    if fmt.fnuz:
        nan = em.value(arith.OrIOp(is_nan, too_big))
        code = _select(em, nan, _i32(em, 0x80), code)
    return em.value(arith.TruncIOp(code, i8))


# ---- small integers -----------------------------------------------------------------


def _small_int_value(em: Emitter, x: SSAValue, t: IntegerType) -> SSAValue:
    """The i8 value of a loaded i4/ui4/i2/ui2 byte: sign-extended or masked."""
    width = t.width.data
    if _is_signed(t):
        amount = em.constant(8 - width, i8)
        return em.value(arith.ShRSIOp(em.value(arith.ShLIOp(x, amount)), amount))
    return em.value(arith.AndIOp(x, em.constant((1 << width) - 1, i8)))


def _to_small_int(
    em: Emitter, x: SSAValue, source: Attribute, t: IntegerType
) -> SSAValue:
    """``x`` (any plain scalar) as the byte of a ``t``: an integer's low bits; a
    float truncated toward zero, 0 out of range."""
    width = t.width.data
    if isinstance(source, AnyFloat):
        wide = em.value(arith.ExtFOp(x, f32)) if source == f16 else x
        low, high = (0, 1 << width)
        if _is_signed(t):
            low, high = -(1 << (width - 1)), 1 << (width - 1)
        above = em.value(arith.CmpfOp(wide, em.constant(low - 1.0, wide.type), "ogt"))
        below = em.value(arith.CmpfOp(wide, em.constant(float(high), wide.type), "olt"))
        in_range = em.value(arith.AndIOp(above, below))
        safe = _select(em, in_range, wide, em.constant(0.0, wide.type))
        byte = em.value(arith.FPToSIOp(safe, i8))
    else:
        assert isinstance(source, IntegerType), source
        if source.width.data == 1:
            byte = em.value(arith.ExtUIOp(x, i8))
        elif source.width.data > 8:
            byte = em.value(arith.TruncIOp(x, i8))
        else:
            byte = x
    return em.value(arith.AndIOp(byte, em.constant((1 << width) - 1, i8)))


# ---- entry points -------------------------------------------------------------------


def unpack(em: Emitter, x: SSAValue, source: Attribute) -> tuple[SSAValue, Attribute]:
    """A loaded element ``x`` of storage-only type ``source`` as a plain scalar and
    its tg type: an f32 (exact) for the floats, an i8 or ui8 for the integers."""
    if source == BFloat16Type():
        return _bf16_to_f32(em, x), f32
    if source in FORMATS:
        return _decode(em, x, FORMATS[source]), f32
    assert isinstance(source, IntegerType) and is_small_int(source), source
    if _is_signed(source):
        return _small_int_value(em, x, source), i8
    return _small_int_value(em, x, source), IntegerType(8, Signedness.UNSIGNED)


def pack(em: Emitter, x: SSAValue, source: Attribute, target: Attribute) -> SSAValue:
    """Plain scalar ``x`` of tg type ``source`` (a float, integer or bool) as the
    stored element of storage-only type ``target``."""
    if isinstance(target, IntegerType):
        assert is_small_int(target), target
        return _to_small_int(em, x, source, target)
    wide = _to_f32(em, x, source)
    if target == BFloat16Type():
        return _f32_to_bf16(em, wide)
    return _encode(em, wide, FORMATS[target])
