"""The fuzzer's runner: each case in a worker process with a timeout, so that a crash
of native code or a hang is recorded as one, not lost.

The cases are in ``qidao/fuzz/cases.py`` (what each kind builds). Case ``(kind,
seed)`` is deterministic: ``qidao fuzz --kinds KIND --seed SEED --cases 1`` builds it
again. Workers are spawned processes that run case after case; one that dies is a
``crash`` and one that does not answer within ``--timeout`` seconds a ``hang`` (it is
killed), and a fresh worker takes the next case.

Statuses: ``ok`` (the right answer, or a model that compiled and ran), ``refused`` (a
clear ``QidaoError``), and the failures: ``wrong`` (an answer that differs from ONNX
Runtime or NumPy), ``raw`` (any other exception: an internal error reached the user),
``crash`` and ``hang``. Each case's :class:`Outcome` carries the line that reproduces
it; ``qidao/fuzz/report.py`` prints them and writes the CSV.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

FAILURES = ("wrong", "raw", "crash", "hang")
STARTUP_TIMEOUT = 600
"""Seconds a fresh worker may take to import what the cases need."""
DEATH_TIMEOUT = 60
"""Seconds a worker whose pipe closed may take to exit (a core dump, say)."""
STATUSES = ("ok", "refused", *FAILURES)


@dataclass
class Outcome:
    kind: str
    seed: int
    status: str
    detail: str
    seconds: float

    @property
    def failed(self) -> bool:
        return self.status in FAILURES

    def reproduce(self) -> str:
        return f"qidao fuzz --kinds {self.kind} --seed {self.seed} --cases 1"


def _serve(conn: Connection) -> None:  # pragma: no cover - runs in the worker
    from qidao.fuzz.cases import run_case

    conn.send("ready")  # the imports done: case timeouts count from here
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        kind, seed = request
        conn.send(run_case(kind, seed))


class _Worker:
    """One spawned process running cases; replaced after a crash or a hang."""

    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()
        # a spawned worker imports qidao, NumPy, ONNX first: seconds, more on a busy
        # machine; a case's timeout starts only once it is ready
        try:
            ready = self.conn.poll(STARTUP_TIMEOUT) and self.conn.recv() == "ready"
        except (EOFError, ConnectionResetError):
            ready = False
        if not ready:
            self.kill()
            raise RuntimeError(
                f"a fuzz worker did not start within {STARTUP_TIMEOUT} s "
                f"(exit status {self.process.exitcode})"
            )

    def run(self, kind: str, seed: int, timeout: float) -> tuple[str, str]:
        self.conn.send((kind, seed))
        try:
            if not self.conn.poll(timeout):
                self.kill()
                return "hang", f"no answer within {timeout:g} s"
            status, detail = self.conn.recv()
            return str(status), str(detail)
        except (EOFError, ConnectionResetError, BrokenPipeError):
            pass  # the pipe closed: the worker died (it may still be dumping core)
        self.process.join(DEATH_TIMEOUT)
        if self.process.is_alive():
            self.kill()
        return "crash", f"the worker died (exit status {self.process.exitcode})"

    def kill(self) -> None:
        self.process.kill()
        self.process.join()

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.conn.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.kill()


def run_fuzz(
    kinds: Sequence[str],
    cases: int,
    seed: int = 0,
    timeout: float = 60.0,
    minutes: float | None = None,
    progress: bool = True,
) -> list[Outcome]:
    """Run ``cases`` cases of each kind (seeds ``seed``, ``seed + 1``, ...; with
    ``minutes``, round after round until the time is up), one worker process."""
    outcomes: list[Outcome] = []
    worker = _Worker()
    deadline = time.monotonic() + minutes * 60 if minutes else None
    bar = _bar(progress, None if deadline else cases * len(kinds))
    try:
        for kind, case_seed in _schedule(kinds, cases, seed, deadline):
            start = time.perf_counter()
            status, detail = worker.run(kind, case_seed, timeout)
            if status in ("crash", "hang"):
                worker = _Worker()
            outcomes.append(
                Outcome(kind, case_seed, status, detail, time.perf_counter() - start)
            )
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"{kind} {status}")
    finally:
        worker.close()
        if bar is not None:
            bar.close()
    return outcomes


def _schedule(
    kinds: Sequence[str], cases: int, seed: int, deadline: float | None
) -> Iterator[tuple[str, int]]:
    n = 0
    while (deadline is None and n < cases) or deadline is not None:
        for kind in kinds:
            if deadline is not None and time.monotonic() > deadline:
                return
            yield kind, seed + n
        n += 1


def _bar(progress: bool, total: int | None) -> Any:
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="fuzz", unit="case")
