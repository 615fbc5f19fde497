"""The ``GridSample`` converter (opset 16 on): one ``tg.grid_sample``.

``X [N, C, D1..Dk]`` is sampled at the normalized coordinates of ``grid [N, O1..Ok,
k]``; the rules (modes, padding, out-of-range and NaN coordinates) are the op's,
``qidao/dialects/tg/grid_sample.py``. Opset 16's mode names ``bilinear`` and
``bicubic`` are opset 20's ``linear`` and ``cubic``; any k >= 1 converts (opset 16
defines only k = 2). The op computes in f32 or f64: a float16 ``X`` is cast to f32
and the result back, and a grid of another float type is cast to ``X``'s.
"""

from __future__ import annotations

from qidao.frontend.builder import Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

MODE_NAMES = {
    "bilinear": "linear",
    "linear": "linear",
    "nearest": "nearest",
    "bicubic": "cubic",
    "cubic": "cubic",
}
"""ONNX's mode names (opset 16 and opset 20) to the op's."""

PADDING_MODES = ("zeros", "border", "reflection")

FLOATS = ("float16", "float32", "float64")


def _text(node: Node, name: str, default: str) -> str:
    value = node.attr(name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


@converter("GridSample")
def _grid_sample(im: Importer, node: Node) -> list[Value | Array]:
    g, x, grid = im.graph, im.input(node, 0), im.input(node, 1)
    mode = _text(node, "mode", "linear" if node.opset >= 20 else "bilinear")
    if mode not in MODE_NAMES:
        raise node.error(
            f"mode='{mode}' is not supported (supported: {', '.join(MODE_NAMES)})"
        )
    padding = _text(node, "padding_mode", "zeros")
    if padding not in PADDING_MODES:
        raise node.error(
            f"padding_mode='{padding}' is not supported (supported: "
            f"{', '.join(PADDING_MODES)})"
        )
    align = int(node.attr("align_corners", 0))
    if align not in (0, 1):
        raise node.error(f"align_corners={align} must be 0 or 1")
    if x.dtype not in FLOATS or grid.dtype not in FLOATS:
        raise node.error(
            f"X is {x.dtype} and grid is {grid.dtype}; supported: float16, float32 "
            "or float64 for both"
        )
    if x.rank < 3 or grid.rank != x.rank or grid.shape[-1] != x.rank - 2:
        raise node.error(
            f"X {list(x.shape)} and grid {list(grid.shape)} do not fit: X is "
            "[N, C, D1..Dk] and grid [N, O1..Ok, k]"
        )
    compute = "float32" if x.dtype == "float16" else x.dtype
    xs = x if x.dtype == compute else g.cast(x, compute)
    gs = grid if grid.dtype == compute else g.cast(grid, compute)
    y = g.grid_sample(xs, gs, MODE_NAMES[mode], padding, bool(align))
    return [y if x.dtype == compute else g.cast(y, x.dtype)]
