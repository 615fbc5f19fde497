"""Converters for the normalizations ``LayerNormalization``,
``InstanceNormalization``, ``GroupNormalization``, ``LRN`` and ``LpNormalization``,
and for ``LogSoftmax``, composed from tg ops.

The first three standardize ``x`` over some axes, two-pass (``_standardized``)::

    mean = reduce_mean(x, axes, keepdims)
    d = x - mean
    inv_std = 1 / sqrt(reduce_mean(d * d, axes, keepdims) + epsilon)
    y = d * inv_std * scale + bias

and differ in the axes and in the shape of ``scale`` and ``bias``:

- ``LayerNormalization`` (opset 17): the axes ``[axis, rank)``; ``scale`` and
  ``bias`` broadcast to ``x``; also the outputs ``Mean`` (#1) and ``InvStdDev``
  (#2);
- ``InstanceNormalization``: the spatial axes of ``[N, C, ...]``; one ``scale`` and
  ``bias`` per channel;
- ``GroupNormalization`` (opset 18; 21): ``x`` viewed as ``[N, G, C/G * ...]``
  standardized along its last axis; ``scale`` and ``bias`` per group before opset
  21 (``[G]``), per channel from 21 (``[C]``). From 21, ``stash_type=1`` (the only
  value) computes the standardization in float32 and casts it back to ``x``'s
  dtype before ``scale`` and ``bias``, as ONNX's function body does. ONNX's body
  takes the variance as ``E[x^2] - E[x]^2``; the two-pass form above is within
  rounding of it, and does not cancel when the mean is large.

``LRN`` (local response normalization across channels) divides each element by a
power of the sum of squares over a window of ``size`` channels around it, from
``c - floor((size - 1) / 2)`` to ``c + ceil((size - 1) / 2)`` (clipped to the
channels)::

    y = x / (bias + alpha / size * square_sum) ** beta

The window sum divided by ``size`` is one ``tg.avg_pool2d`` of ``x * x`` viewed as
``[N, 1, C, prod(spatial)]``, with a ``[size, 1]`` window and zero padding counted
in the divisor (``count_include_pad``).

``LpNormalization`` divides ``x`` by its norm along ``axis`` (default -1): ``p=1``
``sum(|x|)``, ``p=2`` (the default) ``sqrt(sum(x * x))``; where the norm is 0 the
result is 0, as ONNX's reference gives.

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


def _standardized(
    g: Graph, x: Value, axes: list[int], epsilon: float
) -> tuple[Value, Value, Value]:
    """``(x - mean) / sqrt(var + epsilon)`` over ``axes``, and the mean and the
    inverse standard deviation (kept dimensions)."""
    mean = g.reduce_mean(x, axes, keepdims=True)
    centered = x - mean
    variance = g.reduce_mean(centered * centered, axes, keepdims=True)
    inv_std = 1.0 / g.sqrt(variance + epsilon)
    return centered * inv_std, mean, inv_std


def _expect_shape(node: Node, what: str, value: Value, shape: tuple[int, ...]) -> None:
    if value.shape != shape:
        raise node.error(
            f"the {what} input must have shape {list(shape)}, got {list(value.shape)}"
        )


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
    normalized, mean, inv_std = _standardized(g, x, axes, epsilon)
    y = normalized * scale
    if bias is not None:
        y = y + bias
    return [y, mean, inv_std]


def _per_channel(g: Graph, value: Value, rank: int) -> Value:
    """A ``[C]`` tensor as ``[C, 1, ..., 1]``, to broadcast along dimension 1 of a
    rank-``rank`` ``[N, C, ...]`` tensor."""
    return g.reshape(value, [value.shape[0], *[1] * (rank - 2)])


@converter("InstanceNormalization")
def _instance_normalization(im: Importer, node: Node) -> list[Value | Array]:
    """Standardize each ``(n, c)`` plane of ``[N, C, ...]`` over its spatial axes,
    then ``* scale[c] + B[c]``."""
    g = im.graph
    x, scale, bias = (im.input(node, k) for k in range(3))
    if x.rank < 3:
        raise node.error(
            f"expects an [N, C, D1, ...] input of rank >= 3, got shape {list(x.shape)}"
        )
    channels = (x.shape[1],)
    _expect_shape(node, "scale", scale, channels)
    _expect_shape(node, "B", bias, channels)
    epsilon = float(node.attr("epsilon", 1e-5))
    normalized, _, _ = _standardized(g, x, list(range(2, x.rank)), epsilon)
    return [normalized * _per_channel(g, scale, x.rank) + _per_channel(g, bias, x.rank)]


@converter("GroupNormalization")
def _group_normalization(im: Importer, node: Node) -> list[Value | Array]:
    """Standardize each group of ``C / num_groups`` channels of each instance, then
    scale and shift per group (opset 18) or per channel (21)."""
    g = im.graph
    x, scale, bias = (im.input(node, k) for k in range(3))
    if x.rank < 2:
        raise node.error(
            f"expects an [N, C, ...] input of rank >= 2, got shape {list(x.shape)}"
        )
    if "num_groups" not in node.attrs:
        raise node.error("the attribute num_groups is required")
    groups = int(node.attr("num_groups"))
    n, channels = x.shape[:2]
    if groups < 1 or channels % groups:
        raise node.error(
            f"num_groups={groups} must divide the {channels} channels of the input "
            f"(shape {list(x.shape)})"
        )
    per_group = node.opset < 21
    params = (groups,) if per_group else (channels,)
    _expect_shape(node, "scale", scale, params)
    _expect_shape(node, "bias", bias, params)
    epsilon = float(node.attr("epsilon", 1e-5))
    dtype = x.dtype
    if not per_group:
        stash = int(node.attr("stash_type", TensorProto.FLOAT))
        if stash != TensorProto.FLOAT:
            raise node.error(
                f"stash_type={stash} is not supported (only 1: the standardization "
                "in float32)"
            )
        if dtype != "float32":
            x = g.cast(x, "float32")
    rest = math.prod(x.shape) // (n * groups)
    grouped = g.reshape(x, [n, groups, rest])
    normalized, _, _ = _standardized(g, grouped, [2], epsilon)
    if per_group:
        normalized = normalized * g.reshape(scale, [groups, 1])
        normalized = normalized + g.reshape(bias, [groups, 1])
        return [g.reshape(normalized, x.shape)]
    y = g.reshape(normalized, x.shape)
    if y.dtype != dtype:
        y = g.cast(y, dtype)
    return [y * _per_channel(g, scale, y.rank) + _per_channel(g, bias, y.rank)]


@converter("LRN")
def _lrn(im: Importer, node: Node) -> list[Value | Array]:
    """``x / (bias + alpha * mean of x^2 over the channel window) ** beta``: the
    window mean is an average pool with zero padding counted (the module
    docstring)."""
    g, x = im.graph, im.input(node, 0)
    if x.rank < 3:
        raise node.error(
            f"expects an [N, C, D1, ...] input of rank >= 3, got shape {list(x.shape)}"
        )
    if "size" not in node.attrs:
        raise node.error("the attribute size is required")
    size = int(node.attr("size"))
    if size < 1:
        raise node.error(f"size={size} must be >= 1 (the channels to sum over)")
    alpha = float(node.attr("alpha", 1e-4))
    beta = float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    n, channels = x.shape[:2]
    planes = g.reshape(x * x, [n, 1, channels, math.prod(x.shape[2:])])
    before = (size - 1) // 2
    after = size - 1 - before
    mean = g.avg_pool2d(
        planes, (size, 1), (1, 1), (before, 0, after, 0), count_include_pad=True
    )
    base = g.reshape(mean, x.shape) * alpha + bias
    return [x / g.pow(base, beta)]


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


@converter("LpNormalization")
def _lp_normalization(im: Importer, node: Node) -> list[Value | Array]:
    """``x / norm`` along ``axis``, 0 where the norm is 0 (see the module
    docstring)."""
    g, x = im.graph, im.input(node, 0)
    if x.dtype not in ("float16", "float32", "float64"):
        raise node.error(f"expects a float tensor, got {x.dtype}")
    if x.rank == 0:
        raise node.error("expects an input of rank >= 1, got a scalar")
    axis = _axis(node, int(node.attr("axis", -1)), x.rank)
    p = int(node.attr("p", 2))
    if p == 1:
        norm = g.reduce_sum(g.abs(x), axis, keepdims=True)
    elif p == 2:
        norm = g.sqrt(g.reduce_sum(x * x, axis, keepdims=True))
    else:
        raise node.error(f"p must be 1 or 2, got {p}")
    return [g.where(g.equal(norm, 0.0), 0.0, x / norm)]
