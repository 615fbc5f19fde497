"""``floordiv`` and ``mod`` by a constant, simplified with the ranges of the loops.

``split`` of ``j`` by 32 writes ``j`` as ``32 * j_o + j_i`` with ``0 <= j_i < 32``;
an access ``B[j floordiv 32, k, j mod 32]`` (a matmul rhs stored in column panels,
``tg.matmul``'s ``rhs_layout = "panels"``) then reads ``B[(32 * j_o + j_i) floordiv
32, k, (32 * j_o + j_i) mod 32]``, which is ``B[j_o, k, j_i]``: unit stride in
``j_i``, so ``vectorize`` takes it. The rule, for ``e floordiv c`` and ``e mod c``
with ``e`` linear (``sum a_d * d + a_0``) and ``c > 0``:

    e = c * q + r,   q = sum (a_d / c) * d over the terms whose a_d divides by c
                         (plus a_0's multiple of c), r = the other terms + a_0 mod c

and when every dimension in ``r`` has a known range and ``0 <= r < c`` over it,
``e floordiv c = q`` and ``e mod c = r``. A dimension's range is that of the loop
whose induction variable it is (constant lower bound, an upper bound with a
constant among its results); anything else is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)

Range = tuple[int, int]
"""The least and the greatest value (both included)."""


def loop_range(value: SSAValue) -> Range | None:
    """The values ``value`` takes when it is an ``affine.for``'s induction
    variable with a constant lower bound and a constant among its upper bounds."""
    if not isinstance(value, BlockArgument) or value.index != 0:
        return None
    loop = value.block.parent_op()
    if not isinstance(loop, affine.ForOp):
        return None
    lower = loop.lowerBoundMap.data.results
    upper = loop.upperBoundMap.data.results
    if len(lower) != 1 or not isinstance(lower[0], AffineConstantExpr):
        return None
    ends = [e.value for e in upper if isinstance(e, AffineConstantExpr)]
    if not ends:
        return None
    return lower[0].value, min(ends) - 1


def _linear(expr: AffineExpr) -> dict[int, int] | None:
    """``expr`` as ``{dim: coefficient}`` with the constant at key -1, or None when
    it is not a sum of constant multiples of dimensions."""
    if isinstance(expr, AffineConstantExpr):
        return {-1: expr.value}
    if isinstance(expr, AffineDimExpr):
        return {expr.position: 1}
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs, rhs = _linear(expr.lhs), _linear(expr.rhs)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        total = dict(lhs)
        for key, c in rhs.items():
            total[key] = total.get(key, 0) + c
        return total
    if expr.kind == AffineBinaryOpKind.Mul:
        for factor, other in ((lhs, rhs), (rhs, lhs)):
            if set(factor) == {-1}:
                return {key: c * factor[-1] for key, c in other.items()}
    return None


def _build(terms: dict[int, int]) -> AffineExpr:
    expr: AffineExpr = AffineExpr.constant(terms.get(-1, 0))
    for key, c in sorted(terms.items()):
        if key >= 0 and c:
            expr = expr + AffineExpr.dimension(key) * c
    return expr


def _split(
    expr: AffineBinaryOpExpr, ranges: Sequence[Range | None]
) -> tuple[AffineExpr, AffineExpr] | None:
    """``(q, r)`` of the module docstring for ``expr = e floordiv c`` or ``e mod
    c``, when ``0 <= r < c`` is known; else None."""
    if not isinstance(expr.rhs, AffineConstantExpr) or expr.rhs.value <= 0:
        return None
    c = expr.rhs.value
    terms = _linear(expr.lhs)
    if terms is None:
        return None
    quotient: dict[int, int] = {-1: terms.get(-1, 0) // c}
    rest: dict[int, int] = {-1: terms.get(-1, 0) % c}
    low = high = rest[-1]
    for key, a in terms.items():
        if key < 0 or a == 0:
            continue
        if a % c == 0:
            quotient[key] = a // c
            continue
        known = ranges[key] if key < len(ranges) else None
        if known is None:
            return None
        rest[key] = a
        low += min(a * known[0], a * known[1])
        high += max(a * known[0], a * known[1])
    if low < 0 or high >= c:
        return None
    return _build(quotient), _build(rest)


def simplify_quotients(expr: AffineExpr, ranges: Sequence[Range | None]) -> AffineExpr:
    """``expr`` with each ``floordiv``/``mod`` by a constant that the ranges of its
    dimensions (``ranges[d]``, None when unknown) decide replaced by its value."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return expr
    lhs = simplify_quotients(expr.lhs, ranges)
    rhs = simplify_quotients(expr.rhs, ranges)
    rebuilt = AffineBinaryOpExpr(expr.kind, lhs, rhs)
    if expr.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.Mod):
        parts = _split(rebuilt, ranges)
        if parts is not None:
            return parts[0] if expr.kind == AffineBinaryOpKind.FloorDiv else parts[1]
    return rebuilt
