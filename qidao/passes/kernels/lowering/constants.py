"""Constants of ``convert-tg-to-affine``: splats fold into kernels, the rest become
``memref.global "private" constant @<graph>_cst<i>`` at module level."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation

from qidao.dialects.tg.types import dtype_name, is_storage_only, storage_type
from qidao.passes.kernels.lowering.common import Scalar, memref_type


def splat_of(value: DenseIntOrFPElementsAttr) -> Scalar | None:
    """The one value of a constant whose elements are all bitwise equal (or which
    has one element), else None: a float, or an int for integer and bool (0 or 1)
    element types (the stored bits for a storage-only type: ``0x3F80`` for bf16
    1.0)."""
    t = value.type
    element = t.get_element_type()
    dtype = np.dtype(dtype_name(element))
    data = value.data.data
    if dtype == np.bool_:  # one byte each; xDSL stores a parsed `true` as 0xff
        flat = np.frombuffer(data, dtype=np.uint8) != 0
    else:
        flat = np.frombuffer(data, dtype=dtype)
    if flat.size == 0:
        return None
    bits = flat.view(np.dtype(f"u{dtype.itemsize}"))
    if not bool((bits == bits[0]).all()):
        return None
    if is_storage_only(element):  # its bits, as the integer that stores it
        stored = flat.view(np.dtype(f"i{dtype.itemsize}"))
        return Scalar(int(stored[0]), storage_type(element))
    if isinstance(element, AnyFloat):
        return Scalar(float(flat[0]), element)
    return Scalar(int(flat[0]), storage_type(element))


class ConstantPool:
    """The module-level globals of one graph, created on first use, deduplicated."""

    def __init__(self, module_block: Block, before: Operation, graph: str) -> None:
        self.module_block = module_block
        self.before = before
        self.graph = graph
        self.names: dict[DenseIntOrFPElementsAttr, str] = {}

    def global_for(self, value: DenseIntOrFPElementsAttr) -> str:
        if value in self.names:
            return self.names[value]
        name = f"{self.graph}_cst{len(self.names)}"
        t = memref_type(value.type)
        stored = DenseIntOrFPElementsAttr(  # type: ignore[type-var]
            TensorType(t.element_type, t.get_shape()),
            value.data,  # type: ignore[arg-type]  # the same bytes, signless
        )
        glob = memref.GlobalOp.get(
            StringAttr(name),
            t,
            stored,
            constant=UnitAttr(),
            alignment=64,
        )
        self.module_block.insert_op_before(glob, self.before)
        self.names[value] = name
        return name
