"""The default schedule of an int8 matmul (``tg.matmul_integer``, rhs packed for
VNNI): AMX tiles where the CPU target's ``amx`` option is on and the shapes fit
(:func:`schedule_amx`: blocks of 32 x 32 int32 sums in tiles for the whole K,
``tdpbusd``), else a register tile of int32 accumulators, each 16 x 4 block one
``vpdpbusd`` (below).

The kernel's nests are ``[b..]_init, i_init, j_init`` (C = 0) and ``[b..], i, k,
j, r`` (``C[i, j] += A[i, 4k + r] * P[k, j, r]``, ``k`` over groups of four,
``qidao/passes/kernels/lowering/matmul_integer.py``). In primitives::

    split i by TILE_I, j by TILE_J        i_o, i_i, j_o, j_i
    reorder j_o, i_o, k, i_i, j_i, r      a column panel of P outermost
    compute_at init, i_o                  the tile zeroed in the tile
    compute_at epilogue, i_o              a fused epilogue (the requantization:
                                          ``fuse``'s int8 epilogues) per tile,
                                          its column loop kept rolled
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

A bfloat16 matmul (``tg.matmul_bf16``, rhs packed in pairs by ``bf16-matmul``)
gets the same register tile of float32 sums, ``k`` over pairs, each 16 x 2 block
one ``vdpbf16ps`` (``tensorize``'s ``avx512_bf16``): per pair of k, a tile of 8
rows x 32 columns issues 16 ``vdpbf16ps`` (32 multiply-adds each), twice
float32's fmas per k-step for the same registers, from half the bytes of B.
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
from qidao.dialects.x86vector import GROUP, LANES, PAIR
from qidao.passes.schedule.loops.amx import BF16_INTRINSIC as AMX_BF16_INTRINSIC
from qidao.passes.schedule.loops.amx import INTRINSIC as AMX_INTRINSIC
from qidao.passes.schedule.loops.vnni import BF16_INTRINSIC, INTRINSIC

TILE_J = 32
"""Two registers of 16 int32 columns."""
AMX_TILE = 16
"""An AMX tile's rows (of A and C) and int32 columns (of C); its 64 bytes of K."""


def schedule_matmul_integer(
    s: Schedule, kernel: str, threads: int, amx: bool = False
) -> str:
    """Schedule the packed int8 matmul ``kernel``: AMX tiles where ``amx`` and the
    shapes allow (:func:`schedule_amx`), else the VNNI register tile (module
    docstring)."""
    m, k, n = _shape(s, kernel)
    if amx and amx_applies(m, k, n) is None:
        return schedule_amx(s, kernel, threads, (m, k, n), AMX_INTRINSIC)
    return _register_tile(s, kernel, threads, (m, k, n), INTRINSIC)


def schedule_matmul_bf16(
    s: Schedule, kernel: str, threads: int, amx: bool = False
) -> str:
    """Schedule the packed bfloat16 matmul ``kernel``: AMX tiles (``tdpbf16ps``)
    where ``amx`` and the shapes allow, else the register tile of float32 sums,
    each 16 x 2 block one ``vdpbf16ps`` (module docstring)."""
    m, k, n = _shape(s, kernel)
    if amx and amx_applies(m, k, n, PAIR) is None:
        return schedule_amx(s, kernel, threads, (m, k, n), AMX_BF16_INTRINSIC)
    return _register_tile(s, kernel, threads, (m, k, n), BF16_INTRINSIC)


def _register_tile(
    s: Schedule, kernel: str, threads: int, mkn: tuple[int, int, int], intrinsic: str
) -> str:
    m, k, n = mkn
    if n % LANES:
        raise NotApplicable(f"N = {n} is not a multiple of {LANES}")
    tile_j = TILE_J if n % TILE_J == 0 else LANES
    tile_i = m if m <= ONE_TILE_ROWS else TILE_I
    s.split(kernel, "i", tile_i)
    s.split(kernel, "j", tile_j)
    s.reorder(kernel, "j_o", "i_o", "k", "i_i", "j_i", "r")
    _zero_per_tile(s, kernel)
    if intrinsic == BF16_INTRINSIC:
        done = [f"{tile_i}x{tile_j} register tile of float32 C, vdpbf16ps"]
        group = PAIR
    else:
        done = [f"{tile_i}x{tile_j} register tile of int32 C, vpdpbusd"]
        group = GROUP
    done += _epilogue_per_tile(s, kernel)
    done += _parallel(s, kernel, threads, (m, k * group, n), tile_j)
    tiles = [""]
    if m % tile_i:
        tiles.append(s.peel(kernel, "i_o").removeprefix("i_o"))
        done.append(f"the last {m % tile_i} rows in a peeled tile (i_o_t)")
    for suffix in tiles:
        _vnni_tile(s, kernel, suffix, tile_j, intrinsic)
    return ", ".join(done)


def amx_applies(m: int, k: int, n: int, group: int = GROUP) -> str | None:
    """Why the AMX schedule does not apply to an ``m x group k x n`` product, or
    None: it needs whole tiles along N (16 columns) and K (64 bytes) and at least
    one along M (16 rows); the rows past the last whole tile go to the register
    tile."""
    if n % AMX_TILE:
        return f"N = {n} is not a multiple of {AMX_TILE}"
    if k % AMX_TILE:
        return f"K = {group * k} is not a multiple of {group * AMX_TILE}"
    if m < AMX_TILE:
        return f"M = {m} is under {AMX_TILE} rows"
    return None


def schedule_amx(
    s: Schedule,
    kernel: str,
    threads: int,
    mkn: tuple[int, int, int],
    intrinsic: str,
) -> str:
    """Blocks of 32 (or 16) rows x 32 (or 16) columns, each the whole K in AMX
    tiles (``tensorize``'s ``amx_int8``, or ``amx_bf16``); the rows past the last
    whole block, when M is not a multiple of 16, in a register tile (``vpdpbusd``,
    ``vdpbf16ps``).

    In primitives::

        split i by TILE_I, j by TILE_J        i_o, i_i, j_o, j_i
        reorder j_o, i_o, i_i, k, j_i, r      a column panel of P outermost
        compute_at init, i_o                  the block zeroed in the block
        (with a fused epilogue:)
        compute_at epilogue, i_o              requantized right after its sums
        unroll j_epi by 1                     kept rolled: LLVM vectorizes it
        cache_write i_o                       the sums in a block-sized buffer
                                              (tilezero, no int32 to memory)
        peel i_o                              when TILE_I does not divide M (i_o_t)
        tensorize i_i amx_int8 (amx_bf16)     i_i x k x j_i x r: tile products
        parallel j_o                          when threads > 1 and the work pays
        (the peeled rows: reorder k above i_i, then the VNNI tile)

    TILE_I is 32 (two tiles of rows, each B tile used twice) unless M mod 32 is
    16 or more, when 16 leaves fewer rows to the peeled VNNI tile (M = 49: 48 in
    tiles, 1 peeled, not 32 and 17); TILE_J is 32 where it divides N.
    """
    m, k, n = mkn
    bf16 = intrinsic == AMX_BF16_INTRINSIC
    tile_i = (
        2 * AMX_TILE
        if m >= 2 * AMX_TILE and m % (2 * AMX_TILE) < AMX_TILE
        else AMX_TILE
    )
    tile_j = 2 * AMX_TILE if n % (2 * AMX_TILE) == 0 else AMX_TILE
    s.split(kernel, "i", tile_i)
    s.split(kernel, "j", tile_j)
    s.reorder(kernel, "j_o", "i_o", "i_i", "k", "j_i", "r")
    _zero_per_tile(s, kernel)
    if bf16:
        done = [f"{tile_i}x{tile_j} blocks of float32 C in AMX tiles, tdpbf16ps"]
    else:
        done = [f"{tile_i}x{tile_j} blocks of int32 C in AMX tiles, tdpbusd"]
    done += _epilogue_per_tile(s, kernel)
    done += _parallel(s, kernel, threads, (m, k * (PAIR if bf16 else GROUP), n), tile_j)
    rest = m % tile_i
    if rest:
        suffix = s.peel(kernel, "i_o").removeprefix("i_o")
        tile = "vdpbf16ps" if bf16 else "VNNI"
        done.append(f"the last {rest} rows in a peeled {tile} tile (i_o{suffix})")
    s.tensorize(kernel, "i_i", intrinsic)
    if rest:
        s.reorder(kernel, f"k{suffix}", f"i_i{suffix}", f"j_i{suffix}", f"r{suffix}")
        _vnni_tile(s, kernel, suffix, tile_j, BF16_INTRINSIC if bf16 else INTRINSIC)
    return ", ".join(done)


def _shape(s: Schedule, kernel: str) -> tuple[int, int, int]:
    """``(M, K / g, N)`` of a packed matmul's ``i, k, j, r`` nest (``g`` rows of
    the rhs a group: 4 bytes, 2 bfloat16s)."""
    loops = s.loops(kernel)
    if "r" not in loops:
        raise NotApplicable("the rhs is not packed in groups of rows (no r loop)")
    i = loops.index("i")
    if loops[i : i + 4] != ["i", "k", "j", "r"]:
        raise NotApplicable(f"expected i, k, j, r nested in this order: {loops}")
    extents = s.extents(kernel)
    m, k, n = extents["i"], extents["k"], extents["j"]
    if m is None or k is None or n is None:
        raise NotApplicable("the i, k, j loops have non-constant bounds")
    return m, k, n


def _zero_per_tile(s: Schedule, kernel: str) -> None:
    init = next(name for name in s.loops(kernel) if name.endswith("_init"))
    s.compute_at(kernel, init, "i_o")


def _epilogue_per_tile(s: Schedule, kernel: str) -> list[str]:
    """A fused epilogue (the requantization, ``i_epi``) computed per tile, right
    after its sums, which then live in a buffer of the tile's size only
    (``cache_write``: the group's int32 buffer is used in no other loop, so the
    tile replaces it and nothing is written back). Before ``peel``, so that the
    peeled tile gets its copy of both."""
    epilogue = next((n for n in s.loops(kernel) if n.endswith("_epi")), None)
    if epilogue is None:
        return []
    s.compute_at(kernel, epilogue, "i_o")
    # its column loop kept rolled: LLVM then vectorizes along the row (else it
    # unrolls the 32 columns and vectorizes down the column, with gathers)
    s.unroll(kernel, _column_loop(s, kernel, epilogue), 1)
    s.cache_write(kernel, "i_o")
    return ["the epilogue per tile, the sums in a tile-sized buffer"]


def _column_loop(s: Schedule, kernel: str, epilogue: str) -> str:
    """The innermost loop of the epilogue nest (``j_epi``)."""
    return next(n for n in reversed(s.loops(kernel)) if n.endswith("_epi"))


def _parallel(
    s: Schedule, kernel: str, threads: int, mkn: tuple[int, int, int], tile_j: int
) -> list[str]:
    """``j_o`` on ``threads`` threads when the ``M x K x N`` product pays."""
    m, k, n = mkn
    if threads > 1 and 2 * m * n * k >= PARALLEL_MIN_FLOPS and n // tile_j > 1:
        s.parallel(kernel, "j_o")
        return [f"j_o on {threads} threads"]
    return []


def _vnni_tile(
    s: Schedule, kernel: str, suffix: str, tile_j: int, intrinsic: str
) -> None:
    """The register tile of loops ``i_o<suffix>``: C cached in a local buffer,
    16-column blocks one ``intrinsic`` (``vpdpbusd``, ``vdpbf16ps``), unrolled."""
    tile = f"i_o{suffix}"
    s.cache_write(kernel, tile)
    j_i = f"j_i{suffix}"
    unrolled = [f"i_i{suffix}"]
    if tile_j > LANES:
        s.split(kernel, j_i, LANES)
        j_i = f"{j_i}_i"
        unrolled.insert(0, f"j_i{suffix}_o")
    s.tensorize(kernel, j_i, intrinsic)
    for copy in ("cw", "wb"):
        unrolled += _copy_loops(s, kernel, f"{tile}_{copy}_i")[::-1]
    for loop in unrolled:
        s.unroll(kernel, loop, 0)
