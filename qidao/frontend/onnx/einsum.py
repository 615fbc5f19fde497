"""The converter of ``Einsum``: ``qidao.frontend.einsum`` on the node's inputs.

Every equation NumPy's ``einsum`` takes is converted (transposes, diagonals, sums,
batched matmuls: see ``qidao/frontend/einsum.py``); an equation that is malformed
or does not fit the inputs' ranks and sizes is an error naming the node and the
equation.
"""

from __future__ import annotations

from qidao.frontend.builder import Value
from qidao.frontend.einsum import einsum
from qidao.frontend.errors import GraphError
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node


@converter("Einsum")
def _einsum(im: Importer, node: Node) -> list[Value | Array]:
    equation = node.attr("equation")
    if isinstance(equation, bytes):  # ONNX string attributes arrive as bytes
        equation = equation.decode()
    if not isinstance(equation, str) or not equation.strip():
        raise node.error("needs a non-empty equation attribute")
    operands = [im.input(node, k) for k in range(len(node.inputs))]
    try:
        return [einsum(im.graph, equation, operands)]
    except GraphError as e:
        raise node.error(str(e)) from None
