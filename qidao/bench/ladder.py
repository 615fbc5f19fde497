"""``qidao bench ladder``: matmul N×N float32 up the schedule ladder, rung by rung.

Each rung is a named schedule (a function of a :class:`Schedule`) applied to the
kernel ``main_k0_matmul`` of the builder graph ``x @ w``; its exact trace (the
replayable Python of ``compiled.stats["schedule"]``) goes with its number into the
table and the CSV. Rungs, cumulative::

    naive      i, j, k: the default i, k, j reordered to the textbook dot-product order
    split      i and j tiled (TILE_I × TILE_J), still i_o, j_o, i_i, j_i, k
    reorder    k moved outside the tile: i_o, j_o, k, i_i, j_i (row of B reused)
    vectorize  the innermost j_i on <16 x float>
    parallel   i_o on ``threads`` libgomp threads (threads=1: the previous rung)
    cache_write an 8 × 32 register tile of C in a local buffer, unrolled, i_o
               parallel (only when ``Schedule`` has ``cache_write``)
    cache_read the same tile with j_o outermost and B's K × 32 panel packed into a
               contiguous local buffer once per j_o; j_o parallel
    tuned      a row "not implemented yet" until the tuner exists; never faked.

Every rung and baseline runs in its own process (a worker of
``qidao/runtime/worker.py`` running ``python -m qidao.bench.ladder``) with
``OMP_NUM_THREADS``/``MKL_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` pinned to
``threads``; each checks its output against NumPy
(float64 reference, rtol 1e-3) before any timing, then reports the median of its
timed calls (``qidao/runtime/timing.py``: one untimed warm-up call, then at least
``min_calls`` calls and ``min_time`` seconds, at most ``max_calls`` calls). Baselines from the same invocation:
PyTorch eager (``torch.set_num_threads``) and NumPy (``np.matmul`` into a
preallocated output; its process alone runs without ``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE``).

Peak: *measured*, not quoted. A worker JIT-compiles (llvmlite, host CPU and
features) a loop of 16 independent ``<16 x float>`` ``llvm.fma`` chains, which no
memory traffic limits, and times it on one thread; peak = that one-core FLOP/s ×
``threads`` (the ladder's threads run one per core). "best library" (the faster of
PyTorch and NumPy) is reported beside it.
"""

from __future__ import annotations

import csv
import os
import statistics
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule
from qidao.runtime.timing import time_calls
from qidao.runtime.worker import run_once, serve

KERNEL = "main_k0_matmul"
TILE_I = 8
TILE_J = 256
WIDTH = 16
RTOL = 1e-3


# --- the rungs ----------------------------------------------------------------


def naive(s: Schedule) -> None:
    """i, j, k: one dot product per output element (B read down a column)."""
    s.reorder(KERNEL, "i", "j", "k")


def split(s: Schedule) -> None:
    """Tile i and j; the tile loops stay in the naive order, k innermost."""
    s.split(KERNEL, "i", TILE_I)
    s.split(KERNEL, "j", TILE_J)
    s.reorder(KERNEL, "i_o", "j_o", "i_i", "j_i", "k")


def reorder(s: Schedule) -> None:
    """k outside the tile: each B row segment is reused across the tile's rows and
    the innermost loop walks C and B contiguously."""
    s.split(KERNEL, "i", TILE_I)
    s.split(KERNEL, "j", TILE_J)
    s.reorder(KERNEL, "i_o", "j_o", "k", "i_i", "j_i")


def vectorize(s: Schedule) -> None:
    """The innermost j_i on ``<16 x float>`` vectors."""
    reorder(s)
    s.vectorize(KERNEL, "j_i", WIDTH)


def parallel(s: Schedule) -> None:
    """The outermost tile loop i_o on worker threads (libgomp)."""
    vectorize(s)
    s.parallel(KERNEL, "i_o")


REG_I = 8
REG_J = 32


def cache_write(s: Schedule) -> None:
    """The register tile (the recipe of ``qidao/passes/schedule/cache_write.py``): REG_I ×
    REG_J of C (8 × 32: sixteen ``<16 x float>``) accumulated in a local buffer
    (``cache_write`` at j_o), j_i and the copy loops' inner loops vectorized, the
    rest of the tile fully unrolled so LLVM keeps it in registers; i_o parallel as
    in the rung before."""
    s.split(KERNEL, "i", REG_I)
    s.split(KERNEL, "j", REG_J)
    s.reorder(KERNEL, "i_o", "j_o", "k", "i_i", "j_i")
    s.cache_write(KERNEL, "j_o")
    s.vectorize(KERNEL, "j_i", WIDTH)
    s.vectorize(KERNEL, "j_o_cw_i1", WIDTH)
    s.vectorize(KERNEL, "j_o_wb_i1", WIDTH)
    s.unroll(KERNEL, "j_i", 0)
    s.unroll(KERNEL, "i_i", 0)
    s.unroll(KERNEL, "j_o_cw_i0", 0)
    s.unroll(KERNEL, "j_o_wb_i0", 0)
    s.parallel(KERNEL, "i_o")


def cache_read(s: Schedule) -> None:
    """The register tile of the rung before on a packed panel of B: j_o outermost
    (``reorder(j_o, i_o, k, i_i, j_i)``), the K × REG_J panel of B copied once per
    j_o into a contiguous local buffer (``cache_read`` at j_o, its copy vectorized),
    so the tile streams 128-byte rows instead of rows N floats apart; the C tile in
    registers (``cache_write`` at i_o), j_o on worker threads (each packs its own
    panels)."""
    s.split(KERNEL, "i", REG_I)
    s.split(KERNEL, "j", REG_J)
    s.reorder(KERNEL, "j_o", "i_o", "k", "i_i", "j_i")
    s.cache_write(KERNEL, "i_o")
    s.cache_read(KERNEL, "j_o", "w")
    s.parallel(KERNEL, "j_o")
    s.vectorize(KERNEL, "j_i", WIDTH)
    s.vectorize(KERNEL, "i_o_cw_i1", WIDTH)
    s.vectorize(KERNEL, "i_o_wb_i1", WIDTH)
    s.vectorize(KERNEL, "j_o_cr_i1", WIDTH)
    s.unroll(KERNEL, "j_i", 0)
    s.unroll(KERNEL, "i_i", 0)
    s.unroll(KERNEL, "i_o_cw_i0", 0)
    s.unroll(KERNEL, "i_o_wb_i0", 0)
    s.unroll(KERNEL, "j_o_cr_i1", 0)


WORKER = "qidao.bench.ladder"
"""The module whose worker measures one rung, baseline or the peak."""
RECORDS_ENV = "QIDAO_LADDER_RECORDS"
"""The ``tuned`` rung's worker reads the records file from this variable."""


@dataclass(frozen=True)
class Rung:
    name: str
    schedule: Callable[[Schedule], None] | str | None
    """A schedule function, ``"default"`` (what ``qidao.compile`` does untold) or
    ``"tuned"`` (the best record of ``qidao tune``); None: not implemented."""
    missing: str = ""
    """Why this rung has no schedule yet (shown instead of a number)."""


def rungs() -> list[Rung]:
    """The ladder, bottom to top; the ones the compiler cannot do yet have no
    schedule and say why."""
    ladder = [
        Rung("naive", naive),
        Rung("split", split),
        Rung("reorder", reorder),
        Rung("vectorize", vectorize),
        Rung("parallel", parallel),
    ]
    if hasattr(Schedule, "cache_write"):
        ladder.append(Rung("cache_write", cache_write))
    else:
        ladder.append(
            Rung("cache_write", None, "not implemented yet: Schedule.cache_write")
        )
    ladder.append(Rung("cache_read", cache_read))
    ladder.append(Rung("default", "default"))
    ladder.append(Rung("tuned", "tuned"))
    return ladder


RUNGS = {r.name: r for r in rungs()}


# --- workers (one process each) -----------------------------------------------


def matmul_graph(n: int) -> Any:
    from qidao.frontend.builder import Graph

    g = Graph("main")
    x = g.input("x", (n, n))
    w = g.input("w", (n, n))
    g.output(x @ w)
    return g


def inputs(n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return a, b


def check(name: str, got: Any, a: Any, b: Any) -> None:
    """Raise unless ``got`` matches ``a @ b`` (float64 reference) to rtol 1e-3."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != np.float32:
        raise AssertionError(
            f"{name}: expected float32 {want.shape}, got {got.dtype} {got.shape}"
        )
    # atol: a sum of n products of O(1) terms carries O(sqrt(n)·eps) absolute error
    atol = RTOL * float(np.sqrt(a.shape[1]))
    if not np.allclose(got, want, rtol=RTOL, atol=atol):
        bad = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
        raise AssertionError(
            f"{name}: differs from NumPy at {tuple(int(i) for i in bad)}: "
            f"got {got[bad]}, expected {want[bad]}"
        )


def run_worker(
    kind: str, name: str, n: int, threads: int, timing: dict[str, float]
) -> dict[str, Any]:
    """Measure one rung (kind ``rung``), baseline (``torch``, ``numpy``) or the
    peak (``peak``) in this process; returns a JSON-able dict."""
    min_time = float(timing["min_time"])
    min_calls, cap = int(timing["min_calls"]), int(timing["max_calls"])
    if kind == "peak":
        return measure_peak()
    a, b = inputs(n)
    result: dict[str, Any] = {"compile_s": 0.0, "schedule": "", "pipeline": ""}
    call: Callable[[], Any]
    if kind == "rung":
        import qidao

        rung = RUNGS[name]
        if rung.schedule is None:
            raise ValueError(f"rung '{name}' has no schedule: {rung.missing}")
        options: dict[str, Any] = {"schedule": rung.schedule}
        if rung.schedule == "tuned":  # the best record alone, no default under it
            options = {"schedule": None, "records": os.environ[RECORDS_ENV]}
        start = time.perf_counter()
        compiled = qidao.compile(matmul_graph(n), threads=threads, **options)
        if rung.schedule == "tuned":
            note = compiled.stats["records"][KERNEL]
            if note.startswith(("no record", "the record")):
                raise ValueError(f"tuned: {note}")
        result["compile_s"] = time.perf_counter() - start
        result["schedule"] = compiled.stats["schedule"]
        # the trace replays on a fresh module, and its pipeline form goes with it
        fresh = Schedule.for_model(matmul_graph(n)).module
        result["pipeline"] = Schedule.replay(fresh, result["schedule"]).pipeline()

        def call() -> Any:
            return compiled(a, b)

        def first() -> Any:
            out = call()
            return out[0] if isinstance(out, list | tuple) else out

    elif kind == "torch":
        import torch

        torch.set_num_threads(threads)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)  # no autograd on these

        def call() -> Any:
            return ta @ tb

        def first() -> Any:
            return call().numpy()

    elif kind == "numpy":
        out = np.empty((n, n), np.float32)

        def call() -> Any:
            return np.matmul(a, b, out=out)

        def first() -> Any:
            return call().copy()

    else:
        raise ValueError(f"unknown worker kind '{kind}'")
    check(name, first(), a, b)
    result["times"] = time_calls(
        call, warmup=1, min_calls=min_calls, min_time=min_time, max_calls=cap
    )
    return result


PEAK_CHAINS = 16
PEAK_ITERS = 1 << 22


def _peak_ir(cpu: str, features: str) -> str:
    vec = f"<{WIDTH} x float>"
    inits: list[str] = []
    phis: list[str] = []
    fmas: list[str] = []
    for c in range(PEAK_CHAINS):
        # distinct starting values, or LLVM merges the identical chains into one
        inits.append(
            f"  %init{c} = fadd {vec} %init, <"
            + ", ".join([f"float {c + 1}.0"] * WIDTH)
            + ">"
        )
        phis.append(f"  %a{c} = phi {vec} [ %init{c}, %entry ], [ %b{c}, %loop ]")
        fmas.append(
            f"  %b{c} = call {vec} @llvm.fma.v{WIDTH}f32({vec} %a{c}, {vec} %m, "
            f"{vec} %x)"
        )
    total = "%b0"
    sums = []
    for c in range(1, PEAK_CHAINS):
        sums.append(f"  %s{c} = fadd {vec} {total}, %b{c}")
        total = f"%s{c}"
    body = "\n".join(phis + fmas + sums)
    return f"""
declare {vec} @llvm.fma.v{WIDTH}f32({vec}, {vec}, {vec})
define float @peak(i64 %n, float %s) #0 {{
entry:
  %i0 = insertelement {vec} undef, float %s, i32 0
  %init = shufflevector {vec} %i0, {vec} undef, <{WIDTH} x i32> zeroinitializer
  %m = fmul {vec} %init, %init
  %x = fsub {vec} %init, %m
{chr(10).join(inits)}
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %inext, %loop ]
{body}
  %inext = add i64 %i, 1
  %done = icmp eq i64 %inext, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = extractelement {vec} {total}, i32 0
  ret float %r
}}
attributes #0 = {{ "target-cpu"="{cpu}" "target-features"="{features}" }}
"""


def measure_peak() -> dict[str, Any]:
    """One core's FLOP/s on independent ``<16 x float>`` FMA chains (JIT, host
    CPU): 2 · 16 lanes · PEAK_CHAINS chains per iteration."""
    import ctypes

    import llvmlite.binding as llvm

    from qidao.runtime.cpu import host_cpu

    cpu, features = host_cpu()
    module = llvm.parse_assembly(_peak_ir(cpu, features))
    module.verify()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    machine = target.create_target_machine(cpu=cpu, features=features, opt=2, jit=True)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64, ctypes.c_float)(
        engine.get_function_address("peak")
    )
    fn(1000, 0.5)
    times = time_calls(lambda: fn(PEAK_ITERS, 0.5), warmup=0, min_calls=5, max_calls=5)
    flops = 2.0 * WIDTH * PEAK_CHAINS * PEAK_ITERS
    return {
        "times": times,
        "flops_per_call": flops,
        "compile_s": 0.0,
        "schedule": f"{PEAK_CHAINS} independent <{WIDTH} x float> llvm.fma chains",
        "pipeline": "",
    }


# --- the driver ---------------------------------------------------------------


@dataclass
class Row:
    rung: str
    kind: str  # "qidao", "baseline", "peak", "missing"
    n: int
    threads: int
    median_s: float = float("nan")
    runs: int = 0
    gflops: float | None = None
    compile_s: float = 0.0
    schedule: str = ""
    pipeline: str = ""
    note: str = ""
    error: str = ""
    ratios: dict[str, float | None] = field(default_factory=dict)


def run_one(
    kind: str, name: str, n: int, threads: int, timing: dict[str, float]
) -> dict[str, Any]:
    """Run one worker in a fresh process with its threads pinned; returns its
    dict, or ``{"error": why}``."""
    request = {"kind": kind, "name": name, "n": n, "threads": threads}
    # NumPy is what a numpy worker times: without OPENBLAS_CORETYPE
    answer = run_once(
        WORKER, {**request, "timing": timing}, threads=threads, numpy=kind == "numpy"
    )
    if not answer.ok:
        return {"error": answer.error}
    return answer.data


def run_ladder(
    n: int = 1024,
    threads: int = 1,
    min_time: float = 2.0,
    min_calls: int = 3,
    max_calls: int = 50,
    csv_path: Path | None = None,
    plot_path: Path | None = None,
    progress: bool = True,
    peak: bool = True,
    records: Path | None = None,
    tune_trials: int = 32,
    only: Collection[str] | None = None,
) -> list[Row]:
    """Every rung, PyTorch, NumPy and the peak, each in its own process; only the
    rows named in ``only`` when given (rungs, ``pytorch``, ``numpy``, ``peak``).

    The ``tuned`` rung applies the best record of ``records``; without one, the
    ladder first runs ``qidao tune matmul{n}`` for ``tune_trials`` trials (seed
    0) into ``ladder-tune.jsonl`` beside the CSV (or a temporary file)."""
    from tqdm import tqdm

    if n <= 0 or n % TILE_J:
        raise ValueError(
            f"--size must be a positive multiple of {TILE_J} (the rungs' j tile, "
            f"vectorized without a tail), got {n}"
        )
    if plot_path is not None:
        from qidao.bench.workloads import _pyplot

        _pyplot()  # fail before any run if matplotlib is missing
    timing = {"min_time": min_time, "min_calls": min_calls, "max_calls": max_calls}
    jobs: list[tuple[str, str]] = [("rung", r.name) for r in rungs()]
    jobs += [("torch", "pytorch"), ("numpy", "numpy")]
    if peak:
        jobs.append(("peak", "peak"))
    if only is not None:
        unknown = sorted(set(only) - {name for _, name in jobs})
        if unknown:
            raise ValueError(
                f"no ladder row named {', '.join(unknown)}; the rows are: "
                + ", ".join(name for _, name in jobs)
            )
        jobs = [(kind, name) for kind, name in jobs if name in only]
    flops = 2.0 * n**3
    if records is None and any(name == "tuned" for _, name in jobs):
        records = tune_for_ladder(n, threads, tune_trials, csv_path, progress)
    if records is not None:  # the tuned rung's worker inherits it
        os.environ[RECORDS_ENV] = str(records)
    rows: list[Row] = []
    bar = tqdm(jobs, desc="ladder", unit="run", disable=not progress, file=sys.stderr)
    for kind, name in bar:
        bar.set_postfix_str(name)
        row_kind = {"rung": "qidao", "peak": "peak"}.get(kind, "baseline")
        row = Row(name, row_kind, n, threads)
        rung = RUNGS.get(name) if kind == "rung" else None
        if rung is not None and rung.schedule is None:
            row.kind, row.note = "missing", rung.missing
            rows.append(row)
            continue
        data = run_one(kind, name, n, threads, timing)
        if "error" in data:
            row.error = str(data["error"])
            rows.append(row)
            continue
        times = [float(t) for t in data["times"]]
        row.median_s = statistics.median(times)
        row.runs = len(times)
        row.compile_s = float(data["compile_s"])
        row.schedule = str(data["schedule"])
        row.pipeline = str(data["pipeline"])
        if kind == "peak":
            one_core = float(data["flops_per_call"]) / row.median_s / 1e9
            row.gflops = one_core * threads
            row.note = (
                f"measured: {one_core:.1f} GFLOP/s on one core x {threads} thread(s)"
            )
        else:
            row.gflops = flops / row.median_s / 1e9
        if name == "parallel" and threads == 1:
            row.note = "threads=1: the vectorize rung's loops on one thread"
        rows.append(row)
    add_ratios(rows)
    if csv_path is not None:
        write_csv(rows, csv_path)
    if plot_path is not None:
        plot_ladder(rows, plot_path)
    return rows


def tune_for_ladder(
    n: int, threads: int, trials: int, csv_path: Path | None, progress: bool
) -> Path:
    """Tune matmul ``n`` for the ``tuned`` rung; returns the records file."""
    import tempfile

    from qidao.compiler.tune import named_task, tune_task
    from qidao.compiler.tune.tuner import Measurement

    task = named_task(f"matmul{n}")
    assert task is not None
    if csv_path is not None:
        path = csv_path.parent / "ladder-tune.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
    else:
        path = Path(tempfile.mkdtemp(prefix="qidao-ladder-")) / "tune.jsonl"
    tune_task(
        task,
        trials=trials,
        seed=0,
        records=path,
        how=Measurement(threads=threads),
        references=False,
        progress=progress,
    )
    return path


def _gflops_of(rows: Sequence[Row], name: str) -> float | None:
    return next((r.gflops for r in rows if r.rung == name and not r.error), None)


def add_ratios(rows: Sequence[Row]) -> None:
    """Fill each row's ratios: % of peak, × vs naive / PyTorch / NumPy."""
    refs = {k: _gflops_of(rows, k) for k in ("peak", "naive", "pytorch", "numpy")}
    for row in rows:
        for key, ref in refs.items():
            ok = row.gflops is not None and ref is not None and ref > 0
            value = row.gflops / ref if ok and row.gflops and ref else None
            row.ratios[key] = value * 100 if key == "peak" and value else value


def best_library(rows: Sequence[Row]) -> float | None:
    """GFLOP/s of the faster of PyTorch eager and NumPy in this run."""
    rates = [_gflops_of(rows, k) for k in ("pytorch", "numpy")]
    return max((g for g in rates if g is not None), default=None)


CSV_FIELDS = [
    "rung",
    "kind",
    "n",
    "threads",
    "median_ms",
    "runs",
    "gflops",
    "pct_peak",
    "x_naive",
    "x_pytorch",
    "x_numpy",
    "compile_s",
    "schedule",
    "pipeline",
    "note",
    "error",
]


def _fmt(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def write_csv(rows: Sequence[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_FIELDS)
        for r in rows:
            timed = r.runs > 0
            out.writerow(
                [
                    r.rung,
                    r.kind,
                    r.n,
                    r.threads,
                    f"{r.median_s * 1e3:.4f}" if timed else "",
                    r.runs,
                    _fmt(r.gflops, ".3f"),
                    _fmt(r.ratios.get("peak"), ".2f"),
                    _fmt(r.ratios.get("naive"), ".3f"),
                    _fmt(r.ratios.get("pytorch"), ".3f"),
                    _fmt(r.ratios.get("numpy"), ".3f"),
                    f"{r.compile_s:.3f}" if timed else "",
                    r.schedule.strip(),
                    r.pipeline,
                    r.note,
                    r.error,
                ]
            )


def format_table(rows: Sequence[Row]) -> str:
    n = rows[0].n if rows else 0
    threads = rows[0].threads if rows else 0
    lines = [
        f"matmul {n}x{n} float32, {threads} thread(s), medians",
        f"{'rung':<12} {'GFLOP/s':>9} {'% peak':>7} {'x naive':>8} "
        f"{'x torch':>8} {'x numpy':>8} {'median':>10} {'runs':>4}  schedule",
    ]
    for r in rows:
        if r.kind == "missing":
            lines.append(f"{r.rung:<12} {'-':>9}  {r.note}")
            continue
        if r.error:
            lines.append(f"{r.rung:<12} FAILED: {r.error}")
            continue
        pct = r.ratios.get("peak")
        median = f"{r.median_s * 1e3:.2f} ms"
        sched = "; ".join(s for s in r.schedule.strip().splitlines() if s)
        if r.note:
            sched = f"{sched}  [{r.note}]" if sched else f"[{r.note}]"
        lines.append(
            f"{r.rung:<12} {_fmt(r.gflops, '9.2f'):>9} {_fmt(pct, '6.1f'):>7} "
            f"{_fmt(r.ratios.get('naive'), '7.1f'):>8} "
            f"{_fmt(r.ratios.get('pytorch'), '7.2f'):>8} "
            f"{_fmt(r.ratios.get('numpy'), '7.2f'):>8} {median:>10} {r.runs:>4}  "
            f"{sched}"
        )
    best = best_library(rows)
    if best is not None:
        lines.append(
            f"\nbest library (max of PyTorch eager, NumPy): {best:.2f} GFLOP/s"
        )
    return "\n".join(lines)


def plot_ladder(rows: Sequence[Row], path: Path) -> None:
    """A PNG bar chart of GFLOP/s per rung and baseline, the peak as a line."""
    from qidao.bench.workloads import _pyplot

    plt = _pyplot()
    shown = [r for r in rows if r.kind in ("qidao", "baseline", "missing")]
    peak = _gflops_of(rows, "peak")
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * len(shown) + 2), 4.5))
    colors = {"qidao": "tab:blue", "baseline": "tab:orange", "missing": "lightgray"}
    ys = [r.gflops or 0.0 for r in shown]
    bars = ax.bar(
        range(len(shown)),
        [y if y else 0.0 for y in ys],
        color=[colors[r.kind] for r in shown],
    )
    labels = [
        f"{r.gflops:.1f}" if r.gflops else ("n/a" if r.kind == "missing" else "failed")
        for r in shown
    ]
    ax.bar_label(bars, labels=labels, fontsize=7)
    if peak is not None:
        ax.axhline(peak, color="black", linestyle="--", linewidth=0.8)
        ax.text(
            0, peak, f" peak {peak:.0f} GFLOP/s (measured)", va="bottom", fontsize=7
        )
    ax.set_yscale("log")
    positive = [y for y in ys if y > 0]
    for k, r in enumerate(shown):
        if r.kind == "missing" or not r.gflops:
            text = "not\nimplemented\nyet" if r.kind == "missing" else "failed"
            bottom = min(positive, default=1.0)
            ax.text(k, bottom, text, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(shown)), [r.rung for r in shown], rotation=30)
    ax.set_ylabel("GFLOP/s (log scale)")
    n = rows[0].n if rows else 0
    threads = rows[0].threads if rows else 0
    ax.set_title(f"qidao ladder: matmul {n}x{n} float32, {threads} thread(s), medians")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    if request["kind"] == "peak":
        return measure_peak()
    return run_worker(**request)


if __name__ == "__main__":
    serve(_serve)
