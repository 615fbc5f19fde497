"""Run trials in worker processes, each with a timeout: the parent's side of
``worker.py``, on the runtime's worker harness (``qidao/runtime/worker.py``).

A :class:`WorkerPool` keeps ``workers`` long-lived ``python -m
qidao.compiler.tune.worker`` processes (fresh interpreters, never forks: a process
that used libgomp and then forks hangs the child), each with its threads pinned
(``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``). A trial that
does not answer within ``timeout`` seconds is killed (``timeout``); a worker that
dies is a ``crash``; either way a new worker takes its place and the batch goes on,
as it does after an answer asking for a ``restart`` (a GPU trial's error).
Trials of a batch run on the workers at the same time; the results come back in the
order of the requests.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from qidao.runtime.worker import Worker

WORKER_MODULE = "qidao.compiler.tune.worker"


@dataclass
class TrialOutcome:
    """What one trial gave: ``status`` is ok, wrong, error, timeout or crash."""

    status: str
    times: list[float] = field(default_factory=list)
    compile_s: float = 0.0
    error: str = ""
    wall_s: float = 0.0


def _ask(worker: Worker, request: dict[str, Any], timeout: float) -> TrialOutcome:
    answer = worker.ask(request, timeout)
    if answer.data.get("restart"):  # a GPU error may have spoiled the CUDA context
        worker.close()
    wall_s = timeout if answer.status == "timeout" else answer.wall_s
    return TrialOutcome(
        answer.status,
        [float(t) for t in answer.data.get("times", ())],
        float(answer.data.get("compile_s", 0.0)),
        answer.error,
        wall_s,
    )


class WorkerPool:
    """``workers`` worker processes; use as a context manager."""

    def __init__(self, workers: int = 1, threads: int = 1, timeout: float = 60.0):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.threads = threads
        self.timeout = timeout
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        for _ in range(workers):
            self._idle.put(self._start())
        self._executor = ThreadPoolExecutor(workers)

    def _start(self) -> Worker:
        worker = Worker(WORKER_MODULE, threads=self.threads)
        self._all.append(worker)
        return worker

    def _run(self, request: dict[str, Any]) -> TrialOutcome:
        worker = self._idle.get()
        try:
            outcome = _ask(worker, request, self.timeout)
        finally:
            if not worker.alive():
                worker.close()
                worker = self._start()
            self._idle.put(worker)
        return outcome

    def run(self, requests: list[dict[str, Any]]) -> list[TrialOutcome]:
        """Run the requests on the workers; outcomes in request order."""
        return list(self._executor.map(self._run, requests))

    def close(self) -> None:
        self._executor.shutdown()
        for worker in self._all:
            worker.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
