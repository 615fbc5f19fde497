"""Converters for ``MatMul`` and ``Gemm``."""

from __future__ import annotations

from collections.abc import Callable

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node


@converter("MatMul")
def _matmul(im: Importer, node: Node) -> list[Value | Array]:
    """NumPy ``matmul`` (``numpy_matmul``)."""
    return [numpy_matmul(im.graph, node, im.input(node, 0), im.input(node, 1))]


def numpy_matmul(
    g: Graph,
    node: Node,
    a: Value,
    b: Value,
    product: Callable[[Value, Value], Value] | None = None,
) -> Value:
    """NumPy ``matmul``: a 1-D operand becomes a 1xK / Kx1 matrix, and that
    dimension is dropped from the result. ``product`` multiplies the matrices
    (``g.matmul`` by default)."""
    if a.rank == 0 or b.rank == 0:
        raise node.error(f"{node.op_type} operands must have rank >= 1")
    a2 = g.reshape(a, (1, a.shape[0])) if a.rank == 1 else a
    b2 = g.reshape(b, (b.shape[0], 1)) if b.rank == 1 else b
    y = (product or g.matmul)(a2, b2)
    if a.rank > 1 and b.rank > 1:
        return y
    shape = list(y.shape)
    if b.rank == 1:
        del shape[-1]
    if a.rank == 1:
        del shape[-2 if b.rank > 1 else -1]
    return g.reshape(y, shape)


@converter("Gemm")
def _gemm(im: Importer, node: Node) -> list[Value | Array]:
    """``alpha * A' @ B' + beta * C`` with ``A' = A.T`` when ``transA`` (same for B)."""
    g = im.graph
    a, b = im.input(node, 0), im.input(node, 1)
    c = im.optional_input(node, 2)
    if node.attr("transA", 0):
        a = g.transpose(a, (1, 0))
    if node.attr("transB", 0):
        b = g.transpose(b, (1, 0))
    y = g.matmul(a, b)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if alpha != 1.0:
        y = y * alpha
    if c is not None and beta != 0.0:
        y = y + (c if beta == 1.0 else c * beta)
    return [y]
