"""vjp rule of ``tg.custom`` (``custom.py``): run the op's own ``grad`` region.

A ``tg.custom`` carries its vjp as tg ops (the ``grad`` region: block arguments
operands, results, result gradients; it yields one gradient per operand). The rule
copies those ops in front of the ``Emit`` anchor with the block arguments replaced
by the op's operands, its results and ``g``, and returns what the region yields.
``g`` is made row-major first (the autodiff pass may hand over a broadcast): the
region's ops were built, and their result types inferred, on a row-major one.
The copies go through ``Emit.op``, so the autodiff pass erases the ones whose
gradient nobody asked for.

Refused with a ``GradientError`` naming the op: a ``tg.custom`` without a vjp (an
empty ``grad`` region), and one with several results: a rule gets the gradient of
result 0 only (``rules.py``), so gradients flow through single-result custom ops.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qidao.dialects.tg.custom import CustomOp, CustomYieldOp
from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.grad.rules import GradientError, Grads, vjp


@vjp(CustomOp)
def _custom(e: Emit, op: CustomOp, g: SSAValue) -> Grads:
    name = op.op_name.data
    if not op.has_vjp():
        raise GradientError(
            f"custom op '{name}' has no vjp; register one (qidao.custom_op(..., "
            "vjp=...)) or leave the inputs it depends on out of wrt"
        )
    if len(op.results) != 1:
        raise GradientError(
            f"custom op '{name}' has {len(op.results)} results; gradients flow "
            "through single-result custom ops only"
        )
    block = op.grad.block
    g = e.contiguous(g)  # the region's ops were built on a row-major gradient
    if g.type != block.args[-1].type:
        raise GradientError(
            f"custom op '{name}': the gradient of its result is {g.type}, its vjp "
            f"takes {block.args[-1].type}"
        )
    mapping: dict[SSAValue, SSAValue] = dict(
        zip(block.args, [*op.operands, *op.results, g], strict=True)
    )
    for inner in block.ops:
        if isinstance(inner, CustomYieldOp):
            return [mapping.get(v, v) for v in inner.values]
        e.op(inner.clone(value_mapper=mapping))
    raise GradientError(f"custom op '{name}': its grad region has no tg.custom_yield")
