"""vjp rules of the indexing ops (``indexing.py``, ``pad.py``, ``dynamic_indexing.py``):
each gradient puts ``g`` back where the forward read it, zeros elsewhere, and sums
where the forward read one entry several times.

- ``slice``: ``g`` spread out by the steps (``Emit.dilate``, trailing zeros cut
  off) and padded to the input's shape;
- ``pad``: the middle of ``g`` (the pad value is an attribute: no gradient);
- ``concat``: one slice of ``g`` per input;
- ``gather`` (constant indices): a gather of ``g`` per repetition of an index,
  from ``g`` with a zero slot appended for the input entries nobody read;
- ``take`` and ``gather_elements`` (runtime indices): tg has no scatter, so the
  gradient is ``one_hot(indices)^T g``: a comparison of the (wrapped, clamped:
  the forward's rule) indices with ``arange(V)``, cast to the float type, then a
  matmul (``take``) or a product summed over the gathered axis
  (``gather_elements``). It costs O(#indices · V · the rest) multiply-adds and a
  one-hot of #indices · V elements: an embedding of a 30 000-word vocabulary
  makes a 30 000-column one-hot per token. Repeated indices accumulate. The
  indices have no gradient.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from qidao.dialects.tg.base import ints
from qidao.dialects.tg.dynamic_indexing import GatherElementsOp, TakeOp
from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import Grads, vjp
from qidao.dialects.tg.indexing import ConcatOp, GatherOp, SliceOp
from qidao.dialects.tg.layout import num_elements
from qidao.dialects.tg.pad import PadOp
from qidao.dialects.tg.types import element_of


@vjp(SliceOp)
def _slice(e: Emit, op: SliceOp, g: SSAValue) -> Grads:
    dims = shape(op.input)
    if num_elements(shape(op.result)) == 0:
        return [e.zeros_like(op.input)]
    start, _, step = op.bounds()
    rank = len(dims)
    spread = g
    for d in range(rank):  # entry k of dimension d back at start + k * step
        if step[d] == 1:
            continue
        perm = [*(k for k in range(rank) if k != d), d]
        dilated = e.dilate(e.transpose(spread, perm), [step[d]])
        back = [perm.index(k) for k in range(rank)]
        spread = e.transpose(dilated, back)
    got = shape(spread)
    high = [n - s - k for n, s, k in zip(dims, start, got, strict=True)]
    return [e.pad_or_crop(spread, list(start), high)]


@vjp(PadOp)
def _pad(e: Emit, op: PadOp, g: SSAValue) -> Grads:
    low, high = op.amounts()
    return [e.pad_or_crop(g, [-k for k in low], [-k for k in high])]


@vjp(ConcatOp)
def _concat(e: Emit, op: ConcatOp, g: SSAValue) -> Grads:
    axis = op.axis.value.data % len(shape(g))
    grads: list[SSAValue | None] = []
    offset = 0
    for value in op.inputs:
        dims = shape(value)
        start = [0] * len(dims)
        stop = list(shape(g))
        start[axis], stop[axis] = offset, offset + dims[axis]
        grads.append(e.slice(g, start, stop))
        offset += dims[axis]
    return grads


@vjp(GatherOp)
def _gather(e: Emit, op: GatherOp, g: SSAValue) -> Grads:
    axis = op.normalized_axis()
    size = shape(op.input)[axis]
    readers: list[list[int]] = [[] for _ in range(size)]
    for j, i in enumerate(ints(op.indices)):
        readers[i].append(j)
    dims = list(shape(g))
    zero_slot = dims[axis]  # the appended entry of g that is 0
    dims[axis] = 1
    padded = e.concat([g, e.full(dims, 0.0, g)], axis)
    total: SSAValue | None = None
    for k in range(max(len(r) for r in readers)):
        picked = e.gather(
            padded, axis, [r[k] if k < len(r) else zero_slot for r in readers]
        )
        total = picked if total is None else e.add(total, picked)
    assert total is not None, "a gather from an empty axis has no operand entries"
    return [total]


def _entries(e: Emit, indices: SSAValue, size: int) -> SSAValue:
    """``indices`` as the forward reads them: wrapped once if negative, then
    clamped into ``[0, size - 1]``."""
    wrapped = e.select(e.lt(indices, 0), e.add(indices, size), indices)
    low = e.select(e.lt(wrapped, 0), e.full((), 0, indices), wrapped)
    return e.select(e.gt(low, size - 1), e.full((), size - 1, indices), low)


def _one_hot(e: Emit, entries: SSAValue, size: int, like: SSAValue) -> SSAValue:
    """``entries[..., None] == arange(size)`` as ``like``'s float type."""
    column = e.reshape(entries, [*shape(entries), 1])
    arange = e.constant(np.arange(size), entries)
    return e.cast(e.eq(column, arange), element_of(like.type))


@vjp(TakeOp)
def _take(e: Emit, op: TakeOp, g: SSAValue) -> Grads:
    """``one_hot(indices)^T g``: N indices, V entries on the axis and D elements
    per entry cost N·V·D multiply-adds and an N×V one-hot (no scatter in tg)."""
    dims = shape(op.input)
    axis = op.normalized_axis()
    size = dims[axis]
    n = num_elements(shape(op.indices))
    if num_elements(dims) == 0 or n == 0:
        return [e.zeros_like(op.input), None]
    outer, inner = num_elements(dims[:axis]), num_elements(dims[axis + 1 :])
    one_hot = _one_hot(e, e.reshape(_entries(e, op.indices, size), [n]), size, g)
    rows = e.reshape(e.contiguous(g), [outer, n, inner])  # [L, N, R]
    summed = e.matmul(e.swap_last(one_hot), rows)  # [V, N] @ [L, N, R] = [L, V, R]
    return [e.reshape(summed, dims), None]


@vjp(GatherElementsOp)
def _gather_elements(e: Emit, op: GatherElementsOp, g: SSAValue) -> Grads:
    """``sum(g[..., None, ...] * one_hot(indices))`` over the gathered axis: N
    indices and V entries on the axis cost N·V multiply-adds and an N×V one-hot."""
    dims = shape(op.input)
    axis = op.normalized_axis()
    size = dims[axis]
    got = shape(op.indices)
    if num_elements(dims) == 0 or num_elements(got) == 0:
        return [e.zeros_like(op.input), None]
    # [..., n_a, ...] -> [..., n_a, V, ...]: which input entry each g entry came from
    entries = _entries(e, op.indices, size)
    split = [*got[: axis + 1], 1, *got[axis + 1 :]]
    arange_shape = [1] * len(split)
    arange_shape[axis + 1] = size
    arange = e.reshape(e.constant(np.arange(size), entries), arange_shape)
    hit = e.cast(e.eq(e.reshape(entries, split), arange), element_of(g.type))
    spread = e.mul(e.reshape(e.contiguous(g), split), hit)
    summed = e.reduce_sum(spread, [axis])  # [..., V, ...], the indices' other sizes
    high = [d - k for d, k in zip(dims, shape(summed), strict=True)]
    return [e.pad_or_crop(summed, [0] * len(dims), high), None]
