"""Search strategies over a :class:`Space`: exhaustive, random, and evolutionary
search guided by a learned cost model.

Each takes ``measure``, a function from a batch of points to their GFLOP/s (None
for a failed trial), so the same search runs on real trials (``tuner.py``) or on a
table of earlier measurements (``report.py``). A point the schedule primitives
refuse is skipped before it is measured: it costs no trial.

Evolutionary search: the first batch is random; then, before each batch, the cost
model (``cost_model.BoostedTrees``) is fitted on every measured point (log2
GFLOP/s; failed trials count as half the worst rate) and a population seeded with
the best measured points evolves for a few generations: children by mutation (one
or two knobs changed) and crossover (each knob from one of two parents), the
model's best-scored kept. The batch is the best-scored unmeasured children, plus a
share of random points so the model keeps learning outside its favourites. The
seed fixes every random choice: the same measurements give the same candidates in
the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from qidao.compiler.schedule import ScheduleError
from qidao.compiler.tune.cost_model import BoostedTrees
from qidao.compiler.tune.space import Point, Space

Measure = Callable[[list[Point]], list[float | None]]


@dataclass(frozen=True)
class Trial:
    """A measured point: its GFLOP/s, or None when the trial failed."""

    point: Point
    gflops: float | None


class _State:
    """The points measured or refused so far."""

    def __init__(self, space: Space, measure: Measure) -> None:
        self.space = space
        self.measure = measure
        self.history: list[Trial] = []
        self.seen: set[Point] = set()

    def usable(self, point: Point) -> bool:
        """Unseen, within the constraints, and accepted by the primitives; a refused
        point is remembered as seen."""
        if point in self.seen or self.space.violation(point):
            return False
        try:
            self.space.trace(point)
        except ScheduleError:
            self.seen.add(point)
            return False
        return True

    def run(self, points: list[Point]) -> None:
        for point, gflops in zip(points, self.measure(points), strict=True):
            self.history.append(Trial(point, gflops))
            self.seen.add(point)

    def random(
        self, rng: np.random.Generator, n: int, taken: Sequence[Point]
    ) -> list[Point]:
        """Up to ``n`` usable random points not in ``taken``."""
        picks: list[Point] = []
        for _ in range(200 * max(n, 1)):
            if len(picks) == n:
                break
            point = self.space.random_point(rng)
            if point not in picks and point not in taken and self.usable(point):
                picks.append(point)
        return picks


def exhaustive_search(space: Space, measure: Measure, batch: int = 8) -> list[Trial]:
    """Every valid point of ``space`` in order."""
    state = _State(space, measure)
    points = [p for p in space.points() if state.usable(p)]
    for start in range(0, len(points), batch):
        state.run(points[start : start + batch])
    return state.history


def random_search(
    space: Space, measure: Measure, trials: int, seed: int = 0, batch: int = 8
) -> list[Trial]:
    """``trials`` distinct random points."""
    rng = np.random.default_rng(seed)
    state = _State(space, measure)
    while len(state.history) < trials:
        picks = state.random(rng, min(batch, trials - len(state.history)), ())
        if not picks:
            break
        state.run(picks)
    return state.history


@dataclass(frozen=True)
class Evolution:
    """The knobs of the evolutionary search."""

    batch: int = 8
    population: int = 64
    generations: int = 4
    explore: float = 0.25
    """The share of each batch picked at random."""
    start_from_recipe: bool = True
    """Measure the template's recipe (the default schedule's point) in the first
    batch, so a tuning run never ends below it; the comparison with random search
    (``report.py``) turns this off, so both start from nothing."""


def evolutionary_search(
    space: Space,
    measure: Measure,
    trials: int,
    seed: int = 0,
    settings: Evolution = Evolution(),
) -> list[Trial]:
    """``trials`` points chosen by model-guided evolution (module docstring)."""
    rng = np.random.default_rng(seed)
    state = _State(space, measure)
    while len(state.history) < trials:
        n = min(settings.batch, trials - len(state.history))
        if not state.history and settings.start_from_recipe:
            recipe = space.canonical(space.point(space.template.recipe))
            start = [recipe] if state.usable(recipe) else []
            picks = start + state.random(rng, n - len(start), start)
        elif not any(t.gflops for t in state.history):
            picks = state.random(rng, n, ())
        else:
            picks = _propose(state, rng, n, settings)
        if not picks:
            break
        state.run(picks)
    return state.history


def _fit(state: _State) -> BoostedTrees:
    rates = [t.gflops for t in state.history if t.gflops]
    floor = np.log2(min(rates) / 2)
    x = state.space.features([t.point for t in state.history])
    y = np.array([np.log2(t.gflops) if t.gflops else floor for t in state.history])
    return BoostedTrees().fit(x, y)


def _propose(
    state: _State, rng: np.random.Generator, n: int, settings: Evolution
) -> list[Point]:
    model = _fit(state)
    space = state.space
    ranked = sorted(
        (t for t in state.history if t.gflops), key=lambda t: -(t.gflops or 0.0)
    )
    parents = [t.point for t in ranked[: max(2, settings.population // 4)]]
    population = list(parents)
    scores: dict[Point, float] = {}
    for _ in range(settings.generations):
        children: dict[Point, None] = {}
        for _ in range(settings.population):
            draw = rng.random()
            if draw < 0.6:
                child = space.mutate(
                    rng, population[int(rng.integers(len(population)))]
                )
            elif draw < 0.9:
                a = population[int(rng.integers(len(population)))]
                b = population[int(rng.integers(len(population)))]
                child = space.crossover(rng, a, b)
            else:
                child = space.random_point(rng)
            if child not in state.seen and not space.violation(child):
                children[child] = None
        if not children:
            continue
        fresh = list(children)
        predicted = model.predict(space.features(fresh))
        for point, score in zip(fresh, predicted, strict=True):
            scores[point] = float(score)
        best = sorted(fresh, key=lambda p: -scores[p])[: settings.population // 2]
        population = parents + best
    n_random = round(n * settings.explore)
    picks: list[Point] = []
    for point in sorted(scores, key=lambda p: -scores[p]):
        if len(picks) == n - n_random:
            break
        if state.usable(point):
            picks.append(point)
    picks += state.random(rng, n - len(picks), picks)
    return picks


def best_trial(history: Sequence[Trial]) -> Trial | None:
    ok = [t for t in history if t.gflops]
    return max(ok, key=lambda t: t.gflops or 0.0) if ok else None


def trials_to_within(
    history: Sequence[Trial], target: float, fraction: float = 0.95
) -> int | None:
    """How many trials it took to measure a point within ``fraction`` of
    ``target`` GFLOP/s (None: never)."""
    for count, trial in enumerate(history, start=1):
        if trial.gflops and trial.gflops >= fraction * target:
            return count
    return None
