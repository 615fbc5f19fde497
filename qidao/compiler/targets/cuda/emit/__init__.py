"""The CUDA C emitter: a ``schedule``-stage module -> CUDA C + a launch plan.

Input: the kernels as affine loop nests on memrefs (after the schedule; no
``expand-math``: ``math.exp`` becomes CUDA's ``expf``), and the host ``@main`` that
calls them. Output: a :class:`qidao.runtime.cuda.CudaProgram`.

Launches. Each top-level loop nest of a kernel that holds GPU-bound loops
(``qd.bind``, see ``qidao/passes/schedule/bind.py``) is one ``extern "C" __global__``
function; a run of top-level ops without bound loops is one more, launched
``<<<1, 1>>>`` and marked ``serial`` in the plan (it runs, on one GPU thread; the
plan and ``qidao compile --emit cuda`` say so). A kernel that is one launch keeps
its name; otherwise the functions are ``<kernel>__<first loop>``. Pure top-level
ops (constants) are repeated in each function that uses them; any other value
that one launch computes and another uses is refused.

Code. A bound loop ``for i in [lb, ub) step s`` becomes ``i = lb + s * blockIdx.x``
(the launch has exactly the loop's extent on that axis), with a guard ``if (i <
...)`` only for the non-constant results of a ``min`` upper bound. Other loops are
C ``for`` loops (``iter_args`` as variables updated at the end of the body);
``affine.if`` an ``if``; ``affine.apply``/``min``/``max`` index arithmetic (``mod``,
``floordiv`` and ``ceildiv`` round as affine does, through small helpers).
``affine.load``/``store`` index a kernel parameter (``float* __restrict__`` when
the argument has ``llvm.noalias``, ``const`` when the launch never writes it) at
the memref type's offset plus the sum of stride × index, so strided layouts need
nothing more; views are the same pointer with their own type. ``memref.alloca``
(and ``alloc``) inside a kernel is a local C array: per thread, in registers or
local memory, except the staging buffers below. Indices are ``long long``.

Shared memory. Every thread of a launch runs the whole nest and takes one
iteration of each bound loop, so the code outside the ``threadIdx`` loops (the
serial loops between the ``blockIdx`` loops and the ``threadIdx`` loops, e.g. the
k-tile loop ``k_o`` of a tiled matmul) is run by all the threads of a block in
lock-step: the ``threadIdx`` loops already sit inside those serial loops. That code
is the same in every thread of a block: its values come from constants, ``blockIdx``
and loop counters, and from memory that ``bind``'s rule 4 keeps from changing under
it (no thread writes what it reads). A ``cache_read`` buffer placed there is staged
in ``__shared__`` memory, once per block instead of once per thread, when
(``staging.py``):

1. it is a ``memref.alloca`` followed by its copy loops ``<loop>_cr_i<d>`` (constant
   bounds from 0, ``min`` clips allowed, step 1) whose body stores a load into
   ``buffer[i0, ..., in]``, and every other use of it is a load;
2. it is inside a ``blockIdx`` loop (outside every ``blockIdx`` loop there is no
   block to share it) and outside every ``threadIdx`` loop, or inside
   ``threadIdx`` loops as *slices* (below);
3. the loops and ``affine.if`` around it are bounded by constants, loop counters
   and pure arithmetic on them (provably uniform, so every thread of the block
   reaches its barriers); a load or an ``iter_args`` value there is refused;
4. the staging buffers of one launch take at most 48 KiB (CUDA's static shared
   memory per block); more is refused.

The copy loops then run cooperatively: the points of the flattened copy (``q =
i0 * n1 * ... + in``; clipped points skipped by a guard) are dealt out to the
block's threads, thread ``qd_tid = threadIdx.x + blockDim.x * (threadIdx.y +
blockDim.y * threadIdx.z)`` taking ``q = qd_tid``, ``qd_tid + threads``, ... (the
block's shape is the launch's constant). A ``__syncthreads()`` follows each run of
copies (before any read); when a serial loop is around the buffer (its block runs
again, and the next copy would overwrite a tile other threads still read), another
one ends the block that holds it. Two barriers merge: the one after a copy waits
for the copy at the top of a serial loop right after it that runs at least once
(``x_pack`` at ``k_o_o``, then ``w_pack`` at the top of ``k_o_i``: one barrier
after both), and the one ending a block is left out when the block's last
statement already was a barrier every thread ran (closing a loop that runs at
least once). Barriers sit only in that uniform code, never inside a guarded
``threadIdx`` loop, so no thread skips one (the guard of a ``blockIdx`` loop is
the same for the whole block). Refused: a staging buffer that breaks rule 3 or 4,
with a ``CudaEmitError`` naming the kernel, the loop and the reason. Staging
arrays are ``__align__(32)``, so that nvcc loads four floats at a time where a
thread reads them in a row, and WMMA's fragments (256-bit aligned) can load them.

Double buffering. A serial loop that ``double_buffer`` marked (the matmul
defaults' ``k_o_o``) keeps its ``__shared__`` staging buffers in two stages
(``pipeline.py``): iteration ``lb``'s tiles are copied before the loop, and at the
top of iteration ``k``, after one barrier, iteration ``k + 1``'s into the other
stage (``cp.async`` from global memory, a plain copy where the copy rounds), so
the loads overlap the math; one barrier an iteration instead of two.

Slices. Inside ``threadIdx`` loops a ``cache_read`` buffer is each thread's own
tile: the register-tiled matmul (``defaults.py``) puts its ``k_o`` loop inside
the thread loops, and thread ``(ty, tx)`` packs rows ``ty * TM ..`` of A's tile
and columns ``tx * TN ..`` of B's. Threads with the same ``ty`` pack the same
rows, and the slices of all ``ty`` side by side are the block's tile: so the
buffer is staged as one ``__shared__`` array of every slice, the copy dealt out
to the block's threads as above, and each thread reads its slice in it
(``staging.py`` says when: no guard on the thread loops around it, uniform code
between, a source the launch does not write, each thread counter moving one
dimension by exactly the slice's extent, and some threads sharing a slice). The
sliced dimensions are stored last, so a thread's ``TM`` rows of A at one ``k``
are contiguous (two 16-byte loads). Matmul 2048, ``x`` @ ``w``, 16 x 16 threads::

    __shared__ __align__(32) float x_pack[1024];  // 128 x 8, stored in dimension
        // order [1, 0]: each thread's 8 x 8 slice (16 slices along dimension 0
        // by i_o_i), staged by the block's threads
    for (long long k_o_o_cr = qd_tid; k_o_o_cr < 1024; k_o_o_cr += 256) {
      const long long k_o_o_cr_i0_s = k_o_o_cr / 8;
      const long long i_o_i_s = k_o_o_cr_i0_s / 8;      // whose slice
      const long long k_o_o_cr_i0 = k_o_o_cr_i0_s % 8;  // where in it
      const long long k_o_o_cr_i1 = k_o_o_cr % 8;
      const float v64 = x[(k_o_o_cr_i0 + i_o_o * 128 + i_o_i_s * 8) * 2048
                          + k_o_o_cr_i1 + k_o_o * 8];
      x_pack[i_o_i_s * 8 + k_o_o_cr_i0 + k_o_o_cr_i1 * 128] = v64;
    }
    ...
    const float v66 = x_pack[i_o_i * 8 + (k_o_i * 8 + k_i) * 128];  // its row 0

Block-stride loops. A loop ``block_stride`` gave ``T`` threads runs ``for (r = lb
+ threadIdx.x; r < ub; r += T)``; what it carries is each thread's partial, then
combined across the row so that every thread holds the total; a
``__syncthreads()`` ends it; a store around such loops (a row's total) is made by
``threadIdx.x == 0`` alone (``block_loops.py``, rules in
``qidao/passes/schedule/loops/block.py``).

Soundness. ``bind`` checks each binding when it is made, but the primitives
applied after it (``split``, ``cache_read``, ...) do not rerun its checks, so the
emitter reruns them on every launch's final nest (``check_gpu_nest``) and refuses
with ``bind``'s reason. Rule 4 of ``bind`` (code outside the innermost bound loop
writes only buffers allocated in the nest) treats a staging buffer as each
thread's own; sharing it is still race-free, since each element is copied by one
thread, read only after the barrier that follows the copy, and copied again only
after the barrier that ends the block holding it. A slice staged for several
threads holds what each of them would have copied (the same loads of a buffer
the launch does not write), so sharing it changes no value either.

Vectors. A loop that ``vectorize`` made runs on ``vector<W x T>`` values, each a
C array of its W lanes (registers); arith and math on them are written lane by
lane. A ``vector.load``/``vector.store`` of a kernel argument is one ``float4``
(``float2``, ``double2``) access per 4 (2) lanes where its first element is
provably aligned to that type for every thread (the memref's offset and strides,
and each loop counter's start and step: ``alignment.py``); any other access is
written element by element, and the launch's header comment says which accesses
went wide and why the others did not (``vectors.py``). The elementwise default
schedule vectorizes by 4 (``../defaults.py``): one 16-byte load or store a
thread per f32 access.

Refused with a ``CudaEmitError`` naming the kernel and the op: vectorized
reductions (vector ``iter_args``) and vector ops other than loads, stores and
broadcasts, dynamic shapes or layouts, non-memref kernel arguments, ops the table
below does not know.

Before (a 64x48 @ 48x80 matmul after ``split`` of i, j, k by 16, ``reorder(i_o, j_o,
k_o, i_i, j_i, k_i)``, ``bind`` of i_o, j_o, i_i, j_i to blockIdx.y, blockIdx.x,
threadIdx.y, threadIdx.x, ``cache_read(j_o, "x")`` and ``cache_read(k_o, "w")``)::

    affine.for %k_o = 0 to 3 {
      %w_pack = memref.alloca() : memref<16x16xf32>
      affine.for %k_o_cr_i0 = 0 to 16 {
        affine.for %k_o_cr_i1 = 0 to 16 {
          %1 = affine.load %w[%k_o_cr_i0 + %k_o * 16, %k_o_cr_i1 + %j_o * 16]
          affine.store %1, %w_pack[%k_o_cr_i0, %k_o_cr_i1] : memref<16x16xf32>
      ...
      affine.for %i_i = 0 to 16 { affine.for %j_i = 0 to 16 { ... %w_pack ... }
          {qd.bind = "threadIdx.x"} } {qd.bind = "threadIdx.y"}
    } {qd.loop = "k_o"}

After::

    for (long long k_o = 0; k_o < 3; ++k_o) {
      __shared__ float w_pack[256];  // 16 x 16: staged by the block's threads
      for (long long k_o_cr = qd_tid; k_o_cr < 256; k_o_cr += 256) {
        const long long k_o_cr_i0 = k_o_cr / 16;
        const long long k_o_cr_i1 = k_o_cr % 16;
        const float v1 = w[(k_o_cr_i0 + k_o * 16) * 80 + k_o_cr_i1 + j_o * 16];
        w_pack[k_o_cr_i0 * 16 + k_o_cr_i1] = v1;
      }
      __syncthreads();  // w_pack staged
      {  // loop 'i_i' bound to threadIdx.y
        ...
      }
      __syncthreads();  // the next copy into w_pack waits for every thread's reads
    }

Files (read in this order; each builds on the ones before it):

- ``errors.py``: :class:`CudaEmitError`.
- ``c_types.py``: C types, exact C literals, NumPy dtypes, memref layouts.
- ``affine_exprs.py``: affine expressions and sets as C (``qd_mod``, ...).
- ``scalar_ops.py``: the table of arith and math ops and their C expressions.
- ``preamble.py``: the ``__device__`` helpers every program starts with.
- ``writer.py``: :class:`CWriter`: lines, C names, and the pointer and index of
  every memref access.
- ``alignment.py``: how wide a vector load or store may go (:func:`access_width`):
  the proof that it starts at a multiple of its CUDA vector type's size.
- ``vectors.py``: vector ops as C: ``float4`` loads and stores, lanes as arrays,
  arithmetic lane by lane, the launch header's notes on each access.
- ``statements.py``: :class:`StatementWriter`: one op at a time (constants,
  loads and stores, local arrays, views, vector ops through ``vectors.py``),
  loops (bound and serial), ``if``.
- ``block_loops.py``: block-stride loops (``block_stride``): the iterations dealt
  out to ``threadIdx.x``, a carried reduction combined across the row (warp
  shuffles, a ``__shared__`` slot per warp), the barrier after each.
- ``wmma.py``: a ``tensorize``d tile as ``nvcuda::wmma`` fragments (loads,
  ``mma_sync``, stores; TF32/FP16 conversions in the staging copy).
- ``shared_memory.py``: :class:`KernelWriter`: the statement writer with the
  ``__shared__`` staging buffers, their cooperative copies and the barriers.
- ``pipeline.py``: :class:`PipelineWriter`: the writer of a launch, with the
  ``double_buffer``ed loops: two stages of each ``__shared__`` buffer, the next
  iteration's tiles copied (``cp.async``) while this one computes.
- ``launches.py``: one kernel -> its ``__global__`` functions (which top-level
  ops form a launch, its grid and block, its parameters): :func:`emit_kernel`.
- ``program.py``: the host ``@main`` -> buffers and launches:
  :func:`emit_program`.

Which buffers are staged is decided in ``../staging.py``.
"""

from qidao.compiler.targets.cuda.emit.c_types import c_type
from qidao.compiler.targets.cuda.emit.errors import CudaEmitError
from qidao.compiler.targets.cuda.emit.launches import KernelLaunch, emit_kernel
from qidao.compiler.targets.cuda.emit.program import emit_program

__all__ = ["CudaEmitError", "KernelLaunch", "c_type", "emit_kernel", "emit_program"]
