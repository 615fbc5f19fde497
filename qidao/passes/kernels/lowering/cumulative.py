"""``tg.cumsum`` and ``tg.cumprod`` kernels: a running total along one axis.

The total of entry ``j`` is the total of entry ``j - 1`` combined with one more
input entry, so the axis is walked in order, one step after the other; every other
dimension is independent (parallel). The accumulator is the output itself: step
``j`` reads the previous output entry and writes the next, so a total along any
axis needs no other buffer. The loops are the dimensions before the axis (outer),
then the axis, then the dimensions after it (inner): for an axis that is not the
last, each step is a whole row of independent, unit-stride additions (LLVM
vectorizes it), and for the last axis the step reads back the value stored the
iteration before, which LLVM's loop-load elimination keeps in a register.

The first entry is peeled off into a nest of its own (it is the input entry, or the
identity when ``exclusive``). ``tg.cumsum %x axis = 1`` of ``x[B, S, H]``::

    for i0 < B:
      for i2_first < H:   out[i0, 0, i2_first] = x[i0, 0, i2_first]   (exclusive: 0)
      for i1 < S - 1:
        for i2 < H:
          out[i0, i1 + 1, i2] = out[i0, i1, i2] + x[i0, i1 + 1, i2]
                                               (exclusive: + x[i0, i1, i2])

``reverse`` walks the axis from the end: the peeled entry is ``S - 1`` and step
``i1`` writes ``S - 2 - i1`` from ``S - 1 - i1``. Floats add (multiply) with plain
``arith.addf`` (``mulf``), in order and without fast-math flags, so the totals are
bitwise NumPy's; integers with ``addi`` (``muli``), wrapping around.
"""

from __future__ import annotations

from xdsl.dialects import affine, arith
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    const,
    dim,
    element_type,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.scalar import is_float


def _combine(k: Kernel, op: tg.CumulativeOp, a: SSAValue, b: SSAValue) -> SSAValue:
    """``a + b`` (``a * b`` for a product) in the element type."""
    floats = is_float(a.type)
    if isinstance(op, tg.CumsumOp):
        return k.em.value(arith.AddfOp(a, b) if floats else arith.AddiOp(a, b))
    return k.em.value(arith.MulfOp(a, b) if floats else arith.MuliOp(a, b))


def lower_cumulative(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.CumulativeOp)
    (x,) = sources
    assert isinstance(x, SSAValue), "a running total's input is never a folded splat"
    (out,) = k.outputs
    dims = shape(op.result)
    if 0 in dims:
        return  # nothing to compute
    em = k.em
    axis = op.normalized_axis()
    n = dims[axis]
    before, after = dims[:axis], dims[axis + 1 :]
    reverse = op.is_reverse()

    def index(ivs: list[SSAValue], at_axis: AffineExpr) -> list[AffineExpr]:
        """The index of the entry at ``at_axis`` of the row ``ivs`` walks: the
        dimensions before the axis are ivs ``0 ..``, those after it the last
        ones."""
        outer = [dim(d) for d in range(axis)]
        inner = [dim(len(ivs) - len(after) + d) for d in range(len(after))]
        return [*outer, at_axis, *inner]

    with em.nest([f"i{d}" for d in range(axis)], before) as outer:
        # the first entry of the walk
        first = const(n - 1 if reverse else 0)
        inner_names = [f"i{d}_first" for d in range(axis + 1, len(dims))]
        with em.nest(inner_names, after) as inner:
            ivs = [*outer, *inner]
            if op.is_exclusive():
                value = em.constant(op.IDENTITY, element_type(out))
            else:
                value = em.load(x, ivs, index(ivs, first))
            em.store(value, out, ivs, index(ivs, first))
        if n == 1:
            return  # no step: the nest closes on leaving
        # step s writes entry `current` from entry `previous`
        scan = em.for_loop(f"i{axis}", n - 1)
        s = dim(axis)
        previous = const(n - 1) - s if reverse else s
        current = const(n - 2) - s if reverse else s + 1
        added = previous if op.is_exclusive() else current
        with em.inside(scan.body.block):
            with em.nest([f"i{d}" for d in range(axis + 1, len(dims))], after) as rest:
                ivs = [*outer, scan.body.block.args[0], *rest]
                total = em.load(out, ivs, index(ivs, previous))
                entry = em.load(x, ivs, index(ivs, added))
                em.store(_combine(k, op, total, entry), out, ivs, index(ivs, current))
            em.add(affine.YieldOp.get())
