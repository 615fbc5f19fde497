"""The ``Resize`` converter (opset 11 on; older models are converted to opset 11 as
they load, ``Upsample`` included): gathers with constant indices, and weighted sums
of them.

Resizing is separable for every coordinate transformation but
``tf_crop_and_resize``: along each axis whose size changes, output element ``o``
reads a few input elements ``x[i_t(o)]`` with weights ``w_t(o)``, both known at
import. So each resized axis is ``T`` ``tg.gather``s (one per tap ``t``) and a sum
of them times constant weights, which broadcast along that axis; nearest is one
gather and no weights. The indices and weights are computed in NumPy the way ONNX
Runtime computes them (in float32), so that nearest rounds ties alike:

1. The output size: ``floor(size * scale)`` from ``scales``, else ``sizes`` (the
   scale is then ``out / size``). ``axes`` (opset 18) names the axes the two inputs
   list, and ``keep_aspect_ratio_policy`` (18; only with ``sizes``) ``not_larger``
   / ``not_smaller`` takes the smallest / largest of those axes' scales for all of
   them, each size ``round(size * scale)``. The product ``size * scale`` is exact,
   as in ONNX's shape inference and reference; ONNX Runtime rounds it to float32
   first, which can reach the next integer (``5 * 1.4``: 7 there, 6 here), and its
   output then has one more element, after those of this one.
2. The source coordinate of output ``o`` (``coordinate_transformation_mode``, at
   scale ``s`` from ``n`` to ``m`` elements): ``half_pixel`` ``(o + 0.5) / s -
   0.5``; ``pytorch_half_pixel`` the same but 0 when ``m == 1``;
   ``half_pixel_symmetric`` the same shifted by ``n / 2 * (1 - m / (s * n))``;
   ``align_corners`` ``o * (n - 1) / (m - 1)`` (0 when ``m == 1``; ONNX's
   reference divides by ``n * s - 1`` instead, which differs when ``n * s`` is not
   a whole number; ONNX Runtime and PyTorch take ``m - 1``); ``asymmetric``
   ``o / s``; ``tf_half_pixel_for_nn`` ``(o + 0.5) / s``.
3. The taps:

   - ``nearest``: one, the coordinate rounded by ``nearest_mode``
     (``round_prefer_floor``, ``round_prefer_ceil``: ties down / up, else to the
     nearest; ``floor``, ``ceil``), clamped into ``[0, n)``;
   - ``linear``: the coordinate clamped into ``[0, n - 1]``, then its floor and the
     next element, weighted ``1 - frac`` and ``frac``;
   - ``cubic``: the four elements ``floor - 1 .. floor + 2`` (indices clamped into
     ``[0, n)``) with Keys' cubic weights at ``frac`` for ``cubic_coeff_a``; with
     ``exclude_outside=1`` the taps outside the input weigh 0 and the others are
     renormalized.

A tap whose weights are all 0 is dropped, and one weight of 1 is a plain gather, so
an integer scale along an axis costs a gather. Nearest along several axes is one
kernel: a broadcast for integer upscales, else one gather of their flattened block
(``_nearest_gather``). A gather whose indices follow few arithmetic runs is a
``tg.gather`` (all affine, one loop nest per run); other indices (nearest at a
fractional scale: ``0, 0, 1, 2, 2, 3, ...``) are a ``tg.take`` of a constant index
tensor, one nest whatever the pattern (``_gather``). Refused, with the node named:
linear and cubic on integer tensors, and ``scales``, ``sizes`` or ``roi`` computed
at run time (they fix the output shape and the index tables; a small float graph
input is bound by the specialization). ``tf_crop_and_resize`` takes its source
coordinates from the ``roi`` (TensorFlow's ``CropAndResize``), and an output whose
coordinate falls outside the input along any axis is ``extrapolation_value``.
``antialias=1`` stretches the linear or cubic filter by ``1 / scale`` when
downsampling (``_antialiased``). The output
and every index table are checked against qidao's tensor limit
(``qidao.frontend.limits``) before NumPy makes a table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from qidao.frontend.builder import Graph, Value
from qidao.frontend.limits import check_tensor
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

F32 = np.float32
Taps = list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32] | None]]
"""The taps along one axis: per tap, the input index of each output element and its
weight (None: weight 1, nearest)."""

MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


def _choice(node: Node, name: str, default: str, allowed: Sequence[str]) -> str:
    """The string attribute ``name``, one of ``allowed``, or an error naming it."""
    value = node.attr(name, default)
    value = value.decode() if isinstance(value, bytes) else str(value)
    if value not in allowed:
        raise node.error(
            f"{name}='{value}' is not supported (supported: {', '.join(allowed)})"
        )
    return value


@converter("Resize")
def _resize(im: Importer, node: Node) -> list[Value | Array]:
    g, x = im.graph, im.input(node, 0)
    mode = _choice(node, "mode", "nearest", MODES)
    coordinate = _choice(
        node, "coordinate_transformation_mode", "half_pixel", COORDINATE_MODES
    )
    nearest = ""
    if mode == "nearest":  # the attribute means nothing to the other modes
        nearest = _choice(node, "nearest_mode", "round_prefer_floor", NEAREST_MODES)
    antialias = bool(int(node.attr("antialias", 0))) and mode != "nearest"
    if mode != "nearest" and x.dtype not in ("float16", "float32", "float64"):
        raise node.error(
            f"mode '{mode}' on a {x.dtype} tensor is not supported (nearest only; "
            "linear and cubic on float tensors)"
        )
    scales, sizes = _scales_and_sizes(im, node, x.shape)
    check_tensor(node.label, sizes, np.dtype(x.dtype).itemsize)
    crop = coordinate == "tf_crop_and_resize"
    roi = _roi(im, node, x.rank) if crop else None
    outside: dict[int, npt.NDArray[np.bool_]] = {}
    taps: dict[int, Taps] = {}
    for axis, (n, m, scale) in enumerate(zip(x.shape, sizes, scales, strict=True)):
        if roi is not None:
            start, end = roi[axis], roi[x.rank + axis]
            if n == m and (start, end) == (0.0, 1.0) and n > 1:
                continue  # the whole axis at its size: o to o
            source = _crop_coordinates(n, m, start, end)
            if np.any((source < 0) | (source > n - 1)):
                outside[axis] = (source < 0) | (source > n - 1)
        elif n == m and scale == 1.0:
            continue  # every coordinate mode maps o to o
        else:
            source = _source_coordinates(coordinate, n, m, scale)
        check_tensor(f"{node.label} (the index table of axis {axis})", [m], 8)
        if mode == "nearest":
            taps[axis] = [(_nearest(source, nearest, n), None)]
        elif antialias:
            a = float(node.attr("cubic_coeff_a", -0.75))
            exclude = bool(int(node.attr("exclude_outside", 0)))
            taps[axis] = _antialiased(source, n, float(scale), mode, a, exclude)
        elif mode == "linear":
            taps[axis] = _linear(source, n)
        else:
            a = float(node.attr("cubic_coeff_a", -0.75))
            exclude = bool(int(node.attr("exclude_outside", 0)))
            taps[axis] = _cubic(source, n, a, exclude)
    if mode == "nearest" and taps:
        y = _nearest_gather(g, x, {a: t[0][0] for a, t in taps.items()}, node.label)
    else:
        y = x
        for axis, axis_taps in taps.items():
            y = _apply(g, y, axis, axis_taps)
    if outside:
        fill = float(node.attr("extrapolation_value", 0.0))
        y = g.where(_any_outside(g, outside, y.shape), fill, y)
    return [y]


def _roi(im: Importer, node: Node, rank: int) -> npt.NDArray[np.float64]:
    """``tf_crop_and_resize``'s region: ``[start_0 .., end_0 ..]`` for every axis
    (the ``axes`` of opset 18 expanded; the others keep ``0 .. 1``)."""
    given = _optional_const(im, node, node.inputs, 1, "roi")
    if given is None:
        raise node.error("tf_crop_and_resize needs the roi input")
    axes = [int(a) % rank for a in node.attr("axes", range(rank))]
    if given.size != 2 * len(axes):
        raise node.error(
            f"roi has {given.size} values; tf_crop_and_resize takes a start and an "
            f"end for each of the {len(axes)} axes {axes}"
        )
    roi = np.array([0.0] * rank + [1.0] * rank)
    for k, a in enumerate(axes):
        roi[a], roi[rank + a] = given[k], given[len(axes) + k]
    return roi


def _crop_coordinates(
    n: int, m: int, start: float, end: float
) -> npt.NDArray[np.float32]:
    """The input coordinate of each of the ``m`` outputs of ``tf_crop_and_resize``
    (TensorFlow's ``CropAndResize``): ``m`` points from ``start * (n - 1)`` to
    ``end * (n - 1)``, the middle one for ``m == 1``."""
    lo, hi, last = F32(start), F32(end), F32(n - 1)  # in float32, as ONNX Runtime
    span = (hi - lo) * last
    if m == 1:
        return np.array([span / F32(2) + lo * last], F32)
    o = np.arange(m, dtype=F32)
    return (o * span / F32(m - 1) + lo * last).astype(F32)


def _any_outside(
    g: Graph, outside: dict[int, npt.NDArray[np.bool_]], shape: tuple[int, ...]
) -> Value:
    """Whether each output element reads outside the input along some axis (the
    per-axis masks broadcast and or-ed; one small constant each)."""
    mask: Value | None = None
    for axis, flags in outside.items():
        along = [1] * len(shape)
        along[axis] = shape[axis]
        term = g.constant(flags.reshape(along), dtype="bool")
        mask = term if mask is None else g.logical_or(mask, term)
    assert mask is not None
    return g.broadcast(mask, shape) if mask.shape != shape else mask


def _scales_and_sizes(
    im: Importer, node: Node, shape: tuple[int, ...]
) -> tuple[list[np.float32], list[int]]:
    """The scale (float32) and the output size of every axis of ``shape``."""
    names = node.inputs
    rank = len(shape)
    axes = list(range(rank))
    if "axes" in node.attrs:
        axes = [int(a) for a in node.attr("axes")]
        if any(not -rank <= a < rank for a in axes):
            raise node.error(f"axes {axes} are out of range for rank {rank}")
        axes = [a % rank for a in axes]
        if len(set(axes)) != len(axes):
            raise node.error(f"axes {node.attr('axes')} repeat an axis")
    given_scales = _optional_const(im, node, names, 2, "scales")
    given_sizes = _optional_const(im, node, names, 3, "sizes")
    if (given_scales is None) == (given_sizes is None):
        raise node.error("exactly one of the scales and sizes inputs must be given")
    policy = _choice(node, "keep_aspect_ratio_policy", "stretch", ASPECT_POLICIES)
    given = given_scales if given_scales is not None else given_sizes
    assert given is not None
    if given.size != len(axes):
        raise node.error(
            f"{'scales' if given_scales is not None else 'sizes'} has "
            f"{given.size} values for the {len(axes)} axes {axes}"
        )
    scales = [F32(1.0)] * rank
    sizes = list(shape)
    if given_scales is not None:
        for a, s in zip(axes, given_scales.astype(F32), strict=True):
            if not (np.isfinite(s) and s > 0):
                raise node.error(f"scale {float(s)} on axis {a} must be > 0")
            out = int(np.floor(shape[a] * np.float64(s)))  # exact, as ONNX infers
            if out < 1:
                raise node.error(
                    f"scale {float(s)} on axis {a} of size {shape[a]} gives an "
                    f"output size of {out}; it must be >= 1"
                )
            scales[a], sizes[a] = s, out
        return scales, sizes
    assert given_sizes is not None
    wanted = [int(v) for v in given_sizes]
    if any(v < 1 for v in wanted):
        raise node.error(f"sizes {wanted} must be >= 1")
    ratios = [F32(v) / F32(shape[a]) for a, v in zip(axes, wanted, strict=True)]
    if policy != "stretch":
        ratio = min(ratios) if policy == "not_larger" else max(ratios)
        for a in axes:
            scales[a] = ratio
            product = np.float64(F32(shape[a]) * ratio)
            sizes[a] = max(int(np.floor(product + 0.5)), 1)  # std::round
        return scales, sizes
    for a, v, r in zip(axes, wanted, ratios, strict=True):
        scales[a], sizes[a] = r, v
    return scales, sizes


def _optional_const(
    im: Importer, node: Node, names: list[str], index: int, what: str
) -> npt.NDArray[Any] | None:
    """Input #``index`` as a flat array, or None when it is omitted or empty."""
    if index >= len(names) or not names[index]:
        return None
    value = np.asarray(im.const(node, names[index], what, shape=True)).reshape(-1)
    return value if value.size else None


def _source_coordinates(
    mode: str, n: int, m: int, scale: np.float32
) -> npt.NDArray[np.float32]:
    """The input coordinate of each of the ``m`` outputs along an axis of ``n``
    elements at ``scale``, in float32 as ONNX Runtime computes it."""
    o = np.arange(m, dtype=F32)
    half = F32(0.5)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_half_pixel_for_nn":
        return (o + half) / scale
    if mode == "align_corners":
        if m == 1:
            return np.zeros(1, F32)
        return o * F32(n - 1) / F32(m - 1)
    if mode == "pytorch_half_pixel" and m == 1:
        return np.zeros(1, F32)
    if mode == "half_pixel_symmetric":  # the offset in float32, the rest in float64
        adjustment = F32(m) / (scale * F32(n))
        offset = np.float64(F32(n) / F32(2) * (F32(1) - adjustment))
        wide = o.astype(np.float64)
        return (offset + (wide + 0.5) / np.float64(scale) - 0.5).astype(F32)
    return ((o + half) / scale - half).astype(F32)


def _nearest(
    source: npt.NDArray[np.float32], mode: str, n: int
) -> npt.NDArray[np.int64]:
    """The nearest input index of each coordinate by ``nearest_mode``, clamped."""
    c = source.astype(np.float64)  # exact: the rounding below sees the float32 value
    if mode == "floor":
        index = np.floor(c)
    elif mode == "ceil":
        index = np.ceil(c)
    else:
        tie = c - np.floor(c) == 0.5
        nearest = np.where(c >= 0, np.floor(c + 0.5), np.ceil(c - 0.5))
        broken = np.floor(c) if mode == "round_prefer_floor" else np.ceil(c)
        index = np.where(tie, broken, nearest)
    return np.clip(index, 0, n - 1).astype(np.int64)


def _linear(source: npt.NDArray[np.float32], n: int) -> Taps:
    """Two taps: the clamped coordinate's floor and the next element (clamped), each
    weighted by the distance to the other; 0.5 each when they coincide."""
    c = np.clip(source, F32(0), F32(n - 1)).astype(F32)
    low = np.minimum(c.astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    w_low = np.abs(c - high.astype(F32)).astype(F32)
    w_high = np.abs(c - low.astype(F32)).astype(F32)
    same = low == high
    w_low[same] = F32(0.5)
    w_high[same] = F32(0.5)
    return [(low, w_low), (high, w_high)]


def _cubic(source: npt.NDArray[np.float32], n: int, a: float, exclude: bool) -> Taps:
    """Four taps ``floor - 1 .. floor + 2`` with Keys' weights for ``a`` at the
    fraction ``s`` (ONNX Runtime's ``GetCubicCoeffs``)."""
    a32 = F32(a)
    base = np.floor(source).astype(np.int64)
    s = np.abs(source - base.astype(F32)).astype(F32)
    one, two = F32(1), F32(2)

    def outer(t: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:  # 1 < t < 2
        return (
            ((a32 * t - F32(5) * a32) * t + F32(8) * a32) * t - F32(4) * a32
        ).astype(F32)

    def inner(t: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:  # t <= 1
        return (((a32 + two) * t - (a32 + F32(3))) * t * t + one).astype(F32)

    weights = [outer(s + one), inner(s), inner(one - s), outer(two - s)]
    indices = [base + k for k in (-1, 0, 1, 2)]
    if exclude:
        for w, i in zip(weights, indices, strict=True):
            w[(i < 0) | (i >= n)] = F32(0)
        total = (weights[0] + weights[1] + weights[2] + weights[3]).astype(F32)
        weights = [(w / total).astype(F32) for w in weights]
    return [(np.clip(i, 0, n - 1), w) for i, w in zip(indices, weights, strict=True)]


def _antialiased(
    source: npt.NDArray[np.float32],
    n: int,
    scale: float,
    mode: str,
    a: float,
    exclude: bool,
) -> Taps:
    """``antialias=1``: when downsampling (``scale < 1``), the linear (triangle) or
    cubic filter stretched by ``1 / scale``, so each output averages every input
    element under it; ONNX's definition (its reference's ``_*_coeffs_antialias``):
    the filter sampled at ``(i - ratio) * scale`` for a window of taps around the
    coordinate (``ratio`` in ``(0, 1]``), normalized to sum 1; the taps are the
    window's nearest elements (ties to the lower), edge-padded, and with
    ``exclude_outside`` the ones outside the input weigh 0 (renormalized). Upscaling
    (``scale >= 1``) is the plain filter."""
    s = min(scale, 1.0)
    reach = 1 if mode == "linear" else 2  # the filter's support, in input elements
    start = math.floor(-reach / s) + 1
    offsets = np.arange(start, 2 - start)
    count = len(offsets)
    pad = math.ceil(count / 2)
    c = source.astype(np.float64)
    base = np.floor(c)
    ratio = np.where(c == base, 1.0, c - base)
    args = (offsets[None, :] - ratio[:, None]) * s
    if mode == "linear":
        filter_ = np.clip(1 - np.abs(args), 0, 1)
    else:
        filter_ = _keys(np.abs(args), a)
    weights = filter_ / filter_.sum(axis=1, keepdims=True)
    # the `count` nearest of the padded positions [0, n + 2 * pad) to c + pad, ties
    # to the lower one, back in input positions
    indices = np.stack([_neighbors(x + pad, count, n + 2 * pad) for x in c]) - pad
    if exclude:
        weights = np.where((indices < 0) | (indices >= n), 0.0, weights)
        weights = weights / weights.sum(axis=1, keepdims=True)
    clamped = np.clip(indices, 0, n - 1)
    return [(clamped[:, t], weights[:, t].astype(F32)) for t in range(count)]


def _keys(t: npt.NDArray[np.float64], a: float) -> npt.NDArray[np.float64]:
    """Keys' cubic kernel at distances ``t >= 0`` (0 from 2 on)."""
    inner = ((a + 2) * t - (a + 3)) * t * t + 1
    outer = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, inner, np.where(t < 2, outer, 0.0))


def _neighbors(x: float, count: int, limit: int) -> npt.NDArray[np.int64]:
    """The ``count`` positions of ``[0, limit)`` nearest to ``x`` (ties to the lower
    one), ascending."""
    low = max(0, math.floor(x) - count)
    candidates = range(low, min(limit, math.floor(x) + count + 1))
    picked = sorted(candidates, key=lambda i: (abs(x - i), i))[:count]
    return np.array(sorted(picked), np.int64)


def _apply(g: Graph, x: Value, axis: int, taps: Taps) -> Value:
    """``sum_t gather(x, i_t, axis) * w_t`` (``w_t`` along ``axis``); taps of zero
    weight are dropped and a lone tap of weight 1 is a plain gather."""
    kept = [(i, w) for i, w in taps if w is None or np.any(w != 0)]
    if len(kept) == 1 and (kept[0][1] is None or np.all(kept[0][1] == 1)):
        return _gather(g, x, kept[0][0], axis)
    shape = [1] * x.rank
    shape[axis] = len(kept[0][0])
    total: Value | None = None
    for indices, weights in kept:
        assert weights is not None
        w = g.constant(weights.reshape(shape), dtype=x.dtype)
        term = _gather(g, x, indices, axis) * w
        total = term if total is None else total + term
    assert total is not None
    return total


def _nearest_gather(
    g: Graph, x: Value, indices: dict[int, npt.NDArray[np.int64]], label: str
) -> Value:
    """Nearest along the axes of ``indices`` as one kernel. When each axis repeats
    every element ``k`` times (an integer upscale: ``nn.Upsample(scale_factor=2)``),
    a broadcast: ``[..., n, 1, ...]`` to ``[..., n, k, ...]`` and a reshape to
    ``[..., n * k, ...]`` (one copy). Otherwise one gather of the flattened block of
    axes from the first resized one to the last (a view of a contiguous ``x``), by
    the flat index of each output element (the identity along an axis in between
    that keeps its size), viewed at the result's shape."""
    repeats = {a: _repeat_factor(i, x.shape[a]) for a, i in indices.items()}
    if all(repeats.values()):
        grid: list[int] = []
        wide: list[int] = []
        for a, d in enumerate(x.shape):
            grid += [d, 1] if a in repeats else [d]
            wide += [d, repeats[a]] if a in repeats else [d]
        spread = g.broadcast(g.reshape(x, grid), wide)
        return g.reshape(spread, [d * repeats.get(a, 1) for a, d in enumerate(x.shape)])
    first, last = min(indices), max(indices)
    block = x.shape[first : last + 1]
    per_axis = [indices.get(a, np.arange(x.shape[a])) for a in range(first, last + 1)]
    flat_size = math.prod(len(i) for i in per_axis)
    check_tensor(
        f"{label} (the flat index table of axes {first}-{last})", [flat_size], 8
    )
    flat = np.ravel_multi_index(np.ix_(*per_axis), block).reshape(-1)
    outer, inner = list(x.shape[:first]), list(x.shape[last + 1 :])
    merged = g.reshape(x, [*outer, math.prod(block), *inner])
    y = _gather(g, merged, flat, first)
    return g.reshape(y, [*outer, *[len(i) for i in per_axis], *inner])


def _repeat_factor(indices: npt.NDArray[np.int64], n: int) -> int:
    """``k`` when ``indices`` is ``0, .., 0, 1, .., 1, .., n - 1`` with every entry
    ``k`` times, else 0."""
    k = len(indices) // n
    if k * n != len(indices):
        return 0
    return k if np.array_equal(indices, np.repeat(np.arange(n), k)) else 0


MAX_RUNS = 8
"""The most arithmetic runs a gather's indices may have for ``tg.gather``, whose
kernel has one affine loop nest per run; more become a ``tg.take`` of the constant
indices (one nest that loads each index)."""


def _gather(g: Graph, x: Value, indices: npt.NDArray[np.int64], axis: int) -> Value:
    """``np.take(x, indices, axis)``: ``x`` itself for the identity, a ``tg.gather``
    (all affine) when the indices have at most ``MAX_RUNS`` arithmetic runs, else a
    ``tg.take`` of them as an int32 constant."""
    n = x.shape[axis]
    if len(indices) == n and np.array_equal(indices, np.arange(n)):
        return x
    if _runs(indices) <= MAX_RUNS:
        return g.gather(x, indices, axis)
    return g.take(x, g.constant(indices.astype(np.int32), dtype="int32"), axis)


def _runs(indices: npt.NDArray[np.int64]) -> int:
    """How many maximal stretches of constant step ``indices`` splits into, each
    taken greedily from the left (as ``tg.gather``'s lowering cuts them)."""
    runs, p = 0, 0
    while p < len(indices):
        runs += 1
        if p + 1 == len(indices):
            break
        step = indices[p + 1] - indices[p]
        end = p + 2
        while end < len(indices) and indices[end] - indices[end - 1] == step:
            end += 1
        p = end
    return runs
