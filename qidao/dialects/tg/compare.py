"""Bool tensors in tg: comparisons, logical ops and ``tg.select``.

A comparison takes two tensors of one element type and gives an ``i1`` tensor (NumPy's
``bool``: one byte per element in memory, 0 or 1), broadcasting like every binary
elementwise op. On floats it is IEEE's *ordered* comparison, as NumPy's: any
comparison with NaN is false, except ``not_equal``, which is true. Integers compare
signed, unsigned integers (``ui8 .. ui64``) unsigned; ``equal``/``not_equal`` also
take bools.

The logical ops take and give ``i1`` tensors; ``tg.select`` picks, element by
element, from two tensors of one element type by an ``i1`` condition (NumPy's
``where``), all three operands broadcasting to one shape. These ops derive from the
elementwise bases (``elementwise.py``), so they fuse and lower with the arithmetic.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import tensor
from qidao.dialects.tg.elementwise import (
    BinaryElementwiseOp,
    ElementwiseOp,
    UnaryElementwiseOp,
    broadcast_result_shape,
)
from qidao.dialects.tg.types import ANY_KIND, BOOL, NUMERIC, tensor_type


class CompareOp(BinaryElementwiseOp):
    """``%r = tg.<cmp> %lhs, %rhs : (A, B) -> C``: C has the broadcast shape and
    element type ``i1``."""

    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC

    @classmethod
    def result_element_type(cls, operand: Attribute) -> Attribute:
        return i1


@irdl_op_definition
class LessOp(CompareOp):
    """Elementwise ``lhs < rhs`` (false when either is NaN).

    ```mlir
    %r = tg.less %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    ```
    """

    name = "tg.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    """Elementwise ``lhs <= rhs`` (false when either is NaN).

    ```mlir
    %r = tg.less_equal %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    ```
    """

    name = "tg.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    """Elementwise ``lhs > rhs`` (false when either is NaN).

    ```mlir
    %r = tg.greater %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
    ```
    """

    name = "tg.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """Elementwise ``lhs >= rhs`` (false when either is NaN).

    ```mlir
    %r = tg.greater_equal %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    ```
    """

    name = "tg.greater_equal"


@irdl_op_definition
class EqualOp(CompareOp):
    """Elementwise ``lhs == rhs`` (false when either is NaN; ``-0.0 == 0.0``), on
    floats, integers and bools.

    ```mlir
    %r = tg.equal %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    ```
    """

    name = "tg.equal"
    OPERAND_KINDS: ClassVar[frozenset[str]] = ANY_KIND


@irdl_op_definition
class NotEqualOp(CompareOp):
    """Elementwise ``lhs != rhs`` (true when either is NaN), on floats, integers and
    bools.

    ```mlir
    %r = tg.not_equal %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    ```
    """

    name = "tg.not_equal"
    OPERAND_KINDS: ClassVar[frozenset[str]] = ANY_KIND


@irdl_op_definition
class LogicalAndOp(BinaryElementwiseOp):
    """Elementwise ``lhs and rhs`` on bools.

    ```mlir
    %r = tg.logical_and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    ```
    """

    name = "tg.logical_and"
    OPERAND_KINDS: ClassVar[frozenset[str]] = BOOL


@irdl_op_definition
class LogicalOrOp(BinaryElementwiseOp):
    """Elementwise ``lhs or rhs`` on bools.

    ```mlir
    %r = tg.logical_or %a, %b : (tensor<2x4xi1>, tensor<4xi1>) -> tensor<2x4xi1>
    ```
    """

    name = "tg.logical_or"
    OPERAND_KINDS: ClassVar[frozenset[str]] = BOOL


@irdl_op_definition
class LogicalXorOp(BinaryElementwiseOp):
    """Elementwise ``lhs != rhs`` on bools.

    ```mlir
    %r = tg.logical_xor %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    ```
    """

    name = "tg.logical_xor"
    OPERAND_KINDS: ClassVar[frozenset[str]] = BOOL


@irdl_op_definition
class LogicalNotOp(UnaryElementwiseOp):
    """Elementwise ``not x`` on bools.

    ```mlir
    %r = tg.logical_not %a : tensor<4xi1> -> tensor<4xi1>
    ```
    """

    name = "tg.logical_not"
    OPERAND_KINDS: ClassVar[frozenset[str]] = BOOL


@irdl_op_definition
class SelectOp(ElementwiseOp):
    """``condition ? true_value : false_value`` element by element (NumPy's
    ``where``); the three operands broadcast to the result's shape, the two values
    have one element type, which is the result's.

    ```mlir
    %r = tg.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
    """

    name = "tg.select"
    condition = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$condition `,` $true_value `,` $false_value attr-dict `:` `(` "
        "type($condition) `,` type($true_value) `,` type($false_value) `)` "
        "`->` type($result)"
    )
    OPERAND_KINDS: ClassVar[frozenset[str]] = ANY_KIND

    def __init__(
        self, condition: SSAValue, true_value: SSAValue, false_value: SSAValue
    ) -> None:
        super().__init__(
            operands=[condition, true_value, false_value],
            result_types=[
                self.infer(tensor(condition), tensor(true_value), tensor(false_value))
            ],
        )

    @classmethod
    def infer(
        cls,
        condition: TensorType[Attribute],
        true_value: TensorType[Attribute],
        false_value: TensorType[Attribute],
    ) -> Attribute:
        shapes = [tuple(t.get_shape()) for t in (condition, true_value, false_value)]
        shape = broadcast_result_shape(cls.name, shapes)
        return tensor_type(shape, true_value.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        condition = tensor(self.condition)
        if condition.get_element_type() != i1:
            raise VerifyException(
                f"tg.select expects a bool (i1) condition, but operand #0 is "
                f"{condition}"
            )
        value_types = (tensor(self.true_value), tensor(self.false_value))
        if value_types[0].get_element_type() != value_types[1].get_element_type():
            raise VerifyException(
                f"tg.select expects true and false values of one element type, got "
                f"({value_types[0]}, {value_types[1]})"
            )
        self.expect_result_type(self.infer(condition, *value_types))
