"""Names in ONNX subgraphs (the bodies of ``If``, ``Loop``, ``Scan``).

A subgraph may read values of the graphs that enclose it by name (outer-scope
references). When the enclosing values are renamed (a function body bound to a
node, a loop body inlined once per iteration), those reads must follow, while the
names a subgraph defines itself shadow the outer ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import onnx


def defined(graph: onnx.GraphProto) -> set[str]:
    """The names a graph defines: its inputs, initializers and node outputs."""
    names = {str(i.name) for i in graph.input}
    names |= {str(t.name) for t in graph.initializer}
    names |= {str(o) for n in graph.node for o in n.output if o}
    return names


def nested(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The subgraphs among a node's attributes."""
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            yield from attribute.graphs


def free_names(graph: onnx.GraphProto) -> set[str]:
    """The names ``graph`` (and the subgraphs inside it) reads from outside."""
    own = defined(graph)
    reads = {str(i) for n in graph.node for i in n.input if i}
    reads |= {str(o.name) for o in graph.output}
    for node in graph.node:
        for inner in nested(node):
            reads |= free_names(inner)
    return reads - own


def rename_reads(graph: onnx.GraphProto, rename: Mapping[str, str]) -> None:
    """Rename, in place, the names ``graph`` reads from enclosing scopes (its own
    names shadow ``rename``'s keys), in its nested subgraphs too."""
    outer = {k: v for k, v in rename.items() if k not in defined(graph)}
    if not outer:
        return
    for node in graph.node:
        inputs = [outer.get(str(i), str(i)) for i in node.input]
        del node.input[:]
        node.input.extend(inputs)
        for inner in nested(node):
            rename_reads(inner, outer)
    for output in graph.output:
        output.name = outer.get(str(output.name), str(output.name))
