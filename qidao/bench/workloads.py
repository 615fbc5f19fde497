"""``qidao bench``: workloads × backends, each run in its own process, medians.

Every run first checks its output against the workload's NumPy reference; a run whose
output differs records no time. Each backend runs in a fresh process with its thread
count pinned, so thread pools never compete. Speedup is PyTorch eager's median over
the backend's median, both measured in the same ``qidao bench`` invocation.

Backends:
- ``torch``: PyTorch eager on torch tensors (the baseline).
- ``qidao``: the compiled model called as a user calls it (argument checks, output
  allocation included).
- ``qidao:SCHEDULE``: the same with another schedule than the default one:
  ``qidao:none`` (the loops as lowered) or ``qidao:PATH`` (the trace in the file
  PATH, as ``s.split(...)`` lines or a pipeline). Several of them in one run put
  schedules side by side, each against the same PyTorch median.
- ``qidao:algo=ALGO``: the same with ``algo=ALGO`` (each convolution's algorithm:
  ``direct``, ``winograd``, ``im2col``, ``matmul``, ``benchmark``; see
  ``qidao/passes/graph/select_conv_algo.py``). The book's "same model, two kernel
  choices": ``qidao bench conv3x3 --backends torch qidao:algo=direct
  qidao:algo=winograd``.
- ``qidao-raw``: the same native function through a bare ctypes call on integer
  addresses of preallocated buffers: the floor that ``qidao`` pays its checks and
  its output allocation on top of.
- ``numpy``: the workload's NumPy version into preallocated outputs, for workloads
  that have one (``copy24``: ``np.copyto``, the machine's copy bandwidth). Its
  process runs without ``OPENBLAS_CORETYPE``, which slows NumPy where it is set.
- ``onnxruntime``: ONNX Runtime's CPU session (``intra_op_num_threads`` = the
  threads) on the workload's ONNX file, for workloads that have one (the real
  models, ``resnet`` and ``encoder``); its compile column is the session's
  creation (ONNX Runtime's graph optimizations).

A memory-bound workload states the bytes one call must move (``bytes_per_call``:
inputs read once, outputs written once); every row of it reports GB/s = those bytes
over the median, so ``chain24``'s rows read directly against ``copy24``'s. A
compute-bound one (``matmul1024``, ``gemm512``, ``conv3x3``...) states its FLOPs
per call and reports GFLOP/s.
``--plot PATH`` draws the speedups over PyTorch as a PNG bar chart (matplotlib).
"""

from __future__ import annotations

import csv
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qidao.runtime import timing
from qidao.runtime.worker import run_once, serve

WORKER = "qidao.bench.workloads"
"""The module whose worker measures one (workload, backend) pair."""

BACKENDS = ("torch", "qidao", "qidao-raw", "numpy", "onnxruntime")
"""The backends; ``qidao:SCHEDULE`` adds a qidao backend with that schedule."""


def check_backend(backend: str) -> str:
    """``backend`` if it is one (a ``qidao:PATH``'s file must exist), else a
    ValueError listing them."""
    if backend in BACKENDS:
        return backend
    _, colon, spec = backend.partition(":")
    if backend.startswith("qidao:algo="):
        from qidao.passes.graph.select_conv_algo import MODES

        if spec.removeprefix("algo=") not in MODES:
            raise ValueError(
                f"backend '{backend}': algo must be one of {', '.join(MODES)}"
            )
        return backend
    if backend.startswith("qidao:") and (spec == "none" or Path(spec).is_file()):
        return backend
    if colon and backend.startswith("qidao:"):
        raise ValueError(f"backend '{backend}': no trace file '{spec}'")
    raise ValueError(
        f"unknown backend '{backend}'; choose from {', '.join(BACKENDS)}, "
        "qidao:none, qidao:PATH (a schedule trace file) or qidao:algo=ALGO"
    )


def schedule_of(backend: str) -> Any:
    """The ``schedule=`` a qidao backend compiles with: the default, None for
    ``qidao:none``, or the text of ``qidao:PATH``'s file."""
    spec = backend.partition(":")[2]
    if not spec or spec.startswith("algo="):
        return "default"
    return None if spec == "none" else Path(spec).read_text()


def algo_of(backend: str) -> str:
    """The ``algo=`` a qidao backend compiles with (``qidao:algo=ALGO``, else
    ``"auto"``)."""
    spec = backend.partition(":")[2]
    return spec.removeprefix("algo=") if spec.startswith("algo=") else "auto"


@dataclass(frozen=True)
class Result:
    workload: str
    backend: str
    threads: int
    median_us: float
    runs: int
    compile_s: float
    error: str = ""
    bytes_per_call: int = 0
    flops_per_call: int = 0

    @property
    def gb_per_s(self) -> float | None:
        """Bytes moved per call over the median, in GB/s; None if not memory-bound."""
        if not self.bytes_per_call or self.error or self.median_us <= 0:
            return None
        return self.bytes_per_call / (self.median_us * 1e-6) / 1e9

    @property
    def gflop_per_s(self) -> float | None:
        """FLOPs per call over the median, in GFLOP/s; None if not compute-bound."""
        if not self.flops_per_call or self.error or self.median_us <= 0:
            return None
        return self.flops_per_call / (self.median_us * 1e-6) / 1e9


def time_calls(fn: Callable[[], Any], min_time: float, max_runs: int) -> list[float]:
    """Per-call seconds by the runtime's loop (``qidao/runtime/timing.py``): 3
    warm-up calls, then at least 5 calls and ``min_time`` seconds, at most
    ``max_runs`` calls."""
    return timing.time_calls(fn, warmup=3, min_time=min_time, max_calls=max_runs)


def _check(
    workload: str,
    backend: str,
    got: Sequence[Any],
    want: Sequence[Any],
    tolerance: tuple[float, float] = (1e-4, 1e-5),
) -> None:
    rtol, atol = tolerance
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if g.shape != w.shape or not np.allclose(g, w, rtol=rtol, atol=atol):
            bad = (
                np.unravel_index(np.argmax(np.abs(g - w)), w.shape)
                if g.shape == w.shape
                else ()
            )
            raise AssertionError(
                f"{workload}/{backend}: output #{k} differs from the NumPy reference "
                f"at index {tuple(int(i) for i in bad)}: got "
                f"{g[bad] if bad else g.shape}, expected {w[bad] if bad else w.shape}"
            )


def run_worker(
    workload: str, backend: str, threads: int, min_time: float, max_runs: int
) -> dict[str, Any]:
    """Measure one (workload, backend) pair in this process; returns a JSON-able dict."""
    from qidao.examples import get_example

    example = get_example(workload)
    inputs = example.inputs(np.random.default_rng(0))
    want = example.reference(*inputs)
    compile_s = 0.0
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
        args = [torch.from_numpy(a) for a in inputs]
        with torch.inference_mode():
            _check(
                workload,
                backend,
                [example.torch_fn(*args).numpy()],
                want,
                example.tolerance,
            )

            def call() -> Any:
                return example.torch_fn(*args)

            times = time_calls(call, min_time, max_runs)
    elif backend in ("qidao", "qidao-raw") or backend.startswith("qidao:"):
        import qidao
        from qidao import Compiled

        start = time.perf_counter()
        compiled = qidao.compile(
            example.build(),
            threads=threads,
            schedule=schedule_of(backend),
            algo=algo_of(backend),
        )
        compile_s = time.perf_counter() - start
        assert isinstance(compiled, Compiled)  # a builder graph: the CPU target
        _check(workload, backend, compiled(*inputs), want, example.tolerance)
        if backend != "qidao-raw":
            times = time_calls(lambda: compiled(*inputs), min_time, max_runs)
        else:
            outs = [np.empty(s.shape, s.dtype) for s in compiled.outputs]
            addresses = [int(a.ctypes.data) for a in (*inputs, *outs)]
            cfunc = compiled.native.cfunc
            cfunc(*addresses)
            _check(workload, backend, outs, want, example.tolerance)
            times = time_calls(lambda: cfunc(*addresses), min_time, max_runs)
    elif backend == "numpy":
        numpy_fn = example.numpy_fn
        if numpy_fn is None:
            raise ValueError(f"workload '{workload}' has no NumPy version")
        outs = [np.empty_like(w) for w in want]
        numpy_fn(*inputs, *outs)
        _check(workload, backend, outs, want, example.tolerance)
        times = time_calls(lambda: numpy_fn(*inputs, *outs), min_time, max_runs)
    elif backend == "onnxruntime":
        if example.onnx_path is None:
            raise ValueError(f"workload '{workload}' has no ONNX version")
        start = time.perf_counter()
        run = _onnxruntime_session(example.onnx_path(), threads, inputs)
        compile_s = time.perf_counter() - start
        _check(workload, backend, run(), want, example.tolerance)
        times = time_calls(run, min_time, max_runs)
    else:
        raise ValueError(
            f"unknown backend '{backend}'; choose from {', '.join(BACKENDS)}"
        )
    return {"times": times, "compile_s": compile_s}


def _onnxruntime_session(
    path: Path, threads: int, inputs: Sequence[Any]
) -> Callable[[], list[Any]]:
    """A call of an ONNX Runtime CPU session on ``path`` with ``inputs`` bound."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    feed = dict(zip(names, inputs, strict=True))

    def run() -> list[Any]:
        return session.run(None, feed)  # type: ignore[no-any-return]

    return run


def runs_on(workload: str, backend: str) -> bool:
    """Whether ``backend`` applies to ``workload`` (``numpy`` needs a NumPy version,
    ``onnxruntime`` an ONNX one)."""
    from qidao.examples import get_example

    example = get_example(workload)
    if backend == "numpy":
        return example.numpy_fn is not None
    if backend == "onnxruntime":
        return example.onnx_path is not None
    return True


def run_one(
    workload: str, backend: str, threads: int, min_time: float, max_runs: int
) -> Result:
    """Run one pair in a fresh process with its threads pinned."""
    from qidao.examples import get_example

    example = get_example(workload)
    bytes_per_call, flops = example.bytes_per_call, example.flops_per_call
    request = {
        "workload": workload,
        "backend": backend,
        "threads": threads,
        "min_time": min_time,
        "max_runs": max_runs,
    }
    # NumPy is what a numpy worker times: without OPENBLAS_CORETYPE
    answer = run_once(WORKER, request, threads=threads, numpy=backend == "numpy")
    if not answer.ok:
        return Result(
            workload,
            backend,
            threads,
            float("nan"),
            0,
            0.0,
            answer.error,
            bytes_per_call,
            flops,
        )
    data = answer.data
    times = data["times"]
    return Result(
        workload,
        backend,
        threads,
        statistics.median(times) * 1e6,
        len(times),
        data["compile_s"],
        bytes_per_call=bytes_per_call,
        flops_per_call=flops,
    )


def run_bench(
    workloads: Sequence[str],
    backends: Sequence[str] = BACKENDS,
    threads: int = 1,
    min_time: float = 1.0,
    max_runs: int = 20000,
    csv_path: Path | None = None,
    progress: bool = True,
    plot_path: Path | None = None,
) -> list[Result]:
    """Run the matrix and return one Result per (workload, backend) that applies."""
    from tqdm import tqdm

    if plot_path is not None:
        _pyplot()  # fail before any run if matplotlib is missing
    pairs = [(w, b) for w in workloads for b in backends if runs_on(w, b)]
    results: list[Result] = []
    bar = tqdm(pairs, desc="bench", unit="run", disable=not progress, file=sys.stderr)
    for workload, backend in bar:
        bar.set_postfix_str(f"{workload}/{backend}")
        results.append(run_one(workload, backend, threads, min_time, max_runs))
    if csv_path is not None:
        write_csv(results, csv_path)
    if plot_path is not None:
        plot_speedups(results, plot_path)
    return results


def speedups(results: Sequence[Result]) -> dict[tuple[str, str], float]:
    """torch median / backend median, per (workload, backend), from one run."""
    base = {
        r.workload: r.median_us for r in results if r.backend == "torch" and not r.error
    }
    return {
        (r.workload, r.backend): base[r.workload] / r.median_us
        for r in results
        if r.workload in base and not r.error and r.median_us > 0
    }


def write_csv(results: Sequence[Result], path: Path) -> None:
    ratio = speedups(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            [
                "workload",
                "backend",
                "threads",
                "median_us",
                "runs",
                "speedup_vs_torch",
                "compile_s",
                "gb_per_s",
                "gflop_per_s",
                "error",
            ]
        )
        for r in results:
            s = ratio.get((r.workload, r.backend))
            out.writerow(
                [
                    r.workload,
                    r.backend,
                    r.threads,
                    f"{r.median_us:.3f}",
                    r.runs,
                    "" if s is None else f"{s:.3f}",
                    f"{r.compile_s:.3f}",
                    "" if r.gb_per_s is None else f"{r.gb_per_s:.2f}",
                    "" if r.gflop_per_s is None else f"{r.gflop_per_s:.2f}",
                    r.error,
                ]
            )


def format_table(results: Sequence[Result]) -> str:
    ratio = speedups(results)
    w = max([10, *(len(r.workload) for r in results)])
    b = max([10, *(len(r.backend) for r in results)])
    rows = [
        f"{'workload':<{w}} {'backend':<{b}} {'thr':>3} {'median':>12} "
        f"{'vs torch':>9} {'GB/s':>7} {'GFLOP/s':>8} {'runs':>6} {'compile':>8}"
    ]
    for r in results:
        if r.error:
            rows.append(
                f"{r.workload:<{w}} {r.backend:<{b}} {r.threads:>3}  FAILED: {r.error}"
            )
            continue
        s = ratio.get((r.workload, r.backend))
        median = (
            f"{r.median_us:,.2f} us"
            if r.median_us < 1e4
            else f"{r.median_us / 1e3:,.2f} ms"
        )
        gb, gf = r.gb_per_s, r.gflop_per_s
        rows.append(
            f"{r.workload:<{w}} {r.backend:<{b}} {r.threads:>3} {median:>12} "
            f"{'' if s is None else f'{s:.2f}x':>9} "
            f"{'' if gb is None else f'{gb:.1f}':>7} "
            f"{'' if gf is None else f'{gf:.1f}':>8} {r.runs:>6} "
            f"{f'{r.compile_s:.2f} s' if r.compile_s else '':>8}"
        )
    copy = copy_bandwidth(results)
    if copy is not None:
        rows.append(
            f"\ncopy bandwidth (copy24, best preallocated copy): {copy:.1f} GB/s"
        )
        for r in results:
            gb = r.gb_per_s
            if gb is not None and r.backend in ("qidao", "qidao-raw"):
                rows.append(
                    f"  {r.workload + '/' + r.backend:<20} {gb:6.1f} GB/s = "
                    f"copy / {copy / gb:.2f}"
                )
    return "\n".join(rows)


def copy_bandwidth(results: Sequence[Result]) -> float | None:
    """GB/s of the fastest copy into a preallocated output (``copy24`` on the
    ``numpy`` or ``qidao-raw`` backend), if one was measured."""
    rates = [
        r.gb_per_s
        for r in results
        if r.workload == "copy24" and r.backend in ("numpy", "qidao-raw")
    ]
    return max((g for g in rates if g is not None), default=None)


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or a clear error."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError(
            "--plot needs matplotlib, which is not installed: pip install matplotlib"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_speedups(results: Sequence[Result], path: Path) -> None:
    """A PNG bar chart: speedup over PyTorch eager per workload, one bar per backend."""
    plt = _pyplot()
    ratio = speedups(results)
    workloads = list(dict.fromkeys(r.workload for r in results))
    backends = [
        b
        for b in dict.fromkeys(r.backend for r in results)
        if b != "torch" and any((w, b) in ratio for w in workloads)
    ]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(workloads) + 2), 4.0))
    width = 0.8 / max(1, len(backends))
    for k, backend in enumerate(backends):
        xs = [i + (k - (len(backends) - 1) / 2) * width for i in range(len(workloads))]
        ys = [ratio.get((w, backend), 0.0) for w in workloads]
        bars = ax.bar(xs, ys, width, label=backend)
        ax.bar_label(bars, labels=[f"{y:.1f}x" if y else "" for y in ys], fontsize=7)
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("speedup over PyTorch eager (log scale)")
    threads = sorted({r.threads for r in results})
    ax.set_title(f"qidao bench, {'/'.join(map(str, threads))} thread(s), medians")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    serve(lambda request: run_worker(**request))
