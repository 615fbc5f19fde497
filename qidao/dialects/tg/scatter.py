"""Scatters by a runtime index tensor, and the gather they invert:
``tg.scatter_elements``, ``tg.scatter_nd`` and ``tg.gather_nd``.

- ``tg.scatter_elements`` is ONNX ``ScatterElements`` / ``torch.scatter`` (and
  ``scatter_add``, ``scatter_reduce``): the result is a copy of ``data`` where, for
  every position ``p`` of ``indices``, the entry at ``p`` with ``p[axis]`` replaced
  by ``indices[p]`` becomes ``updates[p]`` (combined with what is there by the
  ``reduction``). ``updates`` has the indices' shape.
- ``tg.scatter_nd`` is ONNX ``ScatterND``: ``indices`` of shape ``[*B, k]`` holds
  one k-tuple per position of ``B``; each picks a slice ``data[i0, .., ik-1]`` of
  shape ``data.shape[k:]`` that becomes ``updates[b]`` (combined likewise).
- ``tg.gather_nd`` is ONNX ``GatherND``: the inverse of ``scatter_nd``, with
  ``batch_dims`` leading dimensions shared by the data and the indices; the result
  is ``indices.shape[:-1] + data.shape[batch_dims + k:]``.

**Reductions** (the scatters' ``reduction``, ONNX's names): ``none`` (the update
replaces the entry), ``add``, ``mul``, ``max`` and ``min`` (the entry and the
update combined; ``max``/``min`` of floats propagate NaN, as ``np.maximum``). The
updates are applied one by one in row-major order of the indices, so where
several indices hit one entry ``add``/``mul``/``max``/``min`` combine them all,
and with ``none`` **the last one wins** (ONNX leaves that case undefined).

**Index values.** An index ``i`` of an axis of size ``n`` in ``[-n, n)`` picks entry
``i`` (a negative one counts from the end). No verifier sees a runtime value and a
kernel must never touch memory outside its buffers, so an index outside
``[-n, n)`` has a defined result:

- a scatter **skips** the update (the result keeps ``data``'s entry), XLA's rule
  for scatters; for ``scatter_nd`` that is the whole slice of a k-tuple with any
  component out of range;
- ``gather_nd`` **clamps** the component into ``[0, n - 1]`` after wrapping a
  negative one once, the rule of ``tg.take`` (``dynamic_indexing.py``), so a gather
  from an axis of size 0 is a verifier error unless the result is empty.

``qidao.compile(..., checks=True)`` raises ``qidao.CheckError`` for such an index
instead (``qidao/passes/graph/insert_checks.py``).

The data and updates may have any element type (the reductions other than
``none``: f32, f64 and integers) and any layout, so may the indices (i32 or i64).
The result is row-major, of the data's element type.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f16,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, normalize_axis, tensor
from qidao.dialects.tg.dynamic_indexing import INDEX_WIDTHS, check_element_indices
from qidao.dialects.tg.types import fmt_shape, kind_of, shape_of, tensor_type

REDUCTIONS = ("none", "add", "mul", "max", "min")
"""How a scatter combines an update with the entry it hits (ONNX's names)."""


def _check_indices(op: str, indices: TensorType[Attribute]) -> None:
    element = indices.get_element_type()
    if not (isinstance(element, IntegerType) and element.width.data in INDEX_WIDTHS):
        raise VerifyException(
            f"{op} expects i32 or i64 indices, but operand #1 (the indices) is "
            f"{indices}"
        )


def _check_rank(op: str, what: str, t: TensorType[Attribute]) -> None:
    if not t.get_shape():
        raise VerifyException(f"{op} expects {what} of rank >= 1, got {t}")


def _check_reduction(
    op: str, reduction: str, data: TensorType[Attribute], updates: TensorType[Attribute]
) -> None:
    if data.get_element_type() != updates.get_element_type():
        raise VerifyException(
            f"{op} expects updates of the data's element type "
            f"{data.get_element_type()}, but the updates are {updates}"
        )
    if reduction not in REDUCTIONS:
        raise VerifyException(
            f"{op}: reduction must be one of {', '.join(REDUCTIONS)}, got '{reduction}'"
        )
    element = data.get_element_type()
    if reduction != "none" and (kind_of(element) == "bool" or element == f16):
        raise VerifyException(
            f"{op}: reduction '{reduction}' combines f32, f64 or integer tensors, "
            f"but the data is {data}"
        )


class _ScatterOp(TgOp):
    """The operands, ``reduction`` and result the two scatters share: the result
    has the data's shape and element type, row-major."""

    KERNEL_KIND: ClassVar[str] = "other"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    reduction = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def reduction_kind(self) -> str:
        return self.reduction.data

    def check_operands(self) -> None:
        """The rules of one scatter, given its normalized operand types."""
        raise NotImplementedError

    def verify_(self) -> None:
        self.verify_tensors()
        data = tensor(self.data)
        _check_rank(self.name, "data", data)
        _check_indices(self.name, tensor(self.indices))
        _check_reduction(self.name, self.reduction_kind(), data, tensor(self.updates))
        self.check_operands()
        self.expect_result_type(tensor_type(shape_of(data), data.get_element_type()))


@irdl_op_definition
class ScatterElementsOp(_ScatterOp):
    """ONNX ``ScatterElements`` / ``torch.scatter``: a copy of ``data`` where
    ``out[.., indices[p], ..] = updates[p]`` (``indices[p]`` on ``axis``), combined
    with the entry by ``reduction``. The indices (i32/i64) have the data's rank and
    at most its size in every dimension but ``axis``; the updates have their shape.
    Out-of-range indices are skipped (module text).

    ```mlir
    %r = tg.scatter_elements %x, %ids, %u axis = 1 reduction = "add" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
    ```
    """

    name = "tg.scatter_elements"

    axis = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$data `,` $indices `,` $updates `axis` `=` $axis `reduction` `=` $reduction "
        "attr-dict `:` `(` type($data) `,` type($indices) `,` type($updates) `)` "
        "`->` type($result)"
    )

    def __init__(
        self,
        data: SSAValue,
        indices: SSAValue,
        updates: SSAValue,
        axis: int,
        reduction: str = "none",
    ) -> None:
        t = tensor(data)
        _check_rank(self.name, "data", t)
        a = normalize_axis(axis, len(t.get_shape()), self.name)
        super().__init__(
            operands=[data, indices, updates],
            result_types=[tensor_type(shape_of(t), t.get_element_type())],
            properties={
                "axis": IntegerAttr(a, 64),
                "reduction": StringAttr(reduction),
            },
        )

    def normalized_axis(self) -> int:
        rank = len(tensor(self.data).get_shape())
        return normalize_axis(self.axis.value.data, rank, self.name)

    def check_operands(self) -> None:
        name = self.name
        shape = shape_of(tensor(self.data))
        index_shape = shape_of(tensor(self.indices))
        a = self.normalized_axis()
        check_element_indices(name, "data", shape, tensor(self.indices), a)
        update_shape = shape_of(tensor(self.updates))
        if update_shape != index_shape:
            raise VerifyException(
                f"{name} expects updates of the indices' shape "
                f"{fmt_shape(index_shape)}, but the updates are {self.updates.type}"
            )


@irdl_op_definition
class ScatterNdOp(_ScatterOp):
    """ONNX ``ScatterND``: indices ``[*B, k]`` (i32/i64, ``k <=`` the data's rank)
    pick one slice ``data[i0, .., ik-1]`` per position of ``B``; a copy of ``data``
    where each becomes ``updates[b]`` (shape ``B + data.shape[k:]``), combined with
    the slice by ``reduction``. A k-tuple with an out-of-range component is skipped
    (module text).

    ```mlir
    %r = tg.scatter_nd %x, %ids, %u reduction = "none" : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    ```
    """

    name = "tg.scatter_nd"

    assembly_format = (
        "$data `,` $indices `,` $updates `reduction` `=` $reduction attr-dict `:` "
        "`(` type($data) `,` type($indices) `,` type($updates) `)` `->` "
        "type($result)"
    )

    def __init__(
        self,
        data: SSAValue,
        indices: SSAValue,
        updates: SSAValue,
        reduction: str = "none",
    ) -> None:
        t = tensor(data)
        super().__init__(
            operands=[data, indices, updates],
            result_types=[tensor_type(shape_of(t), t.get_element_type())],
            properties={"reduction": StringAttr(reduction)},
        )

    def check_operands(self) -> None:
        name = self.name
        shape = shape_of(tensor(self.data))
        index_shape = shape_of(tensor(self.indices))
        _check_rank(name, "indices", tensor(self.indices))
        k = index_shape[-1]
        if not 1 <= k <= len(shape):
            raise VerifyException(
                f"{name}: the indices {fmt_shape(index_shape)} hold {k}-tuples; "
                f"expected 1 to {len(shape)} (the data's rank)"
            )
        expected = (*index_shape[:-1], *shape[k:])
        update_shape = shape_of(tensor(self.updates))
        if update_shape != expected:
            raise VerifyException(
                f"{name} expects updates of shape {fmt_shape(expected)} (the "
                f"indices' {fmt_shape(index_shape[:-1])} then the data's "
                f"{fmt_shape(shape[k:])}), but the updates are {self.updates.type}"
            )


@irdl_op_definition
class GatherNdOp(TgOp):
    """ONNX ``GatherND``: indices ``[*B, k]`` (i32/i64) whose first ``batch_dims``
    dimensions are the data's; each k-tuple picks the slice
    ``data[b.., i0, .., ik-1]``. The result is ``indices.shape[:-1] +
    data.shape[batch_dims + k:]``. Negative components count from the end;
    out-of-range ones are clamped (module text).

    ```mlir
    %r = tg.gather_nd %x, %ids batch_dims = 0 : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
    ```
    """

    name = "tg.gather_nd"

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    batch_dims = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $indices `batch_dims` `=` $batch_dims attr-dict `:` `(` "
        "type($input) `,` type($indices) `)` `->` type($result)"
    )

    def __init__(self, input: SSAValue, indices: SSAValue, batch_dims: int = 0) -> None:
        super().__init__(
            operands=[input, indices],
            result_types=[self.infer(tensor(input), tensor(indices), batch_dims)],
            properties={"batch_dims": IntegerAttr(batch_dims, 64)},
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute], indices: TensorType[Attribute], batch_dims: int
    ) -> Attribute:
        """The row-major result type, or an error naming what does not fit."""
        name = GatherNdOp.name
        _check_rank(name, "an input", input)
        _check_rank(name, "indices", indices)
        _check_indices(name, indices)
        shape, index_shape = shape_of(input), shape_of(indices)
        b = batch_dims
        if not 0 <= b < min(len(shape), len(index_shape)):
            raise VerifyException(
                f"{name}: batch_dims {b} must be in [0, {min(len(shape), len(index_shape))})"
                f" for an input {fmt_shape(shape)} and indices {fmt_shape(index_shape)}"
            )
        if shape[:b] != index_shape[:b]:
            raise VerifyException(
                f"{name}: the first {b} (batch) dimensions of the input "
                f"{fmt_shape(shape)} and the indices {fmt_shape(index_shape)} differ"
            )
        k = index_shape[-1]
        if not 1 <= k <= len(shape) - b:
            raise VerifyException(
                f"{name}: the indices {fmt_shape(index_shape)} hold {k}-tuples; "
                f"expected 1 to {len(shape) - b} (the input's rank less batch_dims)"
            )
        result = (*index_shape[:-1], *shape[b + k :])
        empty = [b + j for j in range(k) if shape[b + j] == 0]
        if empty and 0 not in result:
            raise VerifyException(
                f"{name}: axis {empty[0]} of the input {input} is empty, so the "
                "result has no entry to read"
            )
        return tensor_type(result, input.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(
            self.infer(
                tensor(self.input), tensor(self.indices), self.batch_dims.value.data
            )
        )
