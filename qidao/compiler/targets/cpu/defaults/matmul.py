"""The default schedule of a matmul kernel: B packed per column panel, C in a
register tile, the ragged last panel and last tile peeled; one row as a GEMV.

The kernel's nests are ``[b..]_init, i_init, j_init`` (C = 0), ``[b..], i, k, j``
(``C[i, j] += A[i, k] * B[k, j]``) and, when an epilogue was fused,
``[b..]_epi, i_epi, j_epi``. The schedule, in primitives::

    split i by TILE_I, j by TILE_J         i_o, i_i, j_o, j_i
    reorder j_o, i_o, k, i_i, j_i          a column panel of B outermost (and
                                           outside the batch loops when every
                                           matmul of the batch shares B, below)
    compute_at init and epilogue, i_o      C's tile zeroed and finished in the tile
    cache_read B at j_o                    the K x TILE_J panel of B packed once
                                           per j_o: 128-byte rows instead of N*4
                                           (when 32 row tiles or more read it)
    peel j_o                               when TILE_J does not divide N: the last
                                           panel, N mod TILE_J columns, in j_o_p,
                                           whose tiles get the steps below first
    parallel b0 (or j_o)                   when threads > 1 and the work pays
                                           (``PARALLEL_MIN_FLOPS``): a batch of
                                           matmuls that shares out evenly over the
                                           threads (attention's heads; the
                                           outermost batch loop of more than one
                                           iteration) by whole matmuls, else the
                                           panels of each when there are two full
                                           ones or more
    peel i_o                               when TILE_I does not divide M: the last
                                           tile, M mod TILE_I rows, in i_o_t
    cache_write at i_o (and i_o_t)         the TILE_I x TILE_J tile of C in a local
                                           buffer (no copy-in: the init is inside)
    vectorize j_i, the copy loops          <16 x float>, multiply-adds as fma
    unroll i_i, j_i and the copy loops     the tile stays in sixteen registers
                                           (and their _t copies in i_o_t)
    vectorize j_epi                        a fused epilogue (bias, ReLU) on the
                                           tile's vectors too
    prefetch B's next panel in k           a constant B of 1 MiB or more read by
                                           at most 8 row tiles (below)

(a transposed B, as in attention's ``q @ k^T``, is packed by a scalar copy that
turns its columns into rows), so every k step loads one packed row of B (two
vectors, contiguous), broadcasts TILE_I elements of A and issues sixteen fmas.

A constant weight is packed before the kernel exists: ``pack-panels`` stores it as
its column panels (``tg.matmul``'s ``rhs_layout = "panels"``, ``[ceil(N /
32), K, 32]``), the lowering reads ``B[j floordiv 32, k, j mod 32]``, ``split`` of ``j``
by 32 makes that ``B[j_o, k, j_i]``, and there is no ``cache_read`` (``_rhs``
finds no ``[.., k, j]`` read): each panel streams contiguously at every M, with
no copy per call. One thread, Xeon, GFLOP/s, B read in place or packed per call
-> panels (PyTorch): 9 x 3072 x 768 63 -> 111 (86), 16 x 1024 x 1024 61 -> 126
(104), 49 x 1536 x 384 123 -> 146 (166), 128 x 256 x 768 145 -> 169 (177), 197 x
192 x 768 151 -> 170 (173).
Measured on this machine (AMD EPYC, AVX-512, one thread): matmul 1024 at ~240
GFLOP/s against PyTorch's ~100.

The tile is unrolled, so its loops need constant bounds, and the tile has 8 rows
(M when M <= 12, below). When 8 does not divide M, ``split`` bounds the tile's row loops by
``min(8, M - 8 * i_o)``; ``peel`` moves the last tile into a copy ``i_o_t`` (its
loops named ``<loop>_t``), so the main tiles have exactly 8 rows and the tail tile
M mod 8, both unrolled. Peeled before ``cache_write``: the tail's accumulator is
then (M mod 8) x TILE_J and its copy loops have constant bounds too (after it, they
would be clipped by ``min``s, which ``unroll`` refuses). ViT's M = 197 is 24 tiles
of 8 rows and one of 5. Before peel the tile had the largest of 8, 7, ..., 1 rows
that divides M: 197 is prime, its 1-row tile was refused and the kernel kept its
loops. Measured (one thread, medians): 197x192 @ 192x768 and 197x768 @ 768x192 at
~107 GFLOP/s against ~50 before and PyTorch's ~97; the zoo's vit (4 layers of width
192, ``qidao profile --threads 1``) 21.9 -> 10.9 ms. Against the largest divisor (6
or 7 rows, no tail) at M = 12 ... 196, 8 rows and a peeled tail measured the
same within this machine's noise, so it is the one rule.

Up to 12 rows (M <= ``ONE_TILE_ROWS``), the tile has all M rows, so that each panel
of B is read once (2 x 12 accumulators, two B vectors and a broadcast fit the 32
registers): 8 rows and a peeled tail read B twice, and a B that does not fit the
caches comes from memory twice. ConvNeXt's last stage (3 x 3 = 9 tokens): 9x3072 @
3072x768 at 95 GFLOP/s against 72, 9x768 @ 768x3072 51 against 38, 12x768 @
768x3072 88-97 against 47 (one thread, medians).

The columns likewise. Panels are 32 columns (16 when N is an odd multiple of 16, or
ragged and under 32, so that one full panel remains). When 16 does not divide N
(attention's ``q @ k^T`` over ViT's 197 tokens or Swin's 49, a 1000-class head),
``split`` bounds the last panel's column loops by ``min(32, N - 32 * j_o)`` and
``peel`` moves that panel into ``j_o_p`` (suffix ``_p``): its tiles are 8 x (N mod 32), their
columns on ``<16 x float>``, ``<8 x float>`` and ``<4 x float>`` vectors, each on
the tail of the one before, and the last N mod 4 scalars (29 = 16 + 8 + 4 + 1), all
unrolled. It runs on one thread after the parallel panels. (Vectors of 16 only, the
rest scalars, measured the same but for 12 columns: 64x256 @ (44x256)^T 28.1 against
26.0 µs.) When M is ragged too, both parts peel their last row tile, ``j_o_p``'s
first (``i_o_p_t``): four tiles, 8 x 32, (M mod 8) x 32, 8 x (N mod 32) and
(M mod 8) x (N mod 32). The panel's copy has its own suffix so that the main
panels' ``peel i_o`` (``_t``) makes no name the first peel made.
Before this, such a kernel kept its loops.

A panel is packed only when M >= 256 (32 row tiles read it) or B is a transposed
view (the pack is what makes its rows contiguous): the copy runs on every call, and
with fewer rows it costs more than the contiguous panel saves. Measured (one thread,
medians, GFLOP/s, packed -> unpacked; peak ~115, ONNX Runtime ~110 on the first):
128x256x768 98 -> 112, 128x256x8192 (GPT-2's head) 86 -> 96, 64x2048x512 78 -> 93,
197x768x192 100 -> 112, 128x1024x4096 86 -> 93; and the other way from 256 rows on,
where B's rows are 4 KiB or more apart (their panel's rows fall into the same L1
sets): 1024^3 108 -> 99, 256x1024x1024 106 -> 100, 256x256x2048 105 -> 97. (For
one row tile the copy only doubled the traffic: 8x768 @ 768x1000, 196 -> 122 µs.)
The panel must also fit ``cache-read``'s limit.

On a faster core (AVX-512, peak 214 GFLOP/s measured, 2026-12-06) the unpacked
panel lost wherever it outgrew L1 or its rows fell a page or more apart, the
language models' heads above all (one thread, medians, GFLOP/s, unpacked ->
packed): 128x768x8192 (OPT's head) 39 -> 122, 128x3072x256 (DistilBERT's
feed-forward down) 58 -> 126, 128x256x8192 118 -> 142, 32x256x1024 125 -> 141,
64x768x768 117 -> 126, 16x768x768 73 -> 78, 128x256x768 141 -> 162; and even
where it fits (64x256x256 141 -> 132, 128x64x128 86 -> 89, 197x768x192 152 ->
150). So B is also packed, when C has more than one row tile, for K >
``PACK_MIN_K`` or N >= ``PACK_MIN_N``.

One row (M = 1, a classifier head at batch 1, N ragged) is a GEMV: B is read once
whatever the schedule, and a 1 x 32 tile has two accumulators, each fma waiting
on the one before. ``k`` is split by 4 (2 when 4 does not divide K, not at all when
2 does not) and its iterations unrolled inside ``j`` on vectors
(``C[j] += A[k] * B[k, j] + ... + A[k+3] * B[k+3, j]``): four rows of B stream at
once and C is loaded and stored a quarter as often: 1x1280 @ 1280x1000 measured
68 µs, against 77 for the naive loops and 89 for a 1 x 32 tile. With threads, when
they divide N and B has ``GEMV_PARALLEL_MIN_ELEMENTS`` or more, ``j`` is split into
that many equal parts (``j_o`` parallel, outside ``k``): each core streams its own
columns of B, which a GEMV reads from memory once per call (two threads, medians:
1x1280 @ 1280x1000 82 -> 57 µs, 1x2048 @ 2048x1000 314 -> 153).
M = 1 with N a multiple of 16 still gets the 1 x 32 tile
(``tests/compiler/targets/cpu/test_matmul_peel.py`` checks it), although the GEMV
measured 1.2 to 3x faster there too (1x1280 @ 1280x1024: 91 against 252 µs).

Measured, one thread, whole calls (the call itself is ~2.5 µs; more for 49x49, see
below), medians of interleaved runs in one process on a busy machine (two cores,
load ~3); before: the default before this rule, which declined every ragged N::

    A @ B                        before     after    (GFLOP/s)   PyTorch   after/PyTorch
    197x64 @ (197x64)^T          1440 µs     67 µs   (75)         69 µs    0.97
    49x32 @ (49x32)^T              30.5       9.6    (16)          4.0     2.4
    1x1280 @ 1280x1000, const      77        68      (38)        121       0.57
    8x768 @ 768x1000, const       370       145      (85)        247       0.59
    128x256 @ 256x200             256       134      (98)        145       0.92
    197x197 @ 197x64 (N = 64)      77        77      (64)         71       1.09

A second run gave the same ratios within 0.15 (197x197 @ 197x64: 0.95). On two
threads (``parallel j_o``), over two runs: after/PyTorch 1.0 (197x64 @ (197x64)^T,
53-59 µs), 0.6-0.7 (8x768 @ 768x1000, 114-145 µs) and 0.9 (128x256 @ 256x200, 86-111
µs). 49x32 @ (49x32)^T is 2.5 µs in its kernel (22.9 naive): the rest of its 9.6 µs
is the call (PyTorch's whole call is 4).

Threads pay from ``PARALLEL_MIN_FLOPS`` = 2 x 64^3 on (~5 µs on one core): within a
call, libgomp's workers spin between parallel loops, so a fork costs about a
microsecond. Swin (two threads, one process, interleaved calls, medians) with the
threshold at 2 x 128^3 and at 2 x 64^3: 2.48 -> 2.12 ms (its 49 x 192 x 192
projections and 4 windows x 4 heads of 49 x 24 x 49 went parallel); ViT 5.38 ->
5.37.

A batch of matmuls that shares one B: a strided 1x1 convolution through im2col
reads ``[1, OH, OW, K]`` rows that no view makes one ``[OH * OW, K]`` matrix
(``collapse-matmul-batch`` needs uniform row strides), so the kernel is a batch of
OH matmuls of OW rows with the same weight. With the batch outermost each matmul
streamed the whole weight: ResNet-50's 1024 -> 2048 at stride 2 (8 MiB of panels,
7 x 7 outputs) read it 7 times from memory. When no load of B depends on a batch
loop, ``j_o`` goes outside them (``_rhs_shared``): each panel is read once for all
the rows, and with threads ``j_o`` is the parallel loop. One thread, Xeon, a 1x1
convolution + ReLU against ONNX Runtime: 1024 -> 2048 from 14 x 14, 2.6 -> 1.57
ms (0.56 -> 1.02x ORT), 512 -> 1024 from 28 x 28, 1.77 -> 1.40 ms (0.84 ->
1.06x); ResNet-50 (``qidao zoo``) 60.4 -> 53.9 ms.

A fused epilogue over the tile (``j_epi``, after ``compute_at``) was left to LLVM,
which put a 7 x 32 tile's bias and ReLU on gathers and scatters; its columns now
go on vectors as the tile's own (unless it holds a math op that ``expand-math``
writes out on scalars only): 49 x 1024 @ 1024 x 2048 + bias + ReLU 145 -> 155
GFLOP/s (ORT 165-170).

A constant B that comes from memory and few row tiles: in a whole model the
weights do not stay in the caches from one call to the next, and a panel read by a
handful of row tiles (ResNet-50's last stage: 49 rows, 7 tiles) makes the first
tile wait on memory (the hardware prefetcher runs only a few lines ahead of it)
while the others find the panel in L2 and leave memory idle. With at most
``PREFETCH_MAX_ROW_TILES`` row tiles and ``PREFETCH_MIN_BYTES`` of B, ``prefetch``
fetches the next panel a little at every k step of every row tile (two elements of
it per step for 7 tiles of a 4608-deep panel). Xeon, one thread, a convolution +
ReLU with its layout copies, caches flushed between calls (ONNX Runtime): 3x3 512
-> 512 on 7 x 7 (im2col, 49 x 4608 @ 4608 x 512) 3.34 -> 2.54 ms (2.08-2.33), 1x1
2048 -> 512 on 7 x 7 1.28 -> 1.11 ms (1.03-1.16); with warm caches within noise.
With 25 row tiles (196 x 1024 @ 1024 x 256) it gained nothing cold and cost 15 %
warm (its address arithmetic, each k step), hence the limit; with one row per tile
it lost cold too (``PREFETCH_MIN_ROWS``). Where it applies it costs 0-10 % when
the weight is in L3 already (9 x 3072 @ 3072 x 768: 350-355 -> 393 µs) and gains
16-24 % when it is not (1318 -> 1141 µs; 9 x 768 @ 768 x 3072 1412 -> 1171;
49 x 1024 @ 1024 x 2048 2233 -> 1796): in a whole model the weights of this size
come from memory.

A kernel too small to be worth tiling keeps its loops (LLVM vectorizes them as they
are); the reason goes to ``stats``.
"""

from __future__ import annotations

import math

from xdsl.dialects import affine
from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineDimExpr,
    AffineExpr,
)

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.dialects.tg.linalg import PANEL_WIDTH
from qidao.passes.cpu.expand_math import scalar_only_math
from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.nest import (
    find_loop,
    iv,
    kernel_functions,
    loop_name,
    symbolic_dim,
)
from qidao.passes.schedule.vectorize import check_vectorizable

TILE_I = 8
TILE_J = 32
ONE_TILE_ROWS = 12
"""Up to this many rows (M), C is one tile of M rows (module docstring)."""
WIDTH = 16
PANEL = "_p"
"""The suffix of the loops of the peeled last column panel (``peel``'s default,
``_t``, names the last row tile's)."""
TAIL_WIDTHS = (16, 8, 4)
"""The vectors a ragged panel's columns go on, widest first; the rest are scalars."""
GEMV_UNROLL = (4, 2)
"""The k unroll of a GEMV: the first of these that divides K (none: not unrolled)."""
PACK_MIN_ROWS = 256
"""B is packed when at least this many rows (32 row tiles) read each panel (module
docstring)."""
PACK_MIN_K = 256
"""B is packed, with more than one row tile, when K is larger than this: its
32-column panel (K x 128 bytes) no longer fits L1 (module docstring)."""
PACK_MIN_N = 1024
"""... or when N is at least this: B's rows are 4 KiB or more apart."""
PACK_MAX_ELEMENTS = 1 << 18
"""``cache-read``'s limit on a packed box (1 MiB of f32, on the stack)."""
MIN_FLOPS = 2 * 32**3
"""Below this (a 32 x 32 x 32 matmul, under a microsecond), tiling is not worth
its compile time."""
PARALLEL_MIN_FLOPS = 2 * 64**3
"""A 64^3 matmul takes ~5 µs on one core; waking a spinning worker ~1 µs (module
docstring)."""
PREFETCH_MAX_ROW_TILES = 8
"""The next panel of a constant B is prefetched (``prefetch``) when C has at most
this many row tiles: each panel is then read from memory by the first and reused
by few, so memory, not the core, is the bound (module docstring)."""
PREFETCH_MIN_ROWS = 4
"""... and each tile has at least this many rows: with fewer, each step computes
too little for the prefetch to overlap (1 x 1024 @ 1024 x 1024, caches flushed:
499 -> 546 µs with it)."""
PREFETCH_MIN_BYTES = 1 << 20
"""... and B has at least this many bytes (a smaller one may stay in L2)."""
GEMV_PARALLEL_MIN_ELEMENTS = 1 << 16
"""A GEMV reads B once, like an elementwise kernel: split from 2^16 elements of B
(not measured again when ``loops.PARALLEL_MIN_ELEMENTS`` went down to 2^13)."""


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
    if flops < MIN_FLOPS or n < 4:
        raise NotApplicable(f"{m}x{k}x{n} is too small to tile")  # N < 4: scalar
    rhs, rows_contiguous = _rhs(s, kernel)
    if m == 1 and n % WIDTH and rows_contiguous:
        return _schedule_gemv(s, kernel, k, n, threads)
    # 32-column panels; 16 when N is an odd multiple of 16, or ragged and under 32
    # (one full panel and a peeled last one)
    tile_j = WIDTH if n % TILE_J and (n % WIDTH == 0 or n < TILE_J) else TILE_J
    panels = _panels(s, kernel)
    if panels is not None:  # B in 32-column panels: a ragged one is peeled
        tile_j = TILE_J
    if n < WIDTH:  # a narrow C (a classifier's 10 logits): one panel, 8 + 2 lanes
        tile_j = n
    # up to ONE_TILE_ROWS rows in one tile: B is then read once
    tile_i = m if m <= ONE_TILE_ROWS else TILE_I
    rows, cols = m % tile_i, n % tile_j  # in the last tile, in the last panel

    batch_loops = [name for name in loops if name[:1] == "b" and name[1:].isdigit()]
    matmuls = math.prod(extents[name] or 1 for name in batch_loops)  # Swin: 4 x 4
    # a rhs that every matmul of the batch shares (a strided convolution's rows
    # through im2col: [1, OH, OW, K] @ [K, N]): its panels go outside the batch,
    # so that each is read once for all the rows instead of once per matmul
    shared = [b for b in batch_loops if (extents[b] or 1) > 1]
    shared = shared if shared and _rhs_shared(s, kernel, shared) else []
    s.split(kernel, "i", tile_i)
    s.split(kernel, "j", tile_j)
    if shared:
        s.reorder(kernel, "j_o", *batch_loops, "i_o", "k", "i_i", "j_i")
    else:
        s.reorder(kernel, "j_o", "i_o", "k", "i_i", "j_i")
    for suffix in ("_init", "_epi"):
        nest = next((name for name in loops if name.endswith(suffix)), None)
        if nest is not None:
            s.compute_at(kernel, nest, "i_o")
    done = [f"{tile_i}x{tile_j} register tile of C"]
    if shared:
        done.append(f"B's panels outside the batch ({', '.join(shared)}: one B)")
    row_tiles = -(-m // tile_i) * (matmuls if shared else 1)
    if (
        panels  # a name to give the primitive
        and (not batch_loops or shared)
        and row_tiles <= PREFETCH_MAX_ROW_TILES
        and tile_i >= PREFETCH_MIN_ROWS
        and k * n * 4 >= PREFETCH_MIN_BYTES
        and -(-n // TILE_J) > 1
    ):
        s.prefetch(kernel, "k", panels, "j_o")
        done.append("the next panel prefetched")
    # a panel is copied on every call: worth it only when many row tiles read it,
    # or when the copy is what makes a transposed B contiguous
    reused = m >= PACK_MIN_ROWS or not rows_contiguous
    # a panel larger than L1, or rows a page or more apart: packed once per call
    # it beats re-reading it from L2 through the TLB for every row tile
    reused |= m > ONE_TILE_ROWS and (k > PACK_MIN_K or n >= PACK_MIN_N)
    # K over a symbolic dimension (attention's probabilities @ V): the copy would
    # run to its capacity, whatever the call's size
    k_symbolic = symbolic_dim(find_loop(s.module, "default schedule", kernel, "k")[1])
    reused &= not (k_symbolic and rows_contiguous)
    if rhs is not None and reused and k * tile_j <= PACK_MAX_ELEMENTS:
        s.cache_read(kernel, "j_o", rhs)
        done.insert(0, f"{rhs} packed in {k}x{tile_j} panels")
    if rows:
        done.append(f"the last {rows} rows in a peeled {rows}x{tile_j} tile (i_o_t)")
    if cols:
        # split's min(32, N - 32 * j_o): the last panel in a copy (j_o_p) whose
        # tiles are N mod 32 columns wide, scheduled first
        s.peel(kernel, "j_o", PANEL)
        _register_tiles(s, kernel, PANEL, rows, cols)
        done.append(f"the last {cols} columns in a peeled panel (j_o{PANEL})")
    # the outermost batch loop of more than one iteration (Swin's last stage: 1 x 8)
    outer = next((b for b in batch_loops if (extents[b] or 0) > 1), None)
    batch = extents[outer] if outer is not None else None
    if (
        threads > 1
        and not shared
        and outer is not None
        and batch is not None
        and _batch_parallel(batch, matmuls * flops, threads)
    ):
        s.parallel(kernel, outer)  # whole matmuls per thread: one fork for all
        each = f" of {matmuls // batch}" if matmuls > batch else ""
        done.append(f"{outer} ({batch}{each} matmuls) on {threads} threads")
    elif (
        threads > 1
        and (matmuls if shared else 1) * flops >= PARALLEL_MIN_FLOPS
        and n // tile_j > 1
    ):
        s.parallel(kernel, "j_o")
        done.append(f"j_o on {threads} threads")
    pack = _copy_loops(s, kernel, "j_o_cr_i")
    if pack and rows_contiguous:
        s.vectorize(kernel, pack[-1], WIDTH)
    _register_tiles(s, kernel, "", rows, tile_j)
    return ", ".join(done)


def _batch_parallel(batch: int, flops: int, threads: int) -> bool:
    """Whether the outer batch loop (``batch`` iterations) of a batch of ``flops``
    in all goes parallel: the work pays, and the iterations share out evenly (a
    multiple of the threads, or at least four per thread)."""
    even = batch % threads == 0 or batch >= 4 * threads
    return even and flops >= PARALLEL_MIN_FLOPS


def _register_tiles(s: Schedule, kernel: str, panel: str, rows: int, cols: int) -> None:
    """Keep the tiles of C of one column panel (``panel``, the suffix of its
    loops: ``""``, or ``PANEL`` for the peeled last one) in registers: the last tile
    peeled when ``rows``, then per tile ``cache_write``, its ``cols`` columns on
    vectors, and the tile's loops unrolled. The main panels leave the vector loop
    of a copy to LLVM, as the tuner's matmul space does; the peeled panel unrolls
    it too, so that none of its loop names is left for the main panels' ``peel``
    and ``cache_write`` to make again."""
    tiles = [panel]
    if rows:
        # min(8, M - 8 * i_o) rows: the last tile in a copy of its own (i_o<panel>_t)
        tiles.append(s.peel(kernel, f"i_o{panel}").removeprefix("i_o"))
    for suffix in tiles:
        tile = f"i_o{suffix}"
        s.cache_write(kernel, tile)
        loops: list[str] = []
        for copy in ("cw", "wb"):  # copy in (none after an init), write back
            nest = _copy_loops(s, kernel, f"{tile}_{copy}_i")
            if nest:
                vectors = vectorize_tails(s, kernel, nest[-1], cols)
                loops += [*(vectors if panel else vectors[1:]), *nest[-2::-1]]
        loops += [*vectorize_tails(s, kernel, f"j_i{suffix}", cols), f"i_i{suffix}"]
        for loop in loops:
            s.unroll(kernel, loop, 0)
        _vectorize_epilogue(s, kernel, f"j_epi{suffix}", cols)


def _vectorize_epilogue(s: Schedule, kernel: str, loop: str, cols: int) -> None:
    """Put a fused epilogue's columns (``loop``, over the tile's accumulators) on
    vectors, as the tile's own: left to LLVM, the bias and ReLU of a 7 x 32 tile
    went on gathers and scatters (49 x 1024 @ 1024 x 2048, 7 % of the kernel).
    Not when it holds a math op that ``expand-math`` writes out on scalars only
    (LLVM vectorizes that expansion; a vector ``math.exp`` is a libm call per
    lane), or when it cannot go on vectors."""
    found = [
        op
        for op in kernel_functions(s.module)[kernel].walk()
        if isinstance(op, affine.ForOp) and loop_name(op) == loop
    ]
    if len(found) != 1 or scalar_only_math(found[0]) is not None:
        return
    width = next((w for w in TAIL_WIDTHS if cols >= w), None)
    if width is None:
        return
    try:
        check_vectorizable(found[0], kernel, loop, width)
    except IllegalScheduleError:
        return
    vectorize_tails(s, kernel, loop, cols)


def vectorize_tails(s: Schedule, kernel: str, loop: str, extent: int) -> list[str]:
    """Vectorize ``loop`` of ``extent`` iterations on the ``TAIL_WIDTHS`` vectors,
    each on the tail of the one before; return the loops it made (to unroll)."""
    made = [loop]
    for width in TAIL_WIDTHS:
        if extent < width:
            continue
        s.vectorize(kernel, made[-1], width)
        extent %= width
        if not extent:
            break
        made.append(f"{made[-1]}_tail")
    return made


def _copy_loops(s: Schedule, kernel: str, prefix: str) -> list[str]:
    """The loops ``<prefix>0``, ``<prefix>1``, ... that ``cache_read`` or
    ``cache_write`` made, outermost first."""
    dims = [n[len(prefix) :] for n in s.loops(kernel) if n.startswith(prefix)]
    return [f"{prefix}{d}" for d in sorted(int(d) for d in dims if d.isdigit())]


def _schedule_gemv(s: Schedule, kernel: str, k: int, n: int, threads: int) -> str:
    """One row: ``C[j] += A[k] * B[k, j]`` with j on vectors and k unrolled by
    the first of ``GEMV_UNROLL`` that divides K; with threads, j in as many
    equal parts when they divide N and B is large enough (module docstring)."""
    unroll = next((u for u in GEMV_UNROLL if k % u == 0), 1)
    parts = threads if threads > 1 and n % threads == 0 else 1
    if k * n < GEMV_PARALLEL_MIN_ELEMENTS:
        parts = 1
    j = "j"
    if parts > 1:
        s.split(kernel, "j", n // parts)
        j = "j_i"
    if unroll > 1:
        s.split(kernel, "k", unroll)
        s.reorder(kernel, *(["j_o"] if parts > 1 else []), "k_o", j, "k_i")
        s.unroll(kernel, "k_i", 0)
    elif parts > 1:
        s.reorder(kernel, "j_o", "k", j)
    done = f"one row (GEMV): j on vectors, k unrolled by {unroll}"
    if parts > 1:  # before vectorize: parallel's check does not know vectors
        s.parallel(kernel, "j_o")
        done += f", j in {parts} parts of {n // parts} columns on {threads} threads"
    s.vectorize(kernel, j, WIDTH)
    return done


def _panels(s: Schedule, kernel: str) -> str | None:
    """The name of the rhs the j loop's body reads in column panels
    (``pack-panels``: an index ``j floordiv 32``, which only a 32-wide split of j
    makes plain), ``""`` when it has no name, or None when it reads none."""
    _, j_loop = find_loop(s.module, "default schedule", kernel, "j")
    j = iv(j_loop)
    for op in j_loop.body.walk():
        if not isinstance(op, affine.LoadOp):
            continue
        operands = list(op.indices)
        for e in op.map.data.results:
            if (
                isinstance(e, AffineBinaryOpExpr)
                and e.kind == AffineBinaryOpKind.FloorDiv
                and isinstance(e.lhs, AffineDimExpr)
                and operands[e.lhs.position] is j
                and e.rhs == AffineExpr.constant(PANEL_WIDTH)
            ):
                return op.memref.name_hint or ""
    return None


def _rhs_shared(s: Schedule, kernel: str, batch: list[str]) -> bool:
    """Whether no load that the j loop indexes, but C (B, read in place or in
    panels), depends on the ``batch`` loops: one rhs for every matmul of the
    batch."""
    _, j_loop = find_loop(s.module, "default schedule", kernel, "j")
    j = iv(j_loop)
    ivs = {iv(find_loop(s.module, "default schedule", kernel, b)[1]) for b in batch}
    body = list(j_loop.body.walk())
    written = {id(op.memref) for op in body if isinstance(op, affine.StoreOp)}
    reads_j = [
        op
        for op in body
        if isinstance(op, affine.LoadOp)
        and id(op.memref) not in written
        and j in op.indices
    ]
    return bool(reads_j) and not any(v in ivs for op in reads_j for v in op.indices)


def _reads_at(load: affine.LoadOp, k: SSAValue, j: SSAValue) -> bool:
    """Whether ``load``'s last two indices are exactly ``k`` and ``j`` (not a
    panel-packed rhs's ``j floordiv 32, k, j mod 32``)."""
    results = load.map.data.results
    operands = list(load.indices)
    if len(results) < 2:
        return False
    last = results[-2:]
    return all(
        isinstance(e, AffineDimExpr) and operands[e.position] is v
        for e, v in zip(last, (k, j), strict=True)
    )


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
        name = op.memref.name_hint
        if name is not None and _reads_at(op, k, j):
            same = {id(o.memref) for o in loads if o.memref.name_hint == name}
            memref_type = op.memref.type
            assert isinstance(memref_type, MemRefType)
            layout = memref_type.layout
            contiguous = not isinstance(layout, StridedLayoutAttr) or (
                layout.get_strides()[-1] == 1
            )
            return (name if len(same) == 1 else None), contiguous
    return None, True
