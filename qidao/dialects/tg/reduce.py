"""Reductions over a set of axes: ``tg.reduce_sum``, ``tg.reduce_mean``, ``tg.reduce_max``,
``tg.reduce_prod``.

``axes`` lists distinct dimensions (negative counts from the end); ``keepdims`` keeps
each reduced dimension with size 1, as in NumPy's ``keepdims=True``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType, UnitAttr, f16
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

from qidao.dialects.tg.base import TgOp, i64_array, ints, normalize_axis, tensor
from qidao.dialects.tg.types import NUMERIC, fmt_shape, tensor_type


class ReduceOp(TgOp):
    KERNEL_KIND: ClassVar[str] = "rows"
    FUSION: ClassVar[str] = "reduction"

    input = operand_def(TensorType)
    axes = prop_def(DenseArrayBase.constr(I64))
    keepdims = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `axes` `=` $axes (`keepdims` $keepdims^)? attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(
        self, input: SSAValue, axes: Sequence[int], keepdims: bool = False
    ) -> None:
        t = self.infer(tensor(input), tuple(axes), keepdims)
        props: dict[str, Attribute] = {"axes": i64_array(axes)}
        if keepdims:
            props["keepdims"] = UnitAttr()
        super().__init__(operands=[input], result_types=[t], properties=props)

    def reduced_axes(self) -> tuple[int, ...]:
        """The reduced dimensions, non-negative and sorted."""
        rank = len(tensor(self.input).get_shape())
        return tuple(
            sorted(normalize_axis(a, rank, self.name) for a in ints(self.axes))
        )

    @classmethod
    def infer(
        cls, input: TensorType[Attribute], axes: tuple[int, ...], keepdims: bool
    ) -> Attribute:
        shape = input.get_shape()
        norm = [normalize_axis(a, len(shape), cls.name) for a in axes]
        if len(set(norm)) != len(norm) or not norm:
            raise VerifyException(
                f"{cls.name}: axes {fmt_shape(axes)} must be a non-empty list of "
                f"distinct dimensions of {input}"
            )
        if keepdims:
            out = [1 if k in norm else d for k, d in enumerate(shape)]
        else:
            out = [d for k, d in enumerate(shape) if k not in norm]
        return tensor_type(out, input.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_result_type(
            self.infer(tensor(self.input), ints(self.axes), self.keepdims is not None)
        )


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over ``axes``.

    ```mlir
    %s = tg.reduce_sum %x axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Arithmetic mean over ``axes``.

    ```mlir
    %m = tg.reduce_mean %x axes = [2, 3] keepdims : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
    ```
    """

    name = "tg.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over ``axes`` (NaN propagates).

    ```mlir
    %m = tg.reduce_max %x axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
    ```
    """

    name = "tg.reduce_max"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over ``axes`` (the empty product is 1), on f32, f64 and integers
    (which wrap around on overflow, as NumPy's ``prod`` in the input's dtype).
    It multiplies in the order of the reduced loops and makes a kernel of its own
    (it joins no row group: ``FUSION`` is ``boundary``).

    ```mlir
    %p = tg.reduce_prod %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "tg.reduce_prod"
    FUSION: ClassVar[str] = "boundary"

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_kinds(NUMERIC)
        if tensor(self.input).get_element_type() == f16:
            raise VerifyException(
                f"{self.name} expects f32, f64 or integer tensors, but operand #0 is "
                f"{self.input.type} (f16 goes through tg.cast to f32 and back)"
            )
        self.expect_result_type(
            self.infer(tensor(self.input), ints(self.axes), self.keepdims is not None)
        )
