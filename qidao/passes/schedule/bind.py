"""``bind``: map one loop of a kernel to a hardware axis, after proving it legal.

    affine.for %i ... { body } {qd.loop = "i"}
        ==>  affine.for %i ... { body } {qd.loop = "i", qd.bind = "blockIdx.x"}

Options: ``kernel``, ``loop`` (its ``qd.loop`` name) and ``axis``, e.g.
``bind{kernel="main_k0_matmul" loop="i" axis="blockIdx.x"}``. The axes:

- ``threads``: CPU worker threads. Exactly the ``parallel`` pass (same legality,
  same ``qd.parallel`` mark), with errors from ``bind``.
- ``blockIdx.x|y|z`` and ``threadIdx.x|y|z``: the GPU grid. The pass only marks
  the loop ``qd.bind = "<axis>"``; the CUDA emitter (``qidao.compiler.targets.cuda``) turns
  it into ``i = lb + blockIdx.x`` with the loop's extent as the grid's size. The
  CPU pipeline refuses a kernel with such a loop (``refuse_gpu_bindings``) rather
  than run it serially.

On the GPU each top-level loop nest of a kernel is one launch (a matmul kernel's
``i_init`` nest and its ``i`` nest are two launches, in order: the end of a launch
is the only barrier). Within one nest every thread of the launch runs the whole
nest, and takes one iteration of each bound loop. So a GPU binding is legal when
(``check_gpu_nest``, rechecked for the whole nest after each binding):

1. The loop has a constant lower bound and an upper bound with a constant among its
   ``min`` results (after ``split``: ``min(256, 1000 - 256 * i_o)``): its extent is
   the launch dimension, and the other results become a guard. Any step; no
   ``iter_args``.
2. Each axis is bound at most once per nest; the bound loops of a nest are nested
   one in the other, the ``threadIdx`` loops inside the ``blockIdx`` loops; at most
   1024 threads per block (x, y <= 1024, z <= 64) and grid y, z <= 65535.
3. Each bound loop passes the ``parallel`` check (its iterations write disjoint
   elements), widened over every serial loop around it: no barrier separates the
   iterations of a serial loop between threads, so the windows must be disjoint
   whatever those loops' counters are (``out[i, j]`` inside a serial ``k`` passes,
   ``out[j + k]`` does not). The counters of enclosing bound loops stay fixed.
4. Outside the innermost bound loop (where every thread runs the code) nothing is
   written to memory other than a buffer allocated in the nest (each thread's
   own), no buffer written inside it is read (no barrier), and nothing inside it
   writes a buffer allocated outside it (each thread would write its own copy).
   The CUDA emitter shares a ``cache_read`` buffer of that outside code among a
   block's threads (``__shared__``, copied cooperatively, with barriers), which
   keeps these semantics; see ``qidao/compiler/targets/cuda/emit/``.
5. GPU axes and ``threads`` do not mix in one kernel.

Rule 3 bounds the counters of serial loops by their ranges, so it is
conservative: after ``split``, binding ``i_i`` while ``i_o`` stays serial is
refused (``out[256 * i_o + i_i]`` is not seen to be disjoint); bind ``i_o``
first, then its counter is fixed for ``i_i``.

Errors are ``ScheduleError`` subclasses naming the kernel, the loop and the reason:
``InvalidArgumentError`` (unknown axis), ``AxisAlreadyBoundError``,
``BindNestingError``, ``LaunchLimitError``, ``NonConstantBoundsError`` and
``IllegalScheduleError`` (races); ``GpuLoopOnCpuError`` from the CPU pipeline.

Before (``bind{kernel="k" loop="i" axis="blockIdx.x"}``, then
``bind{kernel="k" loop="j" axis="threadIdx.x"}``):
```mlir
func.func @k(%x: memref<64x32xf32>, %y: memref<64x32xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %v = affine.load %x[%i, %j] : memref<64x32xf32>
      affine.store %v, %y[%i, %j] : memref<64x32xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}
```
After (a launch of 64 blocks of 32 threads):
```mlir
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      ...
    } {qd.bind = "threadIdx.x", qd.loop = "j"}
  } {qd.bind = "blockIdx.x", qd.loop = "i"}
```
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin, func, memref, vector
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from qidao.dialects.attributes import BIND_ATTR, PARALLEL_ATTR
from qidao.passes.schedule.loops.block import check_block_nest
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
    NonConstantBoundsError,
    ScheduleError,
)
from qidao.passes.schedule.loops.gpu import (
    AXES,
    BLOCK_AXES,
    GPU_AXES,
    MAX_BLOCK_DIM,
    MAX_GRID_DIM,
    MAX_THREADS_PER_BLOCK,
    THREAD_AXES,
    accessed_memref,
    allocated_in,
    bound_axis,
    gpu_loops,
    launch_extent,
    needs_guard,
    stride_threads,
    top_level_nest,
)
from qidao.passes.schedule.loops.nest import (
    MEMREF_VIEWS,
    find_loop,
    iv,
    kernel_functions,
    loop_name,
    root_buffer,
)
from qidao.passes.schedule.parallel import check_parallel, parallelize

_ALLOCS = (memref.AllocOp, memref.AllocaOp)
_WRITES = (affine.StoreOp, memref.StoreOp, vector.StoreOp)
_READS = (affine.LoadOp, memref.LoadOp, vector.LoadOp)
_STRUCTURE = (
    affine.ForOp,
    affine.IfOp,
    affine.YieldOp,
    affine.ApplyOp,
    affine.MinOp,
    memref.DeallocOp,
)


class AxisAlreadyBoundError(IllegalScheduleError):
    """The axis is already bound to another loop of the nest, or the loop to an axis."""


class BindNestingError(IllegalScheduleError):
    """The bound loops of a nest are not nested in each other, threads inside blocks."""


class LaunchLimitError(IllegalScheduleError):
    """The bound extents exceed CUDA's block or grid limits."""


class GpuLoopOnCpuError(ScheduleError):
    """A kernel with a GPU-bound loop went down the CPU pipeline."""


# --- the checks -------------------------------------------------------------------


def _buffer_key(value: SSAValue, kernel_fn: func.FuncOp) -> SSAValue | str:
    """One key per buffer; kernel arguments without ``llvm.noalias`` share one."""
    root = root_buffer(value)
    if isinstance(root, BlockArgument) and root.owner is kernel_fn.body.block:
        attrs = kernel_fn.arg_attrs
        entry = attrs.data[root.index] if attrs is not None else None
        if not (isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data):
            return "may-alias arguments"
    if isinstance(root, OpResult) and isinstance(root.owner, memref.GetGlobalOp):
        return f"@{root.owner.name_.root_reference.data}"
    return root


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a buffer"


@dataclass
class _NestCheck:
    fn: func.FuncOp
    nest: Operation
    kernel: str
    loop: str  # the loop being bound, named in every error

    def fail(
        self, reason: str, kind: type[ScheduleError] = IllegalScheduleError
    ) -> ScheduleError:
        return kind("bind", self.kernel, self.loop, reason)

    def check(self) -> None:
        bound = gpu_loops(self.nest)
        strided = [loop for loop in bound if stride_threads(loop) is not None]
        bound = [loop for loop in bound if stride_threads(loop) is None]
        if strided:
            self.check_axes(bound)
            self.check_limits([*bound, strided[0]])
            check_block_nest(self.fn, self.nest, self.kernel, self.loop, bound, strided)
        elif not bound:
            return
        else:
            self.check_axes(bound)
            self.check_limits(bound)
            self.check_outside(bound[-1])
        for k, loop in enumerate(bound):
            serial = [
                op
                for op in _ancestors(loop, self.fn)
                if isinstance(op, affine.ForOp) and bound_axis(op) is None
            ]
            root = serial[-1] if serial else None  # the outermost serial loop
            fixed = frozenset(iv(outer) for outer in bound[:k])
            check_parallel(self.fn, loop, self.kernel, "bind", root, fixed)

    def check_axes(self, bound: list[affine.ForOp]) -> None:
        seen: dict[str, str] = {}
        for loop in bound:
            axis, name = str(bound_axis(loop)), str(loop_name(loop))
            if axis not in GPU_AXES:
                raise self.fail(f"'{name}' has an unknown axis '{axis}'")
            if axis in seen:
                raise self.fail(
                    f"{axis} is already bound to loop '{seen[axis]}' of this nest "
                    f"(each axis at most once per launch)",
                    AxisAlreadyBoundError,
                )
            seen[axis] = name
            if loop.inits:
                raise self.fail(
                    f"'{name}' carries values from one iteration to the next "
                    "(iter_args: a reduction); its iterations cannot run at once "
                    "(block_stride shares a reduction among a block's threads)"
                )
            if launch_extent(loop) is None:
                raise self.fail(
                    f"'{name}' needs a constant lower bound and a constant among its "
                    f"upper bounds to size the launch (lower {loop.lowerBoundMap.data}, "
                    f"upper {loop.upperBoundMap.data})",
                    NonConstantBoundsError,
                )
        for outer, inner in itertools.pairwise(bound):
            o, i = str(loop_name(outer)), str(loop_name(inner))
            if not outer.is_ancestor(inner):
                raise self.fail(
                    f"the bound loops '{o}' and '{i}' are not nested one in the other; "
                    "the bound loops of a nest must form a chain",
                    BindNestingError,
                )
            if bound_axis(outer) in THREAD_AXES and bound_axis(inner) in BLOCK_AXES:
                raise self.fail(
                    f"'{i}' ({bound_axis(inner)}) is inside '{o}' "
                    f"({bound_axis(outer)}); threadIdx loops go inside blockIdx loops",
                    BindNestingError,
                )

    def check_limits(self, bound: list[affine.ForOp]) -> None:
        threads = 1
        for loop in bound:
            axis = str(bound_axis(loop))
            extent = launch_extent(loop) or 0
            dim = axis[-1]
            limit = (MAX_BLOCK_DIM if axis in THREAD_AXES else MAX_GRID_DIM)[dim]
            if extent > limit:
                raise self.fail(
                    f"'{loop_name(loop)}' spans {extent} iterations, over the limit "
                    f"{limit} of {axis}; split it first",
                    LaunchLimitError,
                )
            if axis in THREAD_AXES:
                threads *= extent
        if threads > MAX_THREADS_PER_BLOCK:
            raise self.fail(
                f"the threadIdx loops give {threads} threads per block, over the "
                f"limit {MAX_THREADS_PER_BLOCK}; split them first",
                LaunchLimitError,
            )

    def check_outside(self, innermost: affine.ForOp) -> None:
        """Rule 4: code every thread runs touches no shared memory it races on."""
        inner = str(loop_name(innermost))
        written: set[SSAValue | str] = set()
        for op in innermost.walk():
            if isinstance(op, _WRITES):
                target = accessed_memref(op)
                if allocated_in(target, innermost):
                    continue
                if allocated_in(target, self.nest):
                    raise self.fail(
                        f"the innermost bound loop '{inner}' writes {_name(target)}, "
                        "allocated outside it: every thread would write its own copy"
                    )
                written.add(_buffer_key(target, self.fn))
        for op in self.nest.walk():
            if op is innermost or innermost.is_ancestor(op):
                continue
            if isinstance(op, _WRITES):
                target = accessed_memref(op)
                if not allocated_in(target, self.nest):
                    raise self.fail(
                        f"'{op.name}' writes {_name(target)} outside the innermost "
                        f"bound loop '{inner}': every thread of the launch would run it"
                    )
            elif isinstance(op, _READS):
                target = accessed_memref(op)
                if _buffer_key(target, self.fn) in written:
                    raise self.fail(
                        f"'{op.name}' reads {_name(target)} outside the innermost "
                        f"bound loop '{inner}', which writes it: no barrier orders "
                        "the read after the other threads' writes"
                    )
            elif not (
                isinstance(op, _STRUCTURE + _ALLOCS + MEMREF_VIEWS)
                or (is_side_effect_free(op) and not op.regions)
            ):
                raise self.fail(
                    f"'{op.name}' outside the innermost bound loop '{inner}' has "
                    "effects the bind check does not know"
                )


def _ancestors(op: Operation, kernel_fn: func.FuncOp) -> list[Operation]:
    """The ops around ``op`` inside the kernel, inner before outer."""
    found: list[Operation] = []
    parent = op.parent_op()
    while parent is not None and parent is not kernel_fn:
        found.append(parent)
        parent = parent.parent_op()
    return found


def check_gpu_nest(
    kernel_fn: func.FuncOp, nest: Operation, kernel: str, loop: str
) -> None:
    """Check every GPU binding of the top-level ``nest`` (rules 1-4)."""
    _NestCheck(kernel_fn, nest, kernel, loop).check()


# --- the primitive ----------------------------------------------------------------


def bind(module: ModuleOp, kernel: str, loop: str, axis: str) -> None:
    """Check and bind ``loop`` of ``kernel`` to ``axis`` (one of ``AXES``)."""
    fn, target = find_loop(module, "bind", kernel, loop)
    if axis not in AXES:
        raise InvalidArgumentError(
            "bind",
            kernel,
            loop,
            f"unknown axis '{axis}'; the axes are: {', '.join(AXES)}",
        )
    current = bound_axis(target) or (
        "threads" if PARALLEL_ATTR in target.attributes else None
    )
    if current is not None:
        raise AxisAlreadyBoundError(
            "bind", kernel, loop, f"the loop is already bound to {current}"
        )
    if axis == "threads":
        gpu = gpu_loops(fn)
        if gpu:
            raise IllegalScheduleError(
                "bind",
                kernel,
                loop,
                f"the kernel has loops bound to GPU axes ('{loop_name(gpu[0])}' to "
                f"{bound_axis(gpu[0])}); CPU threads and GPU axes do not mix",
            )
        parallelize(module, kernel, loop, primitive="bind")
        return
    cpu = [op for op in fn.walk() if PARALLEL_ATTR in op.attributes]
    if cpu:
        raise IllegalScheduleError(
            "bind",
            kernel,
            loop,
            f"the kernel's loop '{loop_name(cpu[0])}' runs on CPU threads "
            "(qd.parallel); CPU threads and GPU axes do not mix",
        )
    target.attributes[BIND_ATTR] = StringAttr(axis)
    try:
        check_gpu_nest(fn, top_level_nest(fn, target), kernel, loop)
    except ScheduleError:
        del target.attributes[BIND_ATTR]
        raise


def refuse_gpu_bindings(module: ModuleOp) -> None:
    """Raise ``GpuLoopOnCpuError`` if a kernel has a GPU-bound loop: the CPU pipeline
    would run it as a serial loop, which is not what the schedule asked for."""
    for name, fn in kernel_functions(module).items():
        for loop in gpu_loops(fn):
            raise GpuLoopOnCpuError(
                "bind",
                name,
                str(loop_name(loop)),
                f"it is bound to {bound_axis(loop)}, a GPU axis, and the CPU pipeline "
                "cannot run it; compile with target='cuda', or bind it to 'threads' "
                "for CPU worker threads",
            )


@dataclass(frozen=True)
class BindPass(ModulePass):
    """Bind a loop to CPU threads or to a CUDA grid axis."""

    name = "bind"

    kernel: str = ""
    loop: str = ""
    axis: str = ""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        bind(op, self.kernel, self.loop, self.axis)


__all__ = [
    "AXES",
    "BLOCK_AXES",
    "GPU_AXES",
    "MAX_BLOCK_DIM",
    "MAX_GRID_DIM",
    "MAX_THREADS_PER_BLOCK",
    "THREAD_AXES",
    "AxisAlreadyBoundError",
    "BindNestingError",
    "BindPass",
    "GpuLoopOnCpuError",
    "LaunchLimitError",
    "bind",
    "bound_axis",
    "check_gpu_nest",
    "gpu_loops",
    "launch_extent",
    "needs_guard",
    "refuse_gpu_bindings",
    "stride_threads",
    "top_level_nest",
]
