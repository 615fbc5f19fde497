"""``tg.fused``: a fusion group, the unit that becomes one kernel.

The ``fuse`` pass moves a producer→consumer group into the body of a ``tg.fused``
op; the lowering emits the whole body as a single kernel, so intermediates live in
registers (or in cache, one row at a time) instead of memory. The body's block
arguments stand for the group's inputs and ``tg.yield`` names the group's results
(several when values inside the group are also used outside it).

A body is one of: elementwise ops (one nest over the output); one ``tg.matmul`` or
``tg.conv2d`` with an elementwise epilogue (and, for matmul, an lhs prologue); or
row-wise reductions with their elementwise neighbours (softmax, layer norm). The
``fuse`` pass documents the rules, ``qidao/passes/kernels/lowering/fused.py`` the kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.cost import flops


def _types(types: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in types)


@irdl_op_definition
class FusedOp(TgOp):
    """A fusion group: the body's ops run as one kernel.

    ```mlir
    %y = tg.fused %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
    ^bb0(%xa: tensor<8xf32>, %ba: tensor<8xf32>):
      %s = tg.add %xa, %ba : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      %r = tg.relu %s : tensor<8xf32> -> tensor<8xf32>
      tg.yield %r : tensor<8xf32>
    }
    ```
    """

    STORAGE: ClassVar[bool] = True

    name = "tg.fused"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove())
    assembly_format = (
        "$inputs attr-dict `:` `(` type($inputs) `)` `->` type($outputs) $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ) -> None:
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    @staticmethod
    def empty_body(inputs: Sequence[SSAValue]) -> Region:
        return Region(Block(arg_types=[i.type for i in inputs]))

    def verify_(self) -> None:
        self.verify_tensors()
        block = self.body.block
        arg_types = [a.type for a in block.args]
        in_types = [i.type for i in self.inputs]
        if arg_types != in_types:
            raise VerifyException(
                f"tg.fused: body arguments ({_types(arg_types)}) must match the "
                f"inputs ({_types(in_types)})"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("tg.fused: the body must end with tg.yield")
        yielded = [v.type for v in last.values]
        out = [r.type for r in self.results]
        if yielded != out:
            raise VerifyException(
                f"tg.fused: tg.yield returns ({_types(yielded)}) but the op's results "
                f"are ({_types(out)})"
            )

    def flops(self) -> int:
        """The sum of its body's."""
        return sum(flops(inner) for inner in self.body.block.ops)


@irdl_op_definition
class YieldOp(TgOp):
    """Ends a ``tg.fused`` body and names its results.

    ```mlir
    tg.yield %r : tensor<8xf32>
    ```
    """

    FREE: ClassVar[bool] = True
    STORAGE: ClassVar[bool] = True

    name = "tg.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(FusedOp), Pure())
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue) -> None:
        super().__init__(operands=[values])
