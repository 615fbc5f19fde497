"""What the benchmarks made of jobs (``zoo``, ``quant``, ``bf16``) share: how one
job runs, here or in a fresh process, and how its failure is told.

A benchmark module defines ``measure(name, job, threads, min_time, max_runs)``
(one job in this process: a JSON-able dict of its result's fields, or an
exception tagged with the phase it failed in) and a frozen ``Job`` dataclass
taking ``(name, job, threads, **fields)``; ``JobRunners(WORKER, measure, Job)``
then gives it

- ``fresh``: the job in a fresh process with its threads pinned (the runtime's
  worker harness, ``qidao/runtime/worker.py``), killed past ``timeout`` seconds;
- ``here``: the job in this process: no isolation from a crash, no timeout,
  torch's thread count set back afterwards (for tests);
- ``answer``: a worker's answer to one request: ``measure``'s dict, or
  ``{"error": ...}`` (:func:`describe`).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from qidao.runtime.worker import run_once_data

INTERNAL_ERRORS = ("VerifyException", "AssertionError", "IndexError", "KeyError")
"""Exception types that are qidao's bugs whatever the model: ``internal error``."""

DEFAULT_TIMEOUT = 900.0
"""Seconds a job may run before its process is killed (ResNet-50 compiles in
minutes on two cores)."""


class Mismatch(Exception):
    """A compiled output that differs from its reference."""


def first_line(text: str, limit: int = 200) -> str:
    """The first line of ``text``; one that ends in a colon (a list follows, as in
    ``the model uses 2 unsupported op type(s):``) goes on with the list, joined
    by ``;``, up to ``limit`` characters."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if not lines[0].endswith(":") or len(lines) == 1:
        return lines[0]
    text = f"{lines[0]} {'; '.join(lines[1:])}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(err: BaseException) -> str:
    """The first line of an error (:func:`first_line`), labelled with the phase it
    happened in and, for an internal error type, ``internal error``."""
    kind = type(err).__name__
    message = first_line(str(err))
    if isinstance(err, Mismatch):
        return f"mismatch: {message}"
    first = f"{kind}: {message}" if message else kind
    phase = getattr(err, "phase", "")
    if any(c.__name__ in INTERNAL_ERRORS for c in type(err).__mro__):
        return f"internal error ({phase}): {first}"
    return f"{phase} error: {first}"


J = TypeVar("J")


@dataclass(frozen=True)
class JobRunners(Generic[J]):
    """The ways to run one job of a benchmark (module docstring)."""

    worker: str
    """The module whose ``__main__`` serves ``answer``."""
    measure: Callable[..., dict[str, Any]]
    job: Callable[..., J]
    """``Job(name, job, threads, **fields)``."""

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """A worker's answer to one job: ``measure``'s dict, or ``{"error": ...}``
        naming the phase the job failed in (:func:`describe`)."""
        try:
            return self.measure(**request)
        except Exception as err:
            traceback.print_exc()
            return {"error": describe(err)}

    def here(
        self,
        name: str,
        job: str,
        threads: int,
        min_time: float,
        max_runs: int,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> J:
        """Run one job in this process: no isolation from a crash, no timeout, and
        torch's thread count set back afterwards (for tests)."""
        import torch

        before = torch.get_num_threads()
        try:
            data = self.measure(name, job, threads, min_time, max_runs)
        except Exception as err:
            return self.job(name, job, threads, error=describe(err))
        finally:
            torch.set_num_threads(before)
        return self.job(name, job, threads, **data)

    def fresh(
        self,
        name: str,
        job: str,
        threads: int,
        min_time: float,
        max_runs: int,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> J:
        """Run one job in a fresh process with its threads pinned (the runtime's
        worker harness); a job past ``timeout`` seconds is killed."""
        request = {
            "name": name,
            "job": job,
            "threads": threads,
            "min_time": min_time,
            "max_runs": max_runs,
        }
        data = run_once_data(self.worker, request, threads=threads, timeout=timeout)
        return self.job(name, job, threads, **data)
