"""A ``Loop`` whose trip count is data, run on the host over a compiled body.

``control_flow.py`` unrolls a ``Loop`` whose trip count and conditions fold at
import. When they do not (the condition the body returns is computed from the
data, or ``M`` is a computed tensor no graph input can be bound to fold), the
loop is a cut of ``staged.py``: the stage before computes the loop's inputs and
the outer values its body reads, this step runs the loop, and the rest takes its
outputs. The body becomes an ONNX model of its own: its inputs are the body's
(``iteration_num``, ``cond``, the loop-carried values) followed by the outer
values it reads (``free``; one that folds is an initializer instead), its
outputs the body's (``cond``, the carried values, the scan outputs). It is a
``Specialized``: compiled at its first call for the shapes it meets (and again if
a carried value changes shape, or per value of an integer input a shape needs,
such as an ``iteration_num`` that slices), then reused by every iteration::

    i, cond, v = 0, cond_initial (true when omitted), v_initial
    while cond and (M is omitted or i < M):
        cond, v, *scan_i = body(i, cond, v, *free)
        i += 1
    outputs: v, then each scan output stacked on a new axis 0

A loop that runs no iteration returns the initial values, and its scan outputs
have ``[0, ...]`` with the body's declared shape of the scan value (refused when
the body does not declare it). Nothing bounds the iterations: a loop that never
ends, as ONNX defines it, does not end here either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from qidao.errors import ArgumentError
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx.load import DTYPES
from qidao.frontend.onnx.staged_models import (
    Compile,
    Values,
    bind,
    subgraph_model,
    typed_info,
)


@dataclass
class LoopStep:
    """The host loop of one ``Loop`` node (module text)."""

    label: str
    node: onnx.NodeProto
    body: onnx.ModelProto
    """The body as a model: inputs the formal ones, then ``free``."""
    free: list[str]
    """The outer values the body reads as inputs, in the order of its extra
    inputs (an outer initializer it reads is its own)."""
    makes: list[onnx.ValueInfoProto]
    """The loop's outputs (every dimension symbolic)."""
    bounded: list[onnx.NodeProto] = field(default_factory=list)
    bounded_outputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    prologue: list[onnx.NodeProto] = field(default_factory=list)
    program: Any = None
    """The body, compiled per call (``Specialized``), after ``prepare``."""
    iterations: int = 0
    """How many iterations the last run made."""

    @classmethod
    def of(
        cls,
        proto: onnx.ModelProto,
        node: onnx.NodeProto,
        label: str,
        typed: dict[str, onnx.ValueInfoProto],
    ) -> LoopStep:
        body = next(a.g for a in node.attribute if a.name == "body")
        carried = len(node.input) - 2
        if len(body.input) != 2 + carried or len(body.output) < 1 + carried:
            raise OnnxImportError(
                f"{label}: its body takes {len(body.input)} input(s) and gives "
                f"{len(body.output)}, for {carried} loop-carried value(s)"
            )
        model, free = subgraph_model(proto, body, typed)
        makes = [typed_info(typed, str(o)) for o in node.output if o]
        return cls(label, node, model, free, makes)

    @property
    def reads(self) -> set[str]:
        return {str(i) for i in self.node.input if i} | set(self.free)

    def prepare(self, constants: Values, per_call: Compile) -> None:
        self.program = per_call(bind(self.body, constants))

    def run(self, values: Values) -> None:
        names = [str(i) for i in self.node.input]
        limit = self._scalar(values, names[0], "trip count M") if names[0] else None
        going = bool(self._scalar(values, names[1], "condition")) if names[1] else True
        carried = [values[n] for n in names[2:]]
        formal = [str(i.name) for i in self.body.graph.input[: 2 + len(carried)]]
        scanned: list[list[Any]] = [
            [] for _ in range(len(self.body.graph.output) - 1 - len(carried))
        ]
        wanted = [str(i.name) for i in self.program.graph_inputs]
        outer = {n: values[n] for n in self.free if n in wanted}
        i = 0
        while going and (limit is None or i < limit):
            feed = dict(outer)
            feed[formal[0]], feed[formal[1]] = np.array(i, np.int64), np.array(going)
            feed.update(zip(formal[2:], carried, strict=True))
            results = self.program(*[feed[n] for n in wanted])
            going = bool(np.asarray(results[0]).reshape(-1)[0])
            carried = list(results[1 : 1 + len(carried)])
            for k, value in enumerate(results[1 + len(carried) :]):
                scanned[k].append(value)
            i += 1
        self.iterations = i
        stacked = [self._stack(k, values_k) for k, values_k in enumerate(scanned)]
        outputs = [str(o) for o in self.node.output]
        for name, value in zip(outputs, [*carried, *stacked], strict=True):
            if name:
                values[name] = value

    def _scalar(self, values: Values, name: str, what: str) -> int:
        array = np.asarray(values[name])
        if array.size != 1:
            raise ArgumentError(
                f"{self.label}: the {what} '{name}' must hold one element, got shape "
                f"{list(array.shape)}"
            )
        return int(array.reshape(-1)[0])

    def _stack(self, k: int, steps: list[Any]) -> np.ndarray[Any, Any]:
        """Scan output #k: the iterations' values stacked on a new axis 0."""
        if steps:
            return np.stack([np.asarray(s) for s in steps])
        declared = self.body.graph.output[1 + len(self.node.input) - 2 + k]
        t = declared.type.tensor_type
        dims = list(t.shape.dim)
        if not t.HasField("shape") or not all(d.HasField("dim_value") for d in dims):
            raise OnnxImportError(
                f"{self.label}: the loop ran no iteration, and its body does not "
                f"declare the shape of scan output '{declared.name}', so the shape "
                "of the stacked output is unknown"
            )
        dtype = DTYPES.get(int(t.elem_type))
        return np.zeros((0, *(d.dim_value for d in dims)), dtype)

    def programs(self) -> list[tuple[str, Any]]:
        if not self.iterations:
            return []
        return [
            (
                f"the loop body (last of {self.iterations} iterations)",
                self.program.latest,
            )
        ]
