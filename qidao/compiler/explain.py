"""Tables that explain a compiled model: its kernels, launches and buffers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

if TYPE_CHECKING:
    from qidao.compiler.compile import Compiled


def kernel_rows(compiled: Compiled) -> list[tuple[str, str]]:
    """(kernel symbol, the tg ops it runs) in launch order."""
    module = compiled.module("affine")
    contents: dict[str, str] = {}
    host: func.FuncOp | None = None
    for op in module.ops:
        if not isinstance(op, func.FuncOp):
            continue
        kind = op.attributes.get("qd.kernel")
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


def stats_table(compiled: Compiled) -> str:
    s = compiled.stats
    lines = [f"{'#':>3}  {'kernel':<28} ops", f"{'-' * 3}  {'-' * 28} {'-' * 30}"]
    for i, (name, ops) in enumerate(kernel_rows(compiled)):
        lines.append(f"{i:>3}  {name:<28} {ops}")
    lines.append("")
    lines.append(f"kernel launches per call : {s['kernels']}")
    lines.append(f"intermediate buffers     : {s['buffers']}")
    lines.append(f"peak intermediate bytes  : {s['peak_bytes']:,}")
    secs = s["compile_seconds"]
    lines.append(
        "compile time             : "
        + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in secs.items())
    )
    return "\n".join(lines)
