"""The CUDA benchmark's harness: each (workload, backend) row measured in a worker
process on the GPU (or the CPU emulator), checked, timed by CUDA events, written to
the CSV as it comes. ``qidao bench-cuda`` (``qidao/tools/bench_cuda.py``) is its
command line and documents what the rows are.
"""

from __future__ import annotations

import collections
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from qidao.bench.cuda.measure import (
    BACKENDS,
    RECORDS_ARG,
    ROW_TAG,
    Timer,
    error_row,
    measure,
    torch_event_times,
    wall_times,
    worker,
)
from qidao.bench.cuda.results import (
    CSV_COLUMNS,
    GpuResult,
    format_row,
    format_table,
    vs_torch,
    write_csv,
)

DEVICES = ("cuda", "emulate")
DEFAULT_CSV = "bench-results/gpu_bench.csv"
NO_DEVICE_EXIT = 3


# --- the rows, in worker processes --------------------------------------------------


def pairs(
    workloads: Sequence[str], backends: Sequence[str]
) -> Iterator[tuple[str, str]]:
    """(workload, backend) in order: each workload's rows among ``backends`` (an
    unknown workload keeps its pairs: its rows then say so)."""
    from qidao.bench.cuda.suites import ALL_WORKLOADS

    for name in workloads:
        w = ALL_WORKLOADS.get(name)
        for backend in backends:
            if w is None or backend in w.backends:
                yield name, backend


def row_timeout(workload: str, timeout: float) -> float:
    """Seconds a row of ``workload`` may take: the larger of ``timeout`` and the
    workload's own budget."""
    from qidao.bench.cuda.suites import ALL_WORKLOADS

    w = ALL_WORKLOADS.get(workload)
    own = w.timeout_s if w is not None and w.timeout_s is not None else 0.0
    return max(timeout, own)


def _run_worker(
    pairs: Sequence[tuple[str, str]],
    device: str,
    min_time: float,
    max_runs: int,
    limit: Callable[[], float],
    on_row: Callable[[GpuResult], None],
    records: str | None = None,
) -> tuple[int, bool, list[str]]:
    """Start one worker on ``pairs``; hand each row to ``on_row`` as it comes; kill
    it when ``limit()`` (a ``time.monotonic`` deadline for the row in progress)
    passes. Returns the exit code, whether it was killed, and the last lines of
    its stderr."""
    cmd = [
        sys.executable,
        "-m",
        "qidao.bench.cuda.bench",
        "worker",
        device,
        str(min_time),
        str(max_runs),
        *([RECORDS_ARG + records] if records is not None else []),
        *[f"{w}:{b}" for w, b in pairs],
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    tail: collections.deque[str] = collections.deque(maxlen=30)
    killed = [False]
    lock = threading.Lock()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip())

    def watchdog() -> None:
        while proc.poll() is None:
            with lock:
                late = time.monotonic() > limit()
            if late:
                killed[0] = True
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
            with lock:
                on_row(GpuResult.from_json(line[len(ROW_TAG) :]))
    code = proc.wait()
    for t in threads:
        t.join(timeout=5)
    return code, killed[0], [line for line in tail if line.strip()]


def run_bench_cuda(
    workloads: Sequence[str],
    backends: Sequence[str] = BACKENDS,
    device: str = "cuda",
    min_time: float = 0.3,
    max_runs: int = 200,
    timeout: float = 60.0,
    csv_path: Path | None = None,
    progress: bool = True,
    budget: float | None = None,
    records: str | None = None,
) -> list[GpuResult]:
    """Every (workload, backend) pair in worker processes (see the module doc);
    ``budget``: seconds for the whole run; ``records``: the ``qidao tune`` file
    for the workloads that take one (the ladder's ``tuned`` rung)."""
    pending = collections.deque(pairs(workloads, backends))
    results: list[GpuResult] = []
    start = time.monotonic()
    deadline = start + budget if budget is not None else float("inf")
    row_start = [start]

    def limit() -> float:
        # the row in progress; with none left, a few seconds for the worker to exit
        allowed = row_timeout(pending[0][0], timeout) if pending else 10.0
        return min(row_start[0] + allowed, deadline)

    def say(text: str) -> None:
        if progress:
            elapsed = time.monotonic() - start
            print(f"bench-cuda [{elapsed:6.1f} s]: {text}", file=sys.stderr, flush=True)

    def say_next() -> None:
        if pending:
            workload, backend = pending[0]
            allowed = row_timeout(workload, timeout)
            say(f"{workload} {backend}: running (at most {allowed:g} s)")

    def on_row(row: GpuResult) -> None:
        expected = pending.popleft()
        if (row.workload, row.backend) != expected:
            raise RuntimeError(
                f"worker sent {row.workload}/{row.backend}, not {expected}"
            )
        row_start[0] = time.monotonic()
        results.append(row)
        if csv_path is not None:
            write_csv(results, csv_path)
        say(format_row(row, results))
        if not row.error.startswith("skipped:"):
            say_next()

    while pending:
        if time.monotonic() >= deadline:
            why = f"skipped: the run's budget of {budget:g} s was spent"
            for workload, backend in list(pending):
                on_row(error_row(workload, backend, why))
            break
        row_start[0] = time.monotonic()
        say(f"a worker starts on the {len(pending)} row(s) left")
        if not results:
            say_next()  # later, each row's line is followed by the next one's
        code, killed, tail = _run_worker(
            list(pending), device, min_time, max_runs, limit, on_row, records
        )
        if not pending or (results and results[-1].error and code == 4):
            continue  # done, or a failed row ended the worker: a fresh one goes on
        workload, backend = pending[0]
        if killed and time.monotonic() >= deadline:
            why = f"stopped: the run's budget of {budget:g} s ran out during this row"
        elif killed:
            why = f"timed out: no result within {row_timeout(workload, timeout):g} s"
        else:
            why = (
                f"worker exited with code {code}: {tail[-1] if tail else '(no output)'}"
            )
        if progress and tail:
            print("\n".join(tail[-15:]), file=sys.stderr)
        on_row(error_row(workload, backend, why))
    return results


__all__ = [
    "BACKENDS",
    "CSV_COLUMNS",
    "DEVICES",
    "NO_DEVICE_EXIT",
    "GpuResult",
    "Timer",
    "format_table",
    "measure",
    "pairs",
    "run_bench_cuda",
    "torch_event_times",
    "vs_torch",
    "wall_times",
    "write_csv",
]


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker(sys.argv[2:]))
    raise SystemExit("usage: python -m qidao.bench.cuda.bench worker ...")
