"""``tg.cast``: a tensor converted element by element to another element type.

NumPy's ``astype`` semantics between every element type tg has (f16, f32, f64,
i8 .. i64, ui8 .. ui64 and i1, bool):

- float to float rounds to nearest even, once (f64 to f16 too: not through a
  second rounding in f32); widening is exact;
- integer to integer sign-extends (signed source), zero-extends (unsigned source)
  or keeps the low bits (wraps around); between i32 and ui32 the bits stay;
- integer or bool to float rounds to nearest even, reading unsigned integers as
  unsigned; bool gives 0 or 1;
- float to integer truncates toward zero. A NaN, an infinity or a value out of the
  integer's range has no defined result (as in C; NumPy's result depends on the
  platform, qidao's CPU code saturates and gives 0 for NaN: ``-1.0`` to ui8 is 0,
  where NumPy on x86 gives 255);
- anything to bool is ``x != 0`` (NaN is true, as in NumPy);
- bool to integer is 0 or 1.

A cast to the operand's own element type is allowed (a copy).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from qidao.dialects.tg.base import tensor
from qidao.dialects.tg.elementwise import ElementwiseOp
from qidao.dialects.tg.types import ANY_KIND, tensor_type


@irdl_op_definition
class CastOp(ElementwiseOp):
    """Convert every element to the result's element type (NumPy ``astype``; see
    the module docstring for the rules).

    ```mlir
    %r = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi64>
    ```
    """

    name = "tg.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    OPERAND_KINDS: ClassVar[frozenset[str]] = ANY_KIND

    def __init__(self, input: SSAValue, element_type: Attribute) -> None:
        super().__init__(
            operands=[input], result_types=[self.infer(tensor(input), element_type)]
        )

    @classmethod
    def infer(cls, input: TensorType[Attribute], element_type: Attribute) -> Attribute:
        return tensor_type(input.get_shape(), element_type)

    def target(self) -> Attribute:
        """The element type cast to."""
        return tensor(self.result, "tg.cast result").get_element_type()

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(self.infer(tensor(self.input), self.target()))
