"""The ONNX models of a staged compile (``staged.py``): cutting a model's nodes
into models of their own, with the types and constants they need."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import onnx
from onnx import helper

from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import subgraphs
from qidao.frontend.onnx.importer import with_constants
from qidao.frontend.onnx.load import infer_shapes

Compile = Callable[[Any], Any]
"""A tg module (or, for ``per_call``, an ONNX model) -> a callable program."""

Values = dict[str, Any]
"""The arrays of a call, by ONNX name."""


def names_read(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    """The names ``nodes`` read, their subgraphs' outer reads included."""
    names: set[str] = set()
    for node in nodes:
        names.update(str(i) for i in node.input if i)
        for graph in subgraphs.nested(node):
            names |= subgraphs.free_names(graph)
    return names


def defined(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    """The names ``nodes`` make."""
    return {str(o) for n in nodes for o in n.output if o}


def runtime_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs of ``proto`` that are not initializers, in order."""
    initializers = {str(t.name) for t in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in initializers]


def types(proto: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Every typed value of ``proto`` after ONNX's shape inference, by name."""
    inferred = infer_shapes(proto).graph
    return {
        str(vi.name): vi
        for vi in [*inferred.input, *inferred.value_info, *inferred.output]
    }


def typed_info(
    typed: dict[str, onnx.ValueInfoProto], name: str, static: bool = False
) -> onnx.ValueInfoProto:
    """The value info of ``name`` (its shape only where ``static`` and known,
    else every dimension symbolic)."""
    info = typed.get(name)
    if info is None or not info.type.tensor_type.elem_type:
        raise OnnxImportError(
            f"the tensor '{name}' crosses the stage cut, but ONNX's shape inference "
            "gives it no type: qidao cannot stage this model"
        )
    elem_type = int(info.type.tensor_type.elem_type)
    dims = list(info.type.tensor_type.shape.dim)
    if static and dims and all(d.HasField("dim_value") for d in dims):
        return helper.make_tensor_value_info(
            name, elem_type, [d.dim_value for d in dims]
        )
    if not info.type.tensor_type.HasField("shape"):  # the rank: the call's
        return helper.make_tensor_value_info(name, elem_type, None)
    shape = [f"{name}:{k}" for k in range(len(dims))]
    return helper.make_tensor_value_info(name, elem_type, shape)


def shape_of(typed: dict[str, onnx.ValueInfoProto], name: str) -> tuple[int, ...]:
    """The static shape ONNX's shape inference gives ``name``."""
    info = typed.get(name)
    dims = list(info.type.tensor_type.shape.dim) if info is not None else []
    if info is None or not all(d.HasField("dim_value") for d in dims):
        raise OnnxImportError(f"the tensor '{name}' has no inferred static shape")
    return tuple(int(d.dim_value) for d in dims)


def rank_of(typed: dict[str, onnx.ValueInfoProto], name: str) -> int:
    info = typed.get(name)
    if info is None or not info.type.tensor_type.HasField("shape"):
        raise OnnxImportError(f"the tensor '{name}' has no inferred rank")
    return len(info.type.tensor_type.shape.dim)


def model_of(
    proto: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
) -> onnx.ModelProto:
    """A model of ``nodes`` with ``proto``'s opsets, functions and the
    initializers the nodes read."""
    reads = names_read(nodes) | {str(o.name) for o in outputs}
    graph = helper.make_graph(
        nodes,
        str(proto.graph.name) or "main",
        inputs,
        outputs,
        initializer=[t for t in proto.graph.initializer if t.name in reads],
    )
    return helper.make_model(
        graph,
        opset_imports=list(proto.opset_import),
        ir_version=proto.ir_version,
        functions=list(proto.functions),
    )


def bind(proto: onnx.ModelProto, constants: Values) -> onnx.ModelProto:
    """``proto`` with its graph inputs that ``constants`` holds made initializers."""
    held = {
        str(i.name): constants[i.name] for i in proto.graph.input if i.name in constants
    }
    return with_constants(proto, held)  # type: ignore[no-any-return]


def subgraph_model(
    proto: onnx.ModelProto,
    graph: onnx.GraphProto,
    typed: dict[str, onnx.ValueInfoProto],
) -> tuple[onnx.ModelProto, list[str]]:
    """A subgraph (a ``Loop`` body, an ``If`` branch) as a model of its own, and
    the outer values it reads that became its inputs: its own inputs first, then
    those values (typed as in ``proto``); an outer initializer it reads is an
    initializer of the model."""
    free = sorted(subgraphs.free_names(graph))
    held = {str(t.name): t for t in proto.graph.initializer}
    outer = [n for n in free if n not in held]
    model = helper.make_model(
        helper.make_graph(
            list(graph.node),
            str(graph.name) or "subgraph",
            [*graph.input, *(typed_info(typed, n) for n in outer)],
            list(graph.output),
            initializer=[*graph.initializer, *(held[n] for n in free if n in held)],
        ),
        opset_imports=list(proto.opset_import),
        ir_version=proto.ir_version,
        functions=list(proto.functions),
    )
    return model, outer
