"""``qidao bench-cuda``: qidao's CUDA C against PyTorch eager on one GPU.

    qidao bench-cuda                         # every workload, CSV in bench-results/
    qidao bench-cuda tiled2048 chain24 --csv gpu_bench.csv
    qidao bench-cuda --list                  # the workloads, with their schedules

The workloads are ``qidao/tools/cuda_workloads.py``'s: a graph, its GPU schedule,
inputs and a NumPy reference (the small ones ``tests/compiler/targets/cuda/test_emit.py`` checks, then
matmul 1024 and 2048, the five-op chain over 2^20..2^24 floats, softmax
4096 x 1024). The ``*_default`` workloads compile the same graphs with
``schedule="default"`` (``qidao/compiler/targets/cuda/defaults.py``: the register-tiled
matmul, a thread per row, blocks of 256 threads) beside the hand-written
schedules; with no workload named they run first (``matmul1024_default``,
``matmul2048_default``, ``softmax4096_default``, ``chain24_default``), then the
other big sizes, then the small ones. Each gets two rows:

- ``qidao``: compiled with ``target="cuda"`` (nvcc for the device's ``sm_XY``,
  pycuda), timed on inputs already on the device: one call is the program's
  launches in order on the default stream;
- ``torch``: PyTorch eager on the same inputs as CUDA tensors (TF32 off, so both
  compute in float32).

A row's output is first checked against the reference (NaN never passes; qidao's
device buffers start as NaNs, so an unwritten element shows); a row that differs
records the error and no time. Times are CUDA events around each call (pycuda's
for qidao, torch's for torch): 3 warm-up calls, one to size the run, then
``--min-time`` seconds' worth of calls (10 to ``--max-runs``); the median.
GFLOP/s (matmul: 2mnk per call) or GB/s (the bytes a call must move at least:
inputs read once, outputs written once) come from the median, and ``vs_torch``
is torch's median over qidao's (above 1: qidao is faster).

The rows run in a worker process (``python -m qidao.tools.bench_cuda worker``),
one after the other. A failed row ends its worker (a CUDA error can leave the
context unusable), and so do a crash and a row running past ``--timeout``
seconds; a fresh worker then takes the rows left. The CSV is rewritten after
every row, so an interrupted run keeps what it measured.

With no usable GPU it prints ``qidao bench-cuda: no CUDA device: <reason>`` and
exits 3 (1: a row failed; 0: every row measured). ``--device emulate`` runs the
qidao rows on the CPU emulator (``qidao.runtime.cuda.EmulatedDevice``) with
wall-clock times: for testing this command on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import collections
import csv
import functools
import json
import math
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

BACKENDS = ("qidao", "torch")
DEVICES = ("cuda", "emulate")
DEFAULT_CSV = "bench-results/gpu_bench.csv"
ROW_TAG = "QIDAO_ROW "
NO_DEVICE_EXIT = 3

Timer = Callable[[Callable[[], object], float, int], list[float]]
"""``timer(call, min_time, max_runs)``: seconds per call, one entry per timed call."""


@dataclass(frozen=True)
class GpuResult:
    workload: str
    backend: str
    median_us: float = math.nan
    runs: int = 0
    launches: int = 0
    compile_s: float = 0.0
    rel_err: float | None = None
    flops_per_call: int = 0
    bytes_per_call: int = 0
    device: str = ""
    error: str = ""

    @property
    def gflop_per_s(self) -> float | None:
        if not self.flops_per_call or self.error or not self.median_us > 0:
            return None
        return self.flops_per_call / (self.median_us * 1e-6) / 1e9

    @property
    def gb_per_s(self) -> float | None:
        if not self.bytes_per_call or self.error or not self.median_us > 0:
            return None
        return self.bytes_per_call / (self.median_us * 1e-6) / 1e9

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> GpuResult:
        return cls(**json.loads(text))


# --- one row, in this process -----------------------------------------------------


@functools.cache
def _data(workload: str, seed: int) -> tuple[list[Any], list[Any]]:
    """The inputs and the reference outputs of a workload (one draw per process)."""
    from qidao.tools.cuda_workloads import BENCH_WORKLOADS

    w = BENCH_WORKLOADS[workload]
    inputs = w.inputs(np.random.default_rng(seed))
    return inputs, w.reference(*inputs)


def wall_times(
    call: Callable[[], object], min_time: float, max_runs: int
) -> list[float]:
    """Wall-clock seconds per call (the emulator's launches end before they return)."""
    from qidao.tools.bench import time_calls

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


def measure(
    workload: str,
    backend: str,
    device: str = "cuda",
    timer: Timer | None = None,
    min_time: float = 0.3,
    max_runs: int = 200,
    seed: int = 0,
) -> GpuResult:
    """Check, then time, one (workload, backend) pair here; raises on any failure
    (the output differing from the reference included)."""
    from qidao.tools.cuda_workloads import BENCH_WORKLOADS

    if workload not in BENCH_WORKLOADS:
        raise ValueError(
            f"unknown GPU workload '{workload}'; choose from "
            f"{', '.join(BENCH_WORKLOADS)}"
        )
    w = BENCH_WORKLOADS[workload]
    inputs, want = _data(workload, seed)
    if backend == "qidao":
        import qidao
        from qidao.compiler.targets.cuda.compiled import CompiledCuda

        start = time.perf_counter()
        compiled = qidao.compile(
            w.build(), target="cuda", schedule=w.schedule, device=device
        )
        assert isinstance(compiled, CompiledCuda)
        function = compiled.load()  # nvcc and the module load (or g++)
        compile_s = time.perf_counter() - start
        try:
            function.upload(*inputs)
            function.launch()
            rel_err = w.check(function.download(), want)
            if timer is None:
                from qidao.runtime.cuda import event_times

                timer = event_times if device == "cuda" else wall_times
            times = timer(function.launch, min_time, max_runs)
            function.device.synchronize()
        finally:
            function.close()
        launches = len(compiled.program.launches)
        name = _device_name(device)
    elif backend == "torch":
        if device != "cuda":
            raise ValueError("the torch rows need --device cuda")
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        args = [torch.from_numpy(a).cuda() for a in inputs]
        with torch.inference_mode():
            out = w.torch_fn(*args)
            rel_err = w.check([out.cpu().numpy()], want)
            times = (timer or torch_event_times)(
                lambda: w.torch_fn(*args), min_time, max_runs
            )
        compile_s, launches = 0.0, 0
        name = torch.cuda.get_device_name()
    else:
        raise ValueError(f"unknown backend '{backend}'; choose from {BACKENDS}")
    return GpuResult(
        workload,
        backend,
        statistics.median(times) * 1e6,
        len(times),
        launches,
        compile_s,
        rel_err,
        w.flops_per_call,
        w.bytes_per_call,
        name,
    )


def _device_name(device: str) -> str:
    if device != "cuda":
        return "emulator"
    import pycuda.driver as cuda  # type: ignore[import-not-found]

    return str(cuda.Context.get_device().name())


def _error_row(workload: str, backend: str, error: str) -> GpuResult:
    from qidao.tools.cuda_workloads import BENCH_WORKLOADS

    w = BENCH_WORKLOADS.get(workload)
    flops = w.flops_per_call if w else 0
    nbytes = w.bytes_per_call if w else 0
    one_line = " ".join(error.split())
    return GpuResult(
        workload,
        backend,
        flops_per_call=flops,
        bytes_per_call=nbytes,
        error=one_line[:500],
    )


def worker(args: Sequence[str]) -> int:
    """``python -m qidao.tools.bench_cuda worker DEVICE MIN_TIME MAX_RUNS
    WORKLOAD:BACKEND...``: one ``QIDAO_ROW {json}`` line per pair, in order;
    stops after the first failed pair (exit 4)."""
    device, min_time, max_runs, *pairs = args
    for pair in pairs:
        workload, backend = pair.split(":")
        try:
            row = measure(
                workload, backend, device, None, float(min_time), int(max_runs)
            )
        except Exception as err:
            row = _error_row(workload, backend, f"{type(err).__name__}: {err}")
        print(ROW_TAG + row.to_json(), flush=True)
        if row.error:
            return 4
    return 0


# --- the rows, in worker processes --------------------------------------------------


def _run_worker(
    pairs: Sequence[tuple[str, str]],
    device: str,
    min_time: float,
    max_runs: int,
    timeout: float,
    on_row: Callable[[GpuResult], None],
) -> tuple[int, bool, list[str]]:
    """Start one worker on ``pairs``; hand each row to ``on_row`` as it comes.
    Returns the exit code, whether a row ran past ``timeout``, and the last lines
    of its stderr."""
    cmd = [
        sys.executable,
        "-m",
        "qidao.tools.bench_cuda",
        "worker",
        device,
        str(min_time),
        str(max_runs),
        *[f"{w}:{b}" for w, b in pairs],
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    tail: collections.deque[str] = collections.deque(maxlen=30)
    last = [time.monotonic()]
    timed_out = [False]

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip())

    def watchdog() -> None:
        while proc.poll() is None:
            if time.monotonic() - last[0] > timeout:
                timed_out[0] = True
                proc.kill()
                return
            time.sleep(0.1)

    threads = [
        threading.Thread(target=read_stderr, daemon=True),
        threading.Thread(target=watchdog, daemon=True),
    ]
    for t in threads:
        t.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(ROW_TAG):
            last[0] = time.monotonic()
            on_row(GpuResult.from_json(line[len(ROW_TAG) :]))
    code = proc.wait()
    for t in threads:
        t.join(timeout=5)
    return code, timed_out[0], [line for line in tail if line.strip()]


def run_bench_cuda(
    workloads: Sequence[str],
    backends: Sequence[str] = BACKENDS,
    device: str = "cuda",
    min_time: float = 0.3,
    max_runs: int = 200,
    timeout: float = 60.0,
    csv_path: Path | None = None,
    progress: bool = True,
) -> list[GpuResult]:
    """Every (workload, backend) pair in worker processes (see the module doc)."""
    pending = collections.deque((w, b) for w in workloads for b in backends)
    results: list[GpuResult] = []

    def on_row(row: GpuResult) -> None:
        expected = pending.popleft()
        if (row.workload, row.backend) != expected:
            raise RuntimeError(
                f"worker sent {row.workload}/{row.backend}, not {expected}"
            )
        results.append(row)
        if csv_path is not None:
            write_csv(results, csv_path)
        if progress:
            print(
                f"bench-cuda: {format_row(row, results)}", file=sys.stderr, flush=True
            )

    while pending:
        code, timed_out, tail = _run_worker(
            list(pending), device, min_time, max_runs, timeout, on_row
        )
        if not pending or (results and results[-1].error and code == 4):
            continue  # done, or a failed row ended the worker: a fresh one goes on
        workload, backend = pending[0]
        if timed_out:
            why = f"timed out: no result within {timeout:g} s"
        else:
            why = (
                f"worker exited with code {code}: {tail[-1] if tail else '(no output)'}"
            )
        if progress and tail:
            print("\n".join(tail[-15:]), file=sys.stderr)
        on_row(_error_row(workload, backend, why))
    return results


# --- the report -----------------------------------------------------------------------


def vs_torch(results: Sequence[GpuResult]) -> dict[tuple[str, str], float]:
    """torch's median / the row's median, per (workload, backend) with both."""
    base = {
        r.workload: r.median_us
        for r in results
        if r.backend == "torch" and not r.error and r.median_us > 0
    }
    return {
        (r.workload, r.backend): base[r.workload] / r.median_us
        for r in results
        if r.workload in base and not r.error and r.median_us > 0
    }


CSV_COLUMNS = (
    "workload",
    "backend",
    "device",
    "median_us",
    "runs",
    "launches",
    "vs_torch",
    "gflop_per_s",
    "gb_per_s",
    "rel_err",
    "compile_s",
    "flops_per_call",
    "bytes_per_call",
    "error",
)


def write_csv(results: Sequence[GpuResult], path: Path) -> None:
    ratio = vs_torch(results)
    path.parent.mkdir(parents=True, exist_ok=True)

    def num(value: float | None, digits: int) -> str:
        return "" if value is None or math.isnan(value) else f"{value:.{digits}f}"

    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_COLUMNS)
        for r in results:
            out.writerow(
                [
                    r.workload,
                    r.backend,
                    r.device,
                    num(r.median_us, 3),
                    r.runs,
                    r.launches,
                    num(ratio.get((r.workload, r.backend)), 3),
                    num(r.gflop_per_s, 2),
                    num(r.gb_per_s, 2),
                    "" if r.rel_err is None else f"{r.rel_err:.2e}",
                    num(r.compile_s, 3),
                    r.flops_per_call,
                    r.bytes_per_call,
                    r.error,
                ]
            )


TABLE_HEADER = (
    f"{'workload':<18} {'backend':<6} {'median':>11} {'vs torch':>8} "
    f"{'GFLOP/s':>9} {'GB/s':>8} {'rel err':>8} {'runs':>5} {'launch':>6}"
)


def format_row(r: GpuResult, results: Sequence[GpuResult]) -> str:
    if r.error:
        return f"{r.workload:<18} {r.backend:<6} FAILED: {r.error}"
    s = vs_torch(results).get((r.workload, r.backend))
    median = (
        f"{r.median_us:,.2f} us"
        if r.median_us < 1e4
        else f"{r.median_us / 1e3:,.2f} ms"
    )
    gf, gb = r.gflop_per_s, r.gb_per_s
    return (
        f"{r.workload:<18} {r.backend:<6} {median:>11} "
        f"{'' if s is None else f'{s:.2f}x':>8} "
        f"{'' if gf is None else f'{gf:,.1f}':>9} "
        f"{'' if gb is None else f'{gb:,.1f}':>8} "
        f"{'' if r.rel_err is None else f'{r.rel_err:.1e}':>8} {r.runs:>5} "
        f"{r.launches or '':>6}"
    )


def format_table(results: Sequence[GpuResult]) -> str:
    devices = sorted({r.device for r in results if r.device})
    rows = [f"device: {', '.join(devices) or '?'}", TABLE_HEADER]
    rows += [format_row(r, results) for r in results]
    return "\n".join(rows)


# --- the command ------------------------------------------------------------------------


def add_bench_cuda_parser(sub: Any) -> None:
    """``qidao bench-cuda`` (called by ``qidao.tools.cli.build_parser``)."""
    p = sub.add_parser(
        "bench-cuda",
        help="time the GPU workloads' CUDA C against PyTorch eager on a CUDA GPU",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "workloads", nargs="*", help="GPU workloads (default: all, the big ones first)"
    )
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument(
        "--backends", nargs="*", choices=BACKENDS, help="qidao, torch (default: both)"
    )
    p.add_argument(
        "--device",
        default="cuda",
        choices=DEVICES,
        help="cuda (default) or emulate: the qidao rows on the CPU emulator",
    )
    p.add_argument("--min-time", type=float, default=0.3, help="seconds timed per row")
    p.add_argument("--max-runs", type=int, default=200, help="most calls timed per row")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds a row may take before its worker is killed (default 60)",
    )
    p.add_argument(
        "--csv", default=DEFAULT_CSV, help=f"CSV path (default {DEFAULT_CSV})"
    )
    p.set_defaults(run=cmd_bench_cuda)


def cmd_bench_cuda(args: argparse.Namespace) -> int:
    from qidao.tools.cuda_workloads import BENCH_WORKLOADS

    if args.list:
        for name, w in BENCH_WORKLOADS.items():
            print(f"{name:<18} {w.summary}")
        return 0
    from qidao.tools.cuda_workloads import LARGE_WORKLOADS

    # the default schedules at the big sizes first, then the hand-written ones:
    # the numbers that matter are in before a timeout
    default = [
        *LARGE_WORKLOADS,
        *(w for w in BENCH_WORKLOADS if w not in LARGE_WORKLOADS),
    ]
    workloads = args.workloads or default
    unknown = [w for w in workloads if w not in BENCH_WORKLOADS]
    if unknown:
        raise ValueError(
            f"unknown GPU workload(s) {', '.join(unknown)}; choose from "
            f"{', '.join(BENCH_WORKLOADS)}"
        )
    backends = args.backends or (BACKENDS if args.device == "cuda" else ("qidao",))
    if args.device != "cuda" and "torch" in backends:
        raise ValueError("the torch rows need --device cuda")
    if args.device == "cuda":
        from qidao.runtime.cuda import cuda_unavailable_reason

        reason = cuda_unavailable_reason()
        if reason is not None:
            print(f"qidao bench-cuda: no CUDA device: {reason}", file=sys.stderr)
            return NO_DEVICE_EXIT
    results = run_bench_cuda(
        workloads,
        backends,
        args.device,
        args.min_time,
        args.max_runs,
        args.timeout,
        Path(args.csv),
    )
    print(format_table(results))
    print(f"\nCSV: {args.csv}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker(sys.argv[2:]))
    raise SystemExit("usage: python -m qidao.tools.bench_cuda worker ...")
