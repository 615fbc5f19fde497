"""An ``If`` whose branches give different shapes on a condition computed at run
time: the host picks the branch, each compiled as a program of its own.

``control_flow.py`` inlines the branch a compile-time condition picks, and both
branches and a ``tg.select`` per output when the condition is data but the
branches agree on shapes and dtypes. When they do not, the output's shape is
data: the node is a cut of ``staged.py``. The stage before computes the
condition and the outer values the branches read, this step runs the branch
the condition picks (``then_branch`` when it is true), and the rest compiles for
the shapes that branch gave. Each branch is an ONNX model whose inputs are the
outer values it reads (an outer initializer is its own), compiled at its first
call (a ``Specialized``) and reused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from qidao.errors import ArgumentError
from qidao.frontend.onnx.staged_models import (
    Compile,
    Values,
    bind,
    subgraph_model,
    typed_info,
)

BRANCHES = ("then_branch", "else_branch")


@dataclass
class IfStep:
    """The host's choice of one ``If`` node's branch (module text)."""

    label: str
    node: onnx.NodeProto
    branches: dict[str, tuple[onnx.ModelProto, list[str]]]
    """Each branch as a model, with the outer values that are its inputs."""
    makes: list[onnx.ValueInfoProto]
    """The node's outputs (every dimension symbolic)."""
    bounded: list[onnx.NodeProto] = field(default_factory=list)
    bounded_outputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    prologue: list[onnx.NodeProto] = field(default_factory=list)
    compiled: dict[str, Any] = field(default_factory=dict)
    """Each branch compiled per call (``Specialized``), after ``prepare``."""
    taken: str = ""
    """The branch the last run took."""

    @classmethod
    def of(
        cls,
        proto: onnx.ModelProto,
        node: onnx.NodeProto,
        label: str,
        typed: dict[str, onnx.ValueInfoProto],
    ) -> IfStep:
        graphs = {a.name: a.g for a in node.attribute if a.name in BRANCHES}
        branches = {
            name: subgraph_model(proto, graphs[name], typed) for name in BRANCHES
        }
        makes = [typed_info(typed, str(o)) for o in node.output if o]
        return cls(label, node, branches, makes)

    @property
    def reads(self) -> set[str]:
        outer = {n for _, free in self.branches.values() for n in free}
        return {str(self.node.input[0])} | outer

    def prepare(self, constants: Values, per_call: Compile) -> None:
        for name, (model, _) in self.branches.items():
            self.compiled[name] = per_call(bind(model, constants))

    def run(self, values: Values) -> None:
        condition = np.asarray(values[str(self.node.input[0])])
        if condition.size != 1:
            raise ArgumentError(
                f"{self.label}: the condition must hold one element, got shape "
                f"{list(condition.shape)}"
            )
        self.taken = BRANCHES[0] if bool(condition.reshape(-1)[0]) else BRANCHES[1]
        program = self.compiled[self.taken]
        wanted = [str(i.name) for i in program.graph_inputs]
        results = program(*[values[w] for w in wanted])
        for name, value in zip(self.node.output, results, strict=True):
            if name:
                values[str(name)] = value

    def programs(self) -> list[tuple[str, Any]]:
        if not self.taken:
            return []
        return [(f"the {self.taken}", self.compiled[self.taken].latest)]
