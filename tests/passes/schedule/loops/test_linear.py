"""Affine expressions as linear forms (``qidao/passes/schedule/loops/linear.py``):
the helper behind ``reorder``'s dependence check, ``vectorize``'s access strides and
the CUDA emitter's shared-memory staging."""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, IndexType
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineExpr,
    AffineMap,
)
from xdsl.parser import Parser

from qidao.compiler.context import make_context
from qidao.passes.schedule.loops.linear import coefficient, linear_form


def parse_map(text: str) -> AffineMap:
    attr = Parser(make_context(), f"affine_map<{text}>").parse_attribute()
    assert isinstance(attr, AffineMapAttr)
    return attr.data


def expr_of(text: str) -> tuple[AffineExpr, int]:
    """The one result of the map ``text`` and its number of dimensions."""
    amap = parse_map(text)
    (expr,) = amap.results
    return expr, amap.num_dims


def values(*names: str) -> list[SSAValue]:
    """Index values named ``names`` (the arguments of a block)."""
    block = Block(arg_types=[IndexType()] * len(names))
    for arg, name in zip(block.args, names, strict=True):
        arg.name_hint = name
    return list(block.args)


def apply(text: str, operands: list[SSAValue]) -> SSAValue:
    """The result of ``affine.apply text(operands)``, in a block of its own."""
    op = affine.ApplyOp(operands, AffineMapAttr(parse_map(text)))
    Block([op])
    return op.result


def test_the_docstring_example() -> None:
    i_o, i_i, n = values("i_o", "i_i", "n")
    expr, dims = expr_of("(d0, d1)[s0] -> (d0 * 4 + d1 + 2)")
    assert linear_form(expr, [i_o, i_i, n], dims) == {i_o: 4, i_i: 1, None: 2}


def test_symbols_and_negative_coefficients() -> None:
    i, n = values("i", "n")
    expr, dims = expr_of("(d0)[s0] -> (d0 * 4 + s0 - 1)")
    assert linear_form(expr, [i, n], dims) == {i: 4, n: 1, None: -1}
    expr, dims = expr_of("(d0)[s0] -> (s0 - d0 * 2)")
    assert linear_form(expr, [i, n], dims) == {i: -2, n: 1}


def test_an_operand_used_twice_adds_up() -> None:
    (j,) = values("j")
    expr, dims = expr_of("(d0, d1) -> (d0 + d1 * 2)")
    assert linear_form(expr, [j, j], dims) == {j: 3}


def test_terms_that_cancel_are_left_out() -> None:
    i, k = values("i", "k")
    expr, dims = expr_of("(d0, d1) -> (d0 - d0 + d1)")
    assert linear_form(expr, [i, k], dims) == {k: 1}
    expr, dims = expr_of("(d0) -> (d0 * 0)")
    assert linear_form(expr, [i], dims) == {}


def test_constants() -> None:
    expr, dims = expr_of("() -> (7)")
    assert linear_form(expr, [], dims) == {None: 7}
    # xDSL folds an op on numbers alone when it parses the map
    expr, dims = expr_of("() -> (9 floordiv 2 + 7 mod 4)")
    assert linear_form(expr, [], dims) == {None: 7}


def test_floordiv_mod_ceildiv_are_not_linear() -> None:
    i, k = values("i", "k")
    for text in (
        "(d0) -> (d0 floordiv 2)",
        "(d0) -> (d0 mod 4)",
        "(d0) -> (d0 ceildiv 4)",
        "(d0) -> (d0 * 4 + d0 mod 4)",
    ):
        expr, dims = expr_of(text)
        assert linear_form(expr, [i], dims) is None, text
    expr, dims = expr_of("(d0, d1) -> (d1 + (d0 * 2) floordiv 2)")
    assert linear_form(expr, [i, k], dims) is None


def test_a_product_of_two_values_is_not_linear() -> None:
    # semi-affine: xDSL's * refuses it, so the expression is built by hand
    i, n = values("i", "n")
    d0_times_s0 = AffineBinaryOpExpr(
        AffineBinaryOpKind.Mul, AffineExpr.dimension(0), AffineExpr.symbol(0)
    )
    assert linear_form(d0_times_s0, [i, n], 1) is None
    s0_times_s1 = AffineBinaryOpExpr(
        AffineBinaryOpKind.Mul, AffineExpr.symbol(0), AffineExpr.symbol(1)
    )
    assert linear_form(s0_times_s1 + AffineExpr.dimension(0), [i, n, n], 1) is None


def test_through_apply_reads_the_applied_map() -> None:
    i, k = values("i", "k")
    a = apply("(d0) -> (d0 * 4)", [i])
    expr, dims = expr_of("(d0, d1) -> (d0 + d1 + 1)")
    assert linear_form(expr, [a, k], dims, through_apply=True) == {i: 4, k: 1, None: 1}
    assert linear_form(expr, [a, k], dims) == {a: 1, k: 1, None: 1}
    # and recursively: b = a + i = 5 * i
    b = apply("(d0, d1) -> (d0 + d1)", [a, i])
    expr, dims = expr_of("(d0) -> (d0 * 2)")
    assert linear_form(expr, [b], dims, through_apply=True) == {i: 10}


def test_through_apply_of_a_non_linear_map_is_not_linear() -> None:
    (i,) = values("i")
    half = apply("(d0) -> (d0 floordiv 2)", [i])
    expr, dims = expr_of("(d0) -> (d0 + 1)")
    assert linear_form(expr, [half], dims, through_apply=True) is None
    assert linear_form(expr, [half], dims) == {half: 1, None: 1}


def test_coefficient_of_one_variable() -> None:
    i, j = values("i", "j")
    expr, dims = expr_of("(d0, d1) -> (d0 * 64 + d1)")
    assert coefficient(expr, [i, j], dims, j) == 1
    assert coefficient(expr, [i, j], dims, i) == 64
    expr, dims = expr_of("(d0, d1) -> (d1 * 2 + 3)")
    assert coefficient(expr, [i, j], dims, j) == 2
    expr, dims = expr_of("(d0) -> (d0 + 1)")
    assert coefficient(expr, [i], dims, j) == 0  # j is not an operand


def test_coefficient_of_a_variable_used_twice() -> None:
    (j,) = values("j")
    expr, dims = expr_of("(d0)[s0] -> (d0 + s0 * 3)")
    assert coefficient(expr, [j, j], dims, j) == 4


def test_coefficient_where_the_variable_is_not_linear() -> None:
    i, j = values("i", "j")
    for text in (
        "(d0, d1) -> (d1 floordiv 2)",
        "(d0, d1) -> (d1 mod 4)",
        "(d0, d1) -> (d0 + d1 ceildiv 4)",
    ):
        expr, dims = expr_of(text)
        assert coefficient(expr, [i, j], dims, j) is None, text
    j_times_i = AffineBinaryOpExpr(
        AffineBinaryOpKind.Mul, AffineExpr.dimension(1), AffineExpr.dimension(0)
    )
    assert coefficient(j_times_i, [i, j], 2, j) is None


def test_coefficient_treats_what_does_not_use_the_variable_as_fixed() -> None:
    i, j, n, m = values("i", "j", "n", "m")
    expr, dims = expr_of("(d0, d1) -> (d0 floordiv 2 + d1 * 4)")
    assert coefficient(expr, [i, j], dims, j) == 4
    assert coefficient(expr, [i, j], dims, i) is None
    expr, dims = expr_of("(d0, d1) -> (d0 mod 4 + d1)")
    assert coefficient(expr, [i, j], dims, j) == 1
    # d0 + s0 * s1: the product is a fixed value when the variable is neither
    # symbol, and not linear in one that is
    s0_times_s1 = AffineBinaryOpExpr(
        AffineBinaryOpKind.Mul, AffineExpr.symbol(0), AffineExpr.symbol(1)
    )
    expr = AffineExpr.dimension(0) + s0_times_s1
    assert coefficient(expr, [j, n, m], 1, j) == 1
    assert coefficient(expr, [j, n, m], 1, n) is None
    assert linear_form(expr, [j, n, m], 1) is None
