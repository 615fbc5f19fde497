"""One ``qidao bench-cuda`` row, measured in this process: check, then time.

``measure(workload, backend)`` returns a :class:`GpuResult` or raises. The
output is checked before any time counts, against:

- on a GPU (``device="cuda"``): PyTorch on the device, from the same inputs as
  CUDA tensors: the workload's ``torch_fn`` on float64 copies of its float inputs
  (matmul, softmax, layer norm, the chain), or its ``torch_reference`` (a whole
  model: eager in float32 with TF32 off);
- on the emulator: the workload's NumPy reference.

The backends:

- ``qidao``: ``qidao.compile(build(), target="cuda", schedule=..., **options)``,
  loaded (nvcc, the module), the inputs uploaded once, ``launch`` alone timed
  (the program's launches in order on the default stream; no upload or
  download in the time);
- ``torch``: the workload's ``torch_fn`` (or the call ``torch_prepare`` sets up:
  a copy into a preallocated output) on the inputs as CUDA tensors, under
  ``torch.no_grad``, with TF32 off unless the workload's precision is ``tf32``;
- ``memcpy``: the driver's ``cuMemcpyDtoD`` (pycuda's ``memcpy_dtod``) of the one
  input into a second device buffer: the copy bandwidth.

Times are CUDA events around each call (3 warm-up calls, one to size the run,
then ``min_time`` seconds' worth: 10 to ``max_runs``), wall-clock on the
emulator. A qidao row whose workload needs a ``qidao.compile`` option the CUDA
target does not take yet is ``not built: ...``; that and a failed compile raise
:class:`HostError`: they happened before the row touched the GPU, so the worker
goes on with the next row (any other failure ends the worker: a CUDA error can
leave the context unusable).

A workload with a ``tune_command`` (the GPU ladder's ``tuned`` rung) compiles
with ``records=`` the file the bench was given (``--records``); without one its
qidao row is ``not run: no records (qidao tune ... --target cuda)``, and with
one that has no record for its kernel on this device the row fails with the
records' note (never the default schedule in the tuned row's name). A qidao
row carries ``compiled.stats["schedule"]``, the exact trace it ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from qidao.bench.cuda.results import NOT_BUILT, NOT_RUN, GpuResult
from qidao.bench.cuda.workloads import GpuWorkload

ROW_TAG = "QIDAO_ROW "
"""How a worker's stdout line carrying a row starts."""

BACKENDS = ("qidao", "memcpy", "torch")

Timer = Callable[[Callable[[], object], float, int], list[float]]
"""``timer(call, min_time, max_runs)``: seconds per call, one entry per timed call."""

Arrays = list[np.ndarray[Any, Any]]


class HostError(Exception):
    """A row that failed before it touched the GPU (not built, a failed compile):
    the worker goes on with the next row."""


# --- inputs and references, one draw per process --------------------------------------


@functools.lru_cache(maxsize=2)
def _inputs(workload: str, seed: int) -> Arrays:
    from qidao.bench.cuda.suites import get_workload

    return get_workload(workload).inputs(np.random.default_rng(seed))


@functools.lru_cache(maxsize=2)
def _reference(workload: str, device: str, seed: int) -> Arrays:
    """The outputs to check against: PyTorch on the GPU, or NumPy on the emulator."""
    from qidao.bench.cuda.suites import get_workload

    w = get_workload(workload)
    inputs = _inputs(workload, seed)
    if device != "cuda":
        return w.reference(*inputs)
    import torch

    args = [torch.from_numpy(a).cuda() for a in inputs]
    with tf32(False), torch.no_grad():
        if w.torch_reference is not None:
            out = w.torch_reference(*args)
        else:
            wide = [a.double() if a.is_floating_point() else a for a in args]
            out = w.torch_fn(*wide)
    outs = list(out) if isinstance(out, list | tuple) else [out]
    return [o.detach().cpu().numpy() for o in outs]


@contextlib.contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """torch's matmuls and convolutions with TF32 on or off, as before after."""
    import torch

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


# --- timers ------------------------------------------------------------------------------


def wall_times(
    call: Callable[[], object], min_time: float, max_runs: int
) -> list[float]:
    """Wall-clock seconds per call (the emulator's launches end before they return)."""
    from qidao.bench.workloads import time_calls

    return time_calls(call, min_time, max_runs)


def torch_event_times(
    call: Callable[[], object], min_time: float, max_runs: int
) -> list[float]:
    """Seconds per call between two ``torch.cuda.Event``s, as ``event_times``."""
    import torch

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    call()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end) * 1e-3, 1e-6)
    runs = max(10, min(max_runs, int(min_time / one)))
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(runs)
    ]
    for s, e in pairs:
        s.record()
        call()
        e.record()
    pairs[-1][1].synchronize()
    return [s.elapsed_time(e) * 1e-3 for s, e in pairs]


def _event_times(
    call: Callable[[], object], min_time: float, max_runs: int
) -> list[float]:
    from qidao.runtime.cuda import event_times

    return event_times(call, min_time, max_runs)


# --- the rows ----------------------------------------------------------------------------


def not_built_reason(w: GpuWorkload) -> str | None:
    """``not built: ...`` when ``w`` needs a ``qidao.compile`` option that the CUDA
    target does not take yet, else None."""
    from qidao.compiler.options import COMMON_OPTIONS
    from qidao.compiler.targets import get_target

    known = {**COMMON_OPTIONS, **get_target("cuda").options}
    missing = [name for name, _ in w.options if name not in known]
    if not missing:
        return None
    return (
        f"{NOT_BUILT}qidao.compile(target='cuda') takes no {', '.join(missing)} "
        f"option yet: the {w.precision} matmul on tensor cores "
        "is not wired"
    )


def _compile(w: GpuWorkload, device: str) -> Any:
    """The workload compiled for CUDA, or a HostError saying why not."""
    reason = not_built_reason(w)
    if reason is not None:
        raise HostError(reason)
    import qidao
    from qidao.compiler.targets.cuda.compiled import CompiledCuda

    try:
        compiled = qidao.compile(
            w.build(),
            target="cuda",
            schedule=w.schedule,
            device=device,
            **dict(w.options),
        )
    except Exception as err:
        raise HostError(f"compile: {type(err).__name__}: {err}") from err
    if not isinstance(compiled, CompiledCuda):
        raise HostError(
            f"compile: qidao.compile returned a {type(compiled).__name__}, not a "
            "CompiledCuda (a model compiled at its first call): its launches cannot "
            "be timed alone"
        )
    records = dict(w.options).get("records")
    if records is not None:
        notes: dict[str, str] = compiled.stats.get("records", {})
        unused = {
            kernel: note
            for kernel, note in notes.items()
            if note.startswith("no record") or "does not apply" in note
        }
        if unused or not notes:
            raise HostError(
                f"records: {records} gave no schedule to "
                + (
                    "; ".join(f"{k}: {note}" for k, note in unused.items())
                    or "any kernel"
                )
            )
    return compiled


def with_records(w: GpuWorkload, records: str | None) -> GpuWorkload:
    """``w`` compiling with ``records=`` when it has a ``tune_command``; a
    HostError ``not run: no records (...)`` when it has one and ``records`` is
    None."""
    if not w.tune_command:
        return w
    if records is None:
        raise HostError(f"{NOT_RUN}no records ({w.tune_command})")
    return dataclasses.replace(w, options=(*w.options, ("records", records)))


def _qidao_row(
    w: GpuWorkload,
    device: str,
    timer: Timer | None,
    limits: tuple[float, int],
    seed: int,
) -> GpuResult:
    start = time.perf_counter()
    compiled = _compile(w, device)
    function = compiled.load()  # nvcc and the module load (or g++)
    compile_s = time.perf_counter() - start
    try:
        inputs = _inputs(w.name, seed)
        want = _reference(w.name, device, seed)
        function.upload(*inputs)
        function.launch()
        rel_err = w.check(function.download(), want)
        timer = timer or (_event_times if device == "cuda" else wall_times)
        times = timer(function.launch, *limits)
        function.device.synchronize()
    finally:
        function.close()
    row = _row(
        w,
        "qidao",
        times,
        rel_err,
        _device_name(device),
        launches=len(compiled.program.launches),
        compile_s=compile_s,
    )
    return dataclasses.replace(row, schedule=compiled.stats.get("schedule") or "")


def _memcpy_row(
    w: GpuWorkload,
    device: str,
    timer: Timer | None,
    limits: tuple[float, int],
    seed: int,
) -> GpuResult:
    if device != "cuda":
        raise ValueError("the memcpy rows need --device cuda")
    import pycuda.driver as cuda  # type: ignore[import-not-found]

    from qidao.runtime.cuda import PycudaDevice

    (x,) = _inputs(w.name, seed)
    want = _reference(w.name, device, seed)
    gpu = PycudaDevice()
    src, dst = gpu.alloc(x.nbytes), gpu.alloc(x.nbytes)
    try:
        gpu.upload(src, x)

        def copy() -> None:
            cuda.memcpy_dtod(dst, src, x.nbytes)

        copy()
        out = np.empty_like(x)
        gpu.download(dst, out)
        rel_err = w.check([out], want)
        times = (timer or _event_times)(copy, *limits)
        gpu.synchronize()
    finally:
        gpu.free(src)
        gpu.free(dst)
    return _row(w, "memcpy", times, rel_err, _device_name(device))


def _torch_row(
    w: GpuWorkload,
    device: str,
    timer: Timer | None,
    limits: tuple[float, int],
    seed: int,
) -> GpuResult:
    if device != "cuda":
        raise ValueError("the torch rows need --device cuda")
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    want = _reference(w.name, device, seed)
    args = [torch.from_numpy(a).cuda() for a in _inputs(w.name, seed)]
    with tf32(w.precision == "tf32"), torch.no_grad():
        if w.torch_prepare is not None:
            call = w.torch_prepare(*args)
        else:

            def call() -> Any:
                return w.torch_fn(*args)

        out = call()
        outs = list(out) if isinstance(out, list | tuple) else [out]
        rel_err = w.check([o.detach().cpu().numpy() for o in outs], want)
        times = (timer or torch_event_times)(call, *limits)
    return _row(w, "torch", times, rel_err, torch.cuda.get_device_name())


def _row(
    w: GpuWorkload,
    backend: str,
    times: Sequence[float],
    rel_err: float,
    device: str,
    launches: int = 0,
    compile_s: float = 0.0,
) -> GpuResult:
    return GpuResult(
        w.name,
        backend,
        statistics.median(times) * 1e6,
        len(times),
        launches,
        compile_s,
        rel_err,
        w.flops_per_call,
        w.bytes_per_call,
        device,
        precision=w.precision,
        target=w.target.describe() if w.target and backend == "qidao" else "",
    )


ROWS = {"qidao": _qidao_row, "memcpy": _memcpy_row, "torch": _torch_row}


def measure(
    workload: str,
    backend: str,
    device: str = "cuda",
    timer: Timer | None = None,
    min_time: float = 0.3,
    max_runs: int = 200,
    seed: int = 0,
    records: str | None = None,
) -> GpuResult:
    """Check, then time, one (workload, backend) pair here; raises on any failure
    (the output differing from the reference included; :class:`HostError` when
    the GPU was not touched). ``records``: the ``qidao tune`` file of a workload
    with a ``tune_command``."""
    from qidao.bench.cuda.suites import get_workload

    w = get_workload(workload)
    if backend not in ROWS:
        raise ValueError(f"unknown backend '{backend}'; choose from {BACKENDS}")
    if backend not in w.backends:
        raise ValueError(
            f"workload '{workload}' has no {backend} row; its rows: "
            f"{', '.join(w.backends)}"
        )
    if backend == "qidao":
        w = with_records(w, records)
    return ROWS[backend](w, device, timer, (min_time, max_runs), seed)


def _device_name(device: str) -> str:
    if device != "cuda":
        return "emulator"
    import pycuda.driver as cuda

    return str(cuda.Context.get_device().name())


def error_row(workload: str, backend: str, error: str) -> GpuResult:
    """A row that records ``error`` (on one line, at most 500 characters)."""
    from qidao.bench.cuda.suites import ALL_WORKLOADS

    w = ALL_WORKLOADS.get(workload)
    one_line = " ".join(error.split())
    return GpuResult(
        workload,
        backend,
        flops_per_call=w.flops_per_call if w else 0,
        bytes_per_call=w.bytes_per_call if w else 0,
        error=one_line[:500],
        precision=w.precision if w else "",
        target=w.target.describe() if w and w.target and backend == "qidao" else "",
    )


RECORDS_ARG = "--records="
"""How the worker's argument naming the records file starts."""


def worker(args: Sequence[str]) -> int:
    """``python -m qidao.bench.cuda.bench worker DEVICE MIN_TIME MAX_RUNS
    [--records=FILE] WORKLOAD:BACKEND...``: one ``QIDAO_ROW {json}`` line per
    pair, in order; stops after the first pair that failed on the device (exit
    4)."""
    device, min_time, max_runs, *pairs = args
    records = None
    if pairs and pairs[0].startswith(RECORDS_ARG):
        records = pairs.pop(0)[len(RECORDS_ARG) :]
    for pair in pairs:
        workload, backend = pair.split(":")
        on_device = True
        try:
            row = measure(
                workload,
                backend,
                device,
                None,
                float(min_time),
                int(max_runs),
                records=records,
            )
        except HostError as err:
            row, on_device = error_row(workload, backend, str(err)), False
        except Exception as err:
            row = error_row(workload, backend, f"{type(err).__name__}: {err}")
        print(ROW_TAG + row.to_json(), flush=True)
        if row.error and on_device:
            print(f"bench-cuda worker: {pair} failed: {row.error}", file=sys.stderr)
            return 4
    return 0


__all__ = [
    "BACKENDS",
    "RECORDS_ARG",
    "ROW_TAG",
    "HostError",
    "Timer",
    "error_row",
    "measure",
    "not_built_reason",
    "tf32",
    "torch_event_times",
    "wall_times",
    "with_records",
    "worker",
]
