"""Import-time constant evaluation: NumPy folders, and ``Shape``/``Size``.

tg has static shapes and float-only compute ops, so the integer shape computations
that exporters emit (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``,
``ConstantOfShape``, arithmetic on shapes) must never reach it. They are evaluated
here, at import, while the importer still holds their values as NumPy arrays:

- ``Shape`` and ``Size`` turn the static shape of any input (a runtime tensor too)
  into an int64 array;
- a node whose inputs are all arrays (initializers, ``Constant`` outputs, earlier
  folded results) is evaluated by its folder below, with ONNX semantics and any dtype
  (integer ``Div`` truncates toward zero, ``Slice`` clamps like ONNX, ...); its
  outputs stay arrays, so a ``Reshape`` target or ``axes`` input computed from shapes
  is a constant like an initializer.

Ops that have a folder but no converter (``CONSTANT_ONLY_OPS`` in ``__init__``:
``ConstantOfShape``, ``Range``, ...) are supported only on
constant inputs so far. They pass the up-front scan for unsupported ops (which inputs
fold is known only during the walk), and a runtime tensor input is an
``OnnxImportError`` naming the node and the op, never a silent mis-import.

Every folder is checked against ``onnx.reference.ReferenceEvaluator`` in
``tests/frontend/onnx/test_fold.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from qidao.frontend.builder import Value
from qidao.frontend.limits import check_tensor
from qidao.frontend.onnx.importer import Array, Importer, converter, folder
from qidao.frontend.onnx.node import Node
from qidao.frontend.onnx.shape import onnx_slice, reshape_target

# ---- operand helpers --------------------------------------------------------------


def _arg(node: Node, args: list[Array | None], index: int, what: str) -> Array:
    """Input #``index``, which the op requires."""
    value = args[index] if index < len(args) else None
    if value is None:
        raise node.error(f"the {what} input (#{index}) is missing")
    return value


def _optional(args: list[Array | None], index: int) -> Array | None:
    return args[index] if index < len(args) else None


def _ints(array: Array) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


def _axis(node: Node, axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative."""
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _axes(
    node: Node, args: list[Array | None], index: int, input_from: int
) -> list[int] | None:
    """``axes``: an attribute before opset ``input_from``, then input #``index``.
    None means "not given"."""
    if node.opset < input_from:
        axes = node.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    value = _optional(args, index)
    return None if value is None else _ints(value)


def _check_result(node: Node, shape: Sequence[int], dtype: Any) -> None:
    """``check_tensor`` on the result a folder is about to make, before NumPy
    allocates it: a broadcast, a gather or a concatenation of constants within the
    limit can make one beyond it."""
    check_tensor(node.label, shape, np.dtype(dtype).itemsize)


def _broadcast(node: Node, shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise node.error(
            f"input shapes {[list(s) for s in shapes]} do not broadcast"
        ) from None


def _normalized_axes(node: Node, axes: Sequence[int], rank: int) -> list[int]:
    normalized = [_axis(node, a, rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {list(axes)} repeat an axis")
    return normalized


# ---- Shape and Size: from the static shape of any input ---------------------------


def _shape_of(im: Importer, node: Node) -> tuple[int, ...]:
    names = node.inputs
    if not names or not names[0]:
        raise node.error("input #0 is missing")
    if names[0] not in im.env:
        raise node.error(f"tensor '{names[0]}' is used before it is defined")
    return tuple(im.env[names[0]].shape)


@converter("Shape")
def _shape(im: Importer, node: Node) -> list[Value | Array]:
    """The static shape as int64; ``start``/``end`` (opset 15) slice it, clamped."""
    shape = _shape_of(im, node)
    start, end = int(node.attr("start", 0)), node.attr("end")
    sliced = shape[start:] if end is None else shape[start : int(end)]
    return [np.array(sliced, dtype=np.int64)]


@converter("Size")
def _size(im: Importer, node: Node) -> list[Value | Array]:
    return [np.array(int(np.prod(_shape_of(im, node))), dtype=np.int64)]


@folder("ConstantOfShape")
def _constant_of_shape(node: Node, args: list[Array | None]) -> list[Array]:
    """A tensor of the given shape filled with ``value`` (default float32 0.0)."""
    shape = _ints(_arg(node, args, 0, "shape"))
    if any(d < 0 for d in shape):
        raise node.error(f"shape {shape} has a negative dimension")
    value = node.attr("value")
    fill = np.zeros(1, np.float32) if value is None else numpy_helper.to_array(value)
    if fill.size != 1:
        raise node.error(f"value must have one element, got shape {list(fill.shape)}")
    check_tensor(node.label, shape, fill.dtype.itemsize)
    return [np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)]


# ---- elementwise ------------------------------------------------------------------


def _div(a: Array, b: Array) -> Array:
    """ONNX ``Div``: integer division truncates toward zero (C-style)."""
    if not np.issubdtype(a.dtype, np.integer):
        return np.asarray(np.divide(a, b))
    if np.any(b == 0):
        raise ValueError("integer division by zero")
    q = np.floor_divide(a, b)
    inexact = (np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))
    return np.asarray(q + inexact.astype(q.dtype))


def _mod(a: Array, b: Array) -> Array:
    """ONNX ``Mod`` with ``fmod=0``: the remainder takes the divisor's sign (NumPy
    ``mod``); ``fmod=1`` is handled by the folder (C's ``fmod``)."""
    if np.any(b == 0) and np.issubdtype(b.dtype, np.integer):
        raise ValueError("integer modulo by zero")
    return np.asarray(np.mod(a, b))


_BINARY: dict[str, Callable[[Array, Array], Any]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": _div,
    "Mod": _mod,
    "Pow": np.power,
    "Max": np.maximum,
    "Min": np.minimum,
    "Equal": np.equal,
    "Less": np.less,
    "LessOrEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
}
_VARIADIC = ("Max", "Min")
_COMPARISON = (
    "Equal",
    "Less",
    "LessOrEqual",
    "Greater",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
)


@folder(*_BINARY)
def _binary(node: Node, args: list[Array | None]) -> list[Array]:
    """Broadcasting binary ops; ``Max``/``Min`` fold pairwise over all inputs."""
    fn = _BINARY[node.op_type]
    if node.op_type == "Mod" and node.attr("fmod", 0):
        fn = np.fmod
    operands = [a for a in args if a is not None]
    needed = 1 if node.op_type in _VARIADIC else 2
    if len(operands) < needed:
        raise node.error(f"needs at least {needed} input(s), got {len(operands)}")
    widest = np.result_type(*operands)
    _check_result(node, _broadcast(node, [o.shape for o in operands]), widest)
    result = operands[0]
    for operand in operands[1:]:
        with np.errstate(divide="ignore", invalid="ignore"):
            result = np.asarray(fn(result, operand))
    if node.op_type in _COMPARISON:
        return [result]
    return [result.astype(operands[0].dtype, copy=False)]


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return np.asarray(1 / (1 + np.exp(-x)))


_UNARY: dict[str, Callable[[Array], Any]] = {
    "Neg": np.negative,
    "Abs": np.abs,
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Tanh": np.tanh,
    "Sin": np.sin,
    "Cos": np.cos,
    "Sigmoid": _sigmoid,
    "Relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "Not": np.logical_not,
    "Sign": np.sign,
    "Identity": lambda x: x,
}


@folder(*_UNARY)
def _unary(node: Node, args: list[Array | None]) -> list[Array]:
    x = _arg(node, args, 0, "X")
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.asarray(_UNARY[node.op_type](x))
    return [y.astype(x.dtype, copy=False)]


@folder("Where")
def _where(node: Node, args: list[Array | None]) -> list[Array]:
    condition = _arg(node, args, 0, "condition")
    x, y = _arg(node, args, 1, "X"), _arg(node, args, 2, "Y")
    shape = _broadcast(node, [condition.shape, x.shape, y.shape])
    _check_result(node, shape, np.result_type(x, y))
    return [np.where(condition.astype(bool), x, y)]


_FLOAT8_TYPES = (
    TensorProto.FLOAT8E4M3FN,
    TensorProto.FLOAT8E4M3FNUZ,
    TensorProto.FLOAT8E5M2,
    TensorProto.FLOAT8E5M2FNUZ,
)

_CAST_TYPES = {
    TensorProto.FLOAT,
    TensorProto.DOUBLE,
    TensorProto.FLOAT16,
    TensorProto.BOOL,
    TensorProto.INT8,
    TensorProto.INT16,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.UINT8,
    TensorProto.UINT16,
    TensorProto.UINT32,
    TensorProto.UINT64,
    *_FLOAT8_TYPES,
    TensorProto.BFLOAT16,
    TensorProto.FLOAT4E2M1,
    TensorProto.INT4,
    TensorProto.UINT4,
    TensorProto.INT2,
    TensorProto.UINT2,
}


@folder("Cast")
def _cast(node: Node, args: list[Array | None]) -> list[Array]:
    """NumPy ``astype`` (``ml_dtypes``' for bfloat16, float8, float4 and 4/2-bit
    integers): float to integer truncates toward zero; to a float8 with
    ``saturate`` (the default), clamped to its largest finite value first."""
    x = _arg(node, args, 0, "input")
    to = int(node.attr("to", 0))
    if to not in _CAST_TYPES:
        name = helper.tensor_dtype_to_string(to) if to else "no type"
        raise node.error(
            f"Cast to {name} is not supported; only bool, float16/32/64, bfloat16, "
            "float8, float4 and (unsigned) integer types are"
        )
    dtype = helper.tensor_dtype_to_np_dtype(to)
    _check_result(node, x.shape, dtype)
    if to in _FLOAT8_TYPES and node.attr("saturate", 1):
        import ml_dtypes  # here: importing it takes about 0.6 s

        limit = ml_dtypes.finfo(dtype).max
        with np.errstate(invalid="ignore"):
            return [np.clip(x.astype(np.float64), -limit, limit).astype(dtype)]
    # NaN or an infinity to an integer is undefined in ONNX (NumPy gives the
    # type's minimum, quietly here): T5's position buckets cast log(0) and mask it
    with np.errstate(invalid="ignore"):
        return [x.astype(dtype)]


# ---- shape and indexing -----------------------------------------------------------


@folder("Reshape")
def _reshape(node: Node, args: list[Array | None]) -> list[Array]:
    x = _arg(node, args, 0, "data")
    target = _ints(_arg(node, args, 1, "shape"))
    return [x.reshape(reshape_target(node, x.shape, target))]


@folder("Transpose")
def _transpose(node: Node, args: list[Array | None]) -> list[Array]:
    x = _arg(node, args, 0, "data")
    perm = node.attr("perm")
    axes = list(range(x.ndim))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(axes) != list(range(x.ndim)):
        raise node.error(f"perm {axes} is not a permutation of {x.ndim} axes")
    return [np.transpose(x, axes)]


@folder("Flatten")
def _flatten(node: Node, args: list[Array | None]) -> list[Array]:
    x = _arg(node, args, 0, "input")
    axis = int(node.attr("axis", 1))
    if not -x.ndim <= axis <= x.ndim:
        raise node.error(f"axis {axis} is out of range for rank {x.ndim}")
    axis %= x.ndim + 1
    return [x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))]


@folder("Gather")
def _gather(node: Node, args: list[Array | None]) -> list[Array]:
    data = _arg(node, args, 0, "data")
    indices = _arg(node, args, 1, "indices")
    if data.ndim == 0:
        raise node.error("cannot gather from a rank-0 tensor")
    axis = _axis(node, int(node.attr("axis", 0)), data.ndim)
    n = data.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise node.error(
            f"indices {_ints(indices)} are out of range for axis {axis} of size {n}"
        )
    shape = [*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :]]
    _check_result(node, shape, data.dtype)
    return [np.take(data, indices.astype(np.int64), axis=axis)]


@folder("Concat")
def _concat(node: Node, args: list[Array | None]) -> list[Array]:
    operands = [a for a in args if a is not None]
    if not operands:
        raise node.error("needs at least one input")
    if "axis" not in node.attrs:
        raise node.error("the axis attribute is required")
    axis = _axis(node, int(node.attr("axis")), max(operands[0].ndim, 1))
    if all(o.ndim == operands[0].ndim for o in operands) and operands[0].ndim:
        shape = list(operands[0].shape)
        shape[axis] = sum(o.shape[axis] for o in operands)
        _check_result(node, shape, np.result_type(*operands))
    return [np.concatenate(operands, axis=axis)]


@folder("Unsqueeze")
def _unsqueeze(node: Node, args: list[Array | None]) -> list[Array]:
    """``axes`` is an attribute before opset 13, input #1 from 13; it indexes the
    output."""
    x = _arg(node, args, 0, "data")
    axes = _axes(node, args, 1, 13)
    if axes is None:
        raise node.error("the axes are required")
    axes = _normalized_axes(node, axes, x.ndim + len(axes))
    return [np.expand_dims(x, tuple(axes))]


@folder("Squeeze")
def _squeeze(node: Node, args: list[Array | None]) -> list[Array]:
    """``axes`` is an attribute before opset 13, input #1 from 13; without axes every
    dimension of size 1 goes."""
    x = _arg(node, args, 0, "data")
    axes = _axes(node, args, 1, 13)
    if axes is None:
        axes = [k for k, d in enumerate(x.shape) if d == 1]
    axes = _normalized_axes(node, axes, x.ndim)
    wide = [a for a in axes if x.shape[a] != 1]
    if wide:
        raise node.error(
            f"cannot squeeze axes {wide} of shape {list(x.shape)}: their size is not 1"
        )
    return [np.squeeze(x, tuple(axes))]


@folder("Slice")
def _slice(node: Node, args: list[Array | None]) -> list[Array]:
    """``starts``/``ends``/``axes`` are attributes before opset 10, then inputs #1-#3,
    with ``steps`` (#4)."""
    x = _arg(node, args, 0, "data")
    if node.opset < 10:
        starts = [int(v) for v in node.attr("starts", [])]
        ends = [int(v) for v in node.attr("ends", [])]
        axes_attr = node.attr("axes")
        axes = None if axes_attr is None else [int(a) for a in axes_attr]
        steps = [1] * len(starts)
    else:
        starts = _ints(_arg(node, args, 1, "starts"))
        ends = _ints(_arg(node, args, 2, "ends"))
        axes_arg, steps_arg = _optional(args, 3), _optional(args, 4)
        axes = None if axes_arg is None else _ints(axes_arg)
        steps = [1] * len(starts) if steps_arg is None else _ints(steps_arg)
    if axes is None:
        axes = list(range(len(starts)))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error(
            f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must have "
            "the same length"
        )
    if 0 in steps:
        raise node.error(f"steps {steps} contain a 0")
    index = [slice(None)] * x.ndim
    for axis, start, end, step in zip(
        _normalized_axes(node, axes, x.ndim), starts, ends, steps, strict=True
    ):
        index[axis] = onnx_slice(start, end, step, x.shape[axis])
    return [x[tuple(index)]]


@folder("Expand")
def _expand(node: Node, args: list[Array | None]) -> list[Array]:
    """Broadcast to ``shape`` both ways: the result has the broadcast of the two."""
    x = _arg(node, args, 0, "input")
    shape = _ints(_arg(node, args, 1, "shape"))
    out = np.broadcast_shapes(x.shape, tuple(shape))
    check_tensor(node.label, out, x.dtype.itemsize)
    return [np.broadcast_to(x, out).copy()]


@folder("Range")
def _range(node: Node, args: list[Array | None]) -> list[Array]:
    """``start, start + delta, ...`` up to ``limit`` (excluded), in the input dtype."""
    start = _arg(node, args, 0, "start")
    limit, delta = _arg(node, args, 1, "limit"), _arg(node, args, 2, "delta")
    if start.size != 1 or limit.size != 1 or delta.size != 1:
        raise node.error("start, limit and delta must be scalars")
    if delta.item() == 0:
        raise node.error("delta must not be 0")
    count = max(math.ceil((limit.item() - start.item()) / delta.item()), 0)
    check_tensor(node.label, [count], start.dtype.itemsize)
    values = np.arange(start.item(), limit.item(), delta.item())
    return [values.astype(start.dtype)]


# ---- reductions -------------------------------------------------------------------

_REDUCE: dict[str, tuple[Callable[..., Any], int]] = {
    "ReduceSum": (np.sum, 13),
    "ReduceMean": (np.mean, 18),
    "ReduceMax": (np.max, 18),
    "ReduceMin": (np.min, 18),
    "ReduceProd": (np.prod, 18),
}


@folder(*_REDUCE)
def _reduce(node: Node, args: list[Array | None]) -> list[Array]:
    """``axes``: an attribute before the op's opset of change, then input #1; no axes
    reduce all of them, unless ``noop_with_empty_axes``."""
    fn, axes_input_from = _REDUCE[node.op_type]
    x = _arg(node, args, 0, "data")
    axes = _axes(node, args, 1, axes_input_from)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(x.ndim))
    axes = _normalized_axes(node, axes, max(x.ndim, 1)) if x.ndim else []
    y = np.asarray(fn(x, axis=tuple(axes), keepdims=keepdims))
    return [y.astype(x.dtype, copy=False)]
