"""Loading an ONNX model and the checks before and around the node walk.

Steps 1 and 3 of ``import_onnx`` (load; fix the input shapes and run shape inference;
step 2, the scan for unsupported ops, is ``functions.check_supported``), and the dtype /
static-shape checks on graph inputs and outputs.

Loading checks what a malformed model would otherwise turn into a traceback from deep
inside: an IR version or opset newer than the installed onnx, a node using a tensor
before it is defined (a cycle, or nodes out of order), a tensor defined twice, tensor
data that does not fill its shape; a declared shape that contradicts inference names
the tensor and its node. External data files are read from the model's folder only:
every location is checked (relative, no ``..``, no symlink out, inside the file)
before any is read.

The cycle an error names is the shortest one through the first node that reads a
tensor defined later: ``nx.single_source_shortest_path`` (a breadth-first search)
from that node on the producer→consumer graph is the right algorithm, because the
shortest path to one of the node's own producers closes that cycle.

The converters read default-domain opsets ``OLDEST_OPSET`` (11) to the newest the
installed onnx knows. A model at an older opset is converted to 11 with
``onnx.version_converter`` as it loads (the converter's adapters rewrite what
changed, e.g. ``Upsample`` into ``Resize``); one that does not convert is refused
with its opset and the converter's reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx
import onnx
import onnx.version_converter

from qidao.frontend.errors import OnnxImportError, UnsupportedOpsError

OLDEST_OPSET = 11
"""The oldest default-domain opset the converters read; older models are converted
to it (``upgrade_opset``)."""


def load_model(model: Any) -> Any:
    """``model`` itself if it is a ``ModelProto``, else the model read from a path,
    with its external data files (which must lie in the model's folder).

    Either way the model's opsets and node order are checked (``check_model``), and
    a model older than opset ``OLDEST_OPSET`` comes back converted to it (a copy).
    """
    if isinstance(model, onnx.ModelProto):
        refuse_external_data(model)
        check_model(model)
        return upgrade_opset(model)
    if not isinstance(model, str | os.PathLike):
        raise OnnxImportError(
            "import_onnx takes an onnx.ModelProto or a path to a .onnx file, got "
            f"{type(model).__name__}"
        )
    path = os.fspath(model)
    if not os.path.isfile(path):
        raise OnnxImportError(f"no ONNX file at '{path}'")
    try:
        proto = onnx.load(path, load_external_data=False)  # read below, checked
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
    check_model(proto)
    load_external_data(proto, os.path.dirname(os.path.abspath(path)))
    return upgrade_opset(proto)


def upgrade_opset(proto: Any) -> Any:
    """``proto`` converted to opset ``OLDEST_OPSET`` of the default domain when it
    imports an older one (a new model; ``proto`` is left as it is), else ``proto``.
    An op type ONNX does not define is an ``UnsupportedOpsError`` (as it is at any
    opset); a model the version converter cannot convert, an ``OnnxImportError``."""
    versions = [
        int(o.version) for o in proto.opset_import if o.domain in ("", "ai.onnx")
    ]
    if not versions or versions[0] >= OLDEST_OPSET:
        return proto
    unknown: dict[str, list[str]] = {}  # ops the converter has no schema for
    for index, node in enumerate(proto.graph.node):
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(str(node.op_type)):
            unknown.setdefault(str(node.op_type), []).append(node_label(node, index))
    if unknown:
        raise UnsupportedOpsError(unknown)
    scans = [
        node_label(node, index)
        for index, node in enumerate(proto.graph.node)
        if node.domain in ("", "ai.onnx") and node.op_type == "Scan"
    ]
    if scans and versions[0] < 9:  # the converter drops Scan-8's batch axis
        raise OnnxImportError(
            f"Scan node '{scans[0]}': Scan of opset {versions[0]} (with a batch axis "
            "and sequence_lens) is not supported, and ONNX's version converter does "
            "not convert it faithfully; export the model at opset 9 or newer"
        )
    try:
        return onnx.version_converter.convert_version(proto, OLDEST_OPSET)
    except Exception as e:  # the converter raises RuntimeError, ValueError, ...
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise OnnxImportError(
            f"the model imports opset {versions[0]} of the default ONNX domain; qidao "
            f"reads opsets {OLDEST_OPSET} to {onnx.defs.onnx_opset_version()}, and "
            f"onnx.version_converter.convert_version(model, {OLDEST_OPSET}) cannot "
            f"convert it ({type(e).__name__}: {reason}): export the model at opset "
            f"{OLDEST_OPSET} or newer"
        ) from None


def node_label(node: Any, index: int) -> str:
    """The node's name, or ``#index`` for an unnamed node."""
    return str(node.name) if node.name else f"#{index}"


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


UNINFERRED_DEFAULTS: dict[str, dict[str, int]] = {"STFT": {"onesided": 1}}
"""Attribute defaults of the schema that ONNX's shape inference does not apply
(it reads an absent ``STFT`` ``onesided`` as 0, the schema, its reference and
ONNX Runtime as 1): ``infer_shapes`` sets them on the nodes that omit them."""


def _omitted_defaults(node: Any) -> dict[str, int]:
    """The ``UNINFERRED_DEFAULTS`` of ``node`` that it does not set."""
    if node.domain not in ("", "ai.onnx"):
        return {}
    present = {a.name for a in node.attribute}
    defaults = UNINFERRED_DEFAULTS.get(str(node.op_type), {})
    return {name: v for name, v in defaults.items() if name not in present}


def with_uninferred_defaults(proto: Any) -> Any:
    """``proto`` with the ``UNINFERRED_DEFAULTS`` its nodes omit set explicitly (a
    copy), or ``proto`` itself when no node omits one."""
    if not any(_omitted_defaults(node) for node in proto.graph.node):
        return proto
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    for node in proto.graph.node:
        for name, value in _omitted_defaults(node).items():
            node.attribute.append(onnx.helper.make_attribute(name, value))
    return proto


def infer_shapes(proto: Any) -> Any:
    """``proto`` with ONNX's inferred shapes (strict mode, types checked), after
    ``with_uninferred_defaults``."""
    proto = with_uninferred_defaults(proto)
    try:
        return onnx.shape_inference.infer_shapes(
            proto, check_type=True, strict_mode=True
        )
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError) as e:
        # ValueError, RuntimeError: a corrupt model (an unknown data type, ...)
        conflict = declared_shape_conflict(proto)
        if conflict is not None:
            raise OnnxImportError(conflict) from None
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


DTYPES: dict[int, str] = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.BOOL: "bool",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.UINT16: "uint16",
    onnx.TensorProto.UINT32: "uint32",
    onnx.TensorProto.UINT64: "uint64",
    onnx.TensorProto.BFLOAT16: "bfloat16",
    onnx.TensorProto.FLOAT8E4M3FN: "float8_e4m3fn",
    onnx.TensorProto.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    onnx.TensorProto.FLOAT8E5M2: "float8_e5m2",
    onnx.TensorProto.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    onnx.TensorProto.FLOAT4E2M1: "float4_e2m1fn",
    onnx.TensorProto.INT4: "int4",
    onnx.TensorProto.UINT4: "uint4",
    onnx.TensorProto.INT2: "int2",
    onnx.TensorProto.UINT2: "uint2",
}
"""ONNX element types of the graph inputs and outputs qidao takes: their NumPy
dtype names (``ml_dtypes``' for bfloat16, the float8s, float4 and the 4- and 2-bit
integers, which tg keeps as storage-only types: ``Importer`` computes on them in
float32, int8 or uint8)."""


def graph_dtype(value_info: Any, kind: str) -> str:
    """The NumPy dtype name of a graph input or output (``kind``); an error for a
    dtype outside ``DTYPES``."""
    elem_type = value_info.type.tensor_type.elem_type
    if elem_type not in DTYPES:
        raise OnnxImportError(
            f"graph {kind} '{value_info.name}' has dtype {_dtype_text(elem_type)}; "
            f"only {', '.join(DTYPES.values())} {kind}s are supported"
        )
    return DTYPES[elem_type]


def input_shape(graph_input: Any) -> tuple[int, ...]:
    """The static shape of a graph input of a dtype in ``DTYPES``; other inputs are
    an error."""
    name = str(graph_input.name)
    graph_dtype(graph_input, "input")
    shape = static_shape(graph_input)
    if shape is None:
        raise OnnxImportError(
            f"graph input '{name}' has a dynamic shape {_shape_text(graph_input)}; "
            "qidao needs static shapes: pass concrete ones, e.g. "
            f"import_onnx(model, input_shapes={{{name!r}: "
            f"{_example_shape(graph_input)}}})"
        )
    return shape


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
    try:
        return str(onnx.TensorProto.DataType.Name(elem_type))
    except ValueError:  # a corrupt model
        return f"unknown data type {elem_type}"


# ---- the model's structure: opsets, node order ---------------------------------------


def check_model(proto: Any) -> None:
    """Raise ``OnnxImportError`` for an IR version or opset newer than the installed
    onnx knows, and for a node that uses a tensor no earlier node, graph input or
    initializer defines (naming the node, and the cycle when there is one)."""
    if int(proto.ir_version) > onnx.IR_VERSION:
        raise OnnxImportError(
            f"the model has IR version {proto.ir_version}, but the installed onnx "
            f"{onnx.__version__} knows IR versions up to {onnx.IR_VERSION}"
        )
    newest = {
        "": onnx.defs.onnx_opset_version(),
        "ai.onnx": onnx.defs.onnx_opset_version(),
        "ai.onnx.ml": onnx.defs.onnx_ml_opset_version(),
    }
    for opset in proto.opset_import:
        domain, version = str(opset.domain), int(opset.version)
        label = f"domain '{domain}'" if domain else "the default ONNX domain"
        if version < 1:
            raise OnnxImportError(f"the model imports opset {version} of {label}")
        if domain in newest and version > newest[domain]:
            raise OnnxImportError(
                f"the model imports opset {version} of {label}, but the installed "
                f"onnx {onnx.__version__} knows opsets up to {newest[domain]}: "
                "export the model at an older opset, or upgrade onnx"
            )
    check_node_order(proto.graph)
    check_tensor_data(proto.graph)


def check_node_order(graph: Any) -> None:
    """Every node input defined before the node (ONNX lists nodes in topological
    order), every tensor defined once, every graph output defined."""
    defined: dict[str, str] = {}  # tensor -> what defines it
    for t in graph.initializer:
        defined[str(t.name)] = f"initializer '{t.name}'"
    for i in graph.input:
        defined.setdefault(str(i.name), f"graph input '{i.name}'")
    producer = {
        str(out): index
        for index, node in enumerate(graph.node)
        for out in node.output
        if out
    }
    for index, node in enumerate(graph.node):
        label = f"{node.op_type} node '{node_label(node, index)}'"
        for name in node.input:
            if not name or name in defined:
                continue
            later = producer.get(str(name))
            if later is None or later < index:
                raise OnnxImportError(
                    f"{label} uses tensor '{name}', which no node, graph input or "
                    "initializer defines"
                )
            cycle = _cycle_through(graph, index, producer)
            if cycle:
                path = " -> ".join(_node_text(graph, k) for k in [*cycle, cycle[0]])
                raise OnnxImportError(
                    f"{label} uses tensor '{name}', which depends on the node's own "
                    f"output: the graph has a cycle: {path}"
                )
            raise OnnxImportError(
                f"{label} uses tensor '{name}' before {_node_text(graph, later)} "
                "defines it: the nodes are not in topological order, as ONNX "
                "requires"
            )
        for name in node.output:
            if not name:
                continue
            if name in defined:
                raise OnnxImportError(
                    f"{label} writes tensor '{name}', which {defined[name]} already "
                    "defines: an ONNX tensor is defined once"
                )
            defined[str(name)] = label
    for graph_output in graph.output:
        if graph_output.name not in defined:
            raise OnnxImportError(
                f"graph output '{graph_output.name}' is defined by no node, graph "
                "input or initializer"
            )


def _cycle_through(graph: Any, start: int, producer: Mapping[str, int]) -> list[int]:
    """Node indices of the shortest cycle through node ``start``, in the direction
    the data flows and starting at it, or [] if there is none."""
    flow = nx.DiGraph(
        (producer[str(name)], index)
        for index, node in enumerate(graph.node)
        for name in node.input
        if str(name) in producer
    )
    paths = nx.single_source_shortest_path(flow, start)
    back = [paths[p] for p in flow.predecessors(start) if p in paths]
    return min(back, key=len, default=[])


def _node_text(graph: Any, index: int) -> str:
    node = graph.node[index]
    return f"{node.op_type} node '{node_label(node, index)}'"


# ---- external data ------------------------------------------------------------------


def all_tensors(graph: Any) -> list[tuple[str, Any]]:
    """``(what, tensor)`` for every tensor of ``graph``: initializers and node
    attributes, subgraphs included."""
    found: list[tuple[str, Any]] = [
        (f"initializer '{t.name}'", t) for t in graph.initializer
    ]
    for index, node in enumerate(graph.node):
        for attr in node.attribute:
            label = f"attribute '{attr.name}' of {_node_text(graph, index)}"
            tensors = [attr.t] if attr.HasField("t") else list(attr.tensors)
            found.extend((label, t) for t in tensors)
            subgraphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
            for subgraph in subgraphs:
                found.extend(all_tensors(subgraph))
    return found


def external_tensors(graph: Any) -> list[tuple[str, Any]]:
    """``(what, tensor)`` for every tensor of ``graph`` whose data lives in an
    external file."""
    return [
        (what, t)
        for what, t in all_tensors(graph)
        if t.data_location == onnx.TensorProto.EXTERNAL
    ]


def check_tensor_data(graph: Any) -> None:
    """Every attribute typed, every in-file tensor holding as many elements as its
    shape says (a corrupt file may parse, with a shape its data does not fill)."""
    for index, node in enumerate(graph.node):
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.UNDEFINED and not attr.ref_attr_name:
                raise OnnxImportError(
                    f"attribute '{attr.name}' of {_node_text(graph, index)} has no "
                    "type (the model is corrupt)"
                )
    for what, tensor in all_tensors(graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            continue  # checked when it is read
        expected = _expected_bytes(tensor)
        if expected is None:
            continue
        if tensor.HasField("raw_data"):
            got = len(tensor.raw_data)
        else:
            field = _TYPED_FIELDS.get(tensor.data_type, "int32_data")
            itemsize = expected // max(_element_count(tensor), 1)
            got = len(getattr(tensor, field)) * itemsize
        if got != expected:
            raise OnnxImportError(
                f"{what} has shape {list(tensor.dims)} and dtype "
                f"{_dtype_text(tensor.data_type)}, which need {expected} bytes, but "
                f"it holds {got} (the model is corrupt)"
            )


def refuse_external_data(proto: Any) -> None:
    """Raise if an in-memory model still points at external files: their folder is
    unknown (onnx would read them relative to the working directory)."""
    for what, tensor in external_tensors(proto.graph):
        location = _external_info(tensor).get("location", "")
        raise OnnxImportError(
            f"{what} keeps its data in the external file '{location}', and a "
            "ModelProto does not say which folder that is in: pass the model's path "
            "instead (qidao reads the files next to it), or call "
            "onnx.load_external_data_for_model(model, folder) first"
        )


def load_external_data(proto: Any, folder: str) -> None:
    """Read every external tensor of ``proto`` from its file in ``folder``, in place.

    Every location is checked before anything is read: it must be a relative path
    inside ``folder`` (no absolute path, no ``..``, no symlink leading out) naming an
    existing file, and the bytes it names must lie inside that file.
    """
    for what, tensor, path, offset, length in external_places(proto, folder):
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read() if length is None else f.read(length)
        except OSError as e:
            raise OnnxImportError(
                f"cannot read the external data of {what} from '{path}': {e}"
            ) from None
        expected = _expected_bytes(tensor)
        if expected is not None and len(data) != expected:
            raise OnnxImportError(
                f"the external data of {what} in '{path}' has {len(data)} bytes, but "
                f"its shape {list(tensor.dims)} and dtype "
                f"{_dtype_text(tensor.data_type)} need {expected}"
            )
        tensor.raw_data = data
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


def external_places(
    proto: Any, folder: str
) -> list[tuple[str, Any, str, int, int | None]]:
    """``(what, tensor, path, offset, length)`` for every external tensor of
    ``proto``, every location checked as :func:`load_external_data` says before
    any is returned (the compile cache keys exactly these bytes)."""
    tensors = external_tensors(proto.graph)
    return [(what, t, *_external_place(what, t, folder)) for what, t in tensors]


def _external_info(tensor: Any) -> dict[str, str]:
    return {str(e.key): str(e.value) for e in tensor.external_data}


def _external_place(what: str, tensor: Any, folder: str) -> tuple[str, int, int | None]:
    """The checked file path, offset and length of an external tensor's data."""
    info = _external_info(tensor)
    location = info.get("location", "")
    if not location:
        raise OnnxImportError(f"{what} is stored externally but names no file")
    parts = location.replace("\\", "/").split("/")
    if (
        "\0" in location
        or os.path.isabs(location)
        or location.startswith(("/", "\\"))
        or (len(location) > 1 and location[1] == ":")  # a Windows drive
        or ".." in parts
    ):
        raise OnnxImportError(
            f"{what} has external data location '{location}', which escapes the "
            f"model's folder '{folder}': only relative paths inside it are allowed"
        )
    root = os.path.realpath(folder)
    path = os.path.realpath(os.path.join(folder, location))
    if os.path.commonpath([root, path]) != root:
        raise OnnxImportError(
            f"{what} has external data location '{location}', which resolves "
            f"(through a symlink) to '{path}', outside the model's folder '{root}'"
        )
    if not os.path.isfile(path):
        raise OnnxImportError(
            f"{what} keeps its data in the external file '{location}', which does "
            f"not exist in the model's folder '{folder}'"
        )
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise OnnxImportError(
            f"{what} has a malformed external data offset or length: "
            f"offset={info.get('offset')!r}, length={info.get('length')!r}"
        ) from None
    size = os.path.getsize(path)
    end = size if length is None else offset + length
    if offset < 0 or end < offset or end > size:
        raise OnnxImportError(
            f"{what} has its external data at bytes {offset}..{end} of '{location}', "
            f"but the file has {size} bytes (it is truncated, or the offset or "
            "length is wrong)"
        )
    return path, offset, length


_FIXED_SIZE_TYPES = (
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.DOUBLE,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT64,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.UINT64,
    onnx.TensorProto.BOOL,
)


_TYPED_FIELDS = {
    onnx.TensorProto.FLOAT: "float_data",
    onnx.TensorProto.DOUBLE: "double_data",
    onnx.TensorProto.INT64: "int64_data",
    onnx.TensorProto.UINT32: "uint64_data",
    onnx.TensorProto.UINT64: "uint64_data",
}
"""Where a tensor not in raw_data keeps its elements; the other fixed-size types use
``int32_data``, one element per entry."""


def _element_count(tensor: Any) -> int:
    count = 1
    for d in tensor.dims:
        count *= int(d)
    return count


def _expected_bytes(tensor: Any) -> int | None:
    """The byte size of a tensor's data, or None for a type packed otherwise."""
    if tensor.data_type not in _FIXED_SIZE_TYPES:
        return None
    itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return _element_count(tensor) * int(itemsize)


# ---- declared shapes ------------------------------------------------------------------


def declared_shape_conflict(proto: Any) -> str | None:
    """Why a graph output's (or value_info's) declared shape contradicts what its
    node computes, naming both; None if inference fails for another reason."""
    stripped = onnx.ModelProto()
    stripped.CopyFrom(proto)
    declared = [*stripped.graph.output, *stripped.graph.value_info]
    for value_info in declared:
        value_info.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(
            stripped, check_type=True, strict_mode=True
        )
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
        return None
    computed = {
        str(vi.name): vi for vi in [*inferred.graph.value_info, *inferred.graph.output]
    }
    producer = {
        str(out): _node_text(proto.graph, index)
        for index, node in enumerate(proto.graph.node)
        for out in node.output
    }
    graph_outputs = {str(o.name) for o in proto.graph.output}
    for value_info in [*proto.graph.output, *proto.graph.value_info]:
        name = str(value_info.name)
        if name not in computed or not _contradicts(value_info, computed[name]):
            continue
        what = "graph output" if name in graph_outputs else "value_info"
        source = producer.get(name, "the graph")
        return (
            f"{what} '{name}' is declared with shape {_shape_text(value_info)}, but "
            f"{source} computes {_shape_text(computed[name])}"
        )
    return None


def _contradicts(declared: Any, computed: Any) -> bool:
    """Whether two value infos' shapes differ in rank or in a known dimension."""
    a, b = declared.type.tensor_type, computed.type.tensor_type
    if not a.HasField("shape") or not b.HasField("shape"):
        return False
    if len(a.shape.dim) != len(b.shape.dim):
        return True
    return any(
        x.HasField("dim_value")
        and y.HasField("dim_value")
        and x.dim_value != y.dim_value
        for x, y in zip(a.shape.dim, b.shape.dim, strict=True)
    )
