"""Affine expressions and sets as C expressions over ``long long`` names.

``mod``, ``floordiv`` and ``ceildiv`` round as affine does, through the helpers
of the preamble (``qd_mod``, ``qd_floordiv``, ``qd_ceildiv``); ``min``/``max``
of several results fold into ``qd_min``/``qd_max``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineConstraintKind,
    AffineDimExpr,
    AffineExpr,
    AffineSet,
    AffineSymExpr,
)

from qidao.compiler.targets.cuda.emit.errors import CudaEmitError

_CONSTRAINT_SIGNS = {
    AffineConstraintKind.ge: ">=",
    AffineConstraintKind.le: "<=",
    AffineConstraintKind.eq: "==",
}


def affine_c(expr: AffineExpr, dims: Sequence[str], syms: Sequence[str]) -> str:
    """``expr`` as a C expression over ``long long`` names."""
    if isinstance(expr, AffineConstantExpr):
        return str(expr.value)
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineSymExpr):
        return syms[expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs = affine_c(expr.lhs, dims, syms)
    rhs_expr = expr.rhs
    match expr.kind:
        case AffineBinaryOpKind.Add:
            return _sum_c(expr, lhs, dims, syms)
        case AffineBinaryOpKind.Mul:
            rhs = affine_c(rhs_expr, dims, syms)
            if isinstance(rhs_expr, AffineConstantExpr) and rhs_expr.value == -1:
                return f"-{factor(lhs)}"
            return f"{factor(lhs)} * {factor(rhs)}"
        case AffineBinaryOpKind.Mod:
            return f"qd_mod({lhs}, {affine_c(rhs_expr, dims, syms)})"
        case AffineBinaryOpKind.FloorDiv:
            return f"qd_floordiv({lhs}, {affine_c(rhs_expr, dims, syms)})"
        case AffineBinaryOpKind.CeilDiv:
            return f"qd_ceildiv({lhs}, {affine_c(rhs_expr, dims, syms)})"
    raise CudaEmitError(f"unknown affine expression {expr}")


def _sum_c(
    expr: AffineBinaryOpExpr, lhs: str, dims: Sequence[str], syms: Sequence[str]
) -> str:
    """The sum ``expr`` (its left side already ``lhs``), negative terms written as
    a difference."""
    lhs_expr, rhs_expr = expr.lhs, expr.rhs
    if (
        isinstance(lhs_expr, AffineBinaryOpExpr)
        and lhs_expr.kind == AffineBinaryOpKind.Mul
        and isinstance(lhs_expr.rhs, AffineConstantExpr)
        and lhs_expr.rhs.value < 0
    ):  # -256 * o + 1000 reads 1000 - o * 256
        scaled = factor(affine_c(lhs_expr.lhs, dims, syms))
        scale = -lhs_expr.rhs.value
        term = scaled if scale == 1 else f"{scaled} * {scale}"
        return f"{affine_c(rhs_expr, dims, syms)} - {term}"
    if isinstance(rhs_expr, AffineConstantExpr) and rhs_expr.value < 0:
        return f"{lhs} - {-rhs_expr.value}"
    if (
        isinstance(rhs_expr, AffineBinaryOpExpr)
        and rhs_expr.kind == AffineBinaryOpKind.Mul
        and isinstance(rhs_expr.rhs, AffineConstantExpr)
        and rhs_expr.rhs.value == -1
    ):
        return f"{lhs} - {factor(affine_c(rhs_expr.lhs, dims, syms))}"
    return f"{lhs} + {affine_c(rhs_expr, dims, syms)}"


def affine_set_c(
    affine_set: AffineSet, dims: Sequence[str], syms: Sequence[str]
) -> str:
    """The constraints of ``affine_set`` as one C condition (``true`` for none)."""
    tests = []
    for constraint in affine_set.constraints:
        lhs = affine_c(constraint.lhs, dims, syms)
        rhs = affine_c(constraint.rhs, dims, syms)
        tests.append(f"{lhs} {_CONSTRAINT_SIGNS[constraint.kind]} {rhs}")
    return " && ".join(tests) or "true"


def factor(text: str) -> str:
    """``text`` parenthesized when it is a sum or a difference."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch in "+-" and k > 0 and text[k - 1] == " ":
            return f"({text})"
    return text


def fold(kind: str, items: list[str]) -> str:
    """``qd_min(a, qd_min(b, c))`` for several results; the item for one."""
    result = items[-1]
    for item in reversed(items[:-1]):
        result = f"qd_{kind}({item}, {result})"
    return result
