"""ONNX ``NonZero``: the positions of the non-zero entries, a size that is data.

- On a constant input it folds (NumPy's ``nonzero``, ONNX's reference).
- On a runtime tensor its output, int64 ``[rank, count]``, has a size no static
  shape holds: the converter raises ``DataDependentShapeError`` and the model is
  compiled in stages around the node (``staged.py``). There the node is a
  ``qidao.staging`` ``NonZero`` with two outputs, the bounded positions
  ``[rank, numel]`` and the count (``Graph.nonzero``: ``tg.nonzero_indices``),
  which the host cuts to ``[rank, count]`` for the next stage.
"""

from __future__ import annotations

import numpy as np

from qidao.frontend.builder import Value
from qidao.frontend.errors import DataDependentShapeError
from qidao.frontend.onnx.importer import (
    STAGING_CONVERTERS,
    Array,
    Importer,
    converter,
    folder,
)
from qidao.frontend.onnx.node import Node


def _check_rank(node: Node, rank: int) -> None:
    if rank == 0:
        raise node.error(
            "NonZero of a scalar is not supported (its positions have no axis to "
            "list); reshape it to [1] first"
        )


@folder("NonZero")
def _fold_nonzero(node: Node, args: list[Array | None]) -> list[Array]:
    x = args[0]
    if x is None:
        raise node.error("input #0 is missing")
    _check_rank(node, x.ndim)
    return [np.array(np.nonzero(x), dtype=np.int64)]


@converter("NonZero")
def _nonzero(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    _check_rank(node, x.rank)
    raise DataDependentShapeError(
        f"{node.label}: NonZero of the runtime tensor '{node.inputs[0]}' "
        f"({x.dtype} {list(x.shape)}) has an output whose size is data (how many "
        "entries are not zero), which one static-shape program cannot hold: qidao "
        "compiles such a model in stages, cut at this node "
        "(qidao.frontend.onnx.staged), which works where the node is in the "
        "model's main graph, not inside an If/Loop/Scan body or a function",
        str(node.proto.output[0]),
        "NonZero",
    )


def _bounded_nonzero(im: Importer, node: Node) -> list[Value | Array]:
    """The staging's ``NonZero``: the positions in ``[rank, numel]`` (the first
    ``count`` columns) and the count."""
    x = im.input(node, 0)
    _check_rank(node, x.rank)
    positions, count = im.graph.nonzero(x)
    return [positions, count]


STAGING_CONVERTERS["NonZero"] = _bounded_nonzero


# ---- Compress: a Gather by the positions of a condition's true entries --------------


def _compress_condition(node: Node, shape: tuple[int, ...]) -> int:
    """The entries of the condition that select (its length, at most the axis')."""
    if len(shape) != 1:
        raise node.error(f"the condition must be 1-D, got shape {list(shape)}")
    return shape[0]


@folder("Compress")
def _fold_compress(node: Node, args: list[Array | None]) -> list[Array]:
    x, condition = [*args, None, None][:2]
    if x is None or condition is None:
        raise node.error("the input (#0) and condition (#1) are required")
    axis = node.optional_axis(x.ndim)
    _compress_condition(node, condition.shape)
    return [np.compress(condition.astype(bool), x, axis=axis)]


@converter("Compress")
def _compress(im: Importer, node: Node) -> list[Value | Array]:
    """A constant condition gathers its positions (``tg.gather``); a runtime one
    has an output size that is data: the model is cut here (``staged.py`` makes
    the node a bounded ``NonZero`` of the condition and a ``Gather`` after)."""
    x = im.input(node, 0)
    axis = node.optional_axis(x.rank)
    names = node.inputs
    condition = im.env.get(names[1]) if len(names) > 1 and names[1] else None
    if condition is None:
        raise node.error("the condition input (#1) is missing")
    length = _compress_condition(node, tuple(condition.shape))
    size = x.shape[axis] if axis is not None else int(np.prod(x.shape))
    if length > size:
        raise node.error(
            f"the condition has {length} entries, more than the {size} it selects from"
        )
    if isinstance(condition, np.ndarray):
        picked = np.nonzero(condition.astype(bool))[0].astype(np.int64)
        source = x if axis is not None else im.graph.reshape(x, [size])
        return [im.graph.gather(source, picked, axis or 0)]
    raise DataDependentShapeError(
        f"{node.label}: Compress by the runtime condition '{names[1]}' has an "
        "output whose size is data (how many entries are true): qidao compiles "
        "such a model in stages, cut at this node (qidao.frontend.onnx.staged)",
        str(node.proto.output[0]),
        "Compress",
    )
