"""``tg.constant``: a tensor known at compile time (weights, biases, folded values)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.types import dtype_name, element_type_of, tensor_type


@irdl_op_definition
class ConstantOp(TgOp):
    """A dense tensor constant; its type is the type of its value.

    ```mlir
    %w = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    ```
    """

    KERNEL_KIND: ClassVar[str] = "other"
    FREE: ClassVar[bool] = True
    STORAGE: ClassVar[bool] = True

    name = "tg.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def from_numpy(array: np.ndarray) -> ConstantOp:
        """A constant holding a copy of ``array`` (row-major)."""
        array = np.asarray(array)  # not ascontiguousarray: it turns 0-d into 1-d
        t = tensor_type(array.shape, element_type_of(array.dtype.name))
        data = BytesAttr(array.tobytes())
        return ConstantOp(DenseIntOrFPElementsAttr(t, data))  # type: ignore[arg-type]

    def to_numpy(self) -> np.ndarray:
        """The constant's value as a fresh NumPy array."""
        t = self.value.type
        dtype = np.dtype(dtype_name(t.get_element_type()))
        flat = np.frombuffer(self.value.data.data, dtype=dtype)
        if dtype == np.bool_:  # xDSL stores a parsed `true` as the byte 0xff
            flat = np.frombuffer(self.value.data.data, dtype=np.uint8) != 0
        shape = tuple(t.get_shape())
        if flat.size == 1 and int(np.prod(shape)) != 1:
            return np.full(shape, flat[0], dtype=dtype)
        return flat.reshape(shape).copy()

    def verify_(self) -> None:
        self.verify_tensors()
        if self.result.type != self.value.type:
            raise VerifyException(
                f"tg.constant: value has type {self.value.type} but the result is "
                f"{self.result.type}; they must be equal"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("tg.constant expects a dense<...> : tensor<...> value")
        op = cls(value)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)
