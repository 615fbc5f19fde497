"""Converters for ``ScatterElements`` (and the deprecated ``Scatter``, which a model
older than opset 11 reaches as ``ScatterElements``: ``load.py`` upgrades it),
``ScatterND``, ``GatherND`` and ``TensorScatter``.

They become ``tg.scatter_elements``, ``tg.scatter_nd`` and ``tg.gather_nd``
(``qidao/dialects/tg/scatter.py``), whose indices are a runtime tensor or a
constant. A constant index out of range is an import error naming the node; a
runtime one is skipped by a scatter (the entry keeps the data's value) and clamped
by ``GatherND``, and ``qidao.compile(..., checks=True)`` raises for it instead.
With ``reduction="none"`` and repeated indices the last update in row-major order
wins (ONNX leaves it undefined).

``TensorScatter`` (opset 24, a KV-cache write) is a ``tg.scatter_elements`` on its
sequence axis whose indices are ``write_indices[batch] + s`` for each position
``s`` of the update, modulo the cache length with ``mode="circular"``.
"""

from __future__ import annotations

import numpy as np

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _text(node: Node, name: str, default: str) -> str:
    value = node.attr(name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


def _reduction(node: Node, dtype: str) -> str:
    reduction = _text(node, "reduction", "none")
    if reduction not in _REDUCTIONS:
        raise node.error(
            f"reduction must be one of {', '.join(_REDUCTIONS)}, got '{reduction}'"
        )
    if reduction != "none" and dtype in ("bool", "float16"):
        raise node.error(
            f"reduction '{reduction}' of {dtype} data is not supported (float32, "
            "float64 and integers are)"
        )
    return reduction


def _indices(im: Importer, node: Node) -> Value | Array:
    """Input #1: a constant array (checked to be integers) or a runtime value."""
    if len(node.inputs) < 2 or not node.inputs[1]:
        raise node.error("the indices input (#1) is missing")
    name = node.inputs[1]
    if name not in im.env:
        raise node.error(f"tensor '{name}' is used before it is defined")
    indices = im.env[name]
    if isinstance(indices, Value):
        return indices
    if indices.dtype.kind not in "iu":
        raise node.error(f"indices must be integers, got {indices.dtype}")
    return indices.astype(np.int64)


def _check_range(node: Node, indices: Array, size: int, where: str) -> None:
    """Constant indices must lie in ``[-size, size)``."""
    bad = indices[(indices < -size) | (indices >= size)]
    if bad.size:
        raise node.error(
            f"index {int(bad.reshape(-1)[0])} is out of range for {where} of size "
            f"{size} (valid indices are {-size} to {size - 1})"
        )


def _axis(node: Node, rank: int, default: int = 0) -> int:
    axis = int(node.attr("axis", default))
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


@converter("ScatterElements")
def _scatter_elements(im: Importer, node: Node) -> list[Value | Array]:
    """``tg.scatter_elements``: one update per index, written on ``axis``."""
    x = im.input(node, 0)
    indices = _indices(im, node)
    updates = im.input(node, 2)
    if x.rank == 0:
        raise node.error("cannot scatter into a rank-0 tensor")
    if len(indices.shape) != x.rank:
        raise node.error(
            f"the indices have rank {len(indices.shape)}, but the data has rank "
            f"{x.rank}"
        )
    axis = _axis(node, x.rank)
    reduction = _reduction(node, x.dtype)
    if not isinstance(indices, Value):
        _check_range(node, indices, x.shape[axis], f"axis {axis}")
    return [im.graph.scatter_elements(x, indices, updates, axis, reduction)]


def _check_tuples(
    node: Node, indices: Array, shape: tuple[int, ...], first: int
) -> None:
    """Constant k-tuples: component ``j`` indexes axis ``first + j``."""
    k = indices.shape[-1] if indices.ndim else 0
    if not 1 <= k <= len(shape) - first:
        return  # the op's verifier names the shape problem
    for j in range(k):
        _check_range(node, indices[..., j], shape[first + j], f"axis {first + j}")


@converter("ScatterND")
def _scatter_nd(im: Importer, node: Node) -> list[Value | Array]:
    """``tg.scatter_nd``: one slice ``data[i0, .., ik-1]`` per k-tuple."""
    x = im.input(node, 0)
    indices = _indices(im, node)
    updates = im.input(node, 2)
    if x.rank == 0:
        raise node.error("cannot scatter into a rank-0 tensor")
    reduction = _reduction(node, x.dtype)
    if not isinstance(indices, Value):
        _check_tuples(node, indices, x.shape, 0)
    return [im.graph.scatter_nd(x, indices, updates, reduction)]


@converter("GatherND")
def _gather_nd(im: Importer, node: Node) -> list[Value | Array]:
    """``tg.gather_nd`` with ``batch_dims`` (opset 12)."""
    x = im.input(node, 0)
    indices = _indices(im, node)
    batch_dims = int(node.attr("batch_dims", 0))
    if not isinstance(indices, Value):
        _check_tuples(node, indices, x.shape, batch_dims)
    return [im.graph.gather_nd(x, indices, batch_dims)]


@converter("TensorScatter")
def _tensor_scatter(im: Importer, node: Node) -> list[Value | Array]:
    """The cache with ``update`` written on the sequence ``axis`` from
    ``write_indices[batch]`` on (0 without them); ``mode="circular"`` wraps
    modulo the cache length. A ``tg.scatter_elements`` of the positions."""
    g = im.graph
    cache = im.input(node, 0)
    update = im.input(node, 1)
    if cache.rank < 2:
        raise node.error(f"the cache must have rank >= 2, got {cache.rank}")
    axis = _axis(node, cache.rank, -2)
    if axis == 0:
        raise node.error("axis must not be 0 (the batch axis)")
    mode = _text(node, "mode", "linear")
    if mode not in ("linear", "circular"):
        raise node.error(f"mode must be 'linear' or 'circular', got '{mode}'")
    length = cache.shape[axis]
    count = update.shape[axis]
    steps = [1] * update.rank
    steps[axis] = count
    offsets = np.arange(count, dtype=np.int64).reshape(steps)
    start: Value | Array = np.zeros((1,) * update.rank, np.int64)
    if len(node.inputs) > 2 and node.inputs[2]:
        start = im.env[node.inputs[2]]
        batch = [1] * update.rank
        batch[0] = update.shape[0]
        if isinstance(start, Value):
            start = g.reshape(start, batch)
        else:
            start = start.astype(np.int64).reshape(batch)
    if isinstance(start, Value):
        positions = g.broadcast(start, update.shape) + g.constant(offsets, "int64")
        if mode == "circular":
            positions = _modulo(g, positions, length)
        return [g.scatter_elements(cache, positions, update, axis)]
    constant = np.broadcast_to(start + offsets, update.shape)
    if mode == "circular":
        constant = constant % length
    return [g.scatter_elements(cache, constant, update, axis)]


def _modulo(g: Graph, a: Value, n: int) -> Value:
    """``a mod n`` for int64 ``a`` and ``n > 0``, the sign of ``n`` (Python's)."""
    r = a - g.div(a, n) * n
    return g.where(g.less(r, 0), r + n, r)
