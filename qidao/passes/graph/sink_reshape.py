"""``sink-reshape``: an int8 product's reshape moves below the elementwise ops that
read it, so they meet the product in its own shape and ``fuse`` makes them its
epilogue.

    %p = tg.matmul_integer %a, %w : ... -> tensor<3136x64xi32>
    %r = tg.reshape %p : tensor<3136x64xi32> -> tensor<1x56x56x64xi32>
    %s = tg.add %r, %bias : (tensor<1x56x56x64xi32>, tensor<64xi32>) -> ...
    %y = tg.cast %s : tensor<1x56x56x64xi32> -> tensor<1x56x56x64xf64>
  ==>
    %p = tg.matmul_integer %a, %w : ... -> tensor<3136x64xi32>
    %s = tg.add %p, %bias : (tensor<3136x64xi32>, tensor<64xi32>) -> tensor<3136x64xi32>
    %c = tg.cast %s : tensor<3136x64xi32> -> tensor<3136x64xf64>
    %y = tg.reshape %c : tensor<3136x64xf64> -> tensor<1x56x56x64xf64>

An int8 convolution is a ``tg.matmul_integer`` over its im2col rows, reshaped to
NHWC (``frontend/onnx/conv_integer.py``), and its requantization (bias, scale, zero
point, rounding, the residual add of a block) is elementwise on the NHWC tensor.
Through the reshape ``fuse`` cannot make it the product's epilogue (an epilogue
has the anchor's shape), so the int32 sums went to memory and came back in a
kernel of their own. Elementwise ops compute the same values in any shape whose
row-major order is the same, so the reshape can follow them instead.

It fires on an elementwise tg op one of whose operands is ``tg.reshape`` of a row-major
tensor ``x`` computed from a ``tg.matmul_integer`` (the product itself, or
elementwise ops over it that this pass already moved), when the reshape keeps the
last dimension (``[M, N] -> [1, H, W, N]``: a per-channel operand of shape ``[N]``
still broadcasts along it), and every other operand is either

- of the op's result shape: it is read through ``tg.reshape`` to ``x``'s shape
  (that reshape's input when it is one from ``x``'s shape, else a new reshape, which
  must be a view: the operand is row-major), or
- a broadcast along the last dimension only (``[]``, ``[1]``, ``[N]``,
  ``[1, 1, 1, N]``): read as it is, or as ``[N]`` when its rank exceeds ``x``'s.

The op is rebuilt on ``x``'s shape and its users read a reshape of it. It does not
fire on a reshape that changes the last dimension, on a product of another kind
(float ``tg.matmul`` and ``tg.conv2d`` meet their epilogues without a reshape in
the models measured), on an operand that broadcasts along a leading dimension, or
on a strided operand. Runs before ``fuse`` where int8 products are packed for
VNNI (the pipeline's ``vnni``), whose kernels take such epilogues.

Before:
```mlir
%r = tg.reshape %p : tensor<6x4xi32> -> tensor<1x2x3x4xi32>
%s = tg.add %r, %b : (tensor<1x2x3x4xi32>, tensor<4xi32>) -> tensor<1x2x3x4xi32>
```
After:
```mlir
%s = tg.add %p, %b : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<6x4xi32>
%r = tg.reshape %s : tensor<6x4xi32> -> tensor<1x2x3x4xi32>
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from qidao.dialects import tg
from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.types import element_of, is_row_major, shape_of


def _from_integer_product(value: SSAValue) -> bool:
    """``value`` is a ``tg.matmul_integer`` result, or an elementwise op of its
    shape over one (an op this pass already moved below the reshape)."""
    owner: Operation | Block | None = value.owner
    while isinstance(owner, TgOp) and owner.FUSION == "elementwise":
        full = shape_of(owner.results[0].type)
        owner = next(
            (
                o.owner
                for o in owner.operands
                if shape_of(o.type) == full
                and isinstance(o.owner, TgOp)
                and (
                    o.owner.FUSION == "elementwise"
                    or isinstance(o.owner, tg.MatmulIntegerOp)
                )
            ),
            None,
        )
    return isinstance(owner, tg.MatmulIntegerOp)


def _sinkable(reshape: tg.ReshapeOp) -> bool:
    source = reshape.input
    before, after = shape_of(source.type), shape_of(reshape.result.type)
    return (
        len(before) >= 1
        and len(after) >= 1
        and before[-1] == after[-1]
        and is_row_major(source.type)
        and _from_integer_product(source)
    )


class SinkReshape(RewritePattern):
    """``f(reshape(x), y..) -> reshape(f(x, y'..))`` for an elementwise ``f``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, TgOp) or op.FUSION != "elementwise":
            return
        reshape = next(
            (
                o.owner
                for o in op.operands
                if isinstance(o.owner, tg.ReshapeOp) and _sinkable(o.owner)
            ),
            None,
        )
        if reshape is None:
            return
        inner = shape_of(reshape.input.type)
        full = shape_of(op.results[0].type)
        if shape_of(reshape.result.type) != full:
            return
        operands = _operands(op, inner, full, rewriter)
        if operands is None:
            return
        rebuilt = _rebuilt(op, operands, inner)
        back = tg.ReshapeOp(rebuilt.results[0], full)
        rewriter.replace(op, [rebuilt, back], [back.result])


class HoistReshape(RewritePattern):
    """``reshape(f(y..)) -> f(reshape(y)..)`` for an elementwise ``f`` used only by
    the reshape, when the reshape feeds an int8 product's epilogue: the residual
    of a block (dequantized in its own chain) joins the epilogue in its shape."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tg.ReshapeOp):
            return
        producer = op.input.owner
        if (
            not isinstance(producer, TgOp)
            or producer.FUSION != "elementwise"
            or not op.input.has_one_use()
        ):
            return
        full, inner = shape_of(op.input.type), shape_of(op.result.type)
        if not full or not inner or full[-1] != inner[-1]:
            return
        if _from_integer_product(op.input) or not all(
            _feeds_epilogue(use.operation) for use in op.result.uses
        ):
            return
        operands = _operands(producer, inner, full, rewriter)
        if operands is None:
            return
        rewriter.replace(op, _rebuilt(producer, operands, inner))
        rewriter.erase(producer)


def _rebuilt(
    op: Operation, operands: list[SSAValue], shape: tuple[int, ...]
) -> Operation:
    """``op`` (elementwise, one result) on ``operands``, its result of ``shape``;
    its properties and attributes (a comparison's predicate) kept."""
    result = op.results[0]
    rebuilt = type(op).create(
        operands=operands,
        result_types=[TensorType(element_of(result.type), shape)],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    rebuilt.results[0].name_hint = result.name_hint
    return rebuilt


def _feeds_epilogue(op: Operation) -> bool:
    """``op`` is elementwise and computed from an int8 product, or feeds such an
    op through elementwise ops."""
    if not isinstance(op, TgOp) or op.FUSION != "elementwise":
        return False
    result = op.results[0]
    return _from_integer_product(result) or any(
        _feeds_epilogue(use.operation) for use in result.uses
    )


def _operands(
    op: Operation,
    inner: tuple[int, ...],
    full: tuple[int, ...],
    rewriter: PatternRewriter,
) -> list[SSAValue] | None:
    """``op``'s operands as read by ``op`` rebuilt on ``inner`` (``_operand``), or
    None when one cannot be."""
    operands: list[SSAValue] = []
    for value in op.operands:
        moved = _operand(value, inner, full, rewriter, op)
        if moved is None:
            return None
        operands.append(moved)
    return operands


def _operand(
    value: SSAValue,
    inner: tuple[int, ...],
    full: tuple[int, ...],
    rewriter: PatternRewriter,
    op: Operation,
) -> SSAValue | None:
    """``value`` as an operand of ``op`` rebuilt on ``inner``, or None when it
    cannot be read there."""
    shape = shape_of(value.type)
    if shape == full:
        owner = value.owner
        if isinstance(owner, tg.ReshapeOp) and shape_of(owner.input.type) == inner:
            return owner.input
        if not is_row_major(value.type):
            return None
        view = tg.ReshapeOp(value, inner)
        rewriter.insert(view, InsertPoint.before(op))
        return view.result
    if any(d != 1 for d in shape[:-1]) or (shape and shape[-1] not in (1, full[-1])):
        return None
    if len(shape) <= len(inner):
        return value
    if not is_row_major(value.type):
        return None
    flat = tg.ReshapeOp(value, shape[-1:])
    rewriter.insert(flat, InsertPoint.before(op))
    return flat.result


@dataclass(frozen=True)
class SinkReshapePass(ModulePass):
    """Move the reshape of a ``tg.matmul_integer`` result below the elementwise ops
    that read it."""

    name = "sink-reshape"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SinkReshape(), HoistReshape()]),
            apply_recursively=True,
        ).rewrite_module(op)
