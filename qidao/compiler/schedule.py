"""Schedules: the loop nests of a model's kernels, rewritten one primitive at a time.

A :class:`Schedule` wraps an affine-level module (the ``affine`` stage: a host
``@main`` calling kernels ``func.func private @main_k0_...`` with ``qd.kernel``,
each a nest of loops named ``qd.loop = "i"``). Each primitive is a method that
applies its pass (``qidao/passes/<primitive>.py``) to the module at once, in
place, verifies it, and records itself in ``trace``::

    s = Schedule.for_model(model)              # or Schedule(affine_module)
    s.kernels()                                # {"main_k0_matmul": "tg.matmul"}
    s.loops("main_k0_matmul")                  # ["i_init", "j_init", "i", "k", "j"]
    io, ii = s.split("main_k0_matmul", "i", 4) # "i_o", "i_i"
    s.reorder("main_k0_matmul", "i_o", "k", "i_i", "j")
    s.fuse("main_k0_matmul", "i_init", "j_init")   # "i_init_j_init"
    s.unroll("main_k0_matmul", "k", 2)         # 0: fully
    s.parallel("main_k0_matmul", "i_o")        # the ``parallel`` pass, when registered
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
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline

from qidao.compiler.context import make_context
from qidao.compiler.models import load_model
from qidao.compiler.pipeline import run_stages, stages
from qidao.passes import all_passes
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
    KERNEL_ATTR,
    find_kernel,
    kernel_functions,
    kernel_loops,
    loop_name,
    max_trip_count,
)

__all__ = [
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
]

PASS_OF = {
    "split": "split",
    "reorder": "reorder",
    "fuse": "loop-fuse",
    "unroll": "unroll",
    "parallel": "parallel",
    "vectorize": "vectorize",
    "cache_write": "cache-write",
    "cache_read": "cache-read",
    "compute_at": "compute-at",
    "bind": "bind",
}
"""Schedule method -> the pass that implements it."""

METHOD_OF = {p: m for m, p in PASS_OF.items()}


@dataclass(frozen=True)
class TraceEntry:
    """One primitive application: the method, its kernel and its arguments."""

    method: str
    kernel: str
    args: tuple[str | int, ...]

    def python(self, var: str = "s") -> str:
        """``s.split("main_k0_fused", "i0", 4)``."""
        args = ", ".join(_py_literal(a) for a in (self.kernel, *self.args))
        return f"{var}.{self.method}({args})"

    def options(self) -> dict[str, str | int]:
        """The pass options, by field name."""
        match self.method, self.args:
            case "split", (str() as loop, int() as factor):
                return {"kernel": self.kernel, "loop": loop, "factor": factor}
            case "reorder", loops:
                return {"kernel": self.kernel, "loops": ",".join(map(str, loops))}
            case "fuse", (str() as outer, str() as inner):
                return {"kernel": self.kernel, "outer": outer, "inner": inner}
            case "unroll", (str() as loop, int() as factor):
                return {"kernel": self.kernel, "loop": loop, "factor": factor}
            case "parallel", (str() as loop,):
                return {"kernel": self.kernel, "loop": loop}
            case "vectorize", (str() as loop, int() as width):
                return {"kernel": self.kernel, "loop": loop, "width": width}
            case "cache_write", (str() as loop,):
                return {"kernel": self.kernel, "loop": loop}
            case "cache_read", (str() as loop, str() as buffer):
                return {"kernel": self.kernel, "loop": loop, "buffer": buffer}
            case "compute_at", (str() as nest, str() as loop):
                return {"kernel": self.kernel, "nest": nest, "loop": loop}
            case "bind", (str() as loop, str() as axis):
                return {"kernel": self.kernel, "loop": loop, "axis": axis}
        raise ValueError(f"malformed trace entry {self}")

    def pass_spec(self) -> str:
        """``split{kernel="main_k0_fused" loop="i0" factor=4}``."""
        fields = " ".join(f"{k}={_spec_literal(v)}" for k, v in self.options().items())
        return f"{PASS_OF[self.method]}{{{fields}}}"

    def __str__(self) -> str:
        return self.pass_spec()


def _py_literal(value: str | int) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _spec_literal(value: str | int) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


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
    def for_model(cls, model: Any, mode: str = "graph", fuse: bool = True) -> Schedule:
        """Compile ``model`` (anything ``qidao.compile`` takes) to the ``affine``
        stage and wrap it."""
        affine = run_stages(
            load_model(model),
            stages(last="affine"),
            mode=mode,
            settings={"fuse": fuse},
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

    # --- primitives -------------------------------------------------------------

    def split(self, kernel: str, loop: str, factor: int) -> tuple[str, str]:
        """``loop`` -> ``<loop>_o`` over ``ceildiv(N, factor)`` tiles and ``<loop>_i``
        within one (see ``qidao/passes/schedule/split.py``); returns their names."""
        self._apply(TraceEntry("split", kernel, (loop, factor)))
        return f"{loop}_o", f"{loop}_i"

    def reorder(self, kernel: str, *loops: str) -> None:
        """Permute a perfectly nested band into the order ``loops`` (outermost
        first; see ``qidao/passes/schedule/reorder.py`` for the legality rule)."""
        self._apply(TraceEntry("reorder", kernel, tuple(loops)))

    def fuse(self, kernel: str, outer: str, inner: str) -> str:
        """Fuse ``inner``, perfectly nested in ``outer``, into one loop
        ``<outer>_<inner>`` (the ``loop-fuse`` pass); returns its name."""
        self._apply(TraceEntry("fuse", kernel, (outer, inner)))
        return f"{outer}_{inner}"

    def unroll(self, kernel: str, loop: str, factor: int = 0) -> None:
        """Unroll ``loop`` by ``factor`` (0: fully), a ``<loop>_rem`` loop taking
        the remainder."""
        self._apply(TraceEntry("unroll", kernel, (loop, factor)))

    def vectorize(self, kernel: str, loop: str, width: int = 16) -> None:
        """Run the innermost ``loop`` ``width`` iterations at a time on vectors
        (see ``qidao/passes/schedule/vectorize.py``)."""
        self._apply(TraceEntry("vectorize", kernel, (loop, width)))

    def cache_write(self, kernel: str, loop: str) -> None:
        """Accumulate the tile of the memref that ``loop``'s body writes in a local
        buffer, copied in at the top of the body and back at its end (see
        ``qidao/passes/schedule/cache_write.py``)."""
        self._apply(TraceEntry("cache_write", kernel, (loop,)))

    def cache_read(self, kernel: str, loop: str, buffer: str) -> None:
        """Stage the tile of the input ``buffer`` (a kernel argument's name, e.g.
        ``"w"``) that ``loop``'s body reads in a local buffer, packed at the top of
        the body (see ``qidao/passes/schedule/cache_read.py``)."""
        self._apply(TraceEntry("cache_read", kernel, (loop, buffer)))

    def compute_at(self, kernel: str, nest: str, loop: str) -> None:
        """Move the top-level loop nest whose outermost loop is ``nest`` into the
        body of ``loop`` (of another nest), computing only the part that body uses
        (see ``qidao/passes/schedule/compute_at.py``)."""
        self._apply(TraceEntry("compute_at", kernel, (nest, loop)))

    def bind(self, kernel: str, loop: str, axis: str) -> None:
        """Bind ``loop`` to a hardware axis: ``"threads"`` (CPU worker threads, as
        ``parallel``) or ``"blockIdx.x"``/``"threadIdx.x"`` (and ``y``, ``z``) for
        the GPU (see ``qidao/passes/schedule/bind.py``)."""
        self._apply(TraceEntry("bind", kernel, (loop, axis)))

    def parallel(self, kernel: str, loop: str) -> None:
        """Run ``loop``'s iterations on worker threads (the ``parallel`` pass)."""
        if "parallel" not in all_passes():
            raise ScheduleError(
                "parallel",
                kernel,
                loop,
                "the pass 'parallel' is not registered yet (qidao/passes/schedule/parallel.py)",
            )
        self._apply(TraceEntry("parallel", kernel, (loop,)))

    def _apply(self, entry: TraceEntry) -> None:
        make_entry_pass(entry).apply(self._ctx, self.module)
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
            if entry.method == "parallel":
                schedule.parallel(entry.kernel, *map(str, entry.args))
            else:
                schedule._apply(entry)
        return schedule


def make_entry_pass(entry: TraceEntry) -> ModulePass:
    """The pass of a trace entry, built from its options."""
    passes = all_passes()
    name = PASS_OF[entry.method]
    if name not in passes:
        raise ScheduleError(
            entry.method,
            entry.kernel,
            str(entry.args[0]) if entry.args else "",
            f"the pass '{name}' is not registered",
        )
    return passes[name]()(**entry.options())


def parse_trace(trace: str | Sequence[TraceEntry]) -> list[TraceEntry]:
    """Trace entries from entries, Python text (``s.split("k", "i", 4)`` lines) or a
    pipeline (``split{kernel="k" loop="i" factor=4},...``)."""
    if not isinstance(trace, str):
        return list(trace)
    text = trace.strip()
    if not text:
        return []
    if _looks_like_python(text):
        return _parse_python(text)
    return _parse_pipeline(text)


def _looks_like_python(text: str) -> bool:
    first = next(
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    )
    return "(" in first.split("{")[0]


def _parse_python(text: str) -> list[TraceEntry]:
    """Each statement must be ``<name>.<method>("kernel", literal, ...)``; nothing
    is executed."""
    entries: list[TraceEntry] = []
    for statement in ast.parse(text).body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(statement, ast.Assign):
            call = statement.value
        if (
            not isinstance(call, ast.Call)
            or not isinstance(call.func, ast.Attribute)
            or call.func.attr not in PASS_OF
            or call.keywords
        ):
            raise ValueError(
                f"line {statement.lineno}: expected s.<primitive>(...), one of "
                f"{', '.join(PASS_OF)}; got: {ast.unparse(statement)}"
            )
        args = [ast.literal_eval(arg) for arg in call.args]
        if not args or not all(isinstance(a, str | int) for a in args):
            raise ValueError(
                f"line {statement.lineno}: the arguments must be a kernel name and "
                f"string or integer literals; got: {ast.unparse(statement)}"
            )
        kernel, *rest = args
        entries.append(TraceEntry(call.func.attr, str(kernel), tuple(rest)))
    return entries


def _parse_pipeline(text: str) -> list[TraceEntry]:
    entries: list[TraceEntry] = []
    for spec in parse_pipeline(text):
        if spec.name not in METHOD_OF:
            raise ValueError(
                f"'{spec.name}' is not a schedule primitive's pass; expected one of "
                f"{', '.join(METHOD_OF)}"
            )
        method = METHOD_OF[spec.name]
        options = spec.normalize_parameter_names().parameters

        one = functools.partial(_one_option, spec.name, options)
        kernel = str(one("kernel"))
        args: tuple[str | int, ...]
        match method:
            case "split":
                args = (str(one("loop")), int(one("factor")))
            case "unroll":
                factor = int(one("factor")) if "factor" in options else 0
                args = (str(one("loop")), factor)
            case "vectorize":
                width = int(one("width")) if "width" in options else 16
                args = (str(one("loop")), width)
            case "reorder":
                names = [str(v) for v in options.get("loops", ())]
                args = tuple(
                    n.strip() for v in names for n in v.split(",") if n.strip()
                )
            case "fuse":
                args = (str(one("outer")), str(one("inner")))
            case "cache_write":
                args = (str(one("loop")),)
            case "cache_read":
                args = (str(one("loop")), str(one("buffer")))
            case "compute_at":
                args = (str(one("nest")), str(one("loop")))
            case "bind":
                args = (str(one("loop")), str(one("axis")))
            case _:
                args = (str(one("loop")),)
        entries.append(TraceEntry(method, kernel, args))
    return entries


def _one_option(
    pass_name: str, options: dict[str, tuple[str | int | bool | float, ...]], key: str
) -> str | int:
    values = options.get(key)
    if values is None or len(values) != 1:
        raise ValueError(f"{pass_name}: expected one value for '{key}'")
    value = values[0]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{pass_name}: '{key}' must be a string or an integer")
    return value


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
