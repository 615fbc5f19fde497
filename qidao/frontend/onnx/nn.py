"""Converters for network layers: ``Conv`` and ``ConvTranspose`` (1-D, 2-D and 3-D),
the pools ``MaxPool``, ``AveragePool`` and ``LpPool`` (1-D, 2-D and 3-D),
``GlobalAveragePool``, ``GlobalLpPool`` and ``BatchNormalization``.

Every rank of convolution and pool is built from the 2-D tg ops (``tg.conv2d``,
``tg.max_pool2d``, ``tg.avg_pool2d``) by ``qidao/frontend/spatial.py``: 1-D on the
unit-height view ``[N, C, 1, L]``, a 3-D convolution as a 2-D one over gathered
depth windows, a 3-D pool as two separable 2-D pools. So every rank gets the one
2-D lowering, its algorithms, layouts, schedules and gradients.

``ConvTranspose`` is a convolution too. Along an axis of ``n`` elements with kernel
``k``, stride ``s``, dilation ``d``, padding ``(begin, end)`` and ``output_padding``
``e``, output ``o`` sums ``x[i] * W[j]`` over ``i * s + j * d - begin = o``. That is
a stride-1 convolution, with the kernel flipped and its two channel axes swapped
(per group), of the input spread out by ``s - 1`` zeros between elements and padded
by ``d * (k - 1) - begin`` zeros before and ``d * (k - 1) - end + e`` after (cropped
where that is negative): one ``tg.pad`` of the view ``[..., n, 1]`` to ``[..., n',
s]``, viewed back as ``[..., n' * s]`` and sliced (``_transposed_conv``). The
convolution multiplies the inserted zeros too (``s^2`` times the work of a direct
scatter in 2-D: at stride 2 with a 4x4 kernel, 64 to 32 channels on 32x32, a third
of ONNX Runtime's speed on one thread), which keeps it one kernel the conv schedules
already handle. A constant weight is flipped at import.

``ceil_mode=1`` is end padding: the output size is ONNX's (ceil, less the last
window when it would start in the end padding: opset 22's rule; an older model that
would count such a window is refused), and the padding the last window runs past
the declared ``pads`` is added at the end. Max never takes padding, and
an average without ``count_include_pad`` counts real elements only, so both clip the
window exactly. With ``count_include_pad=1`` the divisor counts the declared padding
but not the ceil padding (ONNX's reference): the declared padding is then made real
(a ``tg.pad`` of zeros) and the average counts the real elements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node
from qidao.frontend.spatial import SPATIAL_RANKS, Window, conv_nd, pool_nd

Axis = Window
"""One spatial axis of a pool window: ``(kernel, stride, dilation, pad_begin,
pad_end)``."""


def _window_padding(
    node: Node,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The padding ``(begin, end)`` per spatial axis, from ``pads`` or ``auto_pad``."""
    rank = len(spatial)
    auto_pad = node.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad == "NOTSET":
        pads = [int(p) for p in node.attr("pads", [0] * 2 * rank)]
        if len(pads) != 2 * rank:
            raise node.error(
                f"pads must have {2 * rank} values for a {rank}-D window, got {pads}"
            )
        # ONNX [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
        return tuple(pads[:rank]), tuple(pads[rank:])
    if auto_pad == "VALID":
        return (0,) * rank, (0,) * rank
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.error(f"unknown auto_pad '{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return tuple(begin), tuple(end)


def _ints(
    node: Node, name: str, default: Sequence[int] | None, count: int
) -> tuple[int, ...]:
    """The int-list attribute ``name`` with ``count`` values (one per spatial axis);
    a missing one is ``default``, or an error when there is none."""
    if name not in node.attrs:
        if default is None:
            raise node.error(f"the attribute {name} is required")
        return tuple(default)
    values = tuple(int(v) for v in node.attr(name))
    if len(values) != count:
        raise node.error(
            f"{name} must have {count} values (one per spatial axis of the input), "
            f"got {list(values)}"
        )
    return values


def _spatial_rank(node: Node, x: Value) -> int:
    """The number of spatial axes of ``[N, C, *spatial]``: 1, 2 or 3, else an error."""
    rank = x.rank - 2
    if rank not in SPATIAL_RANKS:
        raise node.error(
            "expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions, got "
            f"input shape {list(x.shape)}"
        )
    return rank


@converter("Conv")
def _conv(im: Importer, node: Node) -> list[Value | Array]:
    """Convolution of ``[N, C, *spatial]`` with 1, 2 or 3 spatial axes: one
    ``tg.conv2d``, 1-D on a unit-height view and 3-D over gathered depth windows
    (``qidao/frontend/spatial.py``)."""
    x, w = im.input(node, 0), im.input(node, 1)
    b = im.optional_input(node, 2)
    rank = _spatial_rank(node, x)
    if w.rank != x.rank:
        raise node.error(
            f"the weight shape {list(w.shape)} does not fit the input shape "
            f"{list(x.shape)} (expected [M, C / group, *kernel] of rank {x.rank})"
        )
    kernel = w.shape[2:]
    if _ints(node, "kernel_shape", kernel, rank) != kernel:
        raise node.error(
            f"kernel_shape {list(node.attr('kernel_shape'))} does not match the "
            f"weight shape {list(w.shape)}"
        )
    strides = _ints(node, "strides", (1,) * rank, rank)
    dilations = _ints(node, "dilations", (1,) * rank, rank)
    begin, end = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    y = conv_nd(
        im.graph,
        x,
        w,
        b,
        strides=strides,
        padding=(*begin, *end),
        dilation=dilations,
        groups=int(node.attr("group", 1)),
    )
    return [y]


@converter("ConvTranspose")
def _conv_transpose(im: Importer, node: Node) -> list[Value | Array]:
    """The transpose of ``Conv`` (1-D, 2-D and 3-D): each input element adds itself
    times the kernel to a window of the output, at ``stride`` steps. As a convolution
    (the module docstring): zeros between the input elements, padding, then a
    stride-1 convolution with the kernel flipped and its channel axes swapped."""
    g, x = im.graph, im.input(node, 0)
    rank = _spatial_rank(node, x)
    if x.dtype not in ("float16", "float32", "float64"):
        raise node.error(f"expects a float input, got {x.dtype}")
    groups = int(node.attr("group", 1))
    weight = _transposed_weight(im, node, x, groups)
    declared = list(im.env[node.inputs[1]].shape)  # [C, M / group, *kernel]
    kernel = weight.shape[2:]
    if _ints(node, "kernel_shape", kernel, rank) != kernel:
        raise node.error(
            f"kernel_shape {list(node.attr('kernel_shape'))} does not match the "
            f"weight shape {declared}"
        )
    strides = _ints(node, "strides", (1,) * rank, rank)
    dilations = _ints(node, "dilations", (1,) * rank, rank)
    extra = _ints(node, "output_padding", (0,) * rank, rank)
    if min(strides) < 1 or min(dilations) < 1 or min(extra) < 0:
        raise node.error(
            f"strides {list(strides)} and dilations {list(dilations)} must be >= 1 "
            f"and output_padding {list(extra)} >= 0"
        )
    axes = [
        (k, s, d, e)
        for k, s, d, e in zip(kernel, strides, dilations, extra, strict=True)
    ]
    begin, end = _transposed_padding(node, x.shape[2:], axes)
    out = [
        s * (n - 1) + d * (k - 1) + 1 + e - b - f
        for n, (k, s, d, e), b, f in zip(x.shape[2:], axes, begin, end, strict=True)
    ]
    if min(out) < 1:
        raise node.error(
            f"the padding {[*begin, *end]} leaves an output of spatial size {out} "
            f"(input shape {list(x.shape)}, weight shape {declared})"
        )
    bias = im.optional_input(node, 2)
    return [_transposed_conv(g, x, weight, bias, axes, begin, end, groups)]


def _transposed_weight(
    im: Importer, node: Node, x: Value, groups: int
) -> Value | Array:
    """ConvTranspose's weight ``[C, M / group, *kernel]`` as the weight of the
    equivalent convolution, ``[M, C / group, *kernel]`` flipped along every spatial
    axis: in NumPy when it is a constant, else in tg ops."""
    names = node.inputs
    if len(names) < 2 or not names[1]:
        raise node.error("the weight input W is missing")
    entry = im.env.get(names[1])
    if entry is None:
        raise node.error(f"tensor '{names[1]}' is used before it is defined")
    shape = tuple(entry.shape)
    channels = x.shape[1]
    if len(shape) != x.rank or shape[0] != channels:
        raise node.error(
            f"the weight shape {list(shape)} does not fit the input shape "
            f"{list(x.shape)} (expected [{channels}, M / group, *kernel])"
        )
    if groups < 1 or channels % groups:
        raise node.error(f"group={groups} must divide the {channels} input channels")
    per_group, kernel = shape[1], shape[2:]
    grouped = [groups, channels // groups, per_group, *kernel]
    swapped = [groups * per_group, channels // groups, *kernel]
    spatial = range(2, len(shape))
    if not isinstance(entry, Value):
        w = entry.reshape(grouped).swapaxes(1, 2).reshape(swapped)
        flipped = w[(slice(None), slice(None), *[slice(None, None, -1)] * len(kernel))]
        return np.ascontiguousarray(flipped)
    g = im.graph
    perm = [0, 2, 1, *range(3, len(grouped))]
    value = g.reshape(g.transpose(g.reshape(entry, grouped), perm), swapped)
    steps = [1, 1, *[-1 if value.shape[a] > 1 else 1 for a in spatial]]
    return value if min(steps) == 1 else g.slice(value, [], None, steps)


def _transposed_padding(
    node: Node, sizes: Sequence[int], axes: list[tuple[int, int, int, int]]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """How much of the full output ConvTranspose drops ``(begin, end)`` per spatial
    axis (negative: zeros added), from ``pads``, ``auto_pad`` or ``output_shape``.

    The full output of an axis of ``n`` elements (kernel ``k``, stride ``s``,
    dilation ``d``, output padding ``e``) has ``s * (n - 1) + d * (k - 1) + 1 + e``.
    ``output_shape`` (which wins over ``pads``) and ``auto_pad=SAME_*`` (an output
    of ``n * s``) fix the output size, and the difference is split as ONNX and ONNX
    Runtime do: the larger half at the end for ``SAME_UPPER``, at the beginning
    otherwise. An output larger than the full one gets zeros (and the bias) at the
    end, by less than a stride (ONNX Runtime refuses more)."""
    rank = len(sizes)
    auto_pad = node.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise node.error(
            f"auto_pad='{auto_pad}' is not supported (NOTSET, VALID, SAME_UPPER or "
            "SAME_LOWER)"
        )
    full = [
        s * (n - 1) + d * (k - 1) + 1 + e
        for n, (k, s, d, e) in zip(sizes, axes, strict=True)
    ]
    if "output_shape" in node.attrs:
        out = tuple(int(v) for v in node.attr("output_shape"))[-rank:]
        if len(out) != rank:
            raise node.error(
                f"output_shape {list(node.attr('output_shape'))} must give the "
                f"{rank} spatial sizes of the output"
            )
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = tuple(n * s for n, (_, s, _, _) in zip(sizes, axes, strict=True))
        if any(e for _, _, _, e in axes) or any(
            f < o for f, o in zip(full, out, strict=True)
        ):
            # ONNX shape inference then adds output_padding to n * s, or keeps
            # the full size, where ONNX's reference and ONNX Runtime do not
            raise node.error(
                f"auto_pad={auto_pad} with output_padding {[e for *_, e in axes]} "
                f"and an output of input size * stride {list(out)} (the full output "
                f"is {full}) is not supported: ONNX's shape inference and its "
                "reference disagree on the output size; give pads or output_shape "
                "instead"
            )
    elif auto_pad == "VALID":
        return (0,) * rank, (0,) * rank
    else:
        pads = _ints(node, "pads", (0,) * 2 * rank, 2 * rank)
        if min(pads) < 0:
            raise node.error(f"pads {list(pads)} must be >= 0")
        return pads[:rank], pads[rank:]
    begin: list[int] = []
    end: list[int] = []
    for size, natural, wanted, (_, s, _, _) in zip(sizes, full, out, axes, strict=True):
        total = natural - wanted
        if total <= -s:
            raise node.error(
                f"output_shape {list(out)} is larger than ConvTranspose makes from "
                f"an input of size {size} (at most {natural + s - 1} along that axis)"
            )
        if total < 0:
            begin.append(0)
            end.append(total)
        elif auto_pad == "SAME_UPPER":
            begin.append(total // 2)
            end.append(total - total // 2)
        else:
            begin.append(total - total // 2)
            end.append(total // 2)
    return tuple(begin), tuple(end)


def _transposed_conv(
    g: Graph,
    x: Value,
    weight: Value | Array,
    bias: Value | None,
    axes: list[tuple[int, int, int, int]],
    begin: Sequence[int],
    end: Sequence[int],
    groups: int,
) -> Value:
    """ConvTranspose of ``[N, C, *spatial]`` ``x`` with the flipped, channel-swapped
    ``weight``: along each axis ``(kernel, stride, dilation, output_padding)``,
    ``stride - 1`` zeros between input elements, ``d * (k - 1) - begin`` zeros before
    the first and ``d * (k - 1) - end + output_padding`` after the last (a negative
    count crops instead), then a stride-1 convolution (``conv_nd``).

    With a stride, all those zeros come from one ``tg.pad`` of the view ``[N, C, H,
    1, W, 1]`` (one unit axis after each spatial axis): whole groups of ``stride``
    before and after each spatial axis and ``stride - 1`` after each element along
    the unit axes, viewed back as ``[N, C, H', W']`` and sliced (a view) to where the
    convolution reads. A float16 one computes in float32 (``tg.pad`` takes f32 and
    f64) and rounds its result once."""
    if x.dtype == "float16":
        if isinstance(weight, Value):
            wide: Value | Array = g.cast(weight, "float32")
        else:
            wide = weight.astype(np.float32)
        y = _transposed_conv(
            g,
            g.cast(x, "float32"),
            wide,
            None if bias is None else g.cast(bias, "float32"),
            axes,
            begin,
            end,
            groups,
        )
        return g.cast(y, "float16")
    n, c, *sizes = x.shape
    low = [d * (k - 1) - b for (k, _, d, _), b in zip(axes, begin, strict=True)]
    high = [d * (k - 1) - f + e for (k, _, d, e), f in zip(axes, end, strict=True)]
    strides = [s for _, s, _, _ in axes]
    dilation = [d for _, _, d, _ in axes]
    if max(strides) == 1 and min(*low, *high) >= 0:
        return conv_nd(
            g,
            x,
            weight,
            bias,
            strides=[1] * len(axes),
            padding=(*low, *high),
            dilation=dilation,
            groups=groups,
        )
    groups_before, starts, lengths, groups_after = [], [], [], []
    for size, s, lo, hi in zip(sizes, strides, low, high, strict=True):
        before = max(-(-lo // s), 0)  # whole groups of s, ceil(lo / s)
        start = before * s - lo  # where the convolution's input starts
        length = (size - 1) * s + 1 + lo + hi
        groups_before.append(before)
        starts.append(start)
        lengths.append(length)
        groups_after.append(max(-(-(start + length) // s) - before - size, 0))
    interleaved, pad_low, pad_high, spread_sizes = [], [], [], []
    for size, s, before, after in zip(
        sizes, strides, groups_before, groups_after, strict=True
    ):
        interleaved += [size, 1]
        pad_low += [before, 0]
        pad_high += [after, s - 1]
        spread_sizes.append((before + size + after) * s)
    grid = g.pad(
        g.reshape(x, [n, c, *interleaved]), [0, 0, *pad_low], [0, 0, *pad_high]
    )
    spread = g.reshape(grid, [n, c, *spread_sizes])
    window = g.slice(
        spread,
        [0, 0, *starts],
        [n, c, *[a + b for a, b in zip(starts, lengths, strict=True)]],
    )
    zeros = [0] * 2 * len(axes)
    return conv_nd(
        g,
        window,
        weight,
        bias,
        strides=[1] * len(axes),
        padding=zeros,
        dilation=dilation,
        groups=groups,
    )


# ---- pools ------------------------------------------------------------------------


def _ceil_padding(node: Node, size: int, axis: Axis) -> int:
    """The end padding ``ceil_mode=1`` adds beyond the declared one: what the last
    window runs past it. The output size is ``ceil((size + pads - extent) / stride)
    + 1``, less one from opset 22 when that last window would start in the end
    padding (and so hold no input element); before 22 ONNX counts that window, and
    such a node is refused."""
    k, s, d, begin, end = axis
    span = size + begin + end - (d * (k - 1) + 1)
    out = -(-span // s) + 1
    if (out - 1) * s >= size + begin:
        if node.opset < 22:
            raise node.error(
                f"ceil_mode=1: the last window along an axis of size {size} (pads "
                f"{begin}, {end}, kernel {k}, stride {s}) would start in the end "
                f"padding and hold no input element; ONNX counts it in the output "
                f"before opset 22 and drops it from 22 on, as qidao does: convert "
                f"the model to opset 22 (the model imports {node.opset})"
            )
        out -= 1
    return max((out - 1) * s + d * (k - 1) + 1 - (size + begin + end), 0)


def _pool_axes(node: Node, x: Value) -> tuple[list[Axis], list[int]]:
    """The window along each spatial axis of ``x`` (its pads as declared), and the
    end padding ``ceil_mode`` adds to each."""
    rank = _spatial_rank(node, x)
    kernel = _ints(node, "kernel_shape", None, rank)
    strides = _ints(node, "strides", (1,) * rank, rank)
    dilations = _ints(node, "dilations", (1,) * rank, rank)
    if min(kernel) < 1 or min(strides) < 1 or min(dilations) < 1:
        raise node.error(
            f"kernel_shape {list(kernel)}, strides {list(strides)} and dilations "
            f"{list(dilations)} must be >= 1"
        )
    begin, end = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    axes = list(zip(kernel, strides, dilations, begin, end, strict=True))
    extra = [0] * rank
    if node.attr("ceil_mode", 0):
        extra = [
            _ceil_padding(node, n, a) for n, a in zip(x.shape[2:], axes, strict=True)
        ]
    return axes, extra


def _with_ceil_padding(axes: list[Axis], extra: list[int]) -> list[Axis]:
    return [
        (k, s, d, b, e + more)
        for (k, s, d, b, e), more in zip(axes, extra, strict=True)
    ]


@converter("MaxPool")
def _max_pool(im: Importer, node: Node) -> list[Value | Array]:
    """The max over each window; padding never wins. Only the first output (the
    values): the Indices output is refused, so ``storage_order`` changes nothing."""
    x = im.input(node, 0)
    axes, extra = _pool_axes(node, x)
    return [pool_nd(im.graph, x, "max", _with_ceil_padding(axes, extra), False)]


@converter("AveragePool")
def _average_pool(im: Importer, node: Node) -> list[Value | Array]:
    """The mean over each window; ``count_include_pad`` counts the declared padding
    in the divisor (never the ``ceil_mode`` padding)."""
    g, x = im.graph, im.input(node, 0)
    axes, extra = _pool_axes(node, x)
    include = bool(node.attr("count_include_pad", 0))
    if include and any(extra):
        # the divisor counts the declared padding but not the ceil padding: make
        # the declared padding real zeros and count real elements
        begin, end = [a[3] for a in axes], [a[4] for a in axes]
        if any(begin) or any(end):
            x = g.pad(x, [0, 0, *begin], [0, 0, *end], 0.0)
        axes = [(k, s, d, 0, 0) for k, s, d, _, _ in axes]
        include = False
    return [pool_nd(g, x, "avg", _with_ceil_padding(axes, extra), include)]


def _power(x: Value, p: int) -> Value:
    """``x ** p`` for an integer ``p >= 1``: ``p - 1`` multiplications."""
    result = x
    for _ in range(p - 1):
        result = result * x
    return result


def norm_root(g: Graph, x: Value, p: int) -> Value:
    """``x ** (1 / p)`` for a sum ``x >= 0`` of ``|element| ** p``: sqrt for p = 2
    and 4, else ``exp(log(x) / p)`` (0 gives ``exp(-inf) = 0``). A zero sum is 0
    with a zero gradient, PyTorch's ``vector_norm`` at a zero vector: the result is
    ``where(x == 0, 0, root(where(x == 0, 1, x)))``, so the root's derivative there
    (``1 / (2 sqrt(0))`` = inf) never meets the zero gradient of the elements (it
    made ``0 * inf`` = NaN)."""
    if p == 1:
        return x
    zero = g.equal(x, 0.0)
    safe = g.where(zero, 1.0, x)
    if p == 2:
        root = g.sqrt(safe)
    elif p == 4:
        root = g.sqrt(g.sqrt(safe))
    else:
        root = g.exp(g.log(safe) * (1.0 / p))
    return g.where(zero, 0.0, root)


def _lp_order(node: Node) -> int:
    p = node.attr("p", 2)
    if int(p) != p or int(p) < 1:
        raise node.error(f"p must be an integer >= 1, got {p}")
    return int(p)


@converter("LpPool")
def _lp_pool(im: Importer, node: Node) -> list[Value | Array]:
    """``(sum of |x| ** p over the window) ** (1 / p)``, padding counting as 0: the
    sum is ``kernel volume * mean`` with every padded position (the ``ceil_mode``
    ones too) in the divisor. A window of zeros has a zero gradient (``norm_root``,
    PyTorch's ``vector_norm``)."""
    g, x = im.graph, im.input(node, 0)
    p = _lp_order(node)
    axes, extra = _pool_axes(node, x)
    powered = _power(g.maximum(x, g.neg(x)), p)  # |x|: exact
    mean = pool_nd(g, powered, "avg", _with_ceil_padding(axes, extra), True)
    volume = 1
    for axis in axes:
        volume *= axis[0]
    return [norm_root(g, mean * float(volume), p)]


@converter("GlobalAveragePool")
def _global_average_pool(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    if x.rank < 3:
        raise node.error(f"expects an input of rank >= 3, got {list(x.shape)}")
    return [im.graph.reduce_mean(x, list(range(2, x.rank)), keepdims=True)]


@converter("GlobalLpPool")
def _global_lp_pool(im: Importer, node: Node) -> list[Value | Array]:
    """``(sum of |x| ** p over every dimension after N and C) ** (1 / p)``, kept as
    size 1; a plane of zeros has a zero gradient (``norm_root``)."""
    g, x = im.graph, im.input(node, 0)
    if x.rank < 3:
        raise node.error(f"expects an input of rank >= 3, got {list(x.shape)}")
    p = _lp_order(node)
    powered = _power(g.maximum(x, g.neg(x)), p)  # |x|: exact
    return [
        norm_root(g, g.reduce_sum(powered, list(range(2, x.rank)), keepdims=True), p)
    ]


@converter("BatchNormalization")
def _batch_norm(im: Importer, node: Node) -> list[Value | Array]:
    """Inference: one ``tg.batch_norm`` with the running statistics. Training
    (``training_mode=1``, opset 14): :func:`_batch_norm_training`."""
    x = im.input(node, 0)
    scale, bias, mean, var = (im.input(node, k) for k in range(1, 5))
    epsilon = float(node.attr("epsilon", 1e-5))
    if node.attr("training_mode", 0):
        return _batch_norm_training(im, node, x, scale, bias, mean, var, epsilon)
    return [im.graph.batch_norm(x, scale, bias, mean, var, epsilon)]


def _batch_norm_training(
    im: Importer,
    node: Node,
    x: Value,
    scale: Value,
    bias: Value,
    mean: Value,
    var: Value,
    epsilon: float,
) -> list[Value | Array]:
    """Normalized by the batch's own mean and (population) variance over every
    axis but the channels (1); the optional outputs #1 and #2 are the running
    statistics ``running * momentum + batch * (1 - momentum)`` (ONNX's reference;
    BiT's weight standardization is such a batch norm over a weight)."""
    g = im.graph
    if x.rank < 2:
        raise node.error(f"expects an input of rank >= 2, got {list(x.shape)}")
    axes = [0, *range(2, x.rank)]
    channels = [1, x.shape[1], *([1] * (x.rank - 2))]
    batch_mean = g.reduce_mean(x, axes, keepdims=True)
    centered = x - batch_mean
    batch_var = g.reduce_mean(centered * centered, axes, keepdims=True)
    y = centered / g.sqrt(batch_var + epsilon)
    y = y * g.reshape(scale, channels) + g.reshape(bias, channels)
    outputs: list[Value | Array] = [y]
    wanted = [str(o) for o in node.proto.output]
    if len(wanted) > 1 and any(wanted[1:]):
        momentum = float(node.attr("momentum", 0.9))
        for running, batch in ((mean, batch_mean), (var, batch_var)):
            current = g.reshape(batch, [x.shape[1]])
            outputs.append(running * momentum + current * (1.0 - momentum))
    return outputs
