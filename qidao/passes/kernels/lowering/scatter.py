"""``tg.scatter_elements``, ``tg.scatter_nd`` and ``tg.gather_nd`` kernels.

A scatter kernel is two nests. The first copies the data into the output (loops
``i0, i1, ...``, the ``copy`` kernel's); the second walks the updates in row-major
order (loops ``u0, ...``, then ``s0, ...`` over the slice of ``scatter_nd``), loads
each index, wraps a negative one once, clamps it into the axis, and combines the
update with the entry it hits. Its position is a loaded value, so the entry is
read and written with ``memref.load``/``memref.store``. An index that is still out
of range after the wrap is skipped (``qidao/dialects/tg/scatter.py``) without a
branch: the kernel stores the entry's old value back at the clamped position, so
no access ever leaves the output. ``tg.scatter_elements`` of ``x[3, 4]`` by
``ids[3, 2]`` on axis 1 with ``reduction = "add"``::

    for i0 < 3, i1 < 4:
      out[i0, i1] = x[i0, i1]
    for u0 < 3, u1 < 2:
      %raw     = affine.load %ids[%u0, %u1]             : i64
      %idx     = arith.index_cast %raw                   : i64 to index
      %neg     = arith.cmpi slt, %idx, %c0
      %up      = arith.addi %idx, %c4
      %wrapped = arith.select %neg, %up, %idx            // wrapped once
      %lo      = arith.maxsi %wrapped, %c0
      %entry   = arith.minsi %lo, %c3                    // clamped into [0, 3]
      %ge0     = arith.cmpi sge, %wrapped, %c0
      %ltn     = arith.cmpi slt, %wrapped, %c4
      %valid   = arith.andi %ge0, %ltn                   // 0 <= wrapped < 4
      %u       = affine.load %upd[%u0, %u1]
      %old     = memref.load %out[%u0, %entry]
      %new     = arith.addf %old, %u
      %v       = arith.select %valid, %new, %old
      memref.store %v, %out[%u0, %entry]

The update loop carries a dependence through the output (two updates may hit one
entry), so the kernel is of kind ``other``: no default schedule parallelizes it.

``tg.gather_nd`` is one perfect nest over its output, as ``tg.take``'s: it loads
the k components of its tuple, wraps and clamps each into its axis, and reads the
data with a ``memref.load``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.base import tensor
from qidao.dialects.tg.types import is_float, is_unsigned
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    const,
    dim,
    loop_names,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.layout import copy_kernel


class _Axis:
    """The ``index`` constants of one axis of ``size`` entries (> 0), emitted where
    the emitter stands (before a nest opens: at the top of the kernel)."""

    def __init__(self, k: Kernel, size: int) -> None:
        self.zero = _index_constant(k, 0)
        self.size = _index_constant(k, size)
        self.last = _index_constant(k, size - 1)


def _index_constant(k: Kernel, value: int) -> SSAValue:
    return k.em.value(arith.ConstantOp(IntegerAttr(value, IndexType())))


def _named(value: SSAValue, hint: str) -> SSAValue:
    value.name_hint = hint
    return value


def _wrapped(k: Kernel, raw: SSAValue, axis: _Axis) -> SSAValue:
    """A loaded index as an ``index``, wrapped once if negative."""
    em = k.em
    j = _named(em.value(arith.IndexCastOp(raw, IndexType())), "idx")
    negative = _named(em.value(arith.CmpiOp(j, axis.zero, "slt")), "neg")
    up = _named(em.value(arith.AddiOp(j, axis.size)), "up")
    return _named(em.value(arith.SelectOp(negative, up, j)), "wrapped")


def _clamped(k: Kernel, wrapped: SSAValue, axis: _Axis) -> SSAValue:
    """A wrapped index clamped into ``[0, size - 1]``: always inside the axis."""
    low = _named(k.em.value(arith.MaxSIOp(wrapped, axis.zero)), "lo")
    return _named(k.em.value(arith.MinSIOp(low, axis.last)), "entry")


def _inside(k: Kernel, wrapped: SSAValue, axis: _Axis) -> SSAValue:
    """Whether a wrapped index is inside the axis (an ``i1``)."""
    above = _named(k.em.value(arith.CmpiOp(wrapped, axis.zero, "sge")), "ge0")
    below = _named(k.em.value(arith.CmpiOp(wrapped, axis.size, "slt")), "ltn")
    return _named(k.em.value(arith.AndIOp(above, below)), "valid")


def _entry(k: Kernel, raw: SSAValue, axis: _Axis) -> tuple[SSAValue, SSAValue]:
    """The entry a scatter's loaded index hits (clamped, so inside the axis) and
    whether the update applies (the wrapped index was inside the axis)."""
    wrapped = _wrapped(k, _named(raw, "raw"), axis)
    return _clamped(k, wrapped, axis), _inside(k, wrapped, axis)


def _combine(
    k: Kernel,
    reduction: str,
    old: SSAValue,
    new: SSAValue,
    floats: bool,
    unsigned: bool,
) -> SSAValue:
    """``new`` (``none``) or the entry ``old`` combined with it."""
    if reduction == "none":
        return new
    em = k.em
    if reduction == "add":
        op: Operation = arith.AddfOp(old, new) if floats else arith.AddiOp(old, new)
    elif reduction == "mul":
        op = arith.MulfOp(old, new) if floats else arith.MuliOp(old, new)
    elif reduction == "max":
        if floats:
            op = arith.MaximumfOp(old, new)
        else:
            op = arith.MaxUIOp(old, new) if unsigned else arith.MaxSIOp(old, new)
    else:
        assert reduction == "min", reduction
        if floats:
            op = arith.MinimumfOp(old, new)
        else:
            op = arith.MinUIOp(old, new) if unsigned else arith.MinSIOp(old, new)
    return em.value(op)


def _update(
    k: Kernel,
    op: tg.ScatterElementsOp | tg.ScatterNdOp,
    position: Sequence[SSAValue],
    update: SSAValue,
    valid: SSAValue,
) -> None:
    """``out[position] = valid ? combine(out[position], update) : out[position]``."""
    (out,) = k.outputs
    data_type = tensor(op.data)
    old = k.em.value(memref.LoadOp.get(out, position))
    old.name_hint = "old"
    floats = is_float(data_type)
    unsigned = is_unsigned(data_type.get_element_type())
    new = _combine(k, op.reduction_kind(), old, update, floats, unsigned)
    kept = k.em.value(arith.SelectOp(valid, new, old))
    k.em.add(memref.StoreOp.get(kept, out, position))


def _copy_data(k: Kernel, data: Source, data_shape: tuple[int, ...]) -> None:
    """The first nest: the output starts as a copy of the data."""
    copy_kernel(k, data, data_shape, data_shape)


def lower_scatter_elements(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.ScatterElementsOp)
    data, indices, updates = sources
    assert isinstance(indices, SSAValue) and isinstance(updates, SSAValue)
    data_shape = shape(op.data)
    if 0 in data_shape:
        return  # no entry to write (every index is out of range)
    a = op.normalized_axis()
    axis = _Axis(k, data_shape[a])
    _copy_data(k, data, data_shape)
    index_shape = shape(op.indices)
    if 0 in index_shape:
        return
    rank = len(index_shape)
    here = [dim(d) for d in range(rank)]
    with k.em.nest(loop_names("u", rank), index_shape) as ivs:
        raw = k.em.load(indices, ivs, here)
        entry, valid = _entry(k, raw, axis)
        update = k.em.load(updates, ivs, here)
        position = [entry if d == a else ivs[d] for d in range(rank)]
        _update(k, op, position, update, valid)


def lower_scatter_nd(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.ScatterNdOp)
    data, indices, updates = sources
    assert isinstance(indices, SSAValue) and isinstance(updates, SSAValue)
    data_shape = shape(op.data)
    if 0 in data_shape:
        return
    index_shape = shape(op.indices)
    count = index_shape[-1]
    batch = index_shape[:-1]
    piece = data_shape[count:]
    axes = [_Axis(k, data_shape[j]) for j in range(count)]
    _copy_data(k, data, data_shape)
    if 0 in shape(op.updates):
        return
    with k.em.nest(loop_names("u", len(batch)), batch) as outer:
        tuple_at = [dim(d) for d in range(len(batch))]
        entries: list[SSAValue] = []
        valid: SSAValue | None = None
        for j, axis in enumerate(axes):
            raw = k.em.load(indices, outer, [*tuple_at, const(j)])
            entry, ok = _entry(k, raw, axis)
            entries.append(entry)
            valid = ok if valid is None else k.em.value(arith.AndIOp(valid, ok))
        assert valid is not None
        with k.em.nest(loop_names("s", len(piece)), piece) as inner:
            ivs = [*outer, *inner]
            update = k.em.load(updates, ivs, [dim(d) for d in range(len(ivs))])
            _update(k, op, [*entries, *inner], update, valid)


def lower_gather_nd(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.GatherNdOp)
    data, indices = sources
    assert isinstance(data, SSAValue) and isinstance(indices, SSAValue)
    out_shape = shape(op.result)
    if 0 in out_shape:
        return  # nothing to read
    (out,) = k.outputs
    data_shape = shape(op.input)
    index_shape = shape(op.indices)
    b = op.batch_dims.value.data
    count = index_shape[-1]
    tuples = len(index_shape) - 1  # the output dims that pick a tuple
    axes = [_Axis(k, data_shape[b + j]) for j in range(count)]
    rank = len(out_shape)
    with k.em.nest(loop_names("i", rank), out_shape) as ivs:
        tuple_at = [dim(d) for d in range(tuples)]
        entries = []
        for j, axis in enumerate(axes):
            raw = _named(k.em.load(indices, ivs, [*tuple_at, const(j)]), "raw")
            entries.append(_clamped(k, _wrapped(k, raw, axis), axis))
        position = [*ivs[:b], *entries, *ivs[tuples:]]
        value = k.em.value(memref.LoadOp.get(data, position))
        k.em.store(value, out, ivs, [dim(d) for d in range(rank)])
