"""Converters for ``LayerNormalization`` and ``LogSoftmax``, composed from tg ops.

``LayerNormalization`` (opset 17) over the axes ``[axis, rank)``, as ONNX's own
function body computes it::

    mean = reduce_mean(x, axes, keepdims)        # output #1, Mean
    d = x - mean
    inv_std = 1 / sqrt(reduce_mean(d * d, axes, keepdims) + epsilon)   # #2
    y = d * inv_std * scale + bias               # output #0

``LogSoftmax`` is ``x - max - log(sum(exp(x - max)))`` along ``axis``; before opset
13 the input is coerced to 2-D as for ``Softmax``.
"""

from __future__ import annotations

import math

from onnx import TensorProto

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node


def _axis(node: Node, axis: int, rank: int) -> int:
    """``axis`` in ``[0, rank)``, or an error naming the node."""
    if not -rank <= axis < max(rank, 1):
        raise node.error(f"axis {axis} is out of range for an input of rank {rank}")
    return axis % max(rank, 1)


@converter("LayerNormalization")
def _layer_normalization(im: Importer, node: Node) -> list[Value | Array]:
    g = im.graph
    x, scale = im.input(node, 0), im.input(node, 1)
    bias = im.optional_input(node, 2)
    if x.rank == 0:
        raise node.error("expects an input of rank >= 1, got a scalar")
    stash = int(node.attr("stash_type", TensorProto.FLOAT))
    if stash != TensorProto.FLOAT:
        raise node.error(
            f"stash_type={stash} is not supported (only 1: statistics in float32)"
        )
    axis = _axis(node, int(node.attr("axis", -1)), x.rank)
    axes = list(range(axis, x.rank))
    epsilon = float(node.attr("epsilon", 1e-5))
    mean = g.reduce_mean(x, axes, keepdims=True)
    centered = x - mean
    variance = g.reduce_mean(centered * centered, axes, keepdims=True)
    inv_std = 1.0 / g.sqrt(variance + epsilon)
    y = centered * inv_std * scale
    if bias is not None:
        y = y + bias
    return [y, mean, inv_std]


def _log_softmax(g: Graph, x: Value, axis: int) -> Value:
    shifted = x - g.reduce_max(x, axis, keepdims=True)
    return shifted - g.log(g.reduce_sum(g.exp(shifted), axis, keepdims=True))


@converter("LogSoftmax")
def _log_softmax_node(im: Importer, node: Node) -> list[Value | Array]:
    """From opset 13 along ``axis`` (default -1); before, the input is coerced to
    2-D ``[prod(shape[:axis]), prod(shape[axis:])]`` (default axis 1)."""
    g = im.graph
    x = im.input(node, 0)
    if x.rank == 0:
        raise node.error("expects an input of rank >= 1, got a scalar")
    if node.opset >= 13:
        return [_log_softmax(g, x, _axis(node, int(node.attr("axis", -1)), x.rank))]
    axis = _axis(node, int(node.attr("axis", 1)), x.rank)
    if axis == x.rank - 1:
        return [_log_softmax(g, x, axis)]
    flat = g.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
    return [g.reshape(_log_softmax(g, flat, 1), x.shape)]
