"""Greedy non-maximum suppression: ``tg.nms_keep``.

ONNX's ``NonMaxSuppression`` selects, for every batch and class, boxes in
descending score order, dropping a box whose score is not above the score
threshold or whose intersection over union with a box already selected is above
the IoU threshold, until ``max_per_class`` are selected. Which boxes are kept
is data, so the op gives a mask in *score order* instead of the list:

``tg.nms_keep %boxes, %scores, %order`` with ``boxes`` f32 ``[B, N, 4]``,
``scores`` f32 ``[B, C, N]`` and ``order`` i64 ``[B, C, N]`` (the boxes of each
class by descending score, ties by index: ``tg.top_k_indices``) gives i1
``[B, C, N]``: ``keep[b, c, r]`` says box ``order[b, c, r]`` is selected. The
``NonZero`` of the mask, in row-major order, is ONNX's output order (batch,
class, score), which ``qidao/frontend/onnx/nms.py`` builds on.

A box is ``[y1, x1, y2, x2]`` (two corners, either order) or, with ``center``,
``[x_center, y_center, width, height]``. Two boxes suppress each other when
their intersection over union, computed in f32 in ONNX's reference order
(intersection, both areas, union = area1 + area2 - intersection, IoU =
intersection / union), is above ``iou``; an empty intersection or a box of no
area suppresses nothing. Without ``score``, every score passes.

```mlir
%k = tg.nms_keep %boxes, %scores, %order max = 3 iou = 5.000000e-01 score = 0.000000e+00 : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) -> tensor<1x1x6xi1>
```
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, tensor
from qidao.dialects.tg.types import shape_of, tensor_type


@irdl_op_definition
class NmsKeepOp(TgOp):
    """Which boxes greedy non-maximum suppression keeps, per batch and class, in
    score order (module text).

    ```mlir
    %k = tg.nms_keep %boxes, %scores, %order max = 3 iou = 5.000000e-01 score = 0.000000e+00 center : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) -> tensor<1x1x6xi1>
    ```
    """

    name = "tg.nms_keep"
    KERNEL_KIND: ClassVar[str] = "other"

    boxes = operand_def(TensorType)
    scores = operand_def(TensorType)
    order = operand_def(TensorType)
    max_per_class = prop_def(IntegerAttr[I64])
    iou_threshold = prop_def(FloatAttr[Float32Type])
    score_threshold = opt_prop_def(FloatAttr[Float32Type])
    center = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$boxes `,` $scores `,` $order `max` `=` $max_per_class `iou` `=` "
        "$iou_threshold (`score` `=` $score_threshold^)? (`center` $center^)? "
        "attr-dict `:` `(` type($boxes) `,` type($scores) `,` type($order) `)` "
        "`->` type($result)"
    )

    def __init__(
        self,
        boxes: SSAValue,
        scores: SSAValue,
        order: SSAValue,
        max_per_class: int,
        iou_threshold: float,
        score_threshold: float | None = None,
        center: bool = False,
    ) -> None:
        props: dict[str, Attribute] = {
            "max_per_class": IntegerAttr(max_per_class, 64),
            "iou_threshold": FloatAttr(iou_threshold, Float32Type()),
        }
        if score_threshold is not None:
            props["score_threshold"] = FloatAttr(score_threshold, Float32Type())
        if center:
            props["center"] = UnitAttr()
        super().__init__(
            operands=[boxes, scores, order],
            result_types=[tensor_type(shape_of(tensor(scores)), i1)],
            properties=props,
        )

    def is_center(self) -> bool:
        return self.center is not None

    def flops(self) -> int:
        """About 20 operations per pair of boxes of a class (its IoU)."""
        b, c, n = shape_of(tensor(self.scores))
        return 20 * b * c * n * n

    def verify_(self) -> None:
        self.verify_tensors()
        boxes, scores, order = (
            tensor(self.boxes),
            tensor(self.scores),
            tensor(self.order),
        )
        if boxes.get_element_type() != f32 or scores.get_element_type() != f32:
            raise VerifyException(
                f"{self.name} expects f32 boxes and scores, got {boxes} and {scores}"
            )
        if order.get_element_type() != i64:
            raise VerifyException(f"{self.name} expects i64 order, got {order}")
        b = shape_of(boxes)
        s = shape_of(scores)
        if len(b) != 3 or b[2] != 4:
            raise VerifyException(
                f"{self.name} expects boxes of shape [B, N, 4], got {boxes}"
            )
        if len(s) != 3 or s[0] != b[0] or s[2] != b[1]:
            raise VerifyException(
                f"{self.name} expects scores of shape [{b[0]}, C, {b[1]}] (the "
                f"batches and boxes of {boxes}), got {scores}"
            )
        if shape_of(order) != s:
            raise VerifyException(
                f"{self.name} expects an order of the scores' shape {list(s)}, got "
                f"{order}"
            )
        if self.max_per_class.value.data < 0:
            raise VerifyException(
                f"{self.name}: max = {self.max_per_class.value.data} must be >= 0"
            )
        self.expect_result_type(tensor_type(s, i1))
