"""Gathers by a runtime index tensor: ``tg.take`` and ``tg.gather_elements``.

``tg.gather`` (``indexing.py``) takes its indices as a constant property, so its
kernel is all affine. These two take the indices as an **operand**, an i32 or i64
tensor computed at run time (the token ids of an embedding lookup, the class
targets of a loss), and their kernels load each index before they read the data:

- ``tg.take`` is ``np.take(x, indices, axis)`` (ONNX ``Gather``, ``nn.Embedding``,
  ``torch.index_select``): every index picks a whole slice of ``axis``, and the
  result has shape ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.
- ``tg.gather_elements`` is ONNX ``GatherElements`` / ``torch.gather``: one index
  per result element, ``out[i0, .., ik, ..] = x[i0, .., indices[i0, .., ik, ..],
  ..]`` with ``ik`` on ``axis``; the result has the indices' shape, which may be
  smaller than the input's in every dimension but ``axis``.

**Index values.** An index ``i`` of an axis of size ``n`` in ``[-n, n)`` reads
entry ``i`` (a negative one counts from the end, as in ONNX and NumPy). No verifier
sees a runtime value, and a kernel must never read outside its input, so an index
outside ``[-n, n)`` has a *defined* result: it is wrapped once if negative
(``i + n``), then **clamped** into ``[0, n - 1]``: ``n + 3`` reads entry ``n - 1``,
``-n - 3`` reads entry ``0``. (PyTorch raises on such an index and ONNX leaves it
undefined; the clamp is XLA's rule for gathers and NumPy's ``mode="clip"`` after
the wrap.) An axis of size 0 has no entry to clamp to, so a gather from one is a
verifier error unless the result is empty too.

The data may have any element type and any layout; so may the indices (a strided
view of them is read in place). The result is row-major, of the data's element type.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType, TensorType
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

from qidao.dialects.tg.base import TgOp, axis_of, tensor
from qidao.dialects.tg.layout import Shape
from qidao.dialects.tg.types import fmt_shape, shape_of, tensor_type

INDEX_WIDTHS = (32, 64)
"""Bit widths of the integer element types an index tensor may have."""


def wrap_and_clamp(index: int, size: int) -> int:
    """The entry that ``index`` reads on an axis of ``size`` (> 0) entries: wrapped
    once if negative, then clamped into ``[0, size - 1]`` (see the module text)."""
    if index < 0:
        index += size
    return min(max(index, 0), size - 1)


def _check_indices(op: str, indices: TensorType[Attribute]) -> None:
    element = indices.get_element_type()
    if not (isinstance(element, IntegerType) and element.width.data in INDEX_WIDTHS):
        raise VerifyException(
            f"{op} expects i32 or i64 indices, but operand #1 (the indices) is "
            f"{indices}"
        )


def check_element_indices(
    op: str, what: str, shape: Shape, indices: TensorType[Attribute], axis: int
) -> None:
    """The rule GatherElements and ScatterElements share: indices of the rank of
    ``what`` (the input, the data) of ``shape``, no larger in any dimension but
    ``axis``."""
    index_shape = shape_of(indices)
    if len(index_shape) != len(shape):
        raise VerifyException(
            f"{op} expects indices of the {what}'s rank {len(shape)}, but the "
            f"indices are {indices}"
        )
    for d, (size, count) in enumerate(zip(shape, index_shape, strict=True)):
        if d != axis and count > size:
            raise VerifyException(
                f"{op}: the indices {fmt_shape(index_shape)} are larger than "
                f"the {what} {fmt_shape(shape)} in dimension {d} (only axis {axis} "
                "may be larger)"
            )


def _check_not_empty_axis(
    op: str, input: TensorType[Attribute], axis: int, result: tuple[int, ...]
) -> None:
    size = shape_of(input)[axis]
    if size == 0 and math.prod(result) > 0:
        raise VerifyException(
            f"{op}: axis {axis} of the input {input} is empty, so its "
            f"{math.prod(result)} result element(s) have no entry to read"
        )


class _GatherByTensorOp(TgOp):
    """``%r = tg.<op> %x, %indices axis = a``: the operands, property, syntax and
    verifier both gathers share; each defines ``infer`` (its result type)."""

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $indices `axis` `=` $axis attr-dict `:` `(` type($input) `,` "
        "type($indices) `)` `->` type($result)"
    )

    def __init__(self, input: SSAValue, indices: SSAValue, axis: int) -> None:
        t = tensor(input)
        a = axis_of(self.name, t, axis)
        super().__init__(
            operands=[input, indices],
            result_types=[self.infer(t, tensor(indices), a)],
            properties={"axis": IntegerAttr(a, 64)},
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute], indices: TensorType[Attribute], axis: int
    ) -> Attribute:
        raise NotImplementedError

    def normalized_axis(self) -> int:
        return axis_of(self.name, tensor(self.input), self.axis.value.data)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(
            self.infer(tensor(self.input), tensor(self.indices), self.axis.value.data)
        )


@irdl_op_definition
class TakeOp(_GatherByTensorOp):
    """``np.take(x, indices, axis)`` with a runtime i32/i64 ``indices`` tensor of any
    shape: the result has ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.
    Negative indices count from the end; out-of-range ones are clamped (module
    text). A rank-0 index drops the axis.

    ```mlir
    %r = tg.take %x, %ids axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    ```
    """

    name = "tg.take"

    @staticmethod
    def infer(
        input: TensorType[Attribute], indices: TensorType[Attribute], axis: int
    ) -> Attribute:
        """The row-major result type, or an error naming what does not fit."""
        name = TakeOp.name
        a = axis_of(name, input, axis)
        _check_indices(name, indices)
        shape = shape_of(input)
        result = (*shape[:a], *shape_of(indices), *shape[a + 1 :])
        _check_not_empty_axis(name, input, a, result)
        return tensor_type(result, input.get_element_type())


@irdl_op_definition
class GatherElementsOp(_GatherByTensorOp):
    """ONNX ``GatherElements`` / ``torch.gather``: ``out[.., ik, ..] = x[..,
    indices[.., ik, ..], ..]`` with ``ik`` on ``axis``. The indices (i32/i64) have
    the input's rank, and at most the input's size in every dimension but ``axis``;
    the result has their shape. Negative indices count from the end; out-of-range
    ones are clamped (module text).

    ```mlir
    %r = tg.gather_elements %x, %ids axis = 1 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```
    """

    name = "tg.gather_elements"

    @staticmethod
    def infer(
        input: TensorType[Attribute], indices: TensorType[Attribute], axis: int
    ) -> Attribute:
        """The row-major result type, or an error naming what does not fit."""
        name = GatherElementsOp.name
        a = axis_of(name, input, axis)
        _check_indices(name, indices)
        shape, index_shape = shape_of(input), shape_of(indices)
        check_element_indices(name, "input", shape, indices, a)
        _check_not_empty_axis(name, input, a, index_shape)
        return tensor_type(index_shape, input.get_element_type())
