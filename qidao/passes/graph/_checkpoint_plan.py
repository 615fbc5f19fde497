"""What ``checkpoint`` needs: a training graph's forward as a chain of segments, a
plan (which segment boundaries to keep, what to recompute where) and its cost.

- :func:`chain_of`: the forward ops (those output 0, the loss, depends on) cut into
  *segments*. A *cut* is a point of the forward after which exactly one activation
  is still needed by later forward ops (inputs, constants and views of them are not
  activations: they are there anyway). Each segment holds one or more matmuls or
  convolutions and ends at the last cut before the next one: a linear layer with
  its bias and activation, a whole residual block (inside it, the skip input is
  live too, so there is no cut). The segment's *boundary* is the activation live
  at its end; the last segment ends at the loss.
- :func:`plan`: for a set of kept boundaries, the groups of segments between them
  and, for each group but the last (its values are alive when the backward starts),
  the forward ops to clone so that the backward reads recomputed values instead of
  saved ones, and the backward op before which the clones go.
- :func:`simulate`: the peak bytes of the program the plan makes, every tensor
  alive from the op that makes it to its last reader (a view keeps its base alive;
  inputs, outputs and constants are not counted): the model ``budget`` mode
  searches with. The memory planner (``plan-memory``) measures the real peak
  after fusion.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import Pure

from qidao.dialects.attributes import CHECKPOINT_ATTR
from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.cost import flops, is_free, value_bytes
from qidao.dialects.tg.fused import FusedOp
from qidao.dialects.tg.linalg import Conv2dOp, MatmulOp
from qidao.errors import UnsupportedError

HEAVY_OPS = (MatmulOp, Conv2dOp)
"""The ops a segment is built around: one or more per segment."""


def is_heavy(op: Operation) -> bool:
    """A matmul or convolution, or a fusion group holding one."""
    if isinstance(op, FusedOp):
        return any(isinstance(inner, HEAVY_OPS) for inner in op.body.block.ops)
    return isinstance(op, HEAVY_OPS)


class CheckpointError(UnsupportedError):
    """What ``checkpoint`` cannot do: names the op, the option or the budget."""


@dataclass
class Chain:
    """A function's forward as segments (see the module docstring)."""

    block: Block
    ret: func.ReturnOp
    forward: set[Operation]
    segments: list[list[Operation]]
    """Each segment's forward ops, in block order."""
    boundaries: list[SSAValue]
    """``boundaries[i]``: the activation at the end of segment ``i`` (one fewer
    than the segments)."""
    saved: set[SSAValue]
    """Forward activations that backward ops read."""
    position: dict[Operation, int] = field(default_factory=dict)


@dataclass
class Recompute:
    """One group's recomputation: ``ops`` cloned, in order, before ``before``; the
    backward's reads of ``values`` go to the clones."""

    group: int
    ops: list[Operation]
    values: set[SSAValue]
    before: Operation


def chain_of(fn: func.FuncOp) -> Chain:
    """The forward of ``fn`` (a tg function whose output 0 is the loss) as a chain."""
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp), "a tg function ends in func.return"
    ops = [op for op in block.ops if op is not ret]
    position = {op: k for k, op in enumerate(ops)}
    forward = _ancestors(ret.operands[0], block) if ret.operands else set()
    order = [op for op in ops if op in forward]
    free = _free_values(order)
    index = {op: k for k, op in enumerate(order)}
    last: dict[SSAValue, int] = {}
    for k, op in enumerate(order):
        for v in op.operands:
            if isinstance(v, OpResult) and v.op in index and v not in free:
                last[v] = k
    # live[k]: activations made at or before k and read by forward ops after k
    starts: dict[int, list[SSAValue]] = {}
    for v in last:
        assert isinstance(v, OpResult)
        starts.setdefault(index[v.op], []).append(v)
    live: set[SSAValue] = set()
    cuts: dict[int, SSAValue] = {}
    for k in range(len(order)):
        live.update(v for v in starts.get(k, ()) if last[v] > k)
        live = {v for v in live if last[v] > k}
        if len(live) == 1:
            cuts[k] = next(iter(live))
    heavy = [k for k, op in enumerate(order) if is_heavy(op)]
    ends: list[int] = []
    for prev, nxt in pairwise(heavy):
        between = [c for c in cuts if prev <= c < nxt and (not ends or c > ends[-1])]
        if between:
            ends.append(max(between))
    segments: list[list[Operation]] = []
    start = 0
    for end in [*ends, len(order) - 1]:
        segments.append(order[start : end + 1])
        start = end + 1
    saved = {
        r
        for op in order
        for r in op.results
        if r not in free
        and any(_is_backward(u.operation, block, forward) for u in r.uses)
    }
    return Chain(
        block, ret, forward, segments, [cuts[e] for e in ends], saved, position
    )


def _ancestors(value: SSAValue, block: Block) -> set[Operation]:
    found: set[Operation] = set()
    work = [value]
    while work:
        v = work.pop()
        if (
            not isinstance(v, OpResult)
            or v.op in found
            or v.op.parent_block() is not block
        ):
            continue
        found.add(v.op)
        work.extend(v.op.operands)
    return found


def _free_values(order: Iterable[Operation]) -> set[SSAValue]:
    """Results of constants, and of views of inputs and constants: not activations."""
    free: set[SSAValue] = set()
    for op in order:
        if is_free(op) and all(
            isinstance(v, BlockArgument) or v in free for v in op.operands
        ):
            free.update(op.results)
    return free


def _is_backward(user: Operation, block: Block, forward: set[Operation]) -> bool:
    top = block.find_ancestor_op_in_block(user)
    return top is not None and top not in forward and not isinstance(top, func.ReturnOp)


def every(chain: Chain, k: int) -> frozenset[int]:
    """Keep every ``k``-th boundary: after segments k, 2k, ... (1-based)."""
    return frozenset(i for i in range(len(chain.boundaries)) if (i + 1) % k == 0)


def groups(chain: Chain, kept: frozenset[int]) -> list[list[int]]:
    """The segments between kept boundaries, in order."""
    out: list[list[int]] = [[]]
    for i in range(len(chain.segments)):
        out[-1].append(i)
        if i in kept:
            out.append([])
    return [g for g in out if g]


def plan(chain: Chain, kept: frozenset[int]) -> list[Recompute]:
    """What to recompute where when the boundaries ``kept`` are the only
    activations kept across each group (the last group recomputes nothing)."""
    recomputes: list[Recompute] = []
    all_groups = groups(chain, kept)
    for g, members in enumerate(all_groups[:-1]):
        ops = [op for i in members for op in chain.segments[i]]
        inside = set(ops)
        keep = chain.boundaries[members[-1]]
        values: set[SSAValue] = {
            v for op in ops for v in op.results if v in chain.saved and v is not keep
        }
        if not values:
            continue
        needed = _ancestors_within(values, inside)
        clone = [op for op in ops if op in needed]
        for op in clone:
            if not op.has_trait(Pure):
                where = (
                    f"segment {members[0]}"
                    if len(members) == 1
                    else f"segments {members[0]}-{members[-1]}"
                )
                raise CheckpointError(
                    f"checkpoint: cannot recompute {op.name} ({where}): it is not "
                    "pure, so running it again would not give the same value; keep "
                    "a boundary after it"
                )
        first = min(
            (
                chain.block.find_ancestor_op_in_block(u.operation)
                for v in values
                for u in v.uses
                if _is_backward(u.operation, chain.block, chain.forward)
            ),
            key=lambda op: chain.position.get(op, len(chain.position)) if op else 0,
        )
        assert first is not None
        recomputes.append(Recompute(g, clone, values, first))
    return recomputes


def _ancestors_within(values: set[SSAValue], inside: set[Operation]) -> set[Operation]:
    found: set[Operation] = set()
    work = list(values)
    while work:
        v = work.pop()
        if isinstance(v, OpResult) and v.op in inside and v.op not in found:
            found.add(v.op)
            work.extend(v.op.operands)
    return found


def recompute_flops(recomputes: Sequence[Recompute]) -> int:
    return sum(flops(op) for r in recomputes for op in r.ops)


def simulate(chain: Chain, recomputes: Sequence[Recompute]) -> int:
    """The peak bytes of the program with ``recomputes`` applied (the model in the
    module docstring)."""
    at: dict[Operation, list[Recompute]] = {}
    for r in recomputes:
        at.setdefault(r.before, []).append(r)
    redirect: dict[SSAValue, object] = {}
    steps: list[tuple[list[object], list[tuple[object, int, object | None]]]] = []

    def step(op: Operation, key_of: dict[SSAValue, object], tag: object) -> None:
        operands = [key_of.get(v, v) for v in op.operands]
        results: list[tuple[object, int, object | None]] = []
        view = is_free(op) and not isinstance(op, ConstantOp)
        for v in op.results:
            key = v if tag is None else (tag, v)
            key_of[v] = key
            base = operands[0] if view and operands else None
            size = 0 if view or isinstance(op, ConstantOp) else value_bytes(v)
            results.append((key, size, base))
        steps.append((operands, results))

    plain: dict[SSAValue, object] = {}
    for op in [*chain.block.ops]:
        for r in at.get(op, ()):
            local: dict[SSAValue, object] = {}
            for c in r.ops:
                step(c, local, r.group)
            for v in r.values:
                redirect[v] = local[v]
        if isinstance(op, func.ReturnOp):
            steps.append(([plain.get(v, v) for v in op.operands], []))
            returned = {plain.get(v, v) for v in op.operands}
            break
        key_of = dict(plain)
        if op not in chain.forward:
            key_of.update(redirect)
        step(op, key_of, None)
        plain.update({v: v for v in op.results})
    return _peak(steps, returned)


def _peak(
    steps: list[tuple[list[object], list[tuple[object, int, object | None]]]],
    returned: set[object],
) -> int:
    size: dict[object, int] = {}
    root: dict[object, object] = {}
    born: dict[object, int] = {}
    last: dict[object, int] = {}
    for k, (operands, results) in enumerate(steps):
        for v in operands:
            if v in root:
                last[root[v]] = k
        for key, n, base in results:
            r = root.get(base, key) if base is not None else key
            root[key] = r
            if r is key:
                size[key] = 0 if key in returned else n
                born[key] = k
                last[key] = k
    delta = [0] * (len(steps) + 1)
    for key, n in size.items():
        delta[born[key]] += n
        delta[last[key] + 1] -= n
    peak = live = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def training_report(module: builtin.ModuleOp) -> dict[str, int | float]:
    """What ``compiled.stats`` says about a training graph (after the graph
    passes): ``saved_bytes`` (forward activations the backward reads: kept for it),
    ``recompute_flops`` (the ``checkpoint`` pass's clones) and ``recompute_share``
    (their share of the step's FLOPs), ``segments`` and ``kept`` when it ran."""
    functions = [f for f in module.ops if isinstance(f, func.FuncOp) and f.body.blocks]
    main = [f for f in functions if f.sym_name.data == "main"] or functions[:1]
    if not main:
        return {}
    fn = main[0]
    block = fn.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp) or not ret.operands:
        return {}
    forward = _ancestors(ret.operands[0], block)
    free = _free_values(op for op in block.ops if op in forward)
    saved = sum(
        value_bytes(r)
        for op in block.ops
        if op in forward and not is_free(op)
        for r in op.results
        if r not in free
        and any(_is_backward(u.operation, block, forward) for u in r.uses)
    )
    step = sum(flops(op) for op in block.ops)
    report: dict[str, int | float] = {"saved_bytes": saved, "step_flops": step}
    info = fn.attributes.get(CHECKPOINT_ATTR)
    recompute = 0
    if isinstance(info, DictionaryAttr):
        data = info.data
        flops_attr = data.get("recompute_flops")
        recompute = flops_attr.value.data if isinstance(flops_attr, IntegerAttr) else 0
        segments = data.get("segments")
        if isinstance(segments, IntegerAttr):
            report["segments"] = segments.value.data
        kept = data.get("kept")
        if isinstance(kept, ArrayAttr):
            report["kept"] = len(kept.data)
    report["recompute_flops"] = recompute
    report["recompute_share"] = recompute / step if step else 0.0
    return report
