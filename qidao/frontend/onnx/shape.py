"""Converters for ``Transpose``, ``Reshape``, ``Flatten``, and the indexing ops
``Concat``, ``Slice``, ``Gather``, ``GatherElements`` and ``Split`` on runtime tensors.

The indexing ops also have folders (``fold.py``, and ``Split``'s and
``GatherElements``' below) that run when every input is a constant; their converters here take a runtime ``data`` tensor and
need the rest (``starts``/``ends``/``axes``/``steps``, ``split``) to be constants.
``Slice`` and ``Split`` become ``tg.slice`` views, a negative ``Slice`` step a
``tg.gather`` of the reversed entries. ``Gather`` with constant indices is a
``tg.gather`` of the flattened indices and a reshape; with indices computed at run
time (token ids) it is a ``tg.take``, and ``GatherElements`` a
``tg.gather_elements`` (see ``qidao/dialects/tg/dynamic_indexing.py``: a runtime
index out of range is clamped into the axis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from qidao.frontend.builder import Value
from qidao.frontend.onnx.importer import Array, Importer, converter, folder
from qidao.frontend.onnx.node import Node


@converter("Transpose")
def _transpose(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    perm = node.attr("perm")
    return [im.graph.transpose(x, None if perm is None else list(perm))]


def reshape_target(
    node: Node, shape: Sequence[int], target: Sequence[int]
) -> list[int]:
    """The ONNX ``Reshape`` of ``shape`` to ``target``, resolved: a 0 copies the input
    dimension (unless ``allowzero``) and one -1 is inferred."""
    target = [int(d) for d in target]
    allowzero = node.attr("allowzero", 0)
    result = []
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= len(shape):
                raise node.error(
                    f"shape {target} copies dimension {k} (0), but the input has rank "
                    f"{len(shape)}"
                )
            d = shape[k]
        elif d < -1:
            raise node.error(f"shape {target} has a negative dimension {d}")
        result.append(d)
    if result.count(-1) > 1:
        raise node.error(f"shape {target} has more than one -1")
    total = math.prod(shape)
    if -1 in result:
        known = math.prod(d for d in result if d != -1)
        if known == 0 or total % known:
            raise node.error(
                f"cannot infer the -1 in shape {target} for an input of shape "
                f"{list(shape)}"
            )
        result[result.index(-1)] = total // known
    if math.prod(result) != total:
        raise node.error(
            f"cannot reshape an input of shape {list(shape)} ({total} elements) to "
            f"{result}"
        )
    return result


@converter("Reshape")
def _reshape(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    target = [int(d) for d in im.const(node, node.inputs[1], "shape").reshape(-1)]
    return [im.graph.reshape(x, reshape_target(node, x.shape, target))]


@converter("Flatten")
def _flatten(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    axis = int(node.attr("axis", 1))
    if not -x.rank <= axis <= x.rank:
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    if axis < 0:
        axis += x.rank
    shape = (math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    return [im.graph.reshape(x, shape)]


# ---- indexing on runtime tensors ---------------------------------------------------


def _axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _ints(array: Array) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


@converter("Concat")
def _concat(im: Importer, node: Node) -> list[Value | Array]:
    values = [im.value(name) for name in node.inputs if name]
    if not values:
        raise node.error("needs at least one input")
    if "axis" not in node.attrs:
        raise node.error("the axis attribute is required")
    axis = _axis(node, int(node.attr("axis")), max(values[0].rank, 1))
    return [values[0] if len(values) == 1 else im.graph.concat(values, axis)]


def onnx_slice(start: int, end: int, step: int, dim: int) -> slice:
    """ONNX ``Slice`` bounds on one axis as a Python slice: negative values count
    from the end, then start and end are clamped to [0, dim] (step > 0) or
    [0, dim-1] / [-1, dim-1] (step < 0), where an end of -1 means "past the first
    element"."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


@converter("Slice")
def _slice(im: Importer, node: Node) -> list[Value | Array]:
    """``starts``/``ends``/``axes`` are attributes before opset 10, then constant
    inputs #1-#3, with ``steps`` (#4)."""
    x = im.input(node, 0)
    names = [*node.inputs, "", "", "", ""]
    if node.opset < 10:
        starts = [int(v) for v in node.attr("starts", [])]
        ends = [int(v) for v in node.attr("ends", [])]
        axes_attr = node.attr("axes")
        axes = None if axes_attr is None else [int(a) for a in axes_attr]
        steps = [1] * len(starts)
    else:
        starts = _ints(im.const(node, names[1], "starts"))
        ends = _ints(im.const(node, names[2], "ends"))
        axes = _ints(im.const(node, names[3], "axes")) if names[3] else None
        given = _ints(im.const(node, names[4], "steps")) if names[4] else None
        steps = [1] * len(starts) if given is None else given
    if axes is None:
        axes = list(range(len(starts)))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error(
            f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must have "
            "the same length"
        )
    if 0 in steps:
        raise node.error(f"steps {steps} contain a 0")
    normalized = [_axis(node, a, x.rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {axes} repeat an axis")
    index = [slice(None)] * x.rank
    for axis, start, end, step in zip(normalized, starts, ends, steps, strict=True):
        index[axis] = onnx_slice(start, end, step, x.shape[axis])
    return [
        im.graph.slice(
            x,
            [s.start for s in index],
            [s.stop for s in index],
            [s.step for s in index],
        )
    ]


def _indices_input(im: Importer, node: Node) -> Value | Array:
    """Input #1 of a gather: a constant array or a runtime graph value."""
    if len(node.inputs) < 2 or not node.inputs[1]:
        raise node.error("the indices input (#1) is missing")
    name = node.inputs[1]
    if name not in im.env:
        raise node.error(f"tensor '{name}' is used before it is defined")
    return im.env[name]


def _check_constant_indices(node: Node, indices: Array, axis: int, n: int) -> None:
    if indices.dtype.kind not in "iu":
        raise node.error(f"indices must be integers, got {indices.dtype}")
    if np.any((indices < -n) | (indices >= n)):
        raise node.error(
            f"indices {_ints(indices)} are out of range for axis {axis} of size {n}"
        )


@converter("Gather")
def _gather(im: Importer, node: Node) -> list[Value | Array]:
    """``np.take(data, indices, axis)``: constant ``indices`` of any shape make a
    ``tg.gather`` (an all-affine kernel; an index out of range is an import error),
    runtime ones a ``tg.take``, which clamps an out-of-range index into the axis."""
    x = im.input(node, 0)
    indices = _indices_input(im, node)
    if x.rank == 0:
        raise node.error("cannot gather from a rank-0 tensor")
    axis = _axis(node, int(node.attr("axis", 0)), x.rank)
    if isinstance(indices, Value):
        return [im.graph.take(x, indices, axis)]
    _check_constant_indices(node, indices, axis, x.shape[axis])
    return [im.graph.gather(x, indices.astype(np.int64), axis)]


def _gather_elements_args(node: Node, rank: int, index_rank: int) -> int:
    if rank == 0:
        raise node.error("cannot gather from a rank-0 tensor")
    if index_rank != rank:
        raise node.error(
            f"the indices have rank {index_rank}, but the data has rank {rank}"
        )
    return _axis(node, int(node.attr("axis", 0)), rank)


@folder("GatherElements")
def _gather_elements_fold(node: Node, args: list[Array | None]) -> list[Array]:
    data, indices = [*args, None, None][:2]
    if data is None or indices is None:
        raise node.error("the data (#0) and indices (#1) inputs are required")
    axis = _gather_elements_args(node, data.ndim, indices.ndim)
    _check_constant_indices(node, indices, axis, data.shape[axis])
    cut = tuple(
        slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape)
    )
    return [np.take_along_axis(data[cut], indices.astype(np.int64), axis=axis)]


@converter("GatherElements")
def _gather_elements(im: Importer, node: Node) -> list[Value | Array]:
    """``tg.gather_elements``: one index per output element along ``axis``; constant
    indices out of range are an import error, runtime ones are clamped."""
    x = im.input(node, 0)
    indices = _indices_input(im, node)
    axis = _gather_elements_args(node, x.rank, len(indices.shape))
    if not isinstance(indices, Value):
        _check_constant_indices(node, indices, axis, x.shape[axis])
    return [im.graph.gather_elements(x, indices, axis)]


def split_sizes(node: Node, dim: int, split: Array | None) -> list[int]:
    """The sizes of ``Split``'s outputs along its axis: the ``split`` input (opset
    13) or attribute, else ``num_outputs`` (opset 18: the last part may be smaller),
    else equal parts, one per output."""
    outputs = len(node.proto.output)
    if split is None and node.opset < 13 and node.attr("split") is not None:
        split = np.asarray(node.attr("split"))
    if split is not None:
        sizes = _ints(split)
        if len(sizes) != outputs or sum(sizes) != dim or min(sizes, default=0) < 0:
            raise node.error(
                f"split {sizes} must have one non-negative size per output "
                f"({outputs}) adding up to the axis size {dim}"
            )
        return sizes
    parts = int(node.attr("num_outputs", outputs))
    if parts != outputs or parts < 1:
        raise node.error(f"num_outputs {parts} differs from the {outputs} outputs")
    if "num_outputs" in node.attrs:
        chunk = -(-dim // parts)
        return [max(0, min(chunk, dim - k * chunk)) for k in range(parts)]
    if dim % parts:
        raise node.error(
            f"cannot split an axis of size {dim} into {parts} equal parts; give the "
            "split sizes"
        )
    return [dim // parts] * parts


def _split_args(node: Node, rank: int) -> int:
    if rank == 0:
        raise node.error("cannot split a rank-0 tensor")
    return _axis(node, int(node.attr("axis", 0)), rank)


@folder("Split")
def _split_fold(node: Node, args: list[Array | None]) -> list[Array]:
    x = args[0]
    if x is None:
        raise node.error("the input (#0) is missing")
    axis = _split_args(node, x.ndim)
    split = args[1] if len(args) > 1 else None
    sizes = split_sizes(node, x.shape[axis], split)
    cuts = np.cumsum(sizes)[:-1]
    return list(np.split(x, cuts, axis=axis))


@converter("Split")
def _split(im: Importer, node: Node) -> list[Value | Array]:
    """One ``tg.slice`` (a view) per output."""
    x = im.input(node, 0)
    axis = _split_args(node, x.rank)
    names = node.inputs
    split = None
    if len(names) > 1 and names[1]:
        split = im.const(node, names[1], "split")
    results: list[Value | Array] = []
    offset = 0
    for size in split_sizes(node, x.shape[axis], split):
        start = [0] * x.rank
        stop = list(x.shape)
        start[axis], stop[axis] = offset, offset + size
        results.append(im.graph.slice(x, start, stop))
        offset += size
    return results
