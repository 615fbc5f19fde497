"""Converters for ``ReduceSum``, ``ReduceMean``, ``ReduceMax`` and ``Softmax``."""

from __future__ import annotations

import math
from collections.abc import Callable

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, Node, converter


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
    return [fn(im.graph, x, axes, keepdims)]


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
