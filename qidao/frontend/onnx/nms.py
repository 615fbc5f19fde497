"""ONNX ``NonMaxSuppression``: the boxes kept per batch and class, a size that is data.

On constant boxes and scores it folds (ONNX's reference, ``fold_reference``). On
runtime ones the output ``[count, 3]`` (batch, class, box index) has a size that
is data: the converter raises ``DataDependentShapeError`` and the model is cut at
the node (``staged.py``), which takes it apart around one ``NonZero``:

- the stage before runs a ``qidao.staging`` ``NmsKeep`` node: the boxes of each
  class by descending score and which of them are kept (``Graph.nms_keep``,
  ``tg.nms_keep``: greedy suppression in f32, ONNX's reference order);
- the cut is the ``NonZero`` of that mask, whose row-major order, (batch,
  class, score rank), is the order ONNX lists the selected boxes in;
- the rest turns each (batch, class, rank) into (batch, class, box index) with
  a ``GatherND`` of the order.

``max_output_boxes_per_class`` (0 when omitted: nothing is selected),
``iou_threshold`` (0 when omitted) and ``score_threshold`` (none when omitted)
must be known at import: constants, or graph inputs bound at the first call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from qidao.frontend.builder import Value
from qidao.frontend.errors import DataDependentShapeError
from qidao.frontend.onnx.importer import STAGING_CONVERTERS, Array, Importer, converter
from qidao.frontend.onnx.node import Node


@dataclass(frozen=True)
class Settings:
    """The node's thresholds and box format, known at import."""

    max_per_class: int
    iou: float
    score: float | None
    center: bool


def settings(im: Importer, node: Node) -> Settings:
    """The thresholds of ``node`` (a ``ConstantRequiredError`` when one is a
    runtime tensor: the specialization binds the graph input it comes from)."""
    names = node.inputs

    def scalar(k: int, what: str) -> Array | None:
        if k >= len(names) or not names[k]:
            return None
        value = np.asarray(im.const(node, names[k], what, shape=True)).reshape(-1)
        if value.size > 1:
            raise node.error(f"the {what} must hold one value, got {value.size}")
        return value if value.size else None

    limit = scalar(2, "max_output_boxes_per_class")
    iou = scalar(3, "iou_threshold")
    score = scalar(4, "score_threshold")
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        raise node.error(f"center_point_box must be 0 or 1, got {center}")
    boxes = im.input(node, 0)
    most = int(boxes.shape[1]) if boxes.rank == 3 else 0
    return Settings(
        min(max(int(limit[0]), 0), most) if limit is not None else 0,
        float(iou[0]) if iou is not None else 0.0,
        float(score[0]) if score is not None else None,
        bool(center),
    )


def _check(node: Node, boxes: Value, scores: Value) -> None:
    b, s = list(boxes.shape), list(scores.shape)
    if len(b) != 3 or b[2] != 4:
        raise node.error(f"the boxes must have shape [B, N, 4], got {b}")
    if len(s) != 3 or s[0] != b[0] or s[2] != b[1]:
        raise node.error(
            f"the scores must have shape [{b[0]}, C, {b[1]}] (the boxes' batches "
            f"and boxes), got {s}"
        )
    for name, v in (("boxes", boxes), ("scores", scores)):
        if v.dtype != "float32":
            raise node.error(f"the {name} must be float32, got {v.dtype}")


@converter("NonMaxSuppression")
def _nms(im: Importer, node: Node) -> list[Value | Array]:
    boxes, scores = im.input(node, 0), im.input(node, 1)
    _check(node, boxes, scores)
    settings(im, node)  # thresholds known before the cut
    raise DataDependentShapeError(
        f"{node.label}: NonMaxSuppression of runtime boxes and scores has an "
        "output whose size is data (how many boxes are kept): qidao compiles such "
        "a model in stages, cut at this node (qidao.frontend.onnx.staged)",
        str(node.proto.output[0]),
        "NonMaxSuppression",
    )


def _keep(im: Importer, node: Node) -> list[Value | Array]:
    """The staging's ``NmsKeep``: the order and the kept mask."""
    boxes, scores = im.input(node, 0), im.input(node, 1)
    _check(node, boxes, scores)
    s = settings(im, node)
    order, keep = im.graph.nms_keep(
        boxes, scores, s.max_per_class, s.iou, s.score, s.center
    )
    return [order, keep]


STAGING_CONVERTERS["NmsKeep"] = _keep


@dataclass(frozen=True)
class Parts:
    """``NonMaxSuppression`` taken apart around its ``NonZero``."""

    before: list[onnx.NodeProto]
    keep: str
    selected: str
    after: list[onnx.NodeProto]
    types: list[onnx.ValueInfoProto]
    """The types of the ``NmsKeep`` outputs (ONNX's inference does not know the
    staging's ops)."""


def parts(node: onnx.NodeProto, scores: tuple[int, ...]) -> Parts:
    """The nodes of ``node`` around the ``NonZero`` of its kept mask, for scores
    of shape ``scores``."""
    from qidao.frontend.onnx.importer import STAGING_DOMAIN

    p = f"{node.name or node.output[0]}/nms/"
    order, keep, selected = f"{p}order", f"{p}keep", f"{p}selected"
    before = [
        helper.make_node(
            "NmsKeep",
            list(node.input),
            [order, keep],
            name=f"{p}keep",
            domain=STAGING_DOMAIN,
            center_point_box=next(
                (a.i for a in node.attribute if a.name == "center_point_box"), 0
            ),
        )
    ]
    starts, ends, axes = f"{p}starts", f"{p}ends", f"{p}axes"
    column = f"{p}column"
    after = [
        helper.make_node("Transpose", [selected], [f"{p}triples"], perm=[1, 0]),
        _constant(starts, [0]),
        _constant(ends, [2]),
        _constant(axes, [1]),
        _constant(column, [-1, 1]),
        helper.make_node(
            "Slice", [f"{p}triples", starts, ends, axes], [f"{p}batch_class"]
        ),
        helper.make_node("GatherND", [order, f"{p}triples"], [f"{p}box"]),
        helper.make_node("Reshape", [f"{p}box", column], [f"{p}box_column"]),
        helper.make_node(
            "Concat", [f"{p}batch_class", f"{p}box_column"], [node.output[0]], axis=1
        ),
    ]
    types = [
        helper.make_tensor_value_info(order, onnx.TensorProto.INT64, list(scores)),
        helper.make_tensor_value_info(keep, onnx.TensorProto.BOOL, list(scores)),
    ]
    return Parts(before, keep, selected, after, types)


def _constant(name: str, values: list[int]) -> onnx.NodeProto:
    tensor = onnx.numpy_helper.from_array(np.array(values, np.int64), name)
    return helper.make_node("Constant", [], [name], value=tensor)
