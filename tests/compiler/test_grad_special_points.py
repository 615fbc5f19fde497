"""Compiled gradients at the special points against ``torch.autograd``: where an op
has a kink (relu, abs, clip, hardsigmoid, a norm at the zero vector...), a tie
(max, min, max-pool, where, reduce_max), a smooth point that a composition of
kinked ops must not break (softplus, elu at 0), a constant stretch (floor, round:
gradient 0 everywhere), and at the infinities.

Every op with a vjp rule is found by walking the rule registry
(``qidao.dialects.tg.grad.RULES``): it has a case in ``BUILDER`` or a reason in
``NO_SPECIAL_POINT``, so a new rule without either fails
``test_every_rule_has_a_special_point_case``. Each case is compiled once
(``qidao.compile(..., grad=...)``), all its points batched into one tensor per
input, and differentiates ``sum(w * op(...))`` (a fixed random ``w``: a gradient
sent to the wrong element cannot pass) in float32, as PyTorch does. ``ONNX`` does
the same for each ONNX converter that composes tg ops (activations, rounding,
reductions, pools, normalizations), against the PyTorch function that defines the
convention (``docs/autodiff.md``). A gradient matches PyTorch's float32 one up to
rounding, or its float64 one where float32 PyTorch rounds further from it
(``_torch_wants``).

The points: both zeros, +-1e-3 and +-1 around them, the infinities; every pair of
them for a binary op (so ties of all kinds, ``0`` against ``-0`` included); and the
kinks of the activations (``+-3`` of hardswish, the threshold of thresholded relu).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

import qidao
from qidao.dialects.tg import TG
from qidao.dialects.tg.grad import RULES
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]

POINTS = np.array([0.0, -0.0, 1e-3, -1e-3, 1.0, -1.0, np.inf, -np.inf], np.float32)
"""The special points of a unary op: both zeros, around them, the infinities."""

FINITE = POINTS[np.isfinite(POINTS)]


def _pairs(points: Array) -> tuple[Array, Array]:
    """Every ordered pair of ``points``: ``(a, b)`` with ties on the diagonal."""
    return np.repeat(points, points.size), np.tile(points, points.size)


def _with(*extra: float) -> Array:
    """``POINTS`` and the kinks of an activation, with ``+-1e-3`` around each."""
    more = [p + d for p in extra for d in (0.0, -1e-3, 1e-3)]
    return np.concatenate([POINTS, np.array(more, np.float32)])


@dataclass(frozen=True)
class Case:
    """``build(g, *inputs)`` in qidao and ``reference(*tensors)`` in PyTorch, on
    ``inputs``; the gradients of the float inputs are compared."""

    build: Callable[..., Value]
    reference: Callable[..., torch.Tensor]
    inputs: Sequence[Array]


def _unary(
    build: Callable[[Graph, Value], Value],
    reference: Callable[[torch.Tensor], torch.Tensor],
    points: Array = POINTS,
) -> Case:
    return Case(build, reference, [points])


def _binary(
    build: Callable[[Graph, Value, Value], Value],
    reference: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    points: Array = POINTS,
) -> Case:
    return Case(build, reference, list(_pairs(points)))


_TIES = np.array(
    [
        [0.0, -0.0, 0.0, -1.0],  # three zeros tie, signs mixed
        [np.inf, np.inf, 1.0, 0.0],  # the infinities tie
        [-np.inf, -np.inf, -np.inf, -np.inf],  # all -inf
        [1e-3, 1e-3, -1e-3, 1e-3],
        [-1.0, 2.0, 2.0, 2.0],
        [5.0, -0.0, 0.0, 1.0],  # no tie
    ],
    np.float32,
)
"""Rows of ties (for ``reduce_max``, ``softmax``, ``max_pool2d``)."""


def _pool_input() -> Array:
    """1x2x4x4: windows of 2x2 at stride 1 overlap, so a tie is several windows'."""
    return np.stack(
        [
            np.array([[0, -0.0, 1, 1], [0, 0, 1, 1], [-1, -1, 2, 2], [-1, -1, 2, 2]]),
            np.array([[-np.inf] * 4, [-np.inf, 0, 0, -np.inf], [3] * 4, [np.inf] * 4]),
        ]
    )[None].astype(np.float32)


_PRODUCTS = np.array(
    [
        [2.0, -3.0, 0.5, 4.0],  # no zero
        [2.0, 0.0, 0.5, -1e-3],  # one zero: it gets the product of the others
        [0.0, 3.0, -0.0, 4.0],  # two zeros: every entry gets 0
        [-0.0, 1.0, 1.0, 1.0],
        [np.inf, 1.0, 2.0, 1.0],  # inf / inf: NaN, as PyTorch's prod / x
        [np.inf, 0.0, 2.0, 1.0],  # a zero and an infinity
    ],
    np.float32,
)
"""Rows for ``reduce_prod``: PyTorch's ``prod_backward`` cases of zeros."""


BUILDER: dict[str, Case] = {
    "tg.neg": _unary(lambda g, x: g.neg(x), torch.neg),
    "tg.abs": _unary(lambda g, x: g.abs(x), torch.abs),
    "tg.relu": _unary(lambda g, x: g.relu(x), torch.relu),
    "tg.exp": _unary(lambda g, x: g.exp(x), torch.exp),
    "tg.log": _unary(lambda g, x: g.log(x), torch.log),
    "tg.sqrt": _unary(lambda g, x: g.sqrt(x), torch.sqrt),
    "tg.tanh": _unary(lambda g, x: g.tanh(x), torch.tanh),
    "tg.sigmoid": _unary(lambda g, x: g.sigmoid(x), torch.sigmoid),
    "tg.erf": _unary(lambda g, x: g.erf(x), torch.erf),
    "tg.sin": _unary(lambda g, x: g.sin(x), torch.sin, FINITE),
    "tg.cos": _unary(lambda g, x: g.cos(x), torch.cos, FINITE),
    "tg.tan": _unary(lambda g, x: g.tan(x), torch.tan),
    "tg.asin": _unary(lambda g, x: g.asin(x), torch.asin, _with(0.5, 2.0)),
    "tg.acos": _unary(lambda g, x: g.acos(x), torch.acos, _with(0.5, 2.0)),
    "tg.atan": _unary(lambda g, x: g.atan(x), torch.atan),
    "tg.sinh": _unary(lambda g, x: g.sinh(x), torch.sinh, _with(100.0)),
    "tg.cosh": _unary(lambda g, x: g.cosh(x), torch.cosh, _with(-100.0)),
    "tg.asinh": _unary(lambda g, x: g.asinh(x), torch.asinh, _with(1e20)),
    "tg.acosh": _unary(lambda g, x: g.acosh(x), torch.acosh, _with(2.0)),
    "tg.atanh": _unary(lambda g, x: g.atanh(x), torch.atanh, _with(0.5, 2.0)),
    "tg.fmod": _binary(
        lambda g, a, b: g.fmod(a, b),
        torch.fmod,
        np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 3e38, 1e-30, np.inf], np.float32),
    ),
    "tg.reduce_prod": Case(
        lambda g, x: g.reduce_prod(x, [1]), lambda t: torch.prod(t, 1), [_PRODUCTS]
    ),
    "tg.round": _unary(lambda g, x: g.round(x), torch.round),
    "tg.cast": _unary(lambda g, x: g.cast(x, "float64"), lambda t: t.to(torch.float64)),
    "tg.add": _binary(lambda g, a, b: a + b, torch.add),
    "tg.sub": _binary(lambda g, a, b: a - b, torch.sub),
    "tg.mul": _binary(lambda g, a, b: a * b, torch.mul),
    "tg.div": _binary(lambda g, a, b: a / b, torch.div),
    "tg.max": _binary(lambda g, a, b: g.maximum(a, b), torch.maximum),
    "tg.min": _binary(lambda g, a, b: g.minimum(a, b), torch.minimum),
    "tg.pow": _binary(
        lambda g, a, b: g.pow(a, b),
        torch.pow,
        np.array(
            [0.0, -0.0, 1e-3, -1e-3, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, np.inf, -np.inf],
            np.float32,
        ),
    ),
    "tg.select": Case(
        lambda g, a, b: g.where(g.greater(a, b), a, b),
        lambda a, b: torch.where(a > b, a, b),
        list(_pairs(POINTS)),
    ),
    "tg.reduce_max": Case(
        lambda g, x: g.reduce_max(x, [1]), lambda t: torch.amax(t, 1), [_TIES]
    ),
    "tg.softmax": Case(
        lambda g, x: g.softmax(x, -1),
        lambda t: torch.softmax(t, -1),
        [np.where(np.isposinf(_TIES), 7.0, _TIES)[[0, 1, 3, 4, 5]]],
    ),
    "tg.max_pool2d": Case(
        lambda g, x: g.max_pool2d(x, 2, strides=1, padding=1),
        lambda t: F.max_pool2d(t, 2, stride=1, padding=1),
        [_pool_input()],
    ),
}
"""tg op name -> its special-point case (the builder emits the op)."""

NO_SPECIAL_POINT: dict[str, str] = {
    name: "linear in each operand: the vjp never reads the operands' values"
    for name in (
        "tg.reshape",
        "tg.view",
        "tg.contiguous",
        "tg.transpose",
        "tg.broadcast",
        "tg.slice",
        "tg.pad",
        "tg.concat",
        "tg.gather",
        "tg.reduce_sum",
        "tg.reduce_mean",
        "tg.cumsum",
        "tg.avg_pool2d",
        "tg.matmul",
        "tg.conv2d",
    )
} | {
    "tg.take": "linear in the table; the index conventions (negative, clamped) are "
    "checked in tests/dialects/tg/grad/test_indexing.py",
    "tg.gather_elements": "linear in the data; the index conventions are checked in "
    "tests/dialects/tg/grad/test_indexing.py",
    "tg.batch_norm": "inference batch norm is affine in x, scale, bias and mean, and "
    "smooth in var on its whole domain (var + epsilon > 0)",
    "tg.custom": "its vjp is the user's grad region, copied as it is",
}
"""tg op name -> why no point of it is special (every op with a rule is in
``BUILDER`` or here)."""


def _ruled_ops() -> set[str]:
    """The tg ops that have a vjp rule (their class's or a base class's)."""
    return {op.name for op in TG.operations if any(c in RULES for c in op.__mro__)}


def test_every_rule_has_a_special_point_case() -> None:
    ruled = _ruled_ops()
    missing = sorted(ruled - set(BUILDER) - set(NO_SPECIAL_POINT))
    assert not missing, (
        f"vjp rules without a special-point case (add one to BUILDER, or say in "
        f"NO_SPECIAL_POINT why the op has none): {missing}"
    )
    both = sorted(set(BUILDER) & set(NO_SPECIAL_POINT))
    assert not both, f"ops both with a case and without a special point: {both}"
    stale = sorted((set(BUILDER) | set(NO_SPECIAL_POINT)) - ruled)
    assert not stale, f"entries for ops without a vjp rule: {stale}"


def _weights(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """A fixed random ``w`` in [0.5, 1.5] of the output's shape."""
    return np.random.default_rng(29).uniform(0.5, 1.5, shape).astype(dtype)


def _torch_grads(
    reference: Callable[..., torch.Tensor],
    inputs: Sequence[Array],
    w: Array,
    dtype: torch.dtype | None = None,
) -> list[Array]:
    """``torch.autograd``'s gradient of ``sum(w * reference(inputs))`` for each float
    input, computed in ``dtype`` (the inputs' own when None); zeros for an input the
    result does not depend on (Hardmax's result has no gradient at all)."""
    ts = [
        torch.tensor(a, dtype=dtype if a.dtype.kind == "f" else None).requires_grad_(
            a.dtype.kind == "f"
        )
        for a in inputs
    ]
    out = reference(*ts)
    if out.requires_grad:
        (out * torch.tensor(w, dtype=out.dtype)).sum().backward()
    return [
        np.zeros_like(a) if t.grad is None else t.grad.numpy()
        for a, t in zip(inputs, ts, strict=True)
        if a.dtype.kind == "f"
    ]


def _torch_wants(
    reference: Callable[..., torch.Tensor], inputs: Sequence[Array], w: Array
) -> list[list[Array]]:
    """PyTorch's gradients in the inputs' dtype, and in float64: where a result is a
    small difference of large terms (log_softmax's ``g - p * sum(g)``), rounding can
    put float32 PyTorch further from the exact value than qidao, and then qidao
    matches the float64 one. A convention is the same in both."""
    return [
        _torch_grads(reference, inputs, w),
        _torch_grads(reference, inputs, w, torch.float64),
    ]


def _assert_same(
    what: str,
    got: Sequence[Array],
    wants: Sequence[Sequence[Array]],
    inputs: Sequence[Array],
) -> None:
    """Equal to one of ``wants`` (PyTorch's gradients: ``_torch_wants``) up to
    rounding (``rtol=1e-5``), exact where the reference is 0 or infinite, NaN where
    it is NaN; the message names the points that differ (the values there of the
    inputs of the gradient's shape)."""
    floats = [a for a in inputs if a.dtype.kind == "f"]
    for k, a in enumerate(got):
        close = np.zeros(a.shape, bool)
        for want in wants:
            close |= np.isclose(a, want[k], rtol=1e-5, atol=0.0, equal_nan=True)
        if close.all():
            continue
        bad = np.flatnonzero(~close.reshape(-1))[:8]
        at = [
            tuple(float(x.reshape(-1)[i]) for x in floats if x.shape == a.shape)
            for i in bad
        ]
        raise AssertionError(
            f"{what}: d/d(input {k}) differs at {at}: qidao "
            f"{a.reshape(-1)[bad].tolist()}, torch "
            f"{wants[0][k].reshape(-1)[bad].tolist()}"
        )


@pytest.mark.parametrize("name", sorted(BUILDER))
def test_builder_op_gradients_at_special_points(name: str) -> None:
    case = BUILDER[name]
    g = Graph("main")
    names = [f"in{k}" for k in range(len(case.inputs))]
    values = [
        g.input(n, a.shape, a.dtype.name)
        for n, a in zip(names, case.inputs, strict=True)
    ]
    out = case.build(g, *values)
    w = _weights(out.shape, np.dtype(out.dtype))
    g.output(g.reduce_sum(out * g.constant(w, dtype=out.dtype), list(range(out.rank))))
    wrt = [n for n, a in zip(names, case.inputs, strict=True) if a.dtype.kind == "f"]
    with np.errstate(all="ignore"):
        _, *got = qidao.compile(g, grad=wrt)(*case.inputs)
    _assert_same(name, got, _torch_wants(case.reference, case.inputs, w), case.inputs)


# ---- the ONNX converters ----------------------------------------------------------


@dataclass(frozen=True)
class OnnxCase:
    """ONNX ``op`` (with ``attrs``, at ``opset``) on ``inputs``, then ``constants``
    (initializers: not differentiated), against ``reference`` of ``inputs``."""

    op: str
    reference: Callable[..., torch.Tensor]
    inputs: Sequence[Array]
    attrs: dict[str, Any]
    opset: int = 18
    constants: Sequence[Array] = ()


def _onnx(
    op: str,
    reference: Callable[..., torch.Tensor],
    *inputs: Array,
    opset: int = 18,
    constants: Sequence[Array] = (),
    **attrs: Any,
) -> OnnxCase:
    return OnnxCase(op, reference, inputs or (POINTS,), attrs, opset, constants)


_SLOPES = np.array([0.1, -0.5, 0.0, 2.0], np.float32)
"""PRelu's slopes, one per channel (zero and negative included)."""

_ROUNDING = np.concatenate(
    [
        POINTS,
        np.array(
            [0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, 2.0**23 - 0.5, 2.0**23, -(2.0**23)],
            np.float32,
        ),
        np.array([2.0**23 + 1, 2.0**24, 3e9, -3e9, 2.0**63, 1e30, -3.4e38], np.float32),
    ]
)
"""Floor, Ceil and Round: halves, the largest non-integer, and the floats from 2^23
on, every one an integer (their gradient was 1), up to the largest."""

_VECTORS = np.array(
    [
        [0.0, 0.0, 0.0, 0.0],  # the zero vector: a norm's kink
        [-0.0, 0.0, -0.0, 0.0],
        [0.0, 1e-3, -1e-3, 0.0],  # zeros in a vector that is not zero
        [1.0, -1.0, 0.0, 2.0],
        [np.inf, 1.0, 0.0, -1.0],
        [1e-30, 0.0, -1e-30, 0.0],  # its squares underflow: a zero sum
    ],
    np.float32,
)
"""Rows for the reductions that are norms or sums of a function of ``x``."""

_PLANES = np.stack(
    [
        np.array([[0, 0, 1, -1], [0, -0.0, 0, 2], [0, 0, -3, 0], [1e-3, 0, 0, 0]]),
        np.zeros((4, 4)),
    ]
)[None].astype(np.float32)
"""LpPool's input: a window of zeros, zeros in windows that are not, a zero plane."""

_CONSTANT_ROWS = np.array(
    [
        [0.0] * 4,
        [1.0] * 4,
        [-0.0, 0.0, -0.0, 0.0],
        [1e-3] * 4,
        [-2.5] * 4,
        [1, 2, 3, 4],
    ],
    np.float32,
)
"""Rows of zero variance (constant), and one that is not, for the normalizations
(not 1e30: PyTorch's own x - mean is not 0 there, float64 too, where qidao's is)."""

_SCALE = np.array([1.0, 2.0, 0.5, -1.0], np.float32)
_BIAS = np.array([0.1, 0.0, 0.0, 0.2], np.float32)

_MOD = (
    np.repeat(np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0], np.float16), 8),
    np.tile(np.array([1.0, -1.0, 2.5, -2.5, 0.5, 3.0, np.inf, -np.inf], np.float16), 8),
)
"""Mod's pairs (float16: float32 Mod is refused): remainders of 0 (the jumps) and
the infinite divisor; not ``x mod 0`` nor ``inf mod y``, which are NaN."""


def _triples(points: Array) -> tuple[Array, Array, Array]:
    """Every ordered triple of ``points``: three-way ties included."""
    a, b, c = np.meshgrid(points, points, points, indexing="ij")
    return a.reshape(-1), b.reshape(-1), c.reshape(-1)


def _window_norms(p: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """ONNX ``LpPool`` (2x2 windows, stride 1) in PyTorch: the p-norm of each window,
    ``torch.linalg.vector_norm`` (``F.lp_pool2d`` takes no ``|x|``: another
    function for odd p)."""

    def reference(t: torch.Tensor) -> torch.Tensor:
        n, c, h, w = t.shape
        windows = F.unfold(t, 2).reshape(n, c, 4, -1)
        norms: torch.Tensor = torch.linalg.vector_norm(windows, p, 2)
        return norms.reshape(n, c, h - 1, w - 1)

    return reference


def _pow_case(e: float) -> OnnxCase:
    """``Pow`` by the constant ``e``: the converter's fast paths (1, sqrt, 1/x,
    x*x*x) are PyTorch's special cases of ``torch.pow`` by a number (by 0.5 it is
    sqrt, as NumPy's: NaN at -inf, and a gradient of -inf at -0); any other ``e`` is
    ``tg.pow``, C's ``pow`` (``pow(-inf, 1.5) = inf``, NumPy's value), whose
    gradient at -inf is PyTorch's pow by a tensor (by the number 1.5 its backward
    takes a sqrt: NaN)."""
    fast = e in (0.0, 0.5, 1.0, 2.0, 3.0, -1.0)
    exponent: Any = e if fast else torch.tensor(e)
    return _onnx(
        "Pow",
        lambda x: torch.pow(x, exponent),
        constants=[np.array(e, np.float32)],
    )


ONNX: dict[str, OnnxCase] = {
    "Relu": _onnx("Relu", torch.relu),
    "LeakyRelu": _onnx("LeakyRelu", lambda x: F.leaky_relu(x, 0.1), alpha=0.1),
    "LeakyRelu, negative alpha": _onnx(
        "LeakyRelu", lambda x: F.leaky_relu(x, -2.0), alpha=-2.0
    ),
    "PRelu": _onnx(
        "PRelu", F.prelu, np.repeat(POINTS[:, None], _SLOPES.size, 1), _SLOPES
    ),
    "HardSigmoid": _onnx(
        "HardSigmoid", F.hardsigmoid, _with(-3.0, 3.0), alpha=1 / 6, beta=0.5
    ),
    "HardSigmoid, ONNX's alpha": _onnx(
        "HardSigmoid", lambda x: F.hardtanh(x * 0.2 + 0.5, 0.0, 1.0), _with(-2.5, 2.5)
    ),
    "HardSwish": _onnx("HardSwish", F.hardswish, _with(-3.0, 3.0)),
    "Elu": _onnx("Elu", F.elu),
    "Elu, alpha 0.5": _onnx("Elu", lambda x: F.elu(x, 0.5), alpha=0.5),
    "Selu": _onnx("Selu", F.selu),
    "Celu": _onnx("Celu", F.celu),
    "Celu, alpha 2": _onnx("Celu", lambda x: F.celu(x, 2.0), alpha=2.0),
    "Softplus": _onnx("Softplus", F.softplus, _with(20.0, -20.0)),
    "Softsign": _onnx("Softsign", F.softsign),
    "Swish": _onnx("Swish", F.silu, opset=24),
    "Gelu": _onnx("Gelu", F.gelu, opset=20),
    "Gelu, tanh": _onnx(
        "Gelu", lambda x: F.gelu(x, approximate="tanh"), opset=20, approximate="tanh"
    ),
    "ThresholdedRelu": _onnx(
        "ThresholdedRelu", lambda x: F.threshold(x, 1.0, 0.0), _with(1.0)
    ),
    "Shrink, hard": _onnx(
        "Shrink", lambda x: F.hardshrink(x, 0.5), _with(-0.5, 0.5), lambd=0.5
    ),
    "Shrink, soft": _onnx(
        "Shrink",
        lambda x: F.softshrink(x, 0.5),
        _with(-0.5, 0.5),
        lambd=0.5,
        bias=0.5,
    ),
    "Abs": _onnx("Abs", torch.abs),
    "Sign": _onnx("Sign", torch.sign),
    "Sqrt": _onnx("Sqrt", torch.sqrt),
    "Reciprocal": _onnx("Reciprocal", torch.reciprocal),
    "Clip": _onnx(
        "Clip",
        torch.clamp,
        _with(-1.0, 1.0),
        np.array(-1.0, np.float32),
        np.array(1.0, np.float32),
    ),
    "Clip, min > max": _onnx(
        "Clip",
        torch.clamp,
        _with(0.0, 1.0),
        np.array(1.0, np.float32),
        np.array(0.0, np.float32),
    ),
    "Clip, constant bounds": _onnx(
        "Clip",
        lambda x: torch.clamp(x, -1.0, 1.0),
        _with(-1.0, 1.0),
        opset=6,
        min=-1.0,
        max=1.0,
    ),
    "Max": _onnx("Max", torch.maximum, *_pairs(POINTS)),
    "Min": _onnx("Min", torch.minimum, *_pairs(POINTS)),
    "Max, three inputs": _onnx(
        "Max",
        lambda a, b, c: torch.maximum(torch.maximum(a, b), c),
        *_triples(np.array([0.0, -0.0, 1.0, np.inf], np.float32)),
    ),
    "Clip, relu6": _onnx(
        "Clip",
        lambda x: torch.clamp(x, 0.0, 6.0),
        _with(0.0, 6.0),
        opset=6,
        min=0.0,
        max=6.0,
    ),
    "Erf": _onnx("Erf", torch.erf),
    "Mish": _onnx("Mish", F.mish, _with(-20.0)),  # reads softplus's value there
    "Floor": _onnx("Floor", torch.floor, _ROUNDING),
    "Ceil": _onnx("Ceil", torch.ceil, _ROUNDING),
    "Round": _onnx("Round", torch.round, _ROUNDING),
    "Mod": _onnx("Mod", torch.remainder, *_MOD),
    "Mod, fmod": _onnx("Mod", torch.fmod, *_MOD, fmod=1),
    **{f"Pow, exponent {e:g}": _pow_case(e) for e in (0.0, 0.5, -1.0, 3.0, 1.5)},
    "ReduceL2": _onnx(
        "ReduceL2",
        lambda t: torch.linalg.vector_norm(t, 2, 1),
        _VECTORS,
        opset=13,
        axes=[1],
        keepdims=0,
    ),
    "ReduceL2, nothing reduced": _onnx(
        "ReduceL2",
        lambda t: torch.linalg.vector_norm(t[..., None], 2, -1),
        _VECTORS[:-1],  # PyTorch's norm of one element is |x|: no underflow
        noop_with_empty_axes=1,
    ),
    "ReduceL1": _onnx(
        "ReduceL1",
        lambda t: torch.linalg.vector_norm(t, 1, 1),
        _VECTORS,
        opset=13,
        axes=[1],
        keepdims=0,
    ),
    "ReduceSumSquare": _onnx(
        "ReduceSumSquare",
        lambda t: torch.square(t).sum(1),
        _VECTORS,
        opset=13,
        axes=[1],
        keepdims=0,
    ),
    "ReduceLogSum": _onnx(
        "ReduceLogSum",
        lambda t: torch.log(t.sum(1)),
        _VECTORS,
        opset=13,
        axes=[1],
        keepdims=0,
    ),
    "ReduceLogSumExp": _onnx(
        "ReduceLogSumExp",
        lambda t: torch.logsumexp(t, 1),
        _TIES,
        opset=13,
        axes=[1],
        keepdims=0,
    ),
    "ReduceMax": _onnx(
        "ReduceMax", lambda t: torch.amax(t, 1), _TIES, opset=13, axes=[1], keepdims=0
    ),
    "ReduceMin": _onnx(
        "ReduceMin", lambda t: torch.amin(t, 1), -_TIES, opset=13, axes=[1], keepdims=0
    ),
    **{
        f"LpPool, p {p}": _onnx(
            "LpPool", _window_norms(p), _PLANES, kernel_shape=[2, 2], p=p
        )
        for p in (1, 2, 3)
    },
    "GlobalLpPool": _onnx(
        "GlobalLpPool",
        lambda t: torch.linalg.vector_norm(t, 2, (2, 3), keepdim=True),
        _PLANES,
    ),
    "Hardmax": _onnx(
        "Hardmax", lambda t: F.one_hot(t.argmax(-1), 4).to(t.dtype), _TIES
    ),
    "LogSoftmax": _onnx("LogSoftmax", lambda t: torch.log_softmax(t, -1), _TIES),
    "LayerNormalization": _onnx(
        "LayerNormalization",
        lambda x, s, b: F.layer_norm(x, (4,), s, b, eps=1e-5),
        _CONSTANT_ROWS,
        _SCALE,
        _BIAS,
        opset=17,
    ),
    "InstanceNormalization": _onnx(
        "InstanceNormalization",
        lambda x, s, b: F.instance_norm(x, weight=s, bias=b, eps=1e-5),
        _CONSTANT_ROWS.reshape(2, 3, 4),
        _SCALE[:3],
        _BIAS[:3],
    ),
    "GroupNormalization": _onnx(
        "GroupNormalization",
        lambda x, s, b: F.group_norm(x, 5, s, b, eps=1e-5),
        np.repeat(_CONSTANT_ROWS[:5], 2, 0)[None],  # groups of 2 equal channels
        np.resize(_SCALE, 10),
        np.resize(_BIAS, 10),
        opset=21,
        num_groups=5,
    ),
}
"""The ONNX converters that compose tg ops, at their special points, each against
the PyTorch function that sets the convention (``docs/autodiff.md``): the
activations, the rounding ops, the reductions that are norms, the normalizations.
Issue 29 found here: at 0, Softplus's gradient was 0 (PyTorch's sigmoid(0)),
Elu's, Celu's and Selu's half of PyTorch's (a tie of ``min(x, 0)``), LeakyRelu's 1
(not alpha); ReduceL2's, LpPool's and GlobalLpPool's (p >= 2) at a zero vector NaN
(``vector_norm``'s is 0); Floor's, Ceil's and Round's 1 from 2^23 on (0)."""


def _output_shape(case: OnnxCase) -> tuple[int, ...]:
    """The shape of ``op``'s result: its PyTorch reference's."""
    with torch.no_grad():
        return tuple(case.reference(*(torch.tensor(a) for a in case.inputs)).shape)


def _onnx_model(case: OnnxCase, w: Array) -> Any:
    """``sum(w * op(inputs, constants))`` as an ONNX model of inputs ``x0, x1...``
    (of the arrays' dtypes) and initializers ``c0, c1...``."""
    names = [f"x{k}" for k in range(len(case.inputs))]
    constants = [f"c{k}" for k in range(len(case.constants))]
    nodes = [
        helper.make_node(case.op, names + constants, ["y"], **case.attrs),
        helper.make_node("Mul", ["y", "w"], ["wy"]),
        helper.make_node("ReduceSum", ["wy"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in zip(names, case.inputs, strict=True)
        ],
        [
            helper.make_tensor_value_info(
                "loss", helper.np_dtype_to_tensor_dtype(w.dtype), []
            )
        ],
        [numpy_helper.from_array(w, "w")]
        + [
            numpy_helper.from_array(a, n)
            for n, a in zip(constants, case.constants, strict=True)
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", case.opset)]
    )
    model.ir_version = 8
    return model


@pytest.mark.parametrize("name", list(ONNX))
def test_onnx_op_gradients_at_special_points(name: str) -> None:
    case = ONNX[name]
    w = _weights(_output_shape(case), case.inputs[0].dtype)
    names = [f"x{k}" for k in range(len(case.inputs))]
    with np.errstate(all="ignore"):
        _, *got = qidao.compile(_onnx_model(case, w), grad=names)(*case.inputs)
    _assert_same(name, got, _torch_wants(case.reference, case.inputs, w), case.inputs)
