"""Selection along one axis: ``tg.top_k_indices``.

``tg.top_k_indices %x axis = a k = K [largest]`` gives, for every row of ``x``
along ``axis`` (every position of the other dimensions), the positions of its
``K`` largest entries (with ``largest``) or ``K`` smallest ones, **in order**:
largest first (smallest first), an i64 tensor of ``x``'s shape with ``axis`` cut
to ``K``. The order is total and stable:

- equal entries come in the order of their positions (the lower index first, as
  ONNX's ``TopK`` asks);
- NaN counts as larger than every number, ``+inf`` included (as ONNX Runtime,
  PyTorch and NumPy's ``sort`` order it): the NaNs of a row come first among its
  largest entries and never among its smallest ones unless ``K`` reaches them.

So ``K = n`` is a stable ``argsort`` (descending with ``largest``). The values are
``tg.gather_elements`` of ``x`` by these indices: the frontends build ONNX's
``TopK`` and ``torch.topk``/``torch.sort`` that way, so this op has one result.

The element type is f32, f64 or any integer type (signed or unsigned: ``ui64``
compares unsigned); f16 goes through ``tg.cast`` to f32 (exact, so the order is
the same). ``K`` is at most the axis' size.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, UnitAttr, f16, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, axis_of, tensor
from qidao.dialects.tg.types import NUMERIC, shape_of, tensor_type


@irdl_op_definition
class TopKIndicesOp(TgOp):
    """The positions of the ``k`` largest (``largest``) or smallest entries of
    every row along ``axis``, in order; ties by position, NaN above everything
    (module text). The result is i64, ``x``'s shape with ``axis`` cut to ``k``.

    ```mlir
    %i = tg.top_k_indices %x axis = 1 k = 2 largest : tensor<3x4xf32> -> tensor<3x2xi64>
    ```
    """

    name = "tg.top_k_indices"
    KERNEL_KIND: ClassVar[str] = "other"

    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    largest = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `axis` `=` $axis `k` `=` $k (`largest` $largest^)? attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, axis: int, k: int, largest: bool) -> None:
        t = tensor(input)
        a = self.checked_axis(t, axis)
        props: dict[str, Attribute] = {
            "axis": IntegerAttr(a, 64),
            "k": IntegerAttr(k, 64),
        }
        if largest:
            props["largest"] = UnitAttr()
        super().__init__(
            operands=[input], result_types=[self.infer(t, a, k)], properties=props
        )

    @classmethod
    def checked_axis(cls, input: TensorType[Attribute], axis: int) -> int:
        """``axis`` made non-negative, or an error naming the op."""
        return axis_of(cls.name, input, axis)

    @classmethod
    def infer(cls, input: TensorType[Attribute], axis: int, k: int) -> Attribute:
        """The row-major i64 result type, or an error naming what does not fit."""
        a = cls.checked_axis(input, axis)
        shape = shape_of(input)
        if not 0 <= k <= shape[a]:
            raise VerifyException(
                f"{cls.name}: k = {k} must be in [0, {shape[a]}], the size of axis "
                f"{a} of {input}"
            )
        return tensor_type((*shape[:a], k, *shape[a + 1 :]), i64)

    def normalized_axis(self) -> int:
        return self.checked_axis(tensor(self.input), self.axis.value.data)

    def count(self) -> int:
        """``k``: how many positions each row gives."""
        return self.k.value.data

    def is_largest(self) -> bool:
        return self.largest is not None

    def flops(self) -> int:
        """One comparison per entry of a row and slot of the result: ``n * k``
        per row (the insertion of ``lowering/sort.py``)."""
        shape = shape_of(tensor(self.input))
        rows = 1
        for d, size in enumerate(shape):
            if d != self.normalized_axis():
                rows *= size
        return rows * shape[self.normalized_axis()] * self.count()

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_kinds(NUMERIC)
        t = tensor(self.input)
        if t.get_element_type() == f16:
            raise VerifyException(
                f"{self.name} expects f32, f64 or integer tensors, but operand #0 is "
                f"{t} (f16 goes through tg.cast to f32)"
            )
        self.expect_result_type(self.infer(t, self.axis.value.data, self.count()))
