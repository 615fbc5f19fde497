"""The run-time checks of ``qidao.compile(model, checks=True)``, read after a call.

The ``insert-checks`` pass (``qidao/passes/graph/insert_checks.py``) gives the
graph's entry function a few extra ``f64`` scalar results per gather and integer
division and lists them in ``qd.checks``. :class:`Checks` is that list: the
compiled model calls its program with room for the extra results, hands them to
:meth:`Checks.split`, which raises ``qidao.CheckError`` naming the node (as ONNX
Runtime raises) if one failed, and returns the model's own outputs otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)

from qidao.compiler.host import entry_function
from qidao.dialects.attributes import CHECKS_ATTR
from qidao.errors import CheckError
from qidao.passes.graph.insert_checks import RESULTS_PER_KIND
from qidao.runtime.executor import TensorSpec


@dataclass(frozen=True)
class Check:
    """One check: ``kind`` (``index`` or ``divisor``), the node it guards
    (``source``) and, for an index, the ``size`` of the axis and the lowest valid
    index (``low``: ``-size``, or 0 where the source rejects negative indices)."""

    kind: str
    source: str
    size: int = 0
    low: int = 0

    @property
    def results(self) -> int:
        return len(RESULTS_PER_KIND[self.kind])

    def failure(self, values: Sequence[float]) -> str | None:
        """What went wrong, from this check's results; None if nothing did."""
        if self.kind == "divisor":
            zeros = int(values[0])
            if zeros == 0:
                return None
            return (
                f"{self.source}: integer division by zero ({zeros} divisor "
                f"element{'s' if zeros > 1 else ''} "
                f"{'are' if zeros > 1 else 'is'} 0)"
            )
        highest, lowest = values[0], -values[1]
        n = self.size
        if highest < n and lowest >= self.low:
            return None
        bad = highest if highest >= n else lowest
        return (
            f"{self.source}: index {_int(bad)} is out of bounds for an axis of size "
            f"{n} (valid indices are {self.low} to {n - 1}); the indices range over "
            f"[{_int(lowest)}, {_int(highest)}]"
        )


def _int(value: float) -> str:
    """An index read back as ``f64``: exact below 2^53, else marked approximate."""
    if abs(value) < 2.0**53:
        return str(int(value))
    return f"about {value:.4g}"


@dataclass(frozen=True)
class Checks:
    """The checks of a compiled model, in the order of its extra results."""

    checks: tuple[Check, ...] = ()

    @staticmethod
    def of(module: ModuleOp) -> Checks:
        """The checks ``insert-checks`` listed on ``module``'s entry function."""
        attr = entry_function(module).attributes.get(CHECKS_ATTR)
        if not isinstance(attr, ArrayAttr):
            return Checks()
        checks = []
        for entry in attr.data:
            assert isinstance(entry, DictionaryAttr), entry
            fields: dict[str, Any] = {}
            for key, value in entry.data.items():
                if isinstance(value, StringAttr):
                    fields[key] = value.data
                elif isinstance(value, IntegerAttr):
                    fields[key] = value.value.data
            checks.append(Check(**fields))
        return Checks(tuple(checks))

    @property
    def results(self) -> int:
        """How many extra results the program has."""
        return sum(c.results for c in self.checks)

    def specs(self) -> list[TensorSpec]:
        """The extra results as the runtime sees them: ``f64`` scalars."""
        return [TensorSpec(f"check{k}", (), "float64") for k in range(self.results)]

    def split(self, results: Sequence[Any]) -> list[Any]:
        """The model's own outputs of ``results``; raises ``CheckError`` listing
        every check that failed."""
        if not self.checks:
            return list(results)
        own = len(results) - self.results
        values = [float(np.asarray(v).reshape(-1)[0]) for v in results[own:]]
        failures = []
        at = 0
        for check in self.checks:
            failure = check.failure(values[at : at + check.results])
            at += check.results
            if failure is not None:
                failures.append(failure)
        if failures:
            raise CheckError("; ".join(failures))
        return list(results[:own])

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"kind": c.kind, "source": c.source, "size": c.size, "low": c.low}
            for c in self.checks
        ]

    @staticmethod
    def from_json(data: object) -> Checks:
        """The checks of a cache entry; ValueError if an entry does not read."""
        if not isinstance(data, list):
            raise ValueError(f"checks must be a list, got {type(data).__name__}")
        checks = []
        for entry in data:
            if not (
                isinstance(entry, dict)
                and entry.get("kind") in RESULTS_PER_KIND
                and isinstance(entry.get("source"), str)
                and all(
                    isinstance(entry.get(k), int) and not isinstance(entry[k], bool)
                    for k in ("size", "low")
                )
                and -entry["size"] <= entry["low"] <= 0 <= entry["size"]
            ):
                raise ValueError(f"a check does not read: {entry!r}")
            checks.append(
                Check(entry["kind"], entry["source"], entry["size"], entry["low"])
            )
        return Checks(tuple(checks))
