"""The positions of the non-zero entries of a tensor: ``tg.nonzero_indices``.

ONNX's ``NonZero`` (``torch.nonzero``, ``torch.where(mask)``) gives the positions
of the entries of ``x`` that are not zero, as the columns of an int64 ``[rank,
count]`` tensor in row-major order: its size is data. tg has static shapes, so
the op gives the columns in a tensor of the *upper bound*, one column per entry
of ``x``: ``[rank, numel(x)]``, the first ``count`` columns the positions and the
rest 0. ``count`` is not part of the op: it is ``reduce_sum(cast(x != 0, i64))``
of the ops tg has (``Graph.nonzero``). How the program then goes on with a tensor
of ``count`` columns is ``qidao/frontend/onnx/staged.py``'s: the host cuts the
columns and compiles the rest of the model for that size.

```mlir
%p = tg.nonzero_indices %x : tensor<3x4xf32> -> tensor<2x12xi64>
```

A float entry is non-zero when it compares unequal to 0.0 (NaN is non-zero,
``-0.0`` is zero), as NumPy's ``nonzero``; a bool one when it is true.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import TensorType, f16, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, tensor
from qidao.dialects.tg.types import ANY_KIND, numel, shape_of, tensor_type


@irdl_op_definition
class NonzeroIndicesOp(TgOp):
    """The positions of the non-zero entries of ``x`` in row-major order, as the
    first columns of an i64 ``[rank, numel(x)]`` tensor; the other columns are 0
    (module text).

    ```mlir
    %p = tg.nonzero_indices %x : tensor<3x4xf32> -> tensor<2x12xi64>
    ```
    """

    name = "tg.nonzero_indices"
    KERNEL_KIND: ClassVar[str] = "other"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue) -> None:
        super().__init__(operands=[input], result_types=[self.infer(tensor(input))])

    @classmethod
    def infer(cls, input: TensorType[Attribute]) -> Attribute:
        """The row-major i64 ``[rank, numel]`` result type, or an error naming the
        input it cannot take (a scalar has no position to give)."""
        shape = shape_of(input)
        if not shape:
            raise VerifyException(
                f"{cls.name} expects an input of rank >= 1, got {input} (a scalar's "
                "non-zero positions have no axis to list)"
            )
        return tensor_type((len(shape), numel(input)), i64)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_kinds(ANY_KIND)
        t = tensor(self.input)
        if t.get_element_type() == f16:
            raise VerifyException(
                f"{self.name} expects f32, f64, integer or bool tensors, but operand "
                f"#0 is {t} (f16 goes through tg.cast to f32)"
            )
        self.expect_result_type(self.infer(t))
