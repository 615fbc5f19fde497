"""Elementwise tg ops: one output element from the same-index elements of the inputs.

Binary ops broadcast their operands under NumPy's rules (trailing dimensions match or
are 1); the result is a fresh row-major tensor of the broadcast shape. Operands may be
strided views: the lowering reads them through their layout, never copying first.

Element types: each op class says which kinds of element it takes
(``OPERAND_KINDS``: float = f16/f32/f64, int = i8..i64 and ui8..ui64, bool = i1; see
``types.py``). The arithmetic ``add sub mul div max min neg abs relu`` takes floats
and integers; integers wrap around on overflow (two's complement, as NumPy's), and
``div`` on integers truncates toward zero (C, ONNX). Unsigned integers divide,
compare and take ``max``/``min`` unsigned; their ``neg`` wraps (``-x = 2^n - x``, as
NumPy's) and their ``abs`` and ``relu`` are the identity. ``exp log sqrt tanh erf
sin cos sigmoid pow`` take floats only. f16 computes in f32 and rounds each op's result
back to f16, as NumPy's float16 ufuncs do. The comparisons, logical ops, ``tg.select`` and ``tg.cast`` live in
``compare.py`` and ``cast.py``; all of them derive from :class:`ElementwiseOp`, which
is what the lowering looks for and which declares them ``elementwise`` to the
``fuse`` pass (``FUSION``).
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
from qidao.dialects.tg.types import FLOAT, NUMERIC, fmt_shape, tensor_type


class ElementwiseOp(TgOp):
    """Base of every elementwise tg op: ``out[i] = f(a[bcast(i)], ...)``, a fresh
    row-major result of the operands' broadcast shape."""

    FUSION: ClassVar[str] = "elementwise"
    OPERAND_KINDS: ClassVar[frozenset[str]] = FLOAT
    """The element kinds the (data) operands may have."""


def broadcast_result_shape(op: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes``, or a verifier error naming ``op``."""
    result: tuple[int, ...] | None = ()
    for s in shapes:
        result = None if result is None else broadcast_shapes(result, s)
    if result is None:
        texts = [fmt_shape(s) for s in shapes]
        listed = ", ".join(texts[:-1]) + " and " + texts[-1]
        raise VerifyException(
            f"{op}: operand shapes {listed} are not broadcastable (NumPy rules: "
            "trailing dimensions must be equal or 1)"
        )
    return tuple(result)


class BinaryElementwiseOp(ElementwiseOp):
    """``%r = tg.<op> %lhs, %rhs : (A, B) -> C`` with NumPy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` "
        "`->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(
            operands=[lhs, rhs], result_types=[self.infer(tensor(lhs), tensor(rhs))]
        )

    @classmethod
    def result_element_type(cls, operand: Attribute) -> Attribute:
        """The result's element type for operands of element type ``operand``."""
        return operand

    @classmethod
    def infer(cls, lhs: TensorType[Attribute], rhs: TensorType[Attribute]) -> Attribute:
        shape = broadcast_result_shape(
            cls.name, [tuple(lhs.get_shape()), tuple(rhs.get_shape())]
        )
        return tensor_type(shape, cls.result_element_type(lhs.get_element_type()))

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_same_element_type()
        self.expect_kinds(self.OPERAND_KINDS)
        self.expect_result_type(self.infer(tensor(self.lhs), tensor(self.rhs)))


class UnaryElementwiseOp(ElementwiseOp):
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
        self.expect_kinds(self.OPERAND_KINDS)
        self.expect_result_type(self.infer(tensor(self.input)))


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    """Elementwise sum with broadcasting.

    ```mlir
    %r = tg.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    ```
    """

    name = "tg.add"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    """Elementwise difference ``lhs - rhs`` with broadcasting.

    ```mlir
    %r = tg.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.sub"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    """Elementwise product with broadcasting.

    ```mlir
    %r = tg.mul %x, %s : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
    ```
    """

    name = "tg.mul"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    """Elementwise quotient ``lhs / rhs`` with broadcasting: IEEE division on floats;
    on integers the quotient truncated toward zero (C, ONNX: ``-7 / 2 = -3``), with
    two cases defined so that no input traps: ``x / 0 = 0`` (ONNX leaves it
    undefined) and ``MIN / -1 = MIN`` (wraps around, like ``-MIN``). Unsigned
    integers divide unsigned (``x / 0 = 0`` too).

    ```mlir
    %r = tg.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.div"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class MaxOp(BinaryElementwiseOp):
    """Elementwise maximum (NaN propagates, like ``np.maximum``).

    ```mlir
    %r = tg.max %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.max"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class MinOp(BinaryElementwiseOp):
    """Elementwise minimum (NaN propagates, like ``np.minimum``).

    ```mlir
    %r = tg.min %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "tg.min"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    """Elementwise ``lhs ** rhs`` with broadcasting, on floats: C's ``pow``, as
    NumPy's ``power`` on floats (a negative base with a non-integer exponent is NaN,
    ``x ** 0 = 1`` even for NaN, ``1 ** y = 1``).

    ```mlir
    %r = tg.pow %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
    """

    name = "tg.pow"


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    """Elementwise negation.

    ```mlir
    %r = tg.neg %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.neg"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    """Elementwise absolute value (``abs(-0.0) = 0.0``, NaN stays NaN; on integers
    ``abs(MIN) = MIN``, as NumPy's; on unsigned integers the value itself).

    ```mlir
    %r = tg.abs %x : tensor<4xi64> -> tensor<4xi64>
    ```
    """

    name = "tg.abs"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


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
class SinOp(UnaryElementwiseOp):
    """Elementwise sine of ``x`` in radians (``sin(-0) = -0``, ``sin(+-inf)`` is NaN).

    ```mlir
    %r = tg.sin %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.sin"


@irdl_op_definition
class CosOp(UnaryElementwiseOp):
    """Elementwise cosine of ``x`` in radians (``cos(+-inf)`` is NaN).

    ```mlir
    %r = tg.cos %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.cos"


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
    """Elementwise ``max(x, 0)`` (NaN stays NaN), on floats and integers.

    ```mlir
    %r = tg.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "tg.relu"
    OPERAND_KINDS: ClassVar[frozenset[str]] = NUMERIC


BINARY_OPS: tuple[type[BinaryElementwiseOp], ...] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaxOp,
    MinOp,
    PowOp,
)
UNARY_OPS: tuple[type[UnaryElementwiseOp], ...] = (
    NegOp,
    AbsOp,
    ExpOp,
    LogOp,
    SqrtOp,
    TanhOp,
    ErfOp,
    SinOp,
    CosOp,
    SigmoidOp,
    ReluOp,
)
