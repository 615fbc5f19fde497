"""Tune one task: a search over its space, every trial measured in a worker
process and recorded.

    result = tune_task(named_task("matmul1024"), trials=64, seed=0,
                       records=Path("tune.jsonl"), threads=1)
    result.best.trace, result.best.gflops

Each trial compiles the task's standalone graph with the point's trace, checks it
against NumPy and takes the median of a few timed calls (``calls``, at most
``budget_s`` of them); one that fails, crashes or passes ``timeout`` is recorded
as such and the search goes on. A progress bar (stderr) shows the trials and the
best GFLOP/s so far. A reference point is measured the same way but is not a
trial: the compiler's ``default`` schedule (the template's ``recipe``, which the
evolutionary search measures first, is the same point for a matmul).

For the GPU (``Measurement(target="cuda", device="cuda")``) the templates are
``gpu_templates.GPU_TEMPLATES``, each trial is timed with CUDA events on the GPU
(``gpu_worker.py``) and the records are keyed by the GPU's model and compute
capability; ``device="emulate"`` runs the trials on the CPU emulator, timed by
wall clock and keyed ``"emulator"``. Without a GPU, ``device="cuda"`` is a
``CudaUnavailableError`` saying why, before any trial::

    tune_task(named_gpu_task("softmax256x1024"), trials=32,
              how=Measurement(target="cuda", device="emulate"))
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qidao.compiler.tune.gpu_device import gpu_key
from qidao.compiler.tune.records import Record, append_records, cpu_model
from qidao.compiler.tune.runner import TrialOutcome, WorkerPool
from qidao.compiler.tune.search import (
    Evolution,
    Trial,
    evolutionary_search,
    exhaustive_search,
    random_search,
)
from qidao.compiler.tune.space import Point, Space
from qidao.compiler.tune.task import Task
from qidao.compiler.tune.templates import templates_of

SEARCHES = ("evolutionary", "random", "exhaustive")


@dataclass
class Measurement:
    """How trials are measured."""

    threads: int = 1
    workers: int = 1
    timeout: float = 60.0
    calls: int = 3
    """Timed calls at least (after one checked call); the median counts."""
    min_time: float = 0.1
    """More calls while they take less than this together..."""
    budget_s: float = 2.0
    """... and fewer when they would take more (at least one)."""
    target: str = "cpu"
    """``cpu`` or ``cuda`` (the GPU templates, trials and record keys)."""
    device: str = "cuda"
    """For ``cuda``: ``cuda`` (the GPU, CUDA events) or ``emulate`` (the CPU
    emulator, wall clock)."""

    def machine(self) -> str:
        """The machine part of the records' key: this CPU, or the device's key
        (``gpu_device.gpu_key``: a ``CudaUnavailableError`` without a GPU)."""
        if self.target != "cuda":
            return cpu_model()
        if self.device == "cuda" and self.workers > 1:
            raise ValueError(
                f"workers={self.workers}: trials on one GPU at the same time would "
                "time each other; tune a GPU with one worker"
            )
        return gpu_key(self.device, "tuning for target 'cuda'")


@dataclass
class TuneResult:
    task: Task
    space: Space
    search: str
    history: list[Trial]
    records: list[Record]
    references: dict[str, float | None] = field(default_factory=dict)

    @property
    def best(self) -> Record | None:
        ok = [r for r in self.records if r.status == "ok" and r.gflops]
        return max(ok, key=lambda r: r.gflops or 0.0) if ok else None


def gflops(task: Task, outcome: TrialOutcome, target: str = "cpu") -> float | None:
    if outcome.status != "ok" or not outcome.times:
        return None
    flops = templates_of(target)[task.kind].flops(task)
    return flops / statistics.median(outcome.times) / 1e9


class _Trials:
    """The ``measure`` of a search: runs points on the pool, records them."""

    def __init__(
        self,
        space: Space,
        pool: WorkerPool,
        how: Measurement,
        search: str,
        seed: int,
        records_path: Path | None,
        bar: Any,
    ) -> None:
        self.space, self.pool, self.how = space, pool, how
        self.search, self.seed = search, seed
        self.records_path, self.bar = records_path, bar
        self.records: list[Record] = []
        self.best = 0.0
        self.machine = how.machine()

    def request(self, trial: int, trace: str) -> dict[str, Any]:
        return {
            "id": trial,
            "task": self.space.task.to_json(),
            "trace": trace,
            "threads": self.how.threads,
            "calls": self.how.calls,
            "min_time": self.how.min_time,
            "budget_s": self.how.budget_s,
            "target": self.how.target,
            "device": self.how.device,
        }

    def __call__(self, points: list[Point]) -> list[float | None]:
        first = len(self.records)
        traces = [self.space.trace(p) for p in points]
        requests = [self.request(first + k, t) for k, t in enumerate(traces)]
        outcomes = self.pool.run(requests)
        _, kernel = self.space.affine()
        batch: list[Record] = []
        rates: list[float | None] = []
        for k, (point, trace, outcome) in enumerate(
            zip(points, traces, outcomes, strict=True)
        ):
            rate = gflops(self.space.task, outcome, self.how.target)
            rates.append(rate)
            gpu = self.machine if self.how.target == "cuda" else ""
            batch.append(
                Record(
                    task=self.space.task,
                    threads=self.how.threads if self.how.target == "cpu" else 1,
                    config=self.space.config(point),
                    trace=trace,
                    kernel=kernel,
                    status=outcome.status,
                    times=outcome.times,
                    gflops=rate,
                    error=outcome.error,
                    search=self.search,
                    seed=self.seed,
                    trial=first + k,
                    compile_s=outcome.compile_s,
                    target=self.how.target,
                    gpu=gpu,
                )
            )
            self.best = max(self.best, rate or 0.0)
        self.records += batch
        if self.records_path is not None:
            append_records(self.records_path, batch)
        if self.bar is not None:
            self.bar.update(len(points))
            self.bar.set_postfix_str(f"best {self.best:.1f} GFLOP/s")
        return rates


def tune_task(
    task: Task,
    trials: int = 64,
    seed: int = 0,
    records: Path | None = None,
    how: Measurement | None = None,
    search: str = "evolutionary",
    small: bool = False,
    references: bool = True,
    progress: bool = True,
    evolution: Evolution | None = None,
) -> TuneResult:
    """Search ``task``'s space (``small``: the template's small space) with
    ``search`` (``evolutionary``, ``random`` or ``exhaustive``: every point)."""
    from tqdm import tqdm

    if search not in SEARCHES:
        raise ValueError(
            f"unknown search '{search}'; choose from {', '.join(SEARCHES)}"
        )
    how = how or Measurement()
    how.machine()  # no GPU: say so before any trial
    evolution = evolution or Evolution()
    template = templates_of(how.target)[task.kind]
    space = Space(template, task, threads=how.threads, small=small)
    total = len(space.points()) if search == "exhaustive" else trials
    bar = tqdm(
        total=total,
        desc=f"tune {task.kind}",
        unit="trial",
        disable=not progress,
        file=sys.stderr,
    )
    with WorkerPool(how.workers, how.threads, how.timeout) as pool:
        measure = _Trials(space, pool, how, search, seed, records, bar)
        if search == "exhaustive":
            history = exhaustive_search(space, measure, evolution.batch)
        elif search == "random":
            history = random_search(space, measure, trials, seed, evolution.batch)
        else:
            history = evolutionary_search(space, measure, trials, seed, evolution)
        bar.close()
        result = TuneResult(task, space, search, history, measure.records)
        if references:
            result.references = measure_references(space, measure)
    return result


def measure_references(space: Space, measure: _Trials) -> dict[str, float | None]:
    """GFLOP/s of the default schedule (no trace: ``qidao.compile``'s own)."""
    traces = {"default": ""}
    requests = [measure.request(-1 - k, t) for k, t in enumerate(traces.values())]
    outcomes = measure.pool.run(requests)
    return {
        name: gflops(space.task, outcome, measure.how.target)
        for name, outcome in zip(traces, outcomes, strict=True)
    }
