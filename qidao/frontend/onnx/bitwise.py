"""Converters for ``BitwiseAnd``, ``BitwiseOr``, ``BitwiseXor``, ``BitwiseNot`` and
``BitShift``: the ``tg.bitwise_*`` and ``tg.shift_*`` ops (``qidao/dialects/tg/bitwise.py``).

The bitwise ops take integers (and bools); ``BitShift`` takes integers, ``direction``
``"LEFT"`` or ``"RIGHT"`` (logical on unsigned types, arithmetic on signed ones). A
shift amount that is negative or at least the bit width gives 0 (``RIGHT`` of a
negative signed value: -1), as ONNX's reference and ONNX Runtime give.
"""

from __future__ import annotations

from collections.abc import Callable

from qidao.frontend.builder import Graph, TensorLike, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

_BINARY: dict[str, Callable[[Graph, TensorLike, TensorLike], Value]] = {
    "BitwiseAnd": Graph.bitwise_and,
    "BitwiseOr": Graph.bitwise_or,
    "BitwiseXor": Graph.bitwise_xor,
}
_FLOATS = ("float16", "float32", "float64")


def _integer_input(im: Importer, node: Node, k: int) -> Value:
    """Input #``k``, which must be an integer (or bool) tensor."""
    x = im.input(node, k)
    if x.dtype in _FLOATS:
        raise node.error(f"expects integer tensors, but input #{k} is {x.dtype}")
    return x


@converter(*_BINARY)
def _bitwise(im: Importer, node: Node) -> list[Value | Array]:
    a, b = _integer_input(im, node, 0), _integer_input(im, node, 1)
    return [_BINARY[node.op_type](im.graph, a, b)]


@converter("BitwiseNot")
def _bitwise_not(im: Importer, node: Node) -> list[Value | Array]:
    return [im.graph.bitwise_not(_integer_input(im, node, 0))]


@converter("BitShift")
def _bit_shift(im: Importer, node: Node) -> list[Value | Array]:
    """``X << Y`` or ``X >> Y``, broadcasting."""
    x, y = _integer_input(im, node, 0), _integer_input(im, node, 1)
    if x.dtype == "bool":
        raise node.error("expects integer tensors, but input #0 is bool")
    direction = node.attr("direction")
    if isinstance(direction, bytes):  # ONNX string attributes arrive as bytes
        direction = direction.decode()
    if direction == "LEFT":
        return [im.graph.shift_left(x, y)]
    if direction == "RIGHT":
        return [im.graph.shift_right(x, y)]
    raise node.error(f'direction must be "LEFT" or "RIGHT", got {direction!r}')
