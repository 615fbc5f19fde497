"""Double-buffered staging: a ``double_buffer``ed loop's ``__shared__`` buffers in
two stages, the next iteration's tiles copied while this one computes.

``double_buffer`` (``qidao/passes/schedule/double_buffer.py``) marks a serial loop
``k`` in ``[lb, ub)`` whose body starts with ``cache_read`` staging copies (at its
top, or at the top of a loop of one trip there: the matmul's ``k_o_o`` and
``k_o_i``). For each of those buffers that ``../staging.py`` stages in
``__shared__`` (:attr:`Staging.pipelined` says which), :func:`write_pipelined`
(through :class:`PipelineWriter`, the writer of a launch) writes:

- the array with two stages, ``__shared__ T buf[2 * N]`` (stage ``s`` at ``buf +
  s * N``), declared before the loop (the 48 KiB limit counts it twice);
- before the loop, the copy of iteration ``lb`` into stage ``lb & 1``;
- at the top of iteration ``k``: the wait for this thread's copies of stage ``k &
  1``, a ``__syncthreads()``, then (when ``k + 1 < ub``) the copy of iteration
  ``k + 1`` into stage ``(k + 1) & 1``: the copy's code written with the loop's
  counter named ``(k + 1)`` (and a loop of one trip's counter its start);
- the body, which reads stage ``k & 1`` through ``T* const buf_s = buf + (k & 1)
  * N`` and keeps no barrier of its own for these buffers.

Barriers: one per iteration, placed before the prefetch. At the top of iteration
``k`` the ``__syncthreads()`` does two things at once. (1) Every thread's copies
into stage ``k & 1`` (issued before the loop or during iteration ``k - 1``, and
waited for by each thread just before) are done and visible before anyone reads
the stage. (2) Every thread has finished iteration ``k - 1``, the last reader of
stage ``(k - 1) & 1 = (k + 1) & 1``, before any thread's prefetch overwrites it.
So no barrier is needed at the end of the iteration: the order "prefetch, wait,
barrier, compute, barrier" would need two per iteration for the same overlap (the
copy of ``k + 1`` runs during the compute of ``k`` either way). After the loop one
more barrier when a serial loop is around it: the next time through, the copy of
the first iteration overwrites a stage slow threads may still read.

Copies. A copy from a kernel argument whose element is 4, 8 or 16 bytes and that
does not round (a tensor-core input is rounded to TF32 or half by its staging
copy: ``wmma.py``) is asynchronous: each point is one
``__pipeline_memcpy_async(dst, src, sizeof(T))`` (``cp.async`` on sm_80+; global
to shared without going through registers), the points of one stage one
``__pipeline_commit()``, waited for with ``__pipeline_wait_prior(0)`` (only one
group is in flight at the wait). Any other copy (rounding, or from a buffer
that is not a kernel argument) stays synchronous, still double-buffered: it
writes the other stage, which the next barrier publishes. ``<cuda_pipeline.h>``
is included under ``__CUDACC__`` (:func:`pipeline_preamble`); the emulator
(``qidao/runtime/cuda.py``) defines the three calls (a ``memcpy``, two no-ops).

Before (the default matmul 64 x 64 x 64: ``k_o_o`` runs 4 times, a_pack at its
top, b_pack at the top of ``k_o_i``; ``double_buffer(k_o_o)``), as the emitter
wrote it without the mark::

    for (long long k_o_o = 0; k_o_o < 4; ++k_o_o) {
      __shared__ __align__(32) float a_pack[1024];
      for (...) { ... a_pack[...] = a[...]; }
      for (long long k_o_i = 0; k_o_i < 1; ++k_o_i) {
        __shared__ __align__(32) float b_pack[1024];
        for (...) { ... b_pack[...] = b[...]; }
        __syncthreads();  // a_pack, b_pack staged
        for (long long k_i = 0; k_i < 16; ++k_i) { ... a_pack ... b_pack ... }
        __syncthreads();  // the next copy into b_pack waits for every thread's reads
      }
    }

After::

    __shared__ __align__(32) float a_pack[2 * 1024];  // 2 stages of 64 x 16, ...
    __shared__ __align__(32) float b_pack[2 * 1024];  // 2 stages of 16 x 64: ...
    {  // k_o_o = 0: a_pack, b_pack into stage 0
      float* const a_pack_n = a_pack;
      for (...) { ...; __pipeline_memcpy_async(&a_pack_n[...], &a[...], sizeof(float)); }
      float* const b_pack_n = b_pack;
      for (...) { ...; __pipeline_memcpy_async(&b_pack_n[...], &b[...], sizeof(float)); }
      __pipeline_commit();
    }
    for (long long k_o_o = 0; k_o_o < 4; ++k_o_o) {
      __pipeline_wait_prior(0);  // this thread's copies of stage k_o_o & 1
      __syncthreads();  // a_pack, b_pack: stage k_o_o & 1 staged, every thread
                        // done with stage (k_o_o + 1) & 1
      if (k_o_o + 1 < 4) {  // k_o_o + 1 into stage (k_o_o + 1) & 1
        float* const a_pack_n_1 = a_pack + ((k_o_o + 1) & 1) * 1024;
        ...  (the copies, with (k_o_o + 1) for k_o_o and 0 for k_o_i)
        __pipeline_commit();
      }
      float* const a_pack_s = a_pack + (k_o_o & 1) * 1024;
      float* const b_pack_s = b_pack + (k_o_o & 1) * 1024;
      for (long long k_o_i = 0; k_o_i < 1; ++k_o_i) {
        for (long long k_i = 0; k_i < 16; ++k_i) { ... a_pack_s ... b_pack_s ... }
      }
    }
"""

from __future__ import annotations

import math
from functools import partial

from xdsl.dialects import affine, func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue

from qidao.compiler.targets.cuda.emit.c_types import c_type
from qidao.compiler.targets.cuda.emit.shared_memory import KernelWriter
from qidao.compiler.targets.cuda.emit.writer import Pointer
from qidao.compiler.targets.cuda.staging import Staging
from qidao.passes.schedule.bind import bound_axis
from qidao.passes.schedule.double_buffer import staged_copies
from qidao.passes.schedule.loops.nest import (
    constant_bounds,
    constant_of,
    iv,
    loop_name,
    root_buffer,
)
from qidao.passes.schedule.tensorize import tensorized

PIPELINE_PREAMBLE = """\
// Double-buffered staging (double_buffer): cp.async from <cuda_pipeline.h>; the
// emulator brings its own.
#ifdef __CUDACC__
#include <cuda_pipeline.h>
#endif
"""

ASYNC_SIZES = (4, 8, 16)
"""The element sizes ``cp.async`` copies (bytes)."""


def pipeline_preamble(source: str) -> str:
    """:data:`PIPELINE_PREAMBLE` when ``source`` uses ``__pipeline_*`` calls."""
    return PIPELINE_PREAMBLE if "__pipeline_" in source else ""


class PipelineWriter(KernelWriter):
    """The writer of a launch: :class:`KernelWriter` (``__shared__`` staging), and
    the ``double_buffer``ed loops with their buffers in two stages."""

    def op(self, op: Operation) -> None:
        if isinstance(op, affine.ForOp) and op in self.pipelined:
            write_pipelined(self, op)
            return
        super().op(op)


def write_pipelined(w: KernelWriter, loop: affine.ForOp) -> None:
    """The double-buffered loop ``loop`` (the module docstring)."""
    order = [c.alloca for c in staged_copies(loop)]
    stagings = [w.staging[a] for a in order if a in w.staging]
    bounds = constant_bounds(loop)
    assert bounds is not None and stagings
    lb, ub = bounds
    counter = iv(loop)
    k = w.fresh(loop_name(loop), "k")
    bases = [w.declare_shared(s.alloca, s) for s in stagings]
    quick = [_asynchronous(s) for s in stagings]
    names = ", ".join(bases)
    w.line(f"{{  // {k} = {lb}: {names} into stage {lb & 1}")
    w.depth += 1
    _copies(w, loop, stagings, bases, quick, str(lb), str(lb & 1))
    w.depth -= 1
    w.line("}")
    w.line(f"for (long long {k} = {lb}; {k} < {ub}; ++{k}) {{")
    w.depth += 1
    w.names[counter] = k
    if any(quick):
        w.line(f"__pipeline_wait_prior(0);  // this thread's copies of stage {k} & 1")
    w.line(
        f"__syncthreads();  // {names}: stage {k} & 1 staged, every thread done "
        f"with stage ({k} + 1) & 1"
    )
    w.line(f"if ({k} + 1 < {ub}) {{  // {k} + 1 into stage ({k} + 1) & 1")
    w.depth += 1
    _copies(w, loop, stagings, bases, quick, f"({k} + 1)", f"(({k} + 1) & 1)")
    w.depth -= 1
    w.line("}")
    w.names[counter] = k
    for s, base in zip(stagings, bases, strict=True):
        stage = w.fresh(f"{base}_s")
        elem = _elem(s)
        w.line(f"{elem}* const {stage} = {base} + ({k} & 1) * {math.prod(s.shape)};")
        w.pointers[s.alloca.memref] = Pointer(stage, _type(s), s)
    w.block(loop.body.block)
    w.depth -= 1
    w.line("}")
    for s, base in zip(stagings, bases, strict=True):
        w.pointers[s.alloca.memref] = Pointer(base, _type(s), s)
    w.synced = False
    if _serial_around(loop):
        w.line(
            f"__syncthreads();  // the next copy into {names} waits for every "
            "thread's reads"
        )


def _copies(
    w: KernelWriter,
    loop: affine.ForOp,
    stagings: list[Staging],
    bases: list[str],
    quick: list[bool],
    k: str,
    stage: str,
) -> None:
    """The copies of iteration ``k`` (a C expression) into stage ``stage``."""
    counter = iv(loop)
    for s, base, fast in zip(stagings, bases, quick, strict=True):
        pointer = w.fresh(f"{base}_n")
        offset = "" if stage == "0" else f" + {stage} * {math.prod(s.shape)}"
        w.line(f"{_elem(s)}* const {pointer} = {base}{offset};")
        w.pointers[s.alloca.memref] = Pointer(pointer, _type(s), s)
        holder = s.alloca.parent_op()
        assert isinstance(holder, affine.ForOp)
        w.names[counter] = k
        if holder is not loop:  # the loop of one trip: its only iteration
            w.names[iv(holder)] = str(constant_of(holder.lowerBoundMap.data))
        w.staged_copy(s, partial(_async_point, w, s) if fast else None)
        if holder is not loop:
            del w.names[iv(holder)]
    if any(quick):
        w.line("__pipeline_commit();")


def _async_point(w: KernelWriter, s: Staging) -> None:
    """One point of a copy as ``cp.async``: ``&dst[..]`` from ``&src[..]``."""
    load, store = list(s.loops[-1].body.block.ops)[:2]
    assert isinstance(load, affine.LoadOp) and isinstance(store, affine.StoreOp)
    src = w.access(load.memref, w.map_indices(load.map.data, load.indices), load)
    dst = w.access(store.memref, w.map_indices(store.map.data, store.indices), store)
    w.line(f"__pipeline_memcpy_async(&{dst}, &{src}, sizeof({_elem(s)}));")


def _asynchronous(s: Staging) -> bool:
    """True when the copy can be ``cp.async``: it reads a kernel argument (global
    memory), its element is 4, 8 or 16 bytes, and no tensor-core tile reads the
    buffer (whose copy rounds it)."""
    root = root_buffer(s.source)
    if not isinstance(root, BlockArgument) or not isinstance(
        root.owner.parent_op(), func.FuncOp
    ):
        return False  # cp.async copies from global memory only
    element = _type(s).get_element_type()
    if s.nbytes // math.prod(s.shape) not in ASYNC_SIZES or element != _source_element(
        s.source
    ):
        return False
    for use in s.alloca.memref.uses:
        op = use.operation.parent_op()
        while op is not None and not isinstance(op, func.FuncOp):
            if tensorized(op) is not None:
                return False
            op = op.parent_op()
    return True


def _source_element(source: SSAValue) -> object:
    t = source.type
    return t.get_element_type() if isinstance(t, MemRefType) else None


def _serial_around(loop: affine.ForOp) -> bool:
    op = loop.parent_op()
    while isinstance(op, affine.ForOp | affine.IfOp):
        if isinstance(op, affine.ForOp) and bound_axis(op) is None:
            return True
        op = op.parent_op()
    return False


def _type(s: Staging) -> MemRefType:
    t = s.alloca.memref.type
    assert isinstance(t, MemRefType)
    return t


def _elem(s: Staging) -> str:
    return c_type(_type(s).get_element_type())


__all__ = [
    "PIPELINE_PREAMBLE",
    "PipelineWriter",
    "pipeline_preamble",
    "write_pipelined",
]
