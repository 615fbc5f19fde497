"""What a tg op costs: its floating-point operations and the bytes of a value.

- :func:`flops`: a ``tg.matmul`` is ``2·M·N·K`` per batch, a ``tg.conv2d``
  ``2·N·C_out·H_out·W_out·(C_in/groups)·kh·kw`` (plus one add per output for a
  bias), a ``tg.fused`` the sum of its body; views, shapes and constants cost
  nothing; every other op one operation per element of its largest operand or
  result (an elementwise op per output, a reduction per input element).
- :func:`value_bytes`: a tensor's elements times its element's bytes (``i1`` is a
  byte, as the buffers store it).

The checkpoint pass weighs recomputation with these, and ``compiled.stats`` reports
the share of a training step that recomputation costs.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.fused import FusedOp, YieldOp
from qidao.dialects.tg.layout_ops import (
    BroadcastOp,
    ContiguousOp,
    ReshapeOp,
    TransposeOp,
    ViewOp,
)
from qidao.dialects.tg.linalg import Conv2dOp, MatmulOp
from qidao.dialects.tg.types import element_of, shape_of

FREE_OPS = (ConstantOp, TransposeOp, ViewOp, BroadcastOp, ReshapeOp, YieldOp)
"""Ops that compute nothing: constants, and shape ops whose result is the input's
memory read another way (a copying reshape or contiguous counts as a copy)."""


def numel(t: Attribute) -> int:
    """Elements of a tensor type (1 for a scalar, 0 for anything else)."""
    if not isinstance(t, TensorType):
        return 0
    return math.prod(shape_of(t))


def value_bytes(value: SSAValue) -> int:
    """The bytes a buffer holding ``value`` takes (0 if it is not a tensor)."""
    t = value.type
    if not isinstance(t, TensorType):
        return 0
    bits = getattr(element_of(t), "bitwidth", 32)
    return numel(t) * max(1, (int(bits) + 7) // 8)


def flops(op: Operation) -> int:
    """The floating-point (or integer) operations of one run of ``op``."""
    if isinstance(op, FusedOp):
        return sum(flops(inner) for inner in op.body.block.ops)
    if isinstance(op, FREE_OPS):
        return 0
    if isinstance(op, ContiguousOp):
        return numel(op.result.type)
    if isinstance(op, MatmulOp):
        k = shape_of(op.lhs.type)[-1]
        return 2 * numel(op.result.type) * k
    if isinstance(op, Conv2dOp):
        w = shape_of(op.weight.type)  # [C_out, C_in/groups, kh, kw]
        per_output = 2 * math.prod(w[1:])
        bias = 1 if op.bias is not None else 0
        return numel(op.result.type) * (per_output + bias)
    sizes = [numel(v.type) for v in (*op.operands, *op.results)]
    return max(sizes, default=0)
