"""``tg.take`` and ``tg.gather_elements`` kernels: gathers by a runtime index tensor.

One perfect nest over the output (loops ``i0, i1, ...``, as for an elementwise
kernel). Its body loads the index with an affine read of the indices, makes it an
``index``, wraps a negative one once and clamps it into the axis (the defined
out-of-range behaviour of ``dynamic_indexing.py``: the kernel never reads outside
the input), and reads the data with a ``memref.load``, the one access that is not
affine: its position along the axis is a loaded value. ``tg.take`` of ``x[10, 4]``
by ``ids[2, 3]`` (axis 0)::

    for i0 < 2, i1 < 3, i2 < 4:
      %raw     = affine.load %ids[%i0, %i1]          : i64
      %idx     = arith.index_cast %raw                : i64 to index
      %neg     = arith.cmpi slt, %idx, %c0
      %up      = arith.addi %idx, %c10
      %wrapped = arith.select %neg, %up, %idx         // wrapped once
      %lo      = arith.maxsi %wrapped, %c0
      %entry   = arith.minsi %lo, %c9                 // clamped into [0, 9]
      %v       = memref.load %x[%entry, %i2]
      affine.store %v, %out[%i0, %i1, %i2]

The index of ``tg.take`` depends only on the loops of the indices' dimensions, so
it is the same for every iteration of the inner ``i2`` (an embedding row): LLVM
hoists it out of that loop (the arguments are ``noalias``) and the row copy is a
plain vectorizable loop. ``tg.gather_elements`` reads ``ids[i0, i1, ...]`` at the
output's own position and ``x`` at the output's position with the axis replaced.

Both kernels are fusion boundaries (``fuse`` groups elementwise ops, and these are
not) and never write in place (``plan-memory`` only does that for elementwise
kernels): the output is a fresh buffer.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    dim,
    loop_names,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool


def _index_constant(k: Kernel, value: int) -> SSAValue:
    """``arith.constant value : index``, emitted where the emitter stands (before
    the nest opens, so at the top of the kernel)."""
    return k.em.value(arith.ConstantOp(IntegerAttr(value, IndexType())))


def _gather_nest(
    k: Kernel,
    data: SSAValue,
    indices: SSAValue,
    out_shape: Sequence[int],
    index_of: Sequence[AffineExpr],
    data_dims: Sequence[int | None],
    size: int,
) -> None:
    """``out[ivs] = data[...]`` over the output: ``index_of`` is where the indices
    are read (affine in the output's ivs); ``data_dims`` says, per data dimension,
    which output iv indexes it, None for the gathered axis (the loaded index,
    wrapped and clamped into ``[0, size)``)."""
    (out,) = k.outputs
    zero = _index_constant(k, 0)
    count = _index_constant(k, size)
    last = _index_constant(k, size - 1)
    rank = len(out_shape)
    with k.em.nest(loop_names("i", rank), out_shape) as ivs:
        raw = k.em.load(indices, ivs, index_of)
        j = k.em.value(arith.IndexCastOp(raw, IndexType()))
        negative = k.em.value(arith.CmpiOp(j, zero, "slt"))
        up = k.em.value(arith.AddiOp(j, count))
        wrapped = k.em.value(arith.SelectOp(negative, up, j))
        above = k.em.value(arith.MaxSIOp(wrapped, zero))
        entry = k.em.value(arith.MinSIOp(above, last))
        for value, hint in (
            (raw, "raw"),
            (j, "idx"),
            (negative, "neg"),
            (up, "up"),
            (wrapped, "wrapped"),
            (above, "lo"),
            (entry, "entry"),
        ):
            value.name_hint = hint
        position = [entry if d is None else ivs[d] for d in data_dims]
        value = k.em.value(memref.LoadOp.get(data, position))
        k.em.store(value, out, ivs, [dim(d) for d in range(rank)])


def lower_take(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.TakeOp)
    data, indices = sources
    assert isinstance(data, SSAValue) and isinstance(indices, SSAValue)
    out_shape = shape(op.result)
    if 0 in out_shape:
        return  # nothing to read
    axis = op.normalized_axis()
    index_rank = len(shape(op.indices))
    data_rank = len(shape(op.input))
    # output dims: data[:axis], then the indices' dims, then data[axis + 1:]
    index_of = [dim(axis + d) for d in range(index_rank)]
    data_dims: list[int | None] = [
        d if d < axis else None if d == axis else d - 1 + index_rank
        for d in range(data_rank)
    ]
    size = shape(op.input)[axis]
    _gather_nest(k, data, indices, out_shape, index_of, data_dims, size)


def lower_gather_elements(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.GatherElementsOp)
    data, indices = sources
    assert isinstance(data, SSAValue) and isinstance(indices, SSAValue)
    out_shape = shape(op.result)
    if 0 in out_shape:
        return  # nothing to read
    axis = op.normalized_axis()
    rank = len(out_shape)
    index_of = [dim(d) for d in range(rank)]
    data_dims: list[int | None] = [None if d == axis else d for d in range(rank)]
    size = shape(op.input)[axis]
    _gather_nest(k, data, indices, out_shape, index_of, data_dims, size)
