"""``qidao tune WORKLOAD``: the command line of the tuner.

    qidao tune matmul1024 --trials 64 --seed 0 --records tune.jsonl [--threads 1]
    qidao tune matmul256 --exhaustive          # every point of the small space,
                                               # then random vs evolutionary on it
    qidao tune model.onnx                      # every kernel a template knows

WORKLOAD is ``matmul{N}`` (N×N by N×N), ``matmul{M}x{K}x{N}``, a built-in model's
name or a ``.onnx``/``.mlir`` path; each distinct kernel workload of a model with a
template (``matmul``) is tuned in turn.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from qidao.compiler.tune.task import Task, named_task
from qidao.compiler.tune.templates import TEMPLATES, kernel_tasks
from qidao.compiler.tune.tuner import Measurement, TuneResult, tune_task
from qidao.tools.tune_report import compare_searches, format_comparison


def add_tune_parser(sub: Any) -> None:
    """Add ``tune`` to the ``qidao`` subcommands (``sub``: argparse subparsers)."""
    p = sub.add_parser(
        "tune",
        help="search a kernel's schedule space, measure, record the best",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("workload", help="matmul1024, matmul{M}x{K}x{N}, a model")
    p.add_argument("--trials", type=int, default=64, help="measured trials")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--records", default="tune.jsonl", help="JSON lines, appended")
    p.add_argument("--threads", type=int, default=1, help="threads of the kernel")
    p.add_argument(
        "--workers", type=int, default=1, help="trial processes at the same time"
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per trial")
    p.add_argument(
        "--search", choices=("evolutionary", "random"), default="evolutionary"
    )
    p.add_argument(
        "--exhaustive",
        action="store_true",
        help="measure every point of the small space, then compare the searches",
    )
    p.add_argument(
        "--seeds", type=int, default=20, help="--exhaustive: seeds of the replays"
    )
    p.set_defaults(run=cmd_tune)


def tasks_of(workload: str) -> list[Task]:
    """The tasks of a workload name or model (distinct workloads, in kernel order)."""
    task = named_task(workload)
    if task is not None:
        return [task]
    from qidao.compiler.schedule import Schedule
    from qidao.tools.examples import model_argument

    module = Schedule.for_model(model_argument(workload)).module
    tasks = {t.key: t for t in kernel_tasks(module).values()}
    if not tasks:
        raise ValueError(
            f"no kernel of '{workload}' has a tuning template (kinds: "
            f"{', '.join(TEMPLATES)})"
        )
    return list(tasks.values())


def summary(result: TuneResult) -> str:
    """The best schedule, its GFLOP/s and how it compares."""
    best = result.best
    counts = len(result.records)
    failed = sum(1 for r in result.records if r.status != "ok")
    head = f"{result.task.key}: {counts} trials ({result.search}), {failed} failed"
    if best is None or best.gflops is None:
        return head + "; no trial succeeded"
    lines = [
        head,
        f"best: {best.gflops:.1f} GFLOP/s (trial {best.trial + 1}): "
        f"{result.space.describe(result.space.point(best.config))}",
        best.trace.rstrip(),
    ]
    tuned: float = best.gflops
    parts = []
    for name, label in (("default", "default schedule"),):
        rate = result.references.get(name)
        if rate:
            parts.append(f"{label} {rate:.1f} GFLOP/s ({tuned / rate:.2f}x)")
    if parts:
        lines.append(f"tuned {tuned:.1f} GFLOP/s vs " + ", ".join(parts))
    return "\n".join(lines)


def cmd_tune(args: argparse.Namespace) -> int:
    how = Measurement(threads=args.threads, workers=args.workers, timeout=args.timeout)
    records = Path(args.records) if args.records else None
    for task in tasks_of(args.workload):
        result = tune_task(
            task,
            trials=args.trials,
            seed=args.seed,
            records=records,
            how=how,
            search="exhaustive" if args.exhaustive else args.search,
            small=args.exhaustive,
        )
        print(summary(result))
        if args.exhaustive:
            comparison = compare_searches(
                result.space, result.history, seeds=range(args.seeds)
            )
            print(format_comparison(comparison))
    if records is not None:
        print(f"records: {records}")
    return 0
