"""``qidao tune WORKLOAD``: the command line of the tuner.

    qidao tune matmul1024 --trials 64 --seed 0 --records tune.jsonl [--threads 1]
    qidao tune matmul256 --exhaustive          # every point of the small space,
                                               # then random vs evolutionary on it
    qidao tune model.onnx                      # every kernel a template knows
    qidao tune matmul1024 --target cuda        # on the GPU: CUDA events, records
                                               # keyed "NVIDIA H200 (sm_90)"
    qidao tune softmax8x64 --target cuda --device emulate   # the CPU emulator
    qidao tune --report tune.jsonl             # a records file, a line per key

WORKLOAD is ``matmul{N}`` (N×N by N×N), ``matmul{M}x{K}x{N}``, a built-in model's
name or a ``.onnx``/``.mlir`` path; each distinct kernel workload of a model with a
template (``matmul``; for ``--target cuda`` also softmax, layer norm, reductions over
the last axis and single elementwise ops) is tuned in turn. With ``--target cuda``
WORKLOAD may also be ``softmax{R}x{C}``, ``layernorm{R}x{C}``,
``reduce_sum{R}x{C}``, ``relu{N}``, ``add{R}x{C}``, ... (``gpu_templates.py``).
Without a GPU, ``--target cuda`` says why and stops unless ``--device emulate``
(trials on the CPU emulator, timed by wall clock, records keyed ``emulator``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from qidao.compiler.tune.task import Task, named_task
from qidao.compiler.tune.templates import TARGETS, kernel_tasks, templates_of
from qidao.compiler.tune.tuner import Measurement, TuneResult, tune_task
from qidao.tools.tune_report import (
    compare_searches,
    format_comparison,
    rate_text,
    records_table,
)


def add_tune_parser(sub: Any) -> None:
    """Add ``tune`` to the ``qidao`` subcommands (``sub``: argparse subparsers)."""
    p = sub.add_parser(
        "tune",
        help="search a kernel's schedule space, measure, record the best",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("workload", nargs="?", help="matmul1024, matmul{M}x{K}x{N}, a model")
    p.add_argument("--trials", type=int, default=64, help="measured trials")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--records", default="tune.jsonl", help="JSON lines, appended")
    p.add_argument("--threads", type=int, default=1, help="threads of the kernel")
    p.add_argument("--target", choices=TARGETS, default="cpu")
    p.add_argument(
        "--device",
        choices=("cuda", "emulate"),
        help="--target cuda: the GPU (default) or the CPU emulator",
    )
    p.add_argument(
        "--report",
        metavar="FILE",
        help="print a records file, a line per key (no tuning)",
    )
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


def tasks_of(workload: str, target: str = "cpu") -> list[Task]:
    """The tasks of a workload name or model (distinct workloads, in kernel order)
    that ``target``'s templates know."""
    if target == "cuda":
        from qidao.compiler.tune.gpu_templates import named_gpu_task

        task = named_gpu_task(workload)
    else:
        task = named_task(workload)
    if task is not None:
        return [task]
    from qidao.compiler.schedule import Schedule
    from qidao.examples import model_argument

    module = Schedule.for_model(model_argument(workload)).module
    tasks = {t.key: t for t in kernel_tasks(module, target).values()}
    if not tasks:
        raise ValueError(
            f"no kernel of '{workload}' has a tuning template for target "
            f"'{target}' (kinds: {', '.join(templates_of(target))})"
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
        f"best: {rate_text(best.gflops)} GFLOP/s (trial {best.trial + 1}): "
        f"{result.space.describe(result.space.point(best.config))}",
        best.trace.rstrip(),
    ]
    tuned: float = best.gflops
    parts = []
    for name, label in (("default", "default schedule"),):
        rate = result.references.get(name)
        if rate:
            parts.append(f"{label} {rate_text(rate)} GFLOP/s ({tuned / rate:.2f}x)")
    if parts:
        lines.append(f"tuned {rate_text(tuned)} GFLOP/s vs " + ", ".join(parts))
    return "\n".join(lines)


def cmd_tune(args: argparse.Namespace) -> int:
    if args.report:
        from qidao.compiler.tune.records import load_records

        print(records_table(load_records(Path(args.report))))
        return 0
    if args.workload is None:
        raise ValueError("give a WORKLOAD to tune, or --report FILE")
    if args.device is not None and args.target != "cuda":
        raise ValueError(f"--device {args.device} is for --target cuda")
    how = Measurement(
        threads=args.threads,
        workers=args.workers,
        timeout=args.timeout,
        target=args.target,
        device=args.device or "cuda",
    )
    how.machine()  # no GPU: say why before anything else
    records = Path(args.records) if args.records else None
    for task in tasks_of(args.workload, args.target):
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
