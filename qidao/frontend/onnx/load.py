"""Loading an ONNX model and the checks before and around the node walk.

Steps 1-3 of ``import_onnx`` (load, scan for unsupported ops, fix the input shapes and
run shape inference), and the dtype / static-shape checks on graph inputs and outputs.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import onnx

from qidao.frontend.errors import OnnxImportError, UnsupportedOpsError


def load_model(model: Any) -> Any:
    """``model`` itself if it is a ``ModelProto``, else the model read from a path."""
    if isinstance(model, onnx.ModelProto):
        return model
    if not isinstance(model, str | os.PathLike):
        raise OnnxImportError(
            "import_onnx takes an onnx.ModelProto or a path to a .onnx file, got "
            f"{type(model).__name__}"
        )
    path = os.fspath(model)
    if not os.path.isfile(path):
        raise OnnxImportError(f"no ONNX file at '{path}'")
    try:
        proto = onnx.load(path)
    except Exception as e:  # protobuf raises DecodeError, RuntimeError, ...
        raise OnnxImportError(
            f"cannot read '{path}' as an ONNX model (the file is truncated or not "
            f"an ONNX protobuf): {type(e).__name__}: {e}"
        ) from None
    if not proto.HasField("graph") or not proto.opset_import:
        raise OnnxImportError(
            f"'{path}' is not an ONNX model: it has no graph or no opset_import "
            "(the file is truncated or not an ONNX protobuf)"
        )
    return proto


def node_label(node: Any, index: int) -> str:
    """The node's name, or ``#index`` for an unnamed node."""
    return str(node.name) if node.name else f"#{index}"


def check_supported(proto: Any, supported: Collection[str]) -> None:
    """Raise ``UnsupportedOpsError`` naming every op type not in ``supported`` (or not
    in the default domain), with the nodes that use it."""
    unsupported: dict[str, list[str]] = {}
    for index, node in enumerate(proto.graph.node):
        op_type = str(node.op_type)
        if node.domain not in ("", "ai.onnx"):
            op_type = f"{node.domain}::{op_type}"
        elif op_type in supported:
            continue
        unsupported.setdefault(op_type, []).append(node_label(node, index))
    if unsupported:
        raise UnsupportedOpsError(unsupported)


def with_input_shapes(proto: Any, input_shapes: Mapping[str, Sequence[int]]) -> Any:
    """A copy of ``proto`` whose graph inputs have the shapes ``input_shapes`` gives."""
    if not input_shapes:
        return proto
    inputs = {i.name: i for i in proto.graph.input}
    unknown = sorted(set(input_shapes) - set(inputs))
    if unknown:
        raise OnnxImportError(
            f"input_shapes names {unknown}, which are not graph inputs; the inputs "
            f"are {sorted(inputs)}"
        )
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    for graph_input in proto.graph.input:
        if graph_input.name not in input_shapes:
            continue
        shape = [int(d) for d in input_shapes[graph_input.name]]
        tensor_type = graph_input.type.tensor_type
        declared = tensor_type.shape.dim
        if tensor_type.HasField("shape") and len(declared) != len(shape):
            raise OnnxImportError(
                f"input_shapes gives input '{graph_input.name}' rank {len(shape)} "
                f"{shape}, but the model declares rank {len(declared)}"
            )
        tensor_type.shape.Clear()
        for d in shape:
            tensor_type.shape.dim.add().dim_value = d
    return proto


def infer_shapes(proto: Any) -> Any:
    """``proto`` with ONNX's inferred shapes (strict mode, types checked)."""
    try:
        return onnx.shape_inference.infer_shapes(
            proto, check_type=True, strict_mode=True
        )
    except onnx.shape_inference.InferenceError as e:
        raise OnnxImportError(f"ONNX shape inference failed: {e}") from None


def default_opset(proto: Any) -> int:
    """The opset version the model imports for the default ONNX domain."""
    for opset in proto.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return int(opset.version)
    raise OnnxImportError("the model imports no opset of the default ONNX domain")


def static_shape(value_info: Any) -> tuple[int, ...] | None:
    """The shape of ``value_info``, or None if its rank or a dimension is unknown."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(int(d.dim_value))
    return tuple(dims)


def input_shape(graph_input: Any) -> tuple[int, ...]:
    """The static shape of a float32 graph input; other inputs are an error."""
    name = str(graph_input.name)
    elem_type = graph_input.type.tensor_type.elem_type
    if elem_type != onnx.TensorProto.FLOAT:
        raise OnnxImportError(
            f"graph input '{name}' has dtype {_dtype_text(elem_type)}; only "
            "float32 inputs are supported for now"
        )
    shape = static_shape(graph_input)
    if shape is None:
        raise OnnxImportError(
            f"graph input '{name}' has a dynamic shape {_shape_text(graph_input)}; "
            "qidao needs static shapes: pass concrete ones, e.g. "
            f"import_onnx(model, input_shapes={{{name!r}: "
            f"{_example_shape(graph_input)}}})"
        )
    return shape


def check_output_dtype(graph_output: Any) -> None:
    """Raise unless the graph output is float32."""
    elem_type = graph_output.type.tensor_type.elem_type
    if elem_type != onnx.TensorProto.FLOAT:
        raise OnnxImportError(
            f"graph output '{graph_output.name}' has dtype "
            f"{_dtype_text(elem_type)}; only float32 outputs are supported"
        )


def _shape_text(value_info: Any) -> str:
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return "unknown rank"
    dims = [
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
        for d in t.shape.dim
    ]
    return "[" + ", ".join(dims) + "]"


def _example_shape(value_info: Any) -> tuple[int, ...]:
    """The declared shape with every unknown dimension set to 1."""
    dims = value_info.type.tensor_type.shape.dim
    return tuple(int(d.dim_value) if d.HasField("dim_value") else 1 for d in dims)


def _dtype_text(elem_type: int) -> str:
    return str(onnx.TensorProto.DataType.Name(elem_type))
