"""Reference semantics of every tg op, in NumPy: the oracle of tests and the engine
of ``fold-constants``.

``evaluate(op, operands)`` computes the results of one tg op from NumPy arrays of its
operands; ``evaluate_function(fn, inputs)`` runs a whole ``func.func`` of tg ops.

Precision: float operands are computed in **float64 and rounded once** to the
result's element type (float32 for f32). For ``+ - * /`` and ``sqrt`` that is exactly
IEEE float32 arithmetic (float64 carries more than 2 * 24 + 2 bits, so the double
rounding is innocuous), i.e. bitwise what the compiled code computes (f16 too,
which the compiled code computes in float32 and rounds to float16 after every op);
(``fmod`` is exact in either); for ``exp``, ``log``, ``tanh``, ``erf``, ``sin``,
``cos``, the functions of ``trig.py`` and the accumulating ops
(``matmul``, ``conv2d``, reductions, ``softmax``, pools) it is the accurately rounded answer,
which a float32 kernel approaches within its own rounding error. Integer and bool tensors compute in their
own dtype (integer arithmetic wraps around, as the compiled code's); ``tg.cast``
converts straight from the operand's dtype (``int64 -> float32`` rounds once).

Layout does not matter here: a tg value's *values* are the same whatever strides its
type carries, so ``view``/``reshape`` are row-major reshapes, ``transpose`` is
``np.transpose`` and ``broadcast`` is ``np.broadcast_to``. Every result is a fresh,
row-major array. IEEE special cases follow NumPy (NaN propagates through ``max``,
``min``, ``relu`` and ``reduce_max``; overflow gives inf); NumPy's floating-point
warnings are silenced, since inf and NaN are legitimate tensor values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.dialects.tg.base import ints
from qidao.dialects.tg.bitwise import (
    BitwiseAndOp,
    BitwiseNotOp,
    BitwiseOrOp,
    BitwiseXorOp,
    ShiftLeftOp,
    ShiftRightOp,
)
from qidao.dialects.tg.cast import CastOp
from qidao.dialects.tg.compare import (
    EqualOp,
    GreaterEqualOp,
    GreaterOp,
    LessEqualOp,
    LessOp,
    LogicalAndOp,
    LogicalNotOp,
    LogicalOrOp,
    LogicalXorOp,
    NotEqualOp,
    SelectOp,
)
from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.cumulative import CumprodOp, CumsumOp, CumulativeOp
from qidao.dialects.tg.custom import CustomOp, CustomYieldOp
from qidao.dialects.tg.dynamic_indexing import GatherElementsOp, TakeOp
from qidao.dialects.tg.elementwise import (
    AbsOp,
    AddOp,
    CosOp,
    DivOp,
    ErfOp,
    ExpOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PowOp,
    ReluOp,
    SigmoidOp,
    SinOp,
    SqrtOp,
    SubOp,
    TanhOp,
)
from qidao.dialects.tg.fmod import FmodOp
from qidao.dialects.tg.fused import FusedOp, YieldOp
from qidao.dialects.tg.grid_sample import GridSampleOp
from qidao.dialects.tg.grid_sample_numpy import grid_sample
from qidao.dialects.tg.indexing import ConcatOp, GatherOp, SliceOp
from qidao.dialects.tg.layout_ops import (
    BroadcastOp,
    ContiguousOp,
    ReshapeOp,
    TransposeOp,
    ViewOp,
)
from qidao.dialects.tg.linalg import Conv2dOp, MatmulOp, unpack_panels
from qidao.dialects.tg.linalg_integer import MatmulIntegerOp, matmul_integer_reference
from qidao.dialects.tg.matmul_bf16 import MatmulBf16Op, matmul_bf16_reference
from qidao.dialects.tg.matmul_blockq import MatmulBlockqOp, matmul_blockq_reference
from qidao.dialects.tg.nms import NmsKeepOp
from qidao.dialects.tg.nn import AvgPool2dOp, BatchNormOp, MaxPool2dOp, SoftmaxOp
from qidao.dialects.tg.nonzero import NonzeroIndicesOp
from qidao.dialects.tg.pad import PadOp
from qidao.dialects.tg.reduce import (
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceOp,
    ReduceProdOp,
    ReduceSumOp,
)
from qidao.dialects.tg.round import RoundOp
from qidao.dialects.tg.scatter import GatherNdOp, ScatterElementsOp, ScatterNdOp
from qidao.dialects.tg.sort import TopKIndicesOp
from qidao.dialects.tg.trig import (
    AcoshOp,
    AcosOp,
    AsinhOp,
    AsinOp,
    AtanhOp,
    AtanOp,
    CoshOp,
    SinhOp,
    TanOp,
)
from qidao.dialects.tg.types import dtype_name, shape_of
from qidao.dialects.tg.winograd import WinogradInputOp, WinogradOutputOp, transform

Array = np.ndarray[Any, Any]
Evaluator = Callable[[Operation, list[Array]], list[Array]]


class EvaluationError(ValueError):
    """An op the evaluator does not know, or operands that do not fit the op."""


# ---- public entry points -------------------------------------------------------------


def evaluate(op: Operation, operands: Sequence[Array]) -> list[Array]:
    """The results of ``op`` on ``operands``, as fresh row-major arrays whose dtypes
    and shapes are those of the op's result types."""
    evaluator = _EVALUATORS.get(type(op))
    if evaluator is None:
        raise EvaluationError(f"numpy_eval: no reference semantics for {op.name}")
    if len(operands) != len(op.operands):
        raise EvaluationError(
            f"numpy_eval: {op.name} takes {len(op.operands)} operands, got "
            f"{len(operands)}"
        )
    arrays = [np.asarray(a) for a in operands]
    for k, (array, value) in enumerate(zip(arrays, op.operands, strict=True)):
        want = shape_of(value.type)
        if array.shape != want:
            raise EvaluationError(
                f"numpy_eval: {op.name} operand #{k} has shape {list(array.shape)}, "
                f"but its type {value.type} has shape {list(want)}"
            )
    with np.errstate(all="ignore"):
        results = evaluator(op, [_compute(a) for a in arrays])
    return [
        _as_result(r, value.type) for r, value in zip(results, op.results, strict=True)
    ]


def evaluate_function(fn: func.FuncOp, inputs: Sequence[Any]) -> list[Array]:
    """Run a ``func.func`` of tg ops on NumPy inputs; the values ``func.return``s."""
    args = fn.body.block.args
    if len(inputs) != len(args):
        raise EvaluationError(
            f"@{fn.sym_name.data} takes {len(args)} inputs, got {len(inputs)}"
        )
    env: dict[SSAValue, Array] = {}
    for k, (arg, given) in enumerate(zip(args, inputs, strict=True)):
        array = np.asarray(given)
        if array.shape != shape_of(arg.type):
            raise EvaluationError(
                f"@{fn.sym_name.data}: input #{k} ({arg.name_hint or '?'}) expects "
                f"shape {list(shape_of(arg.type))}, got {list(array.shape)}"
            )
        env[arg] = _as_result(array, arg.type)
    return _run_block(fn.body.block.ops, env, func.ReturnOp)


# ---- helpers -----------------------------------------------------------------------


def _compute(array: Array) -> Array:
    """Floats compute in float64 (see the module docstring); the rest as they are."""
    if np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float64)
    return array


def _as_result(array: Array, result_type: Attribute) -> Array:
    """``array`` as a fresh row-major array of the type's dtype and shape."""
    if not isinstance(result_type, TensorType):
        raise EvaluationError(f"numpy_eval: {result_type} is not a tensor type")
    dtype = np.dtype(dtype_name(result_type.get_element_type()))
    with np.errstate(all="ignore"):
        out = np.array(array, dtype=dtype, order="C", copy=True)
    if out.shape != shape_of(result_type):
        raise EvaluationError(
            f"numpy_eval: computed shape {list(out.shape)} for a result of type "
            f"{result_type}"
        )
    return out


def _run_block(
    ops: Any, env: dict[SSAValue, Array], terminator: type[Operation]
) -> list[Array]:
    for inner in ops:
        if isinstance(inner, terminator):
            return [env[v] for v in inner.operands]
        results = evaluate(inner, [env[v] for v in inner.operands])
        env.update(zip(inner.results, results, strict=True))
    raise EvaluationError(f"numpy_eval: block does not end with {terminator.name}")


# ---- elementwise -------------------------------------------------------------------


def _sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-x))  # type: ignore[no-any-return]


_erf_float64 = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x: Array) -> Array:
    """NumPy has no erf: C's ``erf`` through ``math.erf``, element by element, in
    float64 (IEEE special values as C99: -0 stays -0, +-inf gives +-1)."""
    return _erf_float64(x)  # type: ignore[no-any-return]


def _divide(a: Array, b: Array) -> Array:
    """IEEE division on floats; on integers ``tg.div``'s: truncation toward zero,
    ``x / 0 = 0`` and ``MIN / -1 = MIN`` (see ``DivOp``); unsigned ones divide
    unsigned (``x / 0 = 0`` too)."""
    if not np.issubdtype(a.dtype, np.integer):
        return np.divide(a, b)  # type: ignore[no-any-return]
    a, b = np.broadcast_arrays(a, b)
    if np.issubdtype(a.dtype, np.unsignedinteger):
        q = np.floor_divide(a, np.where(b == 0, 1, b).astype(b.dtype))
        return np.where(b == 0, np.zeros_like(q), q)  # type: ignore[no-any-return]
    special = (b == 0) | (b == -1)
    safe = np.where(special, 1, b).astype(b.dtype)
    q = np.floor_divide(a, safe)
    inexact = (q * safe != a) & ((a < 0) != (safe < 0))
    q = q + inexact.astype(q.dtype)
    q = np.where(b == -1, np.negative(a), q)
    return np.where(b == 0, np.zeros_like(q), q)  # type: ignore[no-any-return]


def _relu(x: Array) -> Array:
    return np.maximum(x, np.zeros((), x.dtype))  # type: ignore[no-any-return]


_BINARY: dict[type[Operation], Callable[[Array, Array], Array]] = {
    AddOp: np.add,
    SubOp: np.subtract,
    MulOp: np.multiply,
    DivOp: _divide,
    MaxOp: np.maximum,
    MinOp: np.minimum,
    PowOp: np.power,
    LessOp: np.less,
    LessEqualOp: np.less_equal,
    GreaterOp: np.greater,
    GreaterEqualOp: np.greater_equal,
    EqualOp: np.equal,
    NotEqualOp: np.not_equal,
    LogicalAndOp: np.logical_and,
    LogicalOrOp: np.logical_or,
    LogicalXorOp: np.logical_xor,
    BitwiseAndOp: np.bitwise_and,
    BitwiseOrOp: np.bitwise_or,
    BitwiseXorOp: np.bitwise_xor,
    ShiftLeftOp: np.left_shift,
    ShiftRightOp: np.right_shift,
    FmodOp: np.fmod,
}
_UNARY: dict[type[Operation], Callable[[Array], Array]] = {
    NegOp: np.negative,
    AbsOp: np.abs,
    LogicalNotOp: np.logical_not,
    ExpOp: np.exp,
    LogOp: np.log,
    SqrtOp: np.sqrt,
    TanhOp: np.tanh,
    ErfOp: _erf,
    SinOp: np.sin,
    CosOp: np.cos,
    SigmoidOp: _sigmoid,
    ReluOp: _relu,
    BitwiseNotOp: np.invert,
    TanOp: np.tan,
    AsinOp: np.arcsin,
    AcosOp: np.arccos,
    AtanOp: np.arctan,
    SinhOp: np.sinh,
    CoshOp: np.cosh,
    AsinhOp: np.arcsinh,
    AcoshOp: np.arccosh,
    AtanhOp: np.arctanh,
    RoundOp: np.round,  # half to even, exact
}


def _binary(op: Operation, xs: list[Array]) -> list[Array]:
    return [_BINARY[type(op)](xs[0], xs[1])]


def _unary(op: Operation, xs: list[Array]) -> list[Array]:
    return [_UNARY[type(op)](xs[0])]


def _select(op: Operation, xs: list[Array]) -> list[Array]:
    return [np.where(xs[0], xs[1], xs[2])]


def _cast(op: Operation, xs: list[Array]) -> list[Array]:
    """``astype`` from the operand's own dtype (not from the float64 that floats
    compute in: ``int64 -> float32`` must round once)."""
    assert isinstance(op, CastOp)
    source = np.dtype(dtype_name(op.input.type.get_element_type()))  # type: ignore[attr-defined]
    target = np.dtype(dtype_name(op.target()))
    return [xs[0].astype(source).astype(target)]


# ---- constants, layout, contractions -----------------------------------------------


def _constant(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, ConstantOp)
    return [op.to_numpy()]


def _transpose(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, TransposeOp)
    return [np.transpose(xs[0], ints(op.perm))]


def _reshape(op: Operation, xs: list[Array]) -> list[Array]:
    """view, reshape, contiguous: the same values in row-major order, a new shape."""
    return [xs[0].reshape(shape_of(op.results[0].type))]


def _broadcast(op: Operation, xs: list[Array]) -> list[Array]:
    return [np.broadcast_to(xs[0], shape_of(op.results[0].type))]


def _pad_op(op: Operation, xs: list[Array]) -> list[Array]:
    """``np.pad`` with the constant ``value`` (rounded to the result's dtype)."""
    assert isinstance(op, PadOp)
    low, high = op.amounts()
    widths = list(zip(low, high, strict=True))
    return [np.pad(xs[0], widths, constant_values=op.pad_value())]


def _concat(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, ConcatOp)
    return [np.concatenate(xs, axis=op.normalized_axis())]


def _slice(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, SliceOp)
    index = tuple(slice(*bounds) for bounds in zip(*op.bounds(), strict=True))
    return [xs[0][index]]


def _gather(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, GatherOp)
    indices = np.array(op.normalized_indices(), dtype=np.int64)
    return [np.take(xs[0], indices, axis=op.normalized_axis())]


def _entries(indices: Array, size: int) -> Array:
    """The entries runtime ``indices`` read on an axis of ``size``: wrapped once if
    negative, then clamped into ``[0, size - 1]`` (``dynamic_indexing.py``)."""
    wrapped = np.where(indices < 0, indices.astype(np.int64) + size, indices)
    return np.clip(wrapped, 0, max(size - 1, 0)).astype(np.int64)


def _take(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, TakeOp)
    x, indices = xs
    shape = shape_of(op.result.type)
    if math.prod(shape) == 0:
        return [np.zeros(shape, x.dtype)]
    axis = op.normalized_axis()
    return [np.take(x, _entries(indices, x.shape[axis]), axis=axis)]


def _grid_sample(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, GridSampleOp)
    mode, padding = op.mode.data, op.padding_mode.data
    return [grid_sample(xs[0], xs[1], mode, padding, op.aligned())]


def _gather_elements(op: Operation, xs: list[Array]) -> list[Array]:
    """``np.take_along_axis`` of the input cut to the indices' shape in every
    dimension but the axis (``torch.gather``)."""
    assert isinstance(op, GatherElementsOp)
    x, indices = xs
    if indices.size == 0:
        return [np.zeros(indices.shape, x.dtype)]
    axis = op.normalized_axis()
    cut = tuple(
        slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape)
    )
    entries = _entries(indices, x.shape[axis])
    return [np.take_along_axis(x[cut], entries, axis=axis)]


_SCATTER_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}
"""The scatters' reductions: ``ufunc.at`` applies repeated indices one by one."""


def _scatter_into(
    out: Array, position: tuple[Array, ...], updates: Array, reduction: str
) -> None:
    """``out[position] = updates`` (the last of repeated positions wins: NumPy
    assigns in order), or combined by the reduction, in the out's own dtype."""
    if reduction == "none":
        out[position] = updates
    else:
        _SCATTER_UFUNCS[reduction].at(out, position, updates)


def _wrapped(indices: Array, size: int) -> tuple[Array, Array]:
    """Runtime ``indices`` on an axis of ``size`` wrapped once if negative, and
    whether each is then inside the axis (the scatters skip the others)."""
    wrapped = np.where(indices < 0, indices.astype(np.int64) + size, indices)
    wrapped = wrapped.astype(np.int64)
    return wrapped, (wrapped >= 0) & (wrapped < size)


def _scatter_elements(op: Operation, xs: list[Array]) -> list[Array]:
    """A copy of the data with each in-range ``indices[p]`` (on the axis) written
    or combined in row-major order; out-of-range ones skipped (``scatter.py``)."""
    assert isinstance(op, ScatterElementsOp)
    data, indices, updates = xs
    out = np.array(data, copy=True)
    axis = op.normalized_axis()
    entries, valid = _wrapped(indices, data.shape[axis])
    grid: list[Array] = list(np.indices(indices.shape, sparse=False))
    grid[axis] = entries
    position = tuple(g[valid] for g in grid)
    _scatter_into(out, position, updates[valid], op.reduction_kind())
    return [out]


def _scatter_nd(op: Operation, xs: list[Array]) -> list[Array]:
    """A copy of the data with the slice of each in-range k-tuple written or
    combined in row-major order; a tuple with a component out of range skipped."""
    assert isinstance(op, ScatterNdOp)
    data, indices, updates = xs
    out = np.array(data, copy=True)
    k = indices.shape[-1]
    tuples = indices.reshape(-1, k)
    slices = updates.reshape(-1, *data.shape[k:])
    columns = [_wrapped(tuples[:, j], data.shape[j]) for j in range(k)]
    valid = np.logical_and.reduce([ok for _, ok in columns])
    position = tuple(entries[valid] for entries, _ in columns)
    _scatter_into(out, position, slices[valid], op.reduction_kind())
    return [out]


def _gather_nd(op: Operation, xs: list[Array]) -> list[Array]:
    """``data[b.., i0, .., ik-1]`` for each k-tuple of the indices, the components
    wrapped and clamped as ``tg.take``'s."""
    assert isinstance(op, GatherNdOp)
    x, indices = xs
    shape = shape_of(op.result.type)
    if math.prod(shape) == 0:
        return [np.zeros(shape, x.dtype)]
    b = op.batch_dims.value.data
    k = indices.shape[-1]
    batch = math.prod(x.shape[:b])
    data = x.reshape(batch, *x.shape[b:])
    tuples = indices.reshape(batch, -1, k)
    picked = tuple(_entries(tuples[..., j], data.shape[1 + j]) for j in range(k))
    rows = np.arange(batch).reshape(batch, 1)
    rows = np.broadcast_to(rows, tuples.shape[:2])
    return [data[(rows, *picked)].reshape(shape)]


def _cumulative(op: Operation, xs: list[Array]) -> list[Array]:
    """``np.cumsum``/``np.cumprod`` in the result's dtype, not in float64 (one
    element after the other, rounding each step, as the kernel: bitwise the same),
    shifted by the identity when exclusive, run from the end when reverse."""
    assert isinstance(op, CumulativeOp)
    t = op.result.type
    assert isinstance(t, TensorType)
    x = xs[0].astype(dtype_name(t.get_element_type()))
    axis = op.normalized_axis()
    if op.is_reverse():
        x = np.flip(x, axis)
    accumulate = np.cumsum if isinstance(op, CumsumOp) else np.cumprod
    y = accumulate(x, axis=axis, dtype=x.dtype)
    if op.is_exclusive() and x.shape[axis] > 0:
        first = np.full_like(np.take(y, [0], axis=axis), op.IDENTITY)
        rest = np.take(y, np.arange(x.shape[axis] - 1), axis=axis)
        y = np.concatenate([first, rest], axis=axis)
    if op.is_reverse():
        y = np.flip(y, axis)
    return [np.ascontiguousarray(y)]


def _top_k_order(row: Array, largest: bool) -> Array:
    """The positions of ``row`` in the order of ``tg.top_k_indices``: by value
    (NaN above everything, equal values, -0.0 and 0.0 too, by position)."""
    _, rank = np.unique(row, return_inverse=True)  # NaNs: one rank, the last
    key = -rank.reshape(-1) if largest else rank.reshape(-1)
    return np.argsort(key, kind="stable")


def _top_k_indices(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, TopKIndicesOp)
    x = xs[0]
    shape = shape_of(op.result.type)
    if math.prod(shape) == 0:
        return [np.zeros(shape, np.int64)]
    k, largest = op.count(), op.is_largest()
    order = np.apply_along_axis(
        lambda row: _top_k_order(row, largest)[:k], op.normalized_axis(), x
    )
    return [order.astype(np.int64)]


def _nonzero_indices(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, NonzeroIndicesOp)
    x = xs[0]
    out = np.zeros(shape_of(op.result.type), np.int64)
    positions = np.stack(np.nonzero(x)) if x.ndim else np.zeros((0, 0), np.int64)
    out[:, : positions.shape[1]] = positions
    return [out]


def _suppresses(a: Array, b: Array, center: bool, threshold: np.float32) -> bool:
    """Whether boxes ``a`` and ``b`` overlap by more than ``threshold`` IoU, in f32
    and in ONNX's reference order (``tg.nms_keep``)."""
    half = np.float32(2)
    if center:
        ax0, ax1 = a[0] - a[2] / half, a[0] + a[2] / half
        bx0, bx1 = b[0] - b[2] / half, b[0] + b[2] / half
        ay0, ay1 = a[1] - a[3] / half, a[1] + a[3] / half
        by0, by1 = b[1] - b[3] / half, b[1] + b[3] / half
    else:
        ax0, ax1 = min(a[1], a[3]), max(a[1], a[3])
        bx0, bx1 = min(b[1], b[3]), max(b[1], b[3])
        ay0, ay1 = min(a[0], a[2]), max(a[0], a[2])
        by0, by1 = min(b[0], b[2]), max(b[0], b[2])
    ix0, ix1 = max(ax0, bx0), min(ax1, bx1)
    iy0, iy1 = max(ay0, by0), min(ay1, by1)
    if ix1 <= ix0 or iy1 <= iy0:
        return False
    inter = (ix1 - ix0) * (iy1 - iy0)
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    if inter <= 0 or area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return bool(inter / union > threshold)


def _nms_keep(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, NmsKeepOp)
    boxes, scores, order = (np.asarray(x) for x in xs)
    iou = np.float32(op.iou_threshold.value.data)
    score = op.score_threshold
    limit = op.max_per_class.value.data
    keep = np.zeros(scores.shape, bool)
    for b, c in np.ndindex(*scores.shape[:2]):
        kept: list[int] = []
        for r, i in enumerate(order[b, c]):
            if len(kept) >= limit:
                break
            if score is not None and not scores[b, c, i] > np.float32(score.value.data):
                continue
            box = boxes[b, i]
            if any(_suppresses(box, boxes[b, j], op.is_center(), iou) for j in kept):
                continue
            kept.append(int(i))
            keep[b, c, r] = True
    return [keep]


def _matmul(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, MatmulOp)
    n = op.rhs_matrix_shape()[-1]
    rhs = unpack_panels(xs[1], n) if op.panels else xs[1]
    return [np.matmul(xs[0], rhs)]


def _matmul_bf16(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, MatmulBf16Op)
    return [matmul_bf16_reference(op, xs[0], xs[1])]


def _matmul_blockq(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, MatmulBlockqOp)
    return [matmul_blockq_reference(op, xs[0], xs[1])]


def _matmul_integer(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, MatmulIntegerOp)
    return [matmul_integer_reference(op, xs[0], xs[1])]


def _windows(
    x: Array,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
    out_hw: tuple[int, int],
) -> Array:
    """``(N, C, OH, OW, KH, KW)``: the (already padded) input under every window."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    w = sliding_window_view(x, span, axis=(2, 3))
    w = w[:, :, ::sh, ::sw, ::dh, ::dw]
    return w[:, :, : out_hw[0], : out_hw[1]]  # type: ignore[no-any-return]


def _pad(x: Array, padding: tuple[int, ...], value: float) -> Array:
    top, left, bottom, right = padding
    widths = ((0, 0), (0, 0), (top, bottom), (left, right))
    return np.pad(x, widths, constant_values=value)


def is_nhwc(op: Operation) -> bool:
    """True when a conv2d, pool or batch_norm carries ``layout = "NHWC"``
    (channels last); without the property the layout is NCHW."""
    layout = op.properties.get("layout")
    return isinstance(layout, StringAttr) and layout.data == "NHWC"


def _to_nchw(x: Array) -> Array:
    return np.transpose(x, (0, 3, 1, 2))


def _from_nchw(x: Array) -> Array:
    return np.transpose(x, (0, 2, 3, 1))


def _conv2d(op: Operation, xs: list[Array]) -> list[Array]:
    """Grouped, strided, dilated cross-correlation as one einsum over the windows.
    NHWC input and HWIO weight are transposed to NCHW and FCHW and back."""
    assert isinstance(op, Conv2dOp)
    nhwc = is_nhwc(op)
    x = _to_nchw(xs[0]) if nhwc else xs[0]
    w = np.transpose(xs[1], (3, 2, 0, 1)) if nhwc else xs[1]
    out = shape_of(op.result.type)
    n, oh, ow = (out[0], out[1], out[2]) if nhwc else (out[0], out[2], out[3])
    groups = op.groups.value.data
    f, cg, kh, kw = w.shape
    windows = _windows(
        _pad(x, ints(op.padding), 0.0),
        (kh, kw),
        ints(op.strides),
        ints(op.dilation),
        (oh, ow),
    )
    windows = windows.reshape(n, groups, cg, oh, ow, kh, kw)
    weight = w.reshape(groups, f // groups, cg, kh, kw)
    y = np.einsum("ngchwij,gfcij->ngfhw", windows, weight, optimize=True)
    y = y.reshape(n, f, oh, ow)
    if op.bias is not None:
        y = y + xs[2].reshape(1, f, 1, 1)
    return [_from_nchw(y) if nhwc else y]


# ---- reductions and nn -------------------------------------------------------------


def _reduce(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, ReduceOp)
    axes = op.reduced_axes()
    keep = op.keepdims is not None
    if isinstance(op, ReduceSumOp):
        return [np.sum(xs[0], axis=axes, keepdims=keep)]
    if isinstance(op, ReduceMeanOp):
        return [np.mean(xs[0], axis=axes, keepdims=keep)]
    if isinstance(op, ReduceProdOp):
        return [np.prod(xs[0], axis=axes, keepdims=keep, dtype=xs[0].dtype)]
    assert isinstance(op, ReduceMaxOp)
    return [np.max(xs[0], axis=axes, keepdims=keep)]


def _softmax(op: Operation, xs: list[Array]) -> list[Array]:
    """Stable softmax: ``exp(x - max) / sum(exp(x - max))`` along the axis."""
    assert isinstance(op, SoftmaxOp)
    axis = op.normalized_axis()
    e = np.exp(xs[0] - np.max(xs[0], axis=axis, keepdims=True))
    return [e / np.sum(e, axis=axis, keepdims=True)]


def _pool_out_hw(op: Operation, nhwc: bool) -> tuple[int, int]:
    out = shape_of(op.results[0].type)
    return (out[1], out[2]) if nhwc else (out[2], out[3])


def _max_pool2d(op: Operation, xs: list[Array]) -> list[Array]:
    """Padding is -inf, so it never wins (PyTorch's rule)."""
    assert isinstance(op, MaxPool2dOp)
    kernel, strides, padding = op.pool_geometry()
    nhwc = is_nhwc(op)
    x = _to_nchw(xs[0]) if nhwc else xs[0]
    oh, ow = _pool_out_hw(op, nhwc)
    padded = _pad(x, padding, -np.inf)
    windows = _windows(padded, kernel, strides, op.dilations(), (oh, ow))
    y = np.max(windows, axis=(4, 5))
    return [_from_nchw(y) if nhwc else y]


def _avg_pool2d(op: Operation, xs: list[Array]) -> list[Array]:
    """Window sums over zero padding, divided by ``kh * kw`` with
    ``count_include_pad``, else by the number of real (unpadded) elements."""
    assert isinstance(op, AvgPool2dOp)
    kernel, strides, padding = op.pool_geometry()
    nhwc = is_nhwc(op)
    x = _to_nchw(xs[0]) if nhwc else xs[0]
    oh, ow = _pool_out_hw(op, nhwc)
    dilation = op.dilations()
    sums = np.sum(
        _windows(_pad(x, padding, 0.0), kernel, strides, dilation, (oh, ow)),
        axis=(4, 5),
    )
    if op.count_include_pad is not None:
        y = sums / float(kernel[0] * kernel[1])
    else:
        ones = np.ones((1, 1, *x.shape[2:]), np.float64)
        counts = np.sum(
            _windows(_pad(ones, padding, 0.0), kernel, strides, dilation, (oh, ow)),
            axis=(4, 5),
        )
        y = sums / counts
    return [_from_nchw(y) if nhwc else y]


def batch_norm_channel_dim(op: BatchNormOp) -> int:
    """The channel dimension of a batch_norm: 1, or the last one for NHWC."""
    rank = len(shape_of(op.input.type))
    return rank - 1 if is_nhwc(op) else 1


def _batch_norm(op: Operation, xs: list[Array]) -> list[Array]:
    """``scale * (x - mean) / sqrt(var + epsilon) + bias`` per channel: dimension 1
    (NCHW), or the last dimension with ``layout = "NHWC"``."""
    assert isinstance(op, BatchNormOp)
    x, scale, bias, mean, var = xs
    channel = [1] * x.ndim
    channel[batch_norm_channel_dim(op)] = scale.shape[0]
    eps = float(np.float32(op.epsilon.value.data))
    centered = x - mean.reshape(channel)
    std = np.sqrt(var.reshape(channel) + eps)
    return [scale.reshape(channel) * centered / std + bias.reshape(channel)]


def _winograd_input(op: Operation, xs: list[Array]) -> list[Array]:
    """Every (m+2)x(m+2) tile ``d`` (stride m) of each channel as ``BT d BT^T``,
    tile-major ``[T, (m+2)^2, C]``."""
    assert isinstance(op, WinogradInputOp)
    th, tw = op.tile_counts()
    tr = transform(op.tile_size())
    x = xs[0]
    rows = np.arange(th)[:, None] * tr.size + np.arange(tr.input_tile)  # [TH, r]
    cols = np.arange(tw)[:, None] * tr.size + np.arange(tr.input_tile)  # [TW, r]
    d = x[:, rows[:, :, None, None], cols[None, None, :, :], :]  # n,th,i,tw,j,c
    v = np.einsum("ai,ntiujc,bj->ntuabc", tr.bt, d, tr.bt)
    return [v.reshape(-1, tr.points, x.shape[3]).astype(x.dtype)]


def _winograd_output(op: Operation, xs: list[Array]) -> list[Array]:
    """Every tile ``m`` of each output channel as ``AT m AT^T`` (+ bias), placed at
    its m x m pixels."""
    assert isinstance(op, WinogradOutputOp)
    n, th, tw = op.tile_counts()
    tr = transform(op.tile_size())
    r = tr.input_tile
    m = xs[0].reshape(r, r, n, th, tw, -1)
    y = np.einsum("ia,abntuf,jb->ntiujf", tr.at, m, tr.at)
    y = y.reshape(n, tr.size * th, tr.size * tw, m.shape[-1])
    if len(xs) > 1:
        y = y + xs[1]
    return [y.astype(xs[0].dtype)]


def _fused(op: Operation, xs: list[Array]) -> list[Array]:
    assert isinstance(op, FusedOp)
    block = op.body.block
    env: dict[SSAValue, Array] = dict(zip(block.args, xs, strict=True))
    return _run_block(block.ops, env, YieldOp)


def _custom(op: Operation, xs: list[Array]) -> list[Array]:
    """A ``tg.custom`` is its body (the forward), run op by op."""
    assert isinstance(op, CustomOp)
    block = op.body.block
    env: dict[SSAValue, Array] = dict(zip(block.args, xs, strict=True))
    return _run_block(block.ops, env, CustomYieldOp)


_EVALUATORS: dict[type[Operation], Evaluator] = {
    ConstantOp: _constant,
    **{cls: _binary for cls in _BINARY},
    **{cls: _unary for cls in _UNARY},
    SelectOp: _select,
    CastOp: _cast,
    TransposeOp: _transpose,
    ViewOp: _reshape,
    ReshapeOp: _reshape,
    ContiguousOp: _reshape,
    BroadcastOp: _broadcast,
    PadOp: _pad_op,
    ConcatOp: _concat,
    SliceOp: _slice,
    GatherOp: _gather,
    TakeOp: _take,
    GatherElementsOp: _gather_elements,
    GridSampleOp: _grid_sample,
    ScatterElementsOp: _scatter_elements,
    ScatterNdOp: _scatter_nd,
    GatherNdOp: _gather_nd,
    MatmulOp: _matmul,
    MatmulBf16Op: _matmul_bf16,
    MatmulBlockqOp: _matmul_blockq,
    MatmulIntegerOp: _matmul_integer,
    Conv2dOp: _conv2d,
    ReduceSumOp: _reduce,
    ReduceMeanOp: _reduce,
    ReduceMaxOp: _reduce,
    ReduceProdOp: _reduce,
    SoftmaxOp: _softmax,
    MaxPool2dOp: _max_pool2d,
    AvgPool2dOp: _avg_pool2d,
    BatchNormOp: _batch_norm,
    FusedOp: _fused,
    CustomOp: _custom,
    WinogradInputOp: _winograd_input,
    WinogradOutputOp: _winograd_output,
    CumsumOp: _cumulative,
    CumprodOp: _cumulative,
    TopKIndicesOp: _top_k_indices,
    NonzeroIndicesOp: _nonzero_indices,
    NmsKeepOp: _nms_keep,
}
"""Every tg op's NumPy semantics, in one table: they share this module's precision
rule and helpers, and the oracle stays apart from the op definitions. The
terminators (``tg.yield``, ``tg.custom_yield``) are read by their parent's
evaluator; ``tests/dialects/tg/test_op_facts.py`` checks every other op is here."""


def has_reference(op: Operation) -> bool:
    """True when ``evaluate`` knows ``op`` (for a ``tg.fused`` or a
    ``tg.custom``: every op of its body)."""
    if type(op) not in _EVALUATORS:
        return False
    if isinstance(op, FusedOp):
        body = [o for o in op.body.block.ops if not isinstance(o, YieldOp)]
        return all(has_reference(o) for o in body)
    if isinstance(op, CustomOp):
        forward = [o for o in op.body.block.ops if not isinstance(o, CustomYieldOp)]
        return all(has_reference(o) for o in forward)
    return True
