"""``tg.pad``: a tensor grown by a constant border, ``low`` before and ``high`` after
each dimension.

The result is row-major and holds the input at offset ``low`` and ``value``
everywhere else, NumPy's ``np.pad(x, list(zip(low, high)), constant_values=value)``.
The ``materialize-padding`` pass uses it to take the padding out of a convolution
(``conv2d(x, padding=p) -> conv2d(pad(x, p), padding=0)``), so the convolution's
loops have no bounds tests left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    TensorType,
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

from qidao.dialects.tg.base import TgOp, i64_array, ints, tensor
from qidao.dialects.tg.types import dtype_name, fmt_shape, kind_of, tensor_type


@irdl_op_definition
class PadOp(TgOp):
    """Constant padding: ``low[d]`` elements before and ``high[d]`` after dimension
    ``d``, all equal to ``value`` (a finite float, rounded once to the element
    type; infinities and NaN would not print as text that parses back). An
    integer tensor (an int8 convolution's uint8 input, padded with its zero
    point) pads with an integer value of its type.

    ```mlir
    %p = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 2, 0] value = 0.000000e+00 : tensor<1x6x6x8xf32> -> tensor<1x8x9x8xf32>
    ```
    """

    name = "tg.pad"
    input = operand_def(TensorType)
    low = prop_def(DenseArrayBase.constr(I64))
    high = prop_def(DenseArrayBase.constr(I64))
    value = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `low` `=` $low `high` `=` $high `value` `=` $value attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        value: float = 0.0,
    ) -> None:
        t = self.infer(tensor(input), tuple(low), tuple(high))
        super().__init__(
            operands=[input],
            result_types=[t],
            properties={
                "low": i64_array(low),
                "high": i64_array(high),
                "value": FloatAttr(value, Float64Type()),
            },
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute], low: tuple[int, ...], high: tuple[int, ...]
    ) -> Attribute:
        """The row-major result type, or an error naming what does not fit."""
        shape = input.get_shape()
        for what, amounts in (("low", low), ("high", high)):
            if len(amounts) != len(shape):
                raise VerifyException(
                    f"tg.pad: {what} must have one amount per dimension of the input "
                    f"{input} ({len(shape)}), got {fmt_shape(amounts)}"
                )
            if any(a < 0 for a in amounts):
                raise VerifyException(
                    f"tg.pad: {what} amounts must be >= 0, got {fmt_shape(amounts)}"
                )
        padded = [d + lo + hi for d, lo, hi in zip(shape, low, high, strict=True)]
        return tensor_type(padded, input.get_element_type())

    def amounts(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(low, high)``: the padding before and after each dimension."""
        return ints(self.low), ints(self.high)

    def pad_value(self) -> float:
        return float(self.value.value.data)

    def verify_(self) -> None:
        self.verify_tensors()
        element = tensor(self.input).get_element_type()
        if kind_of(element) != "int":
            self.expect_float()
        if not math.isfinite(self.pad_value()):
            raise VerifyException(
                f"tg.pad: value must be a finite float, got {self.pad_value()}"
            )
        if kind_of(element) == "int":
            info = np.iinfo(dtype_name(element))
            value = self.pad_value()
            if value != int(value) or not info.min <= value <= info.max:
                raise VerifyException(
                    f"tg.pad: value {value} is not an integer of {element} (from "
                    f"{info.min} to {info.max})"
                )
        low, high = self.amounts()
        self.expect_result_type(self.infer(tensor(self.input), low, high))
