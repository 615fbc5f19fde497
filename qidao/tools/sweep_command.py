"""``qidao bench sweep``: the architecture sweep's options and command.

The sweep itself is ``qidao/bench/sweep.py``; its options sit in the ``bench``
parser's ``sweep`` group (``qidao bench sweep --only bert gpt2 --no-time``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_CSV = "bench-results/sweep.csv"


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    """The ``sweep`` options of ``qidao bench``."""
    from qidao.bench.sweep import DEFAULT_TIMEOUT
    from qidao.bench.sweep_jobs import DTYPES

    g = p.add_argument_group(
        "sweep",
        "qidao bench sweep: every transformers architecture it can build from a "
        "small config (random weights, no download), exported to ONNX and run by "
        "ONNX Runtime, by qidao on the ONNX file and by torch.compile(backend="
        "'qidao'), at one thread; a CSV row per architecture as it finishes "
        f"(--csv, default {DEFAULT_CSV}; docs/benchmarks/sweep.csv is made with "
        "--csv docs/benchmarks/sweep.csv), then a summary",
    )
    g.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="sweep: only these architectures (transformers model types: bert, "
        "gpt2, vit, ...)",
    )
    g.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="sweep: only the first N architectures (sorted)",
    )
    g.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="sweep: architectures at once, each with its own workers (default 1; "
        "more shares the cores, and the times with them)",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help="sweep: seconds one job (export, ort, qidao, torch) of an architecture "
        f"may run before its worker is killed (default {DEFAULT_TIMEOUT:g})",
    )
    g.add_argument(
        "--no-torch", action="store_true", help="sweep: skip the torch.compile path"
    )
    g.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float32",
        help="sweep: the models' dtype (default float32). bfloat16: each model "
        ".to(torch.bfloat16) (floating inputs too), checked against PyTorch eager "
        "in bfloat16 within a few bfloat16 ulps; ONNX Runtime skipped (no bfloat16 "
        "Gemm on its CPU provider); the torch.compile path runs even where the "
        "ONNX export fails",
    )
    g.add_argument(
        "--no-time",
        action="store_true",
        help="sweep: check only, no timing of qidao against ONNX Runtime",
    )


def cmd_bench_sweep(args: argparse.Namespace) -> int:
    """Run the sweep, print its table and summary; 1 when an architecture that
    ONNX Runtime runs is wrong, crashed or failed internally in qidao (in
    bfloat16: one that eager runs and exported is so on the ONNX path, or one that
    eager runs is wrong or crashed on the torch.compile path)."""
    from qidao.bench.sweep import (
        eager_ran,
        format_table,
        run_sweep,
        select,
        summarize,
    )
    from qidao.bench.sweep_configs import architectures

    if args.workloads != ["sweep"] or args.backends:
        raise ValueError(
            "'sweep' runs alone: qidao bench sweep [--only NAME ...] [--limit N] ..."
        )
    args.csv = args.csv or DEFAULT_CSV
    rows = run_sweep(
        select(architectures(), args.only or (), args.limit),
        csv_path=Path(args.csv),
        jobs=args.jobs,
        timeout=args.timeout,
        torch=not args.no_torch,
        timed=not args.no_time,
        dtype=args.dtype,
    )
    print(format_table(rows))
    print()
    print(summarize(rows))
    print(f"\nCSV: {args.csv}")
    bad = ("wrong", "crashed", "internal")
    if args.dtype == "float32":
        return 1 if any(r.ort == "ok" and r.qidao in bad for r in rows) else 0
    wrong = any(
        (r.export == "ok" and r.qidao in bad) or (r.torch in ("wrong", "crashed"))
        for r in rows
        if eager_ran(r)
    )
    return 1 if wrong else 0
