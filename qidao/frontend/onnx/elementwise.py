"""Converters for elementwise ops, ``Gelu``, ``Identity`` and ``Constant``."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from onnx import numpy_helper

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

_BINARY: dict[str, Callable[[Graph, Value, Value], Value]] = {
    "Add": Graph.add,
    "Sub": Graph.sub,
    "Mul": Graph.mul,
    "Div": Graph.div,
    "Max": Graph.maximum,
    "Min": Graph.minimum,
}
_UNARY: dict[str, Callable[[Graph, Value], Value]] = {
    "Neg": Graph.neg,
    "Exp": Graph.exp,
    "Log": Graph.log,
    "Sqrt": Graph.sqrt,
    "Tanh": Graph.tanh,
    "Erf": Graph.erf,
    "Sin": Graph.sin,
    "Cos": Graph.cos,
    "Tan": Graph.tan,
    "Asin": Graph.asin,
    "Acos": Graph.acos,
    "Atan": Graph.atan,
    "Sinh": Graph.sinh,
    "Cosh": Graph.cosh,
    "Asinh": Graph.asinh,
    "Acosh": Graph.acosh,
    "Atanh": Graph.atanh,
    "Sigmoid": Graph.sigmoid,
    "Relu": Graph.relu,
}


@converter(*_BINARY)
def _binary(im: Importer, node: Node) -> list[Value | Array]:
    """Add/Sub/Mul/Div, and Max/Min folded pairwise over all their inputs."""
    fn = _BINARY[node.op_type]
    operands = [im.value(name) for name in node.inputs if name]
    if not operands:
        raise node.error("needs at least one input")
    result = operands[0]
    for operand in operands[1:]:
        result = fn(im.graph, result, operand)
    return [result]


@converter(*_UNARY)
def _unary(im: Importer, node: Node) -> list[Value | Array]:
    return [_UNARY[node.op_type](im.graph, im.input(node, 0))]


@converter("Gelu")
def _gelu(im: Importer, node: Node) -> list[Value | Array]:
    """Opset 20: ``approximate="none"`` is ``0.5 x (1 + erf(x / sqrt 2))``, ``"tanh"``
    is ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``."""
    g, x = im.graph, im.input(node, 0)
    approximate = node.attr("approximate", "none")
    if isinstance(approximate, bytes):  # ONNX string attributes arrive as bytes
        approximate = approximate.decode()
    if approximate == "none":
        inner = g.erf(x * (1.0 / math.sqrt(2.0)))
    elif approximate == "tanh":
        inner = g.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x)))
    else:
        raise node.error(f'approximate must be "none" or "tanh", got {approximate!r}')
    return [0.5 * x * (1.0 + inner)]


@converter("Identity")
def _identity(im: Importer, node: Node) -> list[Value | Array]:
    name = node.inputs[0]
    entry = im.env.get(name)
    return [im.value(name) if entry is None else entry]


@converter("Constant")
def _constant(im: Importer, node: Node) -> list[Value | Array]:
    attrs = node.attrs
    if "value" in attrs:
        return [numpy_helper.to_array(attrs["value"])]
    if "value_float" in attrs:
        return [np.array(attrs["value_float"], dtype=np.float32)]
    if "value_floats" in attrs:
        return [np.array(attrs["value_floats"], dtype=np.float32)]
    if "value_int" in attrs:
        return [np.array(attrs["value_int"], dtype=np.int64)]
    if "value_ints" in attrs:
        return [np.array(attrs["value_ints"], dtype=np.int64)]
    raise node.error(
        f"only value, value_float(s) and value_int(s) are supported, got {sorted(attrs)}"
    )
