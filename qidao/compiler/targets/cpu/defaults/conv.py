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
    unroll ow_i, f(_i) and the copy loops   the tile stays in vector registers
    parallel oh                             when threads > 1 and the work pays

so each ``c`` step loads ``TILE_F / 16`` vectors of the weight row ``w[kh, kw, c,
:]``, broadcasts ``TILE_OW`` input elements and does ``TILE_OW * TILE_F / 16``
independent multiply-adds (16 for the tiles below: enough to hide the FMA latency,
and with the broadcasts and weight vectors within AVX-512's 32 registers).

Measured (one thread, AMD EPYC znver5, a 3x3 convolution 64 -> 64 channels on
56x56, padding materialized by ``materialize-padding``): tile 4 x 64 0.92-0.95 ms,
8 x 32 0.94 ms, 14 x 32 0.96 ms, 4 x 32 1.14 ms, 7 x 64 and 2 x 64 1.26-1.29 ms,
8 x 64 (32 accumulators: spills) 1.49 ms; the untiled kernel 2.85 ms.

The schedule applies only to the shape it knows (``schedule_conv`` returns False
and changes nothing otherwise): the loops ``n, oh, ow, kh, kw, c, f`` perfectly
nested down to ``c`` (no padding test between the window and the channel loops:
``materialize-padding`` removes it; no group loop ``g``; no init loop inside
``ow``), ``F`` a multiple of 16 and ``OW`` a multiple of one of the tile widths.
The init nest (``out = bias``, ``n_init, ...``) and the epilogue nest
(``n_epi, ...``) move into the tile with ``compute_at`` before ``cache_write``, so
they too work on the accumulators.
"""

from __future__ import annotations

import math

from xdsl.dialects import affine

from qidao.compiler.schedule import Schedule
from qidao.passes.schedule.loops.nest import (
    body_ops,
    kernel_functions,
    loop_name,
    nested_child,
)

WIDTH = 16
"""Lanes of one ``<16 x float>`` register."""

TILES: tuple[tuple[int, int], ...] = (
    (64, 4),
    (32, 8),
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
"""``(TILE_F, TILE_OW)`` in order of preference (measured, see above): the first
whose ``TILE_F`` divides ``F`` and ``TILE_OW`` divides ``OW`` is taken. All keep
8 to 16 accumulators."""

MAIN = ("n", "oh", "ow", "kh", "kw", "c", "f")
"""The main nest of an NHWC convolution kernel, outer to inner."""

PARALLEL_MIN_FLOPS = 2 * 128**3
"""Below ~4 MFLOP (~20 µs on one core) waking a worker costs more than it saves."""


def schedule_conv(s: Schedule, kernel: str, threads: int) -> bool:
    """Register-tile the NHWC convolution ``kernel`` (see the module docstring);
    False, with nothing changed, when its loops are not the shape the tile takes."""
    extents = _conv_extents(s, kernel)
    if extents is None:
        return False
    f, ow = extents["f"], extents["ow"]
    tile = next(
        ((tf, tw) for tf, tw in TILES if f % tf == 0 and ow % tw == 0 and tw <= ow),
        None,
    )
    if tile is None:
        return False
    tile_f, tile_ow = tile

    s.split(kernel, "ow", tile_ow)
    if tile_f < f:
        s.split(kernel, "f", tile_f)
        s.reorder(kernel, "n", "oh", "ow_o", "f_o", "kh", "kw", "c", "ow_i", "f_i")
        tile_loop, vector_loop = "f_o", "f_i"
    else:
        s.reorder(kernel, "n", "oh", "ow_o", "kh", "kw", "c", "ow_i", "f")
        tile_loop, vector_loop = "ow_o", "f"
    nests = _side_nests(s, kernel)
    for nest in nests:  # the init (bias) and epilogue nests, onto the tile
        s.compute_at(kernel, nest, tile_loop)
    s.cache_write(kernel, tile_loop)
    s.vectorize(kernel, vector_loop, WIDTH)
    # the copy loops (cache_write leaves out the copy-in when the init nest fills
    # the tile) and the init/epilogue loops over the tile: n, oh, ow, f; f last
    names = s.loops(kernel)
    groups = [
        [name for name in names if name.startswith(f"{tile_loop}_{kind}_i")]
        for kind in ("cw", "wb")
    ]
    groups += [
        [f"{dim}_{nest.removeprefix('n_')}" for dim in ("n", "oh", "ow", "f")]
        for nest in nests
    ]
    for loops in (group for group in groups if group):
        s.vectorize(kernel, loops[-1], WIDTH)
        for loop in reversed(loops):
            s.unroll(kernel, loop, 0)
    s.unroll(kernel, vector_loop, 0)
    s.unroll(kernel, "ow_i", 0)

    flops = 2 * math.prod(extents[name] for name in MAIN)
    if threads > 1 and flops >= PARALLEL_MIN_FLOPS:
        outer = "oh" if extents["oh"] >= threads else "n"
        s.parallel(kernel, outer)
    return True


def _side_nests(s: Schedule, kernel: str) -> list[str]:
    """The outermost loops of the init and epilogue nests, when they are top-level
    nests of their own (``n_init``, ``n_epi``): they then run per tile, on the
    accumulators, instead of over the whole output."""
    fn = kernel_functions(s.module)[kernel]
    top = [loop_name(op) for op in fn.body.block.ops if isinstance(op, affine.ForOp)]
    return [name for name in ("n_init", "n_epi") if name in top]


def _conv_extents(s: Schedule, kernel: str) -> dict[str, int] | None:
    """The extents of the main nest's loops, when the kernel has the nest
    ``n, oh, ow, kh, kw, c`` perfectly nested (so ``reorder`` can move the tile
    loops past the window loops) with constant bounds and ``F`` a multiple of 16;
    otherwise None."""
    loops = s.loops(kernel)
    first = next((i for i, name in enumerate(loops) if name == MAIN[0]), None)
    if first is None or tuple(loops[first : first + len(MAIN)]) != MAIN:
        return None
    fn = kernel_functions(s.module)[kernel]
    loop = next(
        op
        for op in fn.walk()
        if isinstance(op, affine.ForOp) and loop_name(op) == MAIN[0]
    )
    for name in MAIN[1:-1]:  # n .. kw each hold exactly the next loop
        child = nested_child(loop)
        if child is None or loop_name(child) != name:
            return None
        loop = child
    # c holds the input load and f: nothing else the reorder could not sink
    inner = [op for op in body_ops(loop) if isinstance(op, affine.ForOp)]
    if len(inner) != 1 or loop_name(inner[0]) != "f":
        return None
    sizes = s.extents(kernel)
    extents = {name: sizes[name] for name in MAIN}
    known = {name: size for name, size in extents.items() if size is not None}
    if len(known) != len(MAIN) or known["f"] % WIDTH:
        return None
    return known
