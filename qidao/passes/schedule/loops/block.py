"""The rules of a launch whose block's threads share loops (``block_stride``): used by
``bind`` and ``block_stride`` (which check them) and the CUDA emitter (which
writes the stores they leave to one thread).

``bind`` checks a nest whose bound loops form a chain: every thread runs the
whole nest and takes one iteration of each bound loop. A *block-stride* loop
(``qd.bind = "threadIdx.x"`` and ``qd.threads = T``, made by ``block_stride``)
is different: the ``T`` threads of ``threadIdx.x`` deal out its iterations
(thread ``t`` takes ``lb + t * step``, ``lb + (t + T) * step``, ...), and the
code around it, inside the chain of bound loops, is run by every thread of the
row. A reduction it carries (``iter_args``) is combined across the ``T``
threads, and every thread gets the total (``qidao/compiler/targets/cuda/emit/``:
warp shuffles, then one ``__shared__`` slot per warp). One block (or, with
``threadIdx.y`` bound around them, one row of threads in the block) runs, say,
a softmax's three passes over one row, all its threads in each pass.

:func:`check_block_nest` proves a nest with block-stride loops safe:

1. Every block-stride loop of the nest has the same ``T`` (a multiple of 32, at
   most 1024); no other loop of the nest is on ``threadIdx.x``. Each is inside
   every loop of the chain (the ``blockIdx`` loops, and ``threadIdx.y``/``z``
   loops for several rows a block), inside no other block-stride loop, and holds
   no bound loop.
2. A barrier follows each block-stride loop (and a reduction has barriers of its
   own), so every thread of the block must reach it: the loops and ``affine.if``
   between the chain and a block-stride loop depend only on constants, kernel
   arguments, ``blockIdx`` and serial loop counters (no load, no thread counter),
   and no ``threadIdx`` loop of the chain has a guard (``min`` bound).
3. Its iterations write disjoint elements (``parallel``'s check, widened over the
   serial loops between the chain and it, the chain's counters fixed): with
   ``T`` threads at once, no two iterations touch an element one of them writes.
4. Each ``iter_args`` value is an accumulation the block can combine: used once,
   by an add (or ``fma``), ``maximumf``, ``minimumf``, ``maxnumf`` or
   ``minnumf`` whose result only the yield uses (``vectorize``'s rule), or passed
   to an inner loop as its start and that loop's result yielded, where the inner
   loop accumulates it so (a reduction over two dimensions). Combining across
   threads reassociates the sum (a tree across the warps instead of one chain),
   as every GPU reduction does; max and min are exact.
5. The code around the block-stride loops (run by every thread of the row: its
   values are the same in all of them, since ``threadIdx.x`` enters only through
   the block-stride loops) writes only buffers allocated in the nest (each
   thread's own), or writes others from one thread (the emitter guards those
   stores with ``threadIdx.x == 0``: a reduction's total stored per row) that
   nothing else in the nest reads or writes; it reads nothing a block-stride loop
   writes, and has no other effects.

Errors are ``IllegalScheduleError``s naming the kernel, the loop being scheduled
and the reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, func, memref, vector
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import is_side_effect_free

from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.gpu import (
    THREAD_AXES,
    accessed_memref,
    allocated_in,
    bound_axis,
    gpu_loops,
    needs_guard,
    stride_threads,
)
from qidao.passes.schedule.loops.nest import MEMREF_VIEWS, iv, loop_name, root_buffer
from qidao.passes.schedule.loops.reductions import REDUCIBLE, register_reduction
from qidao.passes.schedule.parallel import check_parallel

MAX_THREADS = 1024
WARP = 32

_WRITES = (affine.StoreOp, memref.StoreOp, vector.StoreOp)
_READS = (affine.LoadOp, memref.LoadOp, vector.LoadOp)
_ALLOCS = (memref.AllocOp, memref.AllocaOp)
_STRUCTURE = (
    affine.ForOp,
    affine.IfOp,
    affine.YieldOp,
    affine.ApplyOp,
    affine.MinOp,
    memref.DeallocOp,
)


def threads_problem(threads: object) -> str | None:
    """Why ``threads`` cannot be a block-stride loop's thread count, or None."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        return f"threads must be an integer, got {threads!r}"
    if threads < WARP or threads > MAX_THREADS or threads % WARP:
        return (
            f"threads must be a multiple of {WARP} from {WARP} to {MAX_THREADS} "
            f"(whole warps: the reduction combines them with warp shuffles), "
            f"got {threads}"
        )
    return None


def reduction_kind(loop: affine.ForOp, k: int) -> type[Operation] | None:
    """The combining op of ``loop``'s iter_arg #``k`` (rule 4), or None when it is
    not an accumulation the block can combine."""
    reduction = register_reduction(loop, k)
    if reduction is not None:
        use = reduction.acc.get_user_of_unique_use()
        return type(use) if use is not None else None
    block = loop.body.block
    acc = block.args[1 + k]
    inner = acc.get_user_of_unique_use()
    if not isinstance(inner, affine.ForOp) or inner.parent is not block:
        return None
    starts = list(inner.inits)
    if starts.count(acc) != 1:
        return None
    m = starts.index(acc)
    result = inner.results[m]
    terminator = block.last_op
    assert isinstance(terminator, affine.YieldOp)
    if (
        result.get_user_of_unique_use() is not terminator
        or terminator.operands[k] is not result
    ):
        return None
    return reduction_kind(inner, m)


def identity_of(kind: type[Operation]) -> float:
    """The value a thread's partial starts from: ``-0.0`` for add, ``-inf`` for
    max, ``inf`` for min."""
    return REDUCIBLE[kind][1]


def _ancestors(op: Operation, stop: Operation) -> list[Operation]:
    """The ops around ``op`` up to (not including) ``stop``, inner first."""
    found = []
    parent = op.parent_op()
    while parent is not None and parent is not stop:
        found.append(parent)
        parent = parent.parent_op()
    return found


def _uniform(value: SSAValue, scope: Operation) -> bool:
    """True when ``value`` is the same in every thread of the block: a constant,
    a kernel argument, a ``blockIdx`` or serial loop counter, or pure arithmetic
    on those (rule 2)."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        if isinstance(owner, func.FuncOp):
            return True
        if isinstance(owner, affine.ForOp) and value.index == 0:
            return bound_axis(owner) not in THREAD_AXES
        return False
    assert isinstance(value, OpResult)
    op = value.op
    if isinstance(op, affine.ForOp):
        return False  # a carried value: not proven uniform
    if op.regions or not is_side_effect_free(op):
        return False
    return all(_uniform(v, scope) for v in op.operands)


def _buffer_name(value: SSAValue) -> str:
    root = root_buffer(value)
    return f"%{root.name_hint}" if root.name_hint else "a buffer"


class _BlockNest:
    def __init__(
        self,
        fn: func.FuncOp,
        nest: Operation,
        kernel: str,
        loop: str,
        chain: Sequence[affine.ForOp],
        strided: Sequence[affine.ForOp],
    ) -> None:
        self.fn, self.nest, self.kernel, self.loop = fn, nest, kernel, loop
        self.chain, self.strided = list(chain), list(strided)

    def fail(self, reason: str) -> IllegalScheduleError:
        return IllegalScheduleError("block_stride", self.kernel, self.loop, reason)

    def check(self) -> None:
        self.check_threads()
        for loop in self.strided:
            self.check_place(loop)
            self.check_uniform_path(loop)
            self.check_iterations(loop)
            self.check_carried(loop)
        self.check_around()

    def check_threads(self) -> None:
        counts = {stride_threads(loop) for loop in self.strided}
        if len(counts) > 1:
            loops = ", ".join(
                f"'{loop_name(loop)}' ({stride_threads(loop)})" for loop in self.strided
            )
            raise self.fail(
                f"the block-stride loops of one launch share one thread count: {loops}"
            )
        problem = threads_problem(next(iter(counts)))
        if problem is not None:
            raise self.fail(problem)
        for loop in self.chain:
            if bound_axis(loop) == "threadIdx.x":
                raise self.fail(
                    f"loop '{loop_name(loop)}' is bound to threadIdx.x, which the "
                    "block-stride loops of the nest take; bind it to threadIdx.y"
                )

    def check_place(self, loop: affine.ForOp) -> None:
        name = loop_name(loop)
        for outer in self.chain:
            if not outer.is_ancestor(loop):
                raise self.fail(
                    f"block-stride loop '{name}' is not inside the bound loop "
                    f"'{loop_name(outer)}': it must be inside every bound loop"
                )
        for other in self.strided:
            if other is not loop and other.is_ancestor(loop):
                raise self.fail(
                    f"block-stride loop '{name}' is inside block-stride loop "
                    f"'{loop_name(other)}'"
                )
        inner = [op for op in gpu_loops(loop) if op is not loop]
        if inner:
            raise self.fail(
                f"block-stride loop '{name}' holds the bound loop "
                f"'{loop_name(inner[0])}'"
            )

    def check_uniform_path(self, loop: affine.ForOp) -> None:
        name = loop_name(loop)
        for outer in self.chain:
            if bound_axis(outer) in THREAD_AXES and needs_guard(outer):
                raise self.fail(
                    f"the bound loop '{loop_name(outer)}' around block-stride loop "
                    f"'{name}' has a guard (its extent does not divide): the threads "
                    "it skips would miss the block's barriers"
                )
        stop = self.chain[-1] if self.chain else self.fn
        for op in [loop, *_ancestors(loop, stop)]:
            if op is self.fn:
                break
            operands: list[SSAValue] = []
            if isinstance(op, affine.ForOp):
                operands = [*op.lowerBoundOperands, *op.upperBoundOperands]
            elif isinstance(op, affine.IfOp):
                operands = list(op.operands)
            for value in operands:
                if not _uniform(value, self.nest):
                    what = (
                        f"the bounds of block-stride loop '{name}' depend"
                        if op is loop
                        else f"'{op.name}' ('{loop_name(op) or '?'}') around "
                        f"block-stride loop '{name}' depends"
                    )
                    raise self.fail(
                        f"{what} on a value that may differ between the block's "
                        "threads (a load, a carried value or a thread counter): "
                        "every thread must reach the barriers"
                    )

    def check_iterations(self, loop: affine.ForOp) -> None:
        stop = self.chain[-1] if self.chain else None
        serial = [
            op
            for op in _ancestors(loop, stop or self.fn)
            if isinstance(op, affine.ForOp) and bound_axis(op) is None
        ]
        root = serial[-1] if serial else None
        fixed = frozenset(iv(outer) for outer in self.chain)
        check_parallel(
            self.fn, loop, self.kernel, "block_stride", root, fixed, carried=True
        )

    def check_carried(self, loop: affine.ForOp) -> None:
        for k in range(len(loop.inits)):
            if reduction_kind(loop, k) is None:
                raise self.fail(
                    f"block-stride loop '{loop_name(loop)}' carries iter_arg #{k}, "
                    "which is not an accumulation the block can combine (used once, "
                    "by an addf, fma, maximumf, minimumf, maxnumf or minnumf whose "
                    "result only the yield uses)"
                )

    def check_around(self) -> None:
        """Rule 5, on every op of the nest outside the block-stride loops."""
        inside: set[Operation] = set()
        strided_writes: set[SSAValue] = set()
        for loop in self.strided:
            for op in loop.walk():
                inside.add(op)
                if isinstance(op, _WRITES):
                    strided_writes.add(root_buffer(accessed_memref(op)))
        single: dict[SSAValue, Operation] = {}
        reads: dict[SSAValue, Operation] = {}
        for op in self.nest.walk():
            if op in inside:
                continue
            if isinstance(op, _WRITES):
                target = accessed_memref(op)
                if allocated_in(target, self.nest):
                    continue
                root = root_buffer(target)
                if root in strided_writes:
                    raise self.fail(
                        f"'{op.name}' writes {_buffer_name(target)} outside the "
                        "block-stride loops, which write it too"
                    )
                single[root] = op
            elif isinstance(op, _READS):
                root = root_buffer(accessed_memref(op))
                if root in strided_writes and not allocated_in(root, self.nest):
                    raise self.fail(
                        f"'{op.name}' reads {_buffer_name(root)} outside the "
                        "block-stride loops, which write it: the read is not ordered "
                        "with the other threads' writes"
                    )
                reads[root] = op
            elif not (
                isinstance(op, _STRUCTURE + _ALLOCS + MEMREF_VIEWS)
                or (is_side_effect_free(op) and not op.regions)
            ):
                raise self.fail(
                    f"'{op.name}' outside the block-stride loops has effects the "
                    "check does not know"
                )
        for op in inside:
            if isinstance(op, _READS):
                reads.setdefault(root_buffer(accessed_memref(op)), op)
        for root, store in single.items():
            if root in reads:
                raise self.fail(
                    f"'{store.name}' writes {_buffer_name(root)} outside the "
                    "block-stride loops (one thread writes it) and the nest reads it: "
                    "no barrier orders the read after the write"
                )


def check_block_nest(
    fn: func.FuncOp,
    nest: Operation,
    kernel: str,
    loop: str,
    chain: Sequence[affine.ForOp],
    strided: Sequence[affine.ForOp],
) -> None:
    """Check a nest with block-stride loops ``strided`` inside the bound loops
    ``chain`` (outer first): rules 1-5 of the module docstring."""
    _BlockNest(fn, nest, kernel, loop, chain, strided).check()


def single_thread_stores(nest: Operation) -> set[Operation]:
    """The stores of ``nest`` outside its block-stride loops to buffers not
    allocated in it: one thread of each row writes them (rule 5)."""
    strided = [loop for loop in gpu_loops(nest) if stride_threads(loop) is not None]
    if not strided:
        return set()
    inside = {op for loop in strided for op in loop.walk()}
    return {
        op
        for op in nest.walk()
        if isinstance(op, _WRITES)
        and op not in inside
        and not allocated_in(accessed_memref(op), nest)
    }


__all__ = [
    "MAX_THREADS",
    "WARP",
    "check_block_nest",
    "identity_of",
    "reduction_kind",
    "single_thread_stores",
    "threads_problem",
]
