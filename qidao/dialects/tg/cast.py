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

The storage-only types (bf16, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN,
i4, ui4, i2, ui2: ``types.STORAGE_ONLY``) convert as ``ml_dtypes``' ``astype``, bit
for bit:

- to bf16, a float8 or f4E2M1FN: rounded to nearest even once (from f64 too), with
  subnormals. A value beyond the largest finite one is an infinity where the
  format has one (bf16, f8E5M2), else NaN (f8E4M3FN, the FNUZ formats), and the
  largest finite value in f4E2M1FN, which has neither. NaN is the format's quiet
  NaN with the sign kept (one NaN, ``0x80``, in the FNUZ formats; f4E2M1FN
  gives a zero of the opposite sign, as ``ml_dtypes``); -0 is 0 in the FNUZ formats.
  ONNX's ``saturate`` (the largest finite value instead of an infinity or NaN)
  is a clamp before the cast (``Graph.cast(..., saturate=True)``);
- from them: exact (every value of theirs is an f32; to f16 too, except bf16,
  which rounds to nearest even once);
- to i4, ui4, i2, ui2 from an integer: the low bits (wraps around); from a float:
  truncated toward zero, and 0 when that is out of range (NaN and infinities too);
- from them: the value, sign-extended (i4, i2) or zero-extended.

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
    STORAGE: ClassVar[bool] = True

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
