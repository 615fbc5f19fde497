"""The ``tg.nms_keep`` kernel: greedy non-maximum suppression, one class at a time.

For every batch ``b`` and class ``c`` the boxes are walked in score order
(``order[b, c, r]``), with the number selected so far as a loop iter_arg. Box
``r`` is kept when its score is above the threshold (when there is one), fewer
than ``max`` are kept already, and no box kept before it overlaps it by more
than the IoU threshold: an inner walk over every earlier slot ``q < r`` ORs
``keep[b, c, q] and iou(box r, box q) > threshold`` (all slots are walked, the
later ones masked out, so the loop bounds stay constant). In loops::

    for b < B, c < C:
      for r < N iter_args(%count = 0):
        %i = order[b, c, r]                                   (a box index)
        %ok = scores[b, c, %i] > score  and  %count < max
        %hit = for q < N iter_args(%any = false):
                 %any or (q < r and keep[b, c, q] and iou(%i, order[b, c, q]) > iou)
        keep[b, c, r] = %ok and not %hit
        yield %count + (1 if kept)

The IoU follows ONNX's reference step by step in f32 (``tg.nms_keep``'s text):
the corners ordered, the intersection's bounds, an empty intersection or a box of
no area suppressing nothing, ``inter / (area1 + area2 - inter)``. The loads at a
box index (``memref.load``) are the kernel's only accesses that are not affine;
every index is a position the order holds, in ``[0, N)``. ``N^2`` steps a class:
the boxes of detection models (hundreds) are fine, tens of thousands are not.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, f32, i1
from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import Emitter, Kernel, Source, dim, shape
from qidao.passes.kernels.lowering.constants import ConstantPool


class _Boxes:
    """Box coordinates and their overlap, emitted in f32."""

    def __init__(self, em: Emitter, boxes: SSAValue, center: bool) -> None:
        self.em, self.boxes, self.center = em, boxes, center
        self.corners = [em.constant(k, IndexType()) for k in range(4)]

    def _v(self, op: Operation) -> SSAValue:
        return self.em.value(op)

    def _cmp(self, a: SSAValue, b: SSAValue, predicate: str) -> SSAValue:
        return self._v(arith.CmpfOp(a, b, predicate))

    def _max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Python's ``max(a, b)``: ``b`` only when ``b > a``."""
        return self._v(arith.SelectOp(self._cmp(b, a, "ogt"), b, a))

    def _min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Python's ``min(a, b)``: ``b`` only when ``b < a``."""
        return self._v(arith.SelectOp(self._cmp(b, a, "olt"), b, a))

    def extent(self, batch: SSAValue, box: SSAValue) -> list[SSAValue]:
        """``[x_min, x_max, y_min, y_max]`` of box ``box`` of batch ``batch``."""
        v = [
            self._v(memref.LoadOp.get(self.boxes, [batch, box, k]))
            for k in self.corners
        ]
        if self.center:  # [x_center, y_center, width, height]
            two = self.em.constant(2.0, v[0].type)
            half_w = self._v(arith.DivfOp(v[2], two))
            half_h = self._v(arith.DivfOp(v[3], two))
            return [
                self._v(arith.SubfOp(v[0], half_w)),
                self._v(arith.AddfOp(v[0], half_w)),
                self._v(arith.SubfOp(v[1], half_h)),
                self._v(arith.AddfOp(v[1], half_h)),
            ]
        extent = []
        for lhs, rhs in ((v[1], v[3]), (v[0], v[2])):  # x from 1, 3; y from 0, 2
            swap = self._cmp(lhs, rhs, "oge")  # ONNX's max_min: (rhs, lhs) if >=
            extent.append(self._v(arith.SelectOp(swap, rhs, lhs)))
            extent.append(self._v(arith.SelectOp(swap, lhs, rhs)))
        return extent

    def overlaps(
        self, a: list[SSAValue], b: list[SSAValue], threshold: SSAValue
    ) -> SSAValue:
        """Whether extents ``a`` and ``b`` overlap by more than ``threshold``."""
        zero = self.em.constant(0.0, threshold.type)
        x0, x1 = self._max(a[0], b[0]), self._min(a[1], b[1])
        y0, y1 = self._max(a[2], b[2]), self._min(a[3], b[3])
        width = self._v(arith.SubfOp(x1, x0))
        height = self._v(arith.SubfOp(y1, y0))
        inter = self._v(arith.MulfOp(width, height))
        area_a = self._area(a)
        area_b = self._area(b)
        union = self._v(arith.SubfOp(self._v(arith.AddfOp(area_a, area_b)), inter))
        iou = self._v(arith.DivfOp(inter, union))
        checks = [
            self._cmp(x1, x0, "ugt"),  # not (x1 <= x0): the reference's test
            self._cmp(y1, y0, "ugt"),
            self._cmp(inter, zero, "ugt"),
            self._cmp(area_a, zero, "ugt"),
            self._cmp(area_b, zero, "ugt"),
            self._cmp(union, zero, "ugt"),
            self._cmp(iou, threshold, "ogt"),
        ]
        result = checks[0]
        for check in checks[1:]:
            result = self._v(arith.AndIOp(result, check))
        return result

    def _area(self, e: list[SSAValue]) -> SSAValue:
        w = self._v(arith.SubfOp(e[1], e[0]))
        h = self._v(arith.SubfOp(e[3], e[2]))
        return self._v(arith.MulfOp(w, h))


def lower_nms_keep(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.NmsKeepOp)
    boxes, scores, order = sources
    assert isinstance(boxes, SSAValue) and isinstance(scores, SSAValue)
    assert isinstance(order, SSAValue), "boxes, scores and order are never splats"
    (out,) = k.outputs
    batches, classes, n = shape(op.result)
    if batches * classes * n == 0:
        return
    em = k.em
    index = IndexType()
    none, one = em.constant(0, index), em.constant(1, index)
    false = em.constant(0, i1)
    limit = em.constant(op.max_per_class.value.data, index)
    iou = em.constant(op.iou_threshold.value.data, f32)
    floor = op.score_threshold
    geometry = _Boxes(em, boxes, op.is_center())
    slot = [dim(0), dim(1), dim(2)]

    with em.nest(["b", "c"], [batches, classes]) as (b, c):

        def box(position: SSAValue) -> SSAValue:
            held = em.load(order, [b, c, position], slot)
            return em.value(arith.IndexCastOp(held, index))

        def step(ivs: list[SSAValue], counts: list[SSAValue]) -> list[SSAValue]:
            (count,) = counts
            r = ivs[-1]
            i = box(r)
            ok = em.value(arith.CmpiOp(count, limit, "slt"))
            if floor is not None:
                s = em.value(memref.LoadOp.get(scores, [b, c, i]))
                above = em.value(
                    arith.CmpfOp(s, em.constant(floor.value.data, s.type), "ogt")
                )
                ok = em.value(arith.AndIOp(ok, above))
            mine = geometry.extent(b, i)

            def earlier(ivs: list[SSAValue], found: list[SSAValue]) -> list[SSAValue]:
                (hit,) = found
                q = ivs[-1]
                before = em.value(arith.CmpiOp(q, r, "ult"))
                kept = em.load(out, [b, c, q], slot)
                theirs = geometry.extent(b, box(q))
                overlap = geometry.overlaps(mine, theirs, iou)
                here = em.value(
                    arith.AndIOp(before, em.value(arith.AndIOp(kept, overlap)))
                )
                return [em.value(arith.OrIOp(hit, here))]

            (hit,) = em.accumulate(["q"], [n], [false], earlier, [b, c, r])
            keep = em.value(
                arith.AndIOp(ok, em.value(arith.XOrIOp(hit, em.constant(1, i1))))
            )
            em.store(keep, out, [b, c, r], slot)
            bump = em.value(arith.SelectOp(keep, one, none))
            return [em.value(arith.AddiOp(count, bump))]

        em.accumulate(["r"], [n], [none], step, [b, c])
