"""Bitwise tg ops on integers and bools: ``and or xor not`` and the two shifts.

``tg.bitwise_and``, ``tg.bitwise_or``, ``tg.bitwise_xor`` and ``tg.bitwise_not`` act on
the bits of integers (signed or unsigned: the same bits) and of bools (where they are
the logical ops); the binary ones broadcast like every binary elementwise op.

``tg.shift_left`` and ``tg.shift_right`` take integers. The shift amount (``rhs``) is
read as an unsigned number, as NumPy's ``left_shift``/``right_shift`` read it, and
every amount has a defined result (LLVM's ``shl``/``lshr``/``ashr`` by the bit width
or more give poison; the lowering selects instead):

- ``shift_left``: ``x << s``, the bits shifted out lost; ``s >= width`` gives 0;
- ``shift_right`` on unsigned integers is logical (zeros shifted in); ``s >= width``
  gives 0;
- ``shift_right`` on signed integers is arithmetic (copies of the sign bit shifted
  in); ``s >= width`` gives -1 for a negative ``x`` and 0 otherwise.

A negative signed amount is a huge unsigned one, hence ``>= width``. These are also
ONNX's ``BitShift`` (unsigned types) and ONNX Runtime's results.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.irdl import irdl_op_definition

from qidao.dialects.tg.elementwise import BinaryElementwiseOp, UnaryElementwiseOp
from qidao.dialects.tg.types import INTEGER, INTEGER_OR_BOOL


@irdl_op_definition
class BitwiseAndOp(BinaryElementwiseOp):
    """Elementwise ``lhs & rhs`` on integers and bools, with broadcasting.

    ```mlir
    %r = tg.bitwise_and %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    ```
    """

    name = "tg.bitwise_and"
    OPERAND_KINDS: ClassVar[frozenset[str]] = INTEGER_OR_BOOL


@irdl_op_definition
class BitwiseOrOp(BinaryElementwiseOp):
    """Elementwise ``lhs | rhs`` on integers and bools, with broadcasting.

    ```mlir
    %r = tg.bitwise_or %x, %y : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
    ```
    """

    name = "tg.bitwise_or"
    OPERAND_KINDS: ClassVar[frozenset[str]] = INTEGER_OR_BOOL


@irdl_op_definition
class BitwiseXorOp(BinaryElementwiseOp):
    """Elementwise ``lhs ^ rhs`` on integers and bools, with broadcasting.

    ```mlir
    %r = tg.bitwise_xor %x, %y : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
    ```
    """

    name = "tg.bitwise_xor"
    OPERAND_KINDS: ClassVar[frozenset[str]] = INTEGER_OR_BOOL


@irdl_op_definition
class BitwiseNotOp(UnaryElementwiseOp):
    """Elementwise ``~x`` on integers and bools (on bools, ``not x``).

    ```mlir
    %r = tg.bitwise_not %x : tensor<4xi16> -> tensor<4xi16>
    ```
    """

    name = "tg.bitwise_not"
    OPERAND_KINDS: ClassVar[frozenset[str]] = INTEGER_OR_BOOL


@irdl_op_definition
class ShiftLeftOp(BinaryElementwiseOp):
    """Elementwise ``lhs << rhs`` on integers, with broadcasting; ``rhs`` is read
    unsigned and a shift by the bit width or more gives 0 (see the module
    docstring).

    ```mlir
    %r = tg.shift_left %x, %s : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    ```
    """

    name = "tg.shift_left"
    OPERAND_KINDS: ClassVar[frozenset[str]] = INTEGER


@irdl_op_definition
class ShiftRightOp(BinaryElementwiseOp):
    """Elementwise ``lhs >> rhs`` on integers, with broadcasting: logical on
    unsigned integers, arithmetic on signed ones; ``rhs`` is read unsigned, and a
    shift by the bit width or more gives 0 (-1 for a negative signed ``lhs``).

    ```mlir
    %r = tg.shift_right %x, %s : (tensor<4xui32>, tensor<ui32>) -> tensor<4xui32>
    ```
    """

    name = "tg.shift_right"
    OPERAND_KINDS: ClassVar[frozenset[str]] = INTEGER


BITWISE_OPS: tuple[type[BinaryElementwiseOp] | type[UnaryElementwiseOp], ...] = (
    BitwiseAndOp,
    BitwiseOrOp,
    BitwiseXorOp,
    BitwiseNotOp,
    ShiftLeftOp,
    ShiftRightOp,
)
"""Every bitwise op class."""
