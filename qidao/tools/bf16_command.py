"""``qidao bench bf16``: bfloat16 models, qidao against PyTorch eager.

The benchmark itself is ``qidao/bench/bf16.py`` (its models
``qidao/bench/bf16_models.py``); the command takes the ``bench`` parser's
arguments: ``qidao bench bf16 [mlp bert gpt2 ...] [--threads T] [--min-time S]
[--csv PATH]``.
"""

from __future__ import annotations

import argparse

from qidao.tools.table_bench import run_table_bench


def cmd_bench_bf16(args: argparse.Namespace) -> int:
    """Run the models' jobs, print the table; 1 when a job failed. An unknown
    model is a ValueError naming the models (the command line's exit code 2)."""
    from qidao.bench.bf16 import DEFAULT_CSV, failed_models, format_table, run_bf16
    from qidao.bench.bf16_models import DEFAULT_MODELS

    return run_table_bench(
        args,
        "bf16",
        "PyTorch eager",
        run_bf16,
        DEFAULT_MODELS,
        DEFAULT_CSV,
        format_table,
        failed_models,
    )
