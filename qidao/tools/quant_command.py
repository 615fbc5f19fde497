"""``qidao bench quant``: quantized models, qidao against ONNX Runtime.

The benchmark itself is ``qidao/bench/quant.py`` (its models
``qidao/bench/quant_models.py``); the command takes the ``bench`` parser's
arguments: ``qidao bench quant [cnn bert ...] [--threads T] [--min-time S]
[--csv PATH]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_bench_quant(args: argparse.Namespace) -> int:
    """Run the models' jobs, print the table; 1 when a job failed. An unknown
    model is a ValueError naming the models (the command line's exit code 2)."""
    from qidao.bench.quant import DEFAULT_CSV, failed_models, format_table, run_quant
    from qidao.bench.quant_models import DEFAULT_MODELS

    if args.backends:
        raise ValueError("'quant' compares qidao with ONNX Runtime: no --backends")
    if args.plot is not None:
        raise ValueError("'quant' draws no plot: its results are the table and --csv")
    args.csv = args.csv or DEFAULT_CSV
    rows = run_quant(
        args.workloads[1:] or DEFAULT_MODELS,
        threads=args.threads,
        min_time=args.min_time,
        csv_path=Path(args.csv),
    )
    print(format_table(rows))
    print(f"\nCSV: {args.csv}")
    return 1 if failed_models(rows) else 0
