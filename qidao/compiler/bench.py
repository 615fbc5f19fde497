"""``qidao bench``: workloads × backends, each run in its own process, medians.

Every run first checks its output against the workload's NumPy reference; a run whose
output differs records no time. Each backend runs in a fresh process with its thread
count pinned, so thread pools never compete. Speedup is PyTorch eager's median over
the backend's median, both measured in the same ``qidao bench`` invocation.

Backends:
- ``torch``: PyTorch eager on torch tensors (the baseline).
- ``qidao``: the compiled model called as a user calls it (argument checks, output
  allocation included).
- ``qidao-raw``: the same native function through a bare ctypes call on integer
  addresses of preallocated buffers: the floor that ``qidao`` pays its checks and
  its output allocation on top of.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

BACKENDS = ("torch", "qidao", "qidao-raw")


@dataclass(frozen=True)
class Result:
    workload: str
    backend: str
    threads: int
    median_us: float
    runs: int
    compile_s: float
    error: str = ""


def time_calls(fn: Callable[[], Any], min_time: float, max_runs: int) -> list[float]:
    """Per-call seconds: 3 warm-up calls, then calls until min_time or max_runs."""
    for _ in range(3):
        fn()
    times: list[float] = []
    deadline = time.perf_counter() + min_time
    while len(times) < max_runs and (len(times) < 5 or time.perf_counter() < deadline):
        start = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - start) * 1e-9)
    return times


def _check(
    workload: str, backend: str, got: Sequence[Any], want: Sequence[Any]
) -> None:
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-4, atol=1e-5):
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
    from qidao.compiler.examples import get_example

    example = get_example(workload)
    inputs = example.inputs(np.random.default_rng(0))
    want = example.reference(*inputs)
    compile_s = 0.0
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
        args = [torch.from_numpy(a) for a in inputs]
        with torch.inference_mode():
            _check(workload, backend, [example.torch_fn(*args).numpy()], want)

            def call() -> Any:
                return example.torch_fn(*args)

            times = time_calls(call, min_time, max_runs)
    elif backend in ("qidao", "qidao-raw"):
        import qidao

        start = time.perf_counter()
        compiled = qidao.compile(example.build(), threads=threads)
        compile_s = time.perf_counter() - start
        _check(workload, backend, compiled(*inputs), want)
        if backend == "qidao":
            times = time_calls(lambda: compiled(*inputs), min_time, max_runs)
        else:
            outs = [np.empty(s.shape, s.dtype) for s in compiled.outputs]
            addresses = [int(a.ctypes.data) for a in (*inputs, *outs)]
            cfunc = compiled.native.cfunc
            cfunc(*addresses)
            _check(workload, backend, outs, want)
            times = time_calls(lambda: cfunc(*addresses), min_time, max_runs)
    else:
        raise ValueError(
            f"unknown backend '{backend}'; choose from {', '.join(BACKENDS)}"
        )
    return {"times": times, "compile_s": compile_s}


def run_one(
    workload: str, backend: str, threads: int, min_time: float, max_runs: int
) -> Result:
    """Run one pair in a fresh process with its threads pinned."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    cmd = [
        sys.executable,
        "-m",
        "qidao.compiler.bench",
        workload,
        backend,
        str(threads),
        str(min_time),
        str(max_runs),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return Result(workload, backend, threads, float("nan"), 0, 0.0, last)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    times = data["times"]
    return Result(
        workload,
        backend,
        threads,
        statistics.median(times) * 1e6,
        len(times),
        data["compile_s"],
    )


def run_bench(
    workloads: Sequence[str],
    backends: Sequence[str] = BACKENDS,
    threads: int = 1,
    min_time: float = 1.0,
    max_runs: int = 20000,
    csv_path: Path | None = None,
    progress: bool = True,
) -> list[Result]:
    """Run the matrix and return one Result per (workload, backend)."""
    from tqdm import tqdm

    pairs = [(w, b) for w in workloads for b in backends]
    results: list[Result] = []
    bar = tqdm(pairs, desc="bench", unit="run", disable=not progress, file=sys.stderr)
    for workload, backend in bar:
        bar.set_postfix_str(f"{workload}/{backend}")
        results.append(run_one(workload, backend, threads, min_time, max_runs))
    if csv_path is not None:
        write_csv(results, csv_path)
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
                    r.error,
                ]
            )


def format_table(results: Sequence[Result]) -> str:
    ratio = speedups(results)
    rows = [
        f"{'workload':<10} {'backend':<10} {'thr':>3} {'median':>12} {'vs torch':>9} {'runs':>6} {'compile':>8}"
    ]
    for r in results:
        if r.error:
            rows.append(
                f"{r.workload:<10} {r.backend:<10} {r.threads:>3}  FAILED: {r.error}"
            )
            continue
        s = ratio.get((r.workload, r.backend))
        median = (
            f"{r.median_us:,.2f} us"
            if r.median_us < 1e4
            else f"{r.median_us / 1e3:,.2f} ms"
        )
        rows.append(
            f"{r.workload:<10} {r.backend:<10} {r.threads:>3} {median:>12} "
            f"{'' if s is None else f'{s:.2f}x':>9} {r.runs:>6} "
            f"{f'{r.compile_s:.2f} s' if r.compile_s else '':>8}"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    name, backend_name, n_threads, min_t, max_n = sys.argv[1:6]
    result = run_worker(name, backend_name, int(n_threads), float(min_t), int(max_n))
    print(json.dumps(result))
