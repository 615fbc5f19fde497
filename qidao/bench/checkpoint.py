"""``qidao bench checkpoint``: the book's memory/time trade-off of activation
checkpointing, measured: k swept over 1..N for a 20-layer MLP and a residual net,
qidao's compiled training step beside ``torch.utils.checkpoint`` on the same
segments, and beside the book's formulas.

For each (workload, k) a fresh process (threads pinned, one by default) compiles
the SGD training step with ``checkpoint=k`` and reads the planned peak of
intermediates (``stats["peak_bytes"]``); it checks the gradients of the same graph
compiled with ``checkpoint=k`` against the un-checkpointed ones (bitwise, else
rtol 1e-6) and times the step (median). PyTorch runs in its own process: the same
model, ``torch.utils.checkpoint`` on the same groups of k segments (the last group
plain), its peak from the profiler's allocation events
(``qidao.bench.checkpoint_models.torch_peak_bytes``). The ``budget`` row compiles
with ``checkpoint={"budget": 40% of the un-checkpointed peak}`` (the greedy
search), and for a workload of at most 16 segments the ``budget-exact`` row with
``"search": "exact"`` (every set of kept boundaries tried).

The book's model (N layers, one activation each; forward 1, backward 2 units):
memory (k + N/k)/N of no checkpointing, time (4 - k/N)/3. qidao's measured ratios
are to its own k = none run; PyTorch's to its own.

What "peak" means on each side: qidao's ``peak_bytes`` is the largest sum of
intermediate buffers alive at once in the planned program (the step's inputs,
weights and outputs are not intermediates); the ``step MB`` column adds the
outputs the call allocates (the loss: the updated weights are written over the
old ones, ``update-in-place``). PyTorch's is the largest sum of bytes its CPU allocator holds during one
step above what it held before (activations, gradients, temporaries).

```
qidao bench checkpoint                  # mlp and resnet, every k, 1 thread
qidao bench checkpoint mlp --k 1 2 4 5 10 20 --plot docs/benchmarks/checkpoint.png
```
"""

from __future__ import annotations

import csv
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.checkpoint_models import CHECKPOINT_MODELS
from qidao.bench.workloads import time_calls
from qidao.passes.graph.checkpoint import MAX_EXACT_SEGMENTS
from qidao.runtime.timing import median
from qidao.runtime.worker import run_once, serve

WORKER = "qidao.bench.checkpoint"
"""The module whose worker measures one point."""
LR = 0.01
WORKLOADS = CHECKPOINT_MODELS
BUDGET_SHARE = 0.4
"""The budget row's budget: this share of the un-checkpointed peak."""


@dataclass(frozen=True)
class Point:
    """One (workload, backend, setting) measurement."""

    workload: str
    backend: str  # qidao | torch
    setting: str  # none | k | budget=BYTES
    segments: int
    peak_bytes: int
    step_bytes: int
    median_ms: float
    runs: int
    recompute_share: float = 0.0
    kept: int = -1
    grads_match: str = ""
    compile_s: float = 0.0
    error: str = ""


def _checkpoint_option(setting: str) -> Any:
    if setting == "none":
        return None
    if setting.startswith("budget="):
        return {"budget": int(setting.partition("=")[2])}
    if setting.startswith("budget-exact="):
        return {"budget": int(setting.partition("=")[2]), "search": "exact"}
    return int(setting)


def run_worker(
    name: str, backend: str, setting: str, threads: int, min_time: float, tiny: bool
) -> dict[str, Any]:
    """Measure one point in this process (a JSON-able dict)."""
    import torch

    from qidao.bench.checkpoint_models import checkpoint_model, torch_peak_bytes

    torch.set_num_threads(threads)
    model = checkpoint_model(name, tiny)
    module = model.torch_model()
    x, labels = model.data(np.random.default_rng(0))
    out: dict[str, Any] = {"segments": model.segments}
    if backend == "torch":
        from qidao.bench.checkpoint_models import torch_step

        k = None if setting == "none" else int(setting)
        step = torch_step(model, module, k, LR)
        xt, lt = torch.from_numpy(x), torch.from_numpy(labels)
        step(xt, lt)  # the optimizer's state and the allocator warmed up
        peak = torch_peak_bytes(lambda: step(xt, lt))
        out.update(peak_bytes=peak, step_bytes=peak)
        out["times"] = time_calls(lambda: step(xt, lt), min_time, 10_000)
        return out
    import qidao

    weights = model.weights(module)
    option = _checkpoint_option(setting)
    extra = {} if option is None else {"checkpoint": option}
    start = time.perf_counter()
    compiled = qidao.compile(
        model.graph(),
        grad=list(weights),
        optimizer=qidao.optim.SGD(lr=LR),
        weights=weights,
        threads=threads,
        **extra,
    )
    out["compile_s"] = time.perf_counter() - start
    stats = compiled.stats
    # the outputs the call allocates: the loss, and any update not in place
    program: Any = getattr(compiled, "inner", compiled)
    in_place = {j for j, _ in stats.get("in_place", [])}
    out_bytes = sum(
        int(np.prod(spec.shape)) * np.dtype(spec.dtype).itemsize
        for j, spec in enumerate(program.outputs)
        if j not in in_place
    )
    out.update(
        peak_bytes=stats["peak_bytes"],
        step_bytes=stats["peak_bytes"] + out_bytes,
        recompute_share=stats["recompute_share"],
        kept=stats.get("kept", -1),
    )
    out["grads_match"] = _check_gradients(model, weights, x, labels, extra, threads)
    out["times"] = time_calls(lambda: compiled(x, labels), min_time, 10_000)
    return out


def _check_gradients(
    model: Any,
    weights: dict[str, Any],
    x: Any,
    labels: Any,
    extra: dict[str, Any],
    threads: int,
) -> str:
    """``bitwise``, ``rtol 1e-6`` or what differs: the gradients with this
    setting against those without checkpointing."""
    import qidao

    args = [x, labels, *weights.values()]
    plain = qidao.compile(model.graph(), grad=list(weights), threads=threads)
    want = plain(*args)
    if not extra:
        return "reference"
    got = qidao.compile(model.graph(), grad=list(weights), threads=threads, **extra)(
        *args
    )
    if all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)):
        return "bitwise"
    names = ["loss", *weights]
    for name, a, b in zip(names, got, want, strict=True):
        if not np.allclose(a, b, rtol=1e-6, atol=1e-7):
            return f"NO: {name} differs by {float(np.max(np.abs(a - b))):.3g}"
    return "rtol 1e-6"


def run_one(
    name: str, backend: str, setting: str, threads: int, min_time: float, tiny: bool
) -> Point:
    """One point in a fresh process with its threads pinned."""
    request = {
        "name": name,
        "backend": backend,
        "setting": setting,
        "threads": threads,
        "min_time": min_time,
        "tiny": tiny,
    }
    answer = run_once(WORKER, request, threads=threads)
    if not answer.ok:
        return Point(
            name, backend, setting, 0, 0, 0, float("nan"), 0, error=answer.error
        )
    data = {k: v for k, v in answer.data.items() if k not in ("status", "id")}
    times = data.pop("times")
    return Point(
        name,
        backend,
        setting,
        median_ms=median(times) * 1e3,
        runs=len(times),
        **data,
    )


def run_checkpoint_bench(
    names: Sequence[str],
    ks: Sequence[int] | None = None,
    threads: int = 1,
    min_time: float = 1.0,
    csv_path: Path | None = None,
    plot_path: Path | None = None,
    tiny: bool = False,
    progress: bool = True,
    budget_share: float = BUDGET_SHARE,
) -> list[Point]:
    """Every workload: k = none, the ``ks`` (default 1..N) and the budget rows
    (``budget_share`` of the un-checkpointed peak), for qidao and PyTorch (PyTorch
    has no budget mode)."""
    from tqdm import tqdm

    from qidao.bench.checkpoint_models import checkpoint_model

    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise ValueError(
            f"unknown checkpoint workload(s) {', '.join(unknown)}; choose from "
            f"{', '.join(WORKLOADS)}"
        )
    jobs: list[tuple[str, str, str]] = []
    for name in names:
        n = checkpoint_model(name, tiny).segments
        settings = ["none", *(str(k) for k in (ks or range(1, n + 1)) if k <= n)]
        jobs += [(name, b, s) for s in settings for b in ("qidao", "torch")]
        jobs.append((name, "qidao", "budget"))
        if n <= MAX_EXACT_SEGMENTS:  # the exact search, beside the greedy one
            jobs.append((name, "qidao", "budget-exact"))
    points: list[Point] = []
    bar = tqdm(jobs, desc="bench checkpoint", unit="run", disable=not progress)
    for name, backend, setting in bar:
        if setting.startswith("budget"):
            plain = _find(points, name, "qidao", "none")
            if plain is None or plain.error:
                continue
            setting = f"{setting}={int(plain.peak_bytes * budget_share)}"
        bar.set_postfix_str(f"{name}/{backend}/{setting}")
        points.append(run_one(name, backend, setting, threads, min_time, tiny))
    if csv_path is not None:
        write_csv(points, csv_path)
    if plot_path is not None:
        plot(points, plot_path)
    return points


def _find(
    points: Sequence[Point], name: str, backend: str, setting: str
) -> Point | None:
    for p in points:
        if (p.workload, p.backend, p.setting) == (name, backend, setting):
            return p
    return None


def book_memory(k: int, n: int) -> float:
    """The book's memory with every k-th of N activations kept: (k + N/k)/N."""
    return (k + n / k) / n


def book_time(k: int, n: int) -> float:
    """The book's step time relative to no checkpointing: (4 - k/N)/3."""
    return (4 - k / n) / 3


def ratios(points: Sequence[Point], p: Point) -> tuple[float, float] | None:
    """(peak, time) of ``p`` over its backend's un-checkpointed run."""
    base = _find(points, p.workload, p.backend, "none")
    if base is None or base.error or p.error or not base.peak_bytes:
        return None
    return p.peak_bytes / base.peak_bytes, p.median_ms / base.median_ms


def format_table(points: Sequence[Point]) -> str:
    lines = [
        "| workload | k | kept | qidao peak MB | peak ratio | book memory | qidao "
        "ms/step | time ratio | book time | recompute share | gradients | qidao "
        "step MB | PyTorch peak MB | PyTorch ms/step | PyTorch peak ratio | "
        "PyTorch time ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        if p.backend != "qidao":
            continue
        if p.error:
            lines.append(f"| {p.workload} | {p.setting} | error: {p.error} |")
            continue
        r = ratios(points, p)
        t = _find(points, p.workload, "torch", p.setting)
        tr = ratios(points, t) if t is not None else None
        k = int(p.setting) if p.setting.isdigit() else None
        n = p.segments
        lines.append(
            f"| {p.workload} | {p.setting} | {p.kept if p.kept >= 0 else '—'} | "
            f"{p.peak_bytes / 1e6:.2f} | {f'{r[0]:.2f}' if r else '—'} | "
            f"{f'{book_memory(k, n):.2f}' if k else '—'} | {p.median_ms:.1f} | "
            f"{f'{r[1]:.2f}' if r else '—'} | "
            f"{f'{book_time(k, n):.2f}' if k else '—'} | "
            f"{p.recompute_share:.0%} | {p.grads_match} | "
            f"{p.step_bytes / 1e6:.2f} | "
            + (
                f"{t.peak_bytes / 1e6:.2f} | {t.median_ms:.1f} | "
                f"{f'{tr[0]:.2f}' if tr else '—'} | {f'{tr[1]:.2f}' if tr else '—'} |"
                if t is not None and not t.error
                else "— | — | — | — |"
            )
        )
    return "\n".join(lines)


def write_csv(points: Sequence[Point], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = [*asdict(points[0]), "peak_ratio", "time_ratio"] if points else []
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for p in points:
            r = ratios(points, p)
            w.writerow(
                [*asdict(p).values(), *(f"{v:.4f}" for v in r)]
                if r
                else [*asdict(p).values(), "", ""]
            )


def plot(points: Sequence[Point], path: Path) -> None:
    """Per workload: peak memory and step time over k (both backends, the book's
    curves), and memory against time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(p.workload for p in points))
    fig, axes = plt.subplots(
        len(names), 3, figsize=(13, 3.6 * len(names)), squeeze=False
    )
    for row, name in zip(axes, names, strict=True):
        for backend, color in (("qidao", "tab:blue"), ("torch", "tab:orange")):
            pts = [
                p
                for p in points
                if p.workload == name and p.backend == backend and p.setting.isdigit()
            ]
            xs = [int(p.setting) for p in pts]
            rs = [ratios(points, p) for p in pts]
            mem = [r[0] if r else np.nan for r in rs]
            tim = [r[1] if r else np.nan for r in rs]
            label = "qidao" if backend == "qidao" else "torch.utils.checkpoint"
            row[0].plot(xs, mem, "o-", color=color, label=label)
            row[1].plot(xs, tim, "o-", color=color, label=label)
            row[2].plot(tim, mem, "o", color=color, label=label)
            for x, t, m in zip(xs, tim, mem, strict=True):
                row[2].annotate(str(x), (t, m), fontsize=7)
        seg = [p.segments for p in points if p.workload == name and p.segments]
        if seg:
            n = seg[0]
            ks = list(range(1, n + 1))
            row[0].plot(
                ks,
                [book_memory(k, n) for k in ks],
                "--",
                color="gray",
                label="book (k + N/k)/N",
            )
            row[1].plot(
                ks,
                [book_time(k, n) for k in ks],
                "--",
                color="gray",
                label="book (4 - k/N)/3",
            )
        budget = [
            p for p in points if p.workload == name and p.setting.startswith("budget")
        ]
        for p in budget:
            r = ratios(points, p)
            if r:
                row[2].plot(
                    [r[1]],
                    [r[0]],
                    "*" if p.setting.startswith("budget=") else "P",
                    color="tab:green",
                    markersize=12,
                    label=f"qidao {p.setting.partition('=')[0]} {BUDGET_SHARE:.0%}",
                )
        row[0].set_title(f"{name}: peak memory / no checkpointing")
        row[1].set_title(f"{name}: step time / no checkpointing")
        row[2].set_title(f"{name}: memory against time (labels: k)")
        row[0].set_xlabel("k (keep every k-th segment)")
        row[1].set_xlabel("k (keep every k-th segment)")
        row[2].set_xlabel("step time ratio")
        row[2].set_ylabel("peak memory ratio")
        for ax in row:
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    serve(lambda request: run_worker(**request))
