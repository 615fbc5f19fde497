"""Converters that are compositions of existing tg ops: no new tg op behind any of them.

Each converter builds the ONNX definition (cited in its docstring, with the opset
changes that matter) from the elementwise ops (arithmetic, ``exp log sqrt tanh
sigmoid relu abs pow``, comparisons and ``where``, ``cast``), the reductions,
``reshape``/``broadcast`` and ``pad``. A composition is exact (the same IEEE
operations as the ONNX reference, so the same rounding, NaN and infinities) or,
where it says so, within rounding of it; an attribute value it cannot compose
exactly is refused with a ``node.error`` that says why, never approximated. Float
compositions work on float32 and float64 alike (scalars take the tensor's dtype).
The ``autodiff`` pass differentiates a composition op by op, so each activation is
also written for PyTorch's gradient at its kinks (``where`` on PyTorch's
comparison, ``_nonpositive``), not only for its value: ``docs/autodiff.md``,
"Activations composed of these ops".

Building blocks:

- ``_expm1(x)`` is ``exp(x) - 1`` without the cancellation near 0:
  ``tanh(x / 2) * (exp(x) + 1)``, accurate to a few ulp relative everywhere
  (qidao's ``tanh`` keeps relative accuracy near 0), -1 at -inf, inf at inf.
- ``_log1p(u)`` is ``log(1 + u)`` for ``0 <= u <= 1`` to a few ulp: ``log(w)``
  less the exact rounding error of ``w = 1 + u`` over ``w`` (``Softplus``).
- ``_trunc(x)`` is ``trunc(x)`` exact for every finite float and without a
  gradient (through an integer cast; ``Floor``, ``Ceil``, ``Round``).
- ``nn.norm_root(s, p)``, the p-th root of a sum of ``|x|^p`` whose gradient at a
  zero sum is 0 (``ReduceL2``, as ``LpPool``).

NaN: the ops built from ``max``/``min``/``relu`` propagate NaN as ONNX's reference
does; those the reference writes with ``np.where`` (``ThresholdedRelu``,
``Shrink``) use ``where`` too, so a NaN input gives what the reference gives. The
``where`` written for a gradient (``_nonpositive``, ``Clip``'s tie) takes the
branch that holds ``x`` when its comparison is false, so NaN stays NaN there too.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from onnx import helper

from qidao.frontend.builder import Graph, Value
from qidao.frontend.limits import check_tensor
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.load import DTYPES
from qidao.frontend.onnx.nn import norm_root
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


def _nonpositive(g: Graph, x: Value) -> Value:
    """``min(x, 0)`` as ``where(x > 0, 0, x)``: at ``x = 0`` it is ``x``, gradient 1,
    so beside ``relu(x)`` (gradient 0 at 0) every piece of an activation takes its
    ``x <= 0`` formula at 0, as PyTorch's backward does (elu'(0) = alpha; ``min``'s
    tie would give each side half). Where ``x > 0`` it is the constant 0, so a
    factor it meets there gets a zero gradient, never ``0 * inf``."""
    return g.where(g.greater(x, 0.0), 0.0, x)


def _leaky(g: Graph, x: Value, slope: Value | float, finite: bool) -> Value:
    """``x`` where ``x > 0``, else ``x * slope`` (``slope`` broadcasting to ``x``):
    PyTorch's ``where(x > 0, x, x * slope)``, so the gradient at ``x = 0`` is the
    slope (``leaky_relu_backward``) and the slope's is ``x`` where ``x <= 0``. The
    product takes ``_nonpositive(x)``: an infinite ``x > 0`` gives the slope a zero
    gradient, not ``0 * inf``. A slope not known to be ``finite`` is replaced by 1
    at ``x = 0`` where it is not finite, so that zero stays zero (the spec and ONNX
    Runtime: ``x`` for ``x >= 0`` whatever the slope; ``0 * inf`` is NaN)."""
    if not finite:
        s = slope if isinstance(slope, Value) else g.constant(slope, dtype=x.dtype)
        at_zero = g.where(g.equal(s - s, 0.0), s, 1.0)
        slope = g.where(g.less(x, 0.0), s, at_zero)
    return g.where(g.greater(x, 0.0), x, _nonpositive(g, x) * slope)


@converter("LeakyRelu")
def _leaky_relu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x >= 0 else alpha * x`` (alpha default 0.01), as ``_leaky``: the
    gradient at 0 is alpha (PyTorch's), and an infinite or NaN alpha still gives
    ``x`` for ``x >= 0`` (``relu(x) + min(x, 0) * alpha`` gave ``0 * inf`` = NaN
    there)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 0.01)
    return [_leaky(g, x, alpha, math.isfinite(alpha))]


@converter("PRelu")
def _prelu(im: Importer, node: Node) -> list[Value | Array]:
    """``x if x >= 0 else slope * x``, ``slope`` broadcasting to ``x`` (since opset
    7), as ``_leaky`` (the gradient at 0 is the slope's, as PyTorch's ``prelu``); a
    constant slope with only finite values needs no guard for ``x = 0``."""
    g, x, slope = im.graph, im.input(node, 0), im.input(node, 1)
    constant = im.env.get(node.inputs[1])
    finite = isinstance(constant, np.ndarray) and bool(np.isfinite(constant).all())
    return [_leaky(g, x, slope, finite)]


def _hard_sigmoid(g: Graph, x: Value, alpha: float, beta: float) -> Value:
    """``max(0, min(1, alpha * x + beta))`` as ``where(t >= 1, 1, relu(t))`` with
    ``t = alpha * x + beta``: the gradient is ``alpha`` strictly between the kinks
    and 0 at both (relu'(0) = 0, and the constant 1 from ``t = 1`` on), PyTorch's
    ``hardsigmoid_backward``; ``min(relu(t), 1)`` gave half at ``t = 1`` (a tie)."""
    t = x * alpha + beta
    return g.where(g.greater_equal(t, 1.0), 1.0, g.relu(t))


@converter("HardSigmoid")
def _hard_sigmoid_op(im: Importer, node: Node) -> list[Value | Array]:
    """``max(0, min(1, alpha * x + beta))`` (alpha 0.2, beta 0.5): ``_hard_sigmoid``."""
    g, x = im.graph, im.input(node, 0)
    alpha, beta = _float(node, "alpha", 0.2), _float(node, "beta", 0.5)
    return [_hard_sigmoid(g, x, alpha, beta)]


@converter("HardSwish")
def _hard_swish(im: Importer, node: Node) -> list[Value | Array]:
    """``x * HardSigmoid(x)`` with alpha 1/6, beta 0.5 (opset 14): the gradient at
    ``x = -3`` is 0 and at ``x = 3`` is 1, as PyTorch's ``hardswish_backward``
    (``_hard_sigmoid``'s is 0 at both kinks)."""
    g, x = im.graph, im.input(node, 0)
    return [x * _hard_sigmoid(g, x, 1.0 / 6.0, 0.5)]


_MANTISSA_BITS = {"float16": 10, "float32": 23, "float64": 52}
"""From ``2^bits`` on every float of the type is an integer (its own floor)."""

_SCALE_STEPS = {
    "float16": (),
    "float32": (64, 32),
    "float64": (512, 256, 128, 64, 32, 16, 8),
}
"""The powers of two ``_trunc`` may divide by, largest first: after them every
finite value of the type is below ``2^(bits + the last step)``, within int64."""


def _trunc(g: Graph, x: Value) -> Value:
    """``trunc(x)`` for finite ``x``, exact, with no gradient: the value passes
    through an integer (a cast to int64, int32 for float16, and back), and the
    autodiff pass follows float values only. A float ``|x| >= 2^bits`` is an
    integer too large for the cast: a binary search on comparisons alone finds a
    power of two ``s`` that brings it below ``2^62`` (``|x| >= 2^(bits + b)``, so
    ``x / 2^b`` is still an integer, for ``b`` in ``_SCALE_STEPS``), and the result
    is ``trunc(x / s) * s`` (every step exact: ``s`` is a power of two and the
    quotient an integer). Garbage for inf and NaN (the cast of a non-finite float):
    the caller masks them."""
    bits = _MANTISSA_BITS[x.dtype]
    y, s = _abs(g, x), None  # s: the product of the factors taken
    for b in _SCALE_STEPS[x.dtype]:
        scale_down = g.greater_equal(y, 2.0 ** (bits + b))
        y = g.where(scale_down, y * 2.0**-b, y)
        factor = g.where(scale_down, g.constant(2.0**b, dtype=x.dtype), 1.0)
        s = factor if s is None else s * factor
    ints = "int32" if x.dtype == "float16" else "int64"
    if s is None:
        return g.cast(g.cast(x, ints), x.dtype)
    return g.cast(g.cast(x / s, ints), x.dtype) * s


def _floor(g: Graph, node: Node, x: Value) -> Value:
    """``floor(x)``, exact for every float and with a zero gradient everywhere (as
    PyTorch's): ``t = _trunc(x)``, one less where ``x < t`` (a negative
    non-integer); a zero result takes x's sign (``floor(-0.0) = -0.0``,
    ``floor(0.3) = +0``) from ``x * 0``; inf, -inf are the constants and NaN is
    ``x * 0`` (NaN). No branch is ``x`` itself: its gradient would be 1 (it was,
    from ``2^23`` on)."""
    if x.dtype not in _MANTISSA_BITS:
        raise node.error(f"expects a float tensor, got {x.dtype}")
    t = _trunc(g, x)
    r = t - g.cast(g.less(x, t), x.dtype)
    r = g.where(g.equal(r, 0.0), x * 0.0, r)
    not_finite = g.where(
        g.greater(x, 0.0), math.inf, g.where(g.less(x, 0.0), -math.inf, x * 0.0)
    )
    return g.where(g.less(_abs(g, x), math.inf), r, not_finite)


@converter("Floor")
def _floor_op(im: Importer, node: Node) -> list[Value | Array]:
    """``floor(x)``, exact for every float, gradient 0 (``_floor``)."""
    return [_floor(im.graph, node, im.input(node, 0))]


@converter("Ceil")
def _ceil(im: Importer, node: Node) -> list[Value | Array]:
    """``ceil(x) = -floor(-x)`` (``ceil(-0.3) = -0.0``, as IEEE's), gradient 0."""
    g, x = im.graph, im.input(node, 0)
    return [g.neg(_floor(g, node, g.neg(x)))]


@converter("Round")
def _round(im: Importer, node: Node) -> list[Value | Array]:
    """Round half to even (``np.round``), exact for every float: ``f = floor(x)``
    (``_floor``), ``d = x - f`` (exact), one more where ``d > 0.5`` or ``d == 0.5``
    and ``f`` is odd; a zero result takes x's sign (``round(-0.3) = -0.0``). From
    ``2^bits`` (``_MANTISSA_BITS``) on ``d`` is 0, and inf and NaN give themselves
    (``d`` is NaN, every comparison false). The gradient is 0 everywhere, as
    PyTorch's: ``f`` has none (``_floor``) and ``d`` meets comparisons only."""
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
    ``relu(x) + alpha * expm1(_nonpositive(x))``: the second term is 0 for
    ``x >= 0``; the gradient at 0 is alpha (PyTorch's ``elu_backward``)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    return [g.relu(x) + _expm1(g, _nonpositive(g, x)) * alpha]


@converter("Selu")
def _selu(im: Importer, node: Node) -> list[Value | Array]:
    """``gamma * (x if x > 0 else alpha * exp(x) - alpha)`` (alpha 1.67326...,
    gamma 1.0507...) as ``gamma * (relu(x) + alpha * expm1(_nonpositive(x)))``: the
    gradient at 0 is ``gamma * alpha``, PyTorch's."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.67326319217681884765625)
    gamma = _float(node, "gamma", 1.05070102214813232421875)
    return [(g.relu(x) + _expm1(g, _nonpositive(g, x)) * alpha) * gamma]


@converter("Celu")
def _celu(im: Importer, node: Node) -> list[Value | Array]:
    """``max(0, x) + min(0, alpha * expm1(x / alpha))`` (alpha 1.0, opset 12) as
    ``relu(x) + alpha * expm1(_nonpositive(x) / alpha)``: the same value for either
    sign of alpha (the second term is 0 for ``x >= 0`` and not positive below), and
    the gradient is 1 at 0 (celu is smooth there), 1 at inf (``expm1(inf / alpha)``
    is not reached, so no ``0 * inf``)."""
    g, x = im.graph, im.input(node, 0)
    alpha = _float(node, "alpha", 1.0)
    if alpha == 0.0:
        raise node.error("alpha must not be 0 (the definition divides by it)")
    return [g.relu(x) + _expm1(g, _nonpositive(g, x) / alpha) * alpha]


@converter("Softplus")
def _softplus(im: Importer, node: Node) -> list[Value | Array]:
    """``log(exp(x) + 1)``, computed as ``relu(x) + log1p(exp(-|x|))`` so that a
    large ``x`` does not overflow (the reference uses ``np.logaddexp(0, x)``).
    ``-|x|`` is ``where(x > 0, -x, x)``: at 0 both terms take their ``x <= 0``
    formula (relu's gradient 0 and ``x``'s 1), so their kinks cancel as in softplus
    and the gradient is ``sigmoid(0) = 1/2`` (with ``abs``, whose gradient at 0 is
    0, it was 0). ``_log1p`` keeps the result within 2 ulp for negative ``x`` too
    (``log(1 + u)`` was 2^-24 off, the whole result for ``x < -17``, and Mish's
    gradient, which reads it, 5% off at ``x = -20``)."""
    g, x = im.graph, im.input(node, 0)
    minus_abs = g.where(g.greater(x, 0.0), g.neg(x), x)
    return [g.relu(x) + _log1p(g, g.exp(minus_abs))]


def _log1p(g: Graph, u: Value) -> Value:
    """``log(1 + u)`` for ``0 <= u <= 1``, to a few ulp: ``w = 1 + u`` rounds, but
    its rounding error ``c = (w - 1) - u`` is exact (Fast2Sum, as ``1 >= u``), and
    ``log(1 + u) = log(w - c) = log(w) - c / w`` to within ``(c / w)^2``. Its
    gradient is ``1 / w`` up to the same order (``c``'s is exactly 0)."""
    w = u + 1.0
    return g.log(w) - ((w - 1.0) - u) / w


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
    """``min(max(x, lo), hi)``, as NumPy ``clip`` (lo > hi gives hi; a NaN input or
    bound gives NaN). ``min``/``max`` are attributes before opset 11, optional scalar
    inputs #1/#2 from 11 (runtime tensors too). A tie with a bound keeps ``x``:
    ``where(x >= lo, x, max(x, lo))``, so ``x`` gets the gradient on the closed
    ``[lo, hi]`` and a bound only strictly outside, as PyTorch's ``clamp`` (a tie
    of ``max`` would split it in half)."""
    g, x = im.graph, im.input(node, 0)
    lo: Value | float | None
    hi: Value | float | None
    if node.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
    else:
        lo, hi = im.optional_input(node, 1), im.optional_input(node, 2)
    y = x
    if lo is not None:
        low = lo if isinstance(lo, Value) else float(lo)
        y = g.where(g.greater_equal(y, low), y, g.maximum(y, low))
    if hi is not None:
        high = hi if isinstance(hi, Value) else float(hi)
        y = g.where(g.less_equal(y, high), y, g.minimum(y, high))
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
    does not have is refused, named. To a float8, ``saturate`` (default 1) clamps
    to its largest finite value first (ONNX's table; ``Graph.cast``)."""
    if target not in DTYPES.values():
        raise node.error(
            f"Cast of a runtime {x.dtype} tensor to {target} is not supported (only "
            f"to {', '.join(DTYPES.values())})"
        )
    if x.dtype == target:
        return x
    saturate = target.startswith("float8") and bool(node.attr("saturate", 1))
    return im.graph.cast(x, target, saturate=saturate)


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
        if target.name not in DTYPES.values():
            raise node.error(f"casting to {target} is not supported")
        if target.name.startswith("float8") and node.attr("saturate", 1):
            import ml_dtypes  # here: importing it takes about 0.6 s

            limit = ml_dtypes.finfo(target).max
            with np.errstate(invalid="ignore"):
                clamped = np.clip(source.astype(np.float64), -limit, limit)
            return [clamped.astype(target)]
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
    #3. ``pads`` and ``axes`` must be constants; a negative pad removes elements
    (the input is cropped first, then padded, as ONNX Runtime does). Refused, as
    ONNX Runtime refuses them, are a ``reflect`` pad of the axis size or more
    (a reflection repeats no border element, so it takes at most ``n - 1``) and an
    ``edge``, ``reflect`` or ``wrap`` pad of an empty axis. The padded tensor and
    each index table are checked against qidao's tensor limit before NumPy makes
    them.

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
    low, high = [0] * x.rank, [0] * x.rank
    for k, axis in enumerate(axes):
        low[axis], high[axis] = pads[k], pads[len(axes) + k]
    if any(p < 0 for p in pads):  # crop first, then pad (as ONNX Runtime does)
        x = _crop(g, node, x, low, high)
        low, high = [max(p, 0) for p in low], [max(p, 0) for p in high]
    padded = [n + lo + hi for n, lo, hi in zip(x.shape, low, high, strict=True)]
    check_tensor(node.label, padded, np.dtype(x.dtype).itemsize)
    if mode != "constant":
        _check_copied_pads(node, mode, x.shape, low, high)
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
        table = f"{node.label} (the index table of axis {axis})"
        check_tensor(table, [n + low[axis] + high[axis]], 8)
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


def _crop(g: Graph, node: Node, x: Value, low: list[int], high: list[int]) -> Value:
    """``x`` less ``-p`` elements at each side with a negative pad ``p`` (a pad
    that removes more than the axis holds is an error)."""
    starts = [max(-lo, 0) for lo in low]
    stops = [n - max(-hi, 0) for n, hi in zip(x.shape, high, strict=True)]
    for axis, (start, stop) in enumerate(zip(starts, stops, strict=True)):
        if start > stop:
            raise node.error(
                f"pads {low[axis]} before and {high[axis]} after remove more than "
                f"the {x.shape[axis]} elements of axis {axis}"
            )
    return g.slice(x, starts, stops)


def _check_copied_pads(
    node: Node, mode: str, shape: tuple[int, ...], low: list[int], high: list[int]
) -> None:
    """Refuse what ONNX Runtime refuses in the modes that copy input elements: any
    pad of an empty axis, and a ``reflect`` pad of ``n`` or more on an axis of
    ``n`` (np.pad would reflect again, periodically)."""
    for axis, (n, lo, hi) in enumerate(zip(shape, low, high, strict=True)):
        if lo == 0 and hi == 0:
            continue
        if n == 0:
            raise node.error(
                f"mode '{mode}' cannot pad axis {axis}, which is empty (pads {lo} "
                f"before, {hi} after): there is no element to copy"
            )
        if mode == "reflect" and max(lo, hi) >= n:
            raise node.error(
                f"mode 'reflect' pads axis {axis} of size {n} by {lo} before and {hi} "
                f"after; a reflection takes at most {n - 1} (the axis size less one) "
                "on each side, as ONNX Runtime requires"
            )


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
    """``sqrt(sum(x * x))`` over the axes (``norm_root``: a zero vector has a zero
    gradient, as PyTorch's ``vector_norm``, not NaN)."""
    g = im.graph
    x, axes, keepdims = _reduce_operands(im, node)
    square = x * x
    total = square if axes is None else g.reduce_sum(square, axes, keepdims)
    return [norm_root(g, total, 2)]


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
