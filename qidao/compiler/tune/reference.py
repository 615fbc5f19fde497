"""What a trial's output is checked against: a task's inputs and its NumPy
reference, and the comparison.

Both workers use them (``worker.py`` on the CPU, ``gpu_worker.py`` on the GPU): the
inputs are random normal (seed 0) in the task's shapes, the reference is the
template's NumPy function of them in float64, and a trial's output matches when it
is within ``RTOL`` relatively or ``RTOL * sqrt(depth)`` absolutely (``depth``: the
terms summed into an element)::

    check(got, want, 32)  ==>  ""    (or "differs from NumPy at (3, 1): got 2.5,
                                      expected 1.5")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qidao.compiler.tune.task import DTYPE_NAMES, Task

Array = np.ndarray[Any, Any]

RTOL = 1e-3
_REFERENCES: dict[tuple[str, str], tuple[list[Array], Array]] = {}


def task_data(task: Task, target: str = "cpu") -> tuple[list[Array], Array]:
    """Random inputs of the task (seed 0) and the NumPy reference of its
    ``target``'s template, cached."""
    from qidao.compiler.tune.templates import templates_of

    key = (target, task.key)
    if key not in _REFERENCES:
        rng = np.random.default_rng(0)
        dtype = DTYPE_NAMES[task.dtype]
        inputs = [rng.standard_normal(s).astype(dtype) for s in task.shapes[:-1]]
        reference = templates_of(target)[task.kind].reference
        _REFERENCES[key] = (inputs, reference(inputs))
    return _REFERENCES[key]


def check(got: Array, want: Array, depth: int) -> str:
    """ "" when ``got`` matches; else where it differs. ``depth``: the summed terms
    per element (the absolute tolerance grows with its square root)."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    atol = RTOL * float(np.sqrt(max(depth, 1)))
    if np.allclose(got, want, rtol=RTOL, atol=atol):
        return ""
    bad = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
    index = tuple(int(i) for i in bad)
    return f"differs from NumPy at {index}: got {got[bad]}, expected {want[bad]}"
