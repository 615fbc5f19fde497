"""The ``checkpoint`` option of ``qidao.compile``: which activations a training
graph keeps, checked before any work, and the budget check after the planner.

```python
qidao.compile(model, grad=[...], checkpoint=4)                  # every 4th segment
qidao.compile(model, grad=[...], checkpoint="sqrt")             # k = round(sqrt(N))
qidao.compile(model, grad=[...], checkpoint={"budget": 8 << 20})  # peak <= 8 MiB
qidao.compile(model, grad=[...], checkpoint={"budget": 8 << 20, "search": "exact"})
```

The ``checkpoint`` pass (``qidao.passes.graph.checkpoint``) does the work; this
module turns the option into the pass's options and, in budget mode, makes the
budget hold for the peak the memory planner measures (``stats["peak_bytes"]``):
the pass searches with a model of memory (the fused graph's tensors, without the
planner's slot sharing), so when the planned peak lands above the budget, the
model's budget is scaled down by the overshoot and the graph compiled again (at most :data:`BUDGET_TRIES` times, else an error naming
both numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qidao.errors import ArgumentError

BUDGET_TRIES = 4
"""Compiles a budget may take before the planned peak fits (or the error)."""


@dataclass(frozen=True)
class Checkpointing:
    """The checked ``checkpoint`` option: ``every`` (k), ``sqrt`` or a
    ``budget`` in bytes (``model_budget``: what the pass is given, at most it)."""

    every: int = 0
    sqrt: bool = False
    budget: int = 0
    exact: bool = False
    model_budget: int = 0
    kind: str = "checkpoint"

    def pass_options(self) -> dict[str, Any]:
        if self.budget:
            return {"budget": self.model_budget or self.budget, "exact": self.exact}
        if self.sqrt:
            return {"sqrt": True}
        return {"every": self.every}


def check_checkpoint(value: object, grad: list[str] | None) -> Checkpointing | None:
    """``checkpoint=`` as given to ``qidao.compile``, checked (None: off)."""
    if value is None or isinstance(value, Checkpointing):
        return value
    if not grad:
        raise ArgumentError(
            "checkpoint= trades the activations a backward pass keeps for "
            "recomputation; it needs grad=[...]"
        )
    if isinstance(value, bool):
        raise ArgumentError(_usage(value))
    if isinstance(value, int):
        if value < 1:
            raise ArgumentError(_usage(value))
        return Checkpointing(every=value)
    if value == "sqrt":
        return Checkpointing(sqrt=True)
    if (
        isinstance(value, dict)
        and "budget" in value
        and set(value)
        <= {
            "budget",
            "search",
        }
    ):
        budget, search = value["budget"], value.get("search", "greedy")
        if (
            isinstance(budget, int)
            and not isinstance(budget, bool)
            and budget > 0
            and search in ("greedy", "exact")
        ):
            return Checkpointing(budget=budget, exact=search == "exact")
    raise ArgumentError(_usage(value))


def _usage(value: object) -> str:
    return (
        f"checkpoint={value!r}; expected a positive integer k (keep every k-th "
        "segment's activation), 'sqrt' (k = round(sqrt(N))) or {'budget': bytes} "
        "(the least recomputation whose peak stays under that many bytes; "
        "'search': 'greedy' (the default) or 'exact' (N <= 16))"
    )
