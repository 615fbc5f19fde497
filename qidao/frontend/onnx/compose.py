"""Converters that are compositions of existing tg ops: no new tg op behind any of them.

Each converter builds the ONNX definition (cited in its docstring, with the opset
changes that matter) from ``add sub mul div max min neg exp log sqrt tanh sigmoid
relu``, the reductions, ``reshape``/``broadcast`` and ``pad``. A composition is
exact (the same IEEE operations as the ONNX reference, so the same rounding, NaN and
infinities) or, where it says so, within float32 rounding of it; an attribute value
it cannot compose exactly is refused with a ``node.error`` that says why, never
approximated.

Two building blocks recur:

- ``_step(d)`` is 1 where ``d > 0`` and 0 where ``d <= 0`` (NaN stays NaN):
  ``min(max(d * 2^100 * 2^100, 0), 1)``. The smallest positive float32 is 2^-149,
  so any ``d > 0`` scales to at least 2^51 and clamps to 1; ``d <= 0`` clamps to 0.
  It is exact under IEEE arithmetic with subnormals (no flush-to-zero); the two
  multiplications are separate ops, and tg elementwise ops carry no fastmath flags,
  so nothing reassociates them into ``d * inf``. ``x > a`` is ``_step(x - a)``:
  with subnormals ``x - a > 0`` exactly when ``x > a``.
- ``_expm1(x)`` is ``exp(x) - 1`` without the cancellation near 0:
  ``tanh(x / 2) * (exp(x) + 1)``, accurate to a few ulp relative everywhere
  (qidao's ``tanh`` keeps relative accuracy near 0), -1 at -inf, inf at inf.

NaN: the ops built from ``max``/``min``/``relu`` propagate NaN as ONNX's reference
does, except where a docstring says otherwise (``ThresholdedRelu`` and ``Shrink``
give NaN for a NaN input; the reference's ``np.where`` gives 0).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, Node, converter
from qidao.frontend.onnx.reduce import _reduce_axes

_BIG = 2.0**100
"""Twice applied, scales the smallest positive float32 (2^-149) past 1."""

_FLT_MAX = float(np.finfo(np.float32).max)


def _float(node: Node, name: str, default: float) -> float:
    return float(node.attr(name, default))


def _step(g: Graph, d: Value) -> Value:
    """1 where ``d > 0``, 0 where ``d <= 0``, NaN where ``d`` is NaN (see the module
    docstring)."""
    return g.minimum(g.relu(d * _BIG * _BIG), 1.0)


def _expm1(g: Graph, x: Value) -> Value:
    """``exp(x) - 1``, computed as ``tanh(x / 2) * (exp(x) + 1)``."""
    return g.tanh(x * 0.5) * (g.exp(x) + 1.0)


def _abs(g: Graph, x: Value) -> Value:
    """``max(x, -x)``: exact, NaN stays NaN, ``-0`` gives ``+0``."""
    return g.maximum(x, g.neg(x))


# ---- activations ------------------------------------------------------------------


@converter("LeakyRelu")
def _leaky_relu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x >= 0 else alpha * x`` (alpha default 0.01) as
    ``relu(x) + alpha * min(x, 0)``: one of the two terms is a zero."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 0.01)
    return [g.relu(x) + g.minimum(x, 0.0) * alpha]


@converter("PRelu")
def _prelu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x >= 0 else slope * x``, ``slope`` broadcasting to ``x`` (since opset 7),
    as ``relu(x) + slope * min(x, 0)``."""
    g, x, slope = im.graph, im.input(node, 0), im.input(node, 1)
    return [g.relu(x) + g.minimum(x, 0.0) * slope]


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
    """``x if x > alpha else 0`` (alpha 1.0) as ``relu(x) * step(x - alpha)`` for
    ``alpha >= 0``. A NaN input gives NaN (the reference gives 0)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    if not alpha >= 0.0:
        raise node.error(
            f"alpha={alpha} is not supported: only alpha >= 0 composes exactly "
            "without a select op"
        )
    return [g.relu(x) * _step(g, x - alpha)]


@converter("Shrink")
def _shrink(im: Importer, node: Node) -> list[Value | Array]:
    """``x + bias if x < -lambd``, ``x - bias if x > lambd``, else 0 (lambd 0.5,
    bias 0), for ``lambd >= 0``, as
    ``(relu(x) - bias) * step(x - lambd) + (bias - relu(-x)) * step(-x - lambd)``:
    at most one step is 1, and the relus keep ``inf * 0`` out of the other term. A
    NaN input gives NaN (the reference gives 0)."""
    g, x = im.graph, im.input(node, 0)
    lambd, bias = _float(node, "lambd", 0.5), _float(node, "bias", 0.0)
    if not lambd >= 0.0 or not math.isfinite(lambd) or not math.isfinite(bias):
        raise node.error(
            f"lambd={lambd}, bias={bias} is not supported: only a finite lambd >= 0 "
            "and a finite bias compose exactly without a select op"
        )
    neg = g.neg(x)
    above = (g.relu(x) - bias) * _step(g, x - lambd)
    below = (bias - g.relu(neg)) * _step(g, neg - lambd)
    return [above + below]


@converter("Sign")
def _sign(im: Importer, node: Node) -> list[Value | Array]:
    """-1, 0 or 1 (NaN stays NaN) as ``min(max(x * 2^100 * 2^100, -1), 1)``: any
    nonzero float32 scales past 1 (see ``_step``)."""
    g, x = im.graph, im.input(node, 0)
    return [g.minimum(g.maximum(x * _BIG * _BIG, -1.0), 1.0)]


# ---- arithmetic -------------------------------------------------------------------


@converter("Abs")
def _abs_op(im: Importer, node: Node) -> list[Value | Array]:
    """``|x|`` as ``max(x, -x)`` (constant inputs fold in NumPy instead)."""
    return [_abs(im.graph, im.input(node, 0))]


@converter("Reciprocal")
def _reciprocal(im: Importer, node: Node) -> list[Value | Array]:
    """``1 / x``."""
    return [1.0 / im.input(node, 0)]


@converter("Pow")
def _pow(im: Importer, node: Node) -> list[Value | Array]:
    """``x ** y`` (NumPy ``power``) for a constant ``y`` whose elements are all one of
    0, 0.5, 1, 2, 3 or -1: ``1``, ``sqrt``, ``x``, ``x*x``, ``x*x*x``, ``1/x`` (the
    last two within float32 rounding; ``sqrt(-inf)`` is NaN, as NumPy's float32
    ``power(-inf, 0.5)``). tg has no general ``pow``; ``exp(y * log(x))``
    is wrong for ``x <= 0``, so any other exponent is refused."""
    g, x = im.graph, im.input(node, 0)
    name = node.inputs[1] if len(node.inputs) > 1 else ""
    exponent = im.env.get(name) if name else None
    if exponent is None or isinstance(exponent, Value):
        raise node.error(
            "the exponent must be a constant (an initializer, a Constant or a folded "
            "value): tg has no general pow"
        )
    values = np.unique(np.asarray(exponent, dtype=np.float64))
    if values.size != 1 or float(values[0]) not in (0.0, 0.5, 1.0, 2.0, 3.0, -1.0):
        raise node.error(
            f"exponent {values.tolist()} is not supported: only a constant exponent "
            "with every element equal to one of 0, 0.5, 1, 2, 3, -1 composes exactly"
        )
    shape = np.broadcast_shapes(x.shape, np.shape(exponent))
    if shape != x.shape:
        x = g.broadcast(x, shape)
    e = float(values[0])
    if e == 0.0:  # pow(x, 0) is 1, even for NaN
        return [np.ones(shape, dtype=np.float32)]
    if e == 0.5:
        return [g.sqrt(x)]
    if e == 1.0:
        return [x]
    if e == 2.0:
        return [x * x]
    if e == 3.0:
        return [x * x * x]
    return [1.0 / x]


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
    """Inference: the input unchanged. ``training_mode`` (input #2, opset 12) must be
    a constant false (or the ratio 0); the ``mask`` output is refused."""
    outputs = [str(o) for o in node.proto.output]
    if len(outputs) > 1 and outputs[1]:
        raise node.error(
            "the mask output is not supported (a bool tensor; qidao computes float32)"
        )
    names = node.inputs
    if node.opset >= 12 and len(names) > 2 and names[2]:
        training = bool(np.any(im.const(node, names[2], "training_mode")))
        ratio = 0.5
        if len(names) > 1 and names[1]:
            ratio = float(np.asarray(im.const(node, names[1], "ratio")).reshape(-1)[0])
        if training and ratio != 0.0:
            raise node.error(
                "training_mode=true is not supported (random dropout); only "
                "inference, where the output is the input"
            )
    return [im.input(node, 0)]


def _target_dtype(node: Node, to: int) -> np.dtype[np.generic]:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(to))
    except (KeyError, TypeError, ValueError):
        raise node.error(
            f"casting to {helper.tensor_dtype_to_string(to)} is not supported"
        ) from None


@converter("Cast")
def _cast(im: Importer, node: Node) -> list[Value | Array]:
    """A runtime tensor: only float32 to float32, the identity (constant inputs
    fold in NumPy instead)."""
    x = im.input(node, 0)
    to = int(node.attr("to", 0))
    if to != TensorProto.FLOAT or x.dtype != "float32":
        name = helper.tensor_dtype_to_string(to) if to else "no type"
        raise node.error(
            f"Cast of a runtime {x.dtype} tensor to {name} is not supported: tg "
            "computes in float32, so only float32 to float32 (the identity) is"
        )
    return [x]


@converter("CastLike")
def _cast_like(im: Importer, node: Node) -> list[Value | Array]:
    """Cast input #0 to the dtype of input #1 (opset 15). A constant is cast in
    NumPy (it stays a constant); a runtime tensor only to its own dtype."""
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
    if np.dtype(source.dtype) != target:
        raise node.error(
            f"CastLike of a runtime {source.dtype} tensor to {target} is not "
            "supported: tg computes in float32, so only the identity is"
        )
    return [source]


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


@converter("Pad")
def _pad(im: Importer, node: Node) -> list[Value | Array]:
    """Constant padding (``tg.pad``). ``pads`` ([begins..., ends...]) and ``value``
    are attributes before opset 11; from 11 ``pads`` is input #1 and
    ``constant_value`` input #2, and from 18 ``axes`` input #3; all must be
    constants. Other modes, negative pads and a non-finite value are refused."""
    x = im.input(node, 0)
    mode = node.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode != "constant":
        raise node.error(f"mode '{mode}' is not supported (only constant padding)")
    names = node.inputs
    axes: list[int] | None = None
    if node.opset < 11:
        pads = [int(p) for p in node.attr("pads", [])]
        value = _float(node, "value", 0.0)
    else:
        pads = [int(p) for p in im.const(node, names[1], "pads").reshape(-1)]
        value = 0.0
        if len(names) > 2 and names[2]:
            value = float(im.const(node, names[2], "constant_value").reshape(-1)[0])
        if len(names) > 3 and names[3]:
            axes = [int(a) for a in im.const(node, names[3], "axes").reshape(-1)]
    axes = list(range(x.rank)) if axes is None else _normalized(node, axes, x.rank)
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads {pads} must have 2 values per axis of {axes}")
    if any(p < 0 for p in pads):
        raise node.error(f"negative pads {pads} (cropping) are not supported")
    if not math.isfinite(value):
        raise node.error(f"constant_value {value} is not supported (only finite ones)")
    low, high = [0] * x.rank, [0] * x.rank
    for k, axis in enumerate(axes):
        low[axis], high[axis] = pads[k], pads[len(axes) + k]
    return [im.graph.pad(x, low, high, value)]


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
    with ``m`` the max clamped to ``[-FLT_MAX, FLT_MAX]``: no overflow for large
    finite ``x``, and infinities come out as in the plain formula (+inf if any is
    +inf, -inf if all are -inf or the set is empty)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    if axes is None:
        return [g.log(g.exp(x))]
    m = g.minimum(g.maximum(g.reduce_max(x, axes, True), -_FLT_MAX), _FLT_MAX)
    total = g.reduce_sum(g.exp(x - m), axes, keepdims)
    return [g.log(total) + (m if keepdims else g.reshape(m, total.shape))]


@converter("ReduceMin")
def _reduce_min(im: Importer, node: Node) -> list[Value | Array]:
    """``-max(-x)`` over the axes (exact: negation is; +inf over an empty set)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    return [x if axes is None else g.neg(g.reduce_max(g.neg(x), axes, keepdims))]


@converter("GlobalMaxPool")
def _global_max_pool(im: Importer, node: Node) -> list[Value | Array]:
    """The max over every dimension after N and C, kept as size 1."""
    x = im.input(node, 0)
    if x.rank < 3:
        raise node.error(f"expects an input of rank >= 3, got {list(x.shape)}")
    return [im.graph.reduce_max(x, list(range(2, x.rank)), keepdims=True)]
