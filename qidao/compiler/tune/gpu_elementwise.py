"""The GPU elementwise templates: the block size of the default schedule's grid,
and whether a thread takes a vector of ``VECTOR_LANES`` elements.

The default GPU schedule of an elementwise nest (``targets/cuda/defaults.py``,
``wide_loops``) splits the innermost loop by ``VECTOR_LANES`` and vectorizes the
inner part (one ``float4`` a thread) when ``why_not_wide`` finds no reason against
it, else a thread per element (``schedule_loops``); then ``bind_nest`` puts the
loops on the grid with 256 threads a block. A point of these templates picks both::

    knobs   threads   64, 128, 256, 512, 1024    threads a block (bind_nest's)
            vector    1, VECTOR_LANES            elements a thread (4: float4)

    relu 8 x 64, threads=64 vector=4
    ==> split i1 by 4; vectorize i1_i; unroll i1_i; i1_o (16) on threadIdx.x,
        i0 split by 4 onto threadIdx.y: 2 blocks of 16 x 4 threads

``vector=4`` is ``wide_loops(..., threads)`` itself and ``vector=1``
``schedule_loops(..., threads)``; a point with ``vector=4`` whose innermost extent
is not a multiple of 4 is invalid, and one that ``why_not_wide`` refuses is a
refused point (no trial), where ``wide_loops`` would quietly take one element a
thread (the ``vector=1`` point). One template per op, each rebuilding its
standalone graph from the kernel's shapes (inputs and output of the same shape):
the unary ops ``UNARY`` and the binary ``BINARY`` (one nominal FLOP an element).
A fused chain of ops (``tg.add+tg.relu``) has no template: its standalone graph
cannot be rebuilt from the ops and shapes alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.defaults import (
    VECTOR_LANES,
    schedule_loops,
    why_not_wide,
    wide_loops,
)
from qidao.compiler.targets.cuda.loop_reading import band
from qidao.compiler.tune.gpu_space import PointRefused, each_nest, elements, log2, step
from qidao.compiler.tune.space import Config, Knob, Template
from qidao.compiler.tune.task import Task

Array = np.ndarray[Any, Any]
Shapes = tuple[tuple[int, ...], ...]

KNOBS = (
    Knob("threads", (64, 128, 256, 512, 1024), "threads a block"),
    Knob("vector", (1, VECTOR_LANES), "elements of the innermost loop a thread"),
)

UNARY: dict[str, Callable[[Array], Array]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "exp": np.exp,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "neg": np.negative,
    "abs": np.abs,
}
BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def canonical(config: Config, task: Task) -> Config:
    return dict(config)


def violation(config: Config, task: Task) -> str:
    length = task.shapes[-1][-1] if task.shapes[-1] else 1
    vector = int(config["vector"])
    if vector > 1 and length % vector:
        return f"the innermost extent {length} is not a multiple of {vector}"
    return ""


def wide(s: Schedule, kernel: str, top: str, threads: int) -> str:
    """``wide_loops`` with ``threads`` a block; a nest whose innermost loop cannot
    take vectors (``why_not_wide``) refuses the point."""
    innermost = band(s, kernel, top)[-1]
    why = why_not_wide(s, kernel, innermost)
    if why is not None:
        raise PointRefused("gpu template", kernel, innermost, why)
    return step(wide_loops, s, kernel, top, threads)


def apply(s: Schedule, kernel: str, config: Config, task: Task) -> None:
    threads = int(config["threads"])

    def nest(top: str) -> None:
        if int(config["vector"]) > 1:
            wide(s, kernel, top, threads)
        else:
            step(schedule_loops, s, kernel, top, threads)

    each_nest(s, kernel, nest)


def features(config: Config, task: Task) -> list[float]:
    """log2 of the block, the elements a thread, the threads and the blocks."""
    threads, vector = int(config["threads"]), int(config["vector"])
    n = elements(task.shapes[-1])
    return [
        log2(threads),
        log2(vector),
        log2(n / vector),
        log2(n / vector / threads),
    ]


def _template(op: str, arity: int, numpy_op: Callable[..., Array]) -> Template:
    def matches(ops: str, shapes: Shapes, dtype: str) -> bool:
        return (
            ops == f"tg.{op}"
            and dtype == "f32"
            and len(shapes) == arity + 1
            and len(set(shapes)) == 1
        )

    def graph(task: Task) -> Any:
        from qidao.frontend.builder import Graph

        g = Graph("main")
        inputs = [g.input(name, task.shapes[0]) for name in ("x", "y")[:arity]]
        g.output(getattr(g, op)(*inputs))
        return g

    def reference(inputs: Sequence[Array]) -> Array:
        return np.asarray(numpy_op(*(a.astype(np.float64) for a in inputs)))

    def flops(task: Task) -> float:
        return float(elements(task.shapes[-1]))

    return Template(
        kind=op,
        knobs=KNOBS,
        matches=matches,
        apply=apply,
        violation=violation,
        canonical=canonical,
        features=features,
        graph=graph,
        reference=reference,
        flops=flops,
        small={"threads": (128, 256, 512), "vector": (1, VECTOR_LANES)},
        recipe={"threads": 256, "vector": VECTOR_LANES},
    )


ELEMENTWISE_TEMPLATES: tuple[Template, ...] = (
    *(_template(op, 1, f) for op, f in UNARY.items()),
    *(_template(op, 2, f) for op, f in BINARY.items()),
)
"""One template per op (module docstring)."""
