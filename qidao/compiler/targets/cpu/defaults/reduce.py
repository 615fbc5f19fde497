"""Default schedule of a reduction that keeps its last axis innermost (a global
average pool, the squeeze-and-excitation pool of an NHWC tensor): blocks of channels
held in vector registers across the whole reduction.

The kernel (``passes/kernels/lowering/reduce.py``) is an init nest, the
accumulation nest ``i.. (kept), r.. (reduced), c (the kept last axis)`` that adds
into the output, and for a mean a norm nest. The schedule, on the accumulation nest::

    split c by B                    B: the largest multiple of 16 lanes that
                                    divides C, up to 16 vectors (256 floats)
    reorder c_o, r.., c_i           each block of B channels walks the whole
                                    reduction
    parallel                        with threads: the outermost kept loop or c_o
                                    with enough iterations, when the work pays
                                    (``loops.PARALLEL_MIN_ELEMENTS``); B shrinks
                                    so that c_o gives every thread a block when
                                    no kept loop does
    vectorize c_i by 16             <16 x float> (8 lanes of double)

    for r0 in H: for r1 in W:              for c_o in C / B:
      for c in C:                    ==>     for r0 in H: for r1 in W:
        out[c] += x[r0, r1, c]                 out[c_o*B : +B] += x[r0, r1, c_o*B : +B]

The ``B / 16`` vectors of ``out`` a block adds into sit at the same address in every
iteration of ``r0, r1``, so LLVM keeps them in registers for the whole reduction
(loaded once, stored once). One block of all ``C`` channels, when it fits, reads the
input once, front to back; smaller blocks read it in ``C / B`` strided passes, which
cost more once the input outgrows L2 (1x56x56x128: 19 µs with one block of 128, 33
µs with two of 64; 1x56x56x256: 33 µs with blocks of 256, 41 µs with 128), hence up
to 16 of the 32 AVX-512 registers. The init and norm nests (``C`` elements each)
are left to LLVM. Each output element is still summed in the order of the
reduction loops (bit-identical to the lowered nest).

Left as lowered (LLVM vectorizes ``c`` on its own, its accumulators in memory) when
``C`` is under one register; when no multiple of 16 divides ``C`` (``C = 24``), ``c``
is vectorized whole, ``C mod 16`` in a scalar tail, accumulated in memory.

Measured (AMD EPYC, AVX-512, one thread, float32 mean over H and W of ``1xHxWxC``
unless marked; µs, kernel medians interleaved in one process on a shared 2-core
machine, +-10% between runs): the reduced-innermost nest this replaced ("before"),
the new nest as lowered (LLVM alone), this schedule, and PyTorch's ``mean(dim=(2,
3))`` on a channels-last tensor (a whole call; a qidao call adds about 2 µs).

================  ======  =======  ========  =======
shape             before  lowered  schedule  PyTorch
================  ======  =======  ========  =======
64x64x32          106     4.8      4.8       12.6
32x32x96          76      3.5      3.5       10.7
16x16x144         24      2.3      1.3       8.3
8x8x240           0.63    0.94     0.59      7.4
8x8x672           1.56    3.4      1.65      8.7
4x4x1152          0.80    1.55     1.01      9.0
7x7x1280          5.8     3.8      3.0       8.8
56x56x128         414     17       18        44
32x32x24          19      1.1      0.88      8.5
32x32x7           5.6     0.86     (none)    8.2
64x64x32 max      129     65       16        14.5
32x32x96 axis 1   29      8.5      8.5       117
32x32x96 f64      76      8.0      8.1       22
================  ======  =======  ========  =======

The first eight are EfficientNet's SE pools (128x128 input): its eight reduction
kernels took 229 µs before and 30 µs after, end to end. With only a few ``H * W``
(8x8, 4x4) the reduced-innermost nest was already fast, since LLVM unrolled the
reduction and vectorized the channel loop around it, and stays 0.05-0.2 µs ahead.
A max is bound by the latency of its NaN-propagating ``llvm.maximum`` chain
(several instructions on x86): two accumulators at C = 32 give 16 µs. At two threads
(c_o, or a kept loop, on libgomp's threads): 64x64x32 4.5 µs (blocks of 16),
56x56x128 14.6 µs, 32x32x96 over axis 1 7.4 µs.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import AnyFloat, MemRefType

from qidao.compiler.defaults import NotApplicable, is_lone_reduction
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.loops import (
    PARALLEL_MIN_ELEMENTS,
    parallel_outer,
)
from qidao.passes.kernels.lowering.reduce import INIT_SUFFIX, NORM_SUFFIX
from qidao.passes.schedule.loops.nest import kernel_functions, kernel_loops

__all__ = ["is_reduce_kernel", "schedule_reduce"]

REGISTER_BITS = 512
"""One AVX-512 register: 16 float32 lanes, 8 float64."""
MAX_VECTORS = 16
"""Vectors of accumulators a block of channels keeps in registers at most."""


def is_reduce_kernel(s: Schedule, kernel: str) -> bool:
    """True for a lone reduction lowered with its last axis innermost: its
    accumulator is the output (no loop carries ``iter_args``), where a row
    reduction carries it in ``iter_args``."""
    if not is_lone_reduction(s.kernels()[kernel]):
        return False
    loops = kernel_loops(kernel_functions(s.module)[kernel])
    return bool(loops) and not any(loop.inits for loop in loops)


def schedule_reduce(s: Schedule, kernel: str, threads: int) -> str:
    """The channel loop of the accumulation nest in register blocks around the
    reduction, on vectors; with threads, the outermost loop around the reduction
    that has enough iterations in parallel, when the work pays."""
    nest = [
        name
        for name in s.loops(kernel)
        if not name.endswith((INIT_SUFFIX, NORM_SUFFIX))
    ]
    reduced = [name for name in nest if name.startswith("r")]
    if not reduced or nest[-1] in reduced:
        raise NotApplicable(f"expected the kept last axis innermost: {nest}")
    channel, kept = nest[-1], nest[: nest.index(reduced[0])]
    extents = s.extents(kernel)
    sizes = {name: extents[name] for name in nest}
    if any(size is None for size in sizes.values()):
        raise NotApplicable("a loop has non-constant bounds")
    size = {name: extent or 0 for name, extent in sizes.items()}
    lanes, element = _register_lanes(s, kernel)
    channels = size[channel]
    if channels < lanes:
        raise NotApplicable(
            f"{channel}: {channels} elements, fewer than {lanes} lanes "
            "(LLVM gets the loop as lowered)"
        )
    vector = f"<{lanes} x {element}>"
    # blocks only shrink for threads that will run: when the work pays for them
    elements = math.prod(size.values())
    spread = threads if elements >= PARALLEL_MIN_ELEMENTS else 1
    block = _block(channels, lanes, spread, [size[name] for name in kept])
    inner, around = channel, kept
    if block is None:
        block = channels
        done = (
            f"{channel} on {vector} vectors, accumulated in memory (no multiple of "
            f"{lanes} divides {channels})"
        )
    else:
        done = (
            f"{channel} in blocks of {block} ({block // lanes} x {vector} "
            "accumulators) around the reduction"
        )
        if block < channels:
            outer, inner = s.split(kernel, channel, block)
            s.reorder(kernel, outer, *reduced, inner)
            around = [*kept, outer]
    if threads > 1:  # before vectorize: parallel's check does not know vectors
        reduction = math.prod(size[name] for name in reduced)
        try:
            done += "; " + parallel_outer(s, kernel, threads, around, reduction * block)
        except NotApplicable as why:
            done += f"; {why}"
    s.vectorize(kernel, inner, lanes)
    return done


def _block(channels: int, lanes: int, threads: int, kept: list[int]) -> int | None:
    """Channels a block accumulates in registers: the largest multiple of ``lanes``
    up to ``MAX_VECTORS`` vectors that divides ``channels`` (None: none does). With
    threads and no kept loop (extents ``kept``) of ``threads`` iterations, the
    largest that still gives every thread a block, if one does."""
    fits = [
        b for b in range(lanes, MAX_VECTORS * lanes + 1, lanes) if channels % b == 0
    ]
    if not fits:
        return None
    if threads > 1 and all(extent < threads for extent in kept):
        spread = [b for b in fits if channels // b >= threads]
        if spread:
            return spread[-1]
    return fits[-1]


def _register_lanes(s: Schedule, kernel: str) -> tuple[int, str]:
    """Lanes of one register of the output's element type, and its C name."""
    out = kernel_functions(s.module)[kernel].body.block.args[-1].type
    assert isinstance(out, MemRefType)
    element = out.get_element_type()
    bits = element.bitwidth if isinstance(element, AnyFloat) else 32
    return REGISTER_BITS // bits, "double" if bits == 64 else "float"
