"""A trial worker: ``python -m qidao.compiler.tune.worker``, one JSON request a line
on stdin, one JSON result a line on stdout.

The worker first imports the compiler, compiles a one-op graph (the first compile's
lazy start) and answers ``{"ready": true}``; then a
request: ``{"id": 3, "task": {...}, "trace": "s.split(...)\\n...", "threads": 1,
"calls": 3, "min_time": 0.1, "budget_s": 2.0}``. The worker compiles the task's
standalone graph with the trace as its schedule (an empty trace: the compiler's
default), calls it once and checks the output against NumPy (float64 reference,
rtol 1e-3), then times it with the runtime's loop (``qidao/runtime/timing.py``): at
least ``calls`` calls and ``min_time`` seconds, stopping at ``budget_s`` (after one
call). It answers ``{"id", "status": "ok", "times", "compile_s"}``, or ``"status":
"wrong"`` / ``"error"`` with the reason (``qidao/runtime/worker.py``'s ``serve``
speaks the protocol). A crash or a
hang is the parent's to notice (``runner.py``): it kills the worker and starts
another. The worker is a fresh process (never a fork of one that ran libgomp).

A request with ``"target": "cuda"`` is a GPU trial (``gpu_worker.py``: compiled
for CUDA, checked the same way, timed with CUDA events on a GPU or by wall clock on
the emulator).

Test hook: ``QIDAO_TUNE_FAULT="hang:0,crash:1,wrong:2"`` makes the trials with
those ids hang, crash the process (``os._exit``) or return a wrong result
(``*`` for every id).
"""

from __future__ import annotations

import os
import time
from typing import Any

from qidao.compiler.tune.reference import check, task_data
from qidao.compiler.tune.task import Task
from qidao.runtime.timing import time_calls
from qidao.runtime.worker import serve

MAX_CALLS = 1000


def fault(trial: int) -> str:
    """The fault ``QIDAO_TUNE_FAULT`` injects into trial ``trial`` ("" for none)."""
    for item in os.environ.get("QIDAO_TUNE_FAULT", "").split(","):
        kind, _, which = item.partition(":")
        if kind and which in ("*", str(trial)):
            return kind
    return ""


def run_trial(request: dict[str, Any]) -> dict[str, Any]:
    """Compile, check and time one trial (see the module docstring)."""
    from qidao.compiler.compile import compile
    from qidao.compiler.tune.templates import TEMPLATES

    trial = int(request["id"])
    injected = fault(trial)
    if injected == "hang":
        time.sleep(1e6)
    if injected == "crash":
        os._exit(70)
    if request.get("target", "cpu") == "cuda":
        from qidao.compiler.tune.gpu_worker import run_gpu_trial

        return run_gpu_trial(request, injected)
    task = Task.from_json(request["task"])
    template = TEMPLATES[task.kind]
    inputs, want = task_data(task)
    options: dict[str, Any] = {"threads": int(request["threads"])}
    if request["trace"]:
        options["schedule"] = str(request["trace"])
    start = time.perf_counter()
    compiled = compile(template.graph(task), **options)
    compile_s = time.perf_counter() - start
    got = compiled(*inputs)[0]
    if injected == "wrong":
        got = got + 1.0
    problem = check(got, want, task.shapes[0][-1])
    if problem:
        return {"id": trial, "status": "wrong", "error": problem}
    times = time_calls(
        lambda: compiled(*inputs),
        warmup=0,  # the checked call above was the first
        min_calls=int(request["calls"]),
        min_time=float(request["min_time"]),
        max_calls=MAX_CALLS,
        budget_s=float(request["budget_s"]),
    )
    return {"id": trial, "status": "ok", "times": times, "compile_s": compile_s}


def _warm() -> None:
    """Import, and compile once, before answering "ready", so that no trial's time
    includes the imports or a first compile's lazy start (xDSL's dialects, LLVM):
    1.9 s of the first trial after a restart, on an idle machine."""
    import qidao.compiler.compile
    import qidao.compiler.tune.templates
    from qidao.frontend.builder import Graph

    warm = Graph("main")
    warm.output(warm.relu(warm.input("x", (16,))))
    qidao.compiler.compile.compile(warm, threads=1, verify="each")  # never cached


def main() -> None:
    serve(run_trial, _warm)


if __name__ == "__main__":
    main()
