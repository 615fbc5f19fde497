"""The rewrite patterns of ``simplify``: one algebraic identity per class.

Every pattern replaces an op by a value that is *exactly* equal to it, bit for bit
(IEEE-754, signed zeros and NaN included), and of exactly the same type, so no user
of the value can tell the difference. A pattern that would change the type (an
``x + 0`` that broadcasts ``x`` to a bigger shape, a strided ``x`` where the op
produced a row-major tensor) does not fire.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg import (
    AddOp,
    BroadcastOp,
    ConstantOp,
    ContiguousOp,
    Conv2dOp,
    DivOp,
    MatmulOp,
    MulOp,
    PadOp,
    ReshapeOp,
    SubOp,
    TransposeOp,
    ViewOp,
)
from qidao.dialects.tg.base import ints, tensor
from qidao.dialects.tg.linalg import NCHW
from qidao.dialects.tg.types import dtype_name, is_row_major, shape_of

# ---- helpers -----------------------------------------------------------------------


def splat_value(value: SSAValue) -> float | None:
    """The one element of a float ``tg.constant`` whose elements are all bitwise
    equal (so ``-0.0`` and ``0.0`` differ), else None."""
    owner = value.owner
    if not isinstance(owner, ConstantOp):
        return None
    t = owner.value.type
    element = t.get_element_type()
    if not isinstance(element, AnyFloat):
        return None
    dtype = np.dtype(dtype_name(element))
    flat = np.frombuffer(owner.value.data.data, dtype=dtype)
    if flat.size == 0:
        return None
    bits = flat.view(np.dtype(f"u{dtype.itemsize}"))
    if not bool((bits == bits[0]).all()):
        return None
    return float(flat[0])


def is_one(value: SSAValue) -> bool:
    return splat_value(value) == 1.0


def is_positive_zero(value: SSAValue) -> bool:
    v = splat_value(value)
    return v is not None and v == 0.0 and math.copysign(1.0, v) > 0


def is_negative_zero(value: SSAValue) -> bool:
    v = splat_value(value)
    return v is not None and v == 0.0 and math.copysign(1.0, v) < 0


def forward(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace ``op`` by ``value`` when their types are equal; else do nothing."""
    if value.type == op.results[0].type:
        rewriter.replace(op, [], [value])


def replace_if_same_type(
    op: Operation, new: Operation, rewriter: PatternRewriter
) -> None:
    """Replace ``op`` by ``new`` when the result types are equal; else drop ``new``."""
    if new.results[0].type == op.results[0].type:
        rewriter.replace(op, [new], [new.results[0]])


# ---- elementwise identities --------------------------------------------------------


class MulByOneRight(RewritePattern):
    """``x * 1 -> x`` (exact for every x, NaN included)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, MulOp) and is_one(op.rhs):
            forward(op, op.lhs, rewriter)


class MulByOneLeft(RewritePattern):
    """``1 * x -> x``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, MulOp) and is_one(op.lhs):
            forward(op, op.rhs, rewriter)


class AddNegativeZeroRight(RewritePattern):
    """``x + (-0.0) -> x``. Only ``-0.0``: ``x + 0.0`` turns ``x = -0.0`` into
    ``+0.0``, so it is not an identity and stays (as in MLIR's ``arith.addf``)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, AddOp) and is_negative_zero(op.rhs):
            forward(op, op.lhs, rewriter)


class AddNegativeZeroLeft(RewritePattern):
    """``(-0.0) + x -> x`` (``0.0 + x`` stays, as for ``x + 0.0``)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, AddOp) and is_negative_zero(op.lhs):
            forward(op, op.rhs, rewriter)


class SubZero(RewritePattern):
    """``x - 0.0 -> x`` (exact: ``-0.0 - 0.0 = -0.0``). ``x - (-0.0)`` is
    ``x + 0.0`` and stays."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, SubOp) and is_positive_zero(op.rhs):
            forward(op, op.lhs, rewriter)


class DivByOne(RewritePattern):
    """``x / 1 -> x``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, DivOp) and is_one(op.rhs):
            forward(op, op.lhs, rewriter)


# ---- layout identities -------------------------------------------------------------


class TransposeOfTranspose(RewritePattern):
    """``transpose(transpose(x, p), q) -> transpose(x, r)`` with ``r[k] = p[q[k]]``,
    and ``-> x`` when ``r`` is the identity."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, TransposeOp):
            return
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        p, q = ints(inner.perm), ints(op.perm)
        r = tuple(p[k] for k in q)
        x = inner.input
        if r == tuple(range(len(r))):
            forward(op, x, rewriter)
            return
        replace_if_same_type(op, TransposeOp(x, r), rewriter)


class ReshapeOfReshape(RewritePattern):
    """``reshape(reshape(x, s1), s2) -> reshape(x, s2)`` when the new reshape has
    the old result type (a row-major copy stays a copy, a view stays the same view)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ReshapeOp):
            return
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        new = ReshapeOp(inner.input, shape_of(op.result.type))
        replace_if_same_type(op, new, rewriter)


class ViewOfView(RewritePattern):
    """``view(view(x, s1), s2) -> view(x, s2)`` when ``x``'s layout has that view and
    it has the old result type."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ViewOp):
            return
        inner = op.input.owner
        if not isinstance(inner, ViewOp):
            return
        shape = shape_of(op.result.type)
        try:
            ViewOp.infer(tensor(inner.input), shape)
        except VerifyException:
            return  # x's strides cannot describe the shape directly
        replace_if_same_type(op, ViewOp(inner.input, shape), rewriter)


class IdentityReshape(RewritePattern):
    """``reshape(x) -> x`` and ``view(x) -> x`` when the result type is ``x``'s type."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ReshapeOp | ViewOp):
            forward(op, op.input, rewriter)


class ContiguousOfRowMajor(RewritePattern):
    """``contiguous(x) -> x`` when ``x`` is already row-major."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ContiguousOp):
            forward(op, op.input, rewriter)


class ContiguousOfTransposedMatmul(RewritePattern):
    """``contiguous(transpose(matmul(a, b)))`` with the last two dimensions swapped
    ``-> matmul(transpose(b), transpose(a))``: (A B)^T = B^T A^T, the same products
    summed over the same k in the same order, written row-major by the matmul
    instead of copied by a transposing kernel. Only when the matmul and the
    transpose have no other use (the gradient of ``x @ w.T`` ends so)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ContiguousOp):
            return
        t = op.input.owner
        if not isinstance(t, TransposeOp) or not t.result.has_one_use():
            return
        m = t.input.owner
        rank = len(shape_of(t.result.type))
        swap = (*range(rank - 2), rank - 1, rank - 2)
        if (
            not isinstance(m, MatmulOp)
            or m.panels  # a packed rhs has no transpose of its own
            or ints(t.perm) != swap
            or not m.result.has_one_use()
        ):
            return
        a, b = m.lhs, m.rhs
        if len(shape_of(a.type)) != rank or len(shape_of(b.type)) != rank:
            return  # a broadcast batch: the transposes would not line up
        bt = TransposeOp(b, swap)
        at = TransposeOp(a, swap)
        new = MatmulOp(bt.result, at.result)
        if new.result.type != op.result.type:
            return
        rewriter.replace(op, [bt, at, new], [new.result])


class BroadcastToSameShape(RewritePattern):
    """``broadcast(x) -> x`` when the target shape is ``x``'s shape."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, BroadcastOp) and shape_of(op.input.type) == shape_of(
            op.result.type
        ):
            forward(op, op.input, rewriter)


# ---- convolution identities -------------------------------------------------------


class PadIntoConv(RewritePattern):
    """``conv2d(pad(x, zeros on H and W), padding=p) -> conv2d(x, padding=p + pad)``.

    Exact by definition: a convolution's own padding is ``+0.0`` (the NumPy
    evaluator pads with ``0.0`` and correlates), so a ``tg.pad`` of ``+0.0`` on the
    spatial dims only, read by nothing else, is the same convolution. A pad of any
    value with all amounts 0 (ONNX exports put them before 1x1 convolutions) folds
    too. It does not fire for a nonzero or ``-0.0`` value, a padded batch or channel
    dim, a pad with other users (its copy is still needed) or a strided ``x`` (the
    pad is then also the copy that makes the convolution's input row-major).
    ``edge``/``reflect`` padding is not a ``tg.pad`` (the ONNX frontend gathers), so
    it never matches.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, Conv2dOp):
            return
        pad = op.input.owner
        if not isinstance(pad, PadOp) or not pad.result.has_one_use():
            return
        if not is_row_major(pad.input.type):
            return
        low, high = pad.amounts()
        spatial = (2, 3) if op.data_layout() == NCHW else (1, 2)
        others = [d for d in range(len(low)) if d not in spatial]
        if any(low[d] or high[d] for d in others):
            return
        if any(low) or any(high):
            value = pad.pad_value()
            if value != 0.0 or math.copysign(1.0, value) < 0:
                return
        top, left, bottom, right = ints(op.padding)
        h, w = spatial
        conv = Conv2dOp(
            pad.input,
            op.weight,
            op.bias,
            strides=ints(op.strides),
            padding=(top + low[h], left + low[w], bottom + high[h], right + high[w]),
            dilation=ints(op.dilation),
            groups=op.groups.value.data,
            layout=op.data_layout(),
        )
        conv.attributes.update(op.attributes)
        conv.result.name_hint = op.result.name_hint
        replace_if_same_type(op, conv, rewriter)


PATTERNS: tuple[type[RewritePattern], ...] = (
    MulByOneRight,
    MulByOneLeft,
    AddNegativeZeroRight,
    AddNegativeZeroLeft,
    SubZero,
    DivByOne,
    TransposeOfTranspose,
    ReshapeOfReshape,
    ViewOfView,
    IdentityReshape,
    ContiguousOfRowMajor,
    ContiguousOfTransposedMatmul,
    BroadcastToSameShape,
    PadIntoConv,
)
"""Every pattern of ``simplify``, in the order the pass tries them."""
