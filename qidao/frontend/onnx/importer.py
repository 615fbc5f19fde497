"""``import_onnx``, the ``@converter`` registry, and the node walk converters build on.

A converter is a function ``(im: Importer, node: Node) -> list[Value | Array]``,
registered with ``@converter("OpType")``. ``Importer`` maps ONNX names to graph values
or compile-time constants (NumPy arrays) and gives converters their operands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError, OnnxImportError
from qidao.frontend.onnx.load import (
    check_output_dtype,
    check_supported,
    default_opset,
    infer_shapes,
    input_shape,
    load_model,
    node_label,
    static_shape,
    with_input_shapes,
)

Array = npt.NDArray[Any]
Converter = Callable[["Importer", "Node"], list[Value | Array]]

CONVERTERS: dict[str, Converter] = {}
"""ONNX op type (default domain) -> its converter; filled by ``@converter``."""


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register a function as the converter of ONNX ``op_types`` (default domain)."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            assert op_type not in CONVERTERS, f"two converters for {op_type}"
            CONVERTERS[op_type] = fn
        return fn

    return register


def import_onnx(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Import an ONNX model (a ``ModelProto`` or a path) as a verified tg module.

    ``input_shapes`` gives concrete shapes for graph inputs, replacing dynamic (or
    static) dimensions; every graph input needs a static shape in the end.
    """
    proto = load_model(model)
    check_supported(proto, CONVERTERS)
    proto = with_input_shapes(proto, input_shapes or {})
    proto = infer_shapes(proto)
    return Importer(proto).run()


@dataclass
class Node:
    """One ONNX node with its attributes decoded, for converters."""

    proto: Any
    index: int
    opset: int
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def op_type(self) -> str:
        return str(self.proto.op_type)

    @property
    def label(self) -> str:
        name = node_label(self.proto, self.index)
        return f"{self.op_type} node '{name}'"

    @property
    def inputs(self) -> list[str]:
        return [str(i) for i in self.proto.input]

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"{self.label}: {message}")


class Importer:
    """Walks the nodes of a shape-inferred model, building a tg graph."""

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.graph = Graph("main")
        self.opset = default_opset(proto)
        # an ONNX name -> a graph value or a compile-time constant
        self.env: dict[str, Value | Array] = {}
        self.materialized: dict[str, Value] = {}
        graph = proto.graph
        self.inferred: dict[str, tuple[int, ...] | None] = {
            vi.name: static_shape(vi) for vi in [*graph.value_info, *graph.output]
        }

    def run(self) -> ModuleOp:
        graph = self.proto.graph
        initializers = {t.name: t for t in graph.initializer}
        for name, tensor in initializers.items():
            self.env[name] = numpy_helper.to_array(tensor)
        for graph_input in graph.input:
            if graph_input.name not in initializers:
                name = str(graph_input.name)
                self.env[name] = self.graph.input(name, input_shape(graph_input))
        for index, node_proto in enumerate(graph.node):
            node = Node(
                node_proto,
                index,
                self.opset,
                {a.name: helper.get_attribute_value(a) for a in node_proto.attribute},
            )
            self._convert(node)
        outputs: list[Value] = []
        for graph_output in graph.output:
            check_output_dtype(graph_output)
            outputs.append(self.value(graph_output.name))
        self.graph.output(*outputs, names=[o.name for o in graph.output])
        try:
            return self.graph.module()
        except GraphError as e:
            raise OnnxImportError(str(e)) from None

    def _convert(self, node: Node) -> None:
        try:
            results = CONVERTERS[node.op_type](self, node)
        except GraphError as e:
            raise node.error(str(e)) from None
        outputs = [o for o in node.proto.output]
        if any(name for name in outputs[len(results) :]):
            raise node.error(
                f"only the first {len(results)} output(s) are supported, but the node "
                f"also asks for {[o for o in outputs[len(results) :] if o]}"
            )
        for name, result in zip(outputs, results, strict=False):
            if not name:
                continue
            self._check_shape(node, name, result)
            if isinstance(result, Value) and result.ssa.name_hint is None:
                result.named(name)
            self.env[name] = result

    def _check_shape(self, node: Node, name: str, result: Value | Array) -> None:
        expected = self.inferred.get(name)
        got = tuple(result.shape)
        if expected is not None and expected != got:
            raise node.error(
                f"qidao computed shape {list(got)} for output '{name}', but ONNX "
                f"shape inference says {list(expected)}"
            )

    # ---- operand access for converters ------------------------------------------

    def value(self, name: str) -> Value:
        """The graph value named ``name``; a constant becomes a ``tg.constant``."""
        if name not in self.env:
            raise OnnxImportError(f"tensor '{name}' is used before it is defined")
        entry = self.env[name]
        if isinstance(entry, Value):
            return entry
        if name not in self.materialized:
            self.materialized[name] = self.graph.constant(
                entry, dtype=str(entry.dtype), name=name
            )
        return self.materialized[name]

    def const(self, node: Node, name: str, what: str) -> Array:
        """The compile-time value of input ``name`` (an initializer or Constant)."""
        entry = self.env.get(name)
        if entry is None or isinstance(entry, Value):
            raise node.error(
                f"the {what} input '{name}' must be a constant (an initializer or a "
                "Constant node output); computed values are not supported"
            )
        return entry

    def input(self, node: Node, index: int) -> Value:
        names = node.inputs
        if index >= len(names) or not names[index]:
            raise node.error(f"input #{index} is missing")
        return self.value(names[index])

    def optional_input(self, node: Node, index: int) -> Value | None:
        names = node.inputs
        if index >= len(names) or not names[index]:
            return None
        return self.value(names[index])
