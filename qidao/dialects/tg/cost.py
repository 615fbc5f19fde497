"""What a tg op costs: its floating-point operations and the bytes of a value.

Each op declares its cost (``TgOp.FREE`` and ``TgOp.flops`` in ``base.py``); this
module reads it for any op:

- :func:`flops`: a ``tg.matmul`` is ``2·M·N·K`` per batch, a ``tg.conv2d``
  ``2·N·C_out·H_out·W_out·(C_in/groups)·kh·kw`` (plus one add per output for a
  bias), a ``tg.fused`` the sum of its body; free ops (views, constants,
  ``tg.yield``) cost nothing; every other op one operation per element of its
  largest operand or result (an elementwise op per output, a reduction per input
  element, a copy per element; an op of another dialect too).
- :func:`is_free`: the op computes nothing (``FREE``): a constant, or a view whose
  result is its input's memory read another way.
- :func:`value_bytes`: a tensor's elements times its element's bytes (``i1`` is a
  byte, as the buffers store it).

The checkpoint pass weighs recomputation with these, and ``compiled.stats`` reports
the share of a training step that recomputation costs.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from qidao.dialects.tg.base import TgOp, per_element_flops
from qidao.dialects.tg.types import element_of, numel

__all__ = ["flops", "is_free", "numel", "value_bytes"]


def value_bytes(value: SSAValue) -> int:
    """The bytes a buffer holding ``value`` takes (0 if it is not a tensor)."""
    t = value.type
    if not isinstance(t, TensorType):
        return 0
    bits = getattr(element_of(t), "bitwidth", 32)
    return numel(t) * max(1, (int(bits) + 7) // 8)


def flops(op: Operation) -> int:
    """The floating-point (or integer) operations of one run of ``op``: what a tg
    op declares (``TgOp.flops``), one per element for any other op."""
    return op.flops() if isinstance(op, TgOp) else per_element_flops(op)


def is_free(op: Operation) -> bool:
    """True when ``op`` computes nothing (a tg op that declares ``FREE``)."""
    return isinstance(op, TgOp) and op.FREE
