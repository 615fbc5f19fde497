"""Running totals along one axis: ``tg.cumsum`` and ``tg.cumprod``.

``tg.cumsum %x axis = a`` is ``np.cumsum(x, axis=a)``: entry ``j`` of the axis is
the sum of entries ``0 .. j``. Two flags give ONNX's ``CumSum``/``CumProd``
variants:

- ``exclusive``: entry ``j`` combines the entries *before* it (``0 .. j - 1``), so
  the first one is the identity (0 for a sum, 1 for a product);
- ``reverse``: the total runs from the end of the axis (entry ``j`` combines ``j
  .. n - 1``, or ``j + 1 .. n - 1`` when exclusive as well).

They compute in the input's element type, one element after the other along the
axis, as NumPy's ``cumsum``/``cumprod`` do: a float sum rounds after every addend
(no reassociation, so the result is bitwise NumPy's), an integer one wraps around
on overflow. The element type is f32, f64 or any integer type (signed or
unsigned); f16 goes through ``tg.cast`` to f32 and back. The result is row-major,
of the input's shape and element type.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, UnitAttr, f16
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


class CumulativeOp(TgOp):
    """``%r = tg.<op> %x axis = a [exclusive] [reverse]``: the operand, properties,
    syntax and verifier both running totals share; ``IDENTITY`` is the value an
    exclusive total starts from."""

    KERNEL_KIND: ClassVar[str] = "other"
    IDENTITY: ClassVar[int] = 0

    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    exclusive = opt_prop_def(UnitAttr)
    reverse = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `axis` `=` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)? "
        "attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        axis: int,
        exclusive: bool = False,
        reverse: bool = False,
    ) -> None:
        t = tensor(input)
        a = self.checked_axis(t, axis)
        props: dict[str, Attribute] = {"axis": IntegerAttr(a, 64)}
        if exclusive:
            props["exclusive"] = UnitAttr()
        if reverse:
            props["reverse"] = UnitAttr()
        super().__init__(
            operands=[input], result_types=[self.infer(t)], properties=props
        )

    @classmethod
    def checked_axis(cls, input: TensorType[Attribute], axis: int) -> int:
        """``axis`` made non-negative, or an error naming the op."""
        return axis_of(cls.name, input, axis)

    @classmethod
    def infer(cls, input: TensorType[Attribute]) -> Attribute:
        """The row-major result type: the input's shape and element type."""
        return tensor_type(shape_of(input), input.get_element_type())

    def normalized_axis(self) -> int:
        return self.checked_axis(tensor(self.input), self.axis.value.data)

    def is_exclusive(self) -> bool:
        return self.exclusive is not None

    def is_reverse(self) -> bool:
        return self.reverse is not None

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_kinds(NUMERIC)
        t = tensor(self.input)
        if t.get_element_type() == f16:
            raise VerifyException(
                f"{self.name} expects f32, f64 or integer tensors, but operand #0 is "
                f"{t} (f16 goes through tg.cast to f32 and back)"
            )
        self.normalized_axis()
        self.expect_result_type(self.infer(t))


@irdl_op_definition
class CumsumOp(CumulativeOp):
    """Running sum along ``axis`` (``np.cumsum``); ``exclusive`` starts from 0 and
    leaves each entry out of its own total, ``reverse`` runs from the end.

    ```mlir
    %r = tg.cumsum %x axis = 1 exclusive : tensor<2x5xi64> -> tensor<2x5xi64>
    ```
    """

    name = "tg.cumsum"
    IDENTITY: ClassVar[int] = 0


@irdl_op_definition
class CumprodOp(CumulativeOp):
    """Running product along ``axis`` (``np.cumprod``); ``exclusive`` starts from 1
    and leaves each entry out of its own product, ``reverse`` runs from the end.

    ```mlir
    %r = tg.cumprod %x axis = 0 reverse : tensor<4x3xf32> -> tensor<4x3xf32>
    ```
    """

    name = "tg.cumprod"
    IDENTITY: ClassVar[int] = 1
