"""How close the searches get to the best point of a small space, and how fast.

``qidao tune matmul256 --exhaustive`` measures every point of the template's small
space once; this module then replays random and evolutionary search on that table
(``measure`` looks the GFLOP/s up instead of running the point) for many seeds and
counts the trials each needs to measure a point within 5% of the exhaustive best.
The replay sees exactly the numbers the exhaustive run measured, so the searches
are compared on the same noise.

``records_table`` summarizes a records file (``qidao tune --report FILE``): one
line per key (workload, target, machine, threads), CPU and GPU records alike, with
the trials, how many were ok, and the best one::

    workload                          target  machine              thr  trials  ok  best GFLOP/s  median    best point
    softmax|tg.softmax|8x64,8x64|f32  cuda    emulator               1       3   3          0.13  4.0 ms    schedule=thread_rows ...
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qidao.compiler.tune.records import Record
from qidao.compiler.tune.search import (
    Evolution,
    Trial,
    best_trial,
    evolutionary_search,
    random_search,
    trials_to_within,
)
from qidao.compiler.tune.space import Point, Space


@dataclass
class Comparison:
    space: Space
    best: Trial
    points: int
    fraction: float
    needed: dict[str, list[int | None]]
    """Search name -> trials to within ``fraction`` of the best, one per seed."""


def compare_searches(
    space: Space,
    history: Sequence[Trial],
    seeds: Sequence[int] = tuple(range(20)),
    fraction: float = 0.95,
    evolution: Evolution | None = None,
) -> Comparison:
    """Replay random and evolutionary search on the measured ``history`` of an
    exhaustive run of ``space``."""
    evolution = evolution or Evolution(start_from_recipe=False)
    best = best_trial(history)
    if best is None or best.gflops is None:
        raise ValueError("no trial of the exhaustive run succeeded")
    table: Mapping[Point, float | None] = {t.point: t.gflops for t in history}

    def measure(points: list[Point]) -> list[float | None]:
        return [table[p] for p in points]

    budget = len(table)
    needed: dict[str, list[int | None]] = {"random": [], "evolutionary": []}
    for seed in seeds:
        runs = {
            "random": random_search(space, measure, budget, seed, evolution.batch),
            "evolutionary": evolutionary_search(
                space, measure, budget, seed, evolution
            ),
        }
        for name, run in runs.items():
            needed[name].append(trials_to_within(run, best.gflops, fraction))
    return Comparison(space, best, len(table), fraction, needed)


def format_comparison(c: Comparison) -> str:
    pct = round(c.fraction * 100)
    lines = [
        f"exhaustive: {c.points} points of the small space, best "
        f"{c.best.gflops:.1f} GFLOP/s: {c.space.describe(c.best.point)}",
        f"trials to measure a point within {100 - pct}% of it (replayed on the "
        f"exhaustive measurements, {len(next(iter(c.needed.values())))} seeds):",
        f"  {'search':<13} {'median':>6} {'mean':>6} {'worst':>6}  "
        f"{'found in <= 16 trials':>21}",
    ]
    for name, counts in c.needed.items():
        found = [n for n in counts if n is not None]
        worst = max(found) if len(found) == len(counts) else None
        within16 = sum(1 for n in found if n <= 16)
        lines.append(
            f"  {name:<13} {statistics.median(found) if found else float('nan'):>6.1f} "
            f"{statistics.mean(found) if found else float('nan'):>6.1f} "
            f"{worst if worst is not None else 'never':>6}  "
            f"{within16:>12}/{len(counts)}"
        )
    return "\n".join(lines)


RECORDS_HEADER = ["workload", "target", "machine", "thr", "trials", "ok"]
RECORDS_HEADER += ["best GFLOP/s", "median", "best point"]
NUMERIC_COLUMNS = {3, 4, 5, 6}


def records_table(records: Sequence[Record]) -> str:
    """One line per key of ``records`` (module docstring), in the order the keys
    first appear."""
    groups: dict[tuple[str, str, str, int], list[Record]] = {}
    for record in records:
        groups.setdefault(record.key, []).append(record)
    if not groups:
        return "no records"
    rows = [RECORDS_HEADER]
    for (workload, target, machine, threads), group in groups.items():
        ok = [r for r in group if r.status == "ok" and r.gflops]
        best = max(ok, key=lambda r: r.gflops or 0.0) if ok else None
        rate, median, point = "-", "-", "-"
        if best is not None:
            rate = rate_text(best.gflops)
            median = _seconds(sorted(best.times)[len(best.times) // 2])
            point = " ".join(f"{k}={v}" for k, v in best.config.items()) or "-"
        counts = [str(threads), str(len(group)), str(len(ok))]
        rows.append([workload, target, machine, *counts, rate, median, point])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if i in NUMERIC_COLUMNS else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row[:-1], widths, strict=True))
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def rate_text(gflops: float | None) -> str:
    """GFLOP/s with one decimal, or three significant digits below 1 (the
    emulator's rates)."""
    if gflops is None:
        return "-"
    return f"{gflops:.1f}" if gflops >= 1.0 else f"{gflops:.3g}"


def _seconds(value: float) -> str:
    if value >= 1.0:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.1f} us"
