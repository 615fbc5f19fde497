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
elementwise   the loops of the nest on the grid (``bind_nest``): the innermost
              split by 256, ``threadIdx.x`` inside ``blockIdx.x``, the outer loops
              on ``blockIdx.y``/``z``; a short innermost loop takes a second
              thread axis (``threadIdx.y``) from the loop around it. Tails are
              guarded (``split``'s ``min``).
matmul        the zeroing and the epilogue as elementwise nests; the product as a
              register-tiled SGEMM (``schedule_matmul``): a block computes a
              ``TY*TM x TX*TN`` tile of C with ``TY x TX`` threads, each thread a
              ``TM x TN`` tile in registers (``cache_write`` + ``unroll``: loaded
              once, stored once), k in steps of ``BK``, the block's ``TY*TM x
              BK`` tile of A and ``BK x TX*TN`` tile of B staged in
              ``__shared__`` (``cache_read``: each thread's slice, shared by the
              threads that read it, see ``staging.py``). 128 x 128 tiles (8 x 8
              a thread) when they give 256 blocks (matmul 2048), else 64 x 64 (4
              x 4; matmul 1024), ... When no tile divides M and N: a thread per
              element of C, k serial in a register (``cache_write``). C is
              zeroed by its own launch: ``compute_at`` cannot put the zeroing in
              a thread's tile, whose start moves with two loops (block, thread).
rows          softmax, layer norm, reductions: a thread per row, the rows per
              block chosen for about 2048 blocks (``ROW_BLOCKS``); the
              reductions stay serial in the thread, since the emitter has no
              block-wide reduction.
conv2d,       the parallel loops of each nest on the grid, as elementwise; the
other         loops after a reduction loop (a conv's output channels after
              ``kh, kw, c``) on ``threadIdx.x`` when they are parallel.
============  =====================================================================

A scheduler raises :class:`NotApplicable` with the reason, or a primitive raises a
``ScheduleError`` (a heuristic meeting a case it did not foresee): the nest is put
back as it was (the trace too), and the report says why; the matmul product then
tries the next tile, then the thread-per-element schedule. A nest left without
bound loops runs ``<<<1, 1>>>`` (``stats["serial_launches"]``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import affine, memref
from xdsl.ir import Operation
from xdsl.traits import is_side_effect_free

from qidao.compiler.defaults import NotApplicable, attempt, kind_of
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.passes.schedule.bind import MAX_GRID_DIM, top_level_nest
from qidao.passes.schedule.loops.nest import find_loop, iv, kernel_functions, loop_name
from qidao.passes.schedule.parallel import check_parallel

__all__ = [
    "MATMUL_TILES",
    "MatmulTile",
    "bind_nest",
    "default_gpu_schedule",
    "schedule_matmul",
]

THREADS = 256
"""Threads per block of an elementwise nest."""
ROW_BLOCKS = 2048
"""A rows kernel takes the fewest rows per block (a power of two, at most 256)
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


def nests(s: Schedule, kernel: str) -> list[str]:
    """The names of the top-level loops of ``kernel`` (one launch each)."""
    fn = kernel_functions(s.module)[kernel]
    return [
        str(loop_name(op))
        for op in fn.body.block.ops
        if isinstance(op, affine.ForOp) and loop_name(op) is not None
    ]


def band(s: Schedule, kernel: str, top: str) -> list[str]:
    """The loops nested one in the other from ``top``: each body holds one loop
    and otherwise only loads and ops without effects (which ``bind`` allows
    between bound loops)."""
    _, loop = find_loop(s.module, "default schedule", kernel, top)
    names = [top]
    while True:
        inner = [op for op in loop.body.block.ops if isinstance(op, affine.ForOp)]
        others = [
            op
            for op in loop.body.block.ops
            if not isinstance(op, affine.ForOp | affine.YieldOp)
        ]
        if len(inner) != 1 or not all(_harmless(op) for op in others):
            return names
        loop = inner[0]
        if loop_name(loop) is None:
            return names
        names.append(str(loop_name(loop)))


def _harmless(op: Operation) -> bool:
    return isinstance(op, affine.LoadOp | memref.LoadOp) or (
        is_side_effect_free(op) and not op.regions
    )


def parallel(s: Schedule, kernel: str, name: str) -> bool:
    """True when the iterations of loop ``name`` write disjoint elements whatever
    the loops around it do (``bind``'s rule 3 with every loop around serial) and it
    carries no values (``iter_args``)."""
    fn, loop = find_loop(s.module, "default schedule", kernel, name)
    if loop.inits:
        return False
    try:
        check_parallel(fn, loop, kernel, "bind", top_level_nest(fn, loop))
    except ScheduleError:
        return False
    return True


def _extent(s: Schedule, kernel: str, name: str) -> int:
    extent = s.extents(kernel)[name]
    if extent is None:
        raise NotApplicable(f"loop '{name}' has non-constant bounds")
    return extent


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
    n = _extent(s, kernel, inner)
    axes: dict[str, str] = {}
    free = ["blockIdx.x", "blockIdx.y", "blockIdx.z"]
    if n > threads:
        o, i = s.split(kernel, inner, threads)
        axes[o], axes[i] = free.pop(0), "threadIdx.x"
    else:
        axes[inner] = "threadIdx.x"
        if outer and n <= threads // 2:
            y = outer[-1]
            ny, per = _extent(s, kernel, y), max(1, threads // n)
            if ny > per:
                y_o, y_i = s.split(kernel, y, per)
                outer[-1] = y_o
                axes[y_i] = "threadIdx.y"
            elif ny > 1:
                outer.pop()
                axes[y] = "threadIdx.y"
    for name in reversed(outer):
        extent = _extent(s, kernel, name)
        if extent == 1:
            continue
        axis = next((a for a in free if extent <= MAX_GRID_DIM[a[-1]]), None)
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


def unroll_single_trips(s: Schedule, kernel: str, top: str) -> str:
    """Unroll the loops of one iteration in the band of nest ``top`` (a batch
    loop of 1: its counter becomes 0, which ``bind``'s checks can compare with
    the ``0`` of the accesses that were folded already); the name of the nest's
    outermost loop after it. Raises ``NotApplicable`` when every loop of the band
    runs once: the nest is one point, a ``<<<1, 1>>>`` launch."""
    loops = band(s, kernel, top)
    extents = s.extents(kernel)
    ones = [name for name in loops if extents[name] == 1]
    if len(ones) == len(loops):
        raise NotApplicable(f"every loop of nest '{top}' runs once")
    for name in ones:
        s.unroll(kernel, name, 0)
    return next(name for name in loops if name not in ones)


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
        if not parallel(s, kernel, name):
            break
        prefix.append(name)
    last = loops[-1]
    if last not in prefix and parallel(s, kernel, last):
        return bind_nest(s, kernel, prefix, last, threads)
    if not prefix:
        raise NotApplicable(f"no loop of nest '{top}' is parallel")
    return bind_nest(s, kernel, prefix[:-1], prefix[-1], threads)


# --- the kinds ------------------------------------------------------------------------


def _attempt(s: Schedule, kernel: str, step: Callable[..., str], *args: Any) -> str:
    """``step(s, kernel, *args)``, or the kernel and the trace put back as they were
    and the reason (``"none: ..."``): ``qidao.compiler.defaults.attempt``."""
    return attempt(s, kernel, functools.partial(step, s, kernel, *args))


def _each_nest(
    s: Schedule, kernel: str, schedule: Callable[[Schedule, str, str], str]
) -> str:
    """Every top-level nest scheduled by ``schedule(s, kernel, nest)``, each on its
    own; one ``'<nest>': <what>`` entry each."""
    done = []
    for k in range(len(nests(s, kernel))):
        top = nests(s, kernel)[k]  # (a nest's name changes when its top unrolls)
        done.append(f"'{top}': {_attempt(s, kernel, schedule, top)}")
    if not done:
        raise NotApplicable("the kernel has no loop")
    return "; ".join(done)


def schedule_elementwise(s: Schedule, kernel: str) -> str:
    """Each nest's loops on the grid (``schedule_loops``)."""
    return _each_nest(s, kernel, schedule_loops)


def schedule_rows(s: Schedule, kernel: str) -> str:
    """A thread per row: the row loops (the parallel loops around the reductions)
    on the grid, about ``ROW_BLOCKS`` blocks, the reductions serial in each
    thread."""

    def one(s: Schedule, kernel: str, top: str) -> str:
        loops = band(s, kernel, top)
        rows = 1
        for name in loops:
            if not parallel(s, kernel, name):
                break
            rows *= _extent(s, kernel, name)
        per = 1
        while rows > ROW_BLOCKS * per and per < THREADS:
            per *= 2
        return f"a thread per row, {per} a block: " + schedule_loops(
            s, kernel, top, per
        )

    return _each_nest(s, kernel, one)


def schedule_matmul(s: Schedule, kernel: str) -> str:
    """The zeroing and the epilogue nests as elementwise; the product nest
    (``[b..], i, k, j``) register-tiled (``register_tile``), else a thread per
    element of C (``thread_per_element``)."""
    loops = s.loops(kernel)
    if not all(name in loops for name in ("i", "k", "j")):
        raise NotApplicable(f"expected loops i, k, j; the kernel has {loops}")
    done = []
    for index in range(len(nests(s, kernel))):
        top = nests(s, kernel)[index]
        if "i" not in band(s, kernel, top):
            done.append(f"'{top}': {_attempt(s, kernel, schedule_loops, top)}")
            continue
        reasons = []
        for tile in _tiles(s, kernel):
            what = _attempt(s, kernel, register_tile, tile)
            if not what.startswith("none: "):
                break
            reasons.append(f"{tile.rows}x{tile.cols}: {what[6:]}")
        else:
            what = _attempt(s, kernel, thread_per_element)
            if reasons:
                what += " (no register tile: " + "; ".join(reasons) + ")"
        done.append(f"'{top}': {what}")
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
    grid = f"{batch[-1]} -> blockIdx.z, " if batch else ""
    return f"{grid}{tile}, {shared}"


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
    return _each_nest(s, kernel, schedule_loops)


SCHEDULERS: dict[str, Scheduler] = {
    "matmul": schedule_matmul,
    "rows": schedule_rows,
    "elementwise": schedule_elementwise,
    "conv2d": _generic,
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
        what = _attempt(s, kernel, scheduler)
        report[kernel] = what if what.startswith("none: ") else f"{kind}: {what}"
    return report
