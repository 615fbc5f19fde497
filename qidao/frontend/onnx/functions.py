"""ONNX function ops: an op qidao has no converter for, expanded into its function body.

ONNX defines many operators as a *function* of simpler ones (``Attention``,
``RMSNormalization``, ``MeanVarianceNormalization``, ``Mish``, the losses, ...): the
op's schema carries a body, a ``FunctionProto`` whose nodes compute the op. Some
bodies are fixed (``schema.get_function_with_opset_version``); others are
*context-dependent*: built for one node from its attributes and its input types
(``schema.get_context_dependent_function_with_opset_version(opset, node bytes,
[input TypeProto bytes])``, empty bytes when it cannot be built).

When the importer meets a node whose op type has no converter and no folder, and the
op's schema at the node's opset has a function, ``expand`` inlines the body in place
of the node, the way ONNX's test generator writes its ``test_*_expanded`` cases
(``onnx.backend.test.case.node.function_expand_helper``):

- the body's formal inputs and outputs become the node's actual names (an omitted
  optional input is the empty name, so the body sees it missing);
- every other value of the body gets a name unique to this node,
  ``<node>/<OpType>/<value>`` (``#0/Attention/QKAttnWeight`` for an unnamed node 0);
- an attribute reference (``ref_attr_name``) takes the node's attribute of that
  name; when the node does not set it, the schema's default (as ONNX's expansion
  does), else the function's own default, else the inner attribute is dropped so
  the inner op's default applies;
- each inner node is converted at the opset the body imports (a body may be written
  for an older opset than the model's: ``ReduceMean`` then takes ``axes`` as an
  attribute), by the existing converters and folders, so a body's shape
  computations fold at import like the model's own;
- an inner node may itself be a function op: it expands in turn.

Values made inside an expansion have no ONNX shape inference results; the importer's
shape and dtype checks skip them (``Importer._check_shape`` looks names up with
``.get``), and the node's own outputs are still checked against inference.

An op with no converter, no folder and no function is unsupported, as before. An
inner op that is none of those makes the outer op unsupported, naming both:
``UnsupportedOpsError`` with ``NegativeLogLikelihoodLoss (expanded: GatherElements
unsupported)``. ``check_supported`` finds that before the walk for fixed bodies and
for context-dependent ones whose input types the model declares or ONNX infers; the
rest are found when the walk expands them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper

from qidao.frontend.builder import Value
from qidao.frontend.errors import ConstantRequiredError, UnsupportedOpsError
from qidao.frontend.onnx import subgraphs
from qidao.frontend.onnx.load import node_label
from qidao.frontend.onnx.node import Node

DEFAULT_DOMAINS = ("", "ai.onnx")

TypeLookup = Callable[[str], onnx.TypeProto | None]
"""An ONNX value name -> its type, or None when it is unknown."""


# ---- the body of a function op ---------------------------------------------------------


def op_schema(op_type: str, opset: int) -> Any | None:
    """The default-domain schema of ``op_type`` in force at ``opset``, or None."""
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return None


def is_function_op(op_type: str, opset: int) -> bool:
    """Whether ONNX defines ``op_type`` (default domain, at ``opset``) by a function."""
    schema = op_schema(op_type, opset)
    return schema is not None and bool(
        schema.has_function or schema.has_context_dependent_function
    )


def function_body(
    node: Any, opset: int, input_types: Sequence[onnx.TypeProto | None]
) -> Any:
    """The function body of the default-domain ``node`` (a ``NodeProto``) at
    ``opset``: the newest version the schema has for an opset no newer than
    ``opset``. ``input_types[k]`` is the type of input #k (None or an empty
    ``TypeProto`` when omitted or unknown); a context-dependent body needs them.
    None when the op has no function, or its body cannot be built from what is
    known (a ``FunctionProto`` otherwise)."""
    schema = op_schema(str(node.op_type), opset)
    if schema is None:
        return None
    fixed = [int(v) for v in schema.function_opset_versions]
    if fixed:
        version = _version_for(fixed, opset)
        return onnx.FunctionProto.FromString(
            schema.get_function_with_opset_version(version)
        )
    dependent = [int(v) for v in schema.context_dependent_function_opset_versions]
    if not dependent:
        return None
    version = _version_for(dependent, opset)
    unknown = onnx.TypeProto()
    types = [(unknown if t is None else t).SerializeToString() for t in input_types]
    built = schema.get_context_dependent_function_with_opset_version(
        version, node.SerializeToString(), types
    )
    if not built:  # the builder lacked a type it needs
        return None
    return onnx.FunctionProto.FromString(built)


def _version_for(versions: Sequence[int], opset: int) -> int:
    """The newest of a schema's function versions that is not newer than ``opset``
    (the oldest one if all are)."""
    older = [v for v in versions if v <= opset]
    return max(older) if older else min(versions)


def body_opset(body: onnx.FunctionProto, default: int) -> int:
    """The default-domain opset the body's nodes are written for."""
    for opset in body.opset_import:
        if opset.domain in DEFAULT_DOMAINS:
            return int(opset.version)
    return default


def bind(
    body: onnx.FunctionProto,
    node: Any,
    prefix: str,
    defaults: Mapping[str, onnx.AttributeProto],
) -> list[Any]:
    """The body's nodes (new ``NodeProto``s) wired to ``node``: formal inputs and
    outputs renamed to the node's actual ones, every other value and node name
    prefixed with ``prefix``, attribute references replaced by the node's attribute
    (else ``defaults``' entry of that name, else dropped)."""
    names: dict[str, str] = {}
    for k, formal in enumerate(body.input):
        names[str(formal)] = str(node.input[k]) if k < len(node.input) else ""
    for k, formal in enumerate(body.output):
        if k < len(node.output) and node.output[k]:
            names[str(formal)] = str(node.output[k])
    attributes = {str(a.name): a for a in node.attribute}
    function_defaults = {str(a.name): a for a in body.attribute_proto}

    def rename(name: str) -> str:
        if not name:
            return ""
        return names.get(name, prefix + name)

    nodes: list[Any] = []
    for k, inner in enumerate(body.node):
        new = onnx.NodeProto()
        new.CopyFrom(inner)
        new.name = prefix + (str(inner.name) or f"#{k}")
        del new.input[:]
        new.input.extend(rename(str(n)) for n in inner.input)
        del new.output[:]
        new.output.extend(rename(str(n)) for n in inner.output)
        del new.attribute[:]
        for attr in inner.attribute:
            if not attr.ref_attr_name:
                new.attribute.append(attr)
                continue
            ref = str(attr.ref_attr_name)
            source = attributes.get(ref)
            if source is None:
                source = defaults.get(ref)
            if source is None:
                source = function_defaults.get(ref)
            if source is None:
                continue  # the inner op's own default applies
            bound = onnx.AttributeProto()
            bound.CopyFrom(source)
            bound.name = attr.name
            new.attribute.append(bound)
        # an If or Scan inside the body reads the body's values by their new names
        for graph in subgraphs.nested(new):
            subgraphs.rename_reads(
                graph, {n: rename(n) for n in subgraphs.free_names(graph)}
            )
        nodes.append(new)
    return nodes


def schema_defaults(op_type: str, opset: int) -> dict[str, onnx.AttributeProto]:
    """The attributes of ``op_type``'s schema that have a default value."""
    schema = op_schema(op_type, opset)
    if schema is None:
        return {}
    return {
        str(name): attr.default_value
        for name, attr in schema.attributes.items()
        if attr.default_value.type != onnx.AttributeProto.UNDEFINED
    }


def expanded_nodes(
    node: Any, opset: int, prefix: str, types: TypeLookup
) -> tuple[list[Any], int] | None:
    """The bound body of ``node`` at ``opset`` and the opset its nodes are written
    for, or None when it has no body (or its context-dependent body cannot be built
    from ``types``)."""
    input_types = [types(str(name)) if name else None for name in node.input]
    body = function_body(node, opset, input_types)
    if body is None:
        return None
    defaults = schema_defaults(str(node.op_type), opset)
    return bind(body, node, prefix, defaults), body_opset(body, opset)


# ---- what a body leaves unsupported -------------------------------------------------------


def expanded_key(op_type: str, problems: Sequence[str]) -> str:
    """``Op (expanded: A, B unsupported)``: the name an unsupported expansion of
    ``op_type`` gets in an ``UnsupportedOpsError``. ``problems`` are the inner op
    types that are unsupported (``A``), or nested keys (``Inner (expanded: ...)``)."""
    leaves = sorted({p for p in problems if " (expanded: " not in p})
    nested = sorted({p for p in problems if " (expanded: " in p})
    parts = [f"{', '.join(leaves)} unsupported"] if leaves else []
    return f"{op_type} (expanded: {'; '.join([*parts, *nested])})"


def body_problems(
    nodes: Sequence[Any], opset: int, supported: Collection[str], types: TypeLookup
) -> list[str]:
    """The inner op types of an expansion that qidao cannot convert (other domains
    as ``domain::Op``), and the keys of nested function ops whose bodies have such
    ops. A nested body that cannot be built yet (a context-dependent one, whose
    input types are only known in the walk) counts as supported here."""
    problems: list[str] = []
    for inner in nodes:
        op_type = str(inner.op_type)
        if inner.domain not in DEFAULT_DOMAINS:
            problems.append(f"{inner.domain}::{op_type}")
        elif op_type in supported:
            continue
        elif not is_function_op(op_type, opset):
            problems.append(op_type)
        else:
            inner_prefix = f"{inner.name}/{op_type}/"
            expansion = expanded_nodes(inner, opset, inner_prefix, types)
            if expansion is None:
                continue  # context-dependent: checked when the walk expands it
            deeper = body_problems(*expansion, supported, types)
            if deeper:
                problems.append(expanded_key(op_type, deeper))
    return problems


def check_supported(proto: Any, supported: Collection[str]) -> None:
    """Raise ``UnsupportedOpsError`` naming every op type of the model's graph that
    qidao cannot import, with the nodes that use it: one not in ``supported`` (or
    not in the default domain) and without a function, or a function op whose body
    uses such an op (``Op (expanded: Inner unsupported)``)."""
    opset = _model_opset(proto)
    types = _ModelTypes(proto)
    unsupported: dict[str, list[str]] = {}
    for index, node in enumerate(proto.graph.node):
        op_type = str(node.op_type)
        label = node_label(node, index)
        if node.domain not in DEFAULT_DOMAINS:
            op_type = f"{node.domain}::{op_type}"
            if op_type in supported:  # a custom op (qidao.custom_op)
                continue
        elif op_type in supported:
            continue
        elif is_function_op(op_type, opset):
            prefix = f"{label}/{op_type}/"
            expansion = expanded_nodes(node, opset, prefix, types.lookup)
            if expansion is None:
                continue  # context-dependent: checked when the walk expands it
            problems = body_problems(*expansion, supported, types.lookup)
            if not problems:
                continue
            op_type = expanded_key(op_type, problems)
        unsupported.setdefault(op_type, []).append(label)
    if unsupported:
        raise UnsupportedOpsError(unsupported)


def with_default_attributes(proto: Any, supported: Collection[str]) -> Any:
    """A copy of ``proto`` whose function-op nodes (op types not in ``supported``)
    set every attribute their schema gives a default, or ``proto`` itself when none
    lacks one. The same op, spelled out: ONNX's strict shape inference of a
    function op runs its body, and a body's attribute reference to an unset
    attribute fails there (``MeanVarianceNormalization`` without ``axes``)."""
    opset = _model_opset(proto)
    missing: dict[int, list[onnx.AttributeProto]] = {}
    for index, node in enumerate(proto.graph.node):
        op_type = str(node.op_type)
        if node.domain not in DEFAULT_DOMAINS or op_type in supported:
            continue
        if not is_function_op(op_type, opset):
            continue
        present = {str(a.name) for a in node.attribute}
        defaults = schema_defaults(op_type, opset)
        absent = [a for name, a in sorted(defaults.items()) if name not in present]
        if absent:
            missing[index] = absent
    if not missing:
        return proto
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    for index, absent in missing.items():
        proto.graph.node[index].attribute.extend(absent)
    return proto


def _model_opset(proto: Any) -> int:
    for opset in proto.opset_import:
        if opset.domain in DEFAULT_DOMAINS:
            return int(opset.version)
    return onnx.defs.onnx_opset_version()


class _ModelTypes:
    """The types of a model's values, for context-dependent bodies before the walk:
    declared ones first, then ONNX's (lenient) inference, run once when needed."""

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        graph = proto.graph
        self.types: dict[str, onnx.TypeProto] = {
            str(vi.name): vi.type
            for vi in [*graph.input, *graph.value_info, *graph.output]
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type
        }
        for tensor in graph.initializer:
            self.types[str(tensor.name)] = helper.make_tensor_type_proto(
                tensor.data_type, list(tensor.dims)
            )
        self.inferred = False

    def lookup(self, name: str) -> onnx.TypeProto | None:
        if name not in self.types and not self.inferred:
            self.inferred = True
            self._infer()
        return self.types.get(name)

    def _infer(self) -> None:
        try:
            inferred = onnx.shape_inference.infer_shapes(self.proto)
        except Exception:  # a broken model: the strict inference later reports it
            return
        for vi in inferred.graph.value_info:
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                self.types.setdefault(str(vi.name), vi.type)


# ---- the expansion in the walk ------------------------------------------------------------


def expand(
    env: Mapping[str, Value | np.ndarray[Any, Any]],
    taken: Collection[str],
    node: Node,
    supported: Collection[str],
    convert: Callable[[Node], None],
) -> None:
    """Convert ``node`` (an op without converter or folder) through its function
    body: bind the body to the node, then ``convert`` each inner node (an inner
    function op expands in turn), which adds its outputs to ``env`` (the importer's
    values by ONNX name; ``taken``: every name the model uses). An op without a
    function, or a body with an op qidao cannot convert, is an
    ``UnsupportedOpsError``."""
    name = node_label(node.proto, node.index)
    prefix = _unique_prefix(taken, f"{name}/{node.op_type}/")

    def types(value: str) -> onnx.TypeProto | None:
        return _env_type(env, value)

    expansion = expanded_nodes(node.proto, node.opset, prefix, types)
    if expansion is None:
        raise UnsupportedOpsError({node.op_type: [name]})
    nodes, opset = expansion
    problems = body_problems(nodes, opset, supported, types)
    if problems:
        raise UnsupportedOpsError({expanded_key(node.op_type, problems): [name]})
    try:
        for k, proto in enumerate(nodes):
            attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
            inner = dataclasses.replace(
                node, proto=proto, index=k, opset=opset, attrs=attrs
            )
            convert(inner)
    except ConstantRequiredError as e:  # name the node's inputs the values come from
        runtime = [n for n, v in env.items() if not isinstance(v, np.ndarray)]
        sources = _sources(nodes, e.names, set(runtime))
        raise ConstantRequiredError(str(e), sources, e.shape) from None
    except UnsupportedOpsError as e:  # a nested context-dependent body
        raise UnsupportedOpsError(
            {expanded_key(node.op_type, [op]): [name] for op in e.ops}
        ) from None
    missing = [o for o in node.proto.output if o and o not in env]
    if missing:
        raise node.error(
            f"the function body of {node.op_type} defines no output {missing}"
        )


def _unique_prefix(taken: Collection[str], base: str) -> str:
    """``base``, or ``base`` with a counter when a model value already starts
    with it."""
    prefix, count = base, 0
    while any(name.startswith(prefix) for name in taken):
        count += 1
        prefix = f"{base[:-1]}.{count}/"
    return prefix


def _env_type(
    env: Mapping[str, Value | np.ndarray[Any, Any]], name: str
) -> onnx.TypeProto | None:
    """The type of an imported value (graph value or constant), or None."""
    entry = env.get(name)
    if entry is None:
        return None
    try:
        elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(entry.dtype))
    except (KeyError, TypeError, ValueError):
        return None
    return helper.make_tensor_type_proto(elem_type, list(entry.shape))


def _sources(
    nodes: Sequence[Any], names: Sequence[str], runtime: Collection[str]
) -> list[str]:
    """The values outside the expansion that ``names`` (values inside it, or
    outside) are computed from: a walk up the inner nodes' producers that stops at
    compile-time constants (the names not in ``runtime``, the graph values)."""
    producer = {str(out): inner for inner in nodes for out in inner.output if out}
    sources: list[str] = []
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in runtime:
            continue
        inner = producer.get(name)
        if inner is None:
            sources.append(name)
        else:
            stack.extend(str(i) for i in inner.input if i)
            for graph in subgraphs.nested(inner):  # an If's branches read outer values
                stack.extend(subgraphs.free_names(graph))
    return sorted(sources)
