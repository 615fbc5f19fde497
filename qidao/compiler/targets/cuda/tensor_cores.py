"""The default tensor-core schedule of a matmul: ``qidao.compile(model,
target="cuda", tensor_cores="tf32" | "fp16")``.

Without the option the GPU's default matmul is the register-tiled SGEMM of
``defaults.py`` (fp32 on the CUDA cores). With it, ``schedule_matmul`` first tries
:func:`tensor_core_matmul` on the product nest (``[b], i, k, j``), which is made of
primitives like every default schedule (``stats["schedule"]`` replays it), and
says in ``stats["default_schedule"]`` what it did or why not (then the kernel
gets the fp32 schedule, and the report says why it got no tensor cores).

The schedule (CUTLASS's shape: a block tile of C over a grid of warps, each warp a
grid of 16 x 16 WMMA tiles whose accumulators stay in registers across k, A's
and B's block tiles staged in ``__shared__`` once per k step)::

    split i by WM, i_o by WY; split j by WN, j_o by WX
    reorder i_o_o, j_o_o, i_o_i, j_o_i, k, i_i, j_i
    bind [b -> blockIdx.z], i_o_o -> blockIdx.y, j_o_o -> blockIdx.x,
         i_o_i -> threadIdx.z, j_o_i -> threadIdx.y        (WY x WX warps a block)
    cache_write j_o_i                  the warp's WM x WN tile of C in %acc
    block_stride 32: j_o_i_cw_i0, j_o_i_wb_i0
                                       the warp's 32 lanes (threadIdx.x) share
                                       its copy-in and write-back
    split k by BK, k_o by 1; cache_read k_o_o a, k_o_i b
                                       the block's (WY WM) x BK tile of A and
                                       BK x (WX WN) tile of B in __shared__
    split i_i by 16, j_i by 16, k_i by 8 (TF32) or 16 (FP16)
    reorder k_i_o, i_i_o, j_i_o, i_i_i, j_i_i, k_i_i
    fuse i_i_o, j_i_o; unroll it       (WM / 16) x (WN / 16) tiles of 16 x 16
    tensorize each tile's i_i_i: wmma_tf32 or wmma_f16
    double_buffer k_o_o               two stages of each staged tile, the next k
                                       step copied while this one computes, when
                                       k_o_o runs twice or more and they fit

So a block is ``WY x WX`` warps (``threadIdx.z``, ``threadIdx.y``) of 32 lanes
(``threadIdx.x``). ``TILES`` lists the shapes, largest first: 128 x 128 a block
of 2 x 2 warps of 64 x 64 (16 accumulator fragments, 128 floats a lane in
registers; 32 KiB of ``__shared__`` at BK = 32: too much for two stages, so
this tile is not double-buffered), then 64 x 64 and 32 x 32 for
smaller matrices; the first that divides M and N and gives at least
``MIN_BLOCKS`` blocks, else the one that gives the most. K must divide by BK (32,
else 16). Shapes with tails are declined (``NotApplicable``): WMMA tiles are
whole 16 x 16 blocks and the staging would need guards.

Double buffering (``double_buffer``, ``emit/pipeline.py``): the rounding
staging copies cannot be ``cp.async`` (a raw copy cannot convert), so they stay
synchronous loads and stores, into the other stage: the barrier a k step saves
and the copy of step k + 1 written before the tiles of step k still apply.

Precision. ``"tf32"``: the staging copies round A and B to TF32 (10 mantissa
bits, as cuBLAS's TF32 mode does), products accumulate in f32. ``"fp16"``: the
copies round them to half. Either way the result differs from fp32's by about
2^-11 of the magnitude of the products (``test_tensorize.py`` compares with
NumPy on inputs rounded the same way).

Not measured here (no GPU): the target is 0.7x cuBLAS in the same
precision at 4096.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from xdsl.dialects import affine

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.options import TENSOR_CORES
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.staging import double_buffer_step
from qidao.passes.schedule.bind import MAX_GRID_DIM
from qidao.passes.schedule.loops.nest import find_loop, iv, loop_name
from qidao.passes.schedule.tensorize import INTRINSICS, WARP

PRECISIONS: dict[str, str] = dict(
    zip(TENSOR_CORES, ("wmma_tf32", "wmma_f16"), strict=True)
)
"""``tensor_cores=`` values (``options.TENSOR_CORES``, checked there) -> the
intrinsic the schedule tensorizes with."""

MIN_BLOCKS = 256
"""About two blocks per SM of a 132-SM GPU (as ``defaults.MATMUL_MIN_BLOCKS``)."""


@dataclass(frozen=True)
class WarpTile:
    """A block of ``warps_m x warps_n`` warps computes a ``rows x cols`` tile of C,
    each warp a ``warp_m x warp_n`` tile of 16 x 16 WMMA tiles."""

    warps_m: int
    warps_n: int
    warp_m: int
    warp_n: int

    @property
    def rows(self) -> int:
        return self.warps_m * self.warp_m

    @property
    def cols(self) -> int:
        return self.warps_n * self.warp_n

    def __str__(self) -> str:
        fragments = (self.warp_m // 16) * (self.warp_n // 16)
        return (
            f"{self.rows}x{self.cols} tile per block of {self.warps_m}x{self.warps_n} "
            f"warps, {self.warp_m}x{self.warp_n} a warp in {fragments} accumulator "
            "fragments"
        )


TILES = (
    WarpTile(2, 2, 64, 64),  # 128 x 128, 128 threads
    WarpTile(2, 2, 32, 32),  # 64 x 64
    WarpTile(2, 2, 16, 16),  # 32 x 32
)
"""The block tiles, largest first (``tensor_core_matmul``)."""
K_STEPS = (32, 16)
"""BK, the k step of the staged tiles: the first that divides K."""

_REQUESTED: ContextVar[str | None] = ContextVar("tensor_cores", default=None)


@contextmanager
def requesting(precision: str | None) -> Iterator[None]:
    """Within the block, ``schedule_matmul`` tries tensor cores in ``precision``
    (None: not at all). The CUDA target opens it around the default schedule."""
    assert precision is None or precision in PRECISIONS, precision
    token = _REQUESTED.set(precision)
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def requested() -> str | None:
    """The precision ``qidao.compile(tensor_cores=...)`` asked for, or None."""
    return _REQUESTED.get()


def tensor_core_matmul(s: Schedule, kernel: str, precision: str) -> str:
    """The product nest of matmul ``kernel`` on tensor cores (the module doc); what
    it did, or ``NotApplicable`` with the reason."""
    intrinsic = INTRINSICS[PRECISIONS[precision]]
    loops = s.loops(kernel)
    if "i" not in loops or loops[loops.index("i") : loops.index("i") + 3] != [
        "i",
        "k",
        "j",
    ]:
        raise NotApplicable(f"expected loops i, k, j nested in this order: {loops}")
    extents = s.extents(kernel)
    m, k, n = extents["i"], extents["k"], extents["j"]
    if m is None or k is None or n is None:
        raise NotApplicable("the loops i, k, j need constant bounds")
    tile = _tile(m, n)
    if tile is None:
        raise NotApplicable(
            f"M x N = {m} x {n}: no tensor-core block tile divides it ("
            + ", ".join(f"{t.rows}x{t.cols}" for t in TILES)
            + ")"
        )
    bk = next((b for b in K_STEPS if k % b == 0), None)
    if bk is None:
        raise NotApplicable(
            f"K = {k} is not a multiple of {' or '.join(map(str, K_STEPS))}"
        )
    a, b = _operands(s, kernel)
    batch = _batch_loops(s, kernel)
    s.split(kernel, "i", tile.warp_m)
    s.split(kernel, "i_o", tile.warps_m)
    s.split(kernel, "j", tile.warp_n)
    s.split(kernel, "j_o", tile.warps_n)
    s.reorder(kernel, "i_o_o", "j_o_o", "i_o_i", "j_o_i", "k", "i_i", "j_i")
    if batch:  # the innermost batch loop on blockIdx.z, any other serial
        s.bind(kernel, batch[-1], "blockIdx.z")
    s.bind(kernel, "i_o_o", "blockIdx.y")
    s.bind(kernel, "j_o_o", "blockIdx.x")
    s.bind(kernel, "i_o_i", "threadIdx.z")
    s.bind(kernel, "j_o_i", "threadIdx.y")
    s.cache_write(kernel, "j_o_i")
    lanes = [n for n in ("j_o_i_cw_i0", "j_o_i_wb_i0") if n in s.loops(kernel)]
    s.block_stride(kernel, WARP, *lanes)
    s.split(kernel, "k", bk)
    s.split(kernel, "k_o", 1)
    s.cache_read(kernel, "k_o_o", a)
    s.cache_read(kernel, "k_o_i", b)
    s.split(kernel, "i_i", intrinsic.m)
    s.split(kernel, "j_i", intrinsic.n)
    s.split(kernel, "k_i", intrinsic.k)
    s.reorder(kernel, "k_i_o", "i_i_o", "j_i_o", "i_i_i", "j_i_i", "k_i_i")
    tiles = s.fuse(kernel, "i_i_o", "j_i_o")
    s.unroll(kernel, tiles, 0)
    heads = [name for name in s.loops(kernel) if re.fullmatch(r"i_i_i(_u\d+)?", name)]
    for head in heads:
        s.tensorize(kernel, head, intrinsic.name)
    # the staging arrays are f32 (an FP16 tile's halves use half of its array)
    staged = (tile.rows * bk + bk * tile.cols) * 4
    pipelined = double_buffer_step(s, kernel, "k_o_o", staged)
    grid = f"{batch[-1]} -> blockIdx.z, " if batch else ""
    return (
        f"tensor cores ({intrinsic.name}: {len(heads)} WMMA tile(s) of "
        f"{intrinsic.m}x{intrinsic.n}x{intrinsic.k} a warp a step): {grid}{tile}, "
        f"k by {bk}, {a} and {b} staged in __shared__ (rounded to {precision} by "
        f"the copy), {pipelined}"
    )


def _tile(m: int, n: int) -> WarpTile | None:
    """The first tile of ``TILES`` that divides M and N with at least
    ``MIN_BLOCKS`` blocks, else the one that divides with the most."""
    fits = [
        t
        for t in TILES
        if m % t.rows == 0 and n % t.cols == 0 and m // t.rows <= MAX_GRID_DIM["y"]
    ]
    for t in fits:
        if (m // t.rows) * (n // t.cols) >= MIN_BLOCKS:
            return t
    return max(fits, key=lambda t: (m // t.rows) * (n // t.cols), default=None)


def _operands(s: Schedule, kernel: str) -> tuple[str, str]:
    """The names of A and B: the kernel arguments the ``j`` loop's body loads at
    ``[.., i, k]`` and ``[.., k, j]`` (``cache_read`` finds its buffer by name)."""
    _, i_loop = find_loop(s.module, "tensor cores", kernel, "i")
    _, k_loop = find_loop(s.module, "tensor cores", kernel, "k")
    _, j_loop = find_loop(s.module, "tensor cores", kernel, "j")
    i, k, j = iv(i_loop), iv(k_loop), iv(j_loop)
    found: dict[str, str] = {}
    for op in i_loop.body.walk():
        if not isinstance(op, affine.LoadOp) or len(op.indices) < 2:
            continue
        last = (op.indices[-2], op.indices[-1])
        role = "a" if last == (i, k) else "b" if last == (k, j) else None
        if role is not None and op.memref.name_hint:
            found[role] = op.memref.name_hint
    if set(found) != {"a", "b"} or found["a"] == found["b"]:
        raise NotApplicable(
            "A and B must be two named buffers loaded at [.., i, k] and [.., k, j]"
        )
    return found["a"], found["b"]


def _batch_loops(s: Schedule, kernel: str) -> list[str]:
    """The loops around ``i`` (a batched matmul's), those of one iteration unrolled
    away; the others, outer first."""
    _, i_loop = find_loop(s.module, "tensor cores", kernel, "i")
    around: list[str] = []
    op = i_loop.parent_op()
    while isinstance(op, affine.ForOp):
        around.insert(0, str(loop_name(op)))
        op = op.parent_op()
    extents = s.extents(kernel)
    for name in [b for b in around if extents[b] == 1]:
        s.unroll(kernel, name, 0)
    return [b for b in around if extents[b] != 1]


__all__ = [
    "PRECISIONS",
    "TILES",
    "WarpTile",
    "requested",
    "requesting",
    "tensor_core_matmul",
]
