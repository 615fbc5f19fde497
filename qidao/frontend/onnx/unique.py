"""ONNX ``Unique``: the distinct values (or slices along ``axis``) of a tensor.

On a constant input it folds (NumPy's ``unique``, as ONNX's reference). On a
runtime tensor the output size is the number of distinct values, which is data:
the converter raises ``DataDependentShapeError`` and the model is cut at the
node (``staged.py``), whose cut takes the node apart into ops qidao has around
one ``NonZero``. With the input made a matrix ``M`` of ``A`` rows (the flattened
input as ``[n, 1]``, or the slices along ``axis`` as ``[A, R]``):

- the stage before sorts the rows, stably and lexicographically, by ``R``
  stable ``TopK`` sorts from the last column to the first (``order``), marks
  the first row of each run of equal rows (``first``: the row differs from the
  one before it), and numbers the runs (``CumSum``), which gives
  ``inverse_indices``: ``inverse[order[i]] = run[i]`` (``ScatterElements``);
- the cut is ``NonZero(first)``: the sorted positions where runs start;
- the rest gathers the rows there (``Y``), their first positions in the input
  (``indices``: a stable sort keeps the first occurrence first) and the run
  lengths (``counts``: the distance to the next start). With ``sorted = 0`` it
  puts the runs in the order of their first occurrence (a ``TopK`` of the
  ``indices``) and renumbers ``inverse_indices``.

Two values are equal when ``Equal`` says so: NaN is unequal to itself, so each
NaN is a value of its own (NumPy's ``unique`` counts them as one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from qidao.frontend.builder import Value
from qidao.frontend.errors import DataDependentShapeError
from qidao.frontend.onnx.importer import Array, Importer, converter, folder
from qidao.frontend.onnx.node import Node


@folder("Unique")
def _fold_unique(node: Node, args: list[Array | None]) -> list[Array]:
    x = args[0]
    if x is None:
        raise node.error("input #0 is missing")
    axis = node.optional_axis(x.ndim)
    y, indices, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    if not int(node.attr("sorted", 1)):  # in the order of first occurrence
        by_first = np.argsort(indices, kind="stable")
        y = np.take(y, by_first, axis=axis or 0) if axis is not None else y[by_first]
        indices, counts = indices[by_first], counts[by_first]
        inverse = np.argsort(by_first)[inverse]
    int64 = np.int64
    return [
        y,
        indices.astype(int64),
        inverse.reshape(-1).astype(int64),
        counts.astype(int64),
    ]


@converter("Unique")
def _unique(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    node.optional_axis(x.rank)
    if x.rank == 0:
        raise node.error("Unique of a scalar is not supported; reshape it to [1]")
    raise DataDependentShapeError(
        f"{node.label}: Unique of the runtime tensor '{node.inputs[0]}' ({x.dtype} "
        f"{list(x.shape)}) has outputs whose size is data (how many distinct "
        "values there are): qidao compiles such a model in stages, cut at this "
        "node (qidao.frontend.onnx.staged)",
        str(node.proto.output[0]),
        "Unique",
    )


@dataclass(frozen=True)
class Parts:
    """``Unique`` taken apart around its ``NonZero``: the nodes before it, the
    tensor it takes the non-zero positions of, the name of the cut positions
    (``[1, count]``) and the nodes after."""

    before: list[onnx.NodeProto]
    first: str
    starts: str
    after: list[onnx.NodeProto]


def parts(node: onnx.NodeProto, shape: tuple[int, ...]) -> Parts:
    """The nodes of ``Unique`` ``node`` on an input of ``shape`` (module text)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    outputs = [*node.output, "", "", ""][:4]
    p = f"{node.name or node.output[0]}/unique/"
    b = _Builder(p)
    x = str(node.input[0])
    axis = attrs.get("axis")
    if axis is None:
        rows, rest, perm = int(np.prod(shape)), [], None
        matrix = b.op("Reshape", [x, b.const([rows, 1])])
    else:
        a = int(axis) % len(shape)
        perm = [a, *(d for d in range(len(shape)) if d != a)]
        rows, rest = shape[a], [shape[d] for d in perm[1:]]
        moved = b.op("Transpose", [x], perm=perm)
        matrix = b.op("Reshape", [moved, b.const([rows, -1])])
    width = int(np.prod(rest)) if rest else 1
    order = b.const(np.arange(rows, dtype=np.int64))
    count = b.const([rows])
    for column in reversed(range(width)):  # stable sorts, last column first
        key = b.op("Gather", [b.op("Gather", [matrix, b.const(column)], axis=1), order])
        _, moves = b.ops("TopK", [key, count], 2, largest=0, sorted=1)
        order = b.op("Gather", [order, moves])
    ordered = b.op("Gather", [matrix, order], axis=0)
    if rows > 1:
        ahead = b.op("Slice", [ordered, b.const([1]), b.const([rows]), b.const([0])])
        behind = b.op(
            "Slice", [ordered, b.const([0]), b.const([rows - 1]), b.const([0])]
        )
        unequal = b.op("Not", [b.op("Equal", [ahead, behind])])
        differs = b.op("Cast", [unequal], to=TensorProto.FLOAT)  # per column
        across = b.op("MatMul", [differs, b.const(np.ones((width, 1)))])
        changed = b.op(
            "Greater", [b.op("Reshape", [across, b.const([-1])]), b.const(0.0)]
        )
        first = b.op("Concat", [b.const(np.array([True])), changed], axis=0)
    else:
        first = b.const(np.ones(rows, bool))
    runs = b.op(
        "Sub",
        [
            b.op("CumSum", [b.op("Cast", [first], to=TensorProto.INT64), b.const(0)]),
            b.const(1),
        ],
    )
    zeros = b.const(np.zeros(rows, np.int64))
    inverse = b.op("ScatterElements", [zeros, order, runs], axis=0)
    sort_inputs = int(attrs.get("sorted", 1))
    if sort_inputs and outputs[2]:
        b.op("Identity", [inverse], out=outputs[2])
    before = b.take()
    starts = f"{p}starts"
    start = b.op("Reshape", [starts, b.const([-1])])
    picked = b.op("Gather", [ordered, start], axis=0)
    firsts = b.op("Gather", [order, start])
    ends = b.op(
        "Concat",
        [b.op("Slice", [start, b.const([1]), b.const([rows + 1])]), b.const([rows])],
        axis=0,
    )
    counts = b.op("Sub", [ends, start])
    if not sort_inputs:  # the runs in the order of their first occurrence
        k = b.op("Shape", [start])
        _, by_first = b.ops("TopK", [firsts, k], 2, largest=0, sorted=1)
        picked = b.op("Gather", [picked, by_first], axis=0)
        firsts = b.op("Gather", [firsts, by_first])
        counts = b.op("Gather", [counts, by_first])
        limit = b.op("Reshape", [k, b.const(np.zeros(0, np.int64))])
        numbers = b.op("Range", [b.const(0), limit, b.const(1)])
        renumber = b.op("ScatterElements", [numbers, by_first, numbers], axis=0)
        if outputs[2]:
            b.op("Gather", [renumber, inverse], out=outputs[2])
    if perm is None:
        b.op("Reshape", [picked, b.const([-1])], out=outputs[0])
    else:
        back = b.op("Reshape", [picked, b.const([-1, *rest])])
        b.op(
            "Transpose", [back], out=outputs[0], perm=[int(d) for d in np.argsort(perm)]
        )
    if outputs[1]:
        b.op("Identity", [firsts], out=outputs[1])
    if outputs[3]:
        b.op("Identity", [counts], out=outputs[3])
    return Parts(before, first, starts, b.take())


class _Builder:
    """ONNX nodes with fresh names under a prefix, and constants as ``Constant``
    nodes."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.count = 0

    def _name(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count}"

    def op(self, op_type: str, inputs: list[str], out: str = "", **attrs: Any) -> str:
        (name,) = self.ops(op_type, inputs, 1, out, **attrs)
        return name

    def ops(
        self, op_type: str, inputs: list[str], n: int, out: str = "", **attrs: Any
    ) -> list[str]:
        outputs = [out or self._name() for _ in range(n)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outputs, name=self._name(), **attrs)
        )
        return outputs

    def const(self, value: Any) -> str:
        array = np.asarray(value)
        if array.dtype.kind == "i":
            array = array.astype(np.int64)
        elif array.dtype.kind == "f":
            array = array.astype(np.float32)
        name = self._name()
        tensor = onnx.numpy_helper.from_array(array, name)
        self.nodes.append(helper.make_node("Constant", [], [name], value=tensor))
        return name

    def take(self) -> list[onnx.NodeProto]:
        nodes, self.nodes = self.nodes, []
        return nodes
