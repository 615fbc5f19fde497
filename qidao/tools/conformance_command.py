"""``qidao conformance onnx``: ONNX's own node test cases through ``qidao.compile``.

    qidao conformance onnx                     # every case; a table per operator
    qidao conformance onnx --op Relu --op Conv # only these operators
    qidao conformance onnx --csv out.csv       # one row per case, with its reason
    qidao conformance onnx --isolate --jobs 2  # each operator in its own process
    qidao conformance onnx --per-op 1          # the first case of each operator
    qidao conformance onnx --isolate --jobs 2 \\
        --check-baseline tests/data/onnx_conformance_baseline.json
    qidao conformance onnx --write-baseline tests/data/onnx_conformance_baseline.json

Each case is compiled on the CPU and checked against the outputs ONNX ships with
it (``qidao/tools/conformance.py`` runs them, ``conformance_cases.py`` judges one).
The command's module imports neither, nor ``onnx``, until it runs: ``qidao``'s
other commands start without them.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_conformance_parser(sub: Any) -> None:
    """``qidao conformance onnx ...`` on the ``qidao`` command's subparsers."""
    p = sub.add_parser(
        "conformance",
        help="run ONNX's own node test cases through qidao: pass/fail/unsupported/deviates",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("suite", choices=("onnx",), help="the test suite (onnx)")
    p.add_argument(
        "--op",
        action="append",
        metavar="OP",
        help="only this operator (repeatable), e.g. --op Relu",
    )
    p.add_argument("--csv", metavar="PATH", help="write one row per case here")
    p.add_argument(
        "--write-baseline",
        metavar="PATH",
        help="write the pass counts per operator and the passing cases here (the "
        "test's baseline: tests/data/onnx_conformance_baseline.json); needs every "
        "case of the operators run (no --per-op)",
    )
    p.add_argument(
        "--check-baseline",
        metavar="PATH",
        help="exit with status 1 if a case this baseline lists as passing does not "
        "pass now (only the cases that ran are checked)",
    )
    p.add_argument(
        "--per-op",
        type=int,
        metavar="N",
        help="only the first N cases of each operator (by name): a quick sample",
    )
    p.add_argument(
        "--isolate",
        action="store_true",
        help="run each operator's cases in a child process (a native crash is "
        "recorded as a fail instead of ending the run)",
    )
    p.add_argument(
        "--jobs", type=int, default=1, help="child processes at a time, --isolate"
    )
    p.add_argument(
        "--failures",
        action="store_true",
        help="also list every failing case with its reason",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from qidao.tools.conformance import cmd_conformance

    return cmd_conformance(args)
