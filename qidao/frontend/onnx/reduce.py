"""Converters for ``ReduceSum``, ``ReduceMean``, ``ReduceMax``, ``ReduceProd``,
``Softmax``, ``ArgMax``/``ArgMin`` and ``Hardmax``.

tg's reductions take floats; an integer or bool input reduces in float64 (exact
for integers below 2^53) and converts back: integers truncate (the reference's
``astype``), bools are ``> 0.5`` (``ReduceMax`` of bools is "any", false for an
empty set). ``ReduceProd`` is ``tg.reduce_prod``, which also multiplies integers
in their own dtype (wrapping around on overflow, as NumPy's ``prod``)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node


def _reduce_axes(im: Importer, node: Node, axes_input_from: int) -> list[int] | None:
    """The reduce axes: an attribute before opset ``axes_input_from``, then input #1.
    None means "no axes given"."""
    if node.opset < axes_input_from:
        axes = node.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    names = node.inputs
    if len(names) < 2 or not names[1]:
        return None
    return [int(a) for a in im.const(node, names[1], "axes").reshape(-1)]


_REDUCE: dict[str, tuple[Callable[..., Value], int]] = {
    "ReduceSum": (Graph.reduce_sum, 13),
    "ReduceMean": (Graph.reduce_mean, 18),
    "ReduceMax": (Graph.reduce_max, 18),
}


def reduce_values(
    g: Graph,
    fn: Callable[..., Value],
    x: Value,
    axes: list[int],
    keepdims: bool,
) -> Value:
    """``fn(g, x, axes, keepdims)`` for a float ``x``; in float64 and back for an
    integer or bool one (see the module docstring)."""
    if x.dtype in ("float32", "float64"):
        return fn(g, x, axes, keepdims)
    reduced = fn(g, g.cast(x, "float64"), axes, keepdims)
    if x.dtype == "bool":
        return g.greater(reduced, 0.5)
    return g.cast(reduced, x.dtype)


@converter(*_REDUCE)
def _reduce(im: Importer, node: Node) -> list[Value | Array]:
    fn, axes_input_from = _REDUCE[node.op_type]
    x = im.input(node, 0)
    axes = _reduce_axes(im, node, axes_input_from)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0) or x.rank == 0:
            return [x]
        axes = list(range(x.rank))
    return [reduce_values(im.graph, fn, x, axes, keepdims)]


@converter("ReduceProd")
def _reduce_prod(im: Importer, node: Node) -> list[Value | Array]:
    """``axes`` (input #1 from opset 18, an attribute before), ``keepdims`` (1),
    ``noop_with_empty_axes`` (0: no axes reduce all of them)."""
    x = im.input(node, 0)
    if x.dtype == "bool":
        raise node.error("expects a numeric tensor, got bool")
    axes = _reduce_axes(im, node, 18)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0) or x.rank == 0:
            return [x]
        axes = list(range(x.rank))
    return [im.graph.reduce_prod(x, axes, keepdims)]


@converter("Softmax")
def _softmax(im: Importer, node: Node) -> list[Value | Array]:
    """From opset 13 along ``axis`` (default -1); before, the input is coerced to
    2-D ``[prod(shape[:axis]), prod(shape[axis:])]`` (default axis 1)."""
    g = im.graph
    x = im.input(node, 0)
    if node.opset >= 13:
        return [g.softmax(x, int(node.attr("axis", -1)))]
    axis = int(node.attr("axis", 1))
    if not -x.rank <= axis < max(x.rank, 1):
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    axis %= max(x.rank, 1)
    if axis == x.rank - 1:
        return [g.softmax(x, -1)]
    flat = g.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
    return [g.reshape(g.softmax(flat, 1), x.shape)]


# ---- ArgMax, ArgMin, Hardmax: a reduction, a comparison and a select --------------


def _arg_extreme(
    g: Graph, x: Value, axis: int, largest: bool, last: bool, keepdims: bool
) -> Value:
    """The int64 index of the first (``last``: the last) maximum (``largest``) or
    minimum of ``x`` along ``axis``, NumPy's ``argmax``/``argmin`` (a NaN is the
    extreme: its first index wins).

    In float64: ``hit = x == extreme or x is NaN`` (the extreme is NaN exactly when
    the slice holds one, and then only NaNs are hit); the index is the smallest
    (largest) position where ``hit``, a reduction over ``where(hit, position,
    n)`` (``-1``). Positions are exact in float64."""
    xf = x if x.dtype == "float64" else g.cast(x, "float64")
    n = x.shape[axis]
    if largest:
        extreme = g.reduce_max(xf, [axis], keepdims=True)
    else:
        extreme = g.neg(g.reduce_max(g.neg(xf), [axis], keepdims=True))
    hit = g.logical_or(g.equal(xf, extreme), g.not_equal(xf, xf))
    shape = [1] * x.rank
    shape[axis] = n
    positions = np.arange(n, dtype=np.float64).reshape(shape)
    if last:
        at = g.constant(positions, dtype="float64")
        index = g.reduce_max(g.where(hit, at, -1.0), [axis], keepdims)
    else:
        at = g.constant(-positions, dtype="float64")
        index = g.neg(g.reduce_max(g.where(hit, at, -float(n)), [axis], keepdims))
    return g.cast(index, "int64")


@converter("ArgMax", "ArgMin")
def _arg_max_min(im: Importer, node: Node) -> list[Value | Array]:
    """``axis`` (default 0), ``keepdims`` (1), ``select_last_index`` (0, opset
    12): see ``_arg_extreme``."""
    x = im.input(node, 0)
    if x.rank == 0:
        raise node.error("expects an input of rank >= 1")
    axis = int(node.attr("axis", 0))
    if not -x.rank <= axis < x.rank:
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    if x.shape[axis % x.rank] == 0:
        raise node.error("cannot take the index of an extreme of an empty axis")
    return [
        _arg_extreme(
            im.graph,
            x,
            axis % x.rank,
            largest=node.op_type == "ArgMax",
            last=bool(node.attr("select_last_index", 0)),
            keepdims=bool(node.attr("keepdims", 1)),
        )
    ]


@converter("Hardmax")
def _hardmax(im: Importer, node: Node) -> list[Value | Array]:
    """1 at the first maximum along ``axis``, 0 elsewhere. From opset 13 along
    ``axis`` (default -1); before, the input is coerced to 2-D
    ``[prod(shape[:axis]), prod(shape[axis:])]`` (default axis 1)."""
    g, x = im.graph, im.input(node, 0)
    if x.rank == 0:
        raise node.error("expects an input of rank >= 1")
    default = -1 if node.opset >= 13 else 1
    axis = int(node.attr("axis", default))
    if not -x.rank <= axis < x.rank:
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    axis %= x.rank
    flat = x
    if node.opset < 13:
        flat = g.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
        axis = 1
    index = _arg_extreme(g, flat, axis, largest=True, last=False, keepdims=True)
    shape = [1] * flat.rank
    shape[axis] = flat.shape[axis]
    positions = np.arange(flat.shape[axis], dtype=np.int64).reshape(shape)
    one_hot = g.cast(g.equal(index, positions), x.dtype)
    return [one_hot if one_hot.shape == x.shape else g.reshape(one_hot, x.shape)]
