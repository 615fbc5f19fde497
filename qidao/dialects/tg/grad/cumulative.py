"""vjp rule of ``tg.cumsum`` (``scan.py``): entry ``i`` of the input adds to every
total that includes it, so its gradient is the sum of ``g`` over those totals: a
running sum of ``g`` in the other direction (``reverse`` flipped), ``exclusive``
as it is (an exclusive total leaves entry ``i`` out of total ``i``, so the
gradient of ``i`` leaves ``g[i]`` out as well).

``tg.cumprod`` has no rule: PyTorch's gradient of a running product with zeros
in it (``cumprod_backward``) is not a running product of ``g``.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.cumulative import CumsumOp
from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import Grads, vjp


@vjp(CumsumOp)
def _cumsum(e: Emit, op: CumsumOp, g: SSAValue) -> Grads:
    axis, exclusive = op.normalized_axis(), op.is_exclusive()
    return [e.op(CumsumOp(g, axis, exclusive, not op.is_reverse()))]
