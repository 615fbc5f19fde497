"""``qidao bench quant``: quantized inference, qidao against ONNX Runtime.

    qidao bench quant                       # cnn and bert at one thread
    qidao bench quant bert --min-time 2 --csv quant.csv
    qidao bench quant resnet-tiny gpt2-tiny # the tiny test models, in seconds

What is measured. Each model is quantized by ONNX Runtime's own tools, and four
things run it, each timed at the same thread count in the same invocation:

- ``qidao-int8``: ``qidao.compile`` of the quantized ONNX file
  (``qidao/frontend/onnx/quantize.py``: the integer products on
  ``tg.matmul_integer``, AVX-512 VNNI where the CPU has it; QDQ convolutions
  fused into ``QLinearConv`` first, ``qdq.py``);
- ``ort-int8``: ONNX Runtime on the same quantized file (its int8 kernels: the
  QDQ pairs fused into ``QLinearConv``-style kernels, ``MatMulInteger`` with the
  scale products fused into ``MatMulIntegerToFloat``);
- ``qidao-fp32`` and ``ort-fp32``: the same two on the float model the
  quantized one came from (the zoo's ONNX export).

The models, their quantization settings, the cached quantized files and the int8
tolerances are ``qidao/bench/quant_models.py`` (its docstring says how and why):
``cnn`` (the zoo's ``resnet50``, ``quantize_static`` in QDQ format, U8S8) and
``bert`` (the zoo's ``bert``, ``quantize_dynamic``) by default, ``resnet-tiny``
and ``gpt2-tiny`` for the tests and a quick check.

How. Every job is a fresh process (``python -m qidao.bench.quant``, the runtime's
worker harness, ``qidao/runtime/worker.py``) with its thread pools pinned, as the
zoo's jobs are; in order ``ort-fp32``, ``ort-int8`` (which quantizes, the first
time), ``qidao-fp32``, ``qidao-int8``. ONNX Runtime runs a CPU session with
``intra_op_num_threads`` = the threads and ``inter_op_num_threads`` 1, all graph
optimizations on. A job checks its output before timing it (a failed check makes
the job an error, never a time): 3 warm-up calls, then calls for ``--min-time``
seconds (at least 5), the median. The references are computed in the job's own
process before the compile, by ONNX Runtime sessions that are dropped before the
timing:

- ``ort-fp32`` against PyTorch eager, and ``qidao-fp32`` against ``ort-fp32``,
  both as the zoo checks (``rtol`` 1e-3, ``atol`` 1e-3 of the largest magnitude);
- ``qidao-int8`` against ``ort-int8`` within ``int8_tolerance``
  (``qidao/bench/quant_models.py``): 5e-3 of the largest magnitude of ONNX
  Runtime's int8 output for a dynamic model, 12 quantization steps of the output
  for a static (QDQ) one;
- ``ort-int8`` and ``qidao-int8`` are also compared with the float model
  (``ort-fp32``'s output): what the quantization costs, informational only.

The table (:func:`format_table`) has a row per model: the four medians, then

- ``ORT8/q8``: ONNX Runtime's int8 median over qidao's int8 (above 1: qidao is
  faster);
- ``q32/q8``: qidao's fp32 median over its int8 (above 1: quantizing pays off in
  qidao; below 1: the quantized graph is slower than the float one);
- ``O32/O8``: the same for ONNX Runtime, what int8 kernels buy there;
- ``q8-O8 (tol)``: qidao's int8 error against ONNX Runtime's and its tolerance,
  ``q8-fp32`` and ``O8-fp32``: each int8 path's error against the float model, all
  as fractions of the reference's largest magnitude (the CSV has the absolute
  errors, the output step of a static model and the error in steps).

A failed job (compile or run error, mismatch, crash, timeout) is named under its
model's row, and the command exits 1.
"""

from __future__ import annotations

import contextlib
import csv
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.jobs import DEFAULT_TIMEOUT, JobRunners, Mismatch
from qidao.bench.quant_models import (
    DEFAULT_MODELS,
    MODELS,
    check_close,
    get_quant_model,
    int8_tolerance,
    largest,
    max_error,
    output_step,
    quantized_path,
)
from qidao.bench.workloads import _onnxruntime_session, time_calls
from qidao.bench.zoo import RTOL
from qidao.bench.zoo_models import get_model, onnx_path, reference
from qidao.runtime.worker import serve

WORKER = "qidao.bench.quant"
"""The module whose worker runs one quant job."""

JOBS = ("ort-fp32", "ort-int8", "qidao-fp32", "qidao-int8")
"""A model's jobs, in the order they run."""

DEFAULT_CSV = "bench-results/quant.csv"


# -- the jobs -----------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One worker process's result (errors are absolute; ``scale`` is the
    largest magnitude of the reference they were measured against)."""

    model: str
    job: str
    threads: int
    compile_s: float = math.nan
    """qidao's compile, or ONNX Runtime's session creation."""
    median_us: float = math.nan
    runs: int = 0
    kernels: int | None = None
    cache: str = ""
    err: float = math.nan
    """The checked error: ``ort-fp32`` against PyTorch, ``qidao-fp32`` against
    ONNX Runtime's fp32, ``qidao-int8`` against ONNX Runtime's int8."""
    tol: float = math.nan
    """The tolerance ``err`` was checked against (``qidao-int8``)."""
    scale: float = math.nan
    step: float = math.nan
    """The output's quantization step (a static model's int8 jobs)."""
    err_fp32: float = math.nan
    """An int8 job's error against the float model (``ort-fp32``'s output)."""
    scale_fp32: float = math.nan
    error: str = ""


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Tags an exception raised in its block with the phase it happened in (the
    innermost wins), for :func:`qidao.bench.jobs.describe`."""
    try:
        yield
    except Exception as err:
        if not hasattr(err, "phase"):
            err.phase = name  # type: ignore[attr-defined]
        raise


def measure(
    name: str, job: str, threads: int, min_time: float, max_runs: int
) -> dict[str, Any]:
    """Run ``job`` for model ``name`` in this process: a JSON-able dict of
    :class:`Job`'s fields, or an exception tagged with its phase (``build``,
    ``export``, ``quantize``, ``reference``, ``compile``, ``run``)."""
    model = get_quant_model(name)
    if job not in JOBS:
        raise ValueError(f"unknown job '{job}'; the jobs are {', '.join(JOBS)}")
    import torch

    torch.set_num_threads(threads)
    with phase("build"):
        zoo = get_model(model.zoo)
        inputs = zoo.inputs()
    with phase("export"):
        fp32 = onnx_path(zoo)
    if job == "ort-fp32":
        with phase("reference"):
            want = reference(zoo, inputs)
        return _ort_fp32(fp32, inputs, want, threads, min_time, max_runs)
    with phase("reference"):
        float_out = _ort_output(fp32, inputs, threads)
    if job == "qidao-fp32":
        return _qidao_fp32(fp32, inputs, float_out, threads, min_time, max_runs)
    with phase("quantize"):
        int8 = quantized_path(model)
        step = output_step(int8) if model.scheme == "static" else math.nan
    if job == "ort-int8":
        return _ort_int8(int8, inputs, float_out, step, threads, min_time, max_runs)
    with phase("reference"):
        want = _ort_output(int8, inputs, threads)
    tol = int8_tolerance(model.scheme, want, step)
    return _qidao_int8(
        int8, inputs, want, float_out, tol, step, threads, min_time, max_runs
    )


def _ort_output(path: Path, inputs: list[Any], threads: int) -> Any:
    """ONNX Runtime's first output on ``inputs``; the session is dropped after."""
    run = _onnxruntime_session(path, threads, inputs)
    return np.asarray(run()[0])


def _timed(call: Callable[[], Any], min_time: float, max_runs: int) -> dict[str, Any]:
    with phase("run"):
        times = time_calls(call, min_time, max_runs) if min_time > 0 else []
    return {
        "median_us": float(np.median(times)) * 1e6 if times else math.nan,
        "runs": len(times),
    }


def _ort_fp32(
    path: Path,
    inputs: list[Any],
    want: Any,
    threads: int,
    min_time: float,
    max_runs: int,
) -> dict[str, Any]:
    start = time.perf_counter()
    with phase("compile"):
        run = _onnxruntime_session(path, threads, inputs)
    compile_s = time.perf_counter() - start
    with phase("run"):
        got = run()[0]
    atol = RTOL * largest(want)
    err = check_close(got, want, atol, RTOL, "PyTorch eager")
    return {
        "compile_s": compile_s,
        "err": err,
        "tol": atol,
        "scale": largest(want),
        **_timed(run, min_time, max_runs),
    }


def _ort_int8(
    path: Path,
    inputs: list[Any],
    float_out: Any,
    step: float,
    threads: int,
    min_time: float,
    max_runs: int,
) -> dict[str, Any]:
    start = time.perf_counter()
    with phase("compile"):
        run = _onnxruntime_session(path, threads, inputs)
    compile_s = time.perf_counter() - start
    with phase("run"):
        got = np.asarray(run()[0])
    if not np.all(np.isfinite(got)):
        raise Mismatch("ONNX Runtime's int8 output is not finite")
    return {
        "compile_s": compile_s,
        "step": step,
        "err_fp32": max_error(got, float_out),
        "scale_fp32": largest(float_out),
        **_timed(run, min_time, max_runs),
    }


def _compile(path: Path, inputs: list[Any], threads: int) -> tuple[Any, float]:
    """``qidao.compile`` of ``path`` (a model that is compiled at its first call
    is called once) and the seconds it took."""
    import qidao
    from qidao import Compiled

    start = time.perf_counter()
    with phase("compile"):
        compiled = qidao.compile(str(path), threads=threads)
        if not isinstance(compiled, Compiled):  # compiled at its first call
            compiled(*inputs)
    return compiled, time.perf_counter() - start


def _qidao_fp32(
    path: Path,
    inputs: list[Any],
    want: Any,
    threads: int,
    min_time: float,
    max_runs: int,
) -> dict[str, Any]:
    compiled, compile_s = _compile(path, inputs, threads)
    with phase("run"):
        (got,) = compiled(*inputs)
    atol = RTOL * largest(want)
    err = check_close(got, want, atol, RTOL, "ONNX Runtime's fp32")
    return {
        "compile_s": compile_s,
        "kernels": compiled.stats["kernels"],
        "cache": str(compiled.stats.get("cache", "")),
        "err": err,
        "tol": atol,
        "scale": largest(want),
        **_timed(lambda: compiled(*inputs), min_time, max_runs),
    }


def _qidao_int8(
    path: Path,
    inputs: list[Any],
    want: Any,
    float_out: Any,
    tol: float,
    step: float,
    threads: int,
    min_time: float,
    max_runs: int,
) -> dict[str, Any]:
    compiled, compile_s = _compile(path, inputs, threads)
    with phase("run"):
        (got,) = compiled(*inputs)
    err = check_close(got, want, tol, 0.0, "ONNX Runtime's int8")
    return {
        "compile_s": compile_s,
        "kernels": compiled.stats["kernels"],
        "cache": str(compiled.stats.get("cache", "")),
        "err": err,
        "tol": tol,
        "scale": largest(want),
        "step": step,
        "err_fp32": max_error(got, float_out),
        "scale_fp32": largest(float_out),
        **_timed(lambda: compiled(*inputs), min_time, max_runs),
    }


JobRunner = Callable[..., Job]
"""``run_job`` (a process per job) or ``run_job_here`` (in this process)."""


# -- the rows -----------------------------------------------------------------


@dataclass(frozen=True)
class QuantRow:
    """One model: its four jobs' medians and errors (absolute; the ``*_scale``
    fields are the largest magnitudes the errors are relative to)."""

    model: str
    scheme: str
    threads: int
    qidao_int8_us: float = math.nan
    ort_int8_us: float = math.nan
    qidao_fp32_us: float = math.nan
    ort_fp32_us: float = math.nan
    qidao_int8_compile_s: float = math.nan
    qidao_fp32_compile_s: float = math.nan
    qidao_int8_kernels: int | None = None
    qidao_fp32_kernels: int | None = None
    int8_err: float = math.nan
    """qidao's int8 output against ONNX Runtime's."""
    int8_tol: float = math.nan
    int8_scale: float = math.nan
    step: float = math.nan
    """The int8 output's quantization step (static models)."""
    fp32_err: float = math.nan
    """qidao's fp32 output against ONNX Runtime's."""
    fp32_scale: float = math.nan
    qidao_int8_vs_fp32: float = math.nan
    """qidao's int8 output against the float model (ONNX Runtime's fp32)."""
    ort_int8_vs_fp32: float = math.nan
    float_scale: float = math.nan
    errors: tuple[str, ...] = ()

    @property
    def ort_over_qidao_int8(self) -> float:
        """ONNX Runtime's int8 median over qidao's: above 1, qidao is faster."""
        return self.ort_int8_us / self.qidao_int8_us

    @property
    def qidao_speedup(self) -> float:
        """qidao's fp32 median over its int8: above 1, int8 is faster."""
        return self.qidao_fp32_us / self.qidao_int8_us

    @property
    def ort_speedup(self) -> float:
        """ONNX Runtime's fp32 median over its int8: above 1, int8 is faster."""
        return self.ort_fp32_us / self.ort_int8_us


def plan(names: Sequence[str]) -> list[tuple[str, str]]:
    """The (model, job) to run, in order."""
    return [(name, job) for name in names for job in JOBS]


def run_quant(
    names: Sequence[str] = DEFAULT_MODELS,
    threads: int = 1,
    min_time: float = 1.0,
    max_runs: int = 1000,
    timeout: float = DEFAULT_TIMEOUT,
    csv_path: Path | None = None,
    progress: bool = True,
    runner: JobRunner | None = None,
) -> list[QuantRow]:
    """Run every model's jobs (a tqdm bar on stderr); a :class:`QuantRow` each.
    A model whose build or export failed runs no further job, and one whose
    quantization failed no further int8 job (they would fail the same way)."""
    from tqdm import tqdm

    runner = runner or run_job
    if threads < 1:
        raise ValueError(f"the thread count must be positive, got {threads}")
    for name in names:
        get_quant_model(name)  # an unknown name fails before any work
    done: list[Job] = []
    skip: dict[tuple[str, str], str] = {}  # (model, job or "*") -> why
    bar = tqdm(
        plan(names), desc="quant", unit="job", disable=not progress, file=sys.stderr
    )
    for name, job in bar:
        why = skip.get((name, "*")) or skip.get((name, job))
        if why:
            done.append(Job(name, job, threads, error=f"skipped: {why}"))
            continue
        bar.set_postfix_str(f"{name}/{job}@{threads}")
        result = runner(name, job, threads, min_time, max_runs, timeout=timeout)
        done.append(result)
        if result.error.startswith(("build error", "export error")):
            skip[(name, "*")] = f"{job} failed"
        elif result.error.startswith("quantize error"):
            skip[(name, "qidao-int8")] = f"{job} failed to quantize"
    rows = collect(names, threads, done)
    if csv_path is not None:
        write_csv(rows, csv_path)
    return rows


def collect(names: Sequence[str], threads: int, jobs: Sequence[Job]) -> list[QuantRow]:
    """A row per model from its jobs."""
    rows = []
    for name in names:
        row = QuantRow(name, get_quant_model(name).scheme, threads)
        mine = [j for j in jobs if j.model == name]
        errors = tuple(f"{j.job}: {j.error}" for j in mine if j.error)
        for j in (j for j in mine if not j.error):
            if j.job == "ort-fp32":
                row = replace(row, ort_fp32_us=j.median_us, float_scale=j.scale)
            elif j.job == "ort-int8":
                row = replace(
                    row,
                    ort_int8_us=j.median_us,
                    ort_int8_vs_fp32=j.err_fp32,
                    float_scale=j.scale_fp32,
                    step=j.step,
                )
            elif j.job == "qidao-fp32":
                row = replace(
                    row,
                    qidao_fp32_us=j.median_us,
                    qidao_fp32_compile_s=j.compile_s,
                    qidao_fp32_kernels=j.kernels,
                    fp32_err=j.err,
                    fp32_scale=j.scale,
                )
            elif j.job == "qidao-int8":
                row = replace(
                    row,
                    qidao_int8_us=j.median_us,
                    qidao_int8_compile_s=j.compile_s,
                    qidao_int8_kernels=j.kernels,
                    int8_err=j.err,
                    int8_tol=j.tol,
                    int8_scale=j.scale,
                    step=j.step,
                    qidao_int8_vs_fp32=j.err_fp32,
                    float_scale=j.scale_fp32,
                )
        rows.append(replace(row, errors=errors))
    return rows


def failed_models(rows: Sequence[QuantRow]) -> list[str]:
    """The models with a failed job."""
    return [r.model for r in rows if r.errors]


# -- the table and the CSV ----------------------------------------------------


def _time(us: float) -> str:
    if not math.isfinite(us):
        return "—"
    return f"{us / 1e3:,.2f} ms" if us >= 1e3 else f"{us:,.1f} us"


def _ratio(r: float) -> str:
    return "—" if not math.isfinite(r) else f"{r:.2f}x"


def _relative(err: float, scale: float) -> float:
    return err / scale if scale > 0 else math.nan


def _rel(err: float, scale: float) -> str:
    r = _relative(err, scale)
    return "—" if not math.isfinite(r) else f"{r:.1e}"


def format_table(rows: Sequence[QuantRow]) -> str:
    """The table (see the module docstring) and the failures."""
    w = max([11, *(len(r.model) for r in rows)])
    header = (
        f"{'model':<{w}} {'scheme':<7} {'thr':>3} {'qidao int8':>11} "
        f"{'ORT int8':>11} {'qidao fp32':>11} {'ORT fp32':>11} {'ORT8/q8':>8} "
        f"{'q32/q8':>7} {'O32/O8':>7} {'q8-O8 (tol)':>17} {'q8-fp32':>8} "
        f"{'O8-fp32':>8}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        check = f"{_rel(r.int8_err, r.int8_scale)} ({_rel(r.int8_tol, r.int8_scale)})"
        lines.append(
            f"{r.model:<{w}} {r.scheme:<7} {r.threads:>3} "
            f"{_time(r.qidao_int8_us):>11} {_time(r.ort_int8_us):>11} "
            f"{_time(r.qidao_fp32_us):>11} {_time(r.ort_fp32_us):>11} "
            f"{_ratio(r.ort_over_qidao_int8):>8} {_ratio(r.qidao_speedup):>7} "
            f"{_ratio(r.ort_speedup):>7} {check:>17} "
            f"{_rel(r.qidao_int8_vs_fp32, r.float_scale):>8} "
            f"{_rel(r.ort_int8_vs_fp32, r.float_scale):>8}"
        )
        lines += [f"{'':<{w}}   FAILED {e}" for e in r.errors]
    lines.append("-" * len(header))
    lines.append(
        "ORT8/q8: ONNX Runtime's int8 time over qidao's (above 1: qidao is faster); "
        "q32/q8, O32/O8: fp32 time over int8 (above 1: int8 is faster); errors: "
        "max |difference| over the reference's largest magnitude"
    )
    failed = failed_models(rows)
    lines.append(
        f"\n{len(rows) - len(failed)} of {len(rows)} model(s) passed"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return "\n".join(lines)


def csv_record(r: QuantRow) -> dict[str, str | int]:
    """One CSV line: every measurement of a row (see ``write_csv``)."""

    def num(v: float, fmt: str) -> str:
        return format(v, fmt) if math.isfinite(v) else ""

    def count(n: int | None) -> str:
        return "" if n is None else str(n)

    steps = r.int8_err / r.step if r.step > 0 else math.nan
    return {
        "model": r.model,
        "zoo_model": get_quant_model(r.model).zoo if r.model in MODELS else "",
        "scheme": r.scheme,
        "threads": r.threads,
        "qidao_int8_us": num(r.qidao_int8_us, ".1f"),
        "ort_int8_us": num(r.ort_int8_us, ".1f"),
        "qidao_fp32_us": num(r.qidao_fp32_us, ".1f"),
        "ort_fp32_us": num(r.ort_fp32_us, ".1f"),
        "ort_int8_over_qidao_int8": num(r.ort_over_qidao_int8, ".3f"),
        "qidao_fp32_over_int8": num(r.qidao_speedup, ".3f"),
        "ort_fp32_over_int8": num(r.ort_speedup, ".3f"),
        "qidao_int8_compile_s": num(r.qidao_int8_compile_s, ".3f"),
        "qidao_fp32_compile_s": num(r.qidao_fp32_compile_s, ".3f"),
        "qidao_int8_kernels": count(r.qidao_int8_kernels),
        "qidao_fp32_kernels": count(r.qidao_fp32_kernels),
        "int8_max_err": num(r.int8_err, ".6g"),
        "int8_tol": num(r.int8_tol, ".6g"),
        "int8_rel_err": num(_relative(r.int8_err, r.int8_scale), ".3e"),
        "output_step": num(r.step, ".6g"),
        "int8_err_steps": num(steps, ".2f"),
        "fp32_max_err": num(r.fp32_err, ".6g"),
        "fp32_rel_err": num(_relative(r.fp32_err, r.fp32_scale), ".3e"),
        "qidao_int8_vs_fp32_max_err": num(r.qidao_int8_vs_fp32, ".6g"),
        "ort_int8_vs_fp32_max_err": num(r.ort_int8_vs_fp32, ".6g"),
        "float_largest": num(r.float_scale, ".6g"),
        "error": " | ".join(r.errors),
    }


def write_csv(rows: Sequence[QuantRow], path: Path) -> None:
    """A line per row: ``csv_record``'s fields (times in microseconds, errors
    absolute, ``*_rel_err`` over the reference's largest magnitude)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(csv_record(QuantRow("", "", 0))))
        out.writeheader()
        out.writerows(csv_record(r) for r in rows)


RUNNERS = JobRunners(WORKER, measure, Job)
run_job = RUNNERS.fresh
run_job_here = RUNNERS.here
measure_or_describe = RUNNERS.answer


if __name__ == "__main__":
    serve(measure_or_describe)
