"""A model whose shapes depend on data, compiled in stages cut at the node that
makes them so.

tg has static shapes, but some ONNX nodes give a tensor whose size is known only
when the model runs: ``NonZero`` of a runtime tensor (``[rank, count]``
positions: a mixture-of-experts router's ``torch.where(mask)``, Longformer's
global-attention positions), ``Compress`` by a runtime condition, ``Unique`` of a
runtime tensor, ``NonMaxSuppression`` of runtime boxes, a ``Loop`` whose trip
count is data, and an ``If`` on a runtime condition whose branches give different
shapes. Such a model compiles as programs around the
node, the way a JIT compiles the code after a data-dependent shape again for the
size it meets:

1. **The stage before** is the model's nodes up to the cut. For ``NonZero`` (and
   ``Compress``, by its condition; ``Unique`` and ``NonMaxSuppression``, taken
   apart around the ``NonZero`` of where runs of equal values start or of the
   boxes kept: ``unique.py``, ``nms.py``) the node is replaced by its bounded
   form:
   positions in ``[rank, numel]`` (the upper bound: every entry non-zero) and a
   ``count`` (``tg.nonzero_indices``, ``nonzero.py``). Its outputs are those and
   every tensor it computes that the node or the rest reads (or that is a model
   output). It is compiled once; a tensor that folds at import (a shape
   computation, a weight's transpose) is not an output but a constant of the
   programs after it.
2. **The host step** (a :class:`Step`): for ``NonZero`` it cuts the positions to
   ``[rank, count]`` (a view); for ``Loop`` it runs the loop, calling the body,
   compiled as a program of its own, once per iteration (``staged_loop.py``);
   for ``If`` it calls the branch the condition picks (``staged_if.py``).
3. **The rest** is an ONNX model of the remaining nodes (for ``Compress``, first
   a ``Gather`` by the positions) whose inputs are what the step made, the carried
   tensors and the model inputs it reads: a
   :class:`~qidao.frontend.onnx.specialize.Specialized`, compiled at the first
   call for the sizes it meets and cached per size (and per the values of integer
   inputs a shape needs); a later cut node in it is cut the same way.

So each size compiles the rest once: a model whose counts change from call to
call (a router's choices) compiles at those calls (at most
``specialize.MAX_ENTRIES`` kept), which is the price of static shapes. The cut
is at a node of the model's main graph; such a node inside an ``If``/``Loop``
body or a function is refused with its name.

``compiled.ir(stage)`` prints each program's IR under a ``// stage k`` line;
``compiled.stats`` sums kernels, buffers and traffic over the programs the last
call ran and lists each one's stats under ``"stages"``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qidao.errors import ArgumentError
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import nms, unique
from qidao.frontend.onnx.importer import STAGING_DOMAIN
from qidao.frontend.onnx.load import node_label
from qidao.frontend.onnx.staged_if import IfStep
from qidao.frontend.onnx.staged_loop import LoopStep
from qidao.frontend.onnx.staged_models import (
    Compile,
    Values,
    bind,
    defined,
    model_of,
    names_read,
    rank_of,
    runtime_inputs,
    shape_of,
    typed_info,
    types,
)

DATA_DEPENDENT_OPS = frozenset(
    {"NonZero", "Compress", "Unique", "NonMaxSuppression", "Loop", "If"}
)
"""ONNX op types that may make a size data: a model with one in its main graph is
imported at its first call, and cut where one does."""

COUNT_DIM = "nonzero_count"
"""The symbolic dimension of the cut positions in the rest's input."""


class Step(Protocol):
    """What the host does between the stage before and the rest."""

    label: str
    """The cut node (``NonZero node 'name'``)."""
    bounded: list[onnx.NodeProto]
    """Nodes the stage before ends with."""
    bounded_outputs: list[onnx.ValueInfoProto]
    """Their outputs the stage before returns (before the carried tensors)."""

    @property
    def reads(self) -> set[str]:
        """The names the step reads from the stage before (and the model inputs)."""

    makes: list[onnx.ValueInfoProto]
    """The values the step makes for the rest (the rest's inputs, by type)."""
    prologue: list[onnx.NodeProto]
    """Nodes the rest starts with."""

    def prepare(self, constants: Values, per_call: Compile) -> None:
        """Compile what the step runs, given the values that fold before it."""

    def run(self, values: Values) -> None:
        """Add what the step makes to ``values``."""

    def programs(self) -> list[tuple[str, Any]]:
        """The programs the last run called, each with what it is (for stats and
        IR)."""


@dataclass
class NonzeroStep:
    """A cut at a ``NonZero`` (``NonZero`` itself, or the one ``Compress``,
    ``Unique`` and ``NonMaxSuppression`` are taken apart around): the stage before
    ends with the bounded positions and count of ``source``; the host cuts the
    positions to ``[rank, count]`` as ``positions``, which the rest reads (after
    the ``prologue``: the nodes of the taken-apart op that come after it)."""

    label: str
    source: str
    positions: str
    rank: int
    output: str
    prologue: list[onnx.NodeProto] = field(default_factory=list)
    types: list[onnx.ValueInfoProto] = field(default_factory=list)
    """Types of values the stage before makes that ONNX's inference cannot
    infer (the outputs of a staging op it runs)."""

    def __post_init__(self) -> None:
        self.bounded = [
            helper.make_node(
                "NonZero",
                [self.source],
                [self._bounded, self._count],
                name=self.output,
                domain=STAGING_DOMAIN,
            )
        ]
        self.bounded_outputs = [
            helper.make_tensor_value_info(self._bounded, TensorProto.INT64, None),
            helper.make_tensor_value_info(self._count, TensorProto.INT64, []),
        ]
        self.makes = [
            helper.make_tensor_value_info(
                self.positions, TensorProto.INT64, [self.rank, COUNT_DIM]
            )
        ]

    @property
    def reads(self) -> set[str]:
        return set()  # the bounded node reads its source in the stage before

    @property
    def _bounded(self) -> str:
        return f"{self.output}:positions"

    @property
    def _count(self) -> str:
        return f"{self.output}:count"

    def prepare(self, constants: Values, per_call: Compile) -> None:
        pass

    def run(self, values: Values) -> None:
        n = int(np.asarray(values[self._count]).reshape(()))
        values[self.positions] = np.ascontiguousarray(values[self._bounded][:, :n])

    def programs(self) -> list[tuple[str, Any]]:
        return []


def _nonzero_step(
    node: onnx.NodeProto, label: str, typed: dict[str, onnx.ValueInfoProto]
) -> tuple[NonzeroStep, list[onnx.NodeProto]]:
    """The step of a cut at ``node`` and the nodes the stage before runs in place
    of it. ``NonZero``: its input and output, no node. ``Compress``: its
    condition, and a ``Gather`` of the input (flattened without ``axis``) by the
    positions. ``Unique`` and ``NonMaxSuppression``: taken apart around a
    ``NonZero`` (``unique.py``, ``nms.py``)."""
    output = str(node.output[0])
    if node.op_type == "NonMaxSuppression":
        kept = nms.parts(node, shape_of(typed, str(node.input[1])))
        cut_at = f"{kept.selected}:bounded"
        step = NonzeroStep(label, kept.keep, kept.selected, 3, cut_at, kept.after)
        step.types = kept.types
        return step, kept.before
    if node.op_type == "Unique":
        shape = shape_of(typed, str(node.input[0]))
        taken = unique.parts(node, shape)
        cut_at = f"{taken.starts}:bounded"
        step = NonzeroStep(label, taken.first, taken.starts, 1, cut_at, taken.after)
        return step, taken.before
    if node.op_type == "NonZero":
        source = str(node.input[0])
        return NonzeroStep(label, source, output, rank_of(typed, source), output), []
    assert node.op_type == "Compress", node.op_type
    positions = f"{output}:selected"
    flat = helper.make_tensor(f"{output}:flat", TensorProto.INT64, [1], [-1])
    nodes = [
        helper.make_node("Constant", [], [flat.name], value=flat),
        helper.make_node("Reshape", [positions, flat.name], [f"{output}:indices"]),
    ]
    data = str(node.input[0])
    axis = next((a.i for a in node.attribute if a.name == "axis"), None)
    if axis is None:
        nodes.append(helper.make_node("Reshape", [data, flat.name], [f"{output}:data"]))
        data, axis = f"{output}:data", 0
    nodes.append(
        helper.make_node("Gather", [data, f"{output}:indices"], [output], axis=axis)
    )
    return NonzeroStep(label, str(node.input[1]), positions, 1, output, nodes), []


@dataclass(frozen=True)
class Cut:
    """A model cut at one node: the two ONNX models, the step between them and how
    their values meet."""

    before: onnx.ModelProto
    """The nodes before the cut and the step's bounded nodes; outputs: the
    bounded outputs, then ``carried``."""
    rest: onnx.ModelProto | None
    """The nodes after the cut (None when no model output is computed there)."""
    step: Step
    carried: tuple[str, ...]
    """Tensors the stage before computes that the step or the rest reads or the
    model returns."""
    outputs: tuple[str, ...]
    """The model's outputs, in order."""


def cut(proto: onnx.ModelProto, output: str) -> Cut:
    """``proto`` cut at the main-graph node whose first output is ``output``."""
    graph = proto.graph
    at = next(
        (k for k, n in enumerate(graph.node) if n.output and n.output[0] == output),
        None,
    )
    if at is None:
        raise OnnxImportError(
            f"the tensor '{output}' has a size (or a loop's trip count) that is "
            "data, and it is computed inside an If/Loop/Scan body or a function: "
            "qidao compiles such a model in stages cut at a node of the main graph "
            "only"
        )
    node = graph.node[at]
    label = f"{node.op_type} node '{node_label(node, at)}'"
    typed = types(proto)
    step: Step
    instead: list[onnx.NodeProto] = []
    if node.op_type == "Loop":
        step = LoopStep.of(proto, node, label, typed)
    elif node.op_type == "If":
        step = IfStep.of(proto, node, label, typed)
    else:
        nonzero, instead = _nonzero_step(node, label, typed)
        step = nonzero
    before = [*graph.node[:at], *instead]
    after = [*step.prologue, *graph.node[at + 1 :]]
    if instead:  # the types of the values the node was taken apart into
        whole = onnx.ModelProto()
        whole.CopyFrom(proto)
        del whole.graph.node[:]
        taken = helper.make_node("NonZero", [nonzero.source], [nonzero.positions])
        whole.graph.node.extend([*before, taken, *after])
        whole.graph.value_info.extend(nonzero.types)
        whole.opset_import.append(helper.make_opsetid(STAGING_DOMAIN, 1))
        typed = types(whole)
    outputs = tuple(str(o.name) for o in graph.output)
    read_later = names_read(after) | set(outputs) | step.reads
    produced = [str(o) for n in before for o in n.output if o]
    carried = tuple(dict.fromkeys(n for n in produced if n in read_later))
    first = model_of(
        proto,
        [*before, *step.bounded],
        inputs=list(graph.input),
        outputs=[*step.bounded_outputs, *(typed_info(typed, n) for n in carried)],
    )
    first.opset_import.append(helper.make_opsetid(STAGING_DOMAIN, 1))
    if instead:
        first.graph.value_info.extend(nonzero.types)
    rest = None
    if any(o in defined(after) for o in outputs):
        reads = names_read(after)
        inputs = [i for i in runtime_inputs(proto) if i.name in reads]
        inputs += [typed_info(typed, n, static=True) for n in carried if n in reads]
        inputs += [v for v in step.makes if v.name in reads]
        rest = model_of(
            proto,
            after,
            inputs=inputs,
            outputs=[o for o in graph.output if str(o.name) in defined(after)],
        )
    return Cut(first, rest, step, carried, outputs)


class Staged:
    """A model compiled in stages around a node that makes a size data (module
    text): the stage before, compiled now, the host step, and the rest, compiled
    per size at the calls. Call it with the model's runtime inputs, in order."""

    def __init__(
        self,
        proto: onnx.ModelProto,
        output: str,
        compile_module: Compile,
        per_call: Compile,
    ) -> None:
        """``proto`` (its bound inputs initializers, its shapes given) cut at the
        node whose first output is ``output``; ``compile_module`` compiles an
        imported tg module, ``per_call`` makes the callable that compiles an ONNX
        model at its calls (``specialize.Specialized``) for the rest."""
        from qidao.frontend.onnx.importer import import_folded

        self.cut = cut(proto, output)
        self.names = [str(i.name) for i in runtime_inputs(proto)]
        module, folded = import_folded(self.cut.before)
        self.first = compile_module(module) if module is not None else None
        self.first_outputs = [
            str(o.name)
            for o in self.cut.before.graph.output
            if str(o.name) not in folded
        ]
        wanted = {*self.cut.outputs, *self.cut.step.reads}
        self.constants: Values = {
            str(t.name): numpy_helper.to_array(t)
            for t in proto.graph.initializer
            if t.name in wanted
        }
        self.constants.update(folded)
        self.step = self.cut.step
        self.step.prepare(self.constants, per_call)
        self.rest: Any = None
        """The rest: a ``Specialized`` (None when the model's outputs are all
        computed before the cut)."""
        if self.cut.rest is not None:
            self.rest = per_call(bind(self.cut.rest, self.constants))
        self._last: list[tuple[str, Any]] = []
        """The programs the last call ran, each with what it is."""
        self._outputs: tuple[Any, ...] = ()

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        if len(arrays) != len(self.names):
            raise ArgumentError(
                f"the model takes {len(self.names)} input(s) ({', '.join(self.names)}), "
                f"got {len(arrays)}"
            )
        values: Values = dict(self.constants)
        values.update(zip(self.names, arrays, strict=True))
        self._last = []
        if self.first is not None:
            values.update(zip(self.first_outputs, self.first(*arrays), strict=True))
            self._last.append(("the stage before", self.first))
        self.step.run(values)
        self._last += self.step.programs()
        if self.rest is not None:
            wanted = [str(i.name) for i in self.rest.graph_inputs]
            results = self.rest(*[values[w] for w in wanted])
            produced = [str(o.name) for o in self.rest.proto.graph.output]
            values.update(zip(produced, results, strict=True))
            self._last.append(("the rest", self.rest.latest))
        outputs = [np.asarray(values[o]) for o in self.cut.outputs]
        like = self._last[0][1].outputs[0] if self._last else None
        self._outputs = tuple(
            dataclasses.replace(like, name=name, shape=a.shape, dtype=str(a.dtype))
            for name, a in zip(self.cut.outputs, outputs, strict=True)
            if like is not None  # a spec (name, shape, dtype) to copy
        )
        return outputs

    @property
    def inputs(self) -> tuple[Any, ...]:
        """The specs of the stage before's inputs (the model's runtime inputs);
        without a stage before, of the first program the last call ran."""
        ran = [p for _, p in self._last]
        source = self.first if self.first is not None else (ran[0] if ran else None)
        return tuple(source.inputs) if source is not None else ()

    @property
    def outputs(self) -> tuple[Any, ...]:
        """The outputs of the last call (their sizes are data)."""
        return self._outputs

    @property
    def stats(self) -> dict[str, Any]:
        """Kernels, buffers and traffic summed over the programs the last call ran
        (peak bytes: the largest), and each one's stats under ``stages``."""
        stages = [{"stage": role, **p.stats} for role, p in self._last]
        total: dict[str, Any] = {
            key: sum(int(s.get(key, 0)) for s in stages)
            for key in ("kernels", "buffers", "traffic_bytes")
        }
        total["peak_bytes"] = max(
            (int(s.get("peak_bytes", 0)) for s in stages), default=0
        )
        total["threads"] = stages[0].get("threads") if stages else None
        total["cut"] = self.step.label
        total["stages"] = stages
        return total

    def ir(self, stage: str = "tg") -> str:
        """Each program's IR at ``stage``, in the order the last call ran them."""
        return "\n".join(
            f"// stage {k + 1} of {len(self._last)}: {role} (cut at "
            f"{self.step.label})\n{p.ir(stage)}"
            for k, (role, p) in enumerate(self._last)
        )

    def __repr__(self) -> str:
        return f"<qidao.Staged cut at {self.step.label}>"
