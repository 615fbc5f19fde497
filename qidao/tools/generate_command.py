"""``qidao bench generate [MODEL ...] [--threads T]``: a llama GGUF file
generating, qidao against PyTorch eager (``qidao/bench/generate.py``)."""

from __future__ import annotations

import argparse


def cmd_bench_generate(args: argparse.Namespace) -> int:
    """Run the jobs, print the table; 1 when a job failed or qidao's tokens differ
    from PyTorch's."""
    from qidao.bench.generate import DEFAULT_MODELS, format_table, run_generate

    models = args.workloads[1:] or list(DEFAULT_MODELS)
    rows = run_generate(models, threads=args.threads or 1)
    print(format_table(rows))
    by = {(r.model, r.encoding, r.job): r for r in rows}
    bad = any(r.error for r in rows) or any(
        r.tokens != by[(r.model, r.encoding, "torch")].tokens
        for r in rows
        if r.job == "qidao"
    )
    return 1 if bad else 0
