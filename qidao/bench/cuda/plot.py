"""The PNG of a ``qidao bench-cuda`` run: qidao against PyTorch, and the targets.

Two panels, from the rows alone (``cuda_results.py`` reads them):

- left, per workload with a qidao row: torch's median over qidao's (log scale,
  the dashed line is PyTorch's speed), a black tick at the speed target where
  the target is a ``vs_torch`` one, the bar green when it is met, red when not,
  grey without a target; a row with no number says ``not built`` or ``failed``;
- right, per row that moves as many bytes as a copy measured in the same run:
  its GB/s as a fraction of the copy bandwidth (the best of ``cuMemcpyDtoD`` and
  torch's ``copy_``), with the chain's target (0.85) as a line.

The title names the device and that TF32 is off except on ``tf32`` rows.

The GPU ladder's PNG (``plot_ladder``, for ``--suite ladder``): a bar of TFLOP/s
per rung in the ladder's order (log scale: the naive rung is thousands of times
slower), labelled with the rung, its size when it is not the ladder's (the naive
rung's 128^3) and its precision when it is not FP32 (the tensor-core rung's
TF32 bar is orange); cuBLAS FP32 and cuBLAS TF32 as horizontal lines (the median
of the torch rows at the ladder's size in that precision); a rung with no number
says ``not run``, ``not built`` or ``failed``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from qidao.bench.cuda.ladder import rung_of
from qidao.bench.cuda.results import (
    GpuResult,
    of_copy,
    target_status,
    vs_torch,
)

MET, MISSED, NO_TARGET = "#2ca02c", "#d62728", "#7f7f7f"
FP32_BAR, TF32_BAR = "#1f77b4", "#ff7f0e"
LADDER_SUITES = ("ladder", "ladder-small")


def _vs_torch_panel(ax: Any, results: Sequence[GpuResult]) -> None:
    ratios, fractions = vs_torch(results), of_copy(results)
    rows = [r for r in results if r.backend == "qidao"]
    shown = [1.0]  # the values on the axis: PyTorch's line, the ratios, the targets
    for i, r in enumerate(rows):
        ratio = ratios.get((r.workload, "qidao"))
        _, meets = target_status(r, ratios, fractions)
        metric, _, at_least = r.target.partition(">=")
        if ratio is None:
            why = "not built" if r.not_built else ("failed" if r.error else "no torch")
            ax.text(i, 1.0, why, rotation=90, ha="center", va="center", fontsize=8)
        else:
            color = NO_TARGET
            if metric == "vs_torch":
                color = MET if meets == "yes" else MISSED
            bar = ax.bar([i], [ratio], 0.6, color=color)
            ax.bar_label(bar, labels=[f"{ratio:.2f}x"], fontsize=7)
            shown.append(ratio)
        if metric == "vs_torch":
            ax.plot([i - 0.4, i + 0.4], [float(at_least)] * 2, color="black", lw=2)
            shown.append(float(at_least))
    ax.set_yscale("log")
    ax.set_ylim(min(shown) / 2, max(shown) * 2)
    ax.set_xlim(-0.6, max(len(rows), 1) - 0.4)
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(rows)), [r.workload for r in rows], rotation=30, ha="right")
    ax.set_ylabel("PyTorch's median / qidao's (log)")
    ax.set_title("qidao vs PyTorch (black tick: the target)")


def _copy_panel(ax: Any, results: Sequence[GpuResult]) -> None:
    fractions = of_copy(results)
    rows = [r for r in results if (r.workload, r.backend) in fractions]
    if not rows:
        ax.text(0.5, 0.5, "no copy bandwidth measured", ha="center", va="center")
        ax.set_axis_off()
        return
    targets = {
        float(r.target.partition(">=")[2])
        for r in rows
        if r.target.startswith("of_copy>=")
    }
    for i, r in enumerate(rows):
        fraction = fractions[(r.workload, r.backend)]
        color = NO_TARGET
        if r.target.startswith("of_copy>="):
            color = MET if fraction >= float(r.target.partition(">=")[2]) else MISSED
        bar = ax.bar([i], [fraction], 0.6, color=color)
        ax.bar_label(bar, labels=[f"{fraction:.0%}"], fontsize=7)
    for at_least in sorted(targets):
        ax.axhline(at_least, color="black", linewidth=1.2, linestyle="--")
        ax.text(
            len(rows) - 0.5,
            at_least,
            f" target {at_least:.0%}",
            va="bottom",
            ha="right",
            fontsize=8,
        )
    ax.set_xticks(
        range(len(rows)),
        [f"{r.workload} {r.backend}" for r in rows],
        rotation=30,
        ha="right",
    )
    ax.set_ylim(0, max(1.1, max(fractions.values()) * 1.1))
    ax.set_ylabel("GB/s / the copy bandwidth")
    ax.set_title("fraction of the device-to-device copy bandwidth")


def plot_suite(results: Sequence[GpuResult], path: Path) -> None:
    """Draw ``results`` into the PNG at ``path`` (see the module doc)."""
    from qidao.bench.workloads import _pyplot

    plt = _pyplot()
    n = sum(1 for r in results if r.backend == "qidao")
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(max(10.0, 0.8 * n + 8), 4.8), width_ratios=[3, 2]
    )
    _vs_torch_panel(left, results)
    _copy_panel(right, results)
    devices = sorted({r.device for r in results if r.device})
    timer = "wall-clock" if devices == ["emulator"] else "CUDA-event"
    fig.suptitle(
        f"qidao bench-cuda on {', '.join(devices) or '?'}: {timer} medians, "
        "TF32 off except on tf32 rows"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tflops(r: GpuResult) -> float | None:
    gflops = r.gflop_per_s
    return None if gflops is None else gflops / 1e3


def _cube(flops_per_call: int) -> int:
    """n of a matmul n^3 doing ``flops_per_call`` (2 n^3) FLOPs."""
    return round(math.cbrt(flops_per_call / 2))


def cublas_lines(results: Sequence[GpuResult]) -> dict[str, float]:
    """Precision -> the median TFLOP/s of the ladder's torch (cuBLAS) rows in it
    at the ladder's size (the most FLOPs a call among the rows)."""
    rungs = [r for r in results if r.workload.startswith("ladder_")]
    size = max((r.flops_per_call for r in rungs), default=0)
    lines = {}
    for precision in ("fp32", "tf32"):
        values = [
            t
            for r in rungs
            if r.backend == "torch"
            and r.precision == precision
            and r.flops_per_call == size
            and (t := _tflops(r)) is not None
        ]
        if values:
            lines[precision] = statistics.median(values)
    return lines


def plot_ladder(results: Sequence[GpuResult], path: Path) -> None:
    """Draw the GPU ladder's ``results`` into the PNG at ``path`` (module doc)."""
    from qidao.bench.workloads import _pyplot

    plt = _pyplot()
    rows = [
        r for r in results if r.backend == "qidao" and r.workload.startswith("ladder_")
    ]
    size = max((r.flops_per_call for r in rows), default=0)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(rows) + 3), 4.8))
    shown = []
    labels = []
    for i, r in enumerate(rows):
        label = rung_of(r.workload)
        if r.flops_per_call != size:
            label += f"\n({_cube(r.flops_per_call)}^3)"
        if r.precision != "fp32":
            label += f"\n{r.precision.upper()}"
        labels.append(label)
        tflops = _tflops(r)
        if tflops is None:
            why = "not run" if r.not_run else "not built" if r.not_built else "failed"
            ax.text(
                i,
                0.5,  # half-way up the axes, whatever the scale
                why,
                rotation=90,
                ha="center",
                va="center",
                fontsize=8,
                transform=ax.get_xaxis_transform(),
            )
            continue
        color = FP32_BAR if r.precision == "fp32" else TF32_BAR
        bar = ax.bar([i], [tflops], 0.6, color=color)
        ax.bar_label(bar, labels=[f"{tflops:.3g}"], fontsize=8)
        shown.append(tflops)
    lines = cublas_lines(results)
    styles = {"fp32": ("black", "--"), "tf32": (TF32_BAR, ":")}
    for precision, tflops in lines.items():
        color, style = styles[precision]
        ax.axhline(tflops, color=color, linestyle=style, linewidth=1.2)
        ax.text(
            len(rows) - 0.5,
            tflops,
            f"cuBLAS {precision.upper()} {tflops:.3g}",
            va="bottom",
            ha="right",
            fontsize=8,
            color=color,
        )
        shown.append(tflops)
    ax.set_yscale("log")
    ax.set_ylim(min(shown, default=1.0) / 3, max(shown, default=1.0) * 3)
    ax.set_xlim(-0.6, max(len(rows), 1) - 0.4)
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylabel("TFLOP/s (log)")
    devices = sorted({r.device for r in results if r.device})
    timer = "wall-clock" if devices == ["emulator"] else "CUDA-event"
    n = _cube(size) if size else "?"
    ax.set_title(
        f"the GPU ladder: matmul {n}^3 float32 on {', '.join(devices) or '?'} "
        f"({timer} medians; TF32 off but on TF32 rows)",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_for(suite: str | None) -> Callable[[Sequence[GpuResult], Path], None]:
    """The plot of a ``qidao bench-cuda`` run of ``suite``: the ladder's, or
    ``plot_suite``."""
    return plot_ladder if suite in LADDER_SUITES else plot_suite


__all__ = ["LADDER_SUITES", "cublas_lines", "plot_for", "plot_ladder", "plot_suite"]
