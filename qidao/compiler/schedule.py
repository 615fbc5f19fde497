"""Schedules: the loop nests of a model's kernels, rewritten one primitive at a time.

A :class:`Schedule` wraps an affine-level module (the ``affine`` stage: a host
``@main`` calling kernels ``func.func private @main_k0_...`` with ``qd.kernel``,
each a nest of loops named ``qd.loop = "i"``). Each primitive is a method that
applies its pass (``qidao/passes/schedule/<primitive>.py``) to the module at once, in
place, verifies it, and records itself in ``trace``::

    s = Schedule.for_model(model)              # or Schedule(affine_module)
    s.kernels()                                # {"main_k0_matmul": "tg.matmul"}
    s.loops("main_k0_matmul")                  # ["i_init", "j_init", "i", "k", "j"]
    io, ii = s.split("main_k0_matmul", "i", 4) # "i_o", "i_i"
    s.reorder("main_k0_matmul", "i_o", "k", "i_i", "j")
    s.fuse("main_k0_matmul", "i_init", "j_init")   # "i_init_j_init"
    s.unroll("main_k0_matmul", "k", 2)         # 0: fully
    s.parallel("main_k0_matmul", "i_o")        # iterations on worker threads
    print(s.python())                          # s.split("main_k0_matmul", "i", 4) ...
    print(s.pipeline())                        # split{kernel="main_k0_matmul" ...},...
    Schedule.replay(module, s.python())        # the same IR again (or s.pipeline(),
                                               # or s.trace)

``qidao-opt k.mlir -p "$(pipeline)"`` gives the same IR as the methods did.
``qidao.compile(model, schedule=...)`` applies a schedule (a callable taking a
``Schedule``, or the text of a trace in either form) in the ``schedule``
stage, and records the applied trace as ``compiled.stats["schedule"]``.

Illegal uses raise a :class:`ScheduleError` subclass naming the kernel, the loop
and the reason (``LoopNotFoundError``, ``IllegalScheduleError``, ...); the
module is then left as it was (every primitive checks before it rewrites).

A primitive is one pass (``qidao/passes/schedule/<name>.py``) and one method below
marked ``@primitive("<pass-name>")`` whose parameters are the pass's fields: the
trace's Python and pipeline forms derive from those two (``qidao.compiler.trace``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr

from qidao.compiler.context import make_context
from qidao.compiler.models import load_model
from qidao.compiler.pipeline import run_stages, stages
from qidao.compiler.trace import PRIMITIVES, TraceEntry, parse_trace, primitive
from qidao.dialects.attributes import KERNEL_ATTR
from qidao.passes.schedule.loops.errors import (
    DuplicateLoopNameError,
    IllegalScheduleError,
    InvalidArgumentError,
    KernelNotFoundError,
    LoopNotFoundError,
    NonConstantBoundsError,
    NotPerfectlyNestedError,
    ScheduleError,
)
from qidao.passes.schedule.loops.nest import (
    find_kernel,
    kernel_functions,
    kernel_loops,
    loop_name,
    max_trip_count,
)

__all__ = [
    "PRIMITIVES",
    "DuplicateLoopNameError",
    "IllegalScheduleError",
    "InvalidArgumentError",
    "KernelNotFoundError",
    "LoopNotFoundError",
    "NonConstantBoundsError",
    "NotPerfectlyNestedError",
    "Schedule",
    "ScheduleError",
    "ScheduleSpec",
    "TraceEntry",
    "apply_schedule",
    "parse_trace",
]

ScheduleSpec = Callable[["Schedule"], object] | str | Sequence[TraceEntry]
"""What ``qidao.compile(schedule=...)`` takes: a function of a Schedule, or a trace
(its Python text, its pipeline text, or its entries)."""


class Schedule:
    """Schedule primitives on the kernels of an affine-level module (in place)."""

    def __init__(self, module: ModuleOp, verify_each: bool = True) -> None:
        self.module = module
        self.trace: list[TraceEntry] = []
        self.verify_each = verify_each
        """Verify the kernel after every primitive (else the caller verifies once,
        with ``verify()``, when the whole schedule is applied)."""
        self._ctx = make_context()

    @classmethod
    def for_model(
        cls, model: Any, mode: str = "graph", fuse: bool = True, algo: str = "auto"
    ) -> Schedule:
        """Compile ``model`` (anything ``qidao.compile`` takes) to the ``affine``
        stage and wrap it (``algo``: the convolutions' algorithm, as
        ``qidao.compile``'s)."""
        affine = run_stages(
            load_model(model),
            stages(last="affine"),
            mode=mode,
            settings={"fuse": fuse, "algo": algo},
        )["affine"]
        return cls(affine)

    # --- reading ----------------------------------------------------------------

    def kernels(self) -> dict[str, str]:
        """Kernel name -> its ``qd.kernel`` (the tg ops it computes), in order."""
        names: dict[str, str] = {}
        for name, fn in kernel_functions(self.module).items():
            ops = fn.attributes[KERNEL_ATTR]
            names[name] = ops.data if isinstance(ops, StringAttr) else str(ops)
        return names

    def loops(self, kernel: str) -> list[str]:
        """The loop names of ``kernel`` in nest order (outer before inner)."""
        fn = find_kernel(self.module, "loops", kernel, "")
        return [str(loop_name(op)) for op in kernel_loops(fn)]

    def extents(self, kernel: str) -> dict[str, int | None]:
        """Loop name -> its trip count (None when the bounds are not constant)."""
        fn = find_kernel(self.module, "extents", kernel, "")
        return {str(loop_name(op)): max_trip_count(op) for op in kernel_loops(fn)}

    # --- primitives: each runs its pass (see ``primitive``), then returns -------

    @primitive("split")
    def split(self, kernel: str, loop: str, factor: int) -> tuple[str, str]:
        """``loop`` -> ``<loop>_o`` over ``ceildiv(N, factor)`` tiles and ``<loop>_i``
        within one (see ``qidao/passes/schedule/split.py``); returns their names."""
        return f"{loop}_o", f"{loop}_i"

    @primitive("peel")
    def peel(self, kernel: str, loop: str, suffix: str = "_t") -> str:
        """Run the last iteration of ``loop`` in a copy ``<loop><suffix>`` (its
        loops renamed ``<name><suffix>``), so ``split``'s ``min`` bounds become
        constants in both parts (see ``qidao/passes/schedule/peel.py``); returns
        the copy's name."""
        return f"{loop}{suffix}"

    @primitive("prefetch")
    def prefetch(
        self, kernel: str, loop: str, buffer: str, ahead: str, locality: int = 2
    ) -> None:
        """In ``loop``'s body, prefetch the slice ``buffer[a + 1]`` that the next
        iteration of the enclosing ``ahead`` reads, spread evenly over the
        iterations in between (see ``qidao/passes/schedule/prefetch.py``)."""

    @primitive("reorder")
    def reorder(self, kernel: str, *loops: str) -> None:
        """Permute a perfectly nested band into the order ``loops`` (outermost
        first; see ``qidao/passes/schedule/reorder.py`` for the legality rule)."""

    @primitive("tile")
    def tile(
        self,
        kernel: str,
        outer: str,
        inner: str,
        outer_factor: int,
        inner_factor: int,
    ) -> tuple[str, str, str, str]:
        """Tile ``outer`` x ``inner`` (``inner`` directly inside ``outer``) by
        ``outer_factor`` x ``inner_factor``: ``split`` both, ``reorder`` to
        ``<outer>_o, <inner>_o, <outer>_i, <inner>_i`` (see
        ``qidao/passes/schedule/tile.py``); returns those names."""
        return f"{outer}_o", f"{inner}_o", f"{outer}_i", f"{inner}_i"

    @primitive("loop-fuse")
    def fuse(self, kernel: str, outer: str, inner: str) -> str:
        """Fuse ``inner``, perfectly nested in ``outer``, into one loop
        ``<outer>_<inner>`` (the ``loop-fuse`` pass); returns its name."""
        return f"{outer}_{inner}"

    @primitive("unroll")
    def unroll(self, kernel: str, loop: str, factor: int = 0) -> None:
        """Unroll ``loop`` by ``factor`` (0: fully), a ``<loop>_rem`` loop taking
        the remainder."""

    @primitive("vectorize")
    def vectorize(self, kernel: str, loop: str, width: int = 16) -> None:
        """Run the innermost ``loop`` ``width`` iterations at a time on vectors
        (see ``qidao/passes/schedule/vectorize.py``)."""

    @primitive("parallel")
    def parallel(self, kernel: str, loop: str) -> None:
        """Run ``loop``'s iterations on worker threads (the ``parallel`` pass)."""

    @primitive("bind")
    def bind(self, kernel: str, loop: str, axis: str) -> None:
        """Bind ``loop`` to a hardware axis: ``"threads"`` (CPU worker threads, as
        ``parallel``) or ``"blockIdx.x"``/``"threadIdx.x"`` (and ``y``, ``z``) for
        the GPU (see ``qidao/passes/schedule/bind.py``)."""

    @primitive("block-stride")
    def block_stride(self, kernel: str, threads: int, *loops: str) -> None:
        """Deal each of ``loops``' iterations out to ``threads`` threads of
        ``threadIdx.x`` (thread ``t`` takes ``t``, ``t + threads``, ...); the values
        they carry are reductions combined across them (see
        ``qidao/passes/schedule/block_stride.py``)."""

    @primitive("cache-read")
    def cache_read(self, kernel: str, loop: str, buffer: str) -> None:
        """Stage the tile of the input ``buffer`` (a kernel argument's name, e.g.
        ``"w"``) that ``loop``'s body reads in a local buffer, packed at the top of
        the body (see ``qidao/passes/schedule/cache_read.py``)."""

    @primitive("double-buffer")
    def double_buffer(self, kernel: str, loop: str) -> None:
        """Mark the serial ``loop``, whose body starts with ``cache_read`` staging
        copies, double-buffered: on the GPU its ``__shared__`` buffers get two
        stages, the next iteration's tiles copied (``cp.async``) while this one
        computes (see ``qidao/passes/schedule/double_buffer.py``)."""

    @primitive("cache-write")
    def cache_write(self, kernel: str, loop: str) -> None:
        """Accumulate the tile of the memref that ``loop``'s body writes in a local
        buffer, copied in at the top of the body and back at its end (see
        ``qidao/passes/schedule/cache_write.py``)."""

    @primitive("tensorize")
    def tensorize(self, kernel: str, loop: str, intrinsic: str) -> None:
        """Run the 16 x 16 matmul tile headed by ``loop`` as one warp's tensor-core
        operation, ``intrinsic`` ``"wmma_tf32"`` (16 x 16 x 8) or ``"wmma_f16"``
        (16 x 16 x 16), f32 accumulation (see
        ``qidao/passes/schedule/tensorize.py``)."""

    @primitive("compute-at")
    def compute_at(self, kernel: str, nest: str, loop: str) -> None:
        """Move the top-level loop nest whose outermost loop is ``nest`` into the
        body of ``loop`` (of another nest), computing only the part that body uses
        (see ``qidao/passes/schedule/compute_at.py``)."""

    # --- applying and verifying -------------------------------------------------

    def run(self, entry: TraceEntry) -> None:
        """Check ``entry``'s arguments, apply its pass, verify the kernel (when
        ``verify_each``) and record it in the trace."""
        problem = entry.problem()
        if problem is not None:
            loop = next((str(a) for a in entry.args if isinstance(a, str)), "")
            raise InvalidArgumentError(entry.method, entry.kernel, loop, problem)
        entry.make_pass().apply(self._ctx, self.module)
        if self.verify_each:  # a primitive rewrites one kernel: verify it alone
            self._verify(entry.kernel, entry.pass_spec())
        self.trace.append(entry)

    def verify(self) -> None:
        """Verify every kernel a primitive of the trace rewrote."""
        for kernel in dict.fromkeys(entry.kernel for entry in self.trace):
            self._verify(kernel, f"the schedule of {kernel}")

    def _verify(self, kernel: str, after: str) -> None:
        try:
            kernel_functions(self.module)[kernel].verify()
        except Exception as err:
            raise RuntimeError(
                f"internal error: IR does not verify after {after}: {err}"
            ) from err

    # --- the trace --------------------------------------------------------------

    def python(self, var: str = "s") -> str:
        """The trace as Python, one ``s.<method>(...)`` call a line."""
        return "".join(entry.python(var) + "\n" for entry in self.trace)

    def pipeline(self) -> str:
        """The trace as a ``qidao-opt -p`` pipeline."""
        return ",".join(entry.pass_spec() for entry in self.trace)

    @classmethod
    def replay(
        cls,
        module: ModuleOp,
        trace: str | Sequence[TraceEntry],
        verify_each: bool = True,
    ) -> Schedule:
        """Apply a trace (entries, Python text or pipeline text) to ``module``."""
        schedule = cls(module, verify_each)
        for entry in parse_trace(trace):
            schedule.run(entry)
        return schedule


def apply_schedule(
    module: ModuleOp, schedule: ScheduleSpec, verify_each: bool = True
) -> Schedule:
    """Apply ``schedule`` (a function of a Schedule, or a trace) to ``module``;
    verify after every primitive, or (``verify_each=False``) once at the end."""
    if callable(schedule):
        wrapped = Schedule(module, verify_each)
        schedule(wrapped)
    else:
        wrapped = Schedule.replay(module, schedule, verify_each)
    if not verify_each:
        wrapped.verify()
    return wrapped
