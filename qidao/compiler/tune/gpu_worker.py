"""A GPU trial, run by the trial worker (``worker.py``) for a request with
``"target": "cuda"``.

The request is the CPU's plus ``"device"`` (``"cuda"`` or ``"emulate"``)::

    {"id": 3, "task": {...}, "trace": "s.bind(...)\\n...", "target": "cuda",
     "device": "cuda", "calls": 3, "min_time": 0.1, "budget_s": 2.0, ...}

The trial compiles the task's standalone graph with ``qidao.compile(graph,
target="cuda", device=..., schedule=trace)`` (an empty trace: the default GPU
schedule), loads it (nvcc and the module; g++ on the emulator: both in
``compile_s``), uploads the inputs once, launches once and checks the output
against NumPy (``reference.check``), then times ``CudaFunction.launch`` alone (the
program's launches in order, no copies), as ``qidao bench-cuda`` does:

- on a GPU, each call between two CUDA events (``qidao.runtime.cuda.event_times``:
  3 warm-up calls, then ``min_time`` seconds' worth, 10 to ``MAX_CALLS`` calls,
  fewer than ``budget_s`` would allow);
- on the emulator, by wall clock, as many calls as the CPU worker makes.

A GPU trial that raises after the device was opened (an illegal address, a launch
failure) may leave the CUDA context unusable: its answer carries ``"restart":
true`` and the pool replaces the worker (``runner.py``).
"""

from __future__ import annotations

import time
from typing import Any

from qidao.compiler.tune.reference import check, task_data
from qidao.compiler.tune.task import Task
from qidao.runtime.timing import time_calls

MAX_CALLS = 1000
"""Timed calls at most (as the CPU worker's)."""
MIN_EVENT_CALLS = 10
"""``event_times`` times at least this many calls."""


def run_gpu_trial(request: dict[str, Any], injected: str) -> dict[str, Any]:
    """Compile, check and time one GPU trial (module docstring); ``injected`` is
    the test fault of ``worker.fault`` ("wrong" adds 1 to the output)."""
    from qidao.compiler.compile import compile
    from qidao.compiler.targets.cuda.compiled import CompiledCuda
    from qidao.compiler.tune.templates import templates_of

    trial = int(request["id"])
    device = str(request["device"])
    task = Task.from_json(request["task"])
    template = templates_of("cuda")[task.kind]
    inputs, want = task_data(task, "cuda")
    options: dict[str, Any] = {"target": "cuda", "device": device}
    if request["trace"]:
        options["schedule"] = str(request["trace"])
    start = time.perf_counter()
    compiled = compile(template.graph(task), **options)
    if not isinstance(compiled, CompiledCuda):
        raise TypeError(f"the task compiled to a {type(compiled).__name__}")
    try:
        function = compiled.load()  # nvcc and the module load (g++: emulator)
    except Exception as err:
        return _failed(trial, device, err)
    compile_s = time.perf_counter() - start
    try:
        function.upload(*inputs)
        start = time.perf_counter()
        function.launch()
        got = function.download()[0]
        first_s = max(time.perf_counter() - start, 1e-9)
        if injected == "wrong":
            got = got + 1.0
        # a reduction's reference keeps the last axis: the kernel's output shape
        problem = check(got, want.reshape(task.shapes[-1]), task.shapes[0][-1])
        if problem:
            return {"id": trial, "status": "wrong", "error": problem}
        times = _times(function, device, request, first_s)
    except Exception as err:
        return _failed(trial, device, err)
    finally:
        function.close()
    return {"id": trial, "status": "ok", "times": times, "compile_s": compile_s}


def _times(
    function: Any, device: str, request: dict[str, Any], first_s: float
) -> list[float]:
    """Seconds of each timed ``launch``: CUDA events on a GPU, else wall clock."""
    min_time, budget_s = float(request["min_time"]), float(request["budget_s"])
    if device == "cuda":
        from qidao.runtime.cuda import event_times

        runs = max(MIN_EVENT_CALLS, min(MAX_CALLS, int(budget_s / first_s)))
        timed = event_times(function.launch, min_time, runs)
        function.device.synchronize()  # raises a launch's asynchronous error
        return timed

    def call() -> None:
        function.launch()
        function.device.synchronize()

    return time_calls(
        call,
        warmup=0,  # the checked launch was the first
        min_calls=int(request["calls"]),
        min_time=min_time,
        max_calls=MAX_CALLS,
        budget_s=budget_s,
    )


def _failed(trial: int, device: str, err: Exception) -> dict[str, Any]:
    """An ``error`` answer; on a GPU it asks for a fresh worker (``restart``)."""
    message = f"{type(err).__name__}: {err}".splitlines()[0][:500]
    answer: dict[str, Any] = {"id": trial, "status": "error", "error": message}
    if device == "cuda":
        answer["restart"] = True
    return answer
