"""``qidao bench bf16``: bfloat16 inference, qidao against PyTorch eager.

    qidao bench bf16                        # mlp, bert and gpt2 at one thread
    qidao bench bf16 bert --threads 2 --min-time 2 --csv bf16.csv
    qidao bench bf16 mlp-tiny bert-tiny     # the tiny test models, in seconds

What is measured. Each model (``qidao/bench/bf16_models.py``: a feed-forward
block, a 2-layer BERT and a 2-layer GPT-2 at BERT-base's widths, random weights)
runs five ways, each timed at the same thread count in the same invocation:

- ``torch-fp32``: PyTorch eager on the float32 model;
- ``torch-bf16``: PyTorch eager on the model ``.to(torch.bfloat16)`` (its CPU
  kernels: oneDNN's, AMX or AVX512_BF16 where the CPU has them);
- ``qidao-fp32``: ``qidao.compile`` of the float32 module;
- ``qidao-bf16``: ``qidao.compile`` of the bfloat16 module: each op widened to
  float32 and its result rounded back (``qidao/frontend/torch/narrow.py``), the
  matmuls by a constant weight ``tg.matmul_bf16`` (``bf16-matmul``) on AMX tiles
  (``tdpbf16ps``) where the CPU has AMX-BF16 and the shapes allow, else on
  AVX512_BF16 registers (``vdpbf16ps``), the weights stored in bfloat16;
- ``qidao-bf16-f32``: the same bfloat16 module with ``bf16=False``: the same
  graph with the matmuls in float32 FMAs on the widened weights (the conversion
  path).

ONNX Runtime is not a reference here: its CPU provider has no bfloat16
``MatMul``/``Gemm``. The modules go to qidao directly (``qidao.compile(module,
example_inputs=..., threads=T)``: a ``TorchCompiled``); operators qidao does not
compute (the text models' integer position and mask arithmetic) run in PyTorch
between qidao's parts, and the CSV lists them.

How. Every job is a fresh process (``python -m qidao.bench.bf16``, the runtime's
worker harness, ``qidao/runtime/worker.py``) with its thread pools pinned and
``torch.set_num_threads`` the threads, under ``torch.no_grad()``. A job checks
its output before timing it (a failed check makes the job an error, never a
time): 3 warm-up calls, then calls for ``--min-time`` seconds (at least 5), the
median. The references are PyTorch eager's outputs, computed in the job's own
process before the compile:

- ``qidao-fp32`` against ``torch-fp32``'s output, as the zoo checks
  (``rtol`` 1e-3, ``atol`` 1e-3 of the largest magnitude);
- ``qidao-bf16`` and ``qidao-bf16-f32`` against ``torch-bf16``'s output within
  4 bfloat16 ulps of its largest magnitude (2**-6 to 2**-5 of it; measured
  errors up to 2 ulps: ``qidao/bench/bf16_models.py``'s docstring says why); ``qidao-bf16-f32`` must also have computed no bfloat16 product;
- ``torch-bf16``, ``qidao-bf16`` and ``qidao-bf16-f32`` are also compared with
  the float32 model (``torch-fp32``'s output on the float32 input): what
  bfloat16 costs, informational only.

The table (:func:`format_table`) starts with the CPU's line (its AVX512_BF16,
AMX-BF16, and whether the process got the AMX tiles) and has a row per model:
the five medians, then

- ``eager16/q16``: PyTorch's bfloat16 median over qidao's (above 1: qidao is
  faster);
- ``q32/q16``: qidao's float32 median over its bfloat16 (what native bfloat16
  buys in qidao);
- ``q16f/q16``: the conversion path's median over the native one (what the
  bfloat16 products buy over float32 FMAs on the same graph);
- ``eager32/q16``: PyTorch's float32 median over qidao's bfloat16;
- ``q16-e16 (tol)``: ``qidao-bf16``'s error against PyTorch's bfloat16 and the
  tolerance, ``q16f-e16`` the conversion path's, and ``q16-fp32``, ``e16-fp32``
  qidao's and PyTorch's bfloat16 errors against the float32 model, all as
  fractions of the reference's largest magnitude;
- ``bf16 hw``: what ``qidao-bf16``'s bfloat16 matmuls ran on, from its default
  schedule's text (``tdpbf16ps``: ``AMX``, ``vdpbf16ps``: ``AVX512_BF16``, none:
  ``float32``) and how many distinct kernels (a kernel that the next layer
  calls again, or the same product for Q, K and V, counts once).

The CSV has every field (times in microseconds, absolute errors, the errors in
bfloat16 ulps, compile times, kernel counts, the operators left to PyTorch). A
failed job (compile or run error, mismatch, crash, timeout) is named under its
model's row, and the command exits 1.
"""

from __future__ import annotations

import csv
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.bf16_models import (
    DEFAULT_MODELS,
    MODELS,
    bf16_counts,
    bf16_tolerance,
    bf16_ulp,
    get_bf16_model,
    hardware,
    parts,
)
from qidao.bench.jobs import DEFAULT_TIMEOUT, JobRunners, Mismatch
from qidao.bench.quant import _ratio, _rel, _relative, _time, _timed, phase
from qidao.bench.quant_models import check_close, largest, max_error
from qidao.bench.zoo import RTOL
from qidao.runtime.worker import serve

WORKER = "qidao.bench.bf16"
"""The module whose worker runs one bf16 job."""

JOBS = ("torch-fp32", "torch-bf16", "qidao-fp32", "qidao-bf16", "qidao-bf16-f32")
"""A model's jobs, in the order they run."""

DEFAULT_CSV = "bench-results/bf16.csv"


# -- the jobs -----------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One worker process's result (errors are absolute; ``scale`` is the
    largest magnitude of the reference they were measured against)."""

    model: str
    job: str
    threads: int
    compile_s: float = math.nan
    """qidao's compile (the PyTorch jobs have none)."""
    median_us: float = math.nan
    runs: int = 0
    kernels: int | None = None
    cache: str = ""
    fallback: str = ""
    """The operators that ran in PyTorch, ``;``-separated."""
    bf16_amx: int | None = None
    """Distinct kernels on AMX tiles (``tdpbf16ps``)."""
    bf16_avx512: int | None = None
    """Distinct kernels on AVX512_BF16 registers (``vdpbf16ps``)."""
    err: float = math.nan
    """The checked error: ``qidao-fp32`` against PyTorch's float32, the qidao
    bfloat16 jobs against PyTorch's bfloat16."""
    tol: float = math.nan
    scale: float = math.nan
    err_fp32: float = math.nan
    """A bfloat16 job's error against the float32 model (``torch-fp32``'s output)."""
    scale_fp32: float = math.nan
    error: str = ""


def measure(
    name: str, job: str, threads: int, min_time: float, max_runs: int
) -> dict[str, Any]:
    """Run ``job`` for model ``name`` in this process: a JSON-able dict of
    :class:`Job`'s fields, or an exception tagged with its phase (``build``,
    ``reference``, ``compile``, ``run``)."""
    model = get_bf16_model(name)
    if job not in JOBS:
        raise ValueError(f"unknown job '{job}'; the jobs are {', '.join(JOBS)}")
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():  # not inference_mode: qidao captures with torch.export
        with phase("build"):
            net32, inputs32 = model.float32()
        with phase("reference"):
            want32 = _numpy(net32(*inputs32))
        if job == "torch-fp32":
            return {
                "scale": largest(want32),
                **_timed_call(net32, inputs32, min_time, max_runs),
            }
        if job == "qidao-fp32":
            return _qidao(net32, inputs32, want32, None, threads, min_time, max_runs)
        del net32
        with phase("build"):
            net16, inputs16 = model.bfloat16()
        with phase("reference"):
            want16 = _numpy(net16(*inputs16))
        if job == "torch-bf16":
            if not np.all(np.isfinite(want16)):
                raise Mismatch("PyTorch's bfloat16 output is not finite")
            return {
                "scale": largest(want16),
                "err_fp32": max_error(want16, want32),
                "scale_fp32": largest(want32),
                **_timed_call(net16, inputs16, min_time, max_runs),
            }
        return _qidao(
            net16,
            inputs16,
            want16,
            want32,
            threads,
            min_time,
            max_runs,
            native=job == "qidao-bf16",
        )


def _numpy(out: Any) -> np.ndarray[Any, Any]:
    """A model's output tensor as a float32 NumPy array (bfloat16 widens exactly)."""
    import torch

    return out.detach().to(torch.float32).numpy()  # type: ignore[no-any-return]


def _timed_call(
    net: Any, inputs: Sequence[Any], min_time: float, max_runs: int
) -> dict[str, Any]:
    with phase("run"):
        net(*inputs)  # a first call outside the timing (and errors here: "run")
    return _timed(lambda: net(*inputs), min_time, max_runs)


def _qidao(
    net: Any,
    inputs: Sequence[Any],
    want: np.ndarray[Any, Any],
    want32: np.ndarray[Any, Any] | None,
    threads: int,
    min_time: float,
    max_runs: int,
    native: bool = True,
) -> dict[str, Any]:
    """A qidao job: ``want32`` None for ``qidao-fp32`` (``want`` is the float32
    reference), else a bfloat16 job (``want`` PyTorch's bfloat16 output;
    ``native`` False: ``bf16=False``)."""
    import qidao

    options: dict[str, Any] = {} if native else {"bf16": False}
    start = time.perf_counter()
    with phase("compile"):
        compiled = qidao.compile(
            net, example_inputs=tuple(inputs), threads=threads, **options
        )
    compile_s = time.perf_counter() - start
    with phase("run"):
        got = _numpy(compiled(*inputs))
    amx, avx512 = bf16_counts(compiled)
    if want32 is None:
        atol = RTOL * largest(want)
        err = check_close(got, want, atol, RTOL, "PyTorch eager's float32")
        checked = {"err": err, "tol": atol}
    else:
        tol = bf16_tolerance(want)
        err = check_close(got, want, tol, 0.0, "PyTorch eager's bfloat16")
        if not native and amx + avx512:
            raise Mismatch(
                f"bf16=False, yet {amx + avx512} kernel(s) computed bfloat16 products"
            )
        checked = {
            "err": err,
            "tol": tol,
            "err_fp32": max_error(got, want32),
            "scale_fp32": largest(want32),
        }
    pieces = parts(compiled)
    return {
        "compile_s": compile_s,
        "kernels": sum(int(p.stats["kernels"]) for p in pieces),
        "cache": ";".join(sorted({str(p.stats.get("cache", "")) for p in pieces})),
        "fallback": ";".join(sorted(getattr(compiled, "fallback_ops", {}))),
        "bf16_amx": amx,
        "bf16_avx512": avx512,
        "scale": largest(want),
        **checked,
        **_timed(lambda: compiled(*inputs), min_time, max_runs),
    }


JobRunner = Callable[..., Job]
"""``run_job`` (a process per job) or ``run_job_here`` (in this process)."""


# -- the rows -----------------------------------------------------------------


@dataclass(frozen=True)
class Bf16Row:
    """One model: its five jobs' medians and errors (absolute; the ``*_scale``
    fields are the largest magnitudes the errors are relative to)."""

    model: str
    threads: int
    torch_fp32_us: float = math.nan
    torch_bf16_us: float = math.nan
    qidao_fp32_us: float = math.nan
    qidao_bf16_us: float = math.nan
    qidao_bf16_f32_us: float = math.nan
    """The conversion path (``bf16=False``)."""
    qidao_fp32_compile_s: float = math.nan
    qidao_bf16_compile_s: float = math.nan
    qidao_bf16_f32_compile_s: float = math.nan
    qidao_fp32_kernels: int | None = None
    qidao_bf16_kernels: int | None = None
    qidao_bf16_f32_kernels: int | None = None
    bf16_amx: int | None = None
    """``qidao-bf16``'s kernels on AMX tiles."""
    bf16_avx512: int | None = None
    """``qidao-bf16``'s kernels on AVX512_BF16 registers."""
    fallback: str = ""
    """The operators ``qidao-bf16`` left to PyTorch."""
    fp32_err: float = math.nan
    """qidao's float32 output against PyTorch's."""
    fp32_tol: float = math.nan
    fp32_scale: float = math.nan
    bf16_err: float = math.nan
    """qidao's bfloat16 output against PyTorch's bfloat16."""
    bf16_f32_err: float = math.nan
    """The conversion path's output against PyTorch's bfloat16."""
    bf16_tol: float = math.nan
    bf16_scale: float = math.nan
    qidao_bf16_vs_fp32: float = math.nan
    """qidao's bfloat16 output against the float32 model (PyTorch's float32)."""
    qidao_bf16_f32_vs_fp32: float = math.nan
    torch_bf16_vs_fp32: float = math.nan
    float_scale: float = math.nan
    cpu: str = ""
    """The CPU's line (:func:`qidao.bench.bf16_models.cpu_flags`)."""
    errors: tuple[str, ...] = ()

    @property
    def eager16_over_q16(self) -> float:
        """PyTorch's bfloat16 median over qidao's: above 1, qidao is faster."""
        return self.torch_bf16_us / self.qidao_bf16_us

    @property
    def q32_over_q16(self) -> float:
        """qidao's float32 median over its bfloat16: above 1, bfloat16 is faster."""
        return self.qidao_fp32_us / self.qidao_bf16_us

    @property
    def q16f_over_q16(self) -> float:
        """The conversion path's median over the native bfloat16 one."""
        return self.qidao_bf16_f32_us / self.qidao_bf16_us

    @property
    def eager32_over_q16(self) -> float:
        """PyTorch's float32 median over qidao's bfloat16."""
        return self.torch_fp32_us / self.qidao_bf16_us

    @property
    def hardware(self) -> str:
        """What ``qidao-bf16``'s bfloat16 matmuls ran on (``—`` without a result)."""
        if self.bf16_amx is None or self.bf16_avx512 is None:
            return "—"
        return hardware(self.bf16_amx, self.bf16_avx512)


def plan(names: Sequence[str]) -> list[tuple[str, str]]:
    """The (model, job) to run, in order."""
    return [(name, job) for name in names for job in JOBS]


def run_bf16(
    names: Sequence[str] = DEFAULT_MODELS,
    threads: int = 1,
    min_time: float = 1.0,
    max_runs: int = 1000,
    timeout: float = DEFAULT_TIMEOUT,
    csv_path: Path | None = None,
    progress: bool = True,
    runner: JobRunner | None = None,
) -> list[Bf16Row]:
    """Run every model's jobs (a tqdm bar on stderr); a :class:`Bf16Row` each.
    A model whose build failed runs no further job (they would fail the same
    way)."""
    from tqdm import tqdm

    from qidao.bench.bf16_models import cpu_flags

    runner = runner or run_job
    if threads < 1:
        raise ValueError(f"the thread count must be positive, got {threads}")
    for name in names:
        get_bf16_model(name)  # an unknown name fails before any work
    done: list[Job] = []
    skipped: dict[str, str] = {}  # model -> why
    bar = tqdm(
        plan(names), desc="bf16", unit="job", disable=not progress, file=sys.stderr
    )
    for name, job in bar:
        if name in skipped:
            done.append(Job(name, job, threads, error=f"skipped: {skipped[name]}"))
            continue
        bar.set_postfix_str(f"{name}/{job}@{threads}")
        result = runner(name, job, threads, min_time, max_runs, timeout=timeout)
        done.append(result)
        if result.error.startswith("build error"):
            skipped[name] = f"{job} failed to build the model"
    cpu = cpu_flags()
    rows = [replace(row, cpu=cpu) for row in collect(names, threads, done)]
    if csv_path is not None:
        write_csv(rows, csv_path)
    return rows


def collect(names: Sequence[str], threads: int, jobs: Sequence[Job]) -> list[Bf16Row]:
    """A row per model from its jobs."""
    rows = []
    for name in names:
        row = Bf16Row(name, threads)
        mine = [j for j in jobs if j.model == name]
        errors = tuple(f"{j.job}: {j.error}" for j in mine if j.error)
        for j in (j for j in mine if not j.error):
            if j.job == "torch-fp32":
                row = replace(row, torch_fp32_us=j.median_us, float_scale=j.scale)
            elif j.job == "torch-bf16":
                row = replace(
                    row,
                    torch_bf16_us=j.median_us,
                    torch_bf16_vs_fp32=j.err_fp32,
                    float_scale=j.scale_fp32,
                )
            elif j.job == "qidao-fp32":
                row = replace(
                    row,
                    qidao_fp32_us=j.median_us,
                    qidao_fp32_compile_s=j.compile_s,
                    qidao_fp32_kernels=j.kernels,
                    fp32_err=j.err,
                    fp32_tol=j.tol,
                    fp32_scale=j.scale,
                )
            elif j.job == "qidao-bf16":
                row = replace(
                    row,
                    qidao_bf16_us=j.median_us,
                    qidao_bf16_compile_s=j.compile_s,
                    qidao_bf16_kernels=j.kernels,
                    bf16_amx=j.bf16_amx,
                    bf16_avx512=j.bf16_avx512,
                    fallback=j.fallback,
                    bf16_err=j.err,
                    bf16_tol=j.tol,
                    bf16_scale=j.scale,
                    qidao_bf16_vs_fp32=j.err_fp32,
                    float_scale=j.scale_fp32,
                )
            elif j.job == "qidao-bf16-f32":
                row = replace(
                    row,
                    qidao_bf16_f32_us=j.median_us,
                    qidao_bf16_f32_compile_s=j.compile_s,
                    qidao_bf16_f32_kernels=j.kernels,
                    bf16_f32_err=j.err,
                    bf16_tol=j.tol,
                    bf16_scale=j.scale,
                    qidao_bf16_f32_vs_fp32=j.err_fp32,
                    float_scale=j.scale_fp32,
                )
        rows.append(replace(row, errors=errors))
    return rows


def failed_models(rows: Sequence[Bf16Row]) -> list[str]:
    """The models with a failed job."""
    return [r.model for r in rows if r.errors]


# -- the table and the CSV ----------------------------------------------------


def _hw(r: Bf16Row) -> str:
    if r.bf16_amx is None or r.bf16_avx512 is None:
        return "—"
    kernels = r.bf16_amx + r.bf16_avx512
    return r.hardware + (f" ({kernels} kernels)" if kernels else "")


def format_table(rows: Sequence[Bf16Row]) -> str:
    """The CPU's line, the table (see the module docstring) and the failures."""
    w = max([8, *(len(r.model) for r in rows)])
    header = (
        f"{'model':<{w}} {'thr':>3} {'torch fp32':>10} {'torch bf16':>10} "
        f"{'qidao fp32':>10} {'qidao bf16':>10} {'q bf16-f32':>10} "
        f"{'eager16/q16':>11} {'q32/q16':>7} {'q16f/q16':>8} {'eager32/q16':>11} "
        f"{'q16-e16 (tol)':>17} {'q16f-e16':>8} {'q16-fp32':>8} {'e16-fp32':>8} "
        "bf16 hw"
    )
    cpus = sorted({r.cpu for r in rows if r.cpu})
    lines = [*cpus, header, "-" * len(header)]
    for r in rows:
        check = f"{_rel(r.bf16_err, r.bf16_scale)} ({_rel(r.bf16_tol, r.bf16_scale)})"
        lines.append(
            f"{r.model:<{w}} {r.threads:>3} "
            f"{_time(r.torch_fp32_us):>10} {_time(r.torch_bf16_us):>10} "
            f"{_time(r.qidao_fp32_us):>10} {_time(r.qidao_bf16_us):>10} "
            f"{_time(r.qidao_bf16_f32_us):>10} "
            f"{_ratio(r.eager16_over_q16):>11} {_ratio(r.q32_over_q16):>7} "
            f"{_ratio(r.q16f_over_q16):>8} {_ratio(r.eager32_over_q16):>11} "
            f"{check:>17} {_rel(r.bf16_f32_err, r.bf16_scale):>8} "
            f"{_rel(r.qidao_bf16_vs_fp32, r.float_scale):>8} "
            f"{_rel(r.torch_bf16_vs_fp32, r.float_scale):>8} {_hw(r):<12}".rstrip()
        )
        lines += [f"{'':<{w}}   FAILED {e}" for e in r.errors]
    lines.append("-" * len(header))
    lines.append(
        "eager16/q16: PyTorch's bf16 time over qidao's (above 1: qidao is faster); "
        "q32/q16: qidao's fp32 over its bf16; q16f/q16: bf16=False (float32 FMAs) "
        "over native bf16; eager32/q16: PyTorch's fp32 over qidao's bf16; errors: "
        "max |difference| over the reference's largest magnitude; bf16 hw: what "
        "qidao-bf16's matmuls ran on (its distinct bfloat16 kernels)"
    )
    failed = failed_models(rows)
    lines.append(
        f"\n{len(rows) - len(failed)} of {len(rows)} model(s) passed"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return "\n".join(lines)


def csv_record(r: Bf16Row) -> dict[str, str | int]:
    """One CSV line: every measurement of a row (see ``write_csv``)."""

    def num(v: float, fmt: str) -> str:
        return format(v, fmt) if math.isfinite(v) else ""

    def count(n: int | None) -> str:
        return "" if n is None else str(n)

    ulp = bf16_ulp(r.bf16_scale) if math.isfinite(r.bf16_scale) else math.nan
    ulps = (lambda e: e / ulp) if ulp > 0 else (lambda e: math.nan)
    return {
        "model": r.model,
        "summary": MODELS[r.model].summary if r.model in MODELS else "",
        "threads": r.threads,
        "torch_fp32_us": num(r.torch_fp32_us, ".1f"),
        "torch_bf16_us": num(r.torch_bf16_us, ".1f"),
        "qidao_fp32_us": num(r.qidao_fp32_us, ".1f"),
        "qidao_bf16_us": num(r.qidao_bf16_us, ".1f"),
        "qidao_bf16_f32_us": num(r.qidao_bf16_f32_us, ".1f"),
        "torch_bf16_over_qidao_bf16": num(r.eager16_over_q16, ".3f"),
        "qidao_fp32_over_qidao_bf16": num(r.q32_over_q16, ".3f"),
        "qidao_bf16_f32_over_qidao_bf16": num(r.q16f_over_q16, ".3f"),
        "torch_fp32_over_qidao_bf16": num(r.eager32_over_q16, ".3f"),
        "qidao_fp32_compile_s": num(r.qidao_fp32_compile_s, ".3f"),
        "qidao_bf16_compile_s": num(r.qidao_bf16_compile_s, ".3f"),
        "qidao_bf16_f32_compile_s": num(r.qidao_bf16_f32_compile_s, ".3f"),
        "qidao_fp32_kernels": count(r.qidao_fp32_kernels),
        "qidao_bf16_kernels": count(r.qidao_bf16_kernels),
        "qidao_bf16_f32_kernels": count(r.qidao_bf16_f32_kernels),
        "bf16_hardware": "" if r.hardware == "—" else r.hardware,
        "bf16_amx_kernels": count(r.bf16_amx),
        "bf16_avx512_kernels": count(r.bf16_avx512),
        "fp32_max_err": num(r.fp32_err, ".6g"),
        "fp32_tol": num(r.fp32_tol, ".6g"),
        "fp32_rel_err": num(_relative(r.fp32_err, r.fp32_scale), ".3e"),
        "bf16_max_err": num(r.bf16_err, ".6g"),
        "bf16_f32_max_err": num(r.bf16_f32_err, ".6g"),
        "bf16_tol": num(r.bf16_tol, ".6g"),
        "bf16_rel_err": num(_relative(r.bf16_err, r.bf16_scale), ".3e"),
        "bf16_f32_rel_err": num(_relative(r.bf16_f32_err, r.bf16_scale), ".3e"),
        "bf16_err_ulps": num(ulps(r.bf16_err), ".2f"),
        "bf16_f32_err_ulps": num(ulps(r.bf16_f32_err), ".2f"),
        "bf16_largest": num(r.bf16_scale, ".6g"),
        "qidao_bf16_vs_fp32_max_err": num(r.qidao_bf16_vs_fp32, ".6g"),
        "qidao_bf16_f32_vs_fp32_max_err": num(r.qidao_bf16_f32_vs_fp32, ".6g"),
        "torch_bf16_vs_fp32_max_err": num(r.torch_bf16_vs_fp32, ".6g"),
        "float_largest": num(r.float_scale, ".6g"),
        "fallback_ops": r.fallback,
        "cpu": r.cpu,
        "error": " | ".join(r.errors),
    }


def write_csv(rows: Sequence[Bf16Row], path: Path) -> None:
    """A line per row: ``csv_record``'s fields (times in microseconds, errors
    absolute, ``*_rel_err`` over the reference's largest magnitude, ``*_ulps`` in
    bfloat16 ulps at it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(csv_record(Bf16Row("", 0))))
        out.writeheader()
        out.writerows(csv_record(r) for r in rows)


RUNNERS = JobRunners(WORKER, measure, Job)
run_job = RUNNERS.fresh
run_job_here = RUNNERS.here
measure_or_describe = RUNNERS.answer


if __name__ == "__main__":
    serve(measure_or_describe)
