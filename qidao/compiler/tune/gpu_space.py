"""What the GPU templates share: a default-schedule building block as a tuning step,
and the per-nest loop.

The GPU templates (``gpu_matmul.py``, ``gpu_rows.py``, ``gpu_elementwise.py``)
search the parameters of the default GPU schedule's own building blocks
(``qidao.compiler.targets.cuda.defaults``: ``register_tile``, ``block_rows``,
``bind_nest``, ...), so a tuned point is a default schedule with other numbers,
and the default schedule is a point of the space (or next to one). A building
block declines a nest with ``NotApplicable`` (the default schedule then tries the
next one); inside a template that is a refused point, so :func:`step` turns it into
a :class:`PointRefused` (a ``ScheduleError``): the search skips the point before it
costs a trial, as it does a point whose primitive refuses it::

    step(block_rows, s, kernel, "i0", threads=64, rows_a_block=3)
        NotApplicable("3 rows a block of 64 threads: the row loop 'i0' (8) must
        divide by it, ...")
    ==> PointRefused("gpu template: loop 'i0' in kernel 'main_k0_softmax': 3 rows
        a block of 64 threads: ...")

Each top-level nest of a kernel is a launch and gets the point on its own
(:func:`each_nest`), as the default schedule does; unlike the default, a nest the
point does not fit refuses the whole point instead of staying serial.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.compiler.targets.cuda.loop_reading import nests


class PointRefused(ScheduleError):
    """A default-schedule building block does not apply to a point of a GPU
    template (its ``NotApplicable`` reason)."""


def step(
    block: Callable[..., str], s: Schedule, kernel: str, *args: Any, **kw: Any
) -> str:
    """``block(s, kernel, *args, **kw)`` (a building block of the default GPU
    schedule); its ``NotApplicable`` raised as a :class:`PointRefused` naming the
    nest (``args[0]`` when it is a loop name)."""
    try:
        return block(s, kernel, *args, **kw)
    except NotApplicable as err:
        loop = args[0] if args and isinstance(args[0], str) else "-"
        raise PointRefused("gpu template", kernel, loop, str(err)) from None


def each_nest(s: Schedule, kernel: str, schedule: Callable[[str], object]) -> None:
    """``schedule(top)`` for every top-level nest of ``kernel``, in order (a nest's
    name may change when it is scheduled: the next is read afresh)."""
    count = len(nests(s, kernel))
    if count == 0:
        raise PointRefused("gpu template", kernel, "-", "the kernel has no loop")
    for index in range(count):
        schedule(nests(s, kernel)[index])


def elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def log2(value: float) -> float:
    return math.log2(max(value, 1.0))
