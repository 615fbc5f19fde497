"""How qidao measures in another process: the one worker harness.

A measurement runs in a fresh Python process with its thread pools pinned, so that
thread pools of several backends never share a process, a crash of native code or a
hang is recorded rather than lost, and a fork never copies a process that used
libgomp (its child hangs). Every measuring job uses this module: the benchmarks
(``qidao bench``, ``bench train``, ``bench checkpoint``, the ladder, the zoo, the
CUDA benchmark) and the autotuner's trials.

The protocol is JSON lines. The parent starts ``python -m MODULE`` (:class:`Worker`);
the module's ``__main__`` calls :func:`serve` with its handler, which does its
imports and warm-up, answers ``{"ready": true}``, then answers each request line
with the handler's dict (``"status": "ok"`` unless the handler says otherwise; an
exception is ``"status": "error"`` with its one-line message). Only the protocol
writes to the real stdout: anything else the worker prints goes to stderr.

On the parent's side an answer is an :class:`Answer`; a worker that dies is a
``crash`` (with the last line of its stderr), one that does not answer within the
request's timeout a ``timeout`` (it is killed). :func:`run_once` is a fresh worker
for one request: what the benchmarks use, one process per (workload, backend).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

STARTUP_TIMEOUT = 300.0
"""Seconds a new worker may take to import and warm up (not a request's time)."""

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""The environment variables that size OpenMP's, MKL's and OpenBLAS's pools."""


def pinned_env(threads: int, *, numpy: bool = False) -> dict[str, str]:
    """This process's environment with every thread pool pinned to ``threads``:
    what a worker runs in. ``numpy=True`` for a worker that times NumPy: without
    ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``, which slow it where they are
    set."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    if numpy:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    return env


@dataclass
class Answer:
    """A worker's answer: ``status`` is the handler's (``ok``, ``error``, or its
    own, such as the tuner's ``wrong``) or ``crash`` / ``timeout``; ``data`` is the
    whole answer; ``wall_s`` the seconds from request to answer."""

    status: str
    data: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Worker:
    """A ``python -m module *args`` process answering requests (module
    docstring); close it, or use it as a context manager."""

    def __init__(
        self,
        module: str,
        *,
        threads: int | None = None,
        numpy: bool = False,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        if env is None:
            env = pinned_env(threads, numpy=numpy) if threads else dict(os.environ)
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self._buffer = b""
        self.ready = False

    def _line(self, timeout: float | None) -> bytes | None:
        """The worker's next line, or None when it does not come in time; raises
        EOFError when the worker died."""
        assert self.proc.stdout is not None
        deadline = None if timeout is None else time.perf_counter() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def ask(self, request: dict[str, Any], timeout: float | None = None) -> Answer:
        """Send ``request``; its answer, a ``crash`` or a ``timeout`` (then the
        worker is killed). ``timeout`` counts from the request, after the worker's
        start (``STARTUP_TIMEOUT``)."""
        assert self.proc.stdin is not None
        try:
            if not self.ready:
                self.ready = self._line(STARTUP_TIMEOUT) is not None
                if not self.ready:
                    self.close()
                    return Answer("crash", error="the worker did not start")
            start = time.perf_counter()
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            line = self._line(timeout)
        except (BrokenPipeError, EOFError):
            return Answer("crash", error=self._died())
        if line is None:
            self.close()
            return Answer("timeout", error=f"no answer within {timeout:g} s")
        data: dict[str, Any] = json.loads(line)
        return Answer(
            str(data.get("status", "ok")),
            data,
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
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return f"the worker died ({how}): {last}"

    def close(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_once(
    module: str,
    request: dict[str, Any],
    *,
    threads: int,
    numpy: bool = False,
    timeout: float | None = None,
) -> Answer:
    """``request`` answered by a fresh worker of ``module`` with ``threads``
    threads, which then exits."""
    with Worker(module, threads=threads, numpy=numpy) as worker:
        return worker.ask(request, timeout)


def run_once_data(
    module: str, request: dict[str, Any], *, threads: int, timeout: float
) -> dict[str, Any]:
    """:func:`run_once`'s answer as the handler's dict (less ``status`` and
    ``id``), a timeout or a crash as ``{"error": ...}`` saying which."""
    answer = run_once(module, request, threads=threads, timeout=timeout)
    if answer.status == "timeout":
        return {"error": f"timed out after {timeout:g} s"}
    if answer.status == "crash":
        return {"error": f"crashed: {answer.error}"}
    return {k: v for k, v in answer.data.items() if k not in ("status", "id")}


def serve(
    handle: Callable[[dict[str, Any]], dict[str, Any]],
    warm: Callable[[], Any] | None = None,
) -> None:
    """The worker's side: run ``warm``, answer ``{"ready": true}``, then answer
    each request on stdin with ``handle(request)`` until stdin closes."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    if warm is not None:
        warm()
    protocol.write(json.dumps({"ready": True}) + "\n")
    protocol.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = {"status": "ok", **handle(request)}
        except Exception as err:
            traceback.print_exc()
            message = f"{type(err).__name__}: {err}".splitlines()[0][:500]
            answer = {"status": "error", "error": message}
        if isinstance(request, dict) and "id" in request:
            answer.setdefault("id", request["id"])
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()
