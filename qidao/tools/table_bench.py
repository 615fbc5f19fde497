"""What ``qidao bench quant`` and ``qidao bench bf16`` share: the ``bench``
parser's arguments checked, a benchmark of models run, its table printed."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def run_table_bench(
    args: argparse.Namespace,
    kind: str,
    against: str,
    run: Callable[..., Sequence[Any]],
    defaults: Sequence[str],
    default_csv: str,
    format_table: Callable[[Sequence[Any]], str],
    failed: Callable[[Sequence[Any]], Sequence[str]],
) -> int:
    """``qidao bench <kind> [models...] [--threads T] [--min-time S] [--csv
    PATH]``: ``run(models, threads=, min_time=, csv_path=)``'s rows as a table; 1
    when a job failed. ``against`` names the reference (for the refusal of
    ``--backends``)."""
    if args.backends:
        raise ValueError(f"'{kind}' compares qidao with {against}: no --backends")
    if args.plot is not None:
        raise ValueError(f"'{kind}' draws no plot: its results are the table and --csv")
    args.csv = args.csv or default_csv
    rows = run(
        args.workloads[1:] or defaults,
        threads=args.threads,
        min_time=args.min_time,
        csv_path=Path(args.csv),
    )
    print(format_table(rows))
    print(f"\nCSV: {args.csv}")
    return 1 if failed(rows) else 0
