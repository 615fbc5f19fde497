"""The PNG of a ``qidao bench-cuda`` run: qidao against PyTorch, and the targets.

Two panels, from the rows alone (``cuda_results.py`` reads them):

- left, per workload with a qidao row: torch's median over qidao's (log scale,
  the dashed line is PyTorch's speed), a black tick at the issue's target where
  the target is a ``vs_torch`` one, the bar green when it is met, red when not,
  grey without a target; a row with no number says ``not built`` or ``failed``;
- right, per row that moves as many bytes as a copy measured in the same run:
  its GB/s as a fraction of the copy bandwidth (the best of ``cuMemcpyDtoD`` and
  torch's ``copy_``), with the chain's target (0.85) as a line.

The title names the device and that TF32 is off except on ``tf32`` rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qidao.tools.cuda_results import (
    GpuResult,
    of_copy,
    target_status,
    vs_torch,
)

MET, MISSED, NO_TARGET = "#2ca02c", "#d62728", "#7f7f7f"


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
    from qidao.tools.bench import _pyplot

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


__all__ = ["plot_suite"]
