"""``qidao zoo``: models no one here wrote, through qidao, against ORT and PyTorch.

    qidao zoo                           # the full zoo at 1 and 2 threads
    qidao zoo resnet-tiny gpt2-tiny --threads 1   # two tiny models, in seconds
    qidao zoo vit bert --paths onnx     # only the ONNX path
    qidao zoo --list                    # the models and their sizes
    qidao zoo --csv zoo.csv --plot zoo.svg
    qidao zoo --rounds 3                # qidao and ORT timed 3 times, interleaved

The models are ``qidao/bench/zoo_models.py``'s: Hugging Face ``transformers``
vision and text classes built from configs with random weights (no download).
Each goes two ways into qidao, and both must match PyTorch eager (``rtol`` 1e-3,
``atol`` 1e-3 times the largest magnitude of PyTorch's output):

- ``onnx``: the model exported to ONNX (``torch.onnx.export(dynamo=False)``,
  opset 17), then ``qidao.compile(path, threads=T)``;
- ``torch``: ``torch.compile(model, backend=qidao_backend)`` with the thread
  count bound (``qidao_backend`` is the function ``backend="qidao"`` names;
  ``torch.compile`` has no way to hand a custom backend ``threads``); operators
  qidao does not support run in PyTorch, and the CSV lists them.

Every measurement is a job in its own process (``python -m qidao.bench.zoo``,
the threads of every pool pinned as ``qidao bench`` pins them); per model, in order:
PyTorch eager at each thread count; the ONNX path at the first thread count
(its compile time is *cold*: a fresh process), again in a second fresh process
(*warm*: whatever compiling the same model a second time costs), then at the
other thread counts; ONNX Runtime (a CPU session,
``intra_op_num_threads`` = the threads, ``inter_op_num_threads`` 1, sequential)
at each; and the torch path at the first thread count (its compile time is the
first call's: dynamo's capture and qidao's compile). A job's output is checked
before it is timed: 3 warm-up calls, then calls for ``--min-time`` seconds (at
least 5), the median. With ``--rounds R`` the ONNX path's qidao job and ONNX
Runtime's run R times, one after the other at each thread count (the later qidao
runs load the compile cache), and the table has the median of their medians: on a
shared machine whose speed drifts over minutes, each ratio then compares times
taken seconds apart, R times over.

With the compile cache (``qidao/compiler/cache/``) on, *warm* is a load from it,
and *cold* is cold only when no earlier run stored the model: the CSV's ``cache``
column has what the cache said to each compile, and
``QIDAO_CACHE_DIR=$(mktemp -d) qidao zoo`` starts from an empty one.

The table has a row per model and thread count: ``ops`` (tg ops of the imported
graph, constants not counted), ``kernels`` (``compiled.stats["kernels"]``), the
compile times (on the model's first row: cold, warm, and ``torch.c``, the torch
path's first call), the medians of qidao, ONNX Runtime and
PyTorch eager, and ``ORT/qidao`` and ``eager/qidao`` (above 1: qidao is faster),
then a geometric-mean row per thread count. A job that fails (a compile or run
error, a mismatch, a crash, ``--timeout`` seconds without a result) makes its
model a failure: its row says which job failed and the first line of the error,
``internal error`` when the exception is one no user input should cause
(``VerifyException``, ``AssertionError``, ``IndexError``, ``KeyError``). The
command exits 1 when a model failed. ``--plot`` draws ORT/qidao and eager/qidao
per model and thread count as a bar chart (PNG or SVG, by the extension).
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.jobs import DEFAULT_TIMEOUT, JobRunners, Mismatch
from qidao.bench.workloads import _onnxruntime_session, _pyplot, time_calls
from qidao.bench.zoo_models import ZooModel, get_model, onnx_path, reference
from qidao.runtime.worker import serve

WORKER = "qidao.bench.zoo"
"""The module whose worker runs one zoo job."""

PATHS = ("onnx", "torch")
"""The ways into qidao: the ONNX file, torch.compile."""

JOBS = ("eager", "onnx", "onnx-warm", "ort", "torch")
"""What one worker process measures: PyTorch eager, qidao on the ONNX file (cold;
``onnx-warm``: compiled a second time, untimed), ONNX Runtime, torch.compile."""

RTOL = 1e-3
"""The relative tolerance against PyTorch eager; ``atol`` is ``RTOL`` times the
largest magnitude of PyTorch's output."""


@dataclass(frozen=True)
class Job:
    """One worker process's result."""

    model: str
    job: str
    threads: int
    compile_s: float = math.nan
    median_us: float = math.nan
    runs: int = 0
    ops: int | None = None
    kernels: int | None = None
    fallback: str = ""
    """The torch path: the operators that ran in PyTorch, ``;``-separated."""
    cache: str = ""
    """The ONNX path: ``compiled.stats["cache"]`` (the compile cache's hit, miss
    or why it is off), where the compiler reports one."""
    error: str = ""


@dataclass(frozen=True)
class ZooRow:
    """One model at one thread count: what its jobs measured."""

    model: str
    threads: int
    first: bool
    """The model's first thread count: the row that shows its compile times."""
    ops: int | None = None
    kernels: int | None = None
    compile_s: float = math.nan
    """qidao's compile of the ONNX file in this row's process: cold on the
    model's first row."""
    warm_s: float = math.nan
    torch_s: float = math.nan
    torch_kernels: int | None = None
    torch_fallback: str = ""
    cache: str = ""
    """What the compile cache said to the cold and the warm compile."""
    qidao_us: float = math.nan
    torch_us: float = math.nan
    ort_us: float = math.nan
    eager_us: float = math.nan
    errors: tuple[str, ...] = ()

    @property
    def ort_ratio(self) -> float:
        """ONNX Runtime's median over qidao's: above 1, qidao is faster."""
        return self.ort_us / self.qidao_us

    @property
    def eager_ratio(self) -> float:
        """PyTorch eager's median over qidao's: above 1, qidao is faster."""
        return self.eager_us / self.qidao_us


def check_output(got: Any, want: np.ndarray[Any, Any]) -> None:
    """Raise :class:`Mismatch` unless ``got`` is ``want`` within ``RTOL`` and
    ``atol`` = ``RTOL`` times the largest magnitude of ``want``."""
    got = np.asarray(got)
    if got.shape != want.shape:
        raise Mismatch(f"output shape {got.shape}, PyTorch's is {want.shape}")
    atol = RTOL * float(np.max(np.abs(want), initial=0.0))
    if not np.allclose(got, want, rtol=RTOL, atol=atol):
        diff = np.abs(got.astype(np.float64) - want)
        worst = np.unravel_index(
            int(np.argmax(np.nan_to_num(diff, nan=np.inf))), want.shape
        )
        raise Mismatch(
            f"differs from PyTorch at {tuple(int(i) for i in worst)}: got "
            f"{got[worst]:.6g}, expected {want[worst]:.6g} (rtol {RTOL:g}, atol "
            f"{atol:.3g}; {int(np.sum(~np.isclose(got, want, RTOL, atol)))} of "
            f"{want.size} elements differ)"
        )


def count_ops(path: Path) -> int:
    """tg ops of the imported graph (stage ``input``), constants not counted.
    Imported here, not read off the compiled model: a cache hit has no IR, and
    asking for it would compile the model again."""
    from qidao.compiler.models import load_model

    return sum(
        1
        for op in load_model(str(path)).walk()
        if op.name.startswith("tg.") and op.name != "tg.constant"
    )


def measure(
    name: str, job: str, threads: int, min_time: float, max_runs: int
) -> dict[str, Any]:
    """Run ``job`` for zoo model ``name`` in this process: a JSON-able dict, or an
    exception tagged with the phase it happened in (``build``, ``export``,
    ``compile``, ``run``; see :func:`qidao.bench.jobs.describe`)."""
    if job not in JOBS:
        raise ValueError(f"unknown job '{job}'; the jobs are {', '.join(JOBS)}")
    import torch

    torch.set_num_threads(threads)
    with _Phase("build"):
        model = get_model(name)
        inputs = model.inputs()
        want = reference(model, inputs)
    if job == "eager":
        return _eager(model, inputs, want, min_time, max_runs)
    if job == "torch":
        return _torch(model, inputs, want, threads, min_time, max_runs)
    with _Phase("export"):
        path = onnx_path(model)
    if job == "ort":
        return _ort(path, inputs, want, threads, min_time, max_runs)
    return _onnx(path, inputs, want, threads, min_time, max_runs, job)


class _Phase:
    """Tags an exception raised in its block with the phase it happened in (the
    innermost phase wins)."""

    def __init__(self, phase: str) -> None:
        self.phase = phase

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, err: BaseException | None, tb: Any) -> None:
        if isinstance(err, Exception) and not hasattr(err, "phase"):
            err.phase = self.phase  # type: ignore[attr-defined]


def _timed(call: Callable[[], Any], min_time: float, max_runs: int) -> dict[str, Any]:
    with _Phase("run"):
        times = time_calls(call, min_time, max_runs) if min_time > 0 else []
    return {
        "median_us": float(np.median(times)) * 1e6 if times else math.nan,
        "runs": len(times),
    }


def _eager(
    model: ZooModel, inputs: list[Any], want: Any, min_time: float, max_runs: int
) -> dict[str, Any]:
    import torch

    net = model.build()
    args = [torch.from_numpy(a) for a in inputs]
    with torch.inference_mode():
        with _Phase("run"):
            check_output(net(*args).numpy(), want)
        return _timed(lambda: net(*args), min_time, max_runs)


def _onnx(
    path: Path,
    inputs: list[Any],
    want: Any,
    threads: int,
    min_time: float,
    max_runs: int,
    job: str,
) -> dict[str, Any]:
    import qidao
    from qidao import Compiled

    start = time.perf_counter()
    with _Phase("compile"):
        compiled = qidao.compile(str(path), threads=threads)
        if not isinstance(compiled, Compiled):  # compiled at its first call
            compiled(*inputs)
    compile_s = time.perf_counter() - start
    with _Phase("run"):
        (got,) = compiled(*inputs)
    check_output(got, want)
    out: dict[str, Any] = {
        "compile_s": compile_s,
        "kernels": compiled.stats["kernels"],
        "cache": str(compiled.stats.get("cache", "")),
    }
    if job == "onnx-warm":
        return out
    if isinstance(compiled, Compiled):
        out["ops"] = count_ops(path)
    return {**out, **_timed(lambda: compiled(*inputs), min_time, max_runs)}


def _ort(
    path: Path,
    inputs: list[Any],
    want: Any,
    threads: int,
    min_time: float,
    max_runs: int,
) -> dict[str, Any]:
    start = time.perf_counter()
    with _Phase("compile"):
        run = _onnxruntime_session(path, threads, inputs)
    compile_s = time.perf_counter() - start
    with _Phase("run"):
        (got,) = run()
    check_output(got, want)
    return {"compile_s": compile_s, **_timed(run, min_time, max_runs)}


def _torch(
    model: ZooModel,
    inputs: list[Any],
    want: Any,
    threads: int,
    min_time: float,
    max_runs: int,
) -> dict[str, Any]:
    import torch

    from qidao.dynamo_backend import qidao_backend

    graphs: list[Any] = []  # what qidao compiled, one FrozenGraph per dynamo graph

    def backend(gm: Any, example_inputs: Any) -> Any:
        compiled = qidao_backend(gm, example_inputs, threads=threads)
        graphs.append(compiled)
        return compiled

    torch._dynamo.reset()
    fast = torch.compile(model.build(), backend=backend, dynamic=False)
    args = [torch.from_numpy(a) for a in inputs]
    with torch.no_grad():  # not inference_mode: qidao captures with torch.export
        start = time.perf_counter()
        with _Phase("compile"):
            first = fast(*args)
        compile_s = time.perf_counter() - start
        check_output(first.numpy(), want)
        with _Phase("run"):
            check_output(fast(*args).numpy(), want)  # a second call: the cached code
        kernels, fallback = _torch_stats(graphs)
        if kernels == 0:
            raise Mismatch(
                "torch.compile ran no qidao kernel: everything ran in PyTorch "
                f"({fallback or 'no graph reached the backend'})"
            )
        timed = _timed(lambda: fast(*args), min_time, max_runs)
    return {"compile_s": compile_s, "kernels": kernels, "fallback": fallback, **timed}


def _torch_stats(graphs: Sequence[Any]) -> tuple[int, str]:
    """The kernels qidao compiled for dynamo's graphs, and the operators that ran
    in PyTorch (``;``-separated)."""
    kernels = 0
    fallback: set[str] = set()
    for graph in graphs:
        compiled = getattr(graph, "compiled", None)  # FrozenGraph.compiled
        if compiled is None:  # dynamic shapes: the graph ran in PyTorch
            continue
        whole = getattr(compiled, "compiled", None)  # TorchCompiled.compiled
        parts = [whole] if whole is not None else list(compiled.parts)
        kernels += sum(int(p.stats["kernels"]) for p in parts)
        fallback.update(getattr(compiled, "fallback_ops", {}))
    return kernels, ";".join(sorted(fallback))


JobRunner = Callable[..., Job]
"""``run_job`` (a process per job) or ``run_job_here`` (in this process)."""


def plan(
    names: Sequence[str],
    threads: Sequence[int],
    paths: Sequence[str],
    rounds: int = 1,
) -> list[tuple[str, str, int]]:
    """The (model, job, threads) to run, in order (see the module docstring);
    with ``rounds`` > 1, the ONNX path's qidao and ONNX Runtime jobs again, one
    after the other at each thread count, ``rounds - 1`` more times."""
    first, *others = threads
    jobs: list[tuple[str, str, int]] = []
    for name in names:
        jobs += [(name, "eager", t) for t in threads]
        if "onnx" in paths:
            jobs += [(name, "onnx", first), (name, "onnx-warm", first)]
            jobs += [(name, "onnx", t) for t in others]
            jobs += [(name, "ort", t) for t in threads]
            for _ in range(rounds - 1):
                jobs += [(name, j, t) for t in threads for j in ("onnx", "ort")]
        if "torch" in paths:
            jobs.append((name, "torch", first))
    return jobs


def run_zoo(
    names: Sequence[str],
    threads: Sequence[int] = (1, 2),
    paths: Sequence[str] = PATHS,
    min_time: float = 1.0,
    max_runs: int = 1000,
    timeout: float = DEFAULT_TIMEOUT,
    csv_path: Path | None = None,
    plot_path: Path | None = None,
    progress: bool = True,
    runner: JobRunner | None = None,
    rounds: int = 1,
) -> list[ZooRow]:
    """Run every model's jobs; one :class:`ZooRow` per model and thread count
    (``rounds``: see :func:`plan`).

    A model whose PyTorch eager job fails to build it runs no further job; one
    whose cold ONNX compile fails runs no other ONNX qidao job (they would fail
    the same way).
    """
    from tqdm import tqdm

    runner = runner or run_job
    if not threads or any(t < 1 for t in threads):
        raise ValueError(f"thread counts must be positive, got {list(threads)}")
    if rounds < 1:
        raise ValueError(f"rounds must be positive, got {rounds}")
    for name in names:
        get_model(name)  # an unknown name fails before any work
    check_paths(paths)
    if plot_path is not None:
        check_plot_path(plot_path)
    jobs = plan(names, threads, paths, rounds)
    done: list[Job] = []
    skip: set[tuple[str, str]] = set()  # (model, job kind) not to run
    bar = tqdm(jobs, desc="zoo", unit="job", disable=not progress, file=sys.stderr)
    for name, job, t in bar:
        if (name, "*") in skip or (name, job.removesuffix("-warm")) in skip:
            continue
        bar.set_postfix_str(f"{name}/{job}@{t}")
        result = runner(name, job, t, min_time, max_runs, timeout=timeout)
        done.append(result)
        if result.error and job == "eager" and result.error.startswith("build"):
            skip.add((name, "*"))
        if result.error and job == "onnx":
            skip.add((name, "onnx"))
    rows = collect(names, threads, done)
    if csv_path is not None:
        write_csv(rows, csv_path)
    if plot_path is not None:
        plot_ratios(rows, plot_path)
    return rows


def collect(
    names: Sequence[str], threads: Sequence[int], jobs: Sequence[Job]
) -> list[ZooRow]:
    """The rows: each model at each thread count, from its jobs."""
    rows = []
    for name in names:
        mine = [j for j in jobs if j.model == name]
        errors = tuple(f"{j.job}@{j.threads}: {j.error}" for j in mine if j.error)
        for k, t in enumerate(threads):
            row = ZooRow(name, t, first=k == 0, errors=errors if k == 0 else ())
            ok = [j for j in mine if j.threads == t and not j.error]
            # a timing job run in several rounds: its first run (the compile, the
            # cache), the median of the rounds' medians
            rounds = {
                kind: statistics.median(j.median_us for j in ok if j.job == kind)
                for kind in ("onnx", "ort")
                if any(j.job == kind for j in ok)
            }
            ok = list({j.job: j for j in reversed(ok)}.values())  # first of each
            for j in ok:
                if j.job == "onnx":
                    row = replace(
                        row,
                        ops=j.ops,
                        kernels=j.kernels,
                        compile_s=j.compile_s,
                        qidao_us=rounds["onnx"],
                    )
                elif j.job == "onnx-warm":
                    row = replace(row, warm_s=j.compile_s)
                elif j.job == "torch":
                    row = replace(
                        row,
                        torch_s=j.compile_s,
                        torch_us=j.median_us,
                        torch_kernels=j.kernels,
                        torch_fallback=j.fallback,
                    )
                elif j.job == "ort":
                    row = replace(row, ort_us=rounds["ort"])
                elif j.job == "eager":
                    row = replace(row, eager_us=j.median_us)
            cache = "; ".join(f"{j.job}: {j.cache}" for j in ok if j.cache)
            row = replace(row, cache=cache)
            rows.append(row)
    return rows


def failed_models(rows: Sequence[ZooRow]) -> list[str]:
    """The models with a failed job."""
    return list(dict.fromkeys(r.model for r in rows if r.errors))


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of the finite positive ``values`` (NaN if none)."""
    good = [v for v in values if math.isfinite(v) and v > 0]
    return math.exp(sum(map(math.log, good)) / len(good)) if good else math.nan


def _time(us: float) -> str:
    if not math.isfinite(us):
        return "—"
    return f"{us / 1e3:,.2f} ms" if us >= 1e3 else f"{us:,.1f} us"


def _secs(s: float) -> str:
    return "" if not math.isfinite(s) else f"{s:.1f} s"


def _ratio(r: float) -> str:
    return "—" if not math.isfinite(r) else f"{r:.2f}x"


def _count(n: int | None) -> str:
    return "" if n is None else str(n)


def format_table(rows: Sequence[ZooRow]) -> str:
    """The table (see the module docstring), the geometric means, the failures."""
    w = max([12, *(len(r.model) for r in rows)])
    header = (
        f"{'model':<{w}} {'thr':>3} {'ops':>5} {'kernels':>7} {'cold':>8} "
        f"{'warm':>8} {'torch.c':>8} {'qidao':>11} {'ORT':>11} {'eager':>11} "
        f"{'ORT/qidao':>9} {'eager/qidao':>11}"
    )
    lines = [header, "-" * len(header)]
    for k, r in enumerate(rows):
        # the compile times are measured at the first thread count only
        cold, warm, dynamo = (
            (_secs(r.compile_s), _secs(r.warm_s), _secs(r.torch_s))
            if r.first
            else ("", "", "")
        )
        lines.append(
            f"{r.model if r.first else '':<{w}} {r.threads:>3} "
            f"{_count(r.ops):>5} {_count(r.kernels):>7} "
            f"{cold:>8} {warm:>8} {dynamo:>8} "
            f"{_time(r.qidao_us):>11} {_time(r.ort_us):>11} {_time(r.eager_us):>11} "
            f"{_ratio(r.ort_ratio):>9} {_ratio(r.eager_ratio):>11}"
        )
        if k + 1 == len(rows) or rows[k + 1].model != r.model:  # its last row
            lines += [f"{'':<{w}}   {note}" for note in _notes(rows, r.model)]
    lines.append("-" * len(header))
    for t in dict.fromkeys(r.threads for r in rows):
        at = [r for r in rows if r.threads == t]
        lines.append(
            f"{'geomean':<{w}} {t:>3} {'':>5} {'':>7} {'':>8} {'':>8} {'':>8} "
            f"{'':>11} {'':>11} {'':>11} "
            f"{_ratio(geomean([r.ort_ratio for r in at])):>9} "
            f"{_ratio(geomean([r.eager_ratio for r in at])):>11}"
        )
    failed = failed_models(rows)
    models = list(dict.fromkeys(r.model for r in rows))
    lines.append(
        f"\n{len(models) - len(failed)} of {len(models)} model(s) passed"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return "\n".join(lines)


def _notes(rows: Sequence[ZooRow], model: str) -> list[str]:
    """The lines under a model's rows: its failed jobs, and what its torch path
    left to PyTorch."""
    mine = [r for r in rows if r.model == model]
    notes = [f"FAILED {e}" for r in mine for e in r.errors]
    for r in mine:
        if r.torch_fallback:
            ops = ", ".join(op.split(" ")[0] for op in r.torch_fallback.split(";"))
            note = f"torch.compile ran in PyTorch: {ops}"
            notes.append(note if len(note) < 100 else note[:97] + "...")
    return notes


def csv_record(r: ZooRow) -> dict[str, str | int]:
    """One CSV line: every measurement of a row (see ``write_csv``)."""

    def num(v: float, digits: int) -> str:
        return f"{v:.{digits}f}" if math.isfinite(v) else ""

    return {
        "model": r.model,
        "threads": r.threads,
        "ops": _count(r.ops),
        "kernels": _count(r.kernels),
        "compile_s": num(r.compile_s, 3),
        "compile_warm_s": num(r.warm_s, 3),
        "torch_compile_s": num(r.torch_s, 3),
        "torch_kernels": _count(r.torch_kernels),
        "torch_fallback": r.torch_fallback,
        "cache": r.cache,
        "qidao_us": num(r.qidao_us, 1),
        "torch_us": num(r.torch_us, 1),
        "ort_us": num(r.ort_us, 1),
        "eager_us": num(r.eager_us, 1),
        "ort_over_qidao": num(r.ort_ratio, 3),
        "eager_over_qidao": num(r.eager_ratio, 3),
        "error": " | ".join(r.errors),
    }


def write_csv(rows: Sequence[ZooRow], path: Path) -> None:
    """A line per row: ``csv_record``'s fields (``torch_us``: the torch.compile
    path's median; ``cache``: what the compile cache said)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(csv_record(ZooRow("", 0, True))))
        out.writeheader()
        out.writerows(csv_record(r) for r in rows)


PLOT_SUFFIXES = (".png", ".svg")


def check_paths(paths: Sequence[str]) -> None:
    unknown = [p for p in paths if p not in PATHS]
    if unknown or not paths:
        raise ValueError(
            f"unknown path(s) {', '.join(unknown) or '(none given)'}; the paths are: "
            f"{', '.join(PATHS)}"
        )


def check_plot_path(path: Path) -> None:
    """A PNG or SVG path, with matplotlib installed; else an error before any run."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise ValueError(f"--plot {path}: the file must end in .png or .svg")
    _pyplot()


LABELLED_MODELS = 16
"""Up to this many models, each bar is labelled with its value (the CSV has them)."""


def plot_ratios(rows: Sequence[ZooRow], path: Path) -> None:
    """Bars of ORT/qidao and eager/qidao per model, one per thread count, on a log
    scale; a failed model is marked ``failed``."""
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    models = list(dict.fromkeys(r.model for r in rows))
    threads = list(dict.fromkeys(r.threads for r in rows))
    by_key = {(r.model, r.threads): r for r in rows}
    series = [
        (f"{label}, {t} thread{'s' if t > 1 else ''}", t, get)
        for label, get in (
            ("ORT/qidao", lambda r: r.ort_ratio),
            ("eager/qidao", lambda r: r.eager_ratio),
        )
        for t in threads
    ]
    many = len(models) > LABELLED_MODELS  # the whole zoo: no value on each bar
    per_model = 0.3 * len(series) if many else 1.1
    fig, ax = plt.subplots(figsize=(max(7.0, per_model * len(models) + 2), 4.5))
    width = 0.8 / len(series)
    for k, (label, t, get) in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(models))]
        ys = [get(by_key[(m, t)]) if (m, t) in by_key else math.nan for m in models]
        ys = [y if math.isfinite(y) else 0.0 for y in ys]
        bars = ax.bar(xs, ys, width, label=label)
        if not many:
            labels = [f"{y:.2g}x" if y else "" for y in ys]
            ax.bar_label(bars, labels=labels, fontsize=6)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    for i, m in enumerate(models):
        if any(r.errors for r in rows if r.model == m):
            ax.text(i, 1.0, "failed", ha="center", va="bottom", color="red", size=8)
    ax.set_xticks(range(len(models)), models, rotation=60 if many else 30, ha="right")
    ax.set_xlim(-0.6, len(models) - 0.4)
    ax.grid(axis="y", which="major", linewidth=0.3)
    ax.set_ylabel("time / qidao's time (above 1: qidao is faster)")
    ax.set_title("qidao zoo: ONNX Runtime and PyTorch eager over qidao, medians")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


RUNNERS = JobRunners(WORKER, measure, Job)
run_job = RUNNERS.fresh
run_job_here = RUNNERS.here
measure_or_describe = RUNNERS.answer


if __name__ == "__main__":
    serve(measure_or_describe)
