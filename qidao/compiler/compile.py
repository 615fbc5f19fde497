"""``qidao.compile``: a model in, a native callable out, every stage kept for reading.

compiled = qidao.compile(model)          # ONNX, .onnx/.mlir path, builder Graph
y, = compiled(x)                         # NumPy in, NumPy out
print(compiled.ir("affine"))             # any stage of the tower
compiled.stats                           # kernels, buffers, peak/traffic bytes, times
qidao.compile(model, mode="eager")       # every tg op its own kernel and buffer
qidao.compile(model, schedule=fn)        # fn(s: Schedule), in the "schedule" stage
qidao.compile(model, target="cuda")      # CUDA C + a launch plan

The driver is the same for every target: check the options
(``qidao.compiler.options``), load the model (``models.py``), run the stages every
target shares with the one stage loop (``pipeline.run_stages``), applying the
schedule at the end of the ``schedule`` stage, and hand the scheduled IR to the
target (``qidao.compiler.targets``), which runs its own stages, emits its code and
makes the compiled object. A compiled model goes to the compile cache and is loaded
from it the next time (``qidao.compiler.cache``).

An ONNX model with integer inputs (shapes, axes, pads) or dynamic dimensions compiles
at its first call instead, specialized on those values and shapes
(``qidao.frontend.onnx.specialize``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.cache import (
    CACHE_SWITCH_ENV,
    CacheError,
    CompileCache,
    cache_enabled,
    cache_key,
    lookup,
    model_digest,
    uses_custom_ops,
)
from qidao.compiler.checkpoint import BUDGET_TRIES, Checkpointing
from qidao.compiler.compiled import CompiledModel, CompiledProgram
from qidao.compiler.conv_algo import measured_choice
from qidao.compiler.models import is_onnx, lift_for_grad, load_model, with_weights
from qidao.compiler.options import Settings, check_settings
from qidao.compiler.pipeline import (
    MODES,
    SCHEDULE_STAGE,
    ScheduleHook,
    run_stages,
    stages,
)
from qidao.compiler.schedule import ScheduleSpec, apply_schedule
from qidao.compiler.symbolic import SymbolicProgram
from qidao.compiler.targets import Target, get_target
from qidao.compiler.targets.cpu.compiled import Compiled
from qidao.compiler.trainable import WithParameters, trained_inputs, training_step
from qidao.errors import ArgumentError, UnsupportedError
from qidao.passes.graph.checkpoint import CheckpointError, training_report
from qidao.passes.graph.select_conv_algo import algo_report, set_measure
from qidao.runtime.cpu import host_cpu

__all__ = ["MODES", "Compiled", "CompiledModel", "compile"]


def compile(
    model: Any,
    target: str = "cpu",
    threads: int | None = None,
    mode: str = "graph",
    weights: Any = None,
    example_inputs: Any = None,
    strict: bool = False,
    dynamic: Mapping[str, Any] | None = None,
    **options: Any,
) -> CompiledModel:
    """Compile ``model`` for ``target`` and return a callable :class:`Compiled` (or,
    in the cases below, another :class:`CompiledModel`).

    ``model`` is an ``onnx.ModelProto``, a path to a ``.onnx`` or ``.mlir`` file, a
    ``qidao.frontend.builder.Graph`` or a tg ``ModuleOp``. ``target`` is ``"cpu"``
    or ``"cuda"`` (``qidao.compiler.targets``). ``threads`` caps the CPU
    threads the kernels may use (default: all cores; the spine's kernels are serial
    loop nests until schedules add parallel loops). ``mode`` is ``"graph"`` (the
    optimized pipeline) or ``"eager"`` (one kernel and one buffer per tg op; see
    ``MODES``). Options: ``fuse`` (default True) runs the fusion pass in graph mode;
    ``debug`` (0-4) prints stages, IR and timings to stderr (see
    ``qidao.compiler.debug``); ``verify`` (``"stage"``, the default, or ``"each"``)
    verifies the IR at the end of every stage or after every pass and schedule
    primitive; ``schedule`` (a function taking a
    ``qidao.compiler.schedule.Schedule``, or a trace as Python or pipeline text)
    rewrites the kernels' loops in the ``schedule`` stage, and
    ``stats["schedule"]`` records the applied trace as Python. The default,
    ``schedule="default"``, applies the target's default schedule per kernel kind
    (``qidao.compiler.targets.cpu.defaults``, ``...cuda.defaults``;
    ``stats["default_schedule"]`` says what each kernel got and why);
    ``schedule=None`` keeps the loops as lowered. ``checks=True`` checks gather
    indices and integer divisors at run time: a call raises ``qidao.CheckError``
    naming the node where ONNX Runtime raises, instead of returning the defined
    values of ``docs/semantics.md`` (the ``insert-checks`` pass).

    CPU options: ``opt_level`` (0-3, default 3) is LLVM's; ``records`` (a ``qidao
    tune`` JSON-lines file) gives each kernel with a record for its workload, this
    CPU and ``threads`` its best tuned trace; the other kernels get ``schedule``
    (``stats["records"]`` says which got what); ``profile=True`` times every kernel
    (``Compiled.profile``); ``update_in_place`` (default True) makes a training
    step write its updated weights and optimizer states over the old ones (the
    ``update-in-place`` pass; False: new buffers each step); ``vnni`` and ``amx``
    (None, the default: where the CPU has them) compute int8 matmuls with AVX-512
    VNNI and AMX tiles, True where the CPU lacks them is an error; ``bf16``
    (likewise, AVX512_BF16) computes a bfloat16 model's matmuls with ``vdpbf16ps``
    on its weights kept in bfloat16 (``bf16-matmul``; False: in float32);
    ``pack_weights`` (None, the default: under the default schedule) stores
    constant float32 matmul weights in the column panels the matmul tile reads
    (``pack-panels``). CUDA options:
    ``device`` (``"cuda"``, or ``"emulate"``:
    the same CUDA C run on the CPU); ``records`` (a ``qidao tune --target cuda``
    file) as on the CPU, its records keyed by the GPU's model and compute
    capability (``"emulator"`` for ``device="emulate"``).

    ``grad`` (a list of names of graph inputs or ONNX initializers) makes the call
    return the outputs, then the gradient of ``sum(output 0)`` with respect to each
    name, in order (the ``autodiff`` pass, ``qidao.passes.graph.autodiff``); an
    initializer named there is not folded into the code: the result holds its value
    (``.parameters``, ``qidao.compiler.trainable``) and the call does not take it.

    ``optimizer`` (``qidao.optim.SGD(...)`` or ``Adam(...)``, with ``grad``) compiles
    a training step (``qidao.compiler.trainable.TrainingStep``): forward, backward
    and the update in one program; the step holds the weights named in ``grad``
    (initializers keep the model's values; graph inputs take theirs from
    ``weights=``, a dict or a ``.safetensors`` file) and the optimizer's state,
    and each call takes the other inputs and returns the outputs.

    ``checkpoint`` (with ``grad``: ``k``, ``"sqrt"``, ``{"budget": bytes}`` or
    ``{"budget": bytes, "search": "exact"}``) keeps every k-th activation of the
    forward (or the fewest that fit the budget) and recomputes the rest in the
    backward (the ``checkpoint`` pass; ``stats["saved_bytes"]``,
    ``stats["recompute_flops"]``, ``stats["recompute_share"]``).

    ``weights`` (an ONNX model only: a ``.safetensors`` path or a dict of arrays)
    binds the model's initializers and graph inputs by name to those tensors
    (``qidao.frontend.weights``).

    ``dynamic`` (an ONNX model: ``{"seq": (1, 2048)}``) makes each input dimension
    whose ``dim_param`` it names *symbolic*: one compile serves every size in the
    range, and the result (a ``qidao.compiler.symbolic.SymbolicProgram``) takes
    arrays of any of them (``docs/dynamic-shapes.md``); ``(n, n)`` fixes a
    dimension to ``n``. A builder graph declares its symbolic dimensions in its
    inputs' shapes instead (``Dim("seq", 1, 2048)``); a PyTorch model takes
    ``torch.export``'s ``dynamic_shapes`` for its positional inputs,
    ``dynamic=({1: torch.export.Dim("seq", min=1, max=2048)},)``.

    A PyTorch ``nn.Module`` or function needs ``example_inputs`` (a tuple of
    tensors); it is captured with torch.export, and the result (a
    ``qidao.frontend.torch.backend.TorchCompiled``) takes and returns torch tensors.
    Unsupported operators run in PyTorch with a warning; with ``strict=True`` they
    raise one ``UnsupportedTorchOpsError`` listing them all.
    """
    from qidao.frontend.torch.detect import is_torch_model

    if is_torch_model(model):  # PyTorch: qidao/frontend/torch/importer.py
        from qidao.frontend.torch.backend import compile_torch

        _refuse_training_options(options)

        def compile_graph(module: ModuleOp) -> CompiledModel:
            return compile(module, target, threads, mode, **options)

        return compile_torch(model, example_inputs, compile_graph, strict, dynamic)
    if example_inputs is not None or strict:
        raise TypeError(
            "example_inputs= and strict= are for PyTorch models (an nn.Module or a "
            f"function), not {type(model).__name__}"
        )
    backend = get_target(target)
    settings = check_settings(backend.name, backend.options, mode, threads, options)
    backend.check(settings)
    grad, optimizer = settings.options["grad"], settings.options["optimizer"]
    held: dict[str, Any] = {}
    if optimizer is not None and weights is not None and not is_onnx(model):
        held = trained_inputs(weights, grad)  # a builder graph's initial weights
    elif weights is not None:  # an ONNX model in, an ONNX model with the weights out
        model = with_weights(model, weights)
    if dynamic is not None:
        return _compile_symbolic(model, dynamic, backend, settings)
    if grad:  # initializers named there become inputs
        model, lifted = lift_for_grad(model, grad)
        held = {**held, **lifted}

    def compile_specialization(module: ModuleOp) -> CompiledProgram:
        compiled = compile(module, target, threads, mode, **options)
        assert isinstance(compiled, CompiledProgram)  # a tg module compiles ahead
        return compiled

    if is_onnx(model):  # ONNX integer inputs / dynamic shapes: compiled per call
        from qidao.frontend.onnx.specialize import specialized

        lazy = specialized(model, compile_specialization)
    else:
        lazy = None
    if lazy is not None:
        if settings.options["grad"]:
            raise UnsupportedError(
                "grad= needs a model with static shapes and no integer (shape, axes) "
                "inputs; this one compiles per call (qidao.frontend.onnx.specialize): "
                "fix its dynamic dimensions or integer inputs first"
            )
        return lazy
    compiled = _compile_module(model, backend, settings)
    if "symbolic" in compiled.stats:  # one compile for every size: Dim, dynamic=
        if grad:
            raise UnsupportedError(
                "grad= needs static shapes; this model has symbolic dimensions "
                f"({', '.join(compiled.stats['symbolic']['dims'])})"
            )
        return SymbolicProgram(compiled)
    if optimizer is not None:
        return training_step(compiled, grad, held, optimizer)
    return WithParameters(compiled, held) if held else compiled


def _compile_symbolic(
    model: Any, dynamic: Mapping[str, Any], backend: Target, settings: Settings
) -> CompiledModel:
    """An ONNX model with the dimensions ``dynamic`` names symbolic
    (``qidao.frontend.onnx.symbolic``)."""
    if not is_onnx(model):
        raise ArgumentError(
            f"dynamic= takes an ONNX model, not a {type(model).__name__}; a builder "
            'graph declares a symbolic dimension in an input\'s shape: g.input("x", '
            '(Dim("seq", 1, 2048), 768))'
        )
    given = [n for n in TRAINING_OPTIONS if settings.options.get(n)]
    if given:
        raise ArgumentError(
            f"dynamic= with {', '.join(given)}=: training needs static shapes"
        )
    # the ONNX frontend (and onnx, ~0.5 s to import) only where a model is ONNX
    from qidao.frontend.onnx.load import load_model as load_onnx_model
    from qidao.frontend.onnx.symbolic import import_symbolic

    compiled = _compile_module(
        import_symbolic(load_onnx_model(model), dynamic), backend, settings
    )
    return SymbolicProgram(compiled) if "symbolic" in compiled.stats else compiled


TRAINING_OPTIONS = ("grad", "optimizer", "checkpoint")


def _refuse_training_options(options: dict[str, Any]) -> None:
    """A PyTorch model's gradients are PyTorch's to compute: its parameters are
    constants of the captured graph, and a graph split around the operators qidao
    lacks has no single backward."""
    given = [name for name in TRAINING_OPTIONS if options.get(name) is not None]
    if given:
        raise ArgumentError(
            f"qidao.compile(<PyTorch model>, {', '.join(f'{n}=...' for n in given)}): "
            "a PyTorch model trains through torch.compile: "
            "torch.compile(model, backend='qidao') compiles its forward and backward "
            "graphs (AOTAutograd) and torch.optim updates its parameters; "
            "torch.utils.checkpoint.checkpoint recomputes activations there. "
            "qidao's own grad=, optimizer= and checkpoint= take an ONNX, .mlir or "
            "builder model (export the module with torch.onnx.export)"
        )


def _compile_module(model: Any, backend: Target, settings: Settings) -> CompiledProgram:
    """The compiled program from the compile cache (``qidao.compiler.cache``), or
    built and stored there; ``stats["cache"]`` says which, or why not cached."""
    start = time.perf_counter()
    if is_onnx(model) and uses_custom_ops(model):
        model = load_model(model)  # keyed by its IR: the ops' bodies are Python
    key, why_not = _cache_key(model, backend, settings)
    store = CompileCache()
    if key is not None:
        unusable = store.unusable()
        if unusable is not None:
            key, why_not = None, f"off: {unusable}"
    if key is None:
        compiled = _build(model, backend, settings)
        compiled.stats["cache"] = why_not
        return compiled

    def recompile() -> CompiledProgram:
        return _build(model, backend, settings)

    hit, status = lookup(key, store, lambda e: backend.from_entry(e, recompile))
    if hit is not None:
        assert isinstance(hit, CompiledProgram)
        hit.stats["cache"] = status
        hit.stats["compile_seconds"] = {"cache": time.perf_counter() - start}
        return hit
    compiled = _build(model, backend, settings)
    is_file = isinstance(model, str | os.PathLike)
    if is_file and _cache_key(model, backend, settings)[0] != key:
        compiled.stats["cache"] = (
            f"{status}, not stored: the model changed while it compiled"
        )
        return compiled
    try:
        stored = store.store(key, backend.to_entry(compiled))
        compiled.stats["cache"] = f"{status}, {stored}"
    except (OSError, TypeError, ValueError, CacheError) as e:
        # disk full, read-only, removed meanwhile, not JSON, not private
        compiled.stats["cache"] = f"{status}, not stored: {e}"
    return compiled


def _cache_key(
    model: Any, backend: Target, settings: Settings
) -> tuple[str | None, str]:
    """The cache key of this compile, or None and why it is not cached."""
    if not cache_enabled():
        return None, f"off: {CACHE_SWITCH_ENV}={os.environ[CACHE_SWITCH_ENV]}"
    if not backend.cache:
        return None, f"off: the {backend.name} target is not cached"
    if settings.debug or settings.print_ir:
        return None, "off: debug prints the stages as they run"
    if settings.verify == "each":
        return None, "off: verify='each'"
    if settings.options.get("profile"):
        return None, "off: profile=True"
    options: dict[str, Any] = {}
    for name, value in settings.options.items():
        if name in ("debug", "verify"):
            continue
        if name == "records" and value is not None:
            path = Path(value)
            if not path.is_file():
                return None, f"off: no records file at '{path}'"
            value = hashlib.sha256(path.read_bytes()).hexdigest()
        elif hasattr(value, "pass_options"):  # an optimizer: its hyper-parameters
            value = {"kind": value.kind, **value.pass_options()}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = {"kind": type(value).__name__, **dataclasses.asdict(value)}
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            value = list(value)
        elif callable(value):
            return None, f"off: {name} is a function"
        elif not isinstance(value, str | int | float | bool | None):
            return None, f"off: {name}={type(value).__name__} has no key"
        options[name] = value
    digest = model_digest(model)
    if digest is None:
        return None, f"off: a {type(model).__name__} model has no key"
    cpu, features = host_cpu()
    parts = {
        "model": digest,
        "target": backend.name,
        "cpu": cpu,
        "features": features,
        "mode": settings.mode,
        "threads": settings.threads,
        "options": options,
    }
    return cache_key(parts), ""


def _build(model: Any, backend: Target, settings: Settings) -> CompiledProgram:
    """:func:`_build_once`; with ``checkpoint={"budget": B}``, again with a
    tighter model budget while the planned peak is above B
    (``qidao.compiler.checkpoint``)."""
    compiled = _build_once(model, backend, settings)
    spec = settings.options.get("checkpoint")
    if not isinstance(spec, Checkpointing) or not spec.budget:
        return compiled
    tries = 1
    while compiled.stats["peak_bytes"] > spec.budget:
        peak = compiled.stats["peak_bytes"]
        if tries == BUDGET_TRIES:
            raise CheckpointError(
                f"checkpoint: the planned peak is {peak} bytes, above budget="
                f"{spec.budget} after {tries} compiles (the model of memory before "
                "fusion allowed "
                f"{spec.model_budget or spec.budget} bytes); give a larger budget"
            )
        model_budget = (spec.model_budget or spec.budget) * spec.budget // peak
        spec = replace(spec, model_budget=model_budget)
        settings = replace(settings, options={**settings.options, "checkpoint": spec})
        compiled = _build_once(model, backend, settings)
        tries += 1
    compiled.stats["checkpoint_compiles"] = tries
    return compiled


def _build_once(model: Any, backend: Target, settings: Settings) -> CompiledProgram:
    """Load ``model``, run the target's stages, let the target build the result."""
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    module = load_model(model)
    seconds["import"] = time.perf_counter() - start
    applied: dict[str, Any] = {}
    stage_ir = run_stages(
        module,
        stages(backend.name, last=SCHEDULE_STAGE),
        mode=settings.mode,
        settings=settings.values(),
        debug=settings.debug,
        verify=settings.verify,
        print_ir=settings.print_ir,
        schedule=_schedule_hook(backend.schedule(settings, applied), backend, applied),
        seconds=seconds,
    )
    conv_algo = algo_report(stage_ir["tg"]) if "tg" in stage_ir else {}
    if conv_algo:
        applied["conv_algo"] = conv_algo
    if settings.options.get("grad") and "tg" in stage_ir:
        applied.update(training_report(stage_ir["tg"]))
    return backend.build(module, stage_ir, settings, seconds, applied)


def _schedule_hook(
    spec: ScheduleSpec | None, backend: Target, applied: dict[str, Any]
) -> ScheduleHook | None:
    """Apply ``spec`` at the end of the schedule stage; its trace (Python) goes to
    ``applied["schedule"]``."""
    if spec is None:
        return None

    def hook(module: ModuleOp, verify_each: bool) -> None:
        scheduled = apply_schedule(module, spec, verify_each=verify_each)
        backend.check_scheduled(module)
        applied["schedule"] = scheduled.python()

    return hook


set_measure(functools.partial(measured_choice, compile))  # algo="benchmark"
