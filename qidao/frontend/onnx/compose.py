"""Converters that are compositions of existing tg ops: no new tg op behind any of them.

Each converter builds the ONNX definition (cited in its docstring, with the opset
changes that matter) from the elementwise ops (arithmetic, ``exp log sqrt tanh
sigmoid relu abs pow``, comparisons and ``where``, ``cast``), the reductions,
``reshape``/``broadcast`` and ``pad``. A composition is exact (the same IEEE
operations as the ONNX reference, so the same rounding, NaN and infinities) or,
where it says so, within rounding of it; an attribute value it cannot compose
exactly is refused with a ``node.error`` that says why, never approximated. Float
compositions work on float32 and float64 alike (scalars take the tensor's dtype).

A building block recurs:

- ``_expm1(x)`` is ``exp(x) - 1`` without the cancellation near 0:
  ``tanh(x / 2) * (exp(x) + 1)``, accurate to a few ulp relative everywhere
  (qidao's ``tanh`` keeps relative accuracy near 0), -1 at -inf, inf at inf.

NaN: the ops built from ``max``/``min``/``relu`` propagate NaN as ONNX's reference
does; those the reference writes with ``np.where`` (``ThresholdedRelu``,
``Shrink``) use ``where`` too, so a NaN input gives what the reference gives.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from onnx import helper

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.load import DTYPES
from qidao.frontend.onnx.node import Node
from qidao.frontend.onnx.reduce import _reduce_axes, reduce_values


def _float(node: Node, name: str, default: float) -> float:
    return float(node.attr(name, default))


def _expm1(g: Graph, x: Value) -> Value:
    """``exp(x) - 1``, computed as ``tanh(x / 2) * (exp(x) + 1)``."""
    return g.tanh(x * 0.5) * (g.exp(x) + 1.0)


def _abs(g: Graph, x: Value) -> Value:
    """``|x|`` (``tg.abs``): NaN stays NaN, ``-0`` gives ``+0``."""
    return g.abs(x)


# ---- activations ------------------------------------------------------------------


@converter("LeakyRelu")
def _leaky_relu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x >= 0 else alpha * x`` (alpha default 0.01) as
    ``where(x < 0, x * alpha, x)``: with an infinite or NaN alpha, x >= 0 still
    gives x (the spec and ONNX Runtime; ``relu(x) + min(x, 0) * alpha`` gave
    ``0 * inf`` = NaN there)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 0.01)
    return [g.where(g.less(x, 0.0), x * alpha, x)]


@converter("PRelu")
def _prelu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x >= 0 else slope * x``, ``slope`` broadcasting to ``x`` (since opset 7),
    as ``where(x < 0, x * slope, x)`` (an infinite or NaN slope: see LeakyRelu)."""
    g, x, slope = im.graph, im.input(node, 0), im.input(node, 1)
    return [g.where(g.less(x, 0.0), x * slope, x)]


@converter("HardSigmoid")
def _hard_sigmoid(im: Importer, node: Node) -> list[Value | Array]:
    """``max(0, min(1, alpha * x + beta))`` (alpha 0.2, beta 0.5)."""
    g, x = im.graph, im.input(node, 0)
    alpha, beta = _float(node, "alpha", 0.2), _float(node, "beta", 0.5)
    return [g.minimum(g.relu(x * alpha + beta), 1.0)]


@converter("HardSwish")
def _hard_swish(im: Importer, node: Node) -> list[Value | Array]:
    """``x * HardSigmoid(x)`` with alpha 1/6, beta 0.5 (opset 14)."""
    g, x = im.graph, im.input(node, 0)
    return [x * g.minimum(g.relu(x * (1.0 / 6.0) + 0.5), 1.0)]


_INTEGRAL_FROM = {"float16": 2.0**10, "float32": 2.0**23, "float64": 2.0**52}
"""From this magnitude on every float of the type is an integer (its own floor)."""


def _floor(g: Graph, node: Node, x: Value) -> Value:
    """``floor(x)`` from a truncating cast: ``t = trunc(x)`` (a cast to an integer
    and back), one less where ``x < t`` (a negative non-integer); a zero result
    takes x's sign (``floor(-0.0) = -0.0``, ``floor(0.3) = +0``); from
    ``_INTEGRAL_FROM`` on, and for inf and NaN, ``x`` itself (never cast)."""
    if x.dtype not in _INTEGRAL_FROM:
        raise node.error(f"expects a float tensor, got {x.dtype}")
    ints = "int64" if x.dtype == "float64" else "int32"
    t = g.cast(g.cast(x, ints), x.dtype)
    r = t - g.cast(g.less(x, t), x.dtype)
    r = g.where(g.equal(r, 0.0), x * 0.0, r)
    return g.where(g.less(g.abs(x), _INTEGRAL_FROM[x.dtype]), r, x)


@converter("Floor")
def _floor_op(im: Importer, node: Node) -> list[Value | Array]:
    """``floor(x)``, exact for every float (``_floor``)."""
    return [_floor(im.graph, node, im.input(node, 0))]


@converter("Ceil")
def _ceil(im: Importer, node: Node) -> list[Value | Array]:
    """``ceil(x) = -floor(-x)`` (``ceil(-0.3) = -0.0``, as IEEE's)."""
    g, x = im.graph, im.input(node, 0)
    return [g.neg(_floor(g, node, g.neg(x)))]


@converter("Round")
def _round(im: Importer, node: Node) -> list[Value | Array]:
    """Round half to even (``np.round``), exact for every float: ``f = floor(x)``
    (``_floor``), ``d = x - f`` (exact), one more where ``d > 0.5`` or ``d == 0.5``
    and ``f`` is odd; a zero result takes x's sign (``round(-0.3) = -0.0``). From
    ``_INTEGRAL_FROM`` on ``d`` is 0, and inf and NaN give themselves (``d`` is NaN,
    every comparison false)."""
    g, x = im.graph, im.input(node, 0)
    f = _floor(g, node, x)
    d = x - f
    odd = g.equal(f - _floor(g, node, f * 0.5) * 2.0, 1.0)
    up = g.logical_or(g.greater(d, 0.5), g.logical_and(g.equal(d, 0.5), odd))
    r = f + g.cast(up, x.dtype)
    return [g.where(g.equal(r, 0.0), x * 0.0, r)]


@converter("Elu")
def _elu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x > 0 else alpha * (exp(x) - 1)`` (alpha 1.0) as
    ``relu(x) + alpha * expm1(min(x, 0))``; the second term is 0 for ``x >= 0``."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    return [g.relu(x) + _expm1(g, g.minimum(x, 0.0)) * alpha]


@converter("Selu")
def _selu(im: Importer, node: Node) -> list[Value | Array]:
    """``gamma * (x if x > 0 else alpha * exp(x) - alpha)`` (alpha 1.67326...,
    gamma 1.0507...) as ``gamma * (relu(x) + alpha * expm1(min(x, 0)))``."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.67326319217681884765625)
    gamma = _float(node, "gamma", 1.05070102214813232421875)
    return [(g.relu(x) + _expm1(g, g.minimum(x, 0.0)) * alpha) * gamma]


@converter("Celu")
def _celu(im: Importer, node: Node) -> list[Value | Array]:
    """``max(0, x) + min(0, alpha * expm1(x / alpha))`` (alpha 1.0, opset 12)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    if alpha == 0.0:
        raise node.error("alpha must not be 0 (the definition divides by it)")
    return [g.relu(x) + g.minimum(_expm1(g, x / alpha) * alpha, 0.0)]


@converter("Softplus")
def _softplus(im: Importer, node: Node) -> list[Value | Array]:
    """``log(exp(x) + 1)``, computed as ``relu(x) + log(1 + exp(-|x|))`` so that a
    large ``x`` does not overflow (the reference uses ``np.logaddexp(0, x)``).
    Without ``log1p``, ``1 + exp(-|x|)`` rounds: the absolute error stays below
    2^-24 (6e-8), which is the whole result for ``x`` < -17."""
    g, x = im.graph, im.input(node, 0)
    return [g.relu(x) + g.log(g.exp(g.neg(_abs(g, x))) + 1.0)]


@converter("Softsign")
def _softsign(im: Importer, node: Node) -> list[Value | Array]:
    """``x / (1 + |x|)``."""
    g, x = im.graph, im.input(node, 0)
    return [x / (_abs(g, x) + 1.0)]


@converter("Swish")
def _swish(im: Importer, node: Node) -> list[Value | Array]:
    """``x * sigmoid(alpha * x)`` (alpha 1.0, opset 24)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    return [x * g.sigmoid(x if alpha == 1.0 else x * alpha)]


@converter("ThresholdedRelu")
def _thresholded_relu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x > alpha else 0`` (alpha 1.0), as the reference's ``np.where`` (a
    NaN input gives 0)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    return [g.where(g.greater(x, alpha), x, 0.0)]


@converter("Shrink")
def _shrink(im: Importer, node: Node) -> list[Value | Array]:
    """``x + bias if x < -lambd``, ``x - bias if x > lambd``, else 0 (lambd 0.5,
    bias 0), as the reference's ``np.where`` (a NaN input gives 0)."""
    g, x = im.graph, im.input(node, 0)
    lambd, bias = _float(node, "lambd", 0.5), _float(node, "bias", 0.0)
    below = g.where(g.less(x, -lambd), x + bias, 0.0)
    return [g.where(g.greater(x, lambd), x - bias, below)]


# ---- arithmetic -------------------------------------------------------------------


@converter("Abs")
def _abs_op(im: Importer, node: Node) -> list[Value | Array]:
    """``|x|`` (``tg.abs``; constant inputs fold in NumPy instead)."""
    return [_abs(im.graph, im.input(node, 0))]


@converter("Reciprocal")
def _reciprocal(im: Importer, node: Node) -> list[Value | Array]:
    """``1 / x``."""
    return [1.0 / im.input(node, 0)]


_FAST_EXPONENTS = (0.0, 0.5, 1.0, 2.0, 3.0, -1.0)


@converter("Pow")
def _pow(im: Importer, node: Node) -> list[Value | Array]:
    """``x ** y`` (the reference's ``np.power(x, y).astype(x.dtype)``; ``y`` may
    have another dtype than ``x``). A float ``x`` with a constant ``y`` whose
    elements are all one of 0, 0.5, 1, 2, 3 or -1 is ``1``, ``sqrt``, ``x``,
    ``x*x``, ``x*x*x``, ``1/x`` (the last two within rounding; ``sqrt(-inf)`` is NaN,
    as NumPy's ``power(-inf, 0.5)``); any other float case is ``tg.pow`` with ``y``
    cast to ``x``'s dtype (float16 computes in float32, rounded once). An integer
    ``x`` computes in float64 and truncates back (exact while the powers stay below
    2^53)."""
    g, x = im.graph, im.input(node, 0)
    name = node.inputs[1] if len(node.inputs) > 1 else ""
    exponent = im.env.get(name) if name else None
    if exponent is None:
        raise node.error("the exponent input (#1) is missing")
    floats = ("float16", "float32", "float64")
    if not isinstance(exponent, Value) and x.dtype in floats:
        fast = _pow_by_constant(g, x, exponent)
        if fast is not None:
            return [fast]
    y = im.value(name)
    if x.dtype in floats:
        return [g.pow(x, y if y.dtype == x.dtype else g.cast(y, x.dtype))]
    if x.dtype == "bool":
        raise node.error(f"Pow of a {x.dtype} base is not supported")
    wide = g.pow(
        g.cast(x, "float64"), y if y.dtype == "float64" else g.cast(y, "float64")
    )
    return [g.cast(wide, x.dtype)]


def _pow_by_constant(g: Graph, x: Value, exponent: Array) -> Value | Array | None:
    """``x ** e`` for a constant ``e`` whose elements are all one of
    ``_FAST_EXPONENTS``, without ``pow``; None for any other ``e``."""
    values = np.unique(np.asarray(exponent, dtype=np.float64))
    if values.size != 1 or float(values[0]) not in _FAST_EXPONENTS:
        return None
    shape = np.broadcast_shapes(x.shape, np.shape(exponent))
    if shape != x.shape:
        x = g.broadcast(x, shape)
    e = float(values[0])
    if e == 0.0:  # pow(x, 0) is 1, even for NaN
        return np.ones(shape, dtype=x.dtype)
    if e == 0.5:
        return g.sqrt(x)
    if e == 1.0:
        return x
    if e == 2.0:
        return x * x
    if e == 3.0:
        return x * x * x
    return 1.0 / x


@converter("Clip")
def _clip(im: Importer, node: Node) -> list[Value | Array]:
    """``min(max(x, lo), hi)``, as NumPy ``clip`` (lo > hi gives hi). ``min``/``max``
    are attributes before opset 11, optional scalar inputs #1/#2 from 11 (runtime
    tensors too)."""
    g, x = im.graph, im.input(node, 0)
    lo: Value | float | None
    hi: Value | float | None
    if node.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
    else:
        lo, hi = im.optional_input(node, 1), im.optional_input(node, 2)
    y = x
    if lo is not None:
        y = g.maximum(y, lo if isinstance(lo, Value) else float(lo))
    if hi is not None:
        y = g.minimum(y, hi if isinstance(hi, Value) else float(hi))
    return [y]


def _variadic(im: Importer, node: Node) -> list[Value]:
    operands = [im.value(name) for name in node.inputs if name]
    if not operands:
        raise node.error("needs at least one input")
    return operands


@converter("Sum")
def _sum(im: Importer, node: Node) -> list[Value | Array]:
    """The broadcasting sum of all inputs, added left to right."""
    operands = _variadic(im, node)
    result = operands[0]
    for operand in operands[1:]:
        result = result + operand
    return [result]


@converter("Mean")
def _mean(im: Importer, node: Node) -> list[Value | Array]:
    """The broadcasting sum of all inputs, added left to right, over their count."""
    operands = _variadic(im, node)
    result = operands[0]
    for operand in operands[1:]:
        result = result + operand
    return [result if len(operands) == 1 else result / float(len(operands))]


# ---- identities -------------------------------------------------------------------


@converter("Dropout")
def _dropout(im: Importer, node: Node) -> list[Value | Array]:
    """Inference: the input unchanged, and the ``mask`` output (if asked for) all
    true. ``training_mode`` (input #2, opset 12) must be a constant false (or the
    ratio 0)."""
    outputs = [str(o) for o in node.proto.output]
    names = node.inputs
    if node.opset >= 12 and len(names) > 2 and names[2]:
        training = bool(np.any(im.const(node, names[2], "training_mode")))
        ratio = 0.5
        if training and len(names) > 1 and names[1]:  # inference ignores the ratio
            ratio = float(np.asarray(im.const(node, names[1], "ratio")).reshape(-1)[0])
        if training and ratio != 0.0:
            raise node.error(
                "training_mode=true is not supported (random dropout); only "
                "inference, where the output is the input"
            )
    x = im.input(node, 0)
    if len(outputs) > 1 and outputs[1]:
        return [x, np.ones(x.shape, np.bool_)]
    return [x]


def _cast_value(im: Importer, node: Node, x: Value, target: str) -> Value:
    """``x.astype(target)`` as ``tg.cast`` (nothing for its own dtype); a dtype tg
    does not have is refused, named."""
    if target not in DTYPES.values():
        raise node.error(
            f"Cast of a runtime {x.dtype} tensor to {target} is not supported (only "
            f"to {', '.join(DTYPES.values())})"
        )
    return x if x.dtype == target else im.graph.cast(x, target)


@converter("Cast")
def _cast(im: Importer, node: Node) -> list[Value | Array]:
    """A runtime tensor, as NumPy's ``astype`` (``tg.cast``: float to integer
    truncates; NaN and out-of-range values have no defined result), to any dtype
    of ``load.DTYPES``; constant inputs fold in NumPy instead."""
    x = im.input(node, 0)
    to = int(node.attr("to", 0))
    target = DTYPES.get(to)
    if target is None:
        name = helper.tensor_dtype_to_string(to) if to else "no type"
        raise node.error(
            f"Cast of a runtime {x.dtype} tensor to {name} is not supported (only to "
            f"{', '.join(DTYPES.values())})"
        )
    return [_cast_value(im, node, x, target)]


@converter("CastLike")
def _cast_like(im: Importer, node: Node) -> list[Value | Array]:
    """Cast input #0 to the dtype of input #1 (opset 15). A constant is cast in
    NumPy (it stays a constant), a runtime tensor as ``Cast``."""
    names = node.inputs
    if len(names) < 2 or not names[0] or not names[1]:
        raise node.error("needs the input and the target_type inputs")
    for name in names[:2]:
        if name not in im.env:
            raise node.error(f"tensor '{name}' is used before it is defined")
    source, like = im.env[names[0]], im.env[names[1]]
    target = np.dtype(like.dtype)
    if not isinstance(source, Value):
        if target.kind not in "biuf":
            raise node.error(f"casting to {target} is not supported")
        return [source.astype(target)]
    return [_cast_value(im, node, source, target.name)]


# ---- shapes -----------------------------------------------------------------------


def _normalized(node: Node, axes: list[int], rank: int) -> list[int]:
    for a in axes:
        if not -rank <= a < rank:
            raise node.error(f"axis {a} is out of range for rank {rank}")
    normalized = [a % rank for a in axes]
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {axes} repeat an axis")
    return normalized


@converter("Squeeze")
def _squeeze(im: Importer, node: Node) -> list[Value | Array]:
    """Drop size-1 dimensions (a reshape): ``axes`` is an attribute before opset 13,
    input #1 from 13; without it every size-1 dimension goes."""
    x = im.input(node, 0)
    axes = _reduce_axes(im, node, 13)
    if axes is None:
        axes = [k for k, d in enumerate(x.shape) if d == 1]
    axes = _normalized(node, axes, x.rank)
    wide = [a for a in axes if x.shape[a] != 1]
    if wide:
        raise node.error(
            f"cannot squeeze axes {wide} of shape {list(x.shape)}: their size is not 1"
        )
    shape = [d for k, d in enumerate(x.shape) if k not in axes]
    return [im.graph.reshape(x, shape)]


@converter("Unsqueeze")
def _unsqueeze(im: Importer, node: Node) -> list[Value | Array]:
    """Insert size-1 dimensions at ``axes`` of the output (a reshape): an attribute
    before opset 13, input #1 from 13."""
    x = im.input(node, 0)
    axes = _reduce_axes(im, node, 13)
    if axes is None:
        raise node.error("the axes are required")
    rank = x.rank + len(axes)
    inserted = set(_normalized(node, axes, rank))
    dims = iter(x.shape)
    shape = [1 if k in inserted else next(dims) for k in range(rank)]
    return [im.graph.reshape(x, shape)]


@converter("Expand")
def _expand(im: Importer, node: Node) -> list[Value | Array]:
    """Broadcast both ways (opset 8): the result has the broadcast of the input shape
    and the constant ``shape`` input (a stride-0 view)."""
    x = im.input(node, 0)
    target = im.const(node, node.inputs[1], "shape").reshape(-1)
    try:
        shape = np.broadcast_shapes(x.shape, tuple(int(d) for d in target))
    except ValueError:
        raise node.error(
            f"shape {target.tolist()} does not broadcast with the input shape "
            f"{list(x.shape)}"
        ) from None
    return [x if shape == x.shape else im.graph.broadcast(x, shape)]


_PAD_MODES: dict[str, Literal["edge", "reflect", "wrap"]] = {
    "edge": "edge",
    "reflect": "reflect",
    "wrap": "wrap",
}
"""Pad's modes that copy input elements, as ``np.pad`` names them (the same)."""


@converter("Pad")
def _pad(im: Importer, node: Node) -> list[Value | Array]:
    """Padding in mode ``constant``, ``edge``, ``reflect`` or ``wrap``. ``pads``
    ([begins..., ends...]) and ``value`` are attributes before opset 11; from 11
    ``pads`` is input #1 and ``constant_value`` input #2, and from 18 ``axes`` input
    #3. ``pads`` and ``axes`` must be constants; negative pads are refused.

    A finite constant value on a float tensor is one ``tg.pad``. Any other padding
    gathers, one padded axis at a time, with constant indices (``tg.gather``,
    exact): ``edge``, ``reflect`` and ``wrap`` take the positions
    ``np.pad(arange(n), (lo, hi), mode)`` of the axis; a runtime (or non-finite, or
    integer) ``constant_value`` is first appended along the axis as element ``n``,
    which the border positions take."""
    g, x = im.graph, im.input(node, 0)
    mode = node.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode != "constant" and mode not in _PAD_MODES:
        raise node.error(
            f"mode '{mode}' is not supported (constant, edge, reflect or wrap)"
        )
    names = node.inputs
    axes: list[int] | None = None
    value: float | Value = 0.0
    if node.opset < 11:
        pads = [int(p) for p in node.attr("pads", [])]
        value = _float(node, "value", 0.0)
    else:
        pads = [int(p) for p in im.const(node, names[1], "pads").reshape(-1)]
        if len(names) > 2 and names[2]:
            value = _pad_value(im, node, names[2])
        if len(names) > 3 and names[3]:
            axes = [int(a) for a in im.const(node, names[3], "axes").reshape(-1)]
    axes = list(range(x.rank)) if axes is None else _normalized(node, axes, x.rank)
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads {pads} must have 2 values per axis of {axes}")
    if any(p < 0 for p in pads):
        raise node.error(f"negative pads {pads} (cropping) are not supported")
    low, high = [0] * x.rank, [0] * x.rank
    for k, axis in enumerate(axes):
        low[axis], high[axis] = pads[k], pads[len(axes) + k]
    fill: Value | float | None = None  # a runtime value, or inf, -inf, NaN
    if mode == "constant":
        if isinstance(value, Value):
            fill = g.reshape(value, [1] * x.rank)
        elif math.isfinite(value) and x.dtype in ("float32", "float64"):
            return [g.pad(x, low, high, value)]
        else:  # inf, -inf, NaN, or an integer tensor (tg.pad takes neither)
            fill = value
    y = x
    for axis in range(x.rank):
        if low[axis] == 0 and high[axis] == 0:
            continue
        n = y.shape[axis]
        if fill is not None:  # position n holds the constant value
            border = [*y.shape[:axis], 1, *y.shape[axis + 1 :]]
            if isinstance(fill, Value):
                block = g.broadcast(fill, border)
            else:
                block = g.constant(np.full(border, fill, np.dtype(x.dtype)))
            y = g.concat([y, block], axis)
            indices = np.pad(np.arange(n), (low[axis], high[axis]), constant_values=n)
        else:
            indices = np.pad(np.arange(n), (low[axis], high[axis]), _PAD_MODES[mode])
        y = g.gather(y, indices, axis)
    return [y]


def _pad_value(im: Importer, node: Node, name: str) -> float | Value:
    """Pad's ``constant_value`` input: a float when it is a constant, else the
    runtime one-element tensor."""
    entry = im.env.get(name)
    if entry is None or not isinstance(entry, Value):
        return float(im.const(node, name, "constant_value").reshape(-1)[0])
    if entry.shape not in ((), (1,)):
        raise node.error(
            f"constant_value '{name}' must hold one element, got shape "
            f"{list(entry.shape)}"
        )
    return entry


# ---- reductions -------------------------------------------------------------------


def _reduce_operands(im: Importer, node: Node) -> tuple[Value, list[int] | None, bool]:
    """The input, the axes (None when nothing is reduced: ``noop_with_empty_axes``
    with no axes, or a rank-0 input) and ``keepdims``; the axes are an attribute
    before opset 18, input #1 from 18."""
    x = im.input(node, 0)
    axes = _reduce_axes(im, node, 18)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0) or x.rank == 0:
            return x, None, keepdims
        axes = list(range(x.rank))
    return x, axes, keepdims


@converter("ReduceL1")
def _reduce_l1(im: Importer, node: Node) -> list[Value | Array]:
    """``sum(|x|)`` over the axes (``|x|`` when nothing is reduced)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    a = _abs(g, x)
    return [a if axes is None else g.reduce_sum(a, axes, keepdims)]


@converter("ReduceL2")
def _reduce_l2(im: Importer, node: Node) -> list[Value | Array]:
    """``sqrt(sum(x * x))`` over the axes."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    square = x * x
    return [g.sqrt(square if axes is None else g.reduce_sum(square, axes, keepdims))]


@converter("ReduceSumSquare")
def _reduce_sum_square(im: Importer, node: Node) -> list[Value | Array]:
    """``sum(x * x)`` over the axes."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    square = x * x
    return [square if axes is None else g.reduce_sum(square, axes, keepdims)]


@converter("ReduceLogSum")
def _reduce_log_sum(im: Importer, node: Node) -> list[Value | Array]:
    """``log(sum(x))`` over the axes (-inf over an empty set)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    return [g.log(x if axes is None else g.reduce_sum(x, axes, keepdims))]


@converter("ReduceLogSumExp")
def _reduce_log_sum_exp(im: Importer, node: Node) -> list[Value | Array]:
    """``log(sum(exp(x)))`` over the axes, computed as ``log(sum(exp(x - m))) + m``
    with ``m`` the max clamped to the dtype's finite range: no overflow for large
    finite ``x``, and infinities come out as in the plain formula (+inf if any is
    +inf, -inf if all are -inf or the set is empty)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    if axes is None:
        return [g.log(g.exp(x))]
    big = float(np.finfo(x.dtype).max)
    m = g.minimum(g.maximum(g.reduce_max(x, axes, True), -big), big)
    total = g.reduce_sum(g.exp(x - m), axes, keepdims)
    return [g.log(total) + (m if keepdims else g.reshape(m, total.shape))]


@converter("ReduceMin")
def _reduce_min(im: Importer, node: Node) -> list[Value | Array]:
    """``-max(-x)`` over the axes (exact: negation is; +inf over an empty set); for
    bools ``not any(not x)`` (true over an empty set); integers negate in float64
    (a wrapping ``-x`` would not reverse their order: ``-0 = 0`` unsigned,
    ``-MIN = MIN``)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    if axes is None:
        return [x]
    if x.dtype == "bool":
        not_x = g.logical_not(x)
        return [
            g.logical_not(reduce_values(g, Graph.reduce_max, not_x, axes, keepdims))
        ]
    xf = x if x.dtype in ("float16", "float32", "float64") else g.cast(x, "float64")
    y = g.neg(reduce_values(g, Graph.reduce_max, g.neg(xf), axes, keepdims))
    return [y if y.dtype == x.dtype else g.cast(y, x.dtype)]


@converter("GlobalMaxPool")
def _global_max_pool(im: Importer, node: Node) -> list[Value | Array]:
    """The max over every dimension after N and C, kept as size 1."""
    x = im.input(node, 0)
    if x.rank < 3:
        raise node.error(f"expects an input of rank >= 3, got {list(x.shape)}")
    return [im.graph.reduce_max(x, list(range(2, x.rank)), keepdims=True)]
