"""ONNX importer: an ``onnx.ModelProto`` (or a ``.onnx`` file) to a tg module.

```python
module = import_onnx("model.onnx", input_shapes={"x": (1, 3, 224, 224)})
```

The steps, each failing with an ``OnnxImportError`` that says what to change:

1. load the model (a truncated or garbage file is reported, not a protobuf traceback);
2. scan every node: all unsupported op types are reported at once, with the nodes
   that use them (``UnsupportedOpsError``), before any other work;
3. fix the input shapes (``input_shapes`` overrides dynamic dimensions) and run
   ONNX shape inference in strict mode (type errors in the model surface here);
4. walk the nodes in order, one converter per op type, building tg ops through the
   ``Graph`` builder. Initializers and ``Constant`` outputs stay NumPy arrays until a
   tensor operand needs them, so a ``Reshape`` shape or reduce ``axes`` never becomes
   a ``tg.constant``. Each tg result shape is checked against ONNX's inferred shape.

Graph inputs and outputs must be float32 with static shapes. A converter registers
itself with ``@converter("OpType")``; ``SUPPORTED_OPS`` lists them all.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError, OnnxImportError, UnsupportedOpsError

Array = npt.NDArray[Any]
Converter = Callable[["_Importer", "_Node"], list[Value | Array]]

_CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register a function as the converter of ONNX ``op_types`` (default domain)."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            assert op_type not in _CONVERTERS, f"two converters for {op_type}"
            _CONVERTERS[op_type] = fn
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
    proto = _load(model)
    _check_supported(proto)
    proto = _with_input_shapes(proto, input_shapes or {})
    try:
        proto = onnx.shape_inference.infer_shapes(
            proto, check_type=True, strict_mode=True
        )
    except onnx.shape_inference.InferenceError as e:
        raise OnnxImportError(f"ONNX shape inference failed: {e}") from None
    return _Importer(proto).run()


# ---- loading and checks -----------------------------------------------------------


def _load(model: Any) -> Any:
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


def _node_label(node: Any, index: int) -> str:
    return str(node.name) if node.name else f"#{index}"


def _check_supported(proto: Any) -> None:
    unsupported: dict[str, list[str]] = {}
    for index, node in enumerate(proto.graph.node):
        op_type = str(node.op_type)
        if node.domain not in ("", "ai.onnx"):
            op_type = f"{node.domain}::{op_type}"
        elif op_type in _CONVERTERS:
            continue
        unsupported.setdefault(op_type, []).append(_node_label(node, index))
    if unsupported:
        raise UnsupportedOpsError(unsupported)


def _with_input_shapes(proto: Any, input_shapes: Mapping[str, Sequence[int]]) -> Any:
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


def _static_shape(value_info: Any) -> tuple[int, ...] | None:
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(int(d.dim_value))
    return tuple(dims)


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


# ---- the importer -----------------------------------------------------------------


@dataclass
class _Node:
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
        name = _node_label(self.proto, self.index)
        return f"{self.op_type} node '{name}'"

    @property
    def inputs(self) -> list[str]:
        return [str(i) for i in self.proto.input]

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"{self.label}: {message}")


class _Importer:
    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.graph = Graph("main")
        self.opset = _default_opset(proto)
        # an ONNX name -> a graph value or a compile-time constant
        self.env: dict[str, Value | Array] = {}
        self.materialized: dict[str, Value] = {}
        graph = proto.graph
        self.inferred: dict[str, tuple[int, ...] | None] = {
            vi.name: _static_shape(vi) for vi in [*graph.value_info, *graph.output]
        }

    def run(self) -> ModuleOp:
        graph = self.proto.graph
        initializers = {t.name: t for t in graph.initializer}
        for name, tensor in initializers.items():
            self.env[name] = numpy_helper.to_array(tensor)
        for graph_input in graph.input:
            if graph_input.name not in initializers:
                self._add_input(graph_input)
        for index, node_proto in enumerate(graph.node):
            node = _Node(
                node_proto,
                index,
                self.opset,
                {a.name: helper.get_attribute_value(a) for a in node_proto.attribute},
            )
            self._convert(node)
        outputs: list[Value] = []
        for graph_output in graph.output:
            elem_type = graph_output.type.tensor_type.elem_type
            if elem_type != onnx.TensorProto.FLOAT:
                raise OnnxImportError(
                    f"graph output '{graph_output.name}' has dtype "
                    f"{_dtype_text(elem_type)}; only float32 outputs are supported"
                )
            outputs.append(self.value(graph_output.name))
        self.graph.output(*outputs, names=[o.name for o in graph.output])
        try:
            return self.graph.module()
        except GraphError as e:
            raise OnnxImportError(str(e)) from None

    def _add_input(self, graph_input: Any) -> None:
        name = str(graph_input.name)
        elem_type = graph_input.type.tensor_type.elem_type
        if elem_type != onnx.TensorProto.FLOAT:
            raise OnnxImportError(
                f"graph input '{name}' has dtype {_dtype_text(elem_type)}; only "
                "float32 inputs are supported for now"
            )
        shape = _static_shape(graph_input)
        if shape is None:
            raise OnnxImportError(
                f"graph input '{name}' has a dynamic shape {_shape_text(graph_input)}; "
                "qidao needs static shapes: pass concrete ones, e.g. "
                f"import_onnx(model, input_shapes={{{name!r}: "
                f"{_example_shape(graph_input)}}})"
            )
        self.env[name] = self.graph.input(name, shape)

    def _convert(self, node: _Node) -> None:
        try:
            results = _CONVERTERS[node.op_type](self, node)
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

    def _check_shape(self, node: _Node, name: str, result: Value | Array) -> None:
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

    def const(self, node: _Node, name: str, what: str) -> Array:
        """The compile-time value of input ``name`` (an initializer or Constant)."""
        entry = self.env.get(name)
        if entry is None or isinstance(entry, Value):
            raise node.error(
                f"the {what} input '{name}' must be a constant (an initializer or a "
                "Constant node output); computed values are not supported"
            )
        return entry

    def input(self, node: _Node, index: int) -> Value:
        names = node.inputs
        if index >= len(names) or not names[index]:
            raise node.error(f"input #{index} is missing")
        return self.value(names[index])

    def optional_input(self, node: _Node, index: int) -> Value | None:
        names = node.inputs
        if index >= len(names) or not names[index]:
            return None
        return self.value(names[index])


def _default_opset(proto: Any) -> int:
    for opset in proto.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return int(opset.version)
    raise OnnxImportError("the model imports no opset of the default ONNX domain")


# ---- converters -------------------------------------------------------------------

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
    "Sigmoid": Graph.sigmoid,
    "Relu": Graph.relu,
}


@converter(*_BINARY)
def _binary(im: _Importer, node: _Node) -> list[Value | Array]:
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
def _unary(im: _Importer, node: _Node) -> list[Value | Array]:
    return [_UNARY[node.op_type](im.graph, im.input(node, 0))]


@converter("Identity")
def _identity(im: _Importer, node: _Node) -> list[Value | Array]:
    name = node.inputs[0]
    entry = im.env.get(name)
    return [im.value(name) if entry is None else entry]


@converter("Constant")
def _constant(im: _Importer, node: _Node) -> list[Value | Array]:
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


@converter("MatMul")
def _matmul(im: _Importer, node: _Node) -> list[Value | Array]:
    """NumPy ``matmul``: a 1-D operand becomes a 1xK / Kx1 matrix, and that
    dimension is dropped from the result."""
    g = im.graph
    a, b = im.input(node, 0), im.input(node, 1)
    if a.rank == 0 or b.rank == 0:
        raise node.error("MatMul operands must have rank >= 1")
    a2 = g.reshape(a, (1, a.shape[0])) if a.rank == 1 else a
    b2 = g.reshape(b, (b.shape[0], 1)) if b.rank == 1 else b
    y = g.matmul(a2, b2)
    if a.rank > 1 and b.rank > 1:
        return [y]
    shape = list(y.shape)
    if b.rank == 1:
        del shape[-1]
    if a.rank == 1:
        del shape[-2 if b.rank > 1 else -1]
    return [g.reshape(y, shape)]


@converter("Gemm")
def _gemm(im: _Importer, node: _Node) -> list[Value | Array]:
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


@converter("Transpose")
def _transpose(im: _Importer, node: _Node) -> list[Value | Array]:
    x = im.input(node, 0)
    perm = node.attr("perm")
    return [im.graph.transpose(x, None if perm is None else list(perm))]


@converter("Reshape")
def _reshape(im: _Importer, node: _Node) -> list[Value | Array]:
    x = im.input(node, 0)
    target = [int(d) for d in im.const(node, node.inputs[1], "shape").reshape(-1)]
    allowzero = node.attr("allowzero", 0)
    shape = []
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= x.rank:
                raise node.error(
                    f"shape {target} copies dimension {k} (0), but the input has rank "
                    f"{x.rank}"
                )
            d = x.shape[k]
        shape.append(d)
    if shape.count(-1) > 1:
        raise node.error(f"shape {target} has more than one -1")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = math.prod(x.shape)
        if known == 0 or total % known:
            raise node.error(
                f"cannot infer the -1 in shape {target} for an input of shape "
                f"{list(x.shape)}"
            )
        shape[shape.index(-1)] = total // known
    return [im.graph.reshape(x, shape)]


@converter("Flatten")
def _flatten(im: _Importer, node: _Node) -> list[Value | Array]:
    x = im.input(node, 0)
    axis = int(node.attr("axis", 1))
    if not -x.rank <= axis <= x.rank:
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    if axis < 0:
        axis += x.rank
    shape = (math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    return [im.graph.reshape(x, shape)]


def _reduce_axes(im: _Importer, node: _Node, axes_input_from: int) -> list[int] | None:
    """The reduce axes: an attribute before opset ``axes_input_from``, then input #1.
    None means "no axes given"."""
    if node.opset < axes_input_from:
        axes = node.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    names = node.inputs
    if len(names) < 2 or not names[1]:
        return None
    return [int(a) for a in im.const(node, names[1], "axes").reshape(-1)]


_REDUCE: dict[str, tuple[Callable[..., Value], int]] = {
    "ReduceSum": (Graph.reduce_sum, 13),
    "ReduceMean": (Graph.reduce_mean, 18),
    "ReduceMax": (Graph.reduce_max, 18),
}


@converter(*_REDUCE)
def _reduce(im: _Importer, node: _Node) -> list[Value | Array]:
    fn, axes_input_from = _REDUCE[node.op_type]
    x = im.input(node, 0)
    axes = _reduce_axes(im, node, axes_input_from)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0) or x.rank == 0:
            return [x]
        axes = list(range(x.rank))
    return [fn(im.graph, x, axes, keepdims)]


@converter("Softmax")
def _softmax(im: _Importer, node: _Node) -> list[Value | Array]:
    """From opset 13 along ``axis`` (default -1); before, the input is coerced to
    2-D ``[prod(shape[:axis]), prod(shape[axis:])]`` (default axis 1)."""
    g = im.graph
    x = im.input(node, 0)
    if node.opset >= 13:
        return [g.softmax(x, int(node.attr("axis", -1)))]
    axis = int(node.attr("axis", 1))
    if not -x.rank <= axis < max(x.rank, 1):
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    axis %= max(x.rank, 1)
    if axis == x.rank - 1:
        return [g.softmax(x, -1)]
    flat = g.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
    return [g.reshape(g.softmax(flat, 1), x.shape)]


def _window_padding(
    node: _Node,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, int, int, int]:
    """tg padding ``[top, left, bottom, right]`` from ``pads`` or ``auto_pad``."""
    auto_pad = node.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad == "NOTSET":
        pads = [int(p) for p in node.attr("pads", [0, 0, 0, 0])]
        if len(pads) != 4:
            raise node.error(f"pads must have 4 values for a 2-D window, got {pads}")
        # ONNX [x1_begin, x2_begin, x1_end, x2_end] is tg's [top, left, bottom, right]
        return (pads[0], pads[1], pads[2], pads[3])
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.error(f"unknown auto_pad '{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return (begin[0], begin[1], end[0], end[1])


def _ints(node: _Node, name: str, default: Sequence[int]) -> tuple[int, ...]:
    values = tuple(int(v) for v in node.attr(name, default))
    if len(values) != 2:
        raise node.error(
            f"{name} must have 2 values (only 2-D windows are supported), got "
            f"{list(values)}"
        )
    return values


def _expect_4d(node: _Node, x: Value) -> None:
    if x.rank != 4:
        raise node.error(
            f"only 2-D {node.op_type} on NCHW input is supported, got input shape "
            f"{list(x.shape)}"
        )


@converter("Conv")
def _conv(im: _Importer, node: _Node) -> list[Value | Array]:
    x, w = im.input(node, 0), im.input(node, 1)
    b = im.optional_input(node, 2)
    _expect_4d(node, x)
    kernel = w.shape[2:]
    if "kernel_shape" in node.attrs and _ints(node, "kernel_shape", ()) != kernel:
        raise node.error(
            f"kernel_shape {list(node.attr('kernel_shape'))} does not match the "
            f"weight shape {list(w.shape)}"
        )
    strides = _ints(node, "strides", (1, 1))
    dilations = _ints(node, "dilations", (1, 1))
    padding = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    y = im.graph.conv2d(
        x,
        w,
        b,
        strides=strides,
        padding=padding,
        dilation=dilations,
        groups=int(node.attr("group", 1)),
    )
    return [y]


def _reject(node: _Node, attr: str, message: str) -> None:
    if node.attr(attr, 0):
        raise node.error(f"{attr}={node.attr(attr)} is not supported yet ({message})")


@converter("MaxPool")
def _max_pool(im: _Importer, node: _Node) -> list[Value | Array]:
    x = im.input(node, 0)
    _expect_4d(node, x)
    _reject(node, "ceil_mode", "use ceil_mode=0 or pad explicitly")
    _reject(node, "storage_order", "only row-major storage_order=0")
    kernel = _ints(node, "kernel_shape", ())
    strides = _ints(node, "strides", (1, 1))
    dilations = _ints(node, "dilations", (1, 1))
    padding = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    return [im.graph.max_pool2d(x, kernel, strides, padding, dilations)]


@converter("AveragePool")
def _average_pool(im: _Importer, node: _Node) -> list[Value | Array]:
    x = im.input(node, 0)
    _expect_4d(node, x)
    _reject(node, "ceil_mode", "use ceil_mode=0 or pad explicitly")
    kernel = _ints(node, "kernel_shape", ())
    strides = _ints(node, "strides", (1, 1))
    dilations = _ints(node, "dilations", (1, 1))
    if dilations != (1, 1):
        raise node.error(f"dilations {list(dilations)} are not supported yet")
    padding = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    include = bool(node.attr("count_include_pad", 0))
    return [im.graph.avg_pool2d(x, kernel, strides, padding, include)]


@converter("GlobalAveragePool")
def _global_average_pool(im: _Importer, node: _Node) -> list[Value | Array]:
    x = im.input(node, 0)
    if x.rank < 3:
        raise node.error(f"expects an input of rank >= 3, got {list(x.shape)}")
    return [im.graph.reduce_mean(x, list(range(2, x.rank)), keepdims=True)]


@converter("BatchNormalization")
def _batch_norm(im: _Importer, node: _Node) -> list[Value | Array]:
    _reject(node, "training_mode", "only inference batch normalization")
    x = im.input(node, 0)
    scale, bias, mean, var = (im.input(node, k) for k in range(1, 5))
    epsilon = float(node.attr("epsilon", 1e-5))
    return [im.graph.batch_norm(x, scale, bias, mean, var, epsilon)]


SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(_CONVERTERS))
"""The ONNX op types (default domain) the importer converts."""
