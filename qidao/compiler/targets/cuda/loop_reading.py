"""Reading a kernel's loops for the default GPU schedules (``defaults.py``,
``default_kinds.py``, ``tensor_cores.py``): its top-level nests (one launch each),
the band of loops nested one in the other, which loops are parallel, their
extents, and the bookkeeping that tries a scheduler on each nest and puts the
nest back when it does not apply."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from xdsl.dialects import affine, memref
from xdsl.ir import Operation
from xdsl.traits import is_side_effect_free

from qidao.compiler.defaults import NotApplicable, attempt
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.passes.schedule.bind import top_level_nest
from qidao.passes.schedule.loops.nest import find_loop, iv, kernel_functions, loop_name
from qidao.passes.schedule.parallel import check_parallel


def nests(s: Schedule, kernel: str) -> list[str]:
    """The names of the top-level loops of ``kernel`` (one launch each)."""
    fn = kernel_functions(s.module)[kernel]
    return [
        str(loop_name(op))
        for op in fn.body.block.ops
        if isinstance(op, affine.ForOp) and loop_name(op) is not None
    ]


def loop_of(s: Schedule, kernel: str, name: str) -> affine.ForOp:
    """The loop ``name`` of ``kernel``."""
    return find_loop(s.module, "default schedule", kernel, name)[1]


def only_loop(ops: list[Operation]) -> affine.ForOp | None:
    """The one named loop among ``ops`` when every other op only reads (a load, a
    pure op without regions: what ``reorder`` sinks and ``bind`` allows between
    bound loops), else None."""
    loops = [op for op in ops if isinstance(op, affine.ForOp)]
    others = [op for op in ops if not isinstance(op, affine.ForOp | affine.YieldOp)]
    harmless = all(
        isinstance(op, affine.LoadOp | memref.LoadOp)
        or (is_side_effect_free(op) and not op.regions)
        for op in others
    )
    if len(loops) != 1 or not harmless or loop_name(loops[0]) is None:
        return None
    return loops[0]


def band(s: Schedule, kernel: str, top: str) -> list[str]:
    """The loops nested one in the other from ``top``: each body holds one loop
    and otherwise only loads and ops without effects."""
    loop = loop_of(s, kernel, top)
    names = [top]
    while (inner := only_loop(list(loop.body.block.ops))) is not None:
        loop = inner
        names.append(str(loop_name(loop)))
    return names


def is_parallel(
    s: Schedule, kernel: str, name: str, fixed: tuple[str, ...] = ()
) -> bool:
    """True when the iterations of loop ``name`` write disjoint elements whatever
    the loops around it do, except the loops ``fixed`` (to be bound around it:
    ``bind``'s rule 3), and it carries no values (``iter_args``)."""
    fn, loop = find_loop(s.module, "default schedule", kernel, name)
    if loop.inits:
        return False
    held = frozenset(iv(loop_of(s, kernel, outer)) for outer in fixed)
    try:
        check_parallel(fn, loop, kernel, "bind", top_level_nest(fn, loop), held)
    except ScheduleError:
        return False
    return True


def extent(s: Schedule, kernel: str, name: str) -> int:
    """The trip count of loop ``name``; ``NotApplicable`` when not constant."""
    trips = s.extents(kernel)[name]
    if trips is None:
        raise NotApplicable(f"loop '{name}' has non-constant bounds")
    return trips


def unroll_single_trips(s: Schedule, kernel: str, top: str) -> str:
    """Unroll the loops of one iteration in the band of nest ``top`` (a batch loop
    of 1: its counter becomes 0, which ``bind``'s checks can compare with the ``0``
    of the accesses that were folded already); the name of the nest's outermost
    loop after it. Raises ``NotApplicable`` when every loop of the band runs
    once: the nest is one point, a ``<<<1, 1>>>`` launch."""
    loops = band(s, kernel, top)
    extents = s.extents(kernel)
    ones = [name for name in loops if extents[name] == 1]
    if len(ones) == len(loops):
        raise NotApplicable(f"every loop of nest '{top}' runs once")
    for name in ones:
        s.unroll(kernel, name, 0)
    return next(name for name in loops if name not in ones)


def attempt_step(s: Schedule, kernel: str, step: Callable[..., str], *args: Any) -> str:
    """``step(s, kernel, *args)``, or the kernel and the trace put back as they were
    and the reason (``"none: ..."``): ``qidao.compiler.defaults.attempt``."""
    return attempt(s, kernel, functools.partial(step, s, kernel, *args))


def each_nest(
    s: Schedule, kernel: str, schedule: Callable[[Schedule, str, str], str]
) -> str:
    """Every top-level nest scheduled by ``schedule(s, kernel, nest)``, each on its
    own (put back when it fails); one ``'<nest>': <what>`` entry each."""
    done = []
    for k in range(len(nests(s, kernel))):
        top = nests(s, kernel)[k]  # (a nest's name changes when its top unrolls)
        done.append(f"'{top}': {attempt_step(s, kernel, schedule, top)}")
    if not done:
        raise NotApplicable("the kernel has no loop")
    return "; ".join(done)


__all__ = [
    "attempt_step",
    "band",
    "each_nest",
    "extent",
    "is_parallel",
    "loop_of",
    "nests",
    "only_loop",
    "unroll_single_trips",
]
