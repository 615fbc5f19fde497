"""The default schedule of an NHWC convolution kernel: a register tile of output
pixels x output channels.

The kernel's main nest is ``n, oh, ow, kh, kw, c, f`` (``lowering/conv_nhwc.py``):
``out[n, oh, ow, f] += x[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * w[kh, kw, c, f]``, a
matmul whose rows are output pixels ``ow``, whose columns are output channels
``f`` and whose reduction is ``kh, kw, c``. The schedule is the matmul recipe
(``qidao/compiler/targets/cpu/defaults/matmul.py``, the ladder's ``cache_write`` rung) on those
loops::

    split ow by TILE_OW (and f by TILE_F when F > TILE_F)
    reorder n, oh, ow_o, [f_o,] kh, kw, c, ow_i, f(_i)   the reduction outside the tile
    cache_write at the tile loop            the TILE_OW x TILE_F tile of out in a
                                            local buffer, read and written back once
    vectorize f(_i) and the copy loops      <16 x float>
    parallel oh                             when threads > 1 and the work pays
                                            (``ow_o`` for one row: ``threaded_loop``)

so each ``c`` step loads ``TILE_F / 16`` vectors of the weight row ``w[kh, kw, c,
:]``, broadcasts ``TILE_OW`` input elements and does ``TILE_OW * TILE_F / 16``
independent multiply-adds (16 for the tiles below: enough to hide the FMA latency,
and with the broadcasts and weight vectors within AVX-512's 32 registers).

When the weights do not stay in L2 (over ``WEIGHTS_OUTER_BYTES``, ResNet-50's last
stages: a 3x3 512 -> 512 holds 9.4 MB) and re-reading the input once per panel of
``TILE_F`` output channels moves fewer bytes than re-reading the weights once per
output row, the panels go outermost instead (``_weights_outer``)::

    reorder n, f_o, oh, ow_o, kh, kw, c, ow_i, f_i     one weight panel, all pixels
    parallel f_o                                       each thread its own panels

and the tile loop is ``ow_o``. Measured (one thread, medians, interleaved, µs,
pixels-outer -> panels-outer): 3x3 512 -> 512 on 7x7 7852 -> 3755, the same at
stride 2 from 14x14 7465 -> 3907, 1x1 1024 -> 2048 at stride 2 7045 -> 3469, 1x1
512 -> 2048 on 7x7 1490 -> 1372, 1x1 256 -> 1024 on 14x14 1869 -> 1717; two threads
2330 -> 1859, 2896 -> 2098, 2156 -> 1681. ResNet-50 at one thread: 92.1 -> 76.8 ms.

``F`` a multiple of 8 but not of 16 (MobileNetV2's 24-, 40- and 56-channel
projections, 1x1) takes the same tile on ``<8 x float>`` vectors: all ``F`` columns
(up to 48; else the widest multiple of 8 that divides it) and the widest pixel
tile of at most 24 accumulators (``_half_tiles``: 8 x 24, 4 x 40). Before, such a
kernel kept its loops. One thread, in a graph with its layout copies (the machine
busy with a test run): 1x1 144 -> 24 on 56x56 640 -> 363 µs (PyTorch 397), 96 ->
24 493 -> 276 µs (310), 144 -> 40 on 28x28 232 -> 150 µs (152).

``F`` not a multiple of 8 (ShuffleNet V2's 58, 116 channels), ungrouped and at
least 16: 16-column panels (``split f``: the last bounded by ``min(16, F - 16
f_o)``), the last panel peeled (``f_o_p``: a copy with constant bounds) onto 16-,
8- and 4-lane vectors and scalars, as the matmul's ragged panel
(``vectorize_tails``); ``OW`` must then be divided by the pixel tile. Before, such a
kernel kept its loops. One thread, a 1x1 convolution + ReLU, µs, qidao vs PyTorch
eager: 116 -> 116 on 14x14 28 vs 55, 58 -> 58 on 28x28 32 vs 59, 24 -> 58 on 56x56
55 vs 105; ShuffleNet V2 (the zoo's ``shufflenet``) 4.10 -> 2.76 ms, 0.54x ->
0.75x ONNX Runtime. From ``RAGGED_WIDE_PANELS`` (64) output channels the panels
are 32 columns wide, and an ``F`` that is a multiple of 8 but not of 16 (232,
200, 104) takes them too instead of ``<8 x float>`` tiles: 112-135 -> 250-260
GFLOP/s (``RAGGED_WIDE_PANELS``'s measurements).

The tile's loops (``ow_i``, ``f_i`` and the copy, init and epilogue loops over the
tile) are left rolled: their trip counts are constants, so LLVM unrolls them fully
and SROA then keeps the accumulators in registers. Unrolling them in the schedule
(``unroll`` by 0, as this schedule did) gave the same machine code after -O3 (the
same FMAs, loads and stores, no ``alloca``; checked on 3x3 64 -> 64 at 56x56, 3x3
128 -> 128 at 28x28 and 1x1 64 -> 256) and cost compile time: Python clones of the
tile's body in every stage below. A 1x1 256 -> 64 kernel compiled in 0.22 s
instead of 0.72, and ResNet-50's schedule stage takes 0.7-0.9 s instead of 2.8.

Measured (one thread, AMD EPYC znver5, a 3x3 convolution 64 -> 64 channels on
56x56, padding materialized by ``materialize-padding``): tile 4 x 64 0.92-0.95 ms,
8 x 32 0.94 ms, 14 x 32 0.96 ms, 4 x 32 1.14 ms, 7 x 64 and 2 x 64 1.26-1.29 ms,
8 x 64 (32 accumulators: spills) 1.49 ms; the untiled kernel 2.85 ms.

A grouped convolution (RegNet's: groups of ``Fg = 16`` output channels) has the
nest ``n, oh, ow, kh, kw, g, c, f``: ``c`` runs over one group's ``Cg`` input
channels (input channel ``g * Cg + c``), ``f`` over its ``Fg`` output channels
(``g * Fg + f`` in ``out`` and ``w``). The same tile runs per group, ``g`` outside
the reduction, so a group's ``Fg`` output channels are the tile's columns::

    split ow by TILE_OW (and f by TILE_F when Fg > TILE_F)
    reorder n, oh, ow_o, g, [f_o,] kh, kw, c, ow_i, f(_i)
    compute_at, cache_write at g (f_o), vectorize, parallel as above

with the tile from ``TILES`` for ``Fg`` (16: one vector, ``TILE_OW`` of 4 to 8
accumulators). When ``Fg > TILE_F`` (``Fg`` 128) a tile's channels are ``g * Fg +
f_o * TILE_F``, two loops in one index, which ``compute_at`` cannot take: the
init and epilogue nests then stay whole nests of their own and ``cache_write``
copies the tile in. Measured (one thread, the same machine but busy: 2 cores shared
with other runs; medians of 7 interleaved rounds, twice; us for the kernel and the
``tg.pad`` that ``materialize-padding`` adds, relu included; ``C@HxW/stride``, 3x3,
padding 1, Fg 16 unless said), the kernel as lowered (the padding test in, LLVM
vectorizes ``f``) vs this tile vs PyTorch 2.13's ``conv2d(groups=)``:

| shape (RegNet's first five)  | lowered | tile (of it the pad) | torch   |
|------------------------------|---------|----------------------|---------|
| 32@56x56/2 groups 2          | 142-154 | 72-73 (9)            | 138-176 |
| 64@28x28/2 groups 4          | 61-73   | 36-38 (5)            | 95-143  |
| 128@14x14/2 groups 8         | 31-35   | 18 (2)               | 79-102  |
| 128@7x7/1 groups 8           | 28-29   | 16 (1)               | 75-84   |
| 256@7x7/2 groups 16          | 16-18   | 12-15 (2)            | 76-102  |
| 64@14x14/1 groups 4          | 58      | 32 (1)               | 96-101  |
| 160@14x14/1 groups 10        | 155-204 | 80-93 (3-5)          | 156-242 |
| 400@7x7/1 groups 25          | 92-114  | 54 (3)               | 140-181 |
| 64@28x28/2 groups 2, Fg 32   | 123-135 | 67-70 (5)            | 143-166 |
| 128@14x14/1 groups 4, Fg 32  | 243-266 | 128-131 (3)          | 237-264 |

so ~100-110 GFLOP/s against 45-65 as lowered, what the dense tile did at the same
time (64 -> 64 on 14x14: 114 GFLOP/s). Tile widths for ``Fg`` 16 on 32@56x56/2 (``OW``
28): 4, 7 and 14 pixels 62 us each, 2 pixels 102 us. RegNet (regnet-opset17, one
thread, three runs): 815 -> 686, 887 -> 761 and 763 -> 580 us in all, its grouped
convolutions 40% -> 28% of it. With 2 threads the kernels of at least
``PARALLEL_MIN_FLOPS`` split ``oh``: 32@56x56/2 142-167 -> 32-54 us for the
kernel, 160@14x14/1 164-202 -> 41-78 (noisy: the other core was busy).

The schedule applies only to the shape it knows (``schedule_conv`` returns None
and changes nothing otherwise): the loops ``n, oh, ow, kh, kw, [g,] c, f``
perfectly nested down to ``c`` (no padding test between the window and the
channel loops: ``materialize-padding`` removes it; no init loop inside ``ow``),
``F`` (``Fg``) a multiple of 8 (or, ungrouped, at least 16: below) and ``OW``
more than the narrowest tile width.
When no width divides ``OW`` (wav2vec2's feature extractor: 1599, 799 and 399
output steps), the first tile that fits is taken and its last, narrower tile
peeled (``peel ow_o``: a copy ``ow_o_t`` with constant bounds), each part with its
own ``cache_write`` and vectors; an epilogue that must run after the write-back
(a swish) then stays a nest of its own. Measured (one thread, Xeon, medians): a
1-D convolution 256 -> 256, kernel 3, stride 2, 1599 -> 799 steps, 4.40 ms as
lowered -> 2.10 ms (399 steps: 1.16 -> 0.57 ms); wav2vec2 0.72x -> 0.94x ONNX
Runtime, WavLM 0.74x -> 0.92x, HuBERT 0.79x -> 0.99x.
The init nest (``out = bias``, ``n_init, ...``) and the epilogue nest
(``n_epi, ...``) move into the tile with ``compute_at`` before ``cache_write``, so
they too work on the accumulators; an epilogue with an ``exp``, ``tanh``, ``log``
or ``erf`` (a swish) moves in after it, onto ``out``, and stays scalar loops for
LLVM to vectorize (see ``_side_nests``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import affine

from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.matmul import PANEL, vectorize_tails
from qidao.passes.cpu.expand_math import scalar_only_math
from qidao.passes.schedule.loops.nest import (
    body_ops,
    kernel_functions,
    loop_name,
    nested_child,
)

WIDTH = 16
HALF = 8
"""``<8 x float>``: the vectors of a tile whose ``F`` is a multiple of 8 but not of
16 (MobileNetV2's 24-channel projections)."""
"""Lanes of one ``<16 x float>`` register."""

TILES: tuple[tuple[int, int], ...] = (
    (32, 8),
    (64, 4),
    (32, 7),
    (32, 6),
    (64, 3),
    (32, 5),
    (32, 4),
    (64, 2),
    (16, 8),
    (16, 7),
    (16, 6),
    (16, 5),
    (16, 4),
)
"""``(TILE_F, TILE_OW)`` in order of preference (measured, see above; ``pick_tile``
takes one). All keep 8 to 16 accumulators. 8 x 32 and 4 x 64 tie on a 3x3 64 ->
64 (0.94 and 0.92-0.95 ms); on a reduction of 768 (kernel 3 over 256 channels,
wav2vec2's) 8 x 32 loads half the weights per multiply-add and won: 799 steps
1.36 -> 1.20 ms, 1599 steps (peeled) 2.62 -> 2.38 ms."""

RAGGED_WIDE_PANELS = 64
"""From this many output channels (ungrouped) an ``F`` that is not a multiple of 16
takes 32-column panels of ``<16 x float>`` vectors (two per pixel), the last one
peeled onto 16-, 8- and 4-lane vectors and scalars, instead of 16-column panels
(F not a multiple of 8) or ``<8 x float>`` tiles (F a multiple of 8). One
thread, a 1x1 convolution + ReLU on 14x14 (on 28x28), GFLOP/s: 116 -> 116 178 ->
245 (154 -> 239); 232 -> 232 112 -> 255, 128 -> 104 112 -> 251, 128 -> 200 135
-> 258, 128 -> 248 114 -> 262. ShuffleNet V2's 116- and 232-channel stages."""

MIN_TILE_OW = 4
"""The fewest pixels of a tile taken before a peeled one (``pick_tile``)."""

MAIN = ("n", "oh", "ow", "kh", "kw", "c", "f")
"""The main nest of an NHWC convolution kernel, outer to inner."""

GROUPED = ("n", "oh", "ow", "kh", "kw", "g", "c", "f")
"""The main nest of a grouped one: ``c`` and ``f`` run over one group's channels."""

WEIGHTS_OUTER_BYTES = 512 * 1024
"""Weights up to this size stay in L2 (1 MiB here) across output rows."""

PARALLEL_MIN_FLOPS = 2 * 64**3
"""Below ~0.5 MFLOP (~5 µs on one core) waking a spinning worker (~1 µs) and
splitting the rows costs more than it saves."""


def schedule_conv(s: Schedule, kernel: str, threads: int) -> str | None:
    """Register-tile the NHWC convolution ``kernel`` (see the module docstring) and
    say how; None, with nothing changed, when its loops are not the shape the tile
    takes."""
    extents = _conv_extents(s, kernel)
    if extents is None:
        return None
    grouped = "g" in extents
    f, ow = extents["f"], extents["ow"]
    wide = f >= RAGGED_WIDE_PANELS and not grouped
    panel = 2 * WIDTH if wide else WIDTH
    # F ragged (not a multiple of 8; or of 16, from RAGGED_WIDE_PANELS channels):
    # the last panel's columns
    cols = f % panel if f % WIDTH and (f % HALF or wide) else 0
    if cols and (grouped or f < WIDTH):
        return None
    width = WIDTH if f % WIDTH == 0 or cols else HALF
    tiles = TILES if width == WIDTH else _half_tiles(f)
    if cols:  # 16- or 32-column panels, the last one peeled; OW divided whole
        tiles = tuple((panel, tw) for tf, tw in TILES if tf == panel)
    tile = pick_tile(tiles, f, ow, peel=not cols)
    if tile is None:
        return None
    tile_f, tile_ow = tile
    ragged = ow % tile_ow  # pixels in the last tile, peeled into ow_o_t
    group = ("g",) if grouped else ()

    parallel = threads > 1 and 2 * math.prod(extents.values()) >= PARALLEL_MIN_FLOPS
    threaded = ""  # the loop that runs on the threads
    s.split(kernel, "ow", tile_ow)
    weights_outer = (
        not grouped and not cols and tile_f < f and _weights_outer(extents, tile_f)
    )
    if weights_outer:  # a panel of the weights stays in L2 for every pixel
        s.split(kernel, "f", tile_f)
        s.reorder(kernel, "n", "f_o", "oh", "ow_o", "kh", "kw", "c", "ow_i", "f_i")
        tile_loop, vector_loop = "ow_o", "f_i"
        if parallel and f // tile_f >= threads:  # each thread its own panels; before
            s.parallel(
                kernel, "f_o"
            )  # cache_write, whose write-back parallel cannot read
            parallel, threaded = False, "f_o"
    elif tile_f < f:
        s.split(kernel, "f", tile_f)
        s.reorder(
            kernel, "n", "oh", "ow_o", *group, "f_o", "kh", "kw", "c", "ow_i", "f_i"
        )
        tile_loop, vector_loop = "f_o", "f_i"
    else:
        s.reorder(kernel, "n", "oh", "ow_o", *group, "kh", "kw", "c", "ow_i", "f")
        tile_loop, vector_loop = ("g" if grouped else "ow_o"), "f"
    nests, late = _side_nests(s, kernel)
    if grouped and tile_f < f:  # a tile's channels g * Fg + f_o * TILE_F: two
        nests, late = [], []  # loops in one index, which compute_at cannot take
    if ragged:  # one tile loop per part: a late nest stays a nest of its own
        late = []
    for nest in nests:  # the init (bias) and epilogue nests, onto the tile
        s.compute_at(kernel, nest, tile_loop)
    parts = [""]
    if ragged:  # the last, narrower tile in a copy with constant bounds
        parts.append(s.peel(kernel, "ow_o").removeprefix("ow_o"))
    if cols:  # split's min(16, F - 16 f_o): the last panel in a copy, f_o_p
        parts.append(s.peel(kernel, "f_o", PANEL).removeprefix("f_o"))
    for part in parts:
        columns = cols if part == PANEL else width

        def vectors(loop: str, columns: int = columns) -> None:
            if columns == width:
                s.vectorize(kernel, loop, width)
            else:  # the ragged panel: 16, 8 and 4 lanes, then scalars
                vectorize_tails(s, kernel, loop, columns)

        s.cache_write(kernel, tile_loop + part)
        for nest in late:  # after the write-back, on the tile of out, as loops
            s.compute_at(kernel, nest, tile_loop)
        vectors(vector_loop + part)
        # the copy loops (none in when an init nest fills the tile), then the
        # init/epilogue loops over the tile: n, oh, ow, f; f last
        names = s.loops(kernel)
        for kind in ("cw", "wb"):
            prefix = f"{tile_loop}{part}_{kind}_i"
            copy = [name for name in names if name.startswith(prefix)]
            if copy:
                vectors(copy[-1])
        for nest in nests:
            vectors(f"f_{nest.removeprefix('n_')}{part}")
    # not unrolled here: every loop of the tile has a constant trip count, and
    # LLVM unrolls them fully and keeps the accumulators in registers itself

    if parallel:
        threaded = threaded_loop(extents, ow // tile_ow, threads)
        s.parallel(kernel, threaded)
    done = "register tile of output pixels x output channels"
    if ragged:
        done += f", the last {ragged} pixels in a peeled tile (ow_o_t)"
    if cols:
        done += f", the last {cols} output channels in a peeled panel (f_o{PANEL})"
    if weights_outer:
        done += (
            f", panels of {tile_f} output channels outermost (the weights, "
            f"{_weight_bytes(extents) / 2**20:.1f} MiB, do not stay in L2)"
        )
    return f"{done}, {threaded} on {threads} threads" if threaded else done


def threaded_loop(extents: dict[str, int], tiles: int, threads: int) -> str:
    """The loop the threads split: ``oh`` when it has an iteration per thread,
    else ``n`` when the batch has, else the loop over the pixel tiles ``ow_o``
    (``tiles`` of them, the peeled one aside). A 1-D convolution is a 2-D one of
    height 1: wav2vec2's feature extractor (``N = OH = 1``, 1599 steps) ran its
    seven convolutions on one thread when its ``n`` loop, of one iteration, was
    the parallel one (the first: 2.51 ms at one thread, 2.58 at two; split on
    ``ow_o``, 1.39 at two)."""
    if extents["oh"] >= threads:
        return "oh"
    if extents["n"] >= threads or tiles < threads:
        return "n"
    return "ow_o"


def pick_tile(
    tiles: Sequence[tuple[int, int]], f: int, ow: int, peel: bool
) -> tuple[int, int] | None:
    """The tile ``(TILE_F, TILE_OW)``: the first of ``tiles`` whose ``TILE_F``
    divides ``F`` and whose ``TILE_OW`` of at least ``MIN_TILE_OW`` pixels divides
    ``OW``; else (with ``peel``) the first such tile narrower than ``OW``, its last
    tile peeled; else the first that divides ``OW`` at all (``OW`` of 2 or 3).

    A tile of fewer pixels reloads the weights more often: each reduction step
    loads ``TILE_F`` weights for ``TILE_OW * TILE_F / 16`` multiply-adds. Where
    only a narrow tile divides ``OW`` (1599 = 3 x 13 x 41 steps, wav2vec2's
    first 256-channel convolution), the 3-pixel tile took 3.48 ms and the 8-pixel
    one with its last 7 pixels peeled 2.38 ms (one thread, 256 -> 256, kernel 3,
    stride 2; the next ones, 799 and 399 steps: 1.36 -> 1.20 and 0.62 -> 0.61)."""
    fits = [(tf, tw) for tf, tw in tiles if f % tf == 0 or not peel]
    for wide, ragged in ((True, False), (True, True), (False, False)):
        for tf, tw in fits:
            if wide and tw < MIN_TILE_OW:
                continue
            if ragged and peel and tw < ow:
                return tf, tw
            if not ragged and ow % tw == 0 and tw <= ow:
                return tf, tw
    return None


def _weight_bytes(extents: dict[str, int]) -> int:
    """The bytes of the weights one convolution (one group's, when grouped) reads."""
    return 4 * extents["kh"] * extents["kw"] * extents["c"] * extents["f"]


def _weights_outer(extents: dict[str, int], tile_f: int) -> bool:
    """Whether the output-channel panels go outside the pixels (``n, f_o, oh,
    ow_o, ...``): the weights do not stay in L2 (``WEIGHTS_OUTER_BYTES``) and
    re-reading the input once per panel moves fewer bytes than re-reading the
    weights once per output row (module docstring)."""
    weights = _weight_bytes(extents)
    if weights <= WEIGHTS_OUTER_BYTES:
        return False
    # the input a 1x1 convolution reads (a 3x3 at stride 1: about that)
    inputs = 4 * extents["oh"] * extents["ow"] * extents["c"]
    return inputs * (extents["f"] // tile_f) < weights * extents["oh"]


def _half_tiles(f: int) -> list[tuple[int, int]]:
    """``(TILE_F, TILE_OW)`` for ``F`` a multiple of 8 but not of 16, on
    ``<8 x float>`` vectors: all ``F`` columns when they fit in 6 vectors (else
    the widest multiple of 8 up to 48 that divides F), then the widest pixel tile
    that keeps at most 24 accumulators (of AVX-512's 32 registers)."""
    tile_f = f if f <= 48 else max(t for t in range(8, 49, 8) if f % t == 0)
    vectors = tile_f // HALF
    return [(tile_f, tw) for tw in range(8, 1, -1) if vectors * tw <= 24]


def _side_nests(s: Schedule, kernel: str) -> tuple[list[str], list[str]]:
    """The outermost loops of the init and epilogue nests, when they are top-level
    nests of their own (``n_init``, ``n_epi``): they then run per tile, on the
    accumulators, instead of over the whole output. Second, apart: an epilogue
    that holds a math op ``expand-math`` writes out on scalars only (the sigmoid of
    a swish): it runs per tile after the write-back, on ``out`` while the tile is
    in L1, as scalar loops that LLVM vectorizes (on the accumulators it would be
    unrolled onto vectors, and a vector ``math.exp`` is one libm call per lane: a
    1x1 convolution 16 -> 96 on 64x64 with a swish took 2.05 ms, 0.56 ms so)."""
    fn = kernel_functions(s.module)[kernel]
    top = {
        loop_name(op): op for op in fn.body.block.ops if isinstance(op, affine.ForOp)
    }
    nests: list[str] = [name for name in ("n_init", "n_epi") if name in top]
    late = [name for name in nests if scalar_only_math(top[name]) is not None]
    return [name for name in nests if name not in late], late


def _conv_extents(s: Schedule, kernel: str) -> dict[str, int] | None:
    """The extents of the main nest's loops (``MAIN``, or ``GROUPED`` with ``g``),
    when the kernel has that nest perfectly nested down to ``c`` (so ``reorder``
    can move the tile loops past the window loops) with constant bounds and ``F``
    otherwise None."""
    loops = s.loops(kernel)
    first = next((i for i, name in enumerate(loops) if name == MAIN[0]), None)
    if first is None:
        return None
    nest = next(
        (n for n in (MAIN, GROUPED) if tuple(loops[first : first + len(n)]) == n),
        None,
    )
    if nest is None:
        return None
    fn = kernel_functions(s.module)[kernel]
    loop = next(
        op
        for op in fn.walk()
        if isinstance(op, affine.ForOp) and loop_name(op) == nest[0]
    )
    for name in nest[1:-1]:  # n .. kw (.. g) each hold exactly the next loop
        child = nested_child(loop)
        if child is None or loop_name(child) != name:
            return None
        loop = child
    # c holds the input load and f: nothing else the reorder could not sink
    inner = [op for op in body_ops(loop) if isinstance(op, affine.ForOp)]
    if len(inner) != 1 or loop_name(inner[0]) != "f":
        return None
    sizes = s.extents(kernel)
    extents = {name: sizes[name] for name in nest}
    known = {name: size for name, size in extents.items() if size is not None}
    if len(known) != len(nest):
        return None
    return known
