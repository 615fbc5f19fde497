"""The GPU templates, by kind: the first that matches a kernel tunes it for
``target="cuda"``.

Each searches the numbers of a building block of the default GPU schedule
(``qidao/compiler/targets/cuda/defaults.py``), so every point is a default
schedule with other numbers and its trace replays like any other:

==============================  ===============================  ===================
kinds                           knobs                            file
==============================  ===============================  ===================
``matmul``                      ``register_tile``'s ``MatmulTile  ``gpu_matmul.py``
                                (ty, tx, tm, tn, bk)``, or a
                                thread per element of C
``softmax``, ``layer_norm``,    ``block_rows``' threads a row    ``gpu_rows.py``
``reduce_sum/mean/max``         and rows a block, or a thread
                                per row
``relu``, ``exp``, ... ``add``,  ``bind_nest``'s threads a block,  ``gpu_elementwise.py``
``mul``, ...                    and a float4 a thread or not
==============================  ===============================  ===================

``named_gpu_task`` reads a workload name for ``qidao tune --target cuda``:
``matmul1024``, ``matmul{M}x{K}x{N}``, ``softmax{R}x{C}``, ``layernorm{R}x{C}``,
``reduce_sum{R}x{C}`` (``_mean``, ``_max``), ``relu{N}`` or ``add{R}x{C}`` (any
op of ``gpu_elementwise``).
"""

from __future__ import annotations

import re

from qidao.compiler.tune.gpu_elementwise import BINARY, ELEMENTWISE_TEMPLATES, UNARY
from qidao.compiler.tune.gpu_matmul import GPU_MATMUL
from qidao.compiler.tune.gpu_rows import LAYER_NORM, REDUCTIONS, ROWS_TEMPLATES
from qidao.compiler.tune.space import Template
from qidao.compiler.tune.task import Task, named_task

GPU_TEMPLATES: dict[str, Template] = {
    t.kind: t for t in (GPU_MATMUL, *ROWS_TEMPLATES, *ELEMENTWISE_TEMPLATES)
}
"""Kind -> its GPU template (``templates.templates_of("cuda")``)."""

_NAMED = re.compile(r"([a-z_]+?)(\d+(?:x\d+)*)")


def named_gpu_task(name: str) -> Task | None:
    """The task of a workload name (module docstring), or None."""
    task = named_task(name)
    if task is not None:
        return task
    match = _NAMED.fullmatch(name)
    if match is None:
        return None
    kind = {"layernorm": "layer_norm"}.get(match.group(1), match.group(1))
    dims = tuple(int(d) for d in match.group(2).split("x"))
    ops = LAYER_NORM if kind == "layer_norm" else f"tg.{kind}"
    shapes: tuple[tuple[int, ...], ...]
    if kind in ("softmax", *UNARY):
        shapes = (dims, dims)
    elif kind in BINARY:
        shapes = (dims, dims, dims)
    elif kind == "layer_norm":
        shapes = (dims, (dims[-1],), (dims[-1],), dims)
    elif kind in REDUCTIONS:
        shapes = (dims, dims[:-1])
    else:
        return None
    template = GPU_TEMPLATES[kind]
    return Task(kind, ops, shapes) if template.matches(ops, shapes, "f32") else None
