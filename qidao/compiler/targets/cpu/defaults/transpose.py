"""Cache blocking for copies that transpose: the elementwise default's first step.

A kernel whose innermost loop writes its output contiguously but reads an input
down a column (a layout copy ``contiguous(transpose(x))``, or an elementwise chain
reading a transposed view) loads a new cache line for every element, and from
beyond L2 once the input outgrows it. Walking the pair of loops in
``TILE`` x ``TILE`` tiles makes each line it loads serve ``TILE`` elements::

    for c in [0, 256)                for c_o, w_o  (tiles of 64 x 64)
      for w in [0, 3199)       ==>     for c_i, w_i
        y[c, w] = x[w, c]                y[64 c_o + c_i, 64 w_o + w_i] = x[.., ..]

The rule (``tile_transposed``): in a perfect nest, the innermost loop ``j`` must
write every output with unit stride while some load strides by ``MIN_STRIDE``
elements or more along ``j``; the loop ``i`` that load walks with unit stride is
moved directly outside ``j`` (``reorder``) and the two are tiled (``split`` both,
``reorder``: what the ``tile`` primitive does). Both
must have at least ``TILE`` iterations. Anything else is left as it is.

Where ``i`` is a multiple of 8 and ``j`` of 16 the tiles are blocks of 8 x 16,
each unrolled whole, the blocks of one column of the output (``j_o``)
outermost: each block stores 8 full cache lines of the output (16 floats of a
row) from 16 rows of the input, which LLVM reads with 16-wide gathers, and the
sweep down ``i`` streams those 16 rows. Measured (one thread, medians, the
project's 2-core AMD EPYC, 2026-12-07; 64 x 64 tiles -> 8 x 16 blocks, against
PyTorch eager): ``2048 x 2048`` 7.3 -> 2.2-2.5 ms (0.35x -> 1.06-1.29x; it
varies with where the buffers lie), ``1024 x 1024`` 1.68 -> 0.40 ms (0.25x ->
1.04x), ``512 x 512`` 0.185 -> 0.073 (0.52x -> 1.33x), ``64 x 4096`` 0.41 ->
0.105 (0.26x -> 1.01x), ``[1, 3200, 256]`` to channels-first 0.29 -> 0.22 ms
(4.0x -> 5.2x). Blocks of 16 x 16 measured 2.2-2.4 ms at 2048, 16 x 8 4.2, 16 x
32 3.6: with 8 rows a block's 16 input lines stay within L1's ways, which 16
rows 8 KiB apart (one set) overflow.

Measured (one thread, medians, a 2-core AVX-512 machine at 214 GFLOP/s peak
while a benchmark ran on the other core, 2026-12-06; as lowered -> tiles of 16,
32, 64): wav2vec2's first feature map ``[1, 1, 3199, 256]`` to channels-first
18.2 -> 0.59, 0.56, 0.51 ms, its second (``1599``) 0.64 -> 0.20, 0.18, 0.19 ms,
``2048 x 2048`` transposed 116 -> 32, 50, 13 ms, ``1024 x 1024`` 25.5 -> 11.7, 7.7,
1.1 ms, ``197 x 768`` 0.14 -> 0.05, 0.07, 0.06 ms. Where the input fits L2 tiles of
16 or 32 lost (``[1, 64, 56, 56]`` to channels-last 0.05 -> 0.10 ms; ``[8, 128,
64]`` swapping its last two 0.020 -> 0.028): with 64, 56 is too short to tile and
``[8, 128, 64]`` stays at 0.018 ms.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.passes.schedule.loops.nest import (
    body_ops,
    kernel_functions,
    kernel_loops,
    loop_name,
    nested_child,
)

TILE = 64
"""Tile side, in elements of each loop (module docstring: 16 and 32 lose to 64 on
power-of-two strides, whose columns fall into the same L1 sets)."""
BLOCK_ROWS, BLOCK_COLUMNS = 8, 16
"""The unrolled blocks of a transposed copy: ``BLOCK_ROWS`` iterations of the
loop the read walks contiguously by ``BLOCK_COLUMNS`` of the innermost, where
the loops are multiples of them (module docstring)."""
MIN_STRIDE = 16
"""A load at least this many elements apart along the innermost loop reads a new
cache line (64 bytes of f32) per element."""


class TooShortToTile(NotApplicable):
    """A transposed read whose loops are too short to tile: a reason worth
    reporting, unlike a kernel that reads nothing down a column."""


def tile_transposed(s: Schedule, kernel: str) -> str:
    """Tile the column-reading pair of loops of ``kernel`` (module docstring); what
    was done, or :class:`NotApplicable` with the reason."""
    fn = kernel_functions(s.module)[kernel]
    loops = kernel_loops(fn)
    if not loops:
        raise NotApplicable("no loops")
    nest = [loops[0]]
    while (child := nested_child(nest[-1])) is not None:
        nest.append(child)
    if len(nest) < 2 or len(nest) != len(loops):
        raise NotApplicable("not one perfect nest of two or more loops")
    inner = nest[-1]
    ivs = [loop.body.block.args[0] for loop in nest]
    accesses = [
        op for op in body_ops(inner) if isinstance(op, affine.LoadOp | affine.StoreOp)
    ]
    stores = [op for op in accesses if isinstance(op, affine.StoreOp)]
    if not stores or any(_stride(op, ivs[-1]) != 1 for op in stores):
        raise NotApplicable("the innermost loop does not write contiguously")
    extents = s.extents(kernel)
    names = [str(loop_name(loop)) for loop in nest]
    for load in (op for op in accesses if isinstance(op, affine.LoadOp)):
        along_inner = _stride(load, ivs[-1])
        if along_inner is None or abs(along_inner) < MIN_STRIDE:
            continue
        for k in range(len(nest) - 2, -1, -1):
            if _stride(load, ivs[k]) != 1:
                continue
            outer, j = names[k], names[-1]
            rows, columns = extents[outer] or 0, extents[j] or 0
            if rows < TILE or columns < TILE:
                raise TooShortToTile(
                    f"loops {outer} and {j} have fewer than {TILE} iterations"
                )
            if rows % BLOCK_ROWS == 0 and columns % BLOCK_COLUMNS == 0:
                # blocks of a column of the output outermost, each unrolled whole
                _, j_o, outer_i, j_i = _tiles(
                    s, kernel, names, outer, j, (BLOCK_ROWS, BLOCK_COLUMNS), True
                )
                s.unroll(kernel, j_i, 0)
                s.unroll(kernel, outer_i, 0)
                return (
                    f"{outer} x {j} in {BLOCK_ROWS}x{BLOCK_COLUMNS} blocks, "
                    f"unrolled, {j_o} outermost (a transposed read)"
                )
            _tiles(s, kernel, names, outer, j, (TILE, TILE), False)
            return f"{outer} x {j} in {TILE}x{TILE} tiles (a transposed read)"
    raise NotApplicable("no load reads down a column")


def _tiles(
    s: Schedule,
    kernel: str,
    names: list[str],
    outer: str,
    j: str,
    sizes: tuple[int, int],
    columns_first: bool,
) -> tuple[str, str, str, str]:
    """``outer`` moved next to ``j`` and the two split by ``sizes``, the tile
    loops outside the loops within a tile (``j_o`` outermost where
    ``columns_first``): split and reorder, which is what ``tile`` does (the
    tutorial's fourth chapter starts from a tree without ``tile`` and has the
    reader write it, and the defaults must run there too). The four loops:
    ``outer_o, j_o, outer_i, j_i``."""
    order = [n for n in names[:-1] if n != outer] + [outer, j]
    if order != names:
        s.reorder(kernel, *order)
    outer_o, outer_i = s.split(kernel, outer, sizes[0])
    j_o, j_i = s.split(kernel, j, sizes[1])
    rest = [n for n in s.loops(kernel) if n not in (outer_o, outer_i, j_o, j_i)]
    tiles = [j_o, outer_o] if columns_first else [outer_o, j_o]
    s.reorder(kernel, *rest, *tiles, outer_i, j_i)
    return outer_o, j_o, outer_i, j_i


def _stride(op: affine.LoadOp | affine.StoreOp, value: SSAValue) -> int | None:
    """How many elements ``op``'s address moves when ``value`` (a loop's induction
    variable) grows by one; None when the memref's strides are not constants or
    the index is not linear in it."""
    memref_type = op.memref.type
    if not isinstance(memref_type, MemRefType):
        return None
    strides = memref_type.get_strides()
    if strides is None or any(s is None for s in strides):
        return None
    operands = list(op.indices)
    if value not in operands:
        return 0
    amap = op.map.data
    zeros = [0] * amap.num_dims
    ones = list(zeros)
    for position, operand in enumerate(operands[: amap.num_dims]):
        if operand is value:
            ones[position] = 1
    symbols = [0] * amap.num_symbols
    base, moved = amap.eval(zeros, symbols), amap.eval(ones, symbols)
    return sum(
        int(stride) * (b - a)
        for stride, a, b in zip(strides, base, moved, strict=True)
        if stride is not None
    )
