"""Tables that explain a compiled model: its kernels, launches, buffers and bytes.

``stats_table(graph, eager)`` puts the two modes side by side: what the graph passes
(fusion, memory planning, ...) saved over running every tg op as its own kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

from qidao.dialects.attributes import KERNEL_ATTR

if TYPE_CHECKING:
    from qidao import Compiled

_ROWS = (
    ("kernels", "kernel launches per call"),
    ("buffers", "intermediate buffers"),
    ("peak_bytes", "peak intermediate bytes"),
    ("traffic_bytes", "intermediate traffic bytes"),
)


def kernel_rows(compiled: Compiled) -> list[tuple[str, str]]:
    """(kernel symbol, the tg ops it runs) in launch order."""
    module = compiled.module("affine")
    contents: dict[str, str] = {}
    host: func.FuncOp | None = None
    for op in module.ops:
        if not isinstance(op, func.FuncOp):
            continue
        kind = op.attributes.get(KERNEL_ATTR)
        if isinstance(kind, StringAttr):
            contents[op.sym_name.data] = kind.data
        if op.sym_name.data == "main":
            host = op
    assert host is not None
    return [
        (call.callee.string_value(), contents.get(call.callee.string_value(), "?"))
        for call in host.walk()
        if isinstance(call, func.CallOp)
    ]


def kernel_table(compiled: Compiled) -> list[str]:
    lines = [f"{'#':>3}  {'kernel':<28} ops", f"{'-' * 3}  {'-' * 28} {'-' * 30}"]
    for i, (name, ops) in enumerate(kernel_rows(compiled)):
        lines.append(f"{i:>3}  {name:<28} {ops}")
    return lines


def stats_table(compiled: Compiled, eager: Compiled | None = None) -> str:
    """The kernel table and the counts of ``compiled``; with ``eager`` (the same
    model compiled with ``mode="eager"``), both modes side by side."""
    if eager is None:
        return _one_mode(compiled)
    lines = [f"graph mode (after the passes): {_kernels(compiled)}"]
    lines += kernel_table(compiled)
    lines += ["", f"eager mode (before the passes): {_kernels(eager)}"]
    lines += kernel_table(eager)
    lines += ["", f"{'per call':<28} {'eager':>14} {'graph':>14}"]
    for key, label in _ROWS:
        lines.append(f"{label:<28} {eager.stats[key]:>14,} {compiled.stats[key]:>14,}")
    lines += ["", f"{'compile time (ms)':<28} {'eager':>14} {'graph':>14}"]
    before, after = eager.stats["compile_seconds"], compiled.stats["compile_seconds"]
    for stage in list(after) + [s for s in before if s not in after]:
        lines.append(f"{stage:<28} {_ms(before, stage):>14} {_ms(after, stage):>14}")
    lines.append(f"{'total':<28} {_ms_total(before):>14} {_ms_total(after):>14}")
    lines += training_lines(compiled, eager)
    lines += conv_algo_lines(compiled)
    return "\n".join(lines)


_TRAINING_ROWS = (
    ("saved_bytes", "activations kept for backward"),
    ("recompute_flops", "recomputed FLOPs"),
    ("step_flops", "FLOPs of the step"),
)


def training_lines(compiled: Compiled, eager: Compiled) -> list[str]:
    """What a graph with gradients keeps for its backward and recomputes
    (``stats["saved_bytes"]``, ...; the ``checkpoint`` pass), or nothing."""
    if "saved_bytes" not in compiled.stats:
        return []
    lines = ["", f"{'training (bytes, FLOPs)':<28} {'eager':>14} {'graph':>14}"]
    for key, label in _TRAINING_ROWS:
        lines.append(
            f"{label:<28} {eager.stats.get(key, 0):>14,} {compiled.stats[key]:>14,}"
        )
    shares = [f"{m.stats.get('recompute_share', 0.0):.1%}" for m in (eager, compiled)]
    lines.append(f"{'recomputation share':<28} {shares[0]:>14} {shares[1]:>14}")
    if "segments" in compiled.stats:
        lines.append(
            f"checkpoint: {compiled.stats['segments']} segments, "
            f"{compiled.stats['kept']} of {compiled.stats['segments'] - 1} "
            "boundaries kept"
        )
    return lines


def conv_algo_lines(compiled: Compiled) -> list[str]:
    """The algorithm each convolution got and why (``stats["conv_algo"]``: graph
    mode's ``select-conv-algo``), or nothing for a model without convolutions."""
    algos = compiled.stats.get("conv_algo") or {}
    if not algos:
        return []
    width = max(len(name) for name in algos)
    lines = ["", f"convolution algorithms ({len(algos)}, algo= chooses):"]
    lines += [f"  {name:<{width}}  {why}" for name, why in algos.items()]
    return lines


def _one_mode(compiled: Compiled) -> str:
    s = compiled.stats
    lines = kernel_table(compiled)
    lines.append("")
    for key, label in _ROWS:
        lines.append(f"{label:<26} : {s[key]:,}")
    secs = s["compile_seconds"]
    lines.append(
        f"{'compile time':<26} : "
        + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in secs.items())
    )
    lines += conv_algo_lines(compiled)
    return "\n".join(lines)


def _kernels(compiled: Compiled) -> str:
    n = compiled.stats["kernels"]
    return f"{n} kernel{'s' if n != 1 else ''}"


def _ms(seconds: dict[str, Any], stage: str) -> str:
    return f"{seconds[stage] * 1e3:.1f}" if stage in seconds else "-"


def _ms_total(seconds: dict[str, Any]) -> str:
    return f"{sum(seconds.values()) * 1e3:.1f}"
