"""The default schedule of a matmul kernel: B packed per column panel, C in a
register tile.

The kernel's nests are ``[b..]_init, i_init, j_init`` (C = 0), ``[b..], i, k, j``
(``C[i, j] += A[i, k] * B[k, j]``) and, when an epilogue was fused,
``[b..]_epi, i_epi, j_epi``. The schedule, in primitives::

    split i by TILE_I, j by TILE_J         i_o, i_i, j_o, j_i
    reorder j_o, i_o, k, i_i, j_i          a column panel of B outermost
    compute_at init and epilogue, i_o      C's tile zeroed and finished in the tile
    parallel j_o                           when threads > 1 and the work pays
    cache_read B at j_o                    the K x TILE_J panel of B packed once
                                           per j_o: 128-byte rows instead of N*4
    peel i_o                               when TILE_I does not divide M: the last
                                           tile, M mod TILE_I rows, in i_o_t
    cache_write at i_o (and i_o_t)         the TILE_I x TILE_J tile of C in a local
                                           buffer (no copy-in: the init is inside)
    vectorize j_i, the copy loops          <16 x float>, multiply-adds as fma
    unroll i_i, j_i and the copy loops     the tile stays in sixteen registers
                                           (and their _t copies in i_o_t)

(a transposed B, as in attention's ``q @ k^T``, is packed by a scalar copy that
turns its columns into rows), so every k step loads one packed row of B (two vectors, contiguous), broadcasts
TILE_I elements of A and issues sixteen fmas. Measured on this machine (AMD EPYC,
AVX-512, one thread): matmul 1024 at ~240 GFLOP/s against PyTorch's ~100.

The tile is unrolled, so its loops need constant bounds: TILE_J (or one vector)
divides N, and the tile has 8 rows (M when M < 8). When 8 does not divide M,
``split`` bounds the tile's row loops by ``min(8, M - 8 * i_o)``; ``peel`` moves the
last tile into a copy ``i_o_t`` (its loops named ``<loop>_t``), so the main tiles
have exactly 8 rows and the tail tile M mod 8, both unrolled. Peeled before
``cache_write``: the tail's accumulator is then (M mod 8) x TILE_J and its copy
loops have constant bounds too (after it, they would be clipped by ``min``s,
which ``unroll`` refuses). ViT's M = 197 is 24 tiles of 8 rows and one of 5.
Before peel the tile had the largest of 8, 7, ..., 1 rows that divides M: 197 is
prime, its 1-row tile was refused and the kernel kept its loops. Measured (one
thread, medians): 197x192 @ 192x768 and 197x768 @ 768x192 at ~107 GFLOP/s
against ~50 before and PyTorch's ~97; the zoo's vit (4 layers of width 192,
``qidao profile --threads 1``) 21.9 -> 10.9 ms. Against the largest divisor (6
or 7 rows, no tail) at M = 12 ... 196, 8 rows and a peeled tail measured the
same within this machine's noise, so it is the one rule.

The panel is packed only when it fits ``cache-read``'s limit. A kernel too small to be
worth it, or whose j extent is not a multiple of the vector width, keeps its loops
(LLVM vectorizes them as they are); the reason goes to ``stats``.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.passes.schedule.loops.nest import find_loop, iv

TILE_I = 8
TILE_J = 32
WIDTH = 16
PACK_MAX_ELEMENTS = 1 << 18
"""``cache-read``'s limit on a packed box (1 MiB of f32, on the stack)."""
MIN_FLOPS = 2 * 32**3
"""Below this (a 32 x 32 x 32 matmul, under a microsecond), tiling is not worth
its compile time."""
PARALLEL_MIN_FLOPS = 2 * 128**3
"""A 128^3 matmul takes ~20 µs on one core: enough to pay for waking a worker."""


def schedule_matmul(s: Schedule, kernel: str, threads: int) -> str:
    """Pack B and register-tile C in the matmul ``kernel`` (module docstring)."""
    loops = s.loops(kernel)
    if not all(name in loops for name in ("i", "k", "j")):
        raise NotApplicable(f"expected loops i, k, j; the kernel has {loops}")
    i = loops.index("i")
    if loops[i : i + 3] != ["i", "k", "j"]:
        raise NotApplicable(f"expected i, k, j nested in this order: {loops}")
    extents = s.extents(kernel)
    m, k, n = extents["i"], extents["k"], extents["j"]
    if m is None or k is None or n is None:
        raise NotApplicable("the i, k, j loops have non-constant bounds")
    flops = 2 * m * n * k
    if flops < MIN_FLOPS or n < WIDTH:
        raise NotApplicable(f"{m}x{k}x{n} is too small to tile")
    tile_j = TILE_J if n % TILE_J == 0 else WIDTH
    if n % tile_j:
        raise NotApplicable(
            f"the j extent {n} is not a multiple of the vector width {WIDTH}"
        )
    tile_i = min(m, TILE_I)
    tail = m % tile_i
    rhs, rows_contiguous = _rhs(s, kernel)

    s.split(kernel, "i", tile_i)
    s.split(kernel, "j", tile_j)
    s.reorder(kernel, "j_o", "i_o", "k", "i_i", "j_i")
    for suffix in ("_init", "_epi"):
        nest = next((name for name in loops if name.endswith(suffix)), None)
        if nest is not None:
            s.compute_at(kernel, nest, "i_o")
    done = [f"{tile_i}x{tile_j} register tile of C"]
    if tail:
        done.append(f"the last {tail} rows in a peeled {tail}x{tile_j} tile (i_o_t)")
    if threads > 1 and flops >= PARALLEL_MIN_FLOPS:
        s.parallel(kernel, "j_o")
        done.append(f"j_o on {threads} threads")
    if rhs is not None and k * tile_j <= PACK_MAX_ELEMENTS:
        s.cache_read(kernel, "j_o", rhs)
        done.insert(0, f"{rhs} packed in {k}x{tile_j} panels")
    tiles = ["i_o"]
    if tail:
        # the tile's loops run to min(8, M - 8 * i_o): the last tile in a copy
        # of its own (i_o_t) makes them constants, 8 in i_o and M mod 8 in i_o_t
        tiles.append(s.peel(kernel, "i_o"))
    for tile in tiles:
        s.cache_write(kernel, tile)
    names = s.loops(kernel)
    prefixes = [f"{t}_{copy}_i" for t in tiles for copy in ("cw", "wb")]
    copies = {
        prefix: sorted(n for n in names if n.startswith(prefix))
        for prefix in [*prefixes, "j_o_cr_i"]
    }
    # the innermost copy loop (the last index) on vectors, the tile's others
    # unrolled; a pack of a transposed B (q @ k^T) reads columns: it stays scalar
    if not rows_contiguous:
        copies["j_o_cr_i"] = []
    inner = ["j_i", "j_i_t"] if tail else ["j_i"]
    for loop in [*inner, *(c[-1] for c in copies.values() if c)]:
        s.vectorize(kernel, loop, WIDTH)
    rows = ["i_i", "i_i_t"] if tail else ["i_i"]
    for loop in [*inner, *rows, *(n for p in prefixes for n in copies[p][:-1])]:
        s.unroll(kernel, loop, 0)
    return ", ".join(done)


def _rhs(s: Schedule, kernel: str) -> tuple[str | None, bool]:
    """B: the name of the memref the j loop's body loads at ``[.., k, j]`` (None
    when it has none of its own, or another memref there has the same name:
    ``cache_read`` refers to it by name), and whether its rows are contiguous
    (stride 1 along j: not a transposed view)."""
    _, j_loop = find_loop(s.module, "default schedule", kernel, "j")
    _, k_loop = find_loop(s.module, "default schedule", kernel, "k")
    j, k = iv(j_loop), iv(k_loop)
    loads = [op for op in j_loop.body.walk() if isinstance(op, affine.LoadOp)]
    for op in loads:
        indices = list(op.indices)
        name = op.memref.name_hint
        if name is not None and len(indices) >= 2 and indices[-2:] == [k, j]:
            same = {id(o.memref) for o in loads if o.memref.name_hint == name}
            memref_type = op.memref.type
            assert isinstance(memref_type, MemRefType)
            layout = memref_type.layout
            contiguous = not isinstance(layout, StridedLayoutAttr) or (
                layout.get_strides()[-1] == 1
            )
            return (name if len(same) == 1 else None), contiguous
    return None, True
