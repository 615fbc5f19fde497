"""``qidao bench quant``: quantized models, qidao against ONNX Runtime.

The benchmark itself is ``qidao/bench/quant.py`` (its models
``qidao/bench/quant_models.py``); the command takes the ``bench`` parser's
arguments: ``qidao bench quant [cnn bert ...] [--threads T] [--min-time S]
[--csv PATH]``.
"""

from __future__ import annotations

import argparse

from qidao.tools.table_bench import run_table_bench


def cmd_bench_quant(args: argparse.Namespace) -> int:
    """Run the models' jobs, print the table; 1 when a job failed. An unknown
    model is a ValueError naming the models (the command line's exit code 2)."""
    from qidao.bench.quant import DEFAULT_CSV, failed_models, format_table, run_quant
    from qidao.bench.quant_models import DEFAULT_MODELS

    return run_table_bench(
        args,
        "quant",
        "ONNX Runtime",
        run_quant,
        DEFAULT_MODELS,
        DEFAULT_CSV,
        format_table,
        failed_models,
    )
