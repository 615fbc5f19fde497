"""``block_stride``: the ``threadIdx.x`` threads of a block share one loop, dealing out
its iterations; a reduction it carries is combined across them.

    affine.for %r ... iter_args(%acc = %init) { ... } {qd.loop = "r"}
        ==>  affine.for %r ... iter_args(%acc = %init) { ... }
                 {qd.loop = "r", qd.bind = "threadIdx.x", qd.threads = 256}

Options: ``kernel``, ``loop`` and ``threads`` (a multiple of 32, at most 1024), e.g.
``block-stride{kernel="main_k0_softmax" loop="r_max" threads=256}``. The GPU
counterpart of a row reduction: TVM binds a reduction axis to ``threadIdx.x``
and lowers it to an all-reduce; here the loop keeps its bounds and thread ``t``
of ``threadIdx.x`` runs iterations ``t``, ``t + T``, ``t + 2T``, ... (a
*block-stride loop*: neighbouring threads read neighbouring elements, so each
step is one coalesced access of the block). The code around it runs in every
thread. After it, each value the loop carries is each thread's partial; the
CUDA emitter combines the partials across the block (``__shfl_xor_sync`` within
each warp, then one ``__shared__`` slot per warp), so every thread holds the
total, and a ``__syncthreads()`` ends the loop, so the code after it sees the
block's writes. Several loops of one nest may be block-stride loops (a
softmax's max, sum and output passes over one row), each in turn.

With ``blockIdx.x`` bound around it, a block runs a row (``bind`` the row loop
first); with ``threadIdx.y`` too, a block runs several rows, ``T`` threads each
(``T = 32``: a warp per row, no shared memory). What makes it legal (``bind``'s
rules for the chain of bound loops, and rules 1-5 in ``loops/block.py``): the
same ``T`` for every block-stride loop of the nest, inside every bound loop;
bounds the whole block agrees on (barriers); iterations that write disjoint
elements; carried values that are accumulations (add, fma, max, min); and code
around the loops that writes other buffers only from one thread (a row's total,
stored under ``threadIdx.x == 0``). Errors are ``ScheduleError`` subclasses
naming the kernel, the loop and the reason; a refused request leaves the
module unchanged.

Before (``bind{kernel="k" loop="i" axis="blockIdx.x"}``, then
``block-stride{kernel="k" loop="r" threads=256}``: a block per row, the sum of
each row across 256 threads):
```mlir
func.func @k(%x: memref<64x4096xf32>, %out: memref<64xf32>) attributes {qd.kernel = "tg.reduce_sum"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 64 {
    %sum = affine.for %r = 0 to 4096 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %r] : memref<64x4096xf32>
      %s = arith.addf %acc, %v : f32
      affine.yield %s : f32
    } {qd.loop = "r"}
    affine.store %sum, %out[%i] : memref<64xf32>
  } {qd.loop = "i"}
  func.return
}
```
After:
```mlir
    %sum = affine.for %r = 0 to 4096 iter_args(%acc = %zero) -> (f32) {
      ...
    } {qd.loop = "r", qd.bind = "threadIdx.x", qd.threads = 256 : i64}
    affine.store %sum, %out[%i] : memref<64xf32>
  } {qd.loop = "i", qd.bind = "blockIdx.x"}
```
The CUDA C (the store by one thread of the block)::

    float acc0 = -0.0f;                        // this thread's partial
    for (long long r = (long long)threadIdx.x; r < 4096; r += 256) { ... }
    acc0 = qd_block_sum(acc0) ...              // shuffles, 8 warps' slots
    const float sum = 0.0f + acc0;
    __syncthreads();
    if (threadIdx.x == 0) { out[i] = sum; }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr
from xdsl.passes import ModulePass

from qidao.dialects.attributes import BIND_ATTR, PARALLEL_ATTR, THREADS_ATTR
from qidao.passes.schedule.bind import bound_axis, check_gpu_nest, top_level_nest
from qidao.passes.schedule.loops.block import threads_problem
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
    ScheduleError,
)
from qidao.passes.schedule.loops.nest import find_loop, loop_name, parse_loop_list


def block_stride(module: ModuleOp, kernel: str, threads: int, loops: list[str]) -> None:
    """Check and make ``loops`` of ``kernel`` (of one nest) block-stride loops over
    ``threads`` threads of ``threadIdx.x``, all at once: the nest is checked with
    all of them, since a softmax's passes are legal together and not one by one."""
    if not loops:
        raise InvalidArgumentError("block_stride", kernel, "", "name at least one loop")
    if len(set(loops)) != len(loops):
        raise InvalidArgumentError(
            "block_stride", kernel, loops[0], f"a loop is named twice: {loops}"
        )
    fn = None
    targets = []
    for loop in loops:
        fn, target = find_loop(module, "block_stride", kernel, loop)
        problem = threads_problem(threads)
        if problem is not None:
            raise InvalidArgumentError("block_stride", kernel, loop, problem)
        current = bound_axis(target) or (
            "threads" if PARALLEL_ATTR in target.attributes else None
        )
        if current is not None:
            raise IllegalScheduleError(
                "block_stride", kernel, loop, f"the loop is already bound to {current}"
            )
        targets.append(target)
    assert fn is not None
    cpu = [op for op in fn.walk() if PARALLEL_ATTR in op.attributes]
    if cpu:
        raise IllegalScheduleError(
            "block_stride",
            kernel,
            loops[0],
            f"the kernel's loop '{loop_name(cpu[0])}' runs on CPU threads "
            "(qd.parallel); CPU threads and GPU axes do not mix",
        )
    nests = {id(top_level_nest(fn, t)): top_level_nest(fn, t) for t in targets}
    if len(nests) > 1:
        raise IllegalScheduleError(
            "block_stride",
            kernel,
            loops[0],
            f"the loops {loops} are in different top-level nests (launches); "
            "schedule each nest with its own block_stride",
        )
    for target in targets:
        target.attributes[BIND_ATTR] = StringAttr("threadIdx.x")
        target.attributes[THREADS_ATTR] = IntegerAttr(threads, IntegerType(64))
    try:
        check_gpu_nest(fn, next(iter(nests.values())), kernel, loops[0])
    except ScheduleError as err:
        for target in targets:
            del target.attributes[BIND_ATTR]
            del target.attributes[THREADS_ATTR]
        if err.primitive == "bind":  # the chain's rules, said by this primitive
            raise type(err)("block_stride", kernel, loops[0], err.reason) from err
        raise


@dataclass(frozen=True)
class BlockStridePass(ModulePass):
    """Deal a loop's iterations out to a block's threadIdx.x threads (block-stride)."""

    name = "block-stride"

    kernel: str
    threads: int
    loops: str | tuple[str, ...]

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        block_stride(op, self.kernel, self.threads, parse_loop_list(self.loops))


__all__ = ["BlockStridePass", "block_stride"]
