"""How close the searches get to the best point of a small space, and how fast.

``qidao tune matmul256 --exhaustive`` measures every point of the template's small
space once; this module then replays random and evolutionary search on that table
(``measure`` looks the GFLOP/s up instead of running the point) for many seeds and
counts the trials each needs to measure a point within 5% of the exhaustive best.
The replay sees exactly the numbers the exhaustive run measured, so the searches
are compared on the same noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
