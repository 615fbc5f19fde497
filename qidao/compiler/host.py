"""What the compiler reads off the host program ``@main``: its signature, its kernels
and, per call, its launches and buffers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)

from qidao.dialects.attributes import (
    IN_PLACE_ATTR,
    INPUT_NAMES_ATTR,
    KERNEL_ATTR,
    OUTPUT_DIM_LABELS_ATTR,
    OUTPUT_NAMES_ATTR,
)
from qidao.dialects.symbolic import declared_dims, dim_labels
from qidao.dialects.tg.types import dtype_name, is_row_major
from qidao.passes.kernels.plan_memory import memory_stats
from qidao.runtime.executor import TensorSpec

ENTRY = "main"
"""The host function every frontend makes and every target calls."""


def entry_function(module: ModuleOp) -> func.FuncOp:
    """The host function ``@main`` of ``module``."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == ENTRY:
            return op
    raise ValueError(f"the model has no entry function @{ENTRY}")


def kernel_labels(module: ModuleOp) -> dict[str, str]:
    """Kernel name -> its ``qd.kernel`` label (the tg ops it computes)."""
    labels = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            label = op.attributes.get(KERNEL_ATTR)
            if isinstance(label, StringAttr):
                labels[op.sym_name.data] = label.data
    return labels


def _names(fn: func.FuncOp, attr: str, default: Sequence[str]) -> list[str]:
    names = fn.attributes.get(attr)
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return list(default)


def signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Input and output specs of the tg graph's entry function."""
    fn = entry_function(module)
    args = fn.body.block.args
    in_names = _names(
        fn, INPUT_NAMES_ATTR, [a.name_hint or f"input{i}" for i, a in enumerate(args)]
    )
    outs = fn.function_type.outputs.data
    out_names = _names(fn, OUTPUT_NAMES_ATTR, [f"output{i}" for i in range(len(outs))])

    def spec(name: str, t: object) -> TensorSpec:
        if not isinstance(t, TensorType):
            raise TypeError(f"@{ENTRY}: '{name}' has type {t}, expected a tensor")
        if not is_row_major(t):
            raise ValueError(
                f"@{ENTRY}: '{name}' has the strided type {t}; graph inputs and "
                "outputs are row-major arrays (take a strided view inside the graph, "
                "e.g. with tg.transpose)"
            )
        return TensorSpec(name, tuple(t.get_shape()), dtype_name(t.get_element_type()))

    for attr, names, values, what in (
        (INPUT_NAMES_ATTR, in_names, args, "arguments"),
        (OUTPUT_NAMES_ATTR, out_names, outs, "results"),
    ):
        if len(names) != len(values):
            raise ValueError(
                f"@{ENTRY}: {attr} has {len(names)} name(s) for {len(values)} "
                f"{what}: {names}"
            )
    inputs = [spec(n, a.type) for n, a in zip(in_names, args, strict=True)]
    outputs = [spec(n, t) for n, t in zip(out_names, outs, strict=True)]
    return inputs, outputs


def host_stats(affine: ModuleOp) -> dict[str, Any]:
    """Per call: kernel launches, intermediate buffers, their peak live bytes and
    their traffic (see ``qidao.passes.kernels.plan_memory.memory_stats``); for a
    training step whose updates are written in place (``update-in-place``),
    ``in_place``: the [output, input] position pairs that share a buffer."""
    host = entry_function(affine)
    stats: dict[str, Any] = dict(memory_stats(affine, host))
    pairs = host.attributes.get(IN_PLACE_ATTR)
    if isinstance(pairs, ArrayAttr):
        stats["in_place"] = [
            [p.value.data for p in pair.data if isinstance(p, IntegerAttr)]
            for pair in pairs.data
            if isinstance(pair, ArrayAttr)
        ]
    dims = declared_dims(host)
    if dims:  # read by qidao.compiler.symbolic (and kept in the compile cache)
        stats["symbolic"] = {
            "dims": {n: [d.lo, d.hi, d.capacity] for n, d in dims.items()},
            "inputs": dim_labels(host),
            "outputs": dim_labels(host, OUTPUT_DIM_LABELS_ATTR),
        }
    return stats
