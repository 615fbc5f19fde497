"""An ONNX model whose ``dim_param`` dimensions become symbolic ones.

``qidao.compile(model, dynamic={"seq": (1, 2048)})``: each input axis whose
``dim_param`` is named in ``dynamic`` is imported at the dimension's capacity and
declared symbolic (``qidao.frontend.symbolic.declare_dims``), so one compile serves
every size in the range; a range of one size, ``(1, 1)``, fixes the axis instead.
Every other dynamic axis is an error that names it.

The importer folds a model's shape arithmetic (``Shape``, ``Gather``, ``Range``,
``Reshape`` targets) at the capacity, which is right when the folded values are the
same for every size, up to their extent: an ``arange`` of positions, a causal mask,
a reshape that keeps the axis. A model that computes *with* the size (divides by
it, counts from the end) folds to values that hold at the capacity alone. So the
model is imported twice, at the capacity ``C`` and at ``C - 1``, and the two graphs
must agree op by op: the same ops, and each shape, attribute and constant the same
but for sizes that scale with the dimension (``C`` against ``C - 1``, or ``768 C``
against ``768 (C - 1)``) and constants equal on their common part. Where they do
not, ``SymbolicShapeError`` names the op and what differs
(``qidao.frontend.symbolic.check_probe``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qidao.errors import ArgumentError
from qidao.frontend.symbolic import (
    SymbolicShapeError,
    check_probe,
    declare_dims,
    parse_dynamic,
)

__all__ = ["SymbolicShapeError", "import_symbolic"]


def import_symbolic(proto: Any, dynamic: Mapping[str, object]) -> ModuleOp:
    """Import ``proto`` (a loaded ``onnx.ModelProto``) with the dimensions of
    ``dynamic`` symbolic (module text)."""
    from qidao.frontend.onnx import import_onnx
    from qidao.frontend.onnx.specialize import runtime_inputs

    dims = parse_dynamic(dynamic)
    shapes: dict[str, list[int]] = {}
    labels: list[list[str]] = []
    seen: set[str] = set()
    for graph_input in runtime_inputs(proto):
        name = str(graph_input.name)
        axes: list[str] = []
        shape: list[int] = []
        for axis, d in enumerate(graph_input.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                size, label = int(d.dim_value), ""
            elif d.dim_param in dims:
                dim = dims[d.dim_param]
                seen.add(dim.name)
                fixed = dim.lo == dim.hi
                size = dim.hi if fixed else dim.capacity
                label = "" if fixed else dim.name
            else:
                what = f"'{d.dim_param}'" if d.dim_param else "unnamed"
                raise ArgumentError(
                    f"input '{name}' axis {axis} is dynamic ({what}); name it in "
                    'dynamic= with its range (dynamic={"<name>": (lo, hi)}; '
                    "(n, n) fixes it to n)"
                )
            axes.append(label)
            shape.append(size)
        labels.append(axes)
        shapes[name] = shape
    unknown = sorted(set(dims) - seen)
    if unknown:
        raise ArgumentError(
            f"dynamic= names {', '.join(map(repr, unknown))}, which no input "
            "dimension of the model is (its inputs' dim_params name them)"
        )
    symbolic = [d for d in dims.values() if d.lo < d.hi]
    module = import_onnx(proto, input_shapes=shapes)
    if symbolic:

        def import_under(k: int) -> ModuleOp:
            under = {
                name: [s - k if lab else s for s, lab in zip(shape, axes, strict=True)]
                for (name, shape), axes in zip(shapes.items(), labels, strict=True)
            }
            return import_onnx(proto, input_shapes=under)

        check_probe(module, import_under, symbolic)
        declare_dims(module, symbolic, labels)
    return module
