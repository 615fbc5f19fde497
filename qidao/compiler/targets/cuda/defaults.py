"""Default GPU schedules: what ``qidao.compile(model, target="cuda")`` does to the
loops when the user gives no schedule (``schedule="default"``), by kernel kind.

Like the CPU defaults (``qidao/compiler/targets/cpu/defaults/``) they are made of schedule
primitives, so the result is an ordinary trace (``compiled.stats["schedule"]``)
that prints, replays and can be edited; ``compiled.stats["default_schedule"]``
says what each kernel got, or why it got nothing. Each top-level loop nest of a
kernel is one launch (``emit/``), so each nest is scheduled on its own:

============  =====================================================================
kind          default
============  =====================================================================
elementwise   4 elements a thread (``wide_loops``) when the innermost loop runs
              a multiple of 4 times and every access is contiguous along it or
              does not move with it: that loop split by 4, the inner part
              vectorized (one ``float4`` load or store a thread per f32 access,
              two ``double2`` per f64 one, where the emitter proves the
              alignment); else one element a thread. Then the loops of the nest
              on the grid (``bind_nest``): the innermost split by 256,
              ``threadIdx.x`` inside ``blockIdx.x``, the outer loops on
              ``blockIdx.y``/``z``; a short innermost loop takes a second thread
              axis (``threadIdx.y``) from the loop around it. Tails are guarded
              (``split``'s ``min``).
matmul        the zeroing and the epilogue as elementwise nests; the product as a
              register-tiled SGEMM (``schedule_matmul``): a block computes a
              ``TY*TM x TX*TN`` tile of C with ``TY x TX`` threads, each thread a
              ``TM x TN`` tile in registers (``cache_write`` + ``unroll``: loaded
              once, stored once), k in steps of ``BK``, the block's ``TY*TM x
              BK`` tile of A and ``BK x TX*TN`` tile of B staged in
              ``__shared__`` (``cache_read``: each thread's slice, shared by the
              threads that read it, see ``staging.py``), ``k_o_o``
              double-buffered (``double_buffer``: two stages of each tile, the
              next k step copied with ``cp.async`` while this one computes)
              when it runs twice or more and two stages fit in 48 KiB (the
              report says when not). 128 x 128 tiles (8 x 8
              a thread) when they give 256 blocks (matmul 2048), else 64 x 64 (4
              x 4; matmul 1024), ... When no tile divides M and N: a thread per
              element of C, k serial in a register (``cache_write``). C is
              zeroed by its own launch: ``compute_at`` cannot put the zeroing in
              a thread's tile, whose start moves with two loops (block, thread).
rows          softmax, layer norm, reductions over the last axes: a row per
              block, the row loops on ``blockIdx.x/y/z`` (or, for rows of up to
              256 elements, a row per warp, 4 rows a block on ``threadIdx.y``),
              each pass over the row a block-stride loop (``block_stride``: 32
              to 512 threads, about 8 elements a thread) whose reduction is
              combined across the row's threads (warp shuffles, then a
              ``__shared__`` slot per warp). Else (a pass that is not an
              accumulation, a serial loop in the band) a thread per row, the
              rows per block chosen for about 2048 blocks (``ROW_BLOCKS``).
conv2d, pool  ``default_kinds.py`` (and reductions over other than the last
              axes): a thread per output element, the output loops first
              (``reorder``), the innermost output dimension on ``threadIdx.x``
              (coalesced stores), the rest on the grid, the reduction over
              ``c, kh, kw`` (or the window, or the reduced axes) in a register
              (``cache_write``); pools of 32 channels or more deal the channels
              out with ``block_stride``.
other         the parallel loops of each nest on the grid, as elementwise.
============  =====================================================================

A scheduler raises :class:`NotApplicable` with the reason, or a primitive raises a
``ScheduleError`` (a heuristic meeting a case it did not foresee): the nest is put
back as it was (the trace too), and the report says why; the matmul product then
tries the next tile, then the thread-per-element schedule. A nest left without
bound loops runs ``<<<1, 1>>>`` (``stats["serial_launches"]``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import affine
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation

from qidao.compiler.defaults import NotApplicable, kind_of
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.compiler.targets.cuda import tensor_cores
from qidao.compiler.targets.cuda.default_kinds import (
    reduce_or,
    schedule_conv,
    schedule_pool,
)
from qidao.compiler.targets.cuda.loop_reading import (
    attempt_step,
    band,
    each_nest,
    extent,
    is_parallel,
    nests,
    unroll_single_trips,
)
from qidao.compiler.targets.cuda.staging import double_buffer_step, element_bytes
from qidao.passes.schedule.bind import MAX_GRID_DIM, top_level_nest
from qidao.passes.schedule.loops.nest import find_kernel, find_loop, iv, loop_name
from qidao.passes.schedule.vectorize import check_vectorizable

__all__ = [
    "MATMUL_TILES",
    "MatmulTile",
    "bind_nest",
    "default_gpu_schedule",
    "schedule_matmul",
]

THREADS = 256
"""Threads per block of an elementwise nest."""
ROW_THREADS = 512
"""The most threads that share one row (``block_rows``)."""
ROW_ELEMENTS = 8
"""A row gets about this many elements a thread per pass: 32 threads for rows of
up to 256, 128 for 1024, 512 for 4096 and longer."""
ROW_BLOCK_THREADS = 128
"""Short rows take several rows a block, up to this many threads a block (4 warps
of rows of up to 256 elements)."""
ROW_BLOCKS = 2048
"""A rows kernel without block-wide rows (``thread_rows``) takes the fewest rows per block (a power of two, at most 256)
that keep its grid within this many blocks: about 16 blocks of one warp per SM
of a 132-SM GPU. Measured on an H200 (softmax over 1024 floats a row): 4096 rows
take 194 / 146 / 150 / 172 / 185 / 263 µs at 1 / 2 / 4 / 8 / 16 / 32 rows a
block, 16384 rows 729 / 452 / 401 / 372 / 505 / 701 µs: a thread walking a row
waits on memory, and many small blocks hide it better than a few full warps."""


@dataclass(frozen=True)
class MatmulTile:
    """A block of ``ty x tx`` threads computes a ``ty*tm x tx*tn`` tile of C, each
    thread a ``tm x tn`` register tile, k in steps of ``bk``."""

    ty: int
    tx: int
    tm: int
    tn: int
    bk: int

    @property
    def rows(self) -> int:
        return self.ty * self.tm

    @property
    def cols(self) -> int:
        return self.tx * self.tn

    def __str__(self) -> str:
        return (
            f"{self.rows}x{self.cols} tile per block of {self.ty}x{self.tx} threads, "
            f"{self.tm}x{self.tn} per thread in registers, k by {self.bk}"
        )


MATMUL_TILES = (
    MatmulTile(16, 16, 8, 8, 8),  # 128 x 128: 64 accumulators a thread
    MatmulTile(16, 16, 8, 4, 8),  # 128 x 64
    MatmulTile(16, 16, 4, 4, 16),  # 64 x 64
    MatmulTile(16, 16, 2, 2, 16),  # 32 x 32
    MatmulTile(8, 8, 2, 2, 16),  # 16 x 16
)
"""The register tiles, largest first: the first that divides M and N and gives at
least ``MATMUL_MIN_BLOCKS`` blocks, else the one that gives the most."""
MATMUL_MIN_BLOCKS = 256
"""About two blocks per SM on a 132-SM GPU: a smaller grid leaves SMs idle."""

Scheduler = Callable[[Schedule, str], str]


# --- reading the loops ----------------------------------------------------------------


# --- the grid -------------------------------------------------------------------------


def bind_nest(
    s: Schedule,
    kernel: str,
    outer: list[str],
    inner: str,
    threads: int = THREADS,
) -> str:
    """Bind ``inner`` to ``threadIdx.x`` (split by ``threads`` when longer, its
    outer part on ``blockIdx.x``) and the parallel loops ``outer`` (outer first,
    around ``inner``) to the other block axes, innermost first; a loop of one
    iteration, or one no axis is left for, stays serial. When ``inner`` is shorter
    than ``threads / 2``, the loop around it gives ``threadIdx.y``."""
    outer = list(outer)
    n = extent(s, kernel, inner)
    axes: dict[str, str] = {}
    free = ["blockIdx.x", "blockIdx.y", "blockIdx.z"]
    if n > threads:
        o, i = s.split(kernel, inner, threads)
        axes[o], axes[i] = free.pop(0), "threadIdx.x"
    else:
        axes[inner] = "threadIdx.x"
        if outer and n <= threads // 2:
            y = outer[-1]
            ny, per = extent(s, kernel, y), max(1, threads // n)
            if ny > per:
                y_o, y_i = s.split(kernel, y, per)
                outer[-1] = y_o
                axes[y_i] = "threadIdx.y"
            elif ny > 1:
                outer.pop()
                axes[y] = "threadIdx.y"
    for name in reversed(outer):
        trips = extent(s, kernel, name)
        if trips == 1:
            continue
        axis = next((a for a in free if trips <= MAX_GRID_DIM[a[-1]]), None)
        if axis is None:
            break
        free.remove(axis)
        axes[name] = axis
    order = s.loops(kernel)
    for name in sorted(axes, key=order.index):  # outer first: each bind sees the
        s.bind(kernel, name, axes[name])  # loops around it fixed
    grid = ", ".join(
        f"{name} -> {axes[name]}" for name in sorted(axes, key=order.index)
    )
    return grid


def schedule_loops(s: Schedule, kernel: str, top: str, threads: int = THREADS) -> str:
    """One nest on the grid: the parallel loops at the top of its band on the block
    axes, and on ``threadIdx.x`` the innermost band loop when it is parallel
    (after serial loops: the matmul's ``j`` after ``k``), else the innermost of
    those parallel loops; the rest stays serial in each thread. Loops of one
    iteration are unrolled first (``unroll_single_trips``)."""
    top = unroll_single_trips(s, kernel, top)
    loops = band(s, kernel, top)
    prefix: list[str] = []
    for name in loops:
        if not is_parallel(s, kernel, name):
            break
        prefix.append(name)
    last = loops[-1]
    if last not in prefix and is_parallel(s, kernel, last):
        return bind_nest(s, kernel, prefix, last, threads)
    if not prefix:
        raise NotApplicable(f"no loop of nest '{top}' is parallel")
    return bind_nest(s, kernel, prefix[:-1], prefix[-1], threads)


VECTOR_LANES = 4
"""Elements of the innermost loop that a thread of an elementwise nest takes at
once (``wide_loops``): 16 bytes of f32, one ``float4`` load or store per access.

Why one 16-byte vector a thread. What decides is the width of each load: a warp's
``float`` load moves 128 bytes, its ``float4`` load 512, for the same
instructions; a memory-bound kernel on an A100 went from 39% to 78% of the
bandwidth from the one to the other (fridayswithfaraday.com, "CUDA Kernel
Engineering" part 12, "Vectorized Loads: float4, int4, and 128-Bit Memory
Transactions"); by the estimates of "GPU Kernel 工程（03）：访存合并与
elementwise kernel" (an A100), 16 bytes a thread reach 85-92% where 2-4 bytes
stay at 60-80%, and a grid-stride loop adds 0-3 points (it also reads ATen
v2.10: 128 threads a block, no grid-stride loop, 8 elements a thread as two
interleaved vectors). Bytes in flight (Little's law): an H200's ~4.8 TB/s
times ~600 ns of latency is ~2.9 MB, ~22 KB per SM of 132, ~43 warps each with
one 512-byte load outstanding; this kernel's 256-thread blocks fit 8 a SM, 64
warps, so one vector a thread covers that with ~1.5x to spare. Two vectors a thread as ATen lays them out (thread t
takes vectors t and t + 256 of its block, each warp load contiguous) cannot be
scheduled yet: ``reorder`` refuses a band with vector ops and cannot prove the
split index ``((b * 2 + u) * 256 + t) * 4 + v`` injective; two adjacent vectors a
thread would use half of each 32-byte sector per warp load. Not measured here
(no GPU): the target is 85% of the device-to-device copy at 2^26 floats,
which the GPU check measures."""


def wide_loops(s: Schedule, kernel: str, top: str, threads: int = THREADS) -> str:
    """One elementwise nest, ``VECTOR_LANES`` elements a thread: the innermost
    loop of its band split by ``VECTOR_LANES``, the inner part vectorized and
    unrolled (one vector a thread), the outer part and the parallel loops around
    it on the grid (``bind_nest``, ``threads`` a block). As ``schedule_loops``
    (one element a thread) when ``why_not_wide`` finds a reason, which the report
    gives::

        for i0 in [0, 64): for i1 in [0, 4096):    out[i0, i1] = f(x[i0, i1], b[i1])
            ==>  "4 elements a thread (i1_i vectorized): i0 -> blockIdx.y,
                 i1_o_o -> blockIdx.x, i1_o_i -> threadIdx.x": 64 x 4 blocks of
                 256 threads, each a vector.load of x[i0, i1_o_o * 1024 +
                 i1_o_i * 4] and of b[..] (vector<4xf32>), one vector.store
    """
    top = unroll_single_trips(s, kernel, top)
    loops = band(s, kernel, top)
    why = why_not_wide(s, kernel, loops[-1])
    if why is not None:
        grid = schedule_loops(s, kernel, top, threads)
        return f"{grid} (one element a thread: {why})"
    prefix: list[str] = []
    for name in loops[:-1]:
        if not is_parallel(s, kernel, name):
            break
        prefix.append(name)
    outer, inner = s.split(kernel, loops[-1], VECTOR_LANES)
    s.vectorize(kernel, inner, VECTOR_LANES)
    s.unroll(kernel, inner, 0)
    grid = bind_nest(s, kernel, prefix, outer, threads)
    return f"{VECTOR_LANES} elements a thread ({inner} vectorized): {grid}"


def why_not_wide(s: Schedule, kernel: str, name: str) -> str | None:
    """Why the innermost loop ``name`` cannot give ``VECTOR_LANES`` elements a
    thread (``wide_loops``), or None: it must run a multiple of ``VECTOR_LANES``
    times, be parallel, and pass ``vectorize``'s checks (every access contiguous
    along it or invariant, float elements, no ops ``vectorize`` does not know)."""
    trips = s.extents(kernel)[name]
    if trips is None:
        return f"loop '{name}' has non-constant bounds"
    if trips % VECTOR_LANES:
        return f"loop '{name}' runs {trips} times, not a multiple of {VECTOR_LANES}"
    if not is_parallel(s, kernel, name):
        return f"loop '{name}' is not parallel"
    _, loop = find_loop(s.module, "default schedule", kernel, name)
    try:
        check_vectorizable(loop, kernel, name, VECTOR_LANES)
    except ScheduleError as err:
        return str(err)
    return None


# --- the kinds ------------------------------------------------------------------------


def schedule_elementwise(s: Schedule, kernel: str) -> str:
    """Each nest's loops on the grid, 4 elements a thread where they can be
    (``wide_loops``)."""
    return each_nest(s, kernel, wide_loops)


def row_threads(length: int) -> int:
    """The threads that share a row of ``length`` elements: a power of two from 32
    (a warp) to ``ROW_THREADS``, about ``ROW_ELEMENTS`` elements a thread per pass."""
    threads = 32
    while threads < ROW_THREADS and threads * ROW_ELEMENTS < length:
        threads *= 2
    return threads


def block_rows(
    s: Schedule,
    kernel: str,
    top: str,
    threads: int | None = None,
    rows_a_block: int | None = None,
) -> str:
    """A row per ``T`` threads (``block_stride``): the innermost row loop on
    ``blockIdx.x`` (split by ``Y`` onto ``threadIdx.y`` when a row takes fewer
    than ``ROW_BLOCK_THREADS`` threads: ``Y`` rows a block), the others on
    ``blockIdx.y``/``z`` (the outermost fused beyond three), and each pass over the
    row (the loops in the row loop's body) a block-stride loop of ``T =
    row_threads(length)`` threads, its reduction combined across them. ``threads``
    and ``rows_a_block`` override ``T`` and ``Y`` (the tuner's knobs; ``Y`` must
    divide the innermost row loop)."""
    loops = band(s, kernel, top)
    rows: list[str] = []
    for name in loops:
        if not is_parallel(s, kernel, name):
            break
        rows.append(name)
    if not rows:
        raise NotApplicable(f"no loop of nest '{top}' is a parallel row loop")
    _, inner = find_loop(s.module, "default schedule", kernel, rows[-1])
    passes = [
        str(loop_name(op))
        for op in inner.body.block.ops
        if isinstance(op, affine.ForOp) and loop_name(op) is not None
    ]
    if not passes:
        raise NotApplicable(f"row loop '{rows[-1]}' holds no loop over the row")
    while len(rows) > 3:  # three block axes: fuse the outermost row loops
        rows[:2] = [s.fuse(kernel, rows[0], rows[1])]
    length = max(extent(s, kernel, name) for name in passes)
    threads = threads or row_threads(length)
    row = rows[-1]
    count = extent(s, kernel, row)
    per = 1
    while threads * per * 2 <= ROW_BLOCK_THREADS and count % (per * 2) == 0:
        per *= 2
    if rows_a_block is not None:
        if count % rows_a_block or threads * rows_a_block > 1024:
            raise NotApplicable(
                f"{rows_a_block} rows a block of {threads} threads: the row loop "
                f"'{row}' ({count}) must divide by it, and at most 1024 threads"
            )
        per = rows_a_block
    axes: dict[str, str] = {}
    if per > 1:
        outer, within = s.split(kernel, row, per)
        axes[outer], axes[within] = "blockIdx.x", "threadIdx.y"
        where = f"{per} rows a block"
    else:
        axes[row] = "blockIdx.x"
        where = "a row a block"
    outer_axes = ("blockIdx.y", "blockIdx.z")[: len(rows) - 1]
    for name, axis in zip(reversed(rows[:-1]), outer_axes, strict=True):
        if extent(s, kernel, name) > MAX_GRID_DIM[axis[-1]]:
            raise NotApplicable(
                f"row loop '{name}' spans {extent(s, kernel, name)} blocks, over "
                f"the {axis} limit {MAX_GRID_DIM[axis[-1]]}"
            )
        axes[name] = axis
    order = s.loops(kernel)
    for name in sorted(axes, key=order.index):
        s.bind(kernel, name, axes[name])
    where += (
        " ("
        + ", ".join(f"{name} -> {axes[name]}" for name in sorted(axes, key=order.index))
        + ")"
    )
    s.block_stride(kernel, threads, *passes)
    return (
        f"{where}, {threads} threads a row: {', '.join(passes)} block-stride, "
        "reductions combined across the row"
    )


def schedule_rows(s: Schedule, kernel: str) -> str:
    """Each nest: a row per block or per warp (``block_rows``); else a thread per
    row, the rows per block chosen for about ``ROW_BLOCKS`` blocks and the
    reductions serial in each thread (``thread_rows``)."""
    return each_nest(s, kernel, _rows_nest)


def _rows_nest(s: Schedule, kernel: str, top: str) -> str:
    what = attempt_step(s, kernel, block_rows, top)
    if not what.startswith("none: "):
        return what
    return (
        attempt_step(s, kernel, thread_rows, top) + f" (no block-wide rows: {what[6:]})"
    )


def thread_rows(s: Schedule, kernel: str, top: str) -> str:
    """A thread per row: the row loops (the parallel loops around the reductions)
    on the grid, about ``ROW_BLOCKS`` blocks, the reductions serial in each
    thread."""
    loops = band(s, kernel, top)
    rows = 1
    for name in loops:
        if not is_parallel(s, kernel, name):
            break
        rows *= extent(s, kernel, name)
    per = 1
    while rows > ROW_BLOCKS * per and per < THREADS:
        per *= 2
    return f"a thread per row, {per} a block: " + schedule_loops(s, kernel, top, per)


def schedule_matmul(s: Schedule, kernel: str) -> str:
    """The zeroing and the epilogue nests as elementwise; the product nest
    (``[b..], i, k, j``) on tensor cores when ``qidao.compile(...,
    tensor_cores=...)`` asks for them and they apply (``tensor_cores.py``), else
    register-tiled (``register_tile``), else a thread per element of C
    (``thread_per_element``)."""
    loops = s.loops(kernel)
    if not all(name in loops for name in ("i", "k", "j")):
        raise NotApplicable(f"expected loops i, k, j; the kernel has {loops}")
    done = []
    for index in range(len(nests(s, kernel))):
        top = nests(s, kernel)[index]
        if "i" not in band(s, kernel, top):
            done.append(f"'{top}': {attempt_step(s, kernel, schedule_loops, top)}")
            continue
        reasons = []
        why_not = ""
        precision = tensor_cores.requested()  # qidao.compile(tensor_cores=...)
        if precision is not None:
            what = attempt_step(s, kernel, tensor_cores.tensor_core_matmul, precision)
            if not what.startswith("none: "):
                done.append(f"'{top}': {what}")
                continue
            why_not = f" (no tensor cores: {what[6:]})"
        for tile in _tiles(s, kernel):
            what = attempt_step(s, kernel, register_tile, tile)
            if not what.startswith("none: "):
                break
            reasons.append(f"{tile.rows}x{tile.cols}: {what[6:]}")
        else:
            what = attempt_step(s, kernel, thread_per_element)
            if reasons:
                what += " (no register tile: " + "; ".join(reasons) + ")"
        done.append(f"'{top}': {what}{why_not}")
    return "; ".join(done)


def _tiles(s: Schedule, kernel: str) -> list[MatmulTile]:
    """The register tiles that divide M and N, the best first (``MATMUL_TILES``)."""
    extents = s.extents(kernel)
    m, n = extents["i"], extents["j"]
    if m is None or n is None:
        return []
    fits = [t for t in MATMUL_TILES if m % t.rows == 0 and n % t.cols == 0]
    fits = [t for t in fits if m // t.rows <= MAX_GRID_DIM["y"]]
    enough = [t for t in fits if (m // t.rows) * (n // t.cols) >= MATMUL_MIN_BLOCKS]
    if enough:
        return enough
    return sorted(fits, key=lambda t: -(m // t.rows) * (n // t.cols))


def _operands(s: Schedule, kernel: str) -> tuple[str | None, str | None]:
    """The names of A and B: the memrefs the ``j`` loop's body loads at ``[.., i,
    k]`` and ``[.., k, j]`` (None when missing or when a name is not unique:
    ``cache_read`` finds its buffer by name)."""
    _, j_loop = find_loop(s.module, "default schedule", kernel, "j")
    _, k_loop = find_loop(s.module, "default schedule", kernel, "k")
    _, i_loop = find_loop(s.module, "default schedule", kernel, "i")
    i, k, j = iv(i_loop), iv(k_loop), iv(j_loop)
    loads = [op for op in i_loop.body.walk() if isinstance(op, affine.LoadOp)]
    found: dict[str, str | None] = {"a": None, "b": None}
    for op in loads:
        indices = list(op.indices)
        role = {(i, k): "a", (k, j): "b"}.get(
            (indices[-2], indices[-1]) if len(indices) >= 2 else (None, None)  # type: ignore[arg-type]
        )
        name = op.memref.name_hint
        if role is None or name is None:
            continue
        same = {id(o.memref) for o in loads if o.memref.name_hint == name}
        found[role] = name if len(same) == 1 else None
    a, b = found["a"], found["b"]
    if a is not None and a == b:
        return None, None
    return a, b


def register_tile(s: Schedule, kernel: str, tile: MatmulTile) -> str:
    """The register-tiled product (module docstring), in primitives::

    split i by TM, j by TN, i_o by TY, j_o by TX
    reorder i_o_o, j_o_o, i_o_i, j_o_i, k, i_i, j_i
    bind [a batch loop -> blockIdx.z], i_o_o -> blockIdx.y,
         j_o_o -> blockIdx.x, i_o_i -> threadIdx.y, j_o_i -> threadIdx.x
    cache_write j_o_i            C's TM x TN tile: loaded once, kept in a
                                 local array, stored once
    split k by BK, k_o by 1      k_o_o, k_o_i: a loop per cache_read
    cache_read k_o_o, A          each thread's TM x BK slice of A ...
    cache_read k_o_i, B          ... and BK x TN slice of B: __shared__
    unroll j_i, i_i and the copy loops of the tile (registers)
    double_buffer k_o_o          two stages of both tiles, k + 1's copied
                                 (cp.async) during k: when k_o_o runs twice or
                                 more and they fit (``double_buffer_step``)
    """
    loops = s.loops(kernel)
    if loops[loops.index("i") : loops.index("i") + 3] != ["i", "k", "j"]:
        raise NotApplicable(f"expected i, k, j nested in this order: {loops}")
    a, b = _operands(s, kernel)
    top = nests(s, kernel)[_nest_of(s, kernel, "i")]
    if top != "i":
        top = unroll_single_trips(s, kernel, top)
    batch = [name for name in band(s, kernel, top) if name not in ("i", "k", "j")]
    s.split(kernel, "i", tile.tm)
    s.split(kernel, "j", tile.tn)
    s.split(kernel, "i_o", tile.ty)
    s.split(kernel, "j_o", tile.tx)
    s.reorder(kernel, "i_o_o", "j_o_o", "i_o_i", "j_o_i", "k", "i_i", "j_i")
    if batch:  # the innermost batch loop on blockIdx.z, any other serial
        s.bind(kernel, batch[-1], "blockIdx.z")
    s.bind(kernel, "i_o_o", "blockIdx.y")
    s.bind(kernel, "j_o_o", "blockIdx.x")
    s.bind(kernel, "i_o_i", "threadIdx.y")
    s.bind(kernel, "j_o_i", "threadIdx.x")
    s.cache_write(kernel, "j_o_i")
    s.split(kernel, "k", tile.bk)
    s.split(kernel, "k_o", 1)
    staged = []
    for loop, name in (("k_o_o", a), ("k_o_i", b)):
        if name is not None:
            s.cache_read(kernel, loop, name)
            staged.append(name)
    names = s.loops(kernel)
    copies = [
        sorted((n for n in names if n.startswith(prefix)), reverse=True)
        for prefix in ("j_o_i_cw_i", "j_o_i_wb_i")
    ]
    for loop in ["j_i", "i_i", *copies[0], *copies[1]]:  # innermost first
        s.unroll(kernel, loop, 0)
    shared = f"{' and '.join(staged)} staged in __shared__" if staged else "no staging"
    if staged:
        itemsize = _element_bytes(s, kernel)
        tiles = (tile.rows * tile.bk if a else 0) + (tile.bk * tile.cols if b else 0)
        shared += ", " + double_buffer_step(s, kernel, "k_o_o", tiles * itemsize)
    grid = f"{batch[-1]} -> blockIdx.z, " if batch else ""
    return f"{grid}{tile}, {shared}"


def _element_bytes(s: Schedule, kernel: str) -> int:
    """The bytes of an element of the kernel's output (its last argument)."""
    fn = find_kernel(s.module, "default schedule", kernel, "")
    t = fn.body.block.args[-1].type
    assert isinstance(t, MemRefType)
    return element_bytes(t.get_element_type())


def _nest_of(s: Schedule, kernel: str, name: str) -> int:
    """The index (in ``nests``) of the top-level nest holding loop ``name``."""
    fn, loop = find_loop(s.module, "default schedule", kernel, name)
    top = top_level_nest(fn, loop)
    tops: list[Operation] = [
        op for op in fn.body.block.ops if isinstance(op, affine.ForOp)
    ]
    return tops.index(top)


def thread_per_element(s: Schedule, kernel: str) -> str:
    """A thread per element of C: ``reorder(i, j, k)``, the ``[b..], i, j`` loops
    on the grid (``schedule_loops``), C's element in a register across ``k``
    (``cache_write`` of the thread loop)."""
    s.reorder(kernel, "i", "j", "k")
    top = nests(s, kernel)[_nest_of(s, kernel, "i")]
    grid = schedule_loops(s, kernel, top)
    thread = next(n for n in s.loops(kernel) if n in ("j", "j_i"))
    s.cache_write(kernel, thread)
    return f"a thread per element of C: {grid}; C in a register across k"


def _generic(s: Schedule, kernel: str) -> str:
    return each_nest(s, kernel, schedule_loops)


SCHEDULERS: dict[str, Scheduler] = {
    "matmul": schedule_matmul,
    "rows": reduce_or(schedule_rows),
    "elementwise": schedule_elementwise,
    "conv2d": schedule_conv,
    "pool": schedule_pool,
    "other": _generic,
}
"""Kernel kind (``qidao.compiler.targets.cpu.defaults.kind_of``) -> its GPU scheduler."""


def default_gpu_schedule(s: Schedule) -> dict[str, str]:
    """Apply the default GPU schedule to each kernel of ``s``; kernel -> what was
    done, ``"<kind>: ..."`` (per nest, a ``"none: <reason>"`` for a nest left
    serial), or ``"none: <reason>"``."""
    report: dict[str, str] = {}
    for kernel, ops in s.kernels().items():
        kind = kind_of(ops)
        scheduler = SCHEDULERS.get(kind, _generic)
        what = attempt_step(s, kernel, scheduler)
        report[kernel] = what if what.startswith("none: ") else f"{kind}: {what}"
    return report
