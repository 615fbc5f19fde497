"""The GPU rows templates: softmax, layer norm and the reductions over the last
axis, with the default schedule's ``block_rows`` (or ``thread_rows``) searched.

The default GPU schedule of a rows kernel (``targets/cuda/defaults.py``,
``block_rows``) gives a row to ``T`` threads (each pass over the row a
block-stride loop whose reduction is combined across them) and ``Y`` rows to a
block, ``T`` from the row's length and ``Y`` from ``T``; when it does not apply, a
thread per row (``thread_rows``). A point of these templates picks ``T`` and ``Y``
itself (or ``thread_rows``, one more point)::

    knobs   schedule      block_rows | thread_rows
            threads       32, 64, 128, 256, 512, 1024   T: threads sharing a row
            rows_a_block  1, 2, 4, 8                     Y: rows of a block

    softmax 8 x 64, threads=32 rows_a_block=4
    ==> split i0 by 4; bind i0_o -> blockIdx.x, i0_i -> threadIdx.y;
        block_stride 32 r_max, r_sum, r_norm       (2 blocks of 32 x 4 threads)

A point is valid when ``T * Y <= 1024`` and ``Y`` divides the innermost row loop
(the second-to-last axis). One template per workload, each rebuilding its
standalone graph from the kernel's shapes:

==============  ==========================================  ====================
kind            the kernel (``qd.kernel``; shapes)           nominal FLOPs
==============  ==========================================  ====================
``softmax``     ``tg.softmax``; x, out (rank >= 2)           4 an element
``layer_norm``  the nine tg ops of ``(x - mean) / sqrt(var   8 an element
                + eps) * weight + bias`` (``LAYER_NORM``);
                x, weight, bias, out (eps 1e-5)
``reduce_sum``  ``tg.reduce_sum`` (and ``_mean``, ``_max``)  1 an element
                over the last axis; x, out (x's shape less
                its last axis, or with it 1)
==============  ==========================================  ====================

A softmax over another axis has the same ``qd.kernel`` and shapes only when the
tensor is square; its record then applies a schedule made for the last axis
(still correct: the primitives check what they change).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.defaults import block_rows, thread_rows
from qidao.compiler.tune.gpu_space import each_nest, elements, log2, step
from qidao.compiler.tune.space import Config, Knob, Template
from qidao.compiler.tune.task import Task

Array = np.ndarray[Any, Any]
Shapes = tuple[tuple[int, ...], ...]

MAX_BLOCK_THREADS = 1024
LAYER_NORM = (
    "tg.reduce_mean+tg.sub+tg.mul+tg.reduce_mean+tg.add+tg.sqrt+tg.div+tg.mul+tg.add"
)
"""The ``qd.kernel`` of a layer norm built from tg ops (the ``layernorm`` example,
``qidao/bench/cuda/workloads.py``'s ``layer_norm``)."""
LAYER_NORM_EPS = 1e-5

KNOBS = (
    Knob("schedule", ("block_rows", "thread_rows"), "threads of a row, or one"),
    Knob("threads", (32, 64, 128, 256, 512, 1024), "T: threads sharing a row"),
    Knob("rows_a_block", (1, 2, 4, 8), "Y: rows of a block (on threadIdx.y)"),
)


def canonical(config: Config, task: Task) -> Config:
    """``thread_rows`` has no ``T`` or ``Y``: both at their first value."""
    if config["schedule"] != "thread_rows":
        return dict(config)
    return {**config, "threads": KNOBS[1].values[0], "rows_a_block": 1}


def violation(config: Config, task: Task) -> str:
    if config["schedule"] == "thread_rows":
        return ""
    threads, per = int(config["threads"]), int(config["rows_a_block"])
    if threads * per > MAX_BLOCK_THREADS:
        return f"{per} rows a block of {threads} threads: over {MAX_BLOCK_THREADS}"
    rows = task.shapes[0][-2]
    if rows % per:
        return f"{per} rows a block do not divide the {rows} rows of the row loop"
    return ""


def apply(s: Schedule, kernel: str, config: Config, task: Task) -> None:
    threads, per = int(config["threads"]), int(config["rows_a_block"])

    def nest(top: str) -> None:
        if config["schedule"] == "thread_rows":
            step(thread_rows, s, kernel, top)
        else:
            step(block_rows, s, kernel, top, threads=threads, rows_a_block=per)

    each_nest(s, kernel, nest)


def features(config: Config, task: Task) -> list[float]:
    """log2 of ``T``, ``Y``, the block, the elements a thread takes per pass and
    the blocks of the grid."""
    x = task.shapes[0]
    rows, length = elements(x[:-1]), x[-1]
    per_row = float(config["schedule"] == "thread_rows")
    threads = 1 if per_row else int(config["threads"])
    per = int(config["rows_a_block"])
    return [
        per_row,
        log2(threads),
        log2(per),
        log2(threads * per),
        log2(length / threads),
        log2(rows / per),
        log2(length),
    ]


def _template(
    kind: str,
    matches: Callable[[str, Shapes, str], bool],
    graph: Callable[[Task], Any],
    reference: Callable[[Sequence[Array]], Array],
    flops_an_element: int,
) -> Template:
    def flops(task: Task) -> float:
        return float(flops_an_element * elements(task.shapes[0]))

    return Template(
        kind=kind,
        knobs=KNOBS,
        matches=matches,
        apply=apply,
        violation=violation,
        canonical=canonical,
        features=features,
        graph=graph,
        reference=reference,
        flops=flops,
        small={"threads": (32, 128, 512), "rows_a_block": (1, 4)},
        recipe={"schedule": "block_rows", "threads": 128, "rows_a_block": 1},
    )


# --- softmax --------------------------------------------------------------------------


def _softmax_matches(ops: str, shapes: Shapes, dtype: str) -> bool:
    return (
        ops == "tg.softmax"
        and dtype == "f32"
        and len(shapes) == 2
        and len(shapes[0]) >= 2
        and shapes[0] == shapes[1]
    )


def _softmax_graph(task: Task) -> Any:
    from qidao.frontend.builder import Graph

    g = Graph("main")
    g.output(g.softmax(g.input("x", task.shapes[0]), axis=-1))
    return g


def _softmax(inputs: Sequence[Array]) -> Array:
    x = inputs[0].astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


# --- layer norm -----------------------------------------------------------------------


def _layer_norm_matches(ops: str, shapes: Shapes, dtype: str) -> bool:
    if ops != LAYER_NORM or dtype != "f32" or len(shapes) != 4:
        return False
    x, weight, bias, out = shapes
    return len(x) >= 2 and x == out and weight == bias == (x[-1],)


def _layer_norm_graph(task: Task) -> Any:
    from qidao.frontend.builder import Graph

    x_shape, weight_shape, bias_shape, _ = task.shapes
    g = Graph("main")
    x = g.input("x", x_shape)
    weight, bias = g.input("weight", weight_shape), g.input("bias", bias_shape)
    centered = x - g.reduce_mean(x, -1, keepdims=True)
    variance = g.reduce_mean(centered * centered, -1, keepdims=True)
    g.output(centered / g.sqrt(variance + LAYER_NORM_EPS) * weight + bias)
    return g


def _layer_norm(inputs: Sequence[Array]) -> Array:
    x, weight, bias = (a.astype(np.float64) for a in inputs)
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return np.asarray(centered / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias)


# --- reductions over the last axis ----------------------------------------------------

REDUCTIONS: dict[str, Callable[..., Any]] = {
    "reduce_sum": np.sum,
    "reduce_mean": np.mean,
    "reduce_max": np.max,
}
"""The reductions over the last axis and NumPy's; the reference keeps the last
axis (as 1): the trial's check reshapes it to the kernel's output."""


def _reduction(name: str) -> Template:
    def matches(ops: str, shapes: Shapes, dtype: str) -> bool:
        if ops != f"tg.{name}" or dtype != "f32" or len(shapes) != 2:
            return False
        x, out = shapes
        return len(x) >= 2 and out in (x[:-1], (*x[:-1], 1))

    def graph(task: Task) -> Any:
        from qidao.frontend.builder import Graph

        x_shape, out_shape = task.shapes
        g = Graph("main")
        x = g.input("x", x_shape)
        keep = len(out_shape) == len(x_shape)
        g.output(getattr(g, name)(x, -1, keepdims=keep))
        return g

    def reference(inputs: Sequence[Array]) -> Array:
        x = inputs[0].astype(np.float64)
        return np.asarray(REDUCTIONS[name](x, axis=-1, keepdims=True))

    return _template(name, matches, graph, reference, 1)


ROWS_TEMPLATES: tuple[Template, ...] = (
    _template("softmax", _softmax_matches, _softmax_graph, _softmax, 4),
    _template("layer_norm", _layer_norm_matches, _layer_norm_graph, _layer_norm, 8),
    *(_reduction(name) for name in REDUCTIONS),
)
"""One template per rows workload (module docstring)."""
