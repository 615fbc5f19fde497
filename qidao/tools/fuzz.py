"""``qidao fuzz``: hostile inputs against qidao, each case in a worker process with a
timeout, so that a crash of native code or a hang is recorded as one, not lost.

    qidao fuzz                                  # 20 cases of every kind
    qidao fuzz --kinds graph schedule --cases 500 --seed 1000 --timeout 60
    qidao fuzz --minutes 30 --csv bench-results/fuzz.csv   # the long run

The command line only: the fuzzer is ``qidao/fuzz/`` (the cases in ``cases.py``, the
worker processes and statuses in ``run.py``, the table and CSV in ``report.py``). The
command prints the counts per kind and every failure with the line that reproduces
it, writes them to the CSV, and exits 1 when any failed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from qidao.fuzz.cases import KINDS
from qidao.fuzz.report import format_counts, write_csv
from qidao.fuzz.run import run_fuzz


def cmd_fuzz(args: argparse.Namespace) -> int:
    outcomes = run_fuzz(
        args.kinds,
        args.cases,
        seed=args.seed,
        timeout=args.timeout,
        minutes=args.minutes,
    )
    print(format_counts(outcomes))
    if args.csv:
        write_csv(Path(args.csv), outcomes)
        print(f"\nCSV: {args.csv}")
    return 1 if any(o.failed for o in outcomes) else 0


def add_fuzz_parser(sub: Any) -> None:
    p = sub.add_parser(
        "fuzz",
        help="hostile inputs, each case in a worker process: counts and failures",
    )
    p.add_argument(
        "--kinds",
        nargs="+",
        default=list(KINDS),
        choices=[*KINDS, "selftest-crash", "selftest-hang", "selftest-raw"],
        help="the kinds of case (default: all); see qidao/fuzz/cases.py",
    )
    p.add_argument("--cases", type=int, default=20, help="cases of each kind")
    p.add_argument("--seed", type=int, default=0, help="the first case's seed")
    p.add_argument(
        "--timeout", type=float, default=60.0, help="seconds before a case is a hang"
    )
    p.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="run round after round for this long instead of --cases",
    )
    p.add_argument("--csv", default=None, help="write every outcome to this CSV")
    p.set_defaults(run=cmd_fuzz)
