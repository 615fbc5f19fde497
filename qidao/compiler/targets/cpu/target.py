"""The CPU target: the driver's questions answered for LLVM IR on the host CPU."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.cache import CacheError, Entry
from qidao.compiler.checks import Checks
from qidao.compiler.compiled import CompiledProgram
from qidao.compiler.debug import emit
from qidao.compiler.host import ENTRY, host_stats, signature
from qidao.compiler.options import Settings
from qidao.compiler.pipeline import SCHEDULE_STAGE, run_stages, stages
from qidao.compiler.schedule import Schedule, ScheduleSpec
from qidao.compiler.targets.cpu.compiled import Compiled
from qidao.compiler.targets.cpu.defaults import default_schedule
from qidao.compiler.targets.cpu.emit import weight_symbols
from qidao.compiler.targets.cpu.lower import lower
from qidao.passes.schedule.bind import refuse_gpu_bindings
from qidao.runtime.amx import amx_available
from qidao.runtime.cpu import (
    JitError,
    JitModule,
    host_has,
    jit_compile,
    uses_openmp,
)
from qidao.runtime.executor import NativeFunction, TensorSpec, ndarray_entry_ir
from qidao.runtime.profile import RUNTIME_IR

VNNI_FEATURE = "avx512vnni"
"""LLVM's name for AVX-512 VNNI (``vpdpbusd``)."""
AVX512F_FEATURE = "avx512f"
"""LLVM's name for AVX-512 Foundation (``vscalefps``: ``expand-math{ldexp}``)."""
BF16_FEATURE = "avx512bf16"
"""LLVM's name for AVX512_BF16 (``vdpbf16ps``)."""

HOST_STAGE = "schedule"
"""The last stage before loops are lowered: its host program is what
``compiled.stats`` counts (launches, buffers, bytes)."""


_FEATURES = {"AVX-512 VNNI": VNNI_FEATURE, "AVX512_BF16": BF16_FEATURE}


def _host_option(value: object, name: str, what: str) -> bool:
    """An option that uses the CPU feature ``what``: None -> whether the host has
    it; True on a host without it is an error (the program would stop on an
    illegal instruction)."""
    feature = _FEATURES[what]
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name} must be None, True or False, got {value!r}")
    if value and not host_has(feature):
        raise ValueError(
            f"{name}=True, but this CPU has no {what} (LLVM's feature '{feature}'); "
            f"leave {name} out (None) to use it where it exists"
        )
    return host_has(feature) if value is None else value


def _default_schedule(spec: object) -> bool:
    return isinstance(spec, str) and spec == "default"


class CpuTarget:
    """LLVM IR, JIT-compiled for the host CPU."""

    name = "cpu"
    cache = True
    """Compiled programs go to the compile cache (``qidao.compiler.cache``)."""
    options: dict[str, Any] = {
        "opt_level": 3,
        "records": None,
        "profile": False,
        "update_in_place": True,
        "vnni": None,
        "bf16": None,
        "amx": None,
        "pack_weights": None,
        "ldexp": None,
    }
    """``vnni``: pack 8-bit weights for AVX-512 VNNI and compute int8 matmuls with
    ``vpdpbusd`` (the ``pack-vnni`` pass, ``tensorize``'s ``avx512_vnni``); None
    (the default): where the host CPU has it. True on a CPU without it is an
    error (the program would stop on an illegal instruction).

    ``bf16``: compute the matmuls of a bfloat16 model (a float32 product of
    widened bfloat16s by a constant bfloat16 weight) with ``vdpbf16ps``, the
    weight stored in bfloat16 (the ``bf16-matmul`` pass, ``tensorize``'s
    ``avx512_bf16``); None (the default): where the host CPU has AVX512_BF16;
    False: in float32. True on a CPU without it is an error, as for ``vnni``.

    ``amx``: compute those int8 matmuls (their rhs packed: ``vnni`` on) with AMX
    tile products (``tdpbusd``, ``tensorize``'s ``amx_int8``) where the shapes
    allow, and those bfloat16 matmuls (``tdpbf16ps``, ``amx_bf16``) where the CPU
    has AMX-BF16 too; None (the default): where the CPU has AMX-INT8 and Linux grants the
    process its tiles (``qidao/runtime/amx.py``). True where it cannot is an
    error, as for ``vnni``.

    ``ldexp``: ``expand-math`` scales exp's result by ``2^n`` with ``llvm.ldexp``
    (one ``vscalefps``) instead of two factors built from exponent bits (ten
    integer and float steps); the same values. None (the default): where the host
    has AVX-512F; elsewhere LLVM makes ``llvm.ldexp`` a libm call per element, so
    True there is slow, not wrong. What it buys (exp, erf, GELU, softmax, measured
    against ONNX Runtime): ``qidao/passes/cpu/expand_math.py``.

    ``pack_weights``: store constant float32 matmul weights in the column panels
    the matmul tile reads (the ``pack-panels`` pass); None (the default): under
    the default schedule, so that a schedule of one's own meets the matmul as
    written."""

    def check(self, settings: Settings) -> None:
        options = settings.options
        assert isinstance(options, dict)  # check_settings's merged options
        options["vnni"] = _host_option(options["vnni"], "vnni", "AVX-512 VNNI")
        options["bf16"] = _host_option(options["bf16"], "bf16", "AVX512_BF16")
        amx = settings.options["amx"]
        if amx is not None and not isinstance(amx, bool):
            raise TypeError(f"amx must be None, True or False, got {amx!r}")
        if amx and not amx_available():
            raise ValueError(
                "amx=True, but this process cannot run AMX tile instructions (the "
                "CPU lacks AMX-INT8, or the OS did not grant the tile state); leave "
                "amx out (None) to use it where it exists"
            )
        options["amx"] = amx_available() if amx is None else amx
        ldexp = options["ldexp"]
        if ldexp is not None and not isinstance(ldexp, bool):
            raise TypeError(f"ldexp must be None, True or False, got {ldexp!r}")
        options["ldexp"] = host_has(AVX512F_FEATURE) if ldexp is None else ldexp
        pack = settings.options["pack_weights"]
        if pack is not None and not isinstance(pack, bool):
            raise TypeError(f"pack_weights must be None, True or False, got {pack!r}")
        if pack is None:
            options["pack_weights"] = _default_schedule(settings.options["schedule"])
        if not isinstance(settings.options["update_in_place"], bool):
            raise TypeError(
                "update_in_place must be True or False, got "
                f"{settings.options['update_in_place']!r}"
            )
        level = settings.options["opt_level"]
        if level not in (0, 1, 2, 3) or isinstance(level, bool):
            raise ValueError(f"opt_level must be 0, 1, 2 or 3 (LLVM's), got {level!r}")

    def schedule(
        self, settings: Settings, applied: dict[str, Any]
    ) -> ScheduleSpec | None:
        spec: ScheduleSpec | None = settings.options["schedule"]
        if isinstance(spec, str) and spec == "default":

            def defaults(s: Schedule) -> None:
                applied["default_schedule"] = default_schedule(
                    s, settings.threads, amx=bool(settings.options["amx"])
                )

            spec = defaults
        records = settings.options["records"]
        if records is not None:  # tuned traces win: qidao/compiler/tune
            from qidao.compiler.tune.records import records_schedule

            spec = records_schedule(records, settings.threads, spec, applied)
        return spec

    def check_scheduled(self, module: ModuleOp) -> None:
        refuse_gpu_bindings(module)  # the CPU stages would run them serially

    def build(
        self,
        module: ModuleOp,
        stage_ir: dict[str, ModuleOp],
        settings: Settings,
        seconds: dict[str, float],
        applied: dict[str, Any],
    ) -> Compiled:
        """Run the CPU stages below the schedule (``lower.py``: spread over
        processes for a model with many kernels), emit LLVM IR, JIT-compile it."""
        profile = bool(settings.options["profile"])
        # the tg stage's signature: autodiff appends gradients, insert-checks the
        # checks' results (f64 scalars, named by Checks)
        inputs, outputs = signature(stage_ir["tg"])
        checks = Checks.of(stage_ir["tg"])
        outputs = outputs[: len(outputs) - checks.results] + checks.specs()
        below = stages(self.name, SCHEDULE_STAGE)[1:]
        below = tuple(stage for stage in below if not stage.text)
        scheduled = stage_ir[SCHEDULE_STAGE]
        host_ir = ndarray_entry_ir(ENTRY, len(inputs) + len(outputs))
        lowered = lower(module, below, settings, host_ir)
        seconds.update(lowered.seconds)
        texts = lowered.texts
        opt_level = int(settings.options["opt_level"])
        start = time.perf_counter()
        symbols = weight_symbols(lowered.weights)
        if lowered.objects is not None:  # each part compiled by its worker
            openmp = any(uses_openmp(text) for text in texts)
            jit = JitModule.from_objects(
                lowered.objects, symbols, openmp, texts, opt_level
            )
        else:
            jit = jit_compile(
                texts,
                opt_level=opt_level,
                runtime_ir=RUNTIME_IR if profile else None,
                symbols=symbols,
                keep_object=True,
            )
        native = NativeFunction(jit, ENTRY, inputs, outputs)
        seconds["jit"] = seconds.get("jit", 0.0) + time.perf_counter() - start
        llvm_ir = (jit.linked_ir or texts[0]) if lowered.objects is None else None
        stats: dict[str, Any] = {
            **host_stats(stage_ir[HOST_STAGE]),
            "threads": settings.threads,
            "compile_seconds": seconds,
            "compile_processes": lowered.processes,
            **applied,
        }
        if settings.debug >= 2 and llvm_ir is not None:  # debug 2: one part
            emit("llvm", llvm_ir)
        if settings.debug >= 4:
            emit("llvm-opt", jit.optimized_ir())
            emit("asm", jit.assembly())
        if settings.debug >= 1:
            emit(
                "stats",
                f"{settings.mode} mode: {stats['kernels']} kernel(s), "
                f"{stats['buffers']} buffer(s), peak {stats['peak_bytes']:,} bytes, "
                f"traffic {stats['traffic_bytes']:,} bytes; "
                + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in seconds.items()),
            )

        def more_ir() -> dict[str, ModuleOp]:  # the same stages on the same IR
            return run_stages(
                scheduled.clone(),
                below,
                mode=settings.mode,
                settings=settings.values(),
                verify=settings.verify,
            )

        compiled = Compiled(
            stage_ir,
            llvm_ir,
            jit,
            native,
            stats,
            settings.mode,
            lowered.weights,
            checks=checks,
        )
        compiled.set_more_ir(more_ir)
        return compiled

    def to_entry(self, compiled: CompiledProgram) -> Entry:
        """What the compile cache keeps of ``compiled``: machine code, weights,
        signature, stats."""
        assert isinstance(compiled, Compiled)
        jit = compiled._jit
        assert jit.object_code is not None and jit.source_ir is not None
        meta = {
            "target": self.name,
            "mode": compiled.mode,
            "inputs": [_spec_json(s) for s in compiled.inputs],
            "outputs": [_spec_json(s) for s in compiled.outputs],
            "checks": compiled.checks.to_json(),
            "uses_openmp": uses_openmp(jit.source_ir),
            "stats": compiled.stats,
        }
        return Entry(jit.object_code, compiled._weights or {}, meta)

    def from_entry(
        self, entry: Entry, recompile: Callable[[], CompiledProgram]
    ) -> Compiled:
        """The compiled program in a cache entry, loaded; its IR is made by
        ``recompile`` if it is asked for."""
        meta = entry.meta
        if meta.get("target") != self.name:
            raise CacheError(f"it is for target {meta.get('target')!r}")
        try:
            inputs = [TensorSpec(**s) for s in meta["inputs"]]
            outputs = [TensorSpec(**s) for s in meta["outputs"]]
            stats = dict(meta["stats"])
            mode = str(meta["mode"])
            checks = Checks.from_json(meta["checks"])
        except (KeyError, TypeError, ValueError) as e:
            raise CacheError(f"its signature does not read ({e})") from e
        symbols = weight_symbols(entry.weights)
        try:
            jit = JitModule.from_object(
                entry.code, symbols, bool(meta.get("uses_openmp"))
            )
            native = NativeFunction(jit, ENTRY, inputs, outputs + checks.specs())
        except JitError as e:
            raise CacheError(str(e)) from e
        return Compiled(
            None,
            None,
            jit,
            native,
            stats,
            mode,
            entry.weights,
            recompile,
            checks=checks,
        )


def _spec_json(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype}


TARGET = CpuTarget()
