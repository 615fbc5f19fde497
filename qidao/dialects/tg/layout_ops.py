"""Layout ops: new shapes and strides over the same storage, copying only when told.

``transpose``, ``view`` and ``broadcast`` never copy: the result type carries the new
strides (``tensor<3x2xf32, strided<[1, 3]>>``). ``view`` of a layout it cannot
describe is a compile-time error, as in PyTorch. ``reshape`` is a view when one exists
and a copy otherwise; ``contiguous`` copies only a layout that is not row-major.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, i64_array, ints, tensor
from qidao.dialects.tg.layout import (
    broadcast_shapes,
    broadcast_strides,
    num_elements,
    view_strides,
)
from qidao.dialects.tg.types import (
    fmt_shape,
    offset_of,
    shape_of,
    strides_of,
    tensor_type,
)


class ShapeOp(TgOp):
    """``%r = tg.<op> %x : A -> B``: the new shape is the result type's shape."""

    STORAGE: ClassVar[bool] = True

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, shape: Sequence[int]) -> None:
        t = self.infer(tensor(input), tuple(shape))
        super().__init__(operands=[input], result_types=[t])

    @classmethod
    def infer(cls, input: TensorType[Attribute], shape: tuple[int, ...]) -> Attribute:
        raise NotImplementedError

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(
            self.infer(tensor(self.input), shape_of(self.result.type))
        )


def _check_numel(op: str, input: TensorType[Attribute], shape: tuple[int, ...]) -> None:
    if num_elements(input.get_shape()) != num_elements(shape):
        raise VerifyException(
            f"{op}: shape '{fmt_shape(shape)}' is invalid for input of size "
            f"{num_elements(input.get_shape())} (input {input})"
        )


@irdl_op_definition
class TransposeOp(TgOp):
    """Permute dimensions; the result is a strided view, no data moves.

    Result dimension ``k`` is input dimension ``perm[k]``.

    ```mlir
    %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
    ```
    """

    FREE: ClassVar[bool] = True
    STORAGE: ClassVar[bool] = True

    name = "tg.transpose"
    input = operand_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(I64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `perm` `=` $perm attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, perm: Sequence[int]) -> None:
        t = self.infer(tensor(input), tuple(perm))
        super().__init__(
            operands=[input], result_types=[t], properties={"perm": i64_array(perm)}
        )

    @staticmethod
    def infer(input: TensorType[Attribute], perm: tuple[int, ...]) -> Attribute:
        rank = len(input.get_shape())
        if sorted(perm) != list(range(rank)):
            raise VerifyException(
                f"tg.transpose: perm {fmt_shape(perm)} is not a permutation of the "
                f"{rank} dimensions of {input}"
            )
        shape, strides = shape_of(input), strides_of(input)
        return tensor_type(
            [shape[p] for p in perm],
            input.get_element_type(),
            [strides[p] for p in perm],
            offset_of(input),
        )

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(self.infer(tensor(self.input), ints(self.perm)))


@irdl_op_definition
class ViewOp(ShapeOp):
    """Reinterpret the storage with a new shape; never copies.

    Fails to verify when the input's strides cannot describe the new shape (for
    example a transposed tensor flattened): use ``tg.reshape`` there.

    ```mlir
    %v = tg.view %x : tensor<2x6xf32> -> tensor<3x4xf32>
    ```
    """

    FREE: ClassVar[bool] = True

    name = "tg.view"

    @classmethod
    def infer(cls, input: TensorType[Attribute], shape: tuple[int, ...]) -> Attribute:
        _check_numel("tg.view", input, shape)
        strides = view_strides(shape_of(input), strides_of(input), shape)
        if strides is None:
            raise VerifyException(
                "tg.view: view size is not compatible with input tensor's size and "
                "stride (at least one dimension spans across two contiguous "
                f"subspaces). Use tg.reshape instead. The input {input} has shape "
                f"{fmt_shape(shape_of(input))} and strides "
                f"{fmt_shape(strides_of(input))}; the view asks for shape "
                f"{fmt_shape(shape)}."
            )
        return tensor_type(shape, input.get_element_type(), strides, offset_of(input))


@irdl_op_definition
class ReshapeOp(ShapeOp):
    """New shape, same elements in row-major order: a view when the layout allows
    one, otherwise a row-major copy (the result type tells which).

    ```mlir
    %r = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
    ```
    """

    FREE: ClassVar[bool] = True  # counted free even where its layout makes it copy

    name = "tg.reshape"

    @classmethod
    def infer(cls, input: TensorType[Attribute], shape: tuple[int, ...]) -> Attribute:
        _check_numel("tg.reshape", input, shape)
        strides = view_strides(shape_of(input), strides_of(input), shape)
        if strides is None:
            return tensor_type(shape, input.get_element_type())
        return tensor_type(shape, input.get_element_type(), strides, offset_of(input))

    def is_copy(self) -> bool:
        """True when the lowering must copy (the layout has no such view)."""
        t = tensor(self.input)
        return (
            view_strides(shape_of(t), strides_of(t), shape_of(self.result.type)) is None
        )


@irdl_op_definition
class ContiguousOp(ShapeOp):
    """A row-major copy of a strided tensor (a no-op on a row-major one).

    ```mlir
    %c = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
    ```
    """

    name = "tg.contiguous"

    def __init__(self, input: SSAValue, shape: Sequence[int] | None = None) -> None:
        super().__init__(input, shape_of(input.type) if shape is None else shape)

    @classmethod
    def infer(cls, input: TensorType[Attribute], shape: tuple[int, ...]) -> Attribute:
        if shape != shape_of(input):
            raise VerifyException(
                f"tg.contiguous keeps the shape {fmt_shape(shape_of(input))}, "
                f"but the result shape is {fmt_shape(shape)}"
            )
        return tensor_type(shape, input.get_element_type())


@irdl_op_definition
class BroadcastOp(ShapeOp):
    """Broadcast to a larger shape under NumPy's rules; a stride-0 view, no copy.

    ```mlir
    %b = tg.broadcast %v : tensor<3xf32> -> tensor<4x3xf32, strided<[0, 1]>>
    ```
    """

    FREE: ClassVar[bool] = True

    name = "tg.broadcast"

    @classmethod
    def infer(cls, input: TensorType[Attribute], shape: tuple[int, ...]) -> Attribute:
        src = shape_of(input)
        if len(shape) < len(src) or broadcast_shapes(src, shape) != shape:
            raise VerifyException(
                f"tg.broadcast: shape {fmt_shape(src)} cannot be broadcast to "
                f"{fmt_shape(shape)} (NumPy rules: trailing dimensions must be equal "
                "or 1 in the input)"
            )
        strides = broadcast_strides(src, strides_of(input), shape)
        return tensor_type(shape, input.get_element_type(), strides, offset_of(input))
