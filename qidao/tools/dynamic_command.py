"""``qidao bench dynamic [MODEL ...] [--threads T]``: one compile for every sequence
length against programs specialized at each (``qidao/bench/dynamic.py``)."""

from __future__ import annotations

import argparse


def cmd_bench_dynamic(args: argparse.Namespace) -> int:
    """Run the workers, print the table; 1 when one failed."""
    from qidao.bench.dynamic import MODELS, format_table, run_dynamic

    rows = run_dynamic(args.workloads[1:] or list(MODELS), threads=args.threads or 1)
    print(format_table(rows))
    return 1 if any(r.error for r in rows) else 0
