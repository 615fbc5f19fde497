"""``tg.concat`` and ``tg.gather`` kernels: copies into a row-major output, one nest
per piece. (``tg.slice`` is a view: ``host.py`` lowers it to a
``memref.reinterpret_cast`` with the slice's strides and offset, no kernel.)

**concat**: one nest per operand, over the operand's shape, storing at the operand's
offset along the axis; each operand is read through its own layout::

    for i0_0, i1_0 in a.shape:  out[i0_0, i1_0] = a[i0_0, i1_0]
    for i0_1, i1_1 in b.shape:  out[i0_1, i1_1 + 3] = b[i0_1, i1_1]

**gather**: the constant indices are cut into *runs*, maximal stretches that step
by a constant (``[4, 5, 6, 0, 0, 7]`` is ``4 + j`` for 3, ``0 + 0 * j`` for 2, then
``7``), and each run is one nest over the output with an affine read::

    for i0_0, i1_0 < 3, ...:  out[i0_0, i1_0, ...] = x[i0_0, 4 + i1_0, ...]
    for i0_1, i1_1 < 2, ...:  out[i0_1, i1_1 + 3, ...] = x[i0_1, 0, ...]
    for i0_2, i1_2 < 1, ...:  out[i0_2, i1_2 + 5, ...] = x[i0_2, 7, ...]

So everything stays affine: no index is loaded at run time. The cost is code size:
indices without any arithmetic pattern give one nest per two indices; a gather of
many random indices is better written as a matmul with a one-hot matrix.

Loop names: the dimensions of the output, ``i0, i1, ...``; a kernel of several nests
suffixes each nest's loops with its number (``i1_0``, ``i1_1``, ...), so every loop
of a kernel has a name of its own.
"""

from __future__ import annotations

from xdsl.ir import Operation

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    add,
    const,
    dim,
    mul,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool


def piece_names(rank: int, piece: int, pieces: int) -> list[str]:
    """``i0, i1, ...``, suffixed with ``_<piece>`` when the kernel has several
    nests."""
    suffix = f"_{piece}" if pieces > 1 else ""
    return [f"i{d}{suffix}" for d in range(rank)]


def lower_concat(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.ConcatOp)
    (out,) = k.outputs
    axis = op.normalized_axis()
    pieces = [(src, shape(v)) for src, v in zip(sources, op.inputs, strict=True)]
    offset = 0
    for n, (src, in_shape) in enumerate(pieces):
        rank = len(in_shape)
        index = [dim(d) for d in range(rank)]
        out_index = list(index)
        out_index[axis] = add(index[axis], const(offset))
        offset += in_shape[axis]
        if 0 in in_shape:
            continue  # nothing to copy
        with k.em.nest(piece_names(rank, n, len(pieces)), in_shape) as ivs:
            value = k.em.load(src, ivs, index)
            k.em.store(value, out, ivs, out_index)


def index_runs(indices: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """``(first output position, length, first index, step)`` of each run of
    ``indices``: ``indices[p + j] = first + step * j`` for ``j < length``."""
    runs = []
    p = 0
    while p < len(indices):
        if p + 1 == len(indices):
            runs.append((p, 1, indices[p], 0))
            break
        step = indices[p + 1] - indices[p]
        end = p + 2
        while end < len(indices) and indices[end] - indices[end - 1] == step:
            end += 1
        runs.append((p, end - p, indices[p], step))
        p = end
    return runs


def lower_gather(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.GatherOp)
    (src,) = sources
    (out,) = k.outputs
    axis = op.normalized_axis()
    out_shape = shape(op.result)
    if 0 in out_shape:
        return  # nothing to copy
    runs = index_runs(op.normalized_indices())
    rank = len(out_shape)
    for n, (position, length, first, step) in enumerate(runs):
        bounds = list(out_shape)
        bounds[axis] = length
        index = [dim(d) for d in range(rank)]
        in_index = list(index)
        in_index[axis] = add(const(first), mul(index[axis], step))
        out_index = list(index)
        out_index[axis] = add(index[axis], const(position))
        with k.em.nest(piece_names(rank, n, len(runs)), bounds) as ivs:
            value = k.em.load(src, ivs, in_index)
            k.em.store(value, out, ivs, out_index)
