"""ONNX control flow: ``If``, ``Loop`` and ``Scan``, inlined into the tg graph.

tg is a dataflow graph of static shapes, so a subgraph (a ``then_branch``, a loop
``body``) is converted by *inlining* it: its nodes are converted in place, as a
function body is (``functions.py``), with its formal inputs bound to the values
of this iteration or branch. Every value the subgraph makes gets a name unique to
the node and the iteration (``<node>/body.3/<value>``); a name it reads from the
enclosing graph (ONNX's outer-scope references) stays as it is, so the
subgraph reads the outer value. A nested subgraph (an ``If`` inside a ``Loop``
body) sees the same renaming for the names it reads from this one.

- ``If``: a condition known at compile time (a constant, or folded from shapes)
  inlines the branch it picks, and only that one. A condition computed at run time
  inlines both branches and selects each output with ``tg.select``: ONNX branches
  have no side effects, so computing both is the same function (at the cost of
  the branch not taken). When the two branches' outputs differ in shape or
  dtype, the output shape is data, which tg cannot express: an ``If`` of the main
  graph is then a cut of the staging, the host picking the branch, each compiled
  as a program of its own (``staged_if.py``); one inside another subgraph is
  refused, naming the output.
- ``Loop``: when the trip count ``M`` and the initial condition are compile-time
  values (a trip count read from an integer graph input is bound by the
  specialization: ``specialize.py``) and the condition the body returns folds in
  every iteration, the body is inlined once per iteration (the loop is unrolled)
  while that condition stays true. Loop-carried values pass from one iteration to
  the next; scan outputs are stacked on a new axis 0. Otherwise the trip count is
  data: the converter raises ``ConstantRequiredError`` with ``stage_at``, and when
  no graph input can be bound to fold it, a ``Loop`` of the main graph runs as a
  loop on the host over its body compiled as a program of its own
  (``staged.py``, ``staged_loop.py``).
- ``Scan``: the sequence length is a static dimension of the scan inputs; the body
  is inlined once per step with the state variables and the step's slice of each
  scan input (``scan_input_axes``, ``scan_input_directions``), and the scan outputs
  are stacked along ``scan_output_axes`` (reversed for ``scan_output_directions``
  of 1).

Unrolling keeps every kernel of the body visible to the graph passes (fusion,
constant folding, memory planning) at the price of graph size, so a ``Loop`` of
the main graph with more than ``MAX_ITERATIONS`` iterations runs on the host too
(``DataDependentShapeError``); a ``Scan`` or a nested ``Loop`` that long is
refused with the count. Sequence and optional
values (``test_loop13_seq``) stay unsupported: tg has tensors only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from qidao.frontend.builder import Value
from qidao.frontend.errors import ConstantRequiredError, DataDependentShapeError
from qidao.frontend.onnx import subgraphs
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.load import node_label
from qidao.frontend.onnx.node import Node

MAX_ITERATIONS = 4096
"""The most iterations a ``Loop`` or ``Scan`` is unrolled into."""

Entry = Value | Array


# ---- inlining a subgraph ----------------------------------------------------------


def _renamed_node(proto: Any, rename: dict[str, str]) -> Any:
    """A copy of ``proto`` with its inputs and outputs renamed by ``rename``, and
    the outer-scope reads of its nested subgraphs renamed too."""
    copy = onnx.NodeProto()
    copy.CopyFrom(proto)
    del copy.input[:]
    copy.input.extend(rename.get(str(i), str(i)) for i in proto.input)
    del copy.output[:]
    copy.output.extend(rename.get(str(o), str(o)) for o in proto.output)
    for graph in subgraphs.nested(copy):
        subgraphs.rename_reads(graph, rename)
    return copy


def inline(
    im: Importer, node: Node, body: onnx.GraphProto, bound: Sequence[Entry], tag: str
) -> list[Entry]:
    """Convert ``body`` into the importer's graph with its formal inputs bound to
    ``bound`` (in order); returns its outputs. ``tag`` names this inlining
    (``then``, ``body.3``) in the values' names."""
    if len(bound) != len(body.input):
        raise node.error(
            f"its subgraph '{body.name}' takes {len(body.input)} input(s), "
            f"{len(bound)} given"
        )
    prefix = f"{node_label(node.proto, node.index)}/{tag}/"
    rename = {name: prefix + name for name in subgraphs.defined(body)}
    for formal, value in zip(body.input, bound, strict=True):
        im.env[rename[str(formal.name)]] = value
    for tensor in body.initializer:
        im.env[rename[str(tensor.name)]] = numpy_helper.to_array(tensor)
    try:
        for k, proto in enumerate(body.node):
            copy = _renamed_node(proto, rename)
            attrs = {a.name: helper.get_attribute_value(a) for a in copy.attribute}
            im.convert(Node(copy, k, node.opset, attrs))
    except ConstantRequiredError as e:  # name the values outside that may be bound
        outside = [*node.inputs, *subgraphs.free_names(body)]
        runtime = [n for n in outside if n and isinstance(im.env.get(n), Value)]
        raise ConstantRequiredError(str(e), runtime, e.shape) from None
    outputs = [rename.get(str(o.name), str(o.name)) for o in body.output]
    missing = [o for o in outputs if o not in im.env]
    if missing:
        raise node.error(f"its subgraph '{body.name}' defines no output {missing}")
    return [im.env[o] for o in outputs]


# ---- helpers on values that may be constants ---------------------------------------


def _compile_time(
    im: Importer, node: Node, index: int, what: str, shape: bool = False
) -> Array | None:
    """Input #index as a compile-time array; None if omitted; a runtime value is a
    ``ConstantRequiredError`` (so a specialization can bind the graph input;
    ``shape``: the value fixes a shape, see ``Importer.const``)."""
    names = node.inputs
    if index >= len(names) or not names[index]:
        return None
    return im.const(node, names[index], what, shape)


def _stack(im: Importer, values: Sequence[Entry], axis: int) -> Entry:
    """``np.stack(values, axis)`` of arrays (folded) or graph values."""
    if all(isinstance(v, np.ndarray) for v in values):
        return np.stack([np.asarray(v) for v in values], axis=axis)
    g = im.graph
    tensors = [_as_value(im, v) for v in values]
    rank = tensors[0].rank + 1
    axis = axis + rank if axis < 0 else axis
    expanded = [g.reshape(t, [*t.shape[:axis], 1, *t.shape[axis:]]) for t in tensors]
    return expanded[0] if len(expanded) == 1 else g.concat(expanded, axis=axis)


def _as_value(im: Importer, entry: Entry) -> Value:
    if isinstance(entry, Value):
        return entry
    return im.graph.constant(entry, dtype=str(entry.dtype))


def _step(im: Importer, x: Entry, axis: int, index: int) -> Entry:
    """``np.take(x, index, axis)`` (one step of a scan input)."""
    if isinstance(x, np.ndarray):
        return np.asarray(np.take(x, index, axis=axis))
    g = im.graph
    starts: list[int | None] = [None] * x.rank
    stops: list[int | None] = [None] * x.rank
    starts[axis], stops[axis] = index, index + 1
    picked = g.slice(x, starts, stops)
    shape = [d for k, d in enumerate(x.shape) if k != axis]
    return g.reshape(picked, shape)


def _check_count(node: Node, count: int, what: str) -> None:
    if count > MAX_ITERATIONS:
        raise node.error(
            f"{what} {count} is more than qidao unrolls ({MAX_ITERATIONS} iterations)"
        )


# ---- the operators ----------------------------------------------------------------


@converter("If")
def _if(im: Importer, node: Node) -> list[Entry]:
    then_branch, else_branch = node.attr("then_branch"), node.attr("else_branch")
    names = node.inputs
    condition = im.env.get(names[0]) if names and names[0] else None
    if condition is None:
        raise node.error("the condition input (#0) is missing")
    if isinstance(condition, np.ndarray):
        if condition.size != 1:
            raise node.error(
                f"the condition must hold one element, got shape {list(condition.shape)}"
            )
        picked = then_branch if bool(condition.reshape(-1)[0]) else else_branch
        return inline(im, node, picked, [], "then" if picked is then_branch else "else")
    if condition.dtype != "bool" or int(np.prod(condition.shape)) != 1:
        raise node.error(
            f"the condition must be one bool, got {condition.dtype} "
            f"{list(condition.shape)}"
        )
    taken = inline(im, node, then_branch, [], "then")
    other = inline(im, node, else_branch, [], "else")
    outputs: list[Entry] = []
    g = im.graph
    flag = g.reshape(condition, [])
    for k, (a, b) in enumerate(zip(taken, other, strict=True)):
        if tuple(a.shape) != tuple(b.shape) or str(a.dtype) != str(b.dtype):
            raise DataDependentShapeError(
                f"{node.label}: output #{k} is {a.dtype} {list(a.shape)} in "
                f"then_branch and {b.dtype} {list(b.shape)} in else_branch: with a "
                "condition computed at run time the output's shape is data; qidao "
                "compiles such a model in stages, the host picking the branch "
                "(qidao.frontend.onnx.staged), where the If is in the main graph",
                str(node.proto.output[0]),
                "If",
            )
        outputs.append(g.where(flag, _as_value(im, a), _as_value(im, b)))
    return outputs


@converter("Loop")
def _loop(im: Importer, node: Node) -> list[Entry]:
    body = node.attr("body")
    stage_at = str(node.proto.output[0]) if node.proto.output else None
    try:
        trip = _compile_time(im, node, 0, "trip count M", shape=True)  # scan lengths
        condition = _compile_time(im, node, 1, "condition")
    except ConstantRequiredError as e:  # unless bound: a loop on the host
        raise ConstantRequiredError(str(e), list(e.names), e.shape, stage_at) from None
    carried = [_entry(im, node, n) for n in node.inputs[2:]]
    n_scan = len(body.output) - 1 - len(carried)
    limit = int(np.asarray(trip).reshape(-1)[0]) if trip is not None else None
    keep_going = (
        bool(np.asarray(condition).reshape(-1)[0]) if condition is not None else True
    )
    if limit is None and condition is None:
        raise node.error("an infinite loop (no trip count M and no condition)")
    if limit is not None and limit > MAX_ITERATIONS and stage_at is not None:
        raise DataDependentShapeError(
            f"{node.label}: its trip count {limit} is more than qidao unrolls "
            f"({MAX_ITERATIONS} iterations); a Loop of the main graph runs as a loop "
            "on the host (qidao.frontend.onnx.staged)",
            stage_at,
            "Loop",
        )
    if limit is not None:
        _check_count(node, limit, "the trip count")
    scanned: list[list[Entry]] = [[] for _ in range(n_scan)]
    i = 0
    while keep_going and (limit is None or i < limit):
        _check_count(node, i + 1, "the iteration count")
        bound = [np.array(i, np.int64), np.array(keep_going), *carried]
        try:
            results = inline(im, node, body, bound, f"body.{i}")
        except ConstantRequiredError as e:  # the body needs a value: unless bound,
            if e.stage_at is not None:  # a loop on the host compiles it per value
                raise
            raise ConstantRequiredError(
                str(e), list(e.names), e.shape, stage_at
            ) from None
        going = results[0]
        if not isinstance(going, np.ndarray):
            raise ConstantRequiredError(
                f"{node.label}: the loop condition its body returns is computed from "
                "runtime tensors, so the trip count is data; qidao unrolls a Loop "
                "whose condition folds at compile time, and runs any other Loop of "
                "the main graph as a loop on the host (qidao.frontend.onnx.staged)",
                [n for n in node.inputs if n and isinstance(im.env.get(n), Value)],
                stage_at=stage_at,
            )
        keep_going = bool(going.reshape(-1)[0])
        carried = list(results[1 : 1 + len(carried)])
        for k, value in enumerate(results[1 + len(carried) :]):
            scanned[k].append(value)
        i += 1
    if n_scan and i == 0:
        raise node.error(
            "the loop runs no iteration, so the shapes of its scan outputs are unknown"
        )
    return [*carried, *(_stack(im, values, 0) for values in scanned)]


def _entry(im: Importer, node: Node, name: str) -> Entry:
    """The value or constant named ``name`` (a required input)."""
    if not name or name not in im.env:
        raise node.error(f"input '{name}' is missing or not defined yet")
    return im.env[name]


@converter("Scan")
def _scan(im: Importer, node: Node) -> list[Entry]:
    body = node.attr("body")
    n_scan = int(node.attr("num_scan_inputs"))
    names = node.inputs
    states = [_entry(im, node, n) for n in names[: len(names) - n_scan]]
    scans = [_entry(im, node, n) for n in names[len(names) - n_scan :]]
    in_axes = _axes(node, "scan_input_axes", scans, n_scan, 0)
    in_dirs = list(node.attr("scan_input_directions", [0] * n_scan))
    n_out = len(body.output) - len(states)
    out_axes = [int(a) for a in node.attr("scan_output_axes", [0] * n_out)]
    out_dirs = list(node.attr("scan_output_directions", [0] * n_out))
    lengths = {int(x.shape[a]) for x, a in zip(scans, in_axes, strict=True)}
    if len(lengths) != 1:
        raise node.error(
            f"its scan inputs have different sequence lengths {sorted(lengths)}"
        )
    (length,) = lengths
    _check_count(node, length, "the sequence length")
    outputs: list[list[Entry]] = [[] for _ in range(n_out)]
    for t in range(length):
        steps = [
            _step(im, x, a, length - 1 - t if d else t)
            for x, a, d in zip(scans, in_axes, in_dirs, strict=True)
        ]
        results = inline(im, node, body, [*states, *steps], f"body.{t}")
        states = list(results[: len(states)])
        for k, value in enumerate(results[len(states) :]):
            outputs[k].append(value)
    if length == 0 and n_out:
        raise node.error("its sequence is empty, so its scan outputs have no shape")
    stacked = [
        _stack(im, values[::-1] if d else values, _out_axis(node, a, values[0]))
        for values, a, d in zip(outputs, out_axes, out_dirs, strict=True)
    ]
    return [*states, *stacked]


def _axes(
    node: Node, name: str, values: Sequence[Entry], count: int, default: int
) -> list[int]:
    """An axes attribute, one per value, made non-negative."""
    axes = [int(a) for a in node.attr(name, [default] * count)]
    result = []
    for a, x in zip(axes, values, strict=True):
        rank = len(x.shape)
        if not -rank <= a < rank:
            raise node.error(f"{name} {a} is out of range for rank {rank}")
        result.append(a + rank if a < 0 else a)
    return result


def _out_axis(node: Node, axis: int, first: Entry) -> int:
    rank = len(first.shape) + 1
    if not -rank <= axis < rank:
        raise node.error(f"scan_output_axes {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
