"""Default GPU schedules of the kernel kinds beyond matmul, rows and elementwise:
convolutions, pools, and reductions over axes before the last.

Registered by kind in ``defaults.SCHEDULERS`` (``qidao.compiler.defaults.kind_of``
names the kind); like the other defaults they are made of schedule primitives, so
``compiled.stats["schedule"]`` replays them, and each top-level nest (one launch)
is scheduled on its own: what it got, or ``"none: <reason>"``, is one entry of
``stats["default_schedule"]``. The rule is the same for every kind: **a thread per
output element**, the innermost output dimension on ``threadIdx.x`` (neighbouring
threads write neighbouring addresses: coalesced), the reductions serial in the
thread, accumulated in a register (``cache_write``) where the loops allow it:

============  =====================================================================
kind          default (``per_output`` on each nest unless said)
============  =====================================================================
conv2d        NHWC ``n, oh, ow, kh, kw, c, f``: ``reorder(n, oh, ow, f, kh, kw,
              c)``, ``f`` on ``threadIdx.x`` (with ``ow`` on ``threadIdx.y``
              when ``F`` is short of a block), the rest on ``blockIdx``,
              ``cache_write(f)``: the sum over ``kh, kw, c`` in a register, one
              store. The same for 1x1 and strided convs, grouped ones (``g``
              kept beside ``f``) and depthwise ones (``n, cb, oh, ow, kh, kw,
              c``: ``c``, the channel in its block of 16, on ``threadIdx.x``).
              A padded conv that ``materialize-padding`` left alone keeps its
              padding test (``affine.if``) between the window loops and the
              channel loops, which no primitive moves: the pixels go on the grid
              and the kept loops inside the test (``f``, after ``reorder(f,
              c)``; a depthwise ``c``) on the threads, the sum over ``c`` in a
              register for each window tap. The bias (init) and epilogue nests:
              a thread per element.
pool          NHWC pools (``n, oh, ow`` around the channel loops ``c_init``,
              ``c`` inside ``kh, kw`` and the window test, ``c_norm``: sibling
              loops, which no ``reorder`` brings out of the window) with at
              least ``POOL_MIN_CHANNELS`` channels: the pixels on ``blockIdx``
              (and ``threadIdx.y`` when no window test reads them) and the
              channel loops block-stride loops (``block_stride``) of ``T``
              threads, ``T`` the channels rounded up to a warp (at most 256): a
              thread per output element, a warp reading 32 neighbouring
              channels. With fewer channels, a thread per output pixel, its
              channels serial. NCHW pools (a lone pool; the window innermost): a
              thread per output element, the window in a register.
reduce        ``rows`` kernels that keep their last axis inside the reduction
              (an NHWC global pool: ``i0, r0, r1, i1``, no ``iter_args``; see
              ``is_reduce_kernel``): ``reorder(i0, i1, r0, r1)``, a thread per
              output element, the sum in a register. Every other ``rows`` kernel
              goes to the row scheduler it wraps (``reduce_or``).
============  =====================================================================

Gathers (``take``, ``gather``, embeddings), transposes, concats and slices are
``elementwise`` kernels: their nests write one output element per iteration of
their loops in the output's order, and ``schedule_elementwise`` puts the
innermost on ``threadIdx.x`` (``tests/compiler/targets/cuda/test_default_kinds.py``
checks that the last index of every store moves with ``threadIdx.x``).

Before (a 3x3 conv, 8 -> 16 channels, 2x6x6 -> 2x4x4), the product nest::

    for n in 2, oh in 4, ow in 4, kh in 3, kw in 3, c in 8:
      for f in 16:
        out[n, oh, ow, f] += x[n, oh + kh, ow + kw, c] * w[kh, kw, c, f]

After (``s.reorder(K, "n", "oh", "ow", "f", "kh", "kw", "c")``; ``s.bind`` of ``n
-> blockIdx.y``, ``oh -> blockIdx.x``, ``ow -> threadIdx.y``, ``f ->
threadIdx.x``; ``s.cache_write(K, "f")``)::

    n = blockIdx.y; oh = blockIdx.x; ow = threadIdx.y; f = threadIdx.x
    acc = out[n, oh, ow, f]                       // the bias, from the init launch
    for kh, kw, c: acc += x[n, oh + kh, ow + kw, c] * w[kh, kw, c, f]
    out[n, oh, ow, f] = acc

A nest whose loops do not fit keeps what applied, and its report says what and
why: a reorder the legality check refuses leaves the band as lowered (its kept
prefix on the grid, a kept innermost loop such as ``f`` on ``threadIdx.x``, the
sum in memory); a ``cache_write`` refused leaves the sum in memory. A nest whose
loops all run once is ``"none: ..."`` and runs ``<<<1, 1>>>``.

The loops are read with ``loop_reading.py`` (shared with ``defaults.py``, which
imports this module to register its schedulers). ``bind_grid`` differs from
``defaults.py``'s ``bind_nest`` where these kinds need it: its thread loop need not
be in the band of the loops around it (a conv's ``f`` inside its padding test), the
loops bound around a loop are held when checking it (a depthwise ``c`` writes ``16
cb + c``), and with more block loops than block axes, the shortest stay serial
rather than the outermost.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from xdsl.dialects import affine

from qidao.compiler.defaults import NotApplicable, attempt, is_lone_reduction
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.loop_reading import (
    band,
    each_nest,
    extent,
    is_parallel,
    loop_of,
    nests,
    only_loop,
    unroll_single_trips,
)
from qidao.passes.schedule.bind import MAX_GRID_DIM
from qidao.passes.schedule.loops.nest import (
    iv,
    kernel_functions,
    loop_name,
)

__all__ = [
    "POOL_MIN_CHANNELS",
    "THREADS",
    "bind_grid",
    "is_reduce_kernel",
    "per_output",
    "per_output_or_plain",
    "reduce_or",
    "schedule_conv",
    "schedule_pool",
    "schedule_reduce",
]

THREADS = 256
"""Threads per block: ``threadIdx.x`` (and ``threadIdx.y`` when the innermost
output dimension is shorter) fill up to this many."""
POOL_MIN_CHANNELS = 32
"""An NHWC pool with at least a warp of channels deals them out to threads."""
POOL_THREADS = 256
"""The most threads of a pool's block-stride channel loops."""

Scheduler = Callable[[Schedule, str], str]

# --- reading the loops ----------------------------------------------------------------


def guarded_band(s: Schedule, kernel: str, last: str) -> list[str]:
    """The band inside the test that is the whole body of loop ``last`` (a padded
    conv's ``if (tap inside the input) { for c { for f ... } }``, nothing when the
    test is false), or ``[]`` when the body is anything else."""
    ops = [op for op in loop_of(s, kernel, last).body.block.ops]
    if len(ops) != 2 or not isinstance(ops[0], affine.IfOp):
        return []
    test = ops[0]
    if any(not isinstance(op, affine.YieldOp) for op in test.else_region.ops):
        return []
    inner = only_loop(list(test.then_region.ops))
    if inner is None:
        return []
    return band(s, kernel, str(loop_name(inner)))


def _kept(
    s: Schedule, kernel: str, loops: list[str], fixed: tuple[str, ...] = ()
) -> list[str]:
    """The loops of ``loops`` (outer first) that are parallel with ``fixed`` and
    the kept loops before them held (each kept loop will be bound around the
    next): the output dimensions. A depthwise conv's channel ``c`` is one once its
    channel block ``cb`` is held: it writes ``out[.., 16 cb + c]``."""
    kept: list[str] = []
    for name in loops:
        if is_parallel(s, kernel, name, (*fixed, *kept)):
            kept.append(name)
    return kept


# --- the grid -------------------------------------------------------------------------


def bind_grid(
    s: Schedule, kernel: str, outer: list[str], inner: str, threads: int = THREADS
) -> tuple[str, str]:
    """Bind ``inner`` to ``threadIdx.x`` (split by ``threads`` when longer, its
    outer part on ``blockIdx.x``) and ``outer`` (loops around it, outer first) to
    the block axes, innermost first; when ``inner`` is at most half a block, the
    loop around it (split as needed) fills the block on ``threadIdx.y``. Loops of
    one iteration stay serial, and so do outer loops beyond the three block axes.
    Returns the bindings as text and the name of the ``threadIdx.x`` loop."""
    outer = list(outer)
    n = extent(s, kernel, inner)
    axes: dict[str, str] = {}
    free = ["blockIdx.x", "blockIdx.y", "blockIdx.z"]
    if n > threads:
        block, thread = s.split(kernel, inner, threads)
        axes[block] = free.pop(0)
    else:
        thread = inner
        if outer and n <= threads // 2:
            y = outer[-1]
            rows, per = extent(s, kernel, y), max(1, threads // n)
            if rows > per:
                y_o, y_i = s.split(kernel, y, per)
                outer[-1] = y_o
                axes[y_i] = "threadIdx.y"
            elif rows > 1:
                outer.pop()
                axes[y] = "threadIdx.y"
    axes[thread] = "threadIdx.x"
    axes.update(block_axes(s, kernel, outer, free))
    order = s.loops(kernel)
    bound = sorted(axes, key=order.index)  # outer first: each bind sees the loops
    for name in bound:  # around it fixed
        s.bind(kernel, name, axes[name])
    return ", ".join(f"{name} -> {axes[name]}" for name in bound), thread


def block_axes(
    s: Schedule, kernel: str, loops: list[str], free: list[str]
) -> dict[str, str]:
    """The ``free`` block axes for ``loops`` (outer first): loops of one iteration
    left out; when more loops than axes remain, the shortest stay serial (each
    thread runs them); the rest take ``free`` innermost first, within each
    axis's limit (a loop over the ``blockIdx.y``/``z`` limit of 65535 takes
    ``x`` when it is free, else stays serial)."""
    extents = {name: extent(s, kernel, name) for name in loops}
    wanted = [name for name in loops if extents[name] > 1]
    if len(wanted) > len(free):
        longest = sorted(wanted, key=lambda n: -extents[n])[: len(free)]
        wanted = [name for name in wanted if name in longest]
    axes: dict[str, str] = {}
    free = list(free)
    for name in reversed(wanted):
        axis = next((a for a in free if extents[name] <= MAX_GRID_DIM[a[-1]]), None)
        if axis is not None:
            free.remove(axis)
            axes[name] = axis
    return axes


# --- a thread per output element ------------------------------------------------------


def _kept_first(
    s: Schedule,
    kernel: str,
    loops: list[str],
    fixed: tuple[str, ...] = (),
    reorder: bool = True,
) -> tuple[list[str], list[str], str]:
    """Split ``loops`` (a band) into the kept output dimensions (``_kept``) and
    the rest (reductions), and reorder the band to kept-then-reduced when a kept
    loop sits inside a reduction loop. Returns (kept, the band's order now,
    note). When the reorder is refused the band stays as it was, and kept is its
    kept prefix and, when it is kept too, its innermost loop (a conv's ``f``
    inside ``kh, kw, c``: a thread each, accumulating in memory); the note says
    why."""
    kept = _kept(s, kernel, loops, fixed)
    reduced = [name for name in loops if name not in kept]
    if not kept or not reduced or loops == kept + reduced:
        return kept, kept + reduced, ""

    def kept_out() -> str:
        s.reorder(kernel, *kept, *reduced)
        return f"reorder({', '.join(kept + reduced)})"

    done = attempt(s, kernel, kept_out) if reorder else "none: not reordered"
    if not done.startswith("none: "):
        return kept, kept + reduced, done
    prefix: list[str] = []
    for name in loops:
        if name not in kept:
            break
        prefix.append(name)
    if loops[-1] in kept and loops[-1] not in prefix:
        prefix.append(loops[-1])
    note = f"the band as lowered, accumulated in memory ({done[6:]})"
    return prefix, loops, note


def per_output(s: Schedule, kernel: str, top: str, reorder: bool = True) -> str:
    """One nest, a thread per output element (the module docstring): the kept
    loops of the band first (``reorder``), the innermost kept loop on
    ``threadIdx.x`` (the channel loop inside a padding test when the band ends
    in one), the others on the grid (``bind_grid``), and what the thread reduces
    accumulated in a register (``cache_write`` of the thread loop). Without
    ``reorder``, the band as lowered: its kept prefix on the grid (and a kept
    innermost loop on ``threadIdx.x``), nothing inside a padding test."""
    top = unroll_single_trips(s, kernel, top)
    kept, order, note = _kept_first(s, kernel, band(s, kernel, top), (), reorder)
    notes = [note] if note and reorder else []
    inside = guarded_band(s, kernel, order[-1]) if reorder else []
    inner_kept: list[str] = []
    if inside:
        inner_kept, _, inner_note = _kept_first(s, kernel, inside, tuple(kept))
        if inner_note:
            notes.append(f"inside the padding test: {inner_note}")
    if inner_kept:
        outer, inner = kept + inner_kept[:-1], inner_kept[-1]
    elif kept:
        outer, inner = kept[:-1], kept[-1]
    else:
        raise NotApplicable(f"no loop of nest '{top}' is parallel")
    grid, thread = bind_grid(s, kernel, outer, inner)
    within = [
        str(loop_name(op))
        for op in loop_of(s, kernel, thread).body.walk()
        if isinstance(op, affine.ForOp)
    ]
    if within and not any(is_parallel(s, kernel, name) for name in within):
        kept_in_register = attempt(
            s, kernel, functools.partial(_cache_write, s, kernel, thread)
        )
        if kept_in_register.startswith("none: "):
            notes.append(f"accumulated in memory ({kept_in_register[6:]})")
        else:
            notes.append(kept_in_register)
    elif within:
        notes.append(f"{', '.join(within)} serial in each thread")
    return "; ".join([grid, *notes])


def _cache_write(s: Schedule, kernel: str, thread: str) -> str:
    s.cache_write(kernel, thread)
    return f"the reduction in a register (cache_write {thread})"


def per_output_or_plain(s: Schedule, kernel: str, top: str) -> str:
    """``per_output``; when a primitive refuses it (the nest is put back), the band
    as lowered on the grid (``per_output`` without ``reorder``), and why."""
    what = attempt(s, kernel, functools.partial(per_output, s, kernel, top))
    if not what.startswith("none: "):
        return what
    plain = per_output(s, kernel, top, reorder=False)
    return f"{plain} (no thread per output element: {what[6:]})"


# --- the kinds ------------------------------------------------------------------------


def schedule_conv(s: Schedule, kernel: str) -> str:
    """A thread per output element of each nest (``per_output``): the init and
    epilogue nests, and the product with its reduction in a register."""
    return each_nest(s, kernel, per_output_or_plain)


def schedule_pool(s: Schedule, kernel: str) -> str:
    """Each nest: the channel loops of an NHWC pool as block-stride loops, its
    pixels on the grid (``pool_channels``), else a thread per output element of
    the band (``per_output``)."""

    def one(s: Schedule, kernel: str, top: str) -> str:
        what = attempt(s, kernel, functools.partial(pool_channels, s, kernel, top))
        if not what.startswith("none: "):
            return what
        done = per_output_or_plain(s, kernel, top)
        return f"{done} (no block-stride channels: {what[6:]})"

    return each_nest(s, kernel, one)


def pool_channels(s: Schedule, kernel: str, top: str) -> str:
    """An NHWC pool nest: the pixel loops (the band) on ``blockIdx`` and
    ``threadIdx.y``, the channel loops (the innermost loops, parallel, all of
    ``C`` iterations) dealt out to ``T`` threads of ``threadIdx.x``
    (``block_stride``), ``T`` the channels rounded up to a warp."""
    top = unroll_single_trips(s, kernel, top)
    pixels = band(s, kernel, top)
    if not all(is_parallel(s, kernel, name) for name in pixels):
        raise NotApplicable(f"a loop of the band {pixels} is not parallel")
    last = loop_of(s, kernel, pixels[-1])
    leaves = [
        op
        for op in last.body.walk()
        if isinstance(op, affine.ForOp)
        and not any(isinstance(o, affine.ForOp) for o in op.body.walk())
    ]
    channels = [str(loop_name(op)) for op in leaves]
    extents = {extent(s, kernel, name) for name in channels}
    if not channels or len(extents) != 1:
        raise NotApplicable(f"the innermost loops {channels} differ in length")
    (count,) = extents
    if count < POOL_MIN_CHANNELS:
        raise NotApplicable(f"{count} channels, fewer than {POOL_MIN_CHANNELS}")
    if not all(is_parallel(s, kernel, name) for name in channels):
        raise NotApplicable(f"the innermost loops {channels} are not all parallel")
    threads = min(POOL_THREADS, -(-count // 32) * 32)
    axes: dict[str, str] = {}
    rows = list(pixels)
    per = min(POOL_THREADS // threads, extent(s, kernel, rows[-1]))
    if per > 1 and not _tested(s, kernel, rows[-1]):
        outer, within = s.split(kernel, rows[-1], per)
        rows[-1] = outer
        axes[within] = "threadIdx.y"
    axes.update(block_axes(s, kernel, rows, ["blockIdx.x", "blockIdx.y", "blockIdx.z"]))
    order = s.loops(kernel)
    bound = sorted(axes, key=order.index)
    for name in bound:
        s.bind(kernel, name, axes[name])
    s.block_stride(kernel, threads, *channels)
    grid = ", ".join(f"{name} -> {axes[name]}" for name in bound)
    return (
        f"{grid}; channel loops {', '.join(channels)} block-stride over {threads} "
        "threads: a thread per output element"
    )


def _tested(s: Schedule, kernel: str, name: str) -> bool:
    """True when an ``affine.if`` inside loop ``name`` tests its counter (a padded
    pool's window test): pixels of one block would take different branches, and
    a block-stride loop's barrier must be reached by every thread of the block."""
    loop = loop_of(s, kernel, name)
    counter = iv(loop)
    return any(
        isinstance(op, affine.IfOp) and counter in op.operands
        for op in loop.body.walk()
    )


def is_reduce_kernel(s: Schedule, kernel: str) -> bool:
    """True for a reduction that keeps its last axis inside the reduction loops: a
    lone ``tg.reduce_*`` whose loops carry no ``iter_args`` (a row reduction over
    the last axis carries its accumulator in them) and one of whose nests has a
    parallel innermost loop inside a loop that is not."""
    if not is_lone_reduction(s.kernels()[kernel]):
        return False
    fn = kernel_functions(s.module)[kernel]
    if any(isinstance(op, affine.ForOp) and op.inits for op in fn.walk()):
        return False
    for top in nests(s, kernel):
        loops = band(s, kernel, top)
        serial = [name for name in loops if not is_parallel(s, kernel, name)]
        inside = serial and loops.index(serial[0]) < len(loops) - 1
        if inside and is_parallel(s, kernel, loops[-1]):
            return True
    return False


def schedule_reduce(s: Schedule, kernel: str) -> str:
    """A thread per output element of each nest (``per_output``): the init and
    norm nests, and the accumulation, its kept last axis brought out of the
    reduction and its sum in a register."""
    return each_nest(s, kernel, per_output_or_plain)


def reduce_or(rows: Scheduler) -> Scheduler:
    """The ``rows`` scheduler for ``defaults.SCHEDULERS``: a reduction over axes
    before the last (``is_reduce_kernel``) gets ``schedule_reduce``, any other
    kernel ``rows`` (softmax, layer norm, reductions over the last axis)."""

    def schedule(s: Schedule, kernel: str) -> str:
        if is_reduce_kernel(s, kernel):
            return "over axes before the last: " + schedule_reduce(s, kernel)
        return rows(s, kernel)

    schedule.__name__ = schedule.__qualname__ = f"reduce_or({rows.__name__})"
    return schedule
