"""``qidao bench train``: one training step (forward, backward, SGD update) of each
training workload, qidao's compiled step against PyTorch eager's, side by side.

Each (workload, backend) runs in its own process with its threads pinned (one by
default), on the same weights (PyTorch's seeded init, read into
the qidao graph's weight inputs) and the same batch. A run first takes three steps
and records their losses; the table's ``agrees`` column says whether qidao's three
losses match PyTorch's to 1e-3 relative (the same weights, the same data, the same
update), then the median time of the steps that follow. The compile column is the
compile of the whole step (forward, backward and update: ``qidao.compile(...,
grad=..., optimizer=...)``); PyTorch eager compiles nothing.

```
qidao bench train                 # mlp cnn encoder, 1 thread
qidao bench train mlp --threads 2
```
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.ladder import WORKER as LADDER_WORKER
from qidao.bench.train_models import TRAIN_MODELS, train_model
from qidao.bench.workloads import time_calls
from qidao.runtime.timing import median
from qidao.runtime.worker import run_once, serve

WORKER = "qidao.bench.train"
"""The module whose worker measures one (workload, backend) pair."""

BACKENDS = ("torch", "qidao")
LR = 0.01
"""The SGD learning rate of every step (no momentum: PyTorch's default)."""
CHECKED_STEPS = 3


@dataclass(frozen=True)
class TrainResult:
    workload: str
    backend: str
    threads: int
    median_ms: float
    runs: int
    compile_s: float
    losses: tuple[float, ...]
    error: str = ""


def run_worker(
    name: str, backend: str, threads: int, min_time: float, tiny: bool
) -> dict[str, Any]:
    """Measure one (workload, backend) pair in this process: the first losses, the
    step times and the compile seconds, as a JSON-able dict."""
    import torch

    torch.set_num_threads(threads)
    model = train_model(name, tiny)
    module = model.torch_model()
    x, labels = model.data(np.random.default_rng(0))
    compile_s = 0.0
    if backend == "torch":
        optimizer = torch.optim.SGD(module.parameters(), lr=LR)
        xt, lt = torch.from_numpy(x), torch.from_numpy(labels)

        def step() -> float:
            optimizer.zero_grad()
            loss = model.torch_loss(module, xt, lt)
            loss.backward()
            optimizer.step()
            return float(loss.item())

    else:
        import qidao

        weights = model.weights(module)
        start = time.perf_counter()
        compiled = qidao.compile(
            model.graph(),
            grad=list(weights),
            optimizer=qidao.optim.SGD(lr=LR),
            weights=weights,
            threads=threads,
        )
        compile_s = time.perf_counter() - start

        def step() -> float:
            (loss,) = compiled(x, labels)
            return float(loss)

    losses = [step() for _ in range(CHECKED_STEPS)]
    times = time_calls(step, min_time, 10_000)
    return {"times": times, "compile_s": compile_s, "losses": losses}


def run_one(
    name: str, backend: str, threads: int, min_time: float, tiny: bool
) -> TrainResult:
    """Run one pair in a fresh process with its threads pinned."""
    request = {
        "name": name,
        "backend": backend,
        "threads": threads,
        "min_time": min_time,
        "tiny": tiny,
    }
    answer = run_once(WORKER, request, threads=threads)
    if not answer.ok:
        return TrainResult(
            name, backend, threads, float("nan"), 0, 0.0, (), answer.error
        )
    times = answer.data["times"]
    return TrainResult(
        name,
        backend,
        threads,
        median(times) * 1e3,
        len(times),
        answer.data["compile_s"],
        tuple(answer.data["losses"]),
    )


def measure_peak_gflops(threads: int = 1) -> float:
    """One core's FMA peak (``qidao.bench.ladder.measure_peak``), in a fresh process
    pinned like the workers, in GFLOP/s: the yardstick that makes the table's times
    comparable across machines (NaN if it cannot be measured)."""
    answer = run_once(LADDER_WORKER, {"kind": "peak"}, threads=threads)
    if not answer.ok:
        return float("nan")
    return float(answer.data["flops_per_call"]) / median(answer.data["times"]) / 1e9


def run_train_bench(
    names: Sequence[str],
    threads: int = 1,
    min_time: float = 2.0,
    csv_path: Path | None = None,
    plot_path: Path | None = None,
    tiny: bool = False,
    progress: bool = True,
) -> list[TrainResult]:
    """Every workload × backend, in order; the CSV and the plot when asked."""
    from tqdm import tqdm

    unknown = [n for n in names if n not in TRAIN_MODELS]
    if unknown:
        raise ValueError(
            f"unknown training workload(s) {', '.join(unknown)}; choose from "
            f"{', '.join(TRAIN_MODELS)}"
        )
    pairs = [(n, b) for n in names for b in BACKENDS]
    results: list[TrainResult] = []
    bar = tqdm(
        pairs, desc="bench train", unit="run", disable=not progress, file=sys.stderr
    )
    for name, backend in bar:
        bar.set_postfix_str(f"{name}/{backend}")
        results.append(run_one(name, backend, threads, min_time, tiny))
    if csv_path is not None:
        write_csv(results, csv_path)
    if plot_path is not None:
        plot(results, plot_path)
    return results


def agrees(results: Sequence[TrainResult], name: str) -> bool | None:
    """Whether qidao's first losses match PyTorch's (None if either failed)."""
    by = {r.backend: r for r in results if r.workload == name and not r.error}
    if set(by) != set(BACKENDS):
        return None
    return bool(np.allclose(by["qidao"].losses, by["torch"].losses, rtol=1e-3))


def speedup(results: Sequence[TrainResult], name: str) -> float | None:
    """PyTorch eager's median step over qidao's, from this run."""
    by = {r.backend: r for r in results if r.workload == name and not r.error}
    if set(by) != set(BACKENDS):
        return None
    return by["torch"].median_ms / by["qidao"].median_ms


def format_table(results: Sequence[TrainResult]) -> str:
    names = list(dict.fromkeys(r.workload for r in results))
    lines = [
        "| workload | threads | PyTorch eager (ms/step) | qidao (ms/step) | speedup | "
        "qidao compile (s) | first losses agree |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        by = {r.backend: r for r in results if r.workload == name}
        torch_r, qidao_r = by.get("torch"), by.get("qidao")

        def cell(r: TrainResult | None) -> str:
            if r is None:
                return "—"
            return f"error: {r.error}" if r.error else f"{r.median_ms:.2f}"

        s = speedup(results, name)
        ok = agrees(results, name)
        lines.append(
            f"| {name} | {(torch_r or qidao_r).threads if (torch_r or qidao_r) else ''} | "  # type: ignore[union-attr]
            f"{cell(torch_r)} | {cell(qidao_r)} | {f'{s:.2f}×' if s else '—'} | "
            f"{f'{qidao_r.compile_s:.1f}' if qidao_r and not qidao_r.error else '—'} | "
            f"{'—' if ok is None else ('yes' if ok else 'NO')} |"
        )
    return "\n".join(lines)


def write_csv(results: Sequence[TrainResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "workload",
                "backend",
                "threads",
                "median_ms",
                "runs",
                "compile_s",
                "losses",
                "speedup",
                "agrees",
                "error",
            ]
        )
        for r in results:
            s = speedup(results, r.workload) if r.backend == "qidao" else None
            ok = agrees(results, r.workload)
            w.writerow(
                [
                    r.workload,
                    r.backend,
                    r.threads,
                    f"{r.median_ms:.4f}",
                    r.runs,
                    f"{r.compile_s:.2f}",
                    " ".join(f"{v:.6g}" for v in r.losses),
                    f"{s:.3f}" if s else "",
                    "" if ok is None else ok,
                    r.error,
                ]
            )


def plot(results: Sequence[TrainResult], path: Path) -> None:
    """A bar chart of the speedup over PyTorch eager per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r.workload for r in results))
    values = [speedup(results, n) or 0.0 for n in names]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(names, values, color="tab:blue")
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_ylim(0, max([1.0, *values]) * 1.15)  # room for the labels
    ax.set_ylabel("speedup over PyTorch eager")
    ax.set_title(
        f"one SGD training step, {results[0].threads if results else 1} thread(s)"
    )
    for k, v in enumerate(values):
        ax.text(k, v, f"{v:.2f}×", ha="center", va="bottom")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    serve(lambda request: run_worker(**request))
