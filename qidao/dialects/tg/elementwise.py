"""Elementwise tg ops: one output element from the same-index elements of the inputs.

Binary ops broadcast their operands under NumPy's rules (trailing dimensions match or
are 1); the result is a fresh row-major tensor of the broadcast shape. Operands may be
strided views: the lowering reads them through their layout, never copying first.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, tensor
from qidao.dialects.tg.layout import broadcast_shapes
from qidao.dialects.tg.types import fmt_shape, tensor_type


class BinaryElementwiseOp(TgOp):
    """``%r = tg.<op> %lhs, %rhs : (A, B) -> C`` with NumPy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` "
        "`->` type($result)"
    )
    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(self, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(
            operands=[lhs, rhs], result_types=[self.infer(tensor(lhs), tensor(rhs))]
        )

    @classmethod
    def infer(cls, lhs: TensorType[Attribute], rhs: TensorType[Attribute]) -> Attribute:
        shape = broadcast_shapes(lhs.get_shape(), rhs.get_shape())
        if shape is None:
            raise VerifyException(
                f"{cls.name}: operand shapes {fmt_shape(lhs.get_shape())} and "
                f"{fmt_shape(rhs.get_shape())} are not broadcastable (NumPy rules: "
                "trailing dimensions must be equal or 1)"
            )
        return tensor_type(shape, lhs.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_same_element_type()
        if self.FLOAT_ONLY:
            self.expect_float()
        self.expect_result_type(self.infer(tensor(self.lhs), tensor(self.rhs)))


class UnaryElementwiseOp(TgOp):
    """``%r = tg.<op> %x : A -> B``; B is A's shape, row-major."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue) -> None:
        super().__init__(operands=[input], result_types=[self.infer(tensor(input))])

    @classmethod
    def infer(cls, input: TensorType[Attribute]) -> Attribute:
        return tensor_type(input.get_shape(), input.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_result_type(self.infer(tensor(self.input)))


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    """Elementwise sum with broadcasting.

    ```mlir
    %r = tg.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    ```
    """

    name = "tg.add"


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    """Elementwise difference ``lhs - rhs`` with broadcasting.

    ```mlir
    %r = tg.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.sub"


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    """Elementwise product with broadcasting.

    ```mlir
    %r = tg.mul %x, %s : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
    ```
    """

    name = "tg.mul"


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    """Elementwise quotient ``lhs / rhs`` (IEEE division) with broadcasting.

    ```mlir
    %r = tg.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.div"


@irdl_op_definition
class MaxOp(BinaryElementwiseOp):
    """Elementwise maximum (NaN propagates, like ``np.maximum``).

    ```mlir
    %r = tg.max %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.max"


@irdl_op_definition
class MinOp(BinaryElementwiseOp):
    """Elementwise minimum (NaN propagates, like ``np.minimum``).

    ```mlir
    %r = tg.min %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.min"


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    """Elementwise negation.

    ```mlir
    %r = tg.neg %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.neg"


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    """Elementwise ``e**x``.

    ```mlir
    %r = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.exp"


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    """Elementwise natural logarithm.

    ```mlir
    %r = tg.log %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.log"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    """Elementwise square root.

    ```mlir
    %r = tg.sqrt %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.sqrt"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    """Elementwise hyperbolic tangent.

    ```mlir
    %r = tg.tanh %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.tanh"


@irdl_op_definition
class ErfOp(UnaryElementwiseOp):
    """Elementwise error function ``erf(x) = 2/sqrt(pi) * integral_0^x e**(-t*t) dt``.

    Odd, with ``erf(+-inf) = +-1``, ``erf(-0) = -0``; exact GELU is
    ``0.5 * x * (1 + erf(x / sqrt(2)))``.

    ```mlir
    %r = tg.erf %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.erf"


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    """Elementwise logistic function ``1 / (1 + e**-x)``.

    ```mlir
    %r = tg.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.sigmoid"


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """Elementwise ``max(x, 0)``.

    ```mlir
    %r = tg.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "tg.relu"


BINARY_OPS: tuple[type[BinaryElementwiseOp], ...] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaxOp,
    MinOp,
)
UNARY_OPS: tuple[type[UnaryElementwiseOp], ...] = (
    NegOp,
    ExpOp,
    LogOp,
    SqrtOp,
    TanhOp,
    ErfOp,
    SigmoidOp,
    ReluOp,
)
