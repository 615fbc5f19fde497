"""Converters for the ops that work along an axis: ``Tile``, ``CumSum``,
``CumProd``, ``TopK`` and ``ReverseSequence``.

- ``Tile`` is ``np.tile``: views and one copy kernel (``Graph.tile``), any dtype;
  a constant input folds.
- ``CumSum`` / ``CumProd`` are ``tg.cumsum`` / ``tg.cumprod`` (a running total
  along the axis, ``qidao/dialects/tg/cumulative.py``) with ONNX's ``exclusive`` and
  ``reverse`` attributes, on float and integer tensors (f16 through float32).
- ``TopK`` is a ``tg.top_k_indices`` (``qidao/dialects/tg/sort.py``) and a
  ``tg.gather_elements`` of the input by it: values and int64 indices, always in
  order (``sorted = 0`` leaves the order free, so a sorted result is one), ties
  by the lower index, NaN above every number (as ONNX Runtime).
- ``ReverseSequence`` is a ``tg.gather_elements`` along the time axis whose
  indices reverse the first ``sequence_lens[b]`` steps of each batch entry ``b``;
  runtime lengths build those indices with elementwise ops (a length outside
  ``[0, T]`` counts as clamped into it).

``Tile``'s ``repeats``, the ``axis`` of ``CumSum``/``CumProd`` and ``TopK``'s ``K``
decide shapes or loops, so they must be known at import: a constant, something that
folds from one (a ``Shape``-derived integer subgraph), or a graph input that
``qidao.compile`` binds at the first call (``specialize.py``).
"""

from __future__ import annotations

import numpy as np

from qidao.frontend.builder import Value
from qidao.frontend.onnx.importer import Array, Importer, converter, folder
from qidao.frontend.onnx.node import Node


def _axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _one_int(node: Node, value: Array, what: str) -> int:
    """A scalar or one-element integer input as an int."""
    array = np.asarray(value)
    if array.dtype.kind not in "iu" or array.size != 1:
        raise node.error(
            f"{what} must be one integer, got {array.dtype} of shape "
            f"{list(array.shape)}"
        )
    return int(array.reshape(-1)[0])


# ---- Tile -------------------------------------------------------------------------


def _repeats(node: Node, repeats: Array, rank: int) -> list[int]:
    array = np.asarray(repeats)
    reps = [int(r) for r in array.reshape(-1)]
    if array.dtype.kind not in "iu" or array.ndim != 1 or len(reps) != rank:
        raise node.error(
            f"repeats must be {rank} integers (one per input dimension), got "
            f"{array.dtype} of shape {list(array.shape)}"
        )
    if any(r < 0 for r in reps):
        raise node.error(f"repeats {reps} must not be negative")
    return reps


@folder("Tile")
def _tile_fold(node: Node, args: list[Array | None]) -> list[Array]:
    x, repeats = [*args, None, None][:2]
    if x is None or repeats is None:
        raise node.error("the input (#0) and repeats (#1) inputs are required")
    return [np.tile(x, _repeats(node, repeats, x.ndim))]


@converter("Tile")
def _tile(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    repeats = im.const(node, node.inputs[1] if len(node.inputs) > 1 else "", "repeats")
    return [im.graph.tile(x, _repeats(node, repeats, x.rank))]


# ---- CumSum, CumProd --------------------------------------------------------------


def _running_total(im: Importer, node: Node, product: bool) -> list[Value | Array]:
    x = im.input(node, 0)
    if x.rank == 0:
        raise node.error("the input must have rank >= 1, got a rank-0 tensor")
    if x.dtype == "bool":
        raise node.error("the input must be a float or integer tensor, got bool")
    name = node.inputs[1] if len(node.inputs) > 1 else ""
    axis = _axis(node, _one_int(node, im.const(node, name, "axis"), "axis"), x.rank)
    exclusive = bool(node.attr("exclusive", 0))
    reverse = bool(node.attr("reverse", 0))
    scan = im.graph.cumprod if product else im.graph.cumsum
    return [scan(x, axis, exclusive, reverse)]


@converter("CumSum")
def _cumsum(im: Importer, node: Node) -> list[Value | Array]:
    return _running_total(im, node, product=False)


@converter("CumProd")
def _cumprod(im: Importer, node: Node) -> list[Value | Array]:
    return _running_total(im, node, product=True)


# ---- TopK -------------------------------------------------------------------------


@converter("TopK")
def _top_k(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    if x.rank == 0:
        raise node.error("the input must have rank >= 1, got a rank-0 tensor")
    if x.dtype == "bool":
        raise node.error("the input must be a float or integer tensor, got bool")
    axis = _axis(node, int(node.attr("axis", -1)), x.rank)
    if node.opset < 10:  # K was an attribute
        k = int(node.attr("k", 0))
    else:
        name = node.inputs[1] if len(node.inputs) > 1 else ""
        k = _one_int(node, im.const(node, name, "K"), "K")
    n = x.shape[axis]
    if not 0 <= k <= n:
        raise node.error(
            f"K = {k} must be in [0, {n}] (the size of axis {axis} of the input "
            f"{list(x.shape)})"
        )
    largest = bool(node.attr("largest", 1))
    values, indices = im.graph.top_k(x, k, axis, largest)
    return [values, indices]


# ---- ReverseSequence --------------------------------------------------------------


@converter("ReverseSequence")
def _reverse_sequence(im: Importer, node: Node) -> list[Value | Array]:
    """``out[t, b] = x[lens[b] - 1 - t, b]`` for ``t < lens[b]``, else ``x[t, b]``
    (``time_axis`` and ``batch_axis`` are 0 and 1 in either order): a
    ``tg.gather_elements`` along the time axis."""
    x = im.input(node, 0)
    if x.rank < 2:
        raise node.error(f"the input must have rank >= 2, got {list(x.shape)}")
    time_axis = int(node.attr("time_axis", 0))
    batch_axis = int(node.attr("batch_axis", 1))
    if {time_axis, batch_axis} != {0, 1}:
        raise node.error(
            f"time_axis {time_axis} and batch_axis {batch_axis} must be 0 and 1"
        )
    steps, batch = x.shape[time_axis], x.shape[batch_axis]
    name = node.inputs[1] if len(node.inputs) > 1 else ""
    if name not in im.env:
        raise node.error("the sequence_lens input (#1) is missing")
    lens = im.env[name]
    if tuple(lens.shape) != (batch,) or str(lens.dtype) not in ("int32", "int64"):
        raise node.error(
            f"sequence_lens must be {batch} integers (one per batch entry), got "
            f"{lens.dtype} of shape {list(lens.shape)}"
        )
    # t along time_axis, b along batch_axis: a [T, 1] / [1, B] pair (or [1, T] /
    # [B, 1] with the batch first) that broadcasts to the [T, B] (or [B, T]) indices
    t_shape = [steps, 1] if time_axis == 0 else [1, steps]
    b_shape = [1, batch] if time_axis == 0 else [batch, 1]
    t = np.arange(steps, dtype=np.int64).reshape(t_shape)
    g = im.graph
    indices: Value | Array
    if isinstance(lens, Value):
        wide = g.cast(lens, "int64") if lens.dtype != "int64" else lens
        length = g.minimum(g.maximum(g.reshape(wide, b_shape), 0.0), float(steps))
        indices = g.where(g.less(t, length), g.sub(g.sub(length, 1.0), t), t)
    else:
        length_ = np.clip(np.asarray(lens, np.int64), 0, steps).reshape(b_shape)
        indices = np.where(t < length_, length_ - 1 - t, t)
    full = (*indices.shape, *[1] * (x.rank - 2))
    if isinstance(indices, Value):
        spread = g.broadcast(g.reshape(indices, full), x.shape)
    else:
        spread = g.constant(np.broadcast_to(indices.reshape(full), x.shape).copy())
    return [g.gather_elements(x, spread, time_axis)]
