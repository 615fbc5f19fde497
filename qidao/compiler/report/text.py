"""``qidao explain MODEL`` without ``--html``: the kernel table and the compile
time per stage, as text."""

from __future__ import annotations

from qidao.compiler.report.collect import Explanation, format_seconds


def summary_text(x: Explanation) -> str:
    """A few lines: what the page shows first, for a terminal."""
    s = x.stats
    lines = [
        f"qidao explain: {x.model} ({x.target}, {s.get('threads')} thread(s), "
        f"{x.compiled.mode} mode): {x.graph.tg_ops} tg ops, {s['kernels']} kernel "
        f"launch(es) per call",
        "",
        f"{'kernel':<28} {'launches':>8} {'bytes':>12} {'time':>11} "
        f"{'GFLOP/s':>8} {'GB/s':>7}  tg ops",
    ]
    for k in x.kernels:
        lines.append(
            f"{k.kernel:<28} {k.launches:>8} {k.bytes:>12,} {format_seconds(k.seconds, 'us'):>11} "
            f"{_rate(k.gflops):>8} {_rate(k.gbytes):>7}  {k.ops}"
        )
        if k.default:
            lines.append(f"{'':<4}default schedule: {k.default}")
    if x.profile is not None:
        lines.append(
            f"one call: {format_seconds(x.profile.total_us * 1e-6, 'us')} (median of {x.runs})"
        )
    seconds = s.get("compile_seconds", {})
    lines += ["", "compile time per stage (ms):"]
    lines += [f"  {stage:<14} {value * 1e3:>9.1f}" for stage, value in seconds.items()]
    lines.append(f"  {'total':<14} {sum(seconds.values()) * 1e3:>9.1f}")
    changed = [f"{p.stage}/{p.name}" for p in x.log.passes if p.changed]
    lines += ["", f"passes that changed the IR: {', '.join(changed) or 'none'}"]
    return "\n".join(lines)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
