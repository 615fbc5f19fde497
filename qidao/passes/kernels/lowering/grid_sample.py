"""``tg.grid_sample`` kernel: sampling an image at runtime coordinates.

A nest over the batch and the output positions (``n, o0, .., o{k-1}``) computes,
once per position, where to read along every spatial dimension; an inner loop over
the channels ``c`` reads the taps and sums them. For one spatial dimension of ``d``
entries (the rules of ``qidao/dialects/tg/grid_sample.py``)::

    %g    = affine.load %grid[%n, %o0, .., k - 1 - i]     // last dimension first
    %u    = unnormalize(%g)                               // position in entries
    %u    = roundeven(%u)                                 // nearest only
    %u    = move(%u)                  // border / reflection; nearest, linear
    %b    = floor(%u)                                     // linear, cubic
    %t    = %u - %b                                       // the weights' argument
    %bc   = minnumf(maxnumf(%b, -4), d + 3)               // NaN -> -4
    %base = fptosi %bc : index
    per tap j = %base + offset:
      zeros:      %ok = 0 <= j < d,  %at = clamp(j, 0, d - 1)
      border:     %at = clamp(j, 0, d - 1)
      reflection: %at = clamp(reflect(j), 0, d - 1)

Every position a ``memref.load`` reads is clamped into ``[0, d)``: no grid value,
not even NaN or an infinity, makes the kernel read outside its input. Then, per
channel::

    for c < C:
      %v_q  = memref.load %x[%n, %c, %at_q0, .., %at_qk]  // every tap q
      %v_q  = select %ok_q, %v_q, 0.0                     // zeros padding
      %acc  = sum of %w_q * %v_q                          // w_q: product of weights
      affine.store %acc, %out[%n, %c, %o0, ..]

The taps are unrolled: 1 (nearest), ``2^k`` (linear) or ``4^k`` (cubic) loads per
output element. The kernel is a fusion boundary with a fresh output buffer.
"""

from __future__ import annotations

import itertools
import math as pymath
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, math, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    Emitter,
    Kernel,
    Source,
    const,
    dim,
    element_type,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool

CUBIC_A = -0.75
"""The ``A`` of Keys' cubic convolution, as in ONNX Runtime and PyTorch."""

OFFSETS = {"nearest": (0,), "linear": (0, 1), "cubic": (-1, 0, 1, 2)}
"""The taps a mode reads along one dimension, relative to ``floor(u)``."""

SLACK = 4
"""How far outside ``[0, d)`` the base position is clamped before it becomes an
integer: far enough that every tap of a far-away position still lies outside."""


@dataclass
class _Tap:
    """One entry read along one dimension: its clamped position, whether it is
    inside the input (None: always, or padding never reads 0) and its weight (None:
    1)."""

    at: SSAValue
    ok: SSAValue | None
    weight: SSAValue | None


class _Builder:
    """The arithmetic of one kernel, on the input's float type ``ft``."""

    def __init__(self, em: Emitter, op: tg.GridSampleOp) -> None:
        self.em = em
        self.ft = element_type(op.input)
        self.mode = op.mode.data
        self.padding = op.padding_mode.data
        self.aligned = op.aligned()

    def f(self, value: float) -> SSAValue:
        return self.em.constant(value, self.ft)

    def i(self, value: int) -> SSAValue:
        return self.em.value(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def v(self, op: Operation) -> SSAValue:
        return self.em.value(op)

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(arith.SelectOp(c, a, b))

    def clamp(self, j: SSAValue, size: int) -> SSAValue:
        low = self.v(arith.MaxSIOp(j, self.i(0)))
        return self.v(arith.MinSIOp(low, self.i(size - 1)))

    def position(self, g: SSAValue, size: int) -> SSAValue:
        """The grid value ``g`` as a position along a dimension of ``size``:
        unnormalized, rounded (nearest), moved by the padding mode."""
        em = self.em
        shifted = em.addf(g, self.f(1.0))
        if self.aligned:
            u = em.mulf(em.mulf(shifted, self.f(0.5)), self.f(size - 1.0))
        else:
            scaled = em.subf(em.mulf(shifted, self.f(float(size))), self.f(1.0))
            u = em.mulf(scaled, self.f(0.5))
        if self.mode == "nearest":
            u = self.v(math.RoundEvenOp(u))
        if self.mode == "cubic":
            return u  # its taps alone are placed by the padding mode
        lo, hi = (0.0, size - 1.0) if self.aligned else (-0.5, size - 0.5)
        below = self.v(arith.CmpfOp(u, self.f(lo), "olt"))
        above = self.v(arith.CmpfOp(u, self.f(hi), "ogt"))
        if self.padding == "border":
            inside = self.select(above, self.f(size - 1.0), u)
            return self.select(below, self.f(0.0), inside)
        if self.padding == "reflection":
            moved = self.reflect(u, below, lo, hi)
            return self.select(below, moved, self.select(above, moved, u))
        return u

    def reflect(self, u: SSAValue, below: SSAValue, lo: float, hi: float) -> SSAValue:
        """``u`` (outside ``[lo, hi]``) reflected by the borders until inside."""
        em = self.em
        span = hi - lo
        if span == 0:
            return self.f(lo)
        beyond = self.select(below, em.subf(self.f(lo), u), em.subf(u, self.f(hi)))
        flips = self.v(math.FloorOp(em.divf(beyond, self.f(span))))
        rest = em.subf(beyond, em.mulf(flips, self.f(span)))
        halves = self.v(math.FloorOp(em.mulf(flips, self.f(0.5))))
        parity = em.subf(flips, em.mulf(halves, self.f(2.0)))
        odd = self.v(arith.CmpfOp(parity, self.f(0.0), "one"))
        from_lo = em.addf(self.f(lo), rest)
        from_hi = em.subf(self.f(hi), rest)
        near = self.select(below, from_lo, from_hi)
        far = self.select(below, from_hi, from_lo)
        return self.select(odd, far, near)

    def weights(self, t: SSAValue) -> list[SSAValue | None]:
        """The weight of each tap, from ``t = u - floor(u)`` in ``[0, 1)``."""
        em = self.em
        if self.mode == "nearest":
            return [None]
        one = self.f(1.0)
        if self.mode == "linear":
            return [em.subf(one, t), t]
        a = CUBIC_A

        def outer(s: SSAValue) -> SSAValue:  # |s| in [1, 2]
            p = em.subf(em.mulf(self.f(a), s), self.f(5 * a))
            p = em.addf(em.mulf(p, s), self.f(8 * a))
            return em.subf(em.mulf(p, s), self.f(4 * a))

        def inner(s: SSAValue) -> SSAValue:  # |s| in [0, 1]
            p = em.subf(em.mulf(self.f(a + 2), s), self.f(a + 3))
            return em.addf(em.mulf(em.mulf(p, s), s), one)

        return [
            outer(em.addf(t, one)),
            inner(t),
            inner(em.subf(one, t)),
            outer(em.subf(self.f(2.0), t)),
        ]

    def taps(self, g: SSAValue, size: int) -> tuple[list[_Tap], SSAValue]:
        """The taps along a dimension of ``size`` for grid value ``g``, and the
        position ``u`` they were computed from."""
        u = self.position(g, size)
        base = u if self.mode == "nearest" else self.v(math.FloorOp(u))
        weights = self.weights(self.em.subf(u, base))
        top = size - 1.0
        period = self.period(size)
        if self.mode == "cubic" and self.padding == "reflection" and period > 0:
            # the taps reflect with this period: bring a far base near first
            turns = self.v(math.FloorOp(self.em.divf(base, self.f(period))))
            base = self.em.subf(base, self.em.mulf(turns, self.f(period)))
            top = float(period)
        low = self.v(arith.MaxnumfOp(base, self.f(-SLACK)))
        bounded = self.v(arith.MinnumfOp(low, self.f(top + SLACK)))
        whole = self.v(arith.FPToSIOp(bounded, i64))
        start = self.v(arith.IndexCastOp(whole, IndexType()))
        taps = []
        for offset, weight in zip(OFFSETS[self.mode], weights, strict=True):
            j = self.v(arith.AddiOp(start, self.i(offset)))
            ok = None
            if self.padding == "zeros":
                ge = self.v(arith.CmpiOp(j, self.i(0), "sge"))
                lt = self.v(arith.CmpiOp(j, self.i(size), "slt"))
                ok = self.v(arith.AndIOp(ge, lt))
            elif self.padding == "reflection":
                j = self.reflect_index(j, size)
            taps.append(_Tap(self.clamp(j, size), ok, weight))
        return taps, u

    def period(self, size: int) -> int:
        """How many entries the reflection pattern of a dimension of ``size``
        repeats after: ``2 * size``, ``2 * (size - 1)`` with ``align_corners``."""
        return 2 * (size - 1) if self.aligned else 2 * size

    def reflect_index(self, j: SSAValue, size: int) -> SSAValue:
        """The entry an integer position ``j`` reflects to."""
        period = self.period(size)
        if period == 0:
            return self.i(0)
        m = self.v(arith.RemSIOp(j, self.i(period)))
        negative = self.v(arith.CmpiOp(m, self.i(0), "slt"))
        m = self.select(negative, self.v(arith.AddiOp(m, self.i(period))), m)
        last = period if self.aligned else period - 1
        back = self.v(arith.SubiOp(self.i(last), m))
        first_half = self.v(arith.CmpiOp(m, self.i(size), "slt"))
        return self.select(first_half, m, back)


def _and(em: Emitter, flags: Sequence[SSAValue | None]) -> SSAValue | None:
    result: SSAValue | None = None
    for flag in flags:
        if flag is not None:
            result = flag if result is None else em.value(arith.AndIOp(result, flag))
    return result


def _product(em: Emitter, weights: Sequence[SSAValue | None]) -> SSAValue | None:
    result: SSAValue | None = None
    for weight in weights:
        if weight is not None:
            result = weight if result is None else em.mulf(result, weight)
    return result


def lower_grid_sample(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.GridSampleOp)
    x, grid = sources
    assert isinstance(x, SSAValue) and isinstance(grid, SSAValue)
    out_shape = shape(op.result)
    if pymath.prod(out_shape) == 0:
        return  # nothing to read
    (out,) = k.outputs
    em = k.em
    b = _Builder(em, op)
    batch, channels, *sizes = shape(op.input)
    rank = len(sizes)
    names = ["n", *[f"o{d}" for d in range(rank)]]
    with em.nest(names, [batch, *out_shape[2:]]) as ivs:
        per_dim = []
        nan_flags = []
        for d, size in enumerate(sizes):
            where = [dim(j) for j in range(rank + 1)] + [const(rank - 1 - d)]
            g = em.load(grid, ivs, where)
            taps, u = b.taps(g, size)
            per_dim.append(taps)
            nan_flags.append(em.value(arith.CmpfOp(u, u, "uno")))
        reads = [
            (
                [t.at for t in combo],
                _and(em, [t.ok for t in combo]),
                _product(em, [t.weight for t in combo]),
            )
            for combo in itertools.product(*per_dim)
        ]
        nan = None
        if b.mode == "nearest":  # the others make NaN from NaN by their weights
            nan = nan_flags[0]
            for flag in nan_flags[1:]:
                nan = em.value(arith.OrIOp(nan, flag))
        with em.nest(["c"], [channels]) as (c,):
            total: SSAValue | None = None
            for at, ok, weight in reads:
                v = em.value(memref.LoadOp.get(x, [ivs[0], c, *at]))
                if ok is not None:
                    v = b.select(ok, v, b.f(0.0))
                if weight is not None:
                    v = em.mulf(weight, v)
                total = v if total is None else em.addf(total, v)
            assert total is not None
            if nan is not None:
                total = b.select(nan, b.f(pymath.nan), total)
            index = [ivs[0], c, *ivs[1:]]
            em.store(total, out, index, [dim(j) for j in range(rank + 2)])
