"""Converters for comparisons, logical ops, ``Where``, ``IsNaN``/``IsInf``, ``Sign``,
``Mod``, ``Trilu``, ``OneHot`` and ``EyeLike``: the ONNX ops that make or take
bool tensors or masks.

Comparisons (``Less``, ``LessOrEqual``, ``Greater``, ``GreaterOrEqual``, ``Equal``)
become ``tg.less`` ... ``tg.equal``: bool results, NumPy broadcasting, IEEE ordered
comparisons on floats (NaN compares false), signed on integers. ``Not``/``And``/
``Or``/``Xor`` are the ``tg.logical_*`` ops and ``Where`` is ``tg.select``. On
constant inputs these fold in NumPy instead (``fold.py``).

``Mod`` on integers is composed from ``tg.div`` (which truncates, so ``a - (a / b) *
b`` is C's ``fmod``) and, for ``fmod=0``, a ``tg.select`` that moves the remainder to
the divisor's sign (Python's ``%``). On floats it is ``tg.fmod`` (C's ``fmod``,
exact) and, for ``fmod=0``, NumPy's ``remainder`` built on it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx import helper

from qidao.frontend.builder import Graph, TensorLike, Value
from qidao.frontend.limits import check_tensor
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

_COMPARE: dict[str, Callable[[Graph, TensorLike, TensorLike], Value]] = {
    "Less": Graph.less,
    "LessOrEqual": Graph.less_equal,
    "Greater": Graph.greater,
    "GreaterOrEqual": Graph.greater_equal,
    "Equal": Graph.equal,
    "And": Graph.logical_and,
    "Or": Graph.logical_or,
    "Xor": Graph.logical_xor,
}


@converter(*_COMPARE)
def _compare(im: Importer, node: Node) -> list[Value | Array]:
    a, b = im.input(node, 0), im.input(node, 1)
    return [_COMPARE[node.op_type](im.graph, a, b)]


@converter("Not")
def _not(im: Importer, node: Node) -> list[Value | Array]:
    return [im.graph.logical_not(im.input(node, 0))]


@converter("Where")
def _where(im: Importer, node: Node) -> list[Value | Array]:
    """``np.where(condition, X, Y)``, the three broadcasting."""
    g = im.graph
    condition, x, y = (im.input(node, k) for k in range(3))
    return [g.where(condition, x, y)]


@converter("IsNaN")
def _is_nan(im: Importer, node: Node) -> list[Value | Array]:
    """``x != x``: true exactly for NaN."""
    x = im.input(node, 0)
    return [im.graph.not_equal(x, x)]


@converter("IsInf")
def _is_inf(im: Importer, node: Node) -> list[Value | Array]:
    """``x == inf`` (``detect_positive``, default 1), ``x == -inf``
    (``detect_negative``, default 1), both (``|x| == inf``), or neither (all
    false)."""
    g, x = im.graph, im.input(node, 0)
    positive = bool(node.attr("detect_positive", 1))
    negative = bool(node.attr("detect_negative", 1))
    if positive and negative:
        return [g.equal(g.abs(x), np.inf)]
    if positive:
        return [g.equal(x, np.inf)]
    if negative:
        return [g.equal(x, -np.inf)]
    return [np.zeros(x.shape, np.bool_)]


@converter("Sign")
def _sign(im: Importer, node: Node) -> list[Value | Array]:
    """-1, 0 or 1 as NumPy's ``sign``: ``where(x > 0, 1, where(x < 0, -1,
    where(x == x, 0, x)))``: NaN gives NaN and both zeros give +0 (``-0.0`` gave
    itself before, and ``1 / sign(-0.0)`` was -inf where ONNX Runtime and ONNX's
    reference give inf; found by ``qidao fuzz``); unsigned: ``where(x > 0, 1, x)``."""
    g, x = im.graph, im.input(node, 0)
    if x.dtype.startswith("uint"):
        return [g.where(g.greater(x, 0), 1, x)]
    zero_or_nan = g.where(g.equal(x, x), 0, x)
    return [g.where(g.greater(x, 0), 1, g.where(g.less(x, 0), -1, zero_or_nan))]


@converter("Mod")
def _mod(im: Importer, node: Node) -> list[Value | Array]:
    """Integers (signed or unsigned): ``fmod=1`` is C's ``fmod`` (the sign of
    ``a``), ``fmod=0`` (the default) Python's ``%`` (the sign of ``b``). ``x mod 0``
    is ``x`` (ONNX leaves it undefined). Floats: ``_float_mod``."""
    g = im.graph
    a, b = im.input(node, 0), im.input(node, 1)
    fmod = int(node.attr("fmod", 0))
    if a.dtype in ("float16", "float32", "float64"):
        return [_float_mod(g, a, b, fmod)]
    if a.dtype not in _INTEGERS:
        raise node.error(f"expects integer or float tensors, got {a.dtype}")
    r = a - g.div(a, b) * b
    if fmod:
        return [r]
    wrong_sign = g.logical_and(
        g.not_equal(r, 0), g.logical_xor(g.less(r, 0), g.less(b, 0))
    )
    return [g.where(wrong_sign, r + b, r)]


_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _float_mod(g: Graph, a: Value, b: Value, fmod: int) -> Value:
    """``fmod=1``: C's ``fmod`` (``tg.fmod``, exact, the sign of ``a``). ``fmod=0``:
    NumPy's ``remainder``: ``r + b`` where the ``fmod`` remainder ``r`` is non-zero
    and its sign differs from ``b``'s, a zero remainder with ``b``'s sign. As
    NumPy's: ``x mod 0`` and ``inf mod y`` are NaN, ``fmod(x, inf)`` is ``x``.
    float16 computes in float64 and rounds once (``r + b`` is exact there)."""
    wide = a.dtype == "float16"
    if wide:
        a, b = g.cast(a, "float64"), g.cast(b, "float64")
    r = g.fmod(a, b)
    if not fmod:
        wrong_sign = g.logical_and(
            g.not_equal(r, 0.0), g.logical_xor(g.less(r, 0.0), g.less(b, 0.0))
        )
        zeros = [g.constant(np.array(z), dtype=b.dtype) for z in (-0.0, 0.0)]
        signed_zero = g.where(g.less(b, 0.0), *zeros)
        # a zero remainder takes b's sign; `round(r) - r` is +0 there (any zero
        # minus itself) with derivative -1, so the zero keeps d/da = 1 (PyTorch's)
        zero = signed_zero - (g.round(r) - r)
        r = g.where(wrong_sign, r + b, g.where(g.equal(r, 0.0), zero, r))
    return g.cast(r, "float16") if wide else r


@converter("Trilu")
def _trilu(im: Importer, node: Node) -> list[Value | Array]:
    """The upper (``upper=1``, the default) or lower triangle of the last two
    dimensions, from diagonal ``k`` (input #1, a constant, default 0), the rest 0:
    ``where(mask, x, 0)`` with the mask NumPy's ``triu``/``tril`` of ones."""
    g, x = im.graph, im.input(node, 0)
    if x.rank < 2:
        raise node.error(f"expects an input of rank >= 2, got {list(x.shape)}")
    k = 0
    names = node.inputs
    if len(names) > 1 and names[1]:
        k = int(np.asarray(im.const(node, names[1], "k")).reshape(-1)[0])
    rows, cols = x.shape[-2:]
    k = max(-rows, min(cols, k))  # beyond the corners: all or nothing (k = -2**63)
    ones = np.ones((rows, cols), np.bool_)
    mask = np.triu(ones, k) if node.attr("upper", 1) else np.tril(ones, k)
    return [g.where(mask, x, 0)]


@converter("OneHot")
def _one_hot(im: Importer, node: Node) -> list[Value | Array]:
    """As the reference: ``hit = indices (negative ones + depth) == position`` along
    a new ``axis`` (default -1), compared in the indices' dtype (a non-integer
    float index matches nothing); ``y = hit * (on - off) + off`` with ``values =
    [off, on]``. ``depth`` (input #1) must be a constant."""
    g = im.graph
    indices, values = im.input(node, 0), im.input(node, 2)
    depth = int(
        np.asarray(im.const(node, node.inputs[1], "depth", shape=True)).reshape(-1)[0]
    )
    if depth < 1:
        raise node.error(f"depth must be positive, got {depth}")
    check_tensor(node.label, [*indices.shape, depth], 8)  # before its position table
    if values.shape != (2,):
        raise node.error(f"values must be [off, on], got shape {list(values.shape)}")
    rank = indices.rank
    axis = int(node.attr("axis", -1))
    if not -rank - 1 <= axis <= rank:
        raise node.error(
            f"axis {axis} is out of range for an output of rank {rank + 1}"
        )
    axis %= rank + 1
    wrapped = g.where(g.less(indices, 0), indices + depth, indices)
    expanded = g.reshape(wrapped, [*indices.shape[:axis], 1, *indices.shape[axis:]])
    shape = [1] * (rank + 1)
    shape[axis] = depth
    positions = np.arange(depth).astype(indices.dtype).reshape(shape)
    hit = g.cast(g.equal(expanded, positions), values.dtype)
    off = g.reshape(g.slice(values, [0], [1]), [])
    on = g.reshape(g.slice(values, [1], [2]), [])
    return [hit * (on - off) + off]


@converter("EyeLike")
def _eye_like(im: Importer, node: Node) -> list[Value | Array]:
    """A constant: ones on diagonal ``k`` of the input's 2-D shape, in ``dtype``
    (default: the input's)."""
    x = im.input(node, 0)
    if x.rank != 2:
        raise node.error(f"expects a 2-D input, got shape {list(x.shape)}")
    dtype = np.dtype(x.dtype)
    if node.attr("dtype") is not None:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(node.attr("dtype"))))
    rows, columns = x.shape
    return [np.eye(rows, columns, k=int(node.attr("k", 0)), dtype=dtype)]
