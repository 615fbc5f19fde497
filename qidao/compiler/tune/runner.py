"""Run trials in worker processes, each with a timeout: the parent's side of
``worker.py``.

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

import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

STARTUP_TIMEOUT = 120.0
"""Seconds a new worker may take to import the compiler (not a trial's time)."""


@dataclass
class TrialOutcome:
    """What one trial gave: ``status`` is ok, wrong, error, timeout or crash."""

    status: str
    times: list[float] = field(default_factory=list)
    compile_s: float = 0.0
    error: str = ""
    wall_s: float = 0.0


class _Worker:
    def __init__(self, threads: int) -> None:
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = str(threads)
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "qidao.compiler.tune.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self._buffer = b""
        self.ready = False

    def _line(self, timeout: float) -> bytes | None:
        """The next line of the worker, or None when it does not come in time;
        raises EOFError when the worker died."""
        assert self.proc.stdout is not None
        deadline = time.perf_counter() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def ask(self, request: dict[str, Any], timeout: float) -> TrialOutcome:
        assert self.proc.stdin is not None
        try:
            if not self.ready:  # imports are not the trial's time
                self.ready = self._line(STARTUP_TIMEOUT) is not None
                if not self.ready:
                    self.close()
                    return TrialOutcome("crash", error="the worker did not start")
            start = time.perf_counter()
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            line = self._line(timeout)
        except (BrokenPipeError, EOFError):
            return TrialOutcome("crash", error=self._died())
        if line is None:
            self.close()
            return TrialOutcome(
                "timeout", error=f"no answer within {timeout:g} s", wall_s=timeout
            )
        data = json.loads(line)
        if data.get("restart"):  # a GPU error may have spoiled the CUDA context
            self.close()
        return TrialOutcome(
            str(data["status"]),
            [float(t) for t in data.get("times", ())],
            float(data.get("compile_s", 0.0)),
            str(data.get("error", "")),
            time.perf_counter() - start,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _died(self) -> str:
        code = self.proc.wait()
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else "(no output)"
        return f"the worker died (exit code {code}): {last}"

    def close(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()


class WorkerPool:
    """``workers`` worker processes; use as a context manager."""

    def __init__(self, workers: int = 1, threads: int = 1, timeout: float = 60.0):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.threads = threads
        self.timeout = timeout
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        for _ in range(workers):
            self._idle.put(self._start())
        self._executor = ThreadPoolExecutor(workers)

    def _start(self) -> _Worker:
        worker = _Worker(self.threads)
        self._all.append(worker)
        return worker

    def _run(self, request: dict[str, Any]) -> TrialOutcome:
        worker = self._idle.get()
        try:
            outcome = worker.ask(request, self.timeout)
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
