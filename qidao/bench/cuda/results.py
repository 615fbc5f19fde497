"""``qidao bench-cuda``'s rows and what is read off them: ratios, the copy
bandwidth, the speed targets, the CSV and the table.

A :class:`GpuResult` is one (workload, backend) row: the median, or the error
that stopped it. Read off a run's rows:

- ``vs_torch``: torch's median over the row's (above 1: faster than PyTorch);
- the copy bandwidth: the best GB/s of a copy workload's ``memcpy``
  (``cuMemcpyDtoD``) and ``torch`` (``y.copy_(x)``) rows, and ``of_copy``: a row's
  GB/s over the copy bandwidth measured on as many bytes (within 1%) in the same
  run, so ``chain26``'s rows read against ``copy26``'s;
- the target: a qidao row of a workload with one (``vs_torch>=0.9``,
  ``of_copy>=0.85``) says whether it ``meets`` it (``yes``/``no``; empty when
  the row has no number).

A row whose error starts with ``not built:`` is a feature qidao does not have
yet (the tensor-core matmuls while the CUDA target takes no ``tensor_cores``
option): it is listed, and it does not count as a failure (:func:`failures`);
nor does one that starts with ``not run:``, a row that needs what the run was
not given (the GPU ladder's ``tuned`` rung without ``--records``).

A qidao row carries its exact schedule (``schedule``: the replayable trace of
``compiled.stats["schedule"]``; empty for ``schedule=None``), the CSV's last
column: a number always comes with the schedule that made it.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

NOT_BUILT = "not built: "
"""How a row's error starts when qidao lacks the feature the workload needs."""

NOT_RUN = "not run: "
"""How a row's error starts when the run lacks an input the row needs (records)."""

COPY_BACKENDS = ("memcpy", "torch")
"""The rows of a copy workload that measure the device's copy bandwidth."""


@dataclass(frozen=True)
class GpuResult:
    workload: str
    backend: str
    median_us: float = math.nan
    runs: int = 0
    launches: int = 0
    compile_s: float = 0.0
    rel_err: float | None = None
    flops_per_call: int = 0
    bytes_per_call: int = 0
    device: str = ""
    error: str = ""
    precision: str = ""
    """``fp32``, ``tf32`` or ``fp16``: what the row computed in."""
    target: str = ""
    """The speed target of a qidao row, ``metric>=value`` (``Target.describe``)."""
    schedule: str = ""
    """A qidao row's schedule trace (``compiled.stats["schedule"]``)."""

    @property
    def gflop_per_s(self) -> float | None:
        if not self.flops_per_call or self.error or not self.median_us > 0:
            return None
        return self.flops_per_call / (self.median_us * 1e-6) / 1e9

    @property
    def gb_per_s(self) -> float | None:
        if not self.bytes_per_call or self.error or not self.median_us > 0:
            return None
        return self.bytes_per_call / (self.median_us * 1e-6) / 1e9

    @property
    def not_built(self) -> bool:
        return self.error.startswith(NOT_BUILT)

    @property
    def not_run(self) -> bool:
        return self.error.startswith(NOT_RUN)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> GpuResult:
        return cls(**json.loads(text))


def failures(results: Sequence[GpuResult]) -> list[GpuResult]:
    """The rows that failed (an error that is not ``not built`` or ``not run``)."""
    return [r for r in results if r.error and not r.not_built and not r.not_run]


def vs_torch(results: Sequence[GpuResult]) -> dict[tuple[str, str], float]:
    """torch's median / the row's median, per (workload, backend) with both."""
    base = {
        r.workload: r.median_us
        for r in results
        if r.backend == "torch" and not r.error and r.median_us > 0
    }
    return {
        (r.workload, r.backend): base[r.workload] / r.median_us
        for r in results
        if r.workload in base and not r.error and r.median_us > 0
    }


def copy_bandwidth(results: Sequence[GpuResult]) -> dict[int, float]:
    """Bytes per call -> the best GB/s of the copy rows (``COPY_BACKENDS`` of a
    workload that has a ``memcpy`` row) moving that many bytes."""
    copies = {r.workload for r in results if r.backend == "memcpy"}
    best: dict[int, float] = {}
    for r in results:
        gb = r.gb_per_s
        if r.workload in copies and r.backend in COPY_BACKENDS and gb is not None:
            best[r.bytes_per_call] = max(best.get(r.bytes_per_call, 0.0), gb)
    return best


def of_copy(results: Sequence[GpuResult]) -> dict[tuple[str, str], float]:
    """A row's GB/s over the copy bandwidth of as many bytes (within 1%), per
    (workload, backend) where the run has one."""
    bandwidth = copy_bandwidth(results)
    fractions = {}
    for r in results:
        gb = r.gb_per_s
        if gb is None:
            continue
        for nbytes, copy_gb in bandwidth.items():
            if abs(r.bytes_per_call - nbytes) <= 0.01 * nbytes:
                fractions[(r.workload, r.backend)] = gb / copy_gb
    return fractions


def target_status(
    r: GpuResult,
    ratios: dict[tuple[str, str], float],
    fractions: dict[tuple[str, str], float],
) -> tuple[float | None, str]:
    """The value a row's target reads and ``yes``/``no`` (both empty-ish when the
    row has no target or no number)."""
    if not r.target:
        return None, ""
    metric, _, at_least = r.target.partition(">=")
    table = {"vs_torch": ratios, "of_copy": fractions}.get(metric)
    if table is None:
        raise ValueError(f"{r.workload}: unknown target metric in '{r.target}'")
    value = table.get((r.workload, r.backend))
    if value is None:
        return None, ""
    return value, "yes" if value >= float(at_least) else "no"


# --- the CSV -------------------------------------------------------------------------

CSV_COLUMNS = (
    "workload",
    "backend",
    "device",
    "precision",
    "median_us",
    "runs",
    "launches",
    "vs_torch",
    "of_copy",
    "target",
    "meets",
    "gflop_per_s",
    "gb_per_s",
    "rel_err",
    "compile_s",
    "flops_per_call",
    "bytes_per_call",
    "error",
    "schedule",
)


def _num(value: float | None, digits: int) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def write_csv(results: Sequence[GpuResult], path: Path) -> None:
    ratios, fractions = vs_torch(results), of_copy(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_COLUMNS)
        for r in results:
            _, meets = target_status(r, ratios, fractions)
            out.writerow(
                [
                    r.workload,
                    r.backend,
                    r.device,
                    r.precision,
                    _num(r.median_us, 3),
                    r.runs,
                    r.launches,
                    _num(ratios.get((r.workload, r.backend)), 3),
                    _num(fractions.get((r.workload, r.backend)), 3),
                    r.target,
                    meets,
                    _num(r.gflop_per_s, 2),
                    _num(r.gb_per_s, 2),
                    "" if r.rel_err is None else f"{r.rel_err:.2e}",
                    _num(r.compile_s, 3),
                    r.flops_per_call,
                    r.bytes_per_call,
                    r.error,
                    r.schedule,
                ]
            )


# --- the table -----------------------------------------------------------------------

TF32_NOTE = (
    "torch: TF32 off (torch.backends.cuda.matmul.allow_tf32 = False, "
    "torch.backends.cudnn.allow_tf32 = False) except on tf32 rows (both True)"
)

W = 22
"""The workload column's width."""

TABLE_HEADER = (
    f"{'workload':<{W}} {'backend':<6} {'median':>11} {'vs torch':>8} "
    f"{'of copy':>7} {'GFLOP/s':>9} {'GB/s':>8} {'rel err':>8} {'runs':>5} "
    f"{'launch':>6}"
)


def format_row(r: GpuResult, results: Sequence[GpuResult]) -> str:
    if r.not_built or r.not_run:
        return f"{r.workload:<{W}} {r.backend:<6} {r.error}"
    if r.error:
        return f"{r.workload:<{W}} {r.backend:<6} FAILED: {r.error}"
    s = vs_torch(results).get((r.workload, r.backend))
    c = of_copy(results).get((r.workload, r.backend))
    median = (
        f"{r.median_us:,.2f} us"
        if r.median_us < 1e4
        else f"{r.median_us / 1e3:,.2f} ms"
    )
    gf, gb = r.gflop_per_s, r.gb_per_s
    return (
        f"{r.workload:<{W}} {r.backend:<6} {median:>11} "
        f"{'' if s is None else f'{s:.2f}x':>8} "
        f"{'' if c is None else f'{c:.1%}':>7} "
        f"{'' if gf is None else f'{gf:,.1f}':>9} "
        f"{'' if gb is None else f'{gb:,.1f}':>8} "
        f"{'' if r.rel_err is None else f'{r.rel_err:.1e}':>8} {r.runs:>5} "
        f"{r.launches or '':>6}"
    )


def format_targets(results: Sequence[GpuResult]) -> list[str]:
    """One line per qidao row with a target: the value, the target, met or not."""
    ratios, fractions = vs_torch(results), of_copy(results)
    lines = []
    for r in results:
        if not r.target:
            continue
        value, meets = target_status(r, ratios, fractions)
        if value is None:
            why = "not built" if r.not_built else "unmeasured"
            lines.append(f"  {r.workload:<{W}} {r.target:<15} {why}")
        else:
            verdict = "met" if meets == "yes" else "NOT met"
            lines.append(f"  {r.workload:<{W}} {r.target:<15} {value:6.3f}  {verdict}")
    return ["targets (the qidao rows):", *lines] if lines else []


def format_table(results: Sequence[GpuResult]) -> str:
    devices = sorted({r.device for r in results if r.device})
    rows = [f"device: {', '.join(devices) or '?'}", TF32_NOTE, TABLE_HEADER]
    rows += [format_row(r, results) for r in results]
    for nbytes, gb in sorted(copy_bandwidth(results).items()):
        rows.append(
            f"copy bandwidth ({nbytes:,} bytes a call, read + written; the best of "
            f"cuMemcpyDtoD and torch's copy_): {gb:,.1f} GB/s"
        )
    rows += format_targets(results)
    not_built = [f"{r.workload}/{r.backend}" for r in results if r.not_built]
    if not_built:
        rows.append(f"not built (not counted as failures): {', '.join(not_built)}")
    not_run = [f"{r.workload}/{r.backend}" for r in results if r.not_run]
    if not_run:
        rows.append(f"not run (not counted as failures): {', '.join(not_run)}")
    return "\n".join(rows)


__all__ = [
    "CSV_COLUMNS",
    "NOT_BUILT",
    "NOT_RUN",
    "GpuResult",
    "copy_bandwidth",
    "failures",
    "format_row",
    "format_table",
    "of_copy",
    "target_status",
    "vs_torch",
    "write_csv",
]
