"""The default schedule of an int8 matmul (``tg.matmul_integer``, rhs packed for
VNNI): a register tile of int32 accumulators, each 16 x 4 block one ``vpdpbusd``.

The kernel's nests are ``[b..]_init, i_init, j_init`` (C = 0) and ``[b..], i, k,
j, r`` (``C[i, j] += A[i, 4k + r] * P[k, j, r]``, ``k`` over groups of four,
``qidao/passes/kernels/lowering/matmul_integer.py``). In primitives::

    split i by TILE_I, j by TILE_J        i_o, i_i, j_o, j_i
    reorder j_o, i_o, k, i_i, j_i, r      a column panel of P outermost
    compute_at init, i_o                  the tile zeroed in the tile
    peel i_o                              when TILE_I does not divide M (i_o_t)
    cache_write at i_o (and i_o_t)        the tile of C in a local buffer
    split j_i by 16                       j_i_o (TILE_J / 16), j_i_i (16 lanes)
    tensorize j_i_i avx512_vnni           j_i_i x r: one vpdpbusd
    parallel j_o                          when threads > 1 and the work pays
    unroll i_i, j_i_o, the copy loops     the tile stays in registers

Per group of four k, a tile of 8 rows x 32 columns loads two 64-byte rows of P,
broadcasts four bytes of A per row, and issues 16 ``vpdpbusd`` (64 multiply-adds
each): 1024 multiply-adds, against 256 for float32's 8 x 32 tile of fmas per k.
P is packed at compile time (``pack-vnni``), so no copy runs per call. Up to
``ONE_TILE_ROWS`` rows, the tile has all M rows (P read once, as float32's rule).

Applies when N is a multiple of 16 (the blocks are whole registers; a ragged N
keeps its loops, which LLVM vectorizes as they are) and the host has AVX-512
VNNI (the ``pack-vnni`` pass ran only then, so a packed kernel means it has).
"""

from __future__ import annotations

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.matmul import (
    ONE_TILE_ROWS,
    PARALLEL_MIN_FLOPS,
    TILE_I,
    _copy_loops,
)
from qidao.dialects.x86vector import GROUP, LANES
from qidao.passes.schedule.loops.vnni import INTRINSIC

TILE_J = 32
"""Two registers of 16 int32 columns."""


def schedule_matmul_integer(s: Schedule, kernel: str, threads: int) -> str:
    """Register-tile the VNNI int8 matmul ``kernel`` (module docstring)."""
    loops = s.loops(kernel)
    if "r" not in loops:
        raise NotApplicable("the rhs is not packed for VNNI (no r loop)")
    i = loops.index("i")
    if loops[i : i + 4] != ["i", "k", "j", "r"]:
        raise NotApplicable(f"expected i, k, j, r nested in this order: {loops}")
    extents = s.extents(kernel)
    m, k, n = extents["i"], extents["k"], extents["j"]
    if m is None or k is None or n is None:
        raise NotApplicable("the i, k, j loops have non-constant bounds")
    if n % LANES:
        raise NotApplicable(f"N = {n} is not a multiple of {LANES}")
    tile_j = TILE_J if n % TILE_J == 0 else LANES
    tile_i = m if m <= ONE_TILE_ROWS else TILE_I
    s.split(kernel, "i", tile_i)
    s.split(kernel, "j", tile_j)
    s.reorder(kernel, "j_o", "i_o", "k", "i_i", "j_i", "r")
    init = next(name for name in loops if name.endswith("_init"))
    s.compute_at(kernel, init, "i_o")
    done = [f"{tile_i}x{tile_j} register tile of int32 C, vpdpbusd"]
    flops = 2 * m * n * k * GROUP
    if threads > 1 and flops >= PARALLEL_MIN_FLOPS and n // tile_j > 1:
        s.parallel(kernel, "j_o")
        done.append(f"j_o on {threads} threads")
    tiles = [""]
    if m % tile_i:
        tiles.append(s.peel(kernel, "i_o").removeprefix("i_o"))
        done.append(f"the last {m % tile_i} rows in a peeled tile (i_o_t)")
    for suffix in tiles:
        tile = f"i_o{suffix}"
        s.cache_write(kernel, tile)
        j_i = f"j_i{suffix}"
        unrolled = [f"i_i{suffix}"]
        if tile_j > LANES:
            s.split(kernel, j_i, LANES)
            j_i = f"{j_i}_i"
            unrolled.insert(0, f"j_i{suffix}_o")
        s.tensorize(kernel, j_i, INTRINSIC)
        for copy in ("cw", "wb"):
            unrolled += _copy_loops(s, kernel, f"{tile}_{copy}_i")[::-1]
        for loop in unrolled:
            s.unroll(kernel, loop, 0)
    return ", ".join(done)
