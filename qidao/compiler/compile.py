"""``qidao.compile``: a model in, a native callable out, every stage kept for reading.

compiled = qidao.compile(model)          # ONNX, .onnx/.mlir path, builder Graph
y, = compiled(x)                         # NumPy in, NumPy out
print(compiled.ir("affine"))             # any stage of the tower
compiled.stats                           # kernels, buffers, peak/traffic bytes, times
qidao.compile(model, mode="eager")       # every tg op its own kernel and buffer
qidao.compile(model, schedule=fn)        # fn(s: Schedule), in the "schedule" stage

An ONNX model with integer inputs (shapes, axes, pads) or dynamic dimensions compiles
at its first call instead, specialized on those values and shapes
(``qidao.compiler.specialize``).

Two modes pick which passes of the pipeline (``pipeline.STAGES``) run:

- ``graph`` (default): all of them, the optimized program.
- ``eager``: none of the graph passes (``GRAPH_PASSES``: fold-constants, simplify,
  cse, dce, layout, fuse, plan-memory) in the graph-level stages (``GRAPH_STAGES``:
  those before ``scf``), so every tg op runs as its own kernel into its own buffer,
  the define-by-run picture. Every other pass (the lowerings, expand-math, the
  ``dce`` that cleans up the llvm dialect) runs in both modes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)

from qidao.compiler.context import make_context, make_pass
from qidao.compiler.debug import debug_level, emit, verify_policy
from qidao.compiler.models import load_model, with_weights
from qidao.compiler.pipeline import STAGES, Stage, check_stage
from qidao.compiler.schedule import Schedule, ScheduleSpec, apply_schedule
from qidao.compiler.targets.cpu.defaults import default_schedule
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.dialects.tg.types import dtype_name, is_row_major
from qidao.passes.cpu.instrument_kernels import KERNELS_ATTR
from qidao.passes.kernels.plan_memory import memory_stats
from qidao.passes.schedule.bind import refuse_gpu_bindings
from qidao.runtime.cpu import JitModule, jit_compile
from qidao.runtime.executor import NativeFunction, TensorSpec, ndarray_entry_ir
from qidao.runtime.profile import (
    CALLS_GLOBAL,
    NS_GLOBAL,
    RUNTIME_IR,
    KernelCounters,
    Profile,
    measure,
)

ENTRY = "main"
_OPTIONS: dict[str, Any] = {
    "fuse": True,
    "opt_level": 3,
    "debug": None,
    "schedule": "default",
    "records": None,
    "verify": None,
    "profile": False,
}
SCHEDULE_STAGE = "schedule"
"""A ``schedule=`` runs in this stage: ``ir("affine")`` shows the loops before it,
``ir("schedule")`` after."""

MODES: tuple[str, ...] = ("graph", "eager")
"""``graph``: the whole optimized pipeline; ``eager``: one kernel per tg op."""

GRAPH_PASSES = frozenset(
    {"fold-constants", "simplify", "cse", "dce", "layout", "fuse", "plan-memory"}
)
"""Passes that optimize the whole graph: eager mode skips them in GRAPH_STAGES."""

_SCF = [s.name for s in STAGES].index("scf")
GRAPH_STAGES = frozenset(s.name for s in STAGES[:_SCF])
"""The stages before loops are lowered (``scf``): their IR is still the graph (tg)
or its host program (affine). Later stages' passes (the ``dce`` that cleans up the
llvm dialect) run in both modes."""

HOST_STAGE = STAGES[_SCF - 1].name
"""The last stage before ``scf``: its host program is what ``compiled.stats`` counts."""


class CompiledModel(Protocol):
    """What every ``qidao.compile`` result offers, whatever the model and target:
    ``Compiled`` (CPU), ``CompiledCuda``, ``Specialized`` (compiled again per
    integer input value or shape) and ``TorchCompiled`` (torch tensors in and out)."""

    @property
    def stats(self) -> dict[str, Any]:
        """Kernel and buffer counts, compile seconds, what the schedules did."""
        ...

    def ir(self, stage: str = "tg") -> str:
        """The text of one stage of the tower (``qidao.compiler.pipeline``)."""
        ...

    def __call__(self, *args: Any) -> Any:
        """Run the model on its inputs, in graph-input order."""
        ...


class Compiled:
    """A compiled model: call it with NumPy arrays in graph-input order."""

    def __init__(
        self,
        stage_ir: dict[str, ModuleOp],
        llvm_ir: str,
        jit: JitModule,
        native: NativeFunction,
        stats: dict[str, Any],
        mode: str = "graph",
    ) -> None:
        self.mode = mode
        self._stage_ir = stage_ir
        self._llvm_ir = llvm_ir
        self._jit = jit
        self.native = native
        self.stats = stats
        self._call = native._call  # the generated, checked caller

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.native.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.native.outputs

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        """Run the model; checks count, dtype and shape of every input first."""
        return self._call(*arrays)  # type: ignore[no-any-return]

    def ir(self, stage: str = "tg") -> str:
        """The text of one stage: ``tg``, ``affine``, ``llvm``, ... (see STAGE_NAMES)."""
        check_stage(stage)
        if stage == "llvm":
            return self._llvm_ir
        if stage == "llvm-opt":
            return self._jit.optimized_ir()
        if stage == "asm":
            return self._jit.assembly()
        return str(self._stage_ir[stage])

    def profile(self, *arrays: Any, runs: int = 50) -> Profile:
        """Median time of each kernel over ``runs`` calls on ``arrays`` (after 3
        warm-up calls), and of the whole call; needs ``qidao.compile(...,
        profile=True)``. ``print(compiled.profile(x))`` prints the table."""
        host = entry_function(self._stage_ir["scf"])
        names = host.attributes.get(KERNELS_ATTR)
        if names is None:
            raise ValueError(
                "this model was compiled without profile=True: "
                "qidao.compile(model, profile=True) times its kernels"
            )
        assert isinstance(names, ArrayAttr)
        labels = kernel_labels(self._stage_ir["affine"])
        kernels = [
            (n.data, labels.get(n.data, ""))
            for n in names.data
            if isinstance(n, StringAttr)
        ]
        counters = KernelCounters(
            self._jit.global_address(NS_GLOBAL),
            self._jit.global_address(CALLS_GLOBAL),
            len(kernels),
        )
        self(*arrays)  # the arguments are checked once, before any timing
        return measure(lambda: self._call(*arrays), counters, kernels, runs)

    def module(self, stage: str = "tg") -> ModuleOp:
        """A copy of the IR of one IR stage (``input`` ... ``llvm-dialect``)."""
        check_stage(stage)
        if stage not in self._stage_ir:
            raise ValueError(f"stage '{stage}' is text, not IR; use .ir('{stage}')")
        return self._stage_ir[stage].clone()

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {list(s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{list(s.shape)}" for s in self.outputs)
        return (
            f"<qidao.Compiled ({ins}) -> ({outs}), {self.mode} mode, "
            f"{self.stats['kernels']} kernels>"
        )


def compile(
    model: Any,
    target: str = "cpu",
    threads: int | None = None,
    mode: str = "graph",
    weights: Any = None,
    example_inputs: Any = None,
    strict: bool = False,
    **options: Any,
) -> CompiledModel:
    """Compile ``model`` for ``target`` and return a callable :class:`Compiled` (or,
    in the cases below, another :class:`CompiledModel`).

    ``model`` is an ``onnx.ModelProto``, a path to a ``.onnx`` or ``.mlir`` file, a
    ``qidao.frontend.builder.Graph`` or a tg ``ModuleOp``. ``threads`` caps the CPU
    threads the kernels may use (default: all cores; the spine's kernels are serial
    loop nests until schedules add parallel loops). ``mode`` is ``"graph"`` (the
    optimized pipeline) or ``"eager"`` (one kernel and one buffer per tg op; see
    ``MODES``). Options: ``fuse`` (default True) runs the fusion pass in graph mode;
    ``opt_level`` (0-3, default 3) is LLVM's; ``debug`` (0-4) prints stages, IR and
    timings to stderr (see ``qidao.compiler.debug``); ``verify`` (``"stage"``, the
    default, or ``"each"``) verifies the IR at the end of every stage or after every
    pass and schedule primitive; ``schedule`` (a function
    taking a ``qidao.compiler.schedule.Schedule``, or a trace as Python or pipeline
    text) rewrites the kernels' loops in the ``schedule`` stage, and
    ``stats["schedule"]`` records the applied trace as Python. The default,
    ``schedule="default"``, applies a default schedule per kernel kind
    (``qidao.compiler.targets.cpu.defaults``; ``stats["default_schedule"]`` says what each
    kernel got and why); ``schedule=None`` keeps the loops as lowered.
    ``records`` (a ``qidao tune`` JSON-lines file) gives each kernel with a record
    for its workload, this CPU and ``threads`` its best tuned trace; the other
    kernels get ``schedule`` (``stats["records"]`` says which got what).
    ``weights`` (an ONNX model only: a ``.safetensors`` path or a dict of arrays)
    binds the model's initializers and graph inputs by name to those tensors
    (``qidao.frontend.weights``).

    A PyTorch ``nn.Module`` or function needs ``example_inputs`` (a tuple of
    tensors); it is captured with torch.export, and the result (a
    ``qidao.frontend.fx_backend.TorchCompiled``) takes and returns torch tensors.
    Unsupported operators run in PyTorch with a warning; with ``strict=True`` they
    raise one ``UnsupportedTorchOpsError`` listing them all.
    """
    from qidao.frontend.fx_detect import is_torch_model

    if is_torch_model(model):  # PyTorch: qidao/frontend/fx.py
        from qidao.frontend.fx_backend import compile_torch

        def compile_graph(module: ModuleOp) -> CompiledModel:
            return compile(module, target, threads, mode, **options)

        return compile_torch(model, example_inputs, compile_graph, strict)
    if example_inputs is not None or strict:
        raise TypeError(
            "example_inputs= and strict= are for PyTorch models (an nn.Module or a "
            f"function), not {type(model).__name__}"
        )
    if weights is not None:  # an ONNX model in, an ONNX model with the weights out
        model = with_weights(model, weights)
    if target == "cuda":  # CUDA C + launch plan: qidao/compiler/cuda
        from qidao.compiler.targets.cuda import compile_cuda

        return compile_cuda(model, mode, threads=threads, **options)
    if target != "cpu":
        raise ValueError(f"unknown target '{target}'; the targets are: cpu, cuda")
    check_mode(mode)
    cores = os.cpu_count() or 1
    if threads is None:
        threads = cores
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(sorted(unknown))}; qidao.compile takes "
            f"{', '.join(f'{k}={v!r}' for k, v in _OPTIONS.items())}"
        )
    from qidao.compiler.specialize import specialized

    def compile_specialization(module: ModuleOp) -> Compiled:
        compiled = compile(module, target, threads, mode, **options)
        assert isinstance(compiled, Compiled)  # a tg module for the CPU
        return compiled

    # ONNX integer inputs / dynamic shapes: compiled per call
    lazy = specialized(model, compile_specialization)
    if lazy is not None:
        return lazy
    settings = {**_OPTIONS, **options}
    level = debug_level(settings["debug"])
    verify_policy(settings["verify"])  # a bad value fails before any work
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    module = load_model(model)
    seconds["import"] = time.perf_counter() - start
    inputs, outputs = _signature(module)
    applied: dict[str, Any] = {}
    schedule = settings["schedule"]
    if isinstance(schedule, str) and schedule == "default":
        schedule = _default_schedule(min(threads, cores), applied)
    if settings["records"] is not None:  # tuned traces win: qidao/compiler/tune
        from qidao.compiler.tune.records import records_schedule

        schedule = records_schedule(
            settings["records"], min(threads, cores), schedule, applied
        )
    stage_ir = lower(
        module,
        fuse=bool(settings["fuse"]),
        seconds=seconds,
        debug=level,
        mode=mode,
        threads=min(threads, cores),
        schedule=schedule,
        applied=applied,
        verify=settings["verify"],
        profile=bool(settings["profile"]),
    )
    start = time.perf_counter()
    llvm_ir = llvm_ir_text(module)
    seconds["emit-llvm"] = time.perf_counter() - start
    start = time.perf_counter()
    trampoline = ndarray_entry_ir(ENTRY, len(inputs) + len(outputs))
    jit = jit_compile(
        llvm_ir + trampoline,
        opt_level=int(settings["opt_level"]),
        runtime_ir=RUNTIME_IR if settings["profile"] else None,
    )
    native = NativeFunction(jit, ENTRY, inputs, outputs)
    seconds["jit"] = time.perf_counter() - start
    stats: dict[str, Any] = {
        **host_stats(stage_ir[HOST_STAGE]),
        "threads": min(threads, cores),
        "compile_seconds": seconds,
        **applied,
    }
    if level >= 2:
        emit("llvm", llvm_ir)
    if level >= 4:
        emit("llvm-opt", jit.optimized_ir())
        emit("asm", jit.assembly())
    if level >= 1:
        emit(
            "stats",
            f"{mode} mode: {stats['kernels']} kernel(s), {stats['buffers']} "
            f"buffer(s), peak {stats['peak_bytes']:,} bytes, traffic "
            f"{stats['traffic_bytes']:,} bytes; "
            + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in seconds.items()),
        )
    return Compiled(stage_ir, llvm_ir, jit, native, stats, mode)


def _default_schedule(
    threads: int, applied: dict[str, Any]
) -> Callable[[Schedule], None]:
    """The default schedules as a schedule function; what each kernel got goes to
    ``applied["default_schedule"]``."""

    def apply(s: Schedule) -> None:
        applied["default_schedule"] = default_schedule(s, threads)

    return apply


def check_mode(mode: object) -> str:
    """``mode`` if it is one of ``MODES``, else a ValueError listing them."""
    if mode not in MODES:
        raise ValueError(
            f"unknown mode {mode!r}; the modes are: {', '.join(MODES)} "
            "(graph: the optimized pipeline; eager: one kernel per tg op)"
        )
    assert isinstance(mode, str)
    return mode


def stage_passes(stage: Stage, mode: str = "graph", fuse: bool = True) -> list[str]:
    """The passes of ``stage`` that run in ``mode`` (``fuse=False`` drops fuse)."""
    check_mode(mode)
    names = list(stage.passes)
    if not fuse:
        names = [n for n in names if n != "fuse"]
    if mode == "eager" and stage.name in GRAPH_STAGES:
        names = [n for n in names if n not in GRAPH_PASSES]
    return names


def lower(
    module: ModuleOp,
    fuse: bool = True,
    seconds: dict[str, float] | None = None,
    debug: int = 0,
    mode: str = "graph",
    threads: int = 0,
    schedule: ScheduleSpec | None = None,
    applied: dict[str, Any] | None = None,
    verify: str | None = None,
    profile: bool = False,
) -> dict[str, ModuleOp]:
    """Run every IR stage in place; return a snapshot of the module after each.

    ``threads`` is the thread count parallel loops start (0: libgomp's default).
    ``schedule`` is applied at the end of ``SCHEDULE_STAGE``; its trace (Python)
    goes to ``applied["schedule"]``. ``verify`` (``"stage"`` or ``"each"``, see
    ``qidao.compiler.debug``) says how often the IR is verified. ``profile`` runs
    ``instrument-kernels`` first in the ``scf`` stage (after the schedule).
    """
    check_mode(mode)
    each = verify_policy(verify) == "each"
    ctx = make_context()
    snapshots: dict[str, ModuleOp] = {}
    if debug >= 2:
        emit("input", str(module))
    for stage in STAGES:
        start = time.perf_counter()
        names = stage_passes(stage, mode, fuse)
        if profile and stage.name == "scf":
            names = ["instrument-kernels", *names]
        for name in names:
            options = {"threads": threads} if name == "convert-parallel-to-gomp" else {}
            make_pass(name, **options).apply(ctx, module)
            if each:
                _verify(module, f"pass '{name}'")
            if debug >= 3:
                emit(f"after pass {name}", str(module))
        if names and not each:
            _verify(
                module,
                f"stage '{stage.name}' (passes: {', '.join(names)}; "
                "verify='each' names the pass)",
            )
        if schedule is not None and stage.name == SCHEDULE_STAGE:
            scheduled = apply_schedule(module, schedule, verify_each=each)
            refuse_gpu_bindings(module)  # the CPU stages would run them serially
            if applied is not None:
                applied["schedule"] = scheduled.python()
        if seconds is not None:
            seconds[stage.name] = time.perf_counter() - start
        snapshots[stage.name] = module.clone()
        if debug >= 2 and stage.name != "input":
            emit(f"stage {stage.name}", str(module))
    return snapshots


def _verify(module: ModuleOp, after: str) -> None:
    try:
        module.verify()
    except Exception as err:
        raise RuntimeError(
            f"internal error: IR does not verify after {after}: {err}"
        ) from err


def entry_function(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == ENTRY:
            return op
    raise ValueError(f"the model has no entry function @{ENTRY}")


def kernel_labels(module: ModuleOp) -> dict[str, str]:
    """Kernel name -> its ``qd.kernel`` label (the tg ops it computes)."""
    labels = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            label = op.attributes.get("qd.kernel")
            if isinstance(label, StringAttr):
                labels[op.sym_name.data] = label.data
    return labels


def _names(fn: func.FuncOp, attr: str, default: Sequence[str]) -> list[str]:
    names = fn.attributes.get(attr)
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return list(default)


def _signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Input and output specs of the graph's entry function."""
    fn = entry_function(module)
    args = fn.body.block.args
    in_names = _names(
        fn, "qd.input_names", [a.name_hint or f"input{i}" for i, a in enumerate(args)]
    )
    outs = fn.function_type.outputs.data
    out_names = _names(fn, "qd.output_names", [f"output{i}" for i in range(len(outs))])

    def spec(name: str, t: object) -> TensorSpec:
        if not isinstance(t, TensorType):
            raise TypeError(f"@{ENTRY}: '{name}' has type {t}, expected a tensor")
        if not is_row_major(t):
            raise ValueError(
                f"@{ENTRY}: '{name}' has the strided type {t}; graph inputs and "
                "outputs are row-major arrays (take a strided view inside the graph, "
                "e.g. with tg.transpose)"
            )
        return TensorSpec(name, tuple(t.get_shape()), dtype_name(t.get_element_type()))

    inputs = [spec(n, a.type) for n, a in zip(in_names, args, strict=True)]
    outputs = [spec(n, t) for n, t in zip(out_names, outs, strict=True)]
    return inputs, outputs


def host_stats(affine: ModuleOp) -> dict[str, int]:
    """Per call: kernel launches, intermediate buffers, their peak live bytes and
    their traffic (see ``qidao.passes.kernels.plan_memory.memory_stats``)."""
    return memory_stats(affine, entry_function(affine))
