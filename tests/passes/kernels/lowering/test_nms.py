"""The ``tg.nms_keep`` kernel (``Graph.nms_keep``) against the dialect's NumPy
evaluator, which follows ONNX's reference step by step; the ONNX path is checked
against ONNX Runtime in ``tests/frontend/onnx/test_staged.py``.

Cases: corner boxes with their corners in either order, center boxes, ties in
score, identical boxes, boxes of no area, no score threshold, ``max`` 0 and
more than the boxes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func

import qidao
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]


def check(
    boxes: Array,
    scores: Array,
    limit: int,
    iou: float,
    score: float | None,
    center: bool,
) -> Array:
    g = Graph()
    b, s = g.input("b", boxes.shape), g.input("s", scores.shape)
    order, keep = g.nms_keep(b, s, limit, iou, score, center)
    g.output(order, keep)
    fn = next(op for op in g.module().walk() if isinstance(op, func.FuncOp))
    expected = evaluate_function(fn, [boxes, scores])
    for mode in ("graph", "eager"):
        got = qidao.compile(g, mode=mode)(boxes, scores)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
    return np.asarray(expected[1])


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize(("limit", "score"), [(3, 0.3), (100, None), (0, 0.0)])
def test_random_boxes(center: bool, limit: int, score: float | None) -> None:
    rng = np.random.default_rng(7)
    boxes = rng.uniform(0, 10, (2, 16, 4)).astype(np.float32)
    if center:
        boxes[..., 2:] = rng.uniform(0.5, 6, (2, 16, 2))
    scores = rng.uniform(0, 1, (2, 3, 16)).astype(np.float32)
    keep = check(boxes, scores, limit, 0.3, score, center)
    assert keep.sum(axis=-1).max() <= limit


def test_degenerate_boxes() -> None:
    """Reversed corners count as the same box; identical boxes suppress each other
    (the lower index, first of the tie, is kept); a box of no area suppresses
    nothing and is kept."""
    boxes = np.array(
        [
            [
                [0, 0, 2, 2],
                [2, 2, 0, 0],  # box 0, corners swapped
                [5, 5, 5, 9],  # no area
                [5, 5, 7, 7],
                [5, 5, 7, 7],  # box 3 again
            ]
        ],
        np.float32,
    )
    scores = np.array([[[0.9, 0.8, 0.95, 0.5, 0.5]]], np.float32)
    keep = check(boxes, scores, 10, 0.5, None, False)
    order = [2, 0, 1, 3, 4]  # by score, ties by index
    assert [order[r] for r in np.flatnonzero(keep[0, 0])] == [2, 0, 3]
