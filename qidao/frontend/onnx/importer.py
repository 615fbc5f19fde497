"""``import_onnx``, the ``@converter`` registry, and the node walk converters build on.

A converter is a function ``(im: Importer, node: Node) -> list[Value | Array]``,
registered with ``@converter("OpType")``. ``Importer`` maps ONNX names to graph values
or compile-time constants (NumPy arrays) and gives converters their operands.

A folder is a function ``(node: Node, args: list[Array | None]) -> list[Array]``,
registered with ``@folder("OpType")``: the NumPy evaluation of a node whose inputs are
all compile-time constants (``args[k]`` is input #k, None for an omitted optional
input). The importer runs a node's folder when it has one and every input is a
constant, else its converter; an op with a folder but no converter is *constant-only*
and meets a runtime input with an ``OnnxImportError`` naming the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

from qidao.dialects.tg.types import STORAGE_ONLY_DTYPES, compute_dtype
from qidao.errors import ResourceError
from qidao.frontend.builder import Graph, Value
from qidao.frontend.custom import lookup, registered_names
from qidao.frontend.errors import (
    ConstantRequiredError,
    GraphError,
    OnnxImportError,
    UnsupportedOpsError,
)
from qidao.frontend.limits import ENV
from qidao.frontend.onnx import fold_reference, functions
from qidao.frontend.onnx.load import (
    DTYPES,
    default_opset,
    graph_dtype,
    infer_shapes,
    input_shape,
    load_model,
    node_label,
    static_shape,
    with_input_shapes,
)
from qidao.frontend.onnx.node import Node
from qidao.frontend.onnx.qdq import fuse_qdq_convs

Array = npt.NDArray[Any]
Converter = Callable[["Importer", "Node"], list[Value | Array]]
Folder = Callable[["Node", list[Array | None]], list[Array]]

CONVERTERS: dict[str, Converter] = {}
"""ONNX op type (default domain) -> its converter; filled by ``@converter``."""

STORAGE_CONVERTERS = frozenset({"Cast", "CastLike"})
"""Converters that take the storage-only dtypes (bfloat16, float8...) as they are;
every other one sees them cast to float32, int8 or uint8 (``Importer``)."""

ROUNDED_PER_STEP = frozenset({"Attention", "Softmax", "LogSoftmax"})
"""ONNX ops whose results ONNX defines with every step of their formula rounded to
the input's dtype; on bfloat16 (and the other storage-only floats) qidao's result,
computed in float32 and rounded once, lies an ulp away, so they are refused there."""

FOLDERS: dict[str, Folder] = {}
"""ONNX op type (default domain) -> its NumPy evaluation on constant inputs; filled by
``@folder``."""


STAGING_DOMAIN = "qidao.staging"
"""The domain of the nodes ``qidao.frontend.onnx.staged`` puts where it cuts a model
(a ``NonZero`` with its bounded positions and count as outputs)."""

STAGING_CONVERTERS: dict[str, Converter] = {}
"""Op type of the ``STAGING_DOMAIN`` -> its converter (the modules that raise
``DataDependentShapeError`` fill it)."""


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register a function as the converter of ONNX ``op_types`` (default domain)."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            assert op_type not in CONVERTERS, f"two converters for {op_type}"
            CONVERTERS[op_type] = fn
        return fn

    return register


def folder(*op_types: str) -> Callable[[Folder], Folder]:
    """Register a function as the NumPy evaluation of ONNX ``op_types`` on constant
    inputs (ONNX semantics, any dtype)."""

    def register(fn: Folder) -> Folder:
        for op_type in op_types:
            assert op_type not in FOLDERS, f"two folders for {op_type}"
            FOLDERS[op_type] = fn
        return fn

    return register


def import_onnx(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, Array] | None = None,
) -> ModuleOp:
    """Import an ONNX model (a ``ModelProto`` or a path) as a verified tg module.

    ``input_shapes`` gives concrete shapes for graph inputs, replacing dynamic (or
    static) dimensions; every graph input needs a static shape in the end.
    ``constants`` binds graph inputs to values: each becomes an initializer (so a
    shape, axes or pads input folds like a constant) and leaves the tg signature.
    That is the hook of ``qidao.frontend.onnx.specialize``.
    """
    return Importer(prepare(model, input_shapes, constants)).run()


def import_folded(model: Any) -> tuple[ModuleOp | None, dict[str, Array]]:
    """Import ``model`` (static shapes) as ``import_onnx`` does, but with only the
    graph outputs that do not fold at import as the module's outputs; the values
    of the others come back apart (the hook of ``qidao.frontend.onnx.staged``).
    The module is None when every output folds."""
    im = Importer(prepare(model))
    im.walk()
    folded: dict[str, Array] = {}
    for graph_output in im.proto.graph.output:
        entry = im.env.get(graph_output.name)
        if isinstance(entry, np.ndarray):
            folded[str(graph_output.name)] = entry
    kept = [o for o in im.proto.graph.output if str(o.name) not in folded]
    return (im.module_of(kept) if kept else None), folded


def prepare(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, Array] | None = None,
) -> Any:
    """``model`` loaded, checked for unsupported ops, rewritten where the import
    needs it, with ``constants`` and ``input_shapes`` applied and shapes inferred."""
    proto = load_model(model)
    # constant-only ops pass this scan: which inputs fold is known only during the walk;
    # an op without either passes when its function body does (functions.py)
    supported = CONVERTERS.keys() | FOLDERS.keys()
    staging = {f"{STAGING_DOMAIN}::{t}" for t in STAGING_CONVERTERS}
    functions.check_supported(proto, supported | registered_names() | staging)
    proto = functions.with_default_attributes(proto, supported)
    proto = fuse_qdq_convs(proto)  # int8 kernels for QDQ units, as ONNX Runtime
    proto = with_constants(proto, constants or {})
    proto = with_input_shapes(proto, input_shapes or {})
    return infer_shapes(proto)


def with_constants(proto: Any, constants: Mapping[str, Array]) -> Any:
    """A copy of ``proto`` whose graph inputs named in ``constants`` are initializers
    holding the given values, in the dtype the model declares."""
    if not constants:
        return proto
    inputs = {str(i.name): i for i in proto.graph.input}
    unknown = sorted(set(constants) - set(inputs))
    if unknown:
        raise OnnxImportError(
            f"constants names {unknown}, which are not graph inputs; the inputs are "
            f"{sorted(inputs)}"
        )
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = proto.graph
    kept = [i for i in graph.input if i.name not in constants]
    for name, value in constants.items():
        elem_type = int(inputs[name].type.tensor_type.elem_type)
        array = np.asarray(value)
        if elem_type:
            array = array.astype(helper.tensor_dtype_to_np_dtype(elem_type), copy=False)
        old = [t for t in graph.initializer if t.name == name]
        for t in old:
            graph.initializer.remove(t)
        graph.initializer.append(numpy_helper.from_array(array, name))
    if proto.ir_version >= 4:  # before IR 4, every initializer is a graph input too
        del graph.input[:]
        graph.input.extend(kept)
    return proto


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
        infos = [*graph.value_info, *graph.output]
        self.inferred: dict[str, tuple[int, ...] | None] = {
            vi.name: static_shape(vi) for vi in infos
        }
        # ONNX element types (TensorProto.DataType), to check folded constants
        self.inferred_dtype: dict[str, int] = {
            vi.name: int(vi.type.tensor_type.elem_type) for vi in infos
        }

    def run(self) -> ModuleOp:
        """Walk the nodes, then return the verified tg module of the graph outputs."""
        self.walk()
        return self.module_of(list(self.proto.graph.output))

    def module_of(self, graph_outputs: Sequence[Any]) -> ModuleOp:
        """The verified tg module returning ``graph_outputs`` (after the walk)."""
        outputs: list[Value] = []
        for graph_output in graph_outputs:
            declared = graph_dtype(graph_output, "output")
            value = self.value(graph_output.name)
            if value.dtype != declared:
                raise OnnxImportError(
                    f"qidao computed dtype {value.dtype} for graph output "
                    f"'{graph_output.name}', but the model declares {declared}"
                )
            outputs.append(value)
        self.graph.output(*outputs, names=[o.name for o in graph_outputs])
        try:
            return self.graph.module()
        except GraphError as e:
            raise OnnxImportError(str(e)) from None

    def walk(self) -> None:
        """Fill ``env``: initializers, graph inputs, then every node in order."""
        graph = self.proto.graph
        initializers = {t.name: t for t in graph.initializer}
        for name, tensor in initializers.items():
            self.env[name] = numpy_helper.to_array(tensor)
        for graph_input in graph.input:
            if graph_input.name not in initializers:
                name = str(graph_input.name)
                self.env[name] = self.graph.input(
                    name, input_shape(graph_input), graph_dtype(graph_input, "input")
                )
        for index, node_proto in enumerate(graph.node):
            node = Node(
                node_proto,
                index,
                self.opset,
                {a.name: helper.get_attribute_value(a) for a in node_proto.attribute},
            )
            self._convert(node)

    def convert(self, node: Node) -> None:
        """Convert one node into the graph, adding its outputs to ``env`` (the walk
        does this for every node; ``control_flow`` for the nodes of a subgraph)."""
        self._convert(node)

    def _convert(self, node: Node) -> None:
        custom = node.proto.domain not in functions.DEFAULT_DOMAINS
        if (
            not custom
            and node.op_type not in CONVERTERS
            and node.op_type not in FOLDERS
        ):
            # an op ONNX defines as a function of other ops: convert its body
            supported = CONVERTERS.keys() | FOLDERS.keys()
            functions.expand(
                self.env, [*self.env, *self.inferred], node, supported, self._convert
            )
            return
        try:
            with self.graph.source(node.label):
                results = self._evaluate(node)
        except GraphError as e:
            raise node.error(str(e)) from None
        except ResourceError as e:
            message = str(e)
            if not message.startswith(node.label):
                message = f"{node.label}: {message}"
            raise ResourceError(message) from None
        except MemoryError:  # NumPy could not allocate what the node asks for
            raise ResourceError(
                f"{node.label}: its result does not fit in memory (${ENV} and the "
                "physical memory bound every tensor)"
            ) from None
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

    def _evaluate(self, node: Node) -> list[Value | Array]:
        """The node's folder if it has one and all its inputs are constants (without
        a folder, ONNX's reference when they are small: ``fold_reference``), else its
        converter; a constant-only op with a runtime input is an error. A node of
        another domain is a custom op (``qidao.custom_op``)."""
        if node.proto.domain == STAGING_DOMAIN:
            return STAGING_CONVERTERS[node.op_type](self, node)
        if node.proto.domain not in functions.DEFAULT_DOMAINS:
            return self._custom(node)
        fold = FOLDERS.get(node.op_type)
        if fold is not None:
            args = self._constant_args(node)
            if args is not None:
                try:
                    return [np.asarray(r) for r in fold(node, args)]
                except (ValueError, IndexError) as e:  # NumPy's own checks
                    raise node.error(
                        f"cannot evaluate on its constant inputs: {e}"
                    ) from None
        else:
            args = self._constant_args(node)
            if args is not None and fold_reference.can_fold(node, args):
                folded = fold_reference.reference_fold(node, args)
                if folded is not None:
                    return list(folded)
        convert = CONVERTERS.get(node.op_type)
        if convert is None:
            runtime = [n for n in node.inputs if n and isinstance(self.env[n], Value)]
            raise ConstantRequiredError(
                f"{node.label}: {node.op_type} is supported only on constant inputs "
                "so far (initializers, Constant outputs and what folds from them, "
                f"such as shape computations), but input(s) {runtime} are runtime "
                "tensors",
                runtime,
                True,  # its values fix the result (Range's length, a shape)
            )
        if node.op_type in STORAGE_CONVERTERS:
            return convert(self, node)
        return self._in_compute_dtypes(node, convert)

    def _in_compute_dtypes(self, node: Node, convert: Converter) -> list[Value | Array]:
        """``convert(self, node)`` with every input of a storage-only dtype
        (bfloat16, float8, float4, 4/2-bit integers) cast to its compute dtype
        (float32, int8, uint8: exact), and every output that ONNX types as one cast
        back to it (rounded once, as ONNX Runtime's CPU kernels without native
        bfloat16 do): tg ops other than ``tg.cast`` and views do not take them."""
        saved: dict[str, Value | Array] = {}
        for name in node.inputs:
            entry = self.env.get(name) if name else None
            if entry is None or name in saved:
                continue
            dtype = str(entry.dtype)
            if compute_dtype(dtype) == dtype:
                continue
            if node.op_type in ROUNDED_PER_STEP and compute_dtype(dtype) == "float32":
                raise node.error(
                    f"{node.op_type} on a {dtype} tensor is not supported: ONNX "
                    f"rounds each step of its formula to {dtype}, and qidao computes "
                    f"{dtype} in float32, rounded once (cast the input to float32 "
                    "or float16 first)"
                )
            saved[name] = entry
            if isinstance(entry, Value):
                self.env[name] = self.graph.cast(entry, compute_dtype(dtype))
            else:
                self.env[name] = entry.astype(compute_dtype(dtype))
        try:
            results = convert(self, node)
        finally:
            self.env.update(saved)
        outputs = [str(o) for o in node.proto.output]
        for k, (name, result) in enumerate(zip(outputs, results, strict=False)):
            dtype = DTYPES.get(self.inferred_dtype.get(name, 0), "")
            if dtype not in STORAGE_ONLY_DTYPES or str(result.dtype) == dtype:
                continue
            if isinstance(result, Value):
                results[k] = self.graph.cast(result, dtype)
            else:
                results[k] = result.astype(dtype)
        return results

    def _custom(self, node: Node) -> list[Value | Array]:
        """A node of domain ``d`` and op type ``t``: the custom op ``d::t``, one
        ``tg.custom`` (every input a tensor, no attributes)."""
        name = f"{node.proto.domain}::{node.op_type}"
        if lookup(name) is None:
            raise UnsupportedOpsError({name: [node_label(node.proto, node.index)]})
        if node.attrs:
            raise node.error(
                f"the custom op '{name}' takes no attributes, the node has "
                f"{sorted(node.attrs)}"
            )
        inputs = [self.input(node, k) for k in range(len(node.inputs))]
        return list(self.graph.custom_results(name, *inputs))

    def _constant_args(self, node: Node) -> list[Array | None] | None:
        """The node's inputs as arrays (None for omitted optional inputs), or None
        if one of them is a runtime value."""
        args: list[Array | None] = []
        for name in node.inputs:
            if not name:
                args.append(None)
                continue
            if name not in self.env:
                raise node.error(f"tensor '{name}' is used before it is defined")
            entry = self.env[name]
            if isinstance(entry, Value):
                return None
            args.append(entry)
        return args

    def _check_shape(self, node: Node, name: str, result: Value | Array) -> None:
        expected = self.inferred.get(name)
        got = tuple(result.shape)
        if expected is not None and expected != got:
            raise node.error(
                f"qidao computed shape {list(got)} for output '{name}', but ONNX "
                f"shape inference says {list(expected)}"
            )
        elem_type = self.inferred_dtype.get(name, 0)
        if elem_type == 0:
            return
        if isinstance(result, Value):
            want = DTYPES.get(elem_type)
            if want is not None and result.dtype != want:
                raise node.error(
                    f"qidao computed dtype {result.dtype} for output '{name}', but "
                    f"ONNX shape inference says {want}"
                )
            return
        try:
            got_type = int(helper.np_dtype_to_tensor_dtype(result.dtype))
        except (KeyError, TypeError, ValueError):
            got_type = 0
        if got_type != elem_type:
            raise node.error(
                f"qidao computed dtype {result.dtype} for output '{name}', but ONNX "
                f"shape inference says {helper.tensor_dtype_to_string(elem_type)}"
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

    def const(self, node: Node, name: str, what: str, shape: bool = False) -> Array:
        """The compile-time value of input ``name`` (an initializer or Constant);
        ``shape``: the value fixes a shape (see ``ConstantRequiredError``)."""
        entry = self.env.get(name)
        if entry is None:
            raise node.error(f"the {what} input '{name}' is missing")
        if isinstance(entry, Value):
            raise ConstantRequiredError(
                f"{node.label}: the {what} input '{name}' must be a constant (an "
                "initializer or a Constant node output); computed values are not "
                "supported",
                [name],
                shape,
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
