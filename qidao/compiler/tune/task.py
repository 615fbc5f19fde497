"""Tuning tasks: one kernel's workload (its kind, tg ops, argument shapes, dtype).

A task is what the tuner measures and what a record is keyed by. It is read off a
kernel of the ``affine`` stage (``func.func private @main_k0_matmul`` with
``qd.kernel = "tg.matmul"``), so the same workload inside another model, under
another kernel name, finds the same records. Each task is measured standalone: its
template builds a one-kernel graph of the same shapes (``x @ w`` for a matmul).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr

from qidao.dialects.attributes import KERNEL_ATTR
from qidao.passes.schedule.loops.nest import kernel_functions

DTYPE_NAMES = {"f32": "float32", "f64": "float64"}


@dataclass(frozen=True)
class Task:
    """One kernel workload. ``shapes`` are the kernel's arguments (inputs, then
    the output), ``dtype`` their element type (``f32``)."""

    kind: str
    ops: str
    shapes: tuple[tuple[int, ...], ...]
    dtype: str = "f32"

    @property
    def key(self) -> str:
        """``matmul|tg.matmul|1024x1024,1024x1024,1024x1024|f32``."""
        shapes = ",".join("x".join(map(str, s)) for s in self.shapes)
        return f"{self.kind}|{self.ops}|{shapes}|{self.dtype}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "ops": self.ops,
            "shapes": [list(s) for s in self.shapes],
            "dtype": self.dtype,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        return cls(
            str(data["kind"]),
            str(data["ops"]),
            tuple(tuple(int(d) for d in s) for s in data["shapes"]),
            str(data["dtype"]),
        )


def kernel_signature(fn: func.FuncOp) -> Signature:
    """The ``qd.kernel`` ops, argument shapes and element type of a kernel."""
    ops = fn.attributes.get(KERNEL_ATTR)
    ops_text = ops.data if isinstance(ops, StringAttr) else str(ops)
    shapes: list[tuple[int, ...]] = []
    dtypes: set[str] = set()
    for arg in fn.body.block.args:
        if not isinstance(arg.type, MemRefType):
            raise ValueError(f"@{fn.sym_name.data}: argument of type {arg.type}")
        shapes.append(tuple(arg.type.get_shape()))
        dtypes.add(str(arg.type.get_element_type()))
    dtype = dtypes.pop() if len(dtypes) == 1 else "mixed"
    return ops_text, tuple(shapes), dtype


Signature = tuple[str, tuple[tuple[int, ...], ...], str]
"""A kernel's ``qd.kernel`` ops, argument shapes and element type."""


def kernel_signatures(module: ModuleOp) -> dict[str, Signature]:
    """Kernel name -> its signature, for every kernel of an affine-stage module
    whose arguments are all memrefs."""
    signatures: dict[str, Signature] = {}
    for name, fn in kernel_functions(module).items():
        try:
            signatures[name] = kernel_signature(fn)
        except ValueError:
            continue
    return signatures


_MATMUL = re.compile(r"matmul(\d+)(?:x(\d+)x(\d+))?")


def named_task(name: str) -> Task | None:
    """``matmul1024`` (N×N×N) or ``matmul{M}x{K}x{N}`` (x: M×K, w: K×N), else None."""
    match = _MATMUL.fullmatch(name)
    if match is None:
        return None
    m = int(match.group(1))
    k = int(match.group(2) or m)
    n = int(match.group(3) or m)
    return Task("matmul", "tg.matmul", ((m, k), (k, n), (m, n)), "f32")
