"""``fuse``: elementwise producer→consumer chains become one ``tg.fused`` kernel.

    mul(x, w) -> add(_, b) -> relu(_)   ==>   tg.fused { mul; add; relu }

Rules (each one keeps fusion from doing more work than the unfused graph):
- Only elementwise ops fuse (``tg.add`` ... ``tg.relu``); everything else is a
  fusion boundary.
- A producer joins its consumer's group only when the consumer is its *only* user, so
  no intermediate is both kept in memory and recomputed.
- A producer joins only when its shape equals the consumer's result shape: fusing
  ``exp(a[4])`` into ``_ + b[1000, 4]`` would evaluate ``exp`` 1000 times per
  element, so a broadcast intermediate stays its own kernel.
- A group of one op stays as it is.

Before:
```mlir
%0 = tg.mul %x, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
%1 = tg.add %0, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
%2 = tg.relu %1 : tensor<8xf32> -> tensor<8xf32>
```
After:
```mlir
%2 = tg.fused %x, %w, %b : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
^bb0(%x_1: tensor<8xf32>, %w_1: tensor<8xf32>, %b_1: tensor<8xf32>):
  %0 = tg.mul %x_1, %w_1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = tg.add %0, %b_1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = tg.relu %1 : tensor<8xf32> -> tensor<8xf32>
  tg.yield %2 : tensor<8xf32>
}
```
Issue 3 widens the rules (matmul/conv epilogues, row-wise reductions).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.tg import BinaryElementwiseOp, FusedOp, UnaryElementwiseOp, YieldOp
from qidao.dialects.tg.types import shape_of

Elementwise = (BinaryElementwiseOp, UnaryElementwiseOp)


def _is_elementwise(op: Operation | None) -> bool:
    return isinstance(op, Elementwise) and not isinstance(op.parent_op(), FusedOp)


def _fuses_into(operand: SSAValue, consumer: Operation) -> bool:
    """True when ``operand``'s producer may join ``consumer``'s group (see the rules)."""
    producer = operand.owner
    return (
        isinstance(producer, Operation)
        and producer.parent is consumer.parent
        and _is_elementwise(producer)
        and operand.has_one_use()
        and shape_of(operand.type) == shape_of(consumer.results[0].type)
    )


def _groups(block: Block) -> list[list[Operation]]:
    """Fusion groups of two or more ops, in block order; the last op is the root."""
    group_of: dict[Operation, list[Operation]] = {}
    for op in block.ops:
        if not _is_elementwise(op):
            continue
        group: list[Operation] = []
        for operand in op.operands:
            if _fuses_into(operand, op):
                producer = operand.owner
                assert isinstance(producer, Operation)
                group += group_of[producer]
        group.append(op)
        for member in group:
            group_of[member] = group
    unique = {id(g): g for g in group_of.values()}
    return [
        sorted(g, key=block.get_operation_index) for g in unique.values() if len(g) > 1
    ]


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Group elementwise producer→consumer chains into ``tg.fused`` kernels."""

    name = "fuse"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        blocks = [
            block
            for inner in op.walk()
            if not isinstance(inner, FusedOp)
            for region in inner.regions
            for block in region.blocks
        ]
        for block in blocks:
            for group in _groups(block):
                _outline(group)


def _outline(group: list[Operation]) -> None:
    members = set(group)
    inputs: list[SSAValue] = []
    for member in group:
        for operand in member.operands:
            if operand.owner not in members and operand not in inputs:
                inputs.append(operand)
    root = group[-1]
    body = FusedOp.empty_body(inputs)
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.block.args, strict=True))
    for arg, value in zip(body.block.args, inputs, strict=True):
        arg.name_hint = value.name_hint
    for member in group:
        body.block.add_op(member.clone(mapping))
    body.block.add_op(YieldOp(mapping[root.results[0]]))
    fused = FusedOp(inputs, [root.results[0].type], body)
    fused.results[0].name_hint = root.results[0].name_hint
    block = root.parent_block()
    assert block is not None
    block.insert_op_before(fused, root)
    root.results[0].replace_all_uses_with(fused.results[0])
    for member in reversed(group):
        member.detach()
        member.erase()
