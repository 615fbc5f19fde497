"""The schedule space of one task: knobs, their values, and the points between.

A :class:`Template` (one per kernel kind, see ``matmul.py``) declares its knobs
(``Knob("tile_i", (1, 2, 4, 8, 16))``), the constraints a point must meet, how a
point becomes a schedule (``apply``: calls on a :class:`Schedule`, so every point
turns into a replayable trace), the features the cost model reads, and the
standalone graph a trial measures. A :class:`Space` is a template bound to a task
(its shapes) with the knob values available here: a knob that ``requires`` a pass
offers only its first value until that pass is registered, and a knob that
``needs_threads`` only its first value when tuning for one thread.

A point is a tuple of knob values in knob order; ``canonical`` maps points that
give the same schedule to one (a matmul without a k split has no ``k_o`` to place).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.compiler.tune.task import Task, kernel_signatures
from qidao.passes import all_passes

KnobValue = int | str | bool
Point = tuple[KnobValue, ...]
Config = dict[str, KnobValue]


@dataclass(frozen=True)
class Knob:
    """One decision of a template and the values it may take (the first is the
    "off" value when the knob is unavailable)."""

    name: str
    values: tuple[KnobValue, ...]
    doc: str = ""
    requires: str = ""
    """A pass that must be registered for the other values (``cache-read``)."""
    needs_threads: bool = False
    """Only the first value when tuning for one thread (``parallel``)."""


@dataclass(frozen=True)
class Template:
    """How to search one kernel kind; every callable takes the task too."""

    kind: str
    knobs: tuple[Knob, ...]
    matches: Callable[[str, tuple[tuple[int, ...], ...], str], bool]
    apply: Callable[[Schedule, str, Config, Task], None]
    violation: Callable[[Config, Task], str]
    """Why a point is not a valid schedule ("" when it is)."""
    canonical: Callable[[Config, Task], Config]
    features: Callable[[Config, Task], list[float]]
    graph: Callable[[Task], Any]
    reference: Callable[[Sequence[np.ndarray[Any, Any]]], np.ndarray[Any, Any]]
    flops: Callable[[Task], float]
    small: Mapping[str, tuple[KnobValue, ...]] = field(default_factory=dict)
    """Knob values of the small space (``--exhaustive``); other knobs: first value."""
    recipe: Mapping[str, KnobValue] = field(default_factory=dict)
    """A hand-written point to compare with (the ladder's for a matmul)."""


class Space:
    """A template's points for one task."""

    def __init__(
        self,
        template: Template,
        task: Task,
        threads: int = 1,
        small: bool = False,
    ) -> None:
        self.template = template
        self.task = task
        registered = all_passes()
        knobs: list[Knob] = []
        for knob in template.knobs:
            values = knob.values
            if small:
                values = template.small.get(knob.name, values[:1])
            if (knob.requires and knob.requires not in registered) or (
                knob.needs_threads and threads <= 1
            ):
                values = values[:1]
            knobs.append(Knob(knob.name, values, knob.doc))
        self.knobs = tuple(knobs)
        self._module: Any = None
        self._kernel = ""
        self._traces: dict[Point, str | ScheduleError] = {}

    # --- points -------------------------------------------------------------

    def config(self, point: Point) -> Config:
        return {k.name: v for k, v in zip(self.knobs, point, strict=True)}

    def point(self, config: Mapping[str, KnobValue]) -> Point:
        """The point of ``config``: knobs it lacks, or whose value this space does
        not offer (``parallel`` with one thread), take their first value."""
        return tuple(
            config[k.name] if config.get(k.name) in k.values else k.values[0]
            for k in self.knobs
        )

    def canonical(self, point: Point) -> Point:
        return self.point(self.template.canonical(self.config(point), self.task))

    def violation(self, point: Point) -> str:
        return self.template.violation(self.config(point), self.task)

    def points(self) -> list[Point]:
        """Every valid canonical point, each once, in knob-value order."""
        seen: dict[Point, None] = {}
        for values in itertools.product(*(k.values for k in self.knobs)):
            point = self.canonical(tuple(values))
            if point not in seen and not self.violation(point):
                seen[point] = None
        return list(seen)

    def random_point(self, rng: np.random.Generator) -> Point:
        values = [k.values[int(rng.integers(len(k.values)))] for k in self.knobs]
        return self.canonical(tuple(values))

    def mutate(self, rng: np.random.Generator, point: Point) -> Point:
        """Change one or two knobs (among those with a choice) to another value."""
        free = [i for i, k in enumerate(self.knobs) if len(k.values) > 1]
        if not free:
            return point
        values = list(point)
        for _ in range(1 + int(rng.random() < 0.3)):
            i = free[int(rng.integers(len(free)))]
            others = [v for v in self.knobs[i].values if v != values[i]]
            values[i] = others[int(rng.integers(len(others)))]
        return self.canonical(tuple(values))

    def crossover(self, rng: np.random.Generator, a: Point, b: Point) -> Point:
        """Each knob from ``a`` or ``b`` at random."""
        mask = rng.random(len(a)) < 0.5
        return self.canonical(
            tuple(x if m else y for x, y, m in zip(a, b, mask, strict=True))
        )

    def features(self, points: Sequence[Point]) -> np.ndarray[Any, Any]:
        rows = [self.template.features(self.config(p), self.task) for p in points]
        return np.asarray(rows, dtype=np.float64).reshape(len(points), -1)

    # --- schedules ----------------------------------------------------------

    def affine(self) -> tuple[Any, str]:
        """The task's standalone graph at the affine stage, and its kernel."""
        if self._module is None:
            schedule = Schedule.for_model(self.template.graph(self.task))
            self._module = schedule.module
            self._kernel = next(
                name
                for name, signature in kernel_signatures(self._module).items()
                if self.template.matches(*signature)
            )
        return self._module, self._kernel

    def trace(self, point: Point) -> str:
        """The point's schedule as a Python trace; raises the ``ScheduleError`` of
        a point that the primitives refuse (cached either way)."""
        if point not in self._traces:
            reason = self.violation(point)
            if reason:
                raise ValueError(f"not a valid point: {reason}")
            module, kernel = self.affine()
            schedule = Schedule(module.clone())
            try:
                self.template.apply(schedule, kernel, self.config(point), self.task)
                self._traces[point] = schedule.python()
            except ScheduleError as err:
                self._traces[point] = err
        found = self._traces[point]
        if isinstance(found, ScheduleError):
            raise found
        return found

    def describe(self, point: Point) -> str:
        return " ".join(f"{k}={v}" for k, v in self.config(point).items())
