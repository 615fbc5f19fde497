"""``expand-math``'s algorithms: exp, log, tanh and erf on f32 as straight-line arith.

Each function takes an :class:`F32Emitter` and the input value and returns the result;
the emitter collects the ops in order, so the pass can put them where the math op was.
No branches and no calls: every op is one LLVM instruction or intrinsic (``fma``,
``roundeven``, ``copysign``, ``fptosi.sat``) that the loop vectorizer widens, so a loop
of ``exp`` becomes ``<16 x float>`` code on AVX-512 instead of one libm call per lane.

The polynomials of exp, log and tanh are Cephes' (S. L. Moshier, Cephes Math Library:
``expf``, ``logf``, ``tanhf``); erf's were fitted for qidao (see ``ERF_P``); all evaluated
with fused multiply-adds. Maximum relative error against NumPy in float64 on normal
results, over 44M float32 inputs (every 97th bit pattern of either sign): exp 8.3e-8,
log 8.0e-8, tanh 1.33e-7 (at most 1.0, 0.8 and 1.3 ulp). erf, measured against
``torch.erf`` in float64 on *every* float32 in [0, 4) (1.08e9 inputs; erf is odd and
the expansion symmetric, and from 4 on it returns exactly +-1): at most 1.19 ulp, 83%
of results correctly rounded, 2324 above 1 ulp (all in 0.79 < |x| < 1.25, around the
branch point 0.92). ``tests/passes/cpu/test_expand_math.py`` holds all four under 2e-7. Special
values follow C99/IEEE: see each function.

The constants are rounded to float32 here, in Python, so the IR shows exactly the
numbers the hardware uses.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f32, i32
from xdsl.ir import Operation, SSAValue

# -- float32 constants --------------------------------------------------------------


def f32_round(value: float) -> float:
    """``value`` rounded to the nearest float32, as a Python float."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def f32_from_bits(bits: int) -> float:
    """The float32 whose IEEE-754 bit pattern is ``bits``."""
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


INF = float("inf")
MANTISSA_BITS = 23
EXPONENT_BIAS = 127
SMALLEST_NORMAL = f32_from_bits(0x00800000)  # 2^-126

LOG2E = f32_round(1.4426950408889634)  # 1/ln 2
LN2_HI = f32_round(0.6931471805599453)  # ln 2 to float32 ...
LN2_LO = f32_round(0.6931471805599453 - LN2_HI)  # ... and the rest

# exp: x is clamped to [EXP_LO, EXP_HI]; past either end the result is already 0 or
# inf in float32 (exp(-104) < 2^-150 rounds to 0, exp(89) > FLT_MAX), and inside it
# n = round(x / ln 2) lies in [-150, 129], so 2^n fits in two normal float32 factors.
EXP_LO = -104.0
EXP_HI = 89.0
# exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2 (Cephes expf), highest degree first.
EXP_P = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)

# log: log(1 + m) = m - m^2/2 + m^3 * P(m) on sqrt(1/2) - 1 <= m < sqrt(2) - 1
# (Cephes logf), highest degree first.
SQRT_HALF = f32_round(0.7071067811865476)
LOG_P = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)

# tanh: an odd polynomial below TANH_SMALL, keeping the relative accuracy near 0
# where 1 - 2/(exp(2x) + 1) would cancel; tanh(x) = x + x^3 * P(x^2) (Cephes tanhf).
TANH_SMALL = 0.625
TANH_P = (
    -5.70498872745e-3,
    2.06390887954e-2,
    -5.37397155531e-2,
    1.33314422036e-1,
    -3.33332819422e-1,
)

# erf: erf(x) = x + x P(x^2) below ERF_SMALL; beyond, erf(a) = 1 - exp(Q(a)) with
# Q(a) ~ log(erfc(a)), a clamped to ERF_CLAMP (erfc(4) = 1.5e-8 < 2^-25, so erf
# rounds to 1 there). Both fitted on a dense grid in float64 against math.erf/erfc,
# near-minimax by Lawson's iteratively reweighted least squares: P for the relative
# error of erf (max 1.6e-8), Q for the error of log(erfc) weighted by erfc(a) (max
# 1.5e-9, the absolute error it causes in erf). Highest degree first.
ERF_SMALL = 0.921875
ERF_CLAMP = 4.0
ERF_P = (
    -5.990808775e-4,
    4.993171529e-3,
    -2.676661035e-2,
    1.128181600e-1,
    -3.761249367e-1,
    1.283791496e-1,
)
ERF_Q = (
    1.947352924e-4,
    -3.031609035e-3,
    2.218143372e-2,
    -1.038389835e-1,
    -6.372856657e-1,
    -1.127615516,
    -2.098995209e-4,
)


class F32Emitter:
    """Builds the arith/math ops of one expansion, in order, on f32 and i32 scalars.
    With ``ldexp``, exp scales by ``llvm.ldexp`` (``exp_f32``)."""

    def __init__(self, ldexp: bool = False) -> None:
        self.ops: list[Operation] = []
        self.constants: dict[str, SSAValue] = {}
        self.use_ldexp = ldexp

    def _emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    @staticmethod
    def let(name: str, value: SSAValue) -> SSAValue:
        """``value``, printed as ``%name`` (the steps of each algorithm read by name)."""
        value.name_hint = name
        return value

    # constants: one arith.constant per value and type in an expansion
    def f(self, value: float) -> SSAValue:
        value = f32_round(value)
        return self._constant(f"f32 {value!r}", FloatAttr(value, f32))

    def i(self, value: int) -> SSAValue:
        return self._constant(f"i32 {value}", IntegerAttr(value, i32))

    def _constant(self, key: str, attr: FloatAttr | IntegerAttr) -> SSAValue:
        # keyed by text, so that -0.0 and 0.0 stay apart and NaN finds itself
        if key not in self.constants:
            self.constants[key] = self.let("c", self._emit(arith.ConstantOp(attr)))
        return self.constants[key]

    # float arithmetic
    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.AddfOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.SubfOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.MulfOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.DivfOp(a, b))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """a * b + c, rounded once."""
        return self._emit(math.FmaOp(a, b, c))

    def abs(self, x: SSAValue) -> SSAValue:
        return self._emit(math.AbsFOp(x))

    def copysign(self, magnitude: SSAValue, sign: SSAValue) -> SSAValue:
        return self._emit(math.CopySignOp(magnitude, sign))

    def round_even(self, x: SSAValue) -> SSAValue:
        return self._emit(math.RoundEvenOp(x))

    def horner(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """c0 * x^k + c1 * x^(k-1) + ... + ck, one fma per coefficient after the first."""
        result = self.f(coefficients[0])
        for c in coefficients[1:]:
            result = self.fma(result, x, self.f(c))
        return result

    # comparisons and selects (ordered predicates: false when an operand is NaN)
    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.CmpfOp(a, b, predicate))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.SelectOp(cond, a, b))

    def clamp(self, x: SSAValue, lo: float, hi: float) -> SSAValue:
        """x limited to [lo, hi]; NaN stays NaN (both comparisons are false)."""
        x = self.select(self.cmp("ogt", x, self.f(hi)), self.f(hi), x)
        return self.select(self.cmp("olt", x, self.f(lo)), self.f(lo), x)

    # integers and bits
    def to_bits(self, x: SSAValue) -> SSAValue:
        return self._emit(arith.BitcastOp(x, i32))

    def from_bits(self, bits: SSAValue) -> SSAValue:
        return self._emit(arith.BitcastOp(bits, f32))

    def small_int(self, x: SSAValue) -> SSAValue:
        """An integral float32 x with |x| < 2^22, as i32.

        Not ``arith.fptosi``: it lowers to the saturating ``llvm.fptosi.sat``, which
        LLVM scalarizes. Instead x + 1.5 * 2^23 is exact and has the integer in its low
        mantissa bits: bits(x + 1.5 * 2^23) = bits(1.5 * 2^23) + x.
        """
        magic = 1.5 * 2.0**MANTISSA_BITS
        shifted = self.to_bits(self.add(x, self.f(magic)))
        return self.subi(
            shifted, self.i(int(struct.unpack("<I", struct.pack("<f", magic))[0]))
        )

    def to_float(self, n: SSAValue) -> SSAValue:
        return self._emit(arith.SIToFPOp(n, f32))

    def addi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.AddiOp(a, b))

    def subi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.SubiOp(a, b))

    def andi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.AndIOp(a, b))

    def ori(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.OrIOp(a, b))

    def shl(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.ShLIOp(a, b))

    def shr_signed(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.ShRSIOp(a, b))

    def shr_unsigned(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._emit(arith.ShRUIOp(a, b))

    def ldexp(self, x: SSAValue, k: SSAValue) -> SSAValue:
        """x * 2^k for an i32 k, rounded once (``llvm.ldexp``: one ``vscalefps`` on
        AVX-512, which LLVM's loop vectorizer widens; elsewhere a libm call)."""
        return self._emit(llvm.CallIntrinsicOp("llvm.ldexp.f32.i32", [x, k], [f32]))

    def pow2(self, k: SSAValue) -> SSAValue:
        """2^k as a float32, for an i32 k in [-126, 127]: the bits (k + 127) << 23."""
        biased = self.addi(k, self.i(EXPONENT_BIAS))
        return self.from_bits(self.shl(biased, self.i(MANTISSA_BITS)))


def exp_f32(em: F32Emitter, x: SSAValue, bounded: bool = False) -> SSAValue:
    """exp(x) = 2^n * exp(r), with x = n ln2 + r, n = round(x / ln2), |r| <= ln2/2.

    1. Clamp x to [-104, 89]: +inf -> inf and -inf -> 0 come out of the arithmetic,
       and NaN passes through every step as NaN.
    2. n = roundeven(x * log2(e)); r = x - n ln2 in two fmas with ln2 split in a high
       and a low part (Cody-Waite): the first is exact, so r carries no cancellation.
    3. exp(r) = 1 + r + r^2 P(r), P of degree 5 (Cephes expf), Horner with fma.
    4. Scale by 2^n as 2^(n - n/2) * 2^(n/2): each factor is a normal float32 built
       from its exponent bits, and the product over- or underflows (gradually, through
       the denormals) exactly where exp does, with one rounding. With ``em.use_ldexp``
       (``expand-math{ldexp=true}``, on by default where the host has AVX-512F),
       ``ldexp(exp(r), n)`` instead: the same value, rounded once, in one
       ``vscalefps`` for the ten integer and float steps of the two factors.

    ``bounded``: the caller knows x lies in [-104, 89] (or is NaN), so step 1 is
    left out (erf's ``Q(a)`` lies in [-18, 0]).
    """
    if not bounded:
        x = em.let("xc", em.clamp(x, EXP_LO, EXP_HI))
    n = em.let("n", em.round_even(em.mul(x, em.f(LOG2E))))
    r = em.fma(n, em.f(-LN2_HI), x)
    r = em.let("r", em.fma(n, em.f(-LN2_LO), r))
    p = em.let("p", em.horner(r, EXP_P))
    exp_r = em.fma(p, em.mul(r, r), r)
    exp_r = em.let("exp_r", em.add(exp_r, em.f(1.0)))
    k = em.let("k", em.small_int(n))
    if em.use_ldexp:
        return em.ldexp(exp_r, k)
    k_low = em.shr_signed(k, em.i(1))
    k_high = em.subi(k, k_low)
    scaled = em.mul(exp_r, em.let("scale_hi", em.pow2(k_high)))
    return em.mul(scaled, em.let("scale_lo", em.pow2(k_low)))


def log_f32(em: F32Emitter, x: SSAValue) -> SSAValue:
    """log(x) = e ln2 + log(1 + m), from x = 2^e (1 + m), sqrt(1/2) <= 1 + m < sqrt 2.

    1. A denormal x is first scaled by 2^23 (and e lowered by 23), so its exponent
       field is right.
    2. Split the bits: the exponent field gives e, the mantissa with exponent -1 gives
       f in [0.5, 1); below sqrt(1/2), f doubles and e drops by one; m = f - 1
       (exact).
    3. log(1 + m) = m - m^2/2 + m^3 P(m), P of degree 8 (Cephes logf); e ln2 is added
       as e * ln2_lo to the small terms and e * ln2_hi in the final fma.
    4. Special values: log(+0) = log(-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf,
       log(NaN) = NaN.
    """
    tiny = em.let("tiny", em.cmp("olt", x, em.f(SMALLEST_NORMAL)))
    scaled = em.select(tiny, em.mul(x, em.f(2.0**MANTISSA_BITS)), x)
    bits = em.let("bits", em.to_bits(scaled))
    field = em.andi(em.shr_unsigned(bits, em.i(MANTISSA_BITS)), em.i(0xFF))
    mantissa = em.andi(bits, em.i((1 << MANTISSA_BITS) - 1))
    half_exponent = em.i((EXPONENT_BIAS - 1) << MANTISSA_BITS)
    f = em.let("f", em.from_bits(em.ori(mantissa, half_exponent)))
    # now x = 2^(field - 126) * f (times 2^-23 if tiny), f in [0.5, 1)
    below = em.let("below", em.cmp("olt", f, em.f(SQRT_HALF)))
    m = em.let("m", em.sub(em.select(below, em.add(f, f), f), em.f(1.0)))
    e = em.to_float(em.subi(field, em.i(EXPONENT_BIAS - 1)))
    e = em.sub(e, em.select(below, em.f(1.0), em.f(0.0)))
    e = em.let("e", em.sub(e, em.select(tiny, em.f(MANTISSA_BITS), em.f(0.0))))

    m2 = em.mul(m, m)
    tail = em.mul(em.mul(em.horner(m, LOG_P), m), m2)  # m^3 P(m)
    tail = em.fma(e, em.f(LN2_LO), tail)
    tail = em.let("tail", em.fma(m2, em.f(-0.5), tail))
    result = em.let("log", em.fma(e, em.f(LN2_HI), em.add(m, tail)))

    result = em.select(em.cmp("oeq", x, em.f(INF)), em.f(INF), result)
    result = em.select(em.cmp("ult", x, em.f(0.0)), em.f(float("nan")), result)
    return em.select(em.cmp("oeq", x, em.f(0.0)), em.f(-INF), result)


def tanh_f32(em: F32Emitter, x: SSAValue) -> SSAValue:
    """tanh(x) = sign(x) t(|x|): t(a) = a + a^3 P(a^2) below 0.625, else 1 - 2/(e^2a + 1).

    The odd polynomial (Cephes tanhf) keeps the relative error small near 0, where the
    exp form would cancel. For large a the exp form saturates by itself: exp(2a)
    overflows to inf and 1 - 2/inf = 1, so tanh(+-inf) = +-1; the sign comes back with
    copysign, so tanh(-0) = -0. NaN takes the exp branch and stays NaN.
    """
    a = em.let("a", em.abs(x))
    a2 = em.mul(a, a)
    small = em.let("small", em.fma(em.mul(em.horner(a2, TANH_P), a2), a, a))
    two, one = em.f(2.0), em.f(1.0)
    e = em.let("exp_2a", exp_f32(em, em.mul(a, two)))
    large = em.let("large", em.sub(one, em.div(two, em.add(e, one))))
    t = em.select(em.cmp("olt", a, em.f(TANH_SMALL)), small, large)
    return em.copysign(t, x)


def erf_f32(em: F32Emitter, x: SSAValue) -> SSAValue:
    """erf(x) = x + x P(x^2) for |x| < 0.921875, else sign(x) (1 - exp(Q(|x|))).

    Both branches are computed and one selected, so the code has no branch. Near 0 the
    odd form keeps the relative error small (erf(x) ~ 1.128 x down to the denormals,
    rounded once by the fma; erf(-0) = -0). Beyond, erfc(a) = exp(Q(a)) lies in
    (0, 0.19], so the error of Q and of exp_f32 is shrunk by that factor in 1 - erfc.
    a is clamped to 4, where 1 - exp(Q(4)) rounds to 1: erf(+-inf) = +-1. NaN fails the
    comparison, takes the exp branch and stays NaN.
    """
    a = em.let("a", em.abs(x))
    s = em.mul(a, a)
    small = em.let("small", em.fma(em.horner(s, ERF_P), x, x))
    clamped = em.select(em.cmp("ogt", a, em.f(ERF_CLAMP)), em.f(ERF_CLAMP), a)
    q = em.let("q", em.horner(clamped, ERF_Q))
    erfc = em.let("erfc", exp_f32(em, q, bounded=True))  # q in [Q(4), 0]
    large = em.let("large", em.copysign(em.sub(em.f(1.0), erfc), x))
    return em.select(em.cmp("olt", a, em.f(ERF_SMALL)), small, large)
