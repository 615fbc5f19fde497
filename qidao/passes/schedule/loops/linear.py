"""Affine expressions as linear forms: which values an index moves with, and how far.

An ``affine.load``/``affine.store`` index is an ``AffineExpr`` over the op's
operands (dimensions first, then symbols). Read as a *linear form* it maps each
operand to its coefficient and ``None`` to the constant term::

    (d0, d1)[s0] -> (d0 * 4 + d1 + 2)   over (%i_o, %i_i, %n)
        ==>  {%i_o: 4, %i_i: 1, None: 2}

This is what the primitives and targets ask of an index: ``reorder`` whether two
iterations of a band can touch the same element (:func:`linear_form`),
``vectorize`` how far an access moves per iteration of its loop
(:func:`coefficient`), the CUDA emitter's shared-memory staging which thread
counter picks which slice of a buffer (:func:`linear_form`).

Only ``+`` and multiplication by a number are linear. ``floordiv``, ``ceildiv`` and
``mod`` of a value, and a product of two values (a semi-affine expression, which
only a hand-built ``AffineBinaryOpExpr`` holds: xDSL's ``*`` refuses it) are not.
xDSL's operators fold those ops on numbers, so they never appear on numbers alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)

Linear = dict[SSAValue | None, int]
"""A linear form: value -> coefficient, ``None`` -> the constant term. A sum or a
product leaves out the terms whose coefficient is 0 (``d0 - d0`` is ``{}``)."""

_Terms = dict[SSAValue | AffineExpr | None, int]
"""A linear form while it is being built; an ``AffineExpr`` key is a non-linear
part that does not use the variable :func:`coefficient` asks about, a fixed value
of its own (``s0 floordiv 2``)."""


def linear_form(
    expr: AffineExpr,
    operands: Sequence[SSAValue],
    num_dims: int,
    *,
    through_apply: bool = False,
) -> Linear | None:
    """``expr`` over ``operands`` (``num_dims`` dimensions, then symbols) as value ->
    coefficient (``None``: the constant), or None when it is not linear.

    With ``through_apply``, an operand computed by an ``affine.apply`` stands for
    the linear form of its map over its own operands (and so on, recursively), so
    an index ``%a`` with ``%a = affine.apply (d0) -> (d0 * 4)(%i)`` reads as
    ``{%i: 4}``; without it, ``{%a: 1}``.

    ``d0 * 4 + s0 - 1`` over ``(%i)[%n]`` is ``{%i: 4, %n: 1, None: -1}``;
    ``d0 floordiv 2`` and ``d0 mod 4`` are not linear (None).
    """
    terms = _terms(expr, operands, num_dims, None, through_apply)
    if terms is None:
        return None
    # Without a variable to ask about, every non-linear part is None: no AffineExpr
    # key is left.
    return {k: c for k, c in terms.items() if not isinstance(k, AffineExpr)}


def coefficient(
    expr: AffineExpr,
    operands: Sequence[SSAValue],
    num_dims: int,
    variable: SSAValue,
) -> int | None:
    """The coefficient of ``variable`` in ``expr`` over ``operands`` (``num_dims``
    dimensions, then symbols), or None when ``expr`` is not linear in it.

    Every other operand is a fixed value, and so is any part of ``expr`` that does
    not use ``variable``, linear or not: with ``variable`` ``%j``, ``d0 floordiv 2
    + d1 * 4`` over ``(%i, %j)`` has coefficient 4, ``d1 mod 4`` none (None), and
    ``d0 + 1`` coefficient 0. ``variable`` may be more than one operand (``d0 + d1``
    over ``(%j, %j)``: 2).
    """
    terms = _terms(expr, operands, num_dims, variable, False)
    return None if terms is None else terms.get(variable, 0)


def _terms(
    expr: AffineExpr,
    operands: Sequence[SSAValue],
    num_dims: int,
    variable: SSAValue | None,
    through_apply: bool,
) -> _Terms | None:
    """The linear form of ``expr``. With ``variable``, a non-linear part that does
    not use it is a term of its own; without, every non-linear part is None."""
    match expr:
        case AffineConstantExpr():
            return {None: expr.value}
        case AffineDimExpr():
            return _operand_terms(operands[expr.position], variable, through_apply)
        case AffineSymExpr():
            value = operands[num_dims + expr.position]
            return _operand_terms(value, variable, through_apply)
        case AffineBinaryOpExpr():
            lhs = _terms(expr.lhs, operands, num_dims, variable, through_apply)
            rhs = _terms(expr.rhs, operands, num_dims, variable, through_apply)
            if lhs is None or rhs is None:
                return None
            if expr.kind == AffineBinaryOpKind.Add:
                return _sum(lhs, rhs)
            if expr.kind == AffineBinaryOpKind.Mul:
                for factor, other in ((lhs, rhs), (rhs, lhs)):
                    if set(factor) <= {None}:  # a number
                        scale = factor.get(None, 0)
                        return {k: c * scale for k, c in other.items() if c * scale}
            if variable is not None and variable not in lhs and variable not in rhs:
                return {expr: 1}
    return None


def _operand_terms(
    value: SSAValue, variable: SSAValue | None, through_apply: bool
) -> _Terms | None:
    """The linear form of one operand: itself, or the map of the ``affine.apply``
    that computes it (``through_apply``)."""
    apply = value.owner
    if through_apply and isinstance(apply, affine.ApplyOp):
        (result,) = apply.map.data.results
        operands = list(apply.mapOperands)
        return _terms(result, operands, apply.map.data.num_dims, variable, True)
    return {value: 1}


def _sum(lhs: _Terms, rhs: _Terms) -> _Terms:
    total = dict(lhs)
    for key, c in rhs.items():
        total[key] = total.get(key, 0) + c
    return {k: c for k, c in total.items() if c != 0}


__all__ = ["Linear", "coefficient", "linear_form"]
