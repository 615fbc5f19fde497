"""Converters for 2-D NCHW network layers: ``Conv``, ``MaxPool``, ``AveragePool``,
``GlobalAveragePool`` and ``BatchNormalization``."""

from __future__ import annotations

from collections.abc import Sequence

from qidao.frontend.builder import Value
from qidao.frontend.onnx.importer import Array, Importer, Node, converter


def _window_padding(
    node: Node,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, int, int, int]:
    """tg padding ``[top, left, bottom, right]`` from ``pads`` or ``auto_pad``."""
    auto_pad = node.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad == "NOTSET":
        pads = [int(p) for p in node.attr("pads", [0, 0, 0, 0])]
        if len(pads) != 4:
            raise node.error(f"pads must have 4 values for a 2-D window, got {pads}")
        # ONNX [x1_begin, x2_begin, x1_end, x2_end] is tg's [top, left, bottom, right]
        return (pads[0], pads[1], pads[2], pads[3])
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.error(f"unknown auto_pad '{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return (begin[0], begin[1], end[0], end[1])


def _ints(node: Node, name: str, default: Sequence[int]) -> tuple[int, ...]:
    values = tuple(int(v) for v in node.attr(name, default))
    if len(values) != 2:
        raise node.error(
            f"{name} must have 2 values (only 2-D windows are supported), got "
            f"{list(values)}"
        )
    return values


def _expect_4d(node: Node, x: Value) -> None:
    if x.rank != 4:
        raise node.error(
            f"only 2-D {node.op_type} on NCHW input is supported, got input shape "
            f"{list(x.shape)}"
        )


def _reject(node: Node, attr: str, message: str) -> None:
    if node.attr(attr, 0):
        raise node.error(f"{attr}={node.attr(attr)} is not supported yet ({message})")


@converter("Conv")
def _conv(im: Importer, node: Node) -> list[Value | Array]:
    x, w = im.input(node, 0), im.input(node, 1)
    b = im.optional_input(node, 2)
    _expect_4d(node, x)
    kernel = w.shape[2:]
    if "kernel_shape" in node.attrs and _ints(node, "kernel_shape", ()) != kernel:
        raise node.error(
            f"kernel_shape {list(node.attr('kernel_shape'))} does not match the "
            f"weight shape {list(w.shape)}"
        )
    strides = _ints(node, "strides", (1, 1))
    dilations = _ints(node, "dilations", (1, 1))
    padding = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    y = im.graph.conv2d(
        x,
        w,
        b,
        strides=strides,
        padding=padding,
        dilation=dilations,
        groups=int(node.attr("group", 1)),
    )
    return [y]


@converter("MaxPool")
def _max_pool(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    _expect_4d(node, x)
    _reject(node, "ceil_mode", "use ceil_mode=0 or pad explicitly")
    _reject(node, "storage_order", "only row-major storage_order=0")
    kernel = _ints(node, "kernel_shape", ())
    strides = _ints(node, "strides", (1, 1))
    dilations = _ints(node, "dilations", (1, 1))
    padding = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    return [im.graph.max_pool2d(x, kernel, strides, padding, dilations)]


@converter("AveragePool")
def _average_pool(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    _expect_4d(node, x)
    _reject(node, "ceil_mode", "use ceil_mode=0 or pad explicitly")
    kernel = _ints(node, "kernel_shape", ())
    strides = _ints(node, "strides", (1, 1))
    dilations = _ints(node, "dilations", (1, 1))
    if dilations != (1, 1):
        raise node.error(f"dilations {list(dilations)} are not supported yet")
    padding = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    include = bool(node.attr("count_include_pad", 0))
    return [im.graph.avg_pool2d(x, kernel, strides, padding, include)]


@converter("GlobalAveragePool")
def _global_average_pool(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    if x.rank < 3:
        raise node.error(f"expects an input of rank >= 3, got {list(x.shape)}")
    return [im.graph.reduce_mean(x, list(range(2, x.rank)), keepdims=True)]


@converter("BatchNormalization")
def _batch_norm(im: Importer, node: Node) -> list[Value | Array]:
    _reject(node, "training_mode", "only inference batch normalization")
    x = im.input(node, 0)
    scale, bias, mean, var = (im.input(node, k) for k in range(1, 5))
    epsilon = float(node.attr("epsilon", 1e-5))
    return [im.graph.batch_norm(x, scale, bias, mean, var, epsilon)]
