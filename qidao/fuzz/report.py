"""What a fuzz run found: the counts per kind and status with every failure and the
line that reproduces it (what ``qidao fuzz`` prints), and every outcome as a CSV."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from qidao.fuzz.run import STATUSES, Outcome


def format_counts(outcomes: Sequence[Outcome]) -> str:
    """The counts per kind and status, then every failure and how to reproduce it."""
    kinds = list(dict.fromkeys(o.kind for o in outcomes))
    counts = Counter((o.kind, o.status) for o in outcomes)
    header = f"{'kind':<16}" + "".join(f"{s:>9}" for s in STATUSES) + f"{'total':>9}"
    lines = [header, "-" * len(header)]
    for kind in [*kinds, "all"]:
        row = [
            counts[(kind, s)]
            if kind != "all"
            else sum(v for (k, st), v in counts.items() if st == s)
            for s in STATUSES
        ]
        lines.append(f"{kind:<16}" + "".join(f"{c:>9}" for c in row) + f"{sum(row):>9}")
    failed = [o for o in outcomes if o.failed]
    lines.append("")
    lines.append(f"{len(failed)} failure(s)" + (":" if failed else ""))
    for o in failed:
        lines.append(f"  {o.status:<6} {o.kind} seed {o.seed}: {o.detail}")
        lines.append(f"         {o.reproduce()}")
    return "\n".join(lines)


def write_csv(path: Path, outcomes: Sequence[Outcome]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["kind", "seed", "status", "seconds", "detail"])
        for o in outcomes:
            writer.writerow([o.kind, o.seed, o.status, f"{o.seconds:.3f}", o.detail])
