"""Default schedules of memory-bound kernels: elementwise chains and row-wise
reductions (softmax, layer norm, reduce over the last axis).

Elementwise chains: LLVM vectorizes their inner loops as they are (the fused chains
run at copy bandwidth on one thread), except a short one: an inner loop of 16 or 32
floats it unrolls whole and then vectorizes the loop *around* it, with a gather per
16 lanes. ``mul`` of two ``[32, 32, 32, 16]`` arrays (NHWC activations with 16
channels) took 382 µs that way, against NumPy's 55; an inner loop of at least one
register and fewer than ``SHORT_INNER`` elements is therefore vectorized by the
schedule (one register a step, and a tail), which keeps LLVM off the outer loop:
14 µs. Past that, the decision left is threads. Row
kernels take the same decision for their row loops and have their passes over the
row vectorized as well (``rows.py``).

Threads: a kernel that touches at least ``PARALLEL_MIN_ELEMENTS`` elements runs one
of its loops on libgomp's workers (``parallel_outer``). In a model the workers are
warm: the kernels run back to back, and libgomp's workers spin between two
parallel regions, so a region costs about 1 µs (after the process has idled for
100 ms it costs milliseconds under libgomp's default wait policy, whatever the
threshold: see ``qidao/passes/cpu/convert_parallel_to_gomp.py``). Measured (AMD
EPYC, 2 cores, ``qidao.compile(..., profile=True)``, medians of 200 calls, each
kernel after a parallel matmul that wrote its input; µs, one thread -> two
threads):

====================  ===========  ===========  ===========  ===========
elements (rows x 256)  4,096        8,192        16,384       32,768
====================  ===========  ===========  ===========  ===========
softmax               1.2 -> 1.2   2.5 -> 1.8   4.9 -> 3.0   9.4 -> 5.9
transposing copy      1.0 -> 1.1   2.2 -> 1.5   3.8 -> 2.3   8.5 -> 5.5
mul + relu            0.8 -> 1.1   1.7 -> 1.8   4.0 -> 2.9   8.2 -> 7.1
====================  ===========  ===========  ===========  ===========

so threads pay from about 2^13 elements. A kernel left on one thread also pays
where its input was written by two: half of it comes from the other core's cache
(a layer norm after a parallel matmul). Which loop: the one whose busiest thread's share
(``ceil(T / threads) / T`` of the work, for ``T`` iterations) plus the parallel
regions it starts (one per iteration of the loops around it, each
``REGION_COST_ELEMENTS``) costs least: ViT's softmax over ``[1, 3, 197, 197]``
splits its 197 rows three times rather than its 3 heads once (1.4x -> 1.8x its
one-thread speed at two threads).
"""

from __future__ import annotations

import math

from xdsl.dialects import affine
from xdsl.ir import Operation

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.compiler.targets.cpu.defaults.rows import (
    register_lanes,
    vectorize_row_passes,
)
from qidao.compiler.targets.cpu.defaults.transpose import (
    TooShortToTile,
    tile_transposed,
)
from qidao.passes.cpu.expand_math import scalar_only_math
from qidao.passes.schedule.loops.nest import (
    kernel_functions,
    kernel_loops,
    loop_name,
    symbolic_dim,
)

PARALLEL_MIN_ELEMENTS = 1 << 13
"""Kernels touching fewer elements stay on one thread (module docstring)."""
REGION_COST_ELEMENTS = 1 << 12
"""What starting one parallel region costs (a warm ``GOMP_parallel``, ~1 µs), in
elements streamed through one core: ``parallel_outer`` weighs it against the
imbalance of a loop with few iterations."""
SHORT_INNER = 64
"""An inner loop shorter than this (and at least one register long) is vectorized
by the schedule, not left to LLVM (module docstring)."""


def parallel_outer(
    s: Schedule, kernel: str, threads: int, loops: list[str], per_iteration: int
) -> str:
    """``loops`` (outer first) are candidates; each innermost iteration touches
    ``per_iteration`` elements."""
    if threads <= 1:
        raise NotApplicable("one thread: no loop runs in parallel")
    extents = s.extents(kernel)
    sizes = [extents[name] for name in loops]
    if any(size is None for size in sizes):
        raise NotApplicable("a loop has non-constant bounds")
    elements = math.prod(size for size in sizes if size is not None) * per_iteration
    if elements < PARALLEL_MIN_ELEMENTS:
        raise NotApplicable(
            f"{elements} elements: too little work to pay for waking "
            f"{threads} threads (threshold {PARALLEL_MIN_ELEMENTS})"
        )
    best: tuple[float, str, int] | None = None
    starts = 1  # parallel regions a loop starts: the iterations of those around it
    for name, size in zip(loops, sizes, strict=True):
        assert size is not None
        if size >= threads:  # the busiest thread's share, plus the regions' cost
            cost = elements * math.ceil(size / threads) / size
            cost += starts * REGION_COST_ELEMENTS
            if best is None or cost < best[0]:
                best = (cost, name, size)
        starts *= size
    if best is None:
        raise NotApplicable(f"no loop has {threads} or more iterations")
    _, name, size = best
    s.parallel(kernel, name)
    return f"loop {name} ({size} iterations) on {threads} threads"


def schedule_elementwise(s: Schedule, kernel: str, threads: int) -> str:
    """A transposed read cache-blocked (``transpose.py``), else short inner loops
    vectorized; then the outermost loop with enough iterations parallel, when the
    work pays."""
    done: list[str] = []
    short = ""  # a transposed read left untiled: said when nothing else applies
    path = _busiest_path(s, kernel)
    extents = s.extents(kernel)  # before a vectorized loop counts its vectors
    vectorized: dict[str, str] = {}
    try:
        done.append(tile_transposed(s, kernel))
        path = _busiest_path(s, kernel)
    except TooShortToTile as why:
        short = f"{why}; "
    except NotApplicable:
        vectorized = vectorize_short_inner(s, kernel)
        done.extend(vectorized.values())
    per_iteration = math.prod(extents[name] or 1 for name in path if name in vectorized)
    try:
        outer = [name for name in path if name not in vectorized]
        done.append(parallel_outer(s, kernel, threads, outer, per_iteration))
    except NotApplicable as why:
        if not done:
            raise NotApplicable(f"{short}{why}") from None
        done.append(str(why))
    return "; ".join(done)


def vectorize_short_inner(s: Schedule, kernel: str) -> dict[str, str]:
    """Vectorize each innermost loop of ``kernel`` of at least one register and
    fewer than ``SHORT_INNER`` elements (module docstring); what was done. A loop
    the primitive refuses (a strided access, a loop over a symbolic dimension) or
    that holds math expanded on scalars stays as lowered. Loop -> what was done."""
    done = {}
    extents = s.extents(kernel)
    for loop in kernel_loops(kernel_functions(s.module)[kernel]):
        if any(isinstance(op, affine.ForOp) for op in loop.body.walk()):
            continue
        name = str(loop_name(loop))
        width, element = register_lanes(loop)
        extent = extents.get(name)
        if extent is None or not width <= extent < SHORT_INNER or loop.results:
            continue
        if symbolic_dim(loop) is not None or scalar_only_math(loop) is not None:
            continue
        try:
            s.vectorize(kernel, name, width)
        except ScheduleError:
            continue
        done[name] = f"{name} vectorized (<{width} x {element}>, {extent} elements)"
    return done


def _busiest_path(s: Schedule, kernel: str) -> list[str]:
    """The loops (outer first) around the innermost loop that runs the most
    iterations: the work of the kernel is counted along one path, not over every
    loop, since sibling loops (a pad's copy ``i3`` and fill ``i3_fill``, in the
    two branches of its bounds test) are not nested in each other."""
    fn = kernel_functions(s.module)[kernel]
    extents = s.extents(kernel)
    best: tuple[int, list[str]] = (-1, [])
    for loop in kernel_loops(fn):
        if any(isinstance(op, affine.ForOp) for op in loop.body.walk()):
            continue
        path: list[str] = []
        op: Operation | None = loop
        while op is not None and op is not fn:
            if isinstance(op, affine.ForOp):
                path.insert(0, str(loop_name(op)))
            op = op.parent_op()
        work = math.prod(extents[name] or 1 for name in path)
        if work > best[0]:
            best = (work, path)
    return best[1]


def schedule_rows(s: Schedule, kernel: str, threads: int) -> str:
    """The outermost row loop parallel when ``threads > 1`` and the work pays, then
    every pass over the row vectorized where it can be (``rows.py``). The row loops
    are the ones before the first reduction loop (named ``r...``); a row is as long
    as the longest pass over it."""
    loops = s.loops(kernel)
    rows = [name for name in loops if not name.startswith("r")]
    if loops[: len(rows)] != rows:
        raise NotApplicable(f"expected row loops before the reduction loops: {loops}")
    extents = s.extents(kernel)
    row = max((extents[n] or 1 for n in loops[len(rows) :]), default=1)
    parallel, in_parallel = "one row: no row loop to run in parallel", False
    if rows:
        try:
            parallel, in_parallel = parallel_outer(s, kernel, threads, rows, row), True
        except NotApplicable as why:
            parallel = str(why)
    done, left = vectorize_row_passes(s, kernel, rows)
    vectorized = f"vectorized {', '.join(done)}" if done else ""
    if left:
        vectorized += f"{'; ' if done else ''}left as lowered: {'; '.join(left)}"
    if in_parallel:
        return f"{parallel}; {vectorized}"
    if not done:
        raise NotApplicable(f"{vectorized}; {parallel}")
    return f"{vectorized}; {parallel}"
