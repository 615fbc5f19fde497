"""The accumulations of ``vectorize``: which ``iter_args`` and invariant stores of a
loop are reductions, and how the vector loop carries them (the "Reductions" part of
``vectorize.py``'s docstring).

    for j in [0, N)                     acc_v = splat(identity)       start_accumulators
      acc = acc + x[j]       ==>        for j in [0, N/W*W) step W
                                          acc_v = acc_v + vector.load x[j]
                                        acc = vector.reduction <add>, acc_v, acc
                                                                      fold_accumulators

:func:`register_reduction` and :func:`memory_reduction` recognize an accumulation
(None when it is not one: ``vectorize.py`` raises the error); the vector body
itself is rewritten in ``vectorize.py``, which yields the combining ops' vectors.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

from xdsl.dialects import affine, arith, math, vector
from xdsl.dialects.builtin import AnyFloat, FloatAttr, VectorType
from xdsl.ir import Block, Operation, SSAValue

from qidao.passes.schedule.loops.nest import access_indices

REDUCIBLE: dict[type[Operation], tuple[vector.CombiningKindFlag, float]] = {
    arith.AddfOp: (vector.CombiningKindFlag.ADD, -0.0),
    math.FmaOp: (vector.CombiningKindFlag.ADD, -0.0),  # fma(a, b, acc) = acc + a*b
    arith.MaximumfOp: (vector.CombiningKindFlag.MAXIMUMF, -pymath.inf),
    arith.MinimumfOp: (vector.CombiningKindFlag.MINIMUMF, pymath.inf),
    arith.MaxnumfOp: (vector.CombiningKindFlag.MAXNUMF, -pymath.inf),
    arith.MinnumfOp: (vector.CombiningKindFlag.MINNUMF, pymath.inf),
}
"""The ops an accumulation may combine with, their ``vector.reduction`` kind and
identity (``-0.0`` for add: ``-0.0 + x == x`` for every x, ``-0.0`` included)."""


@dataclass(frozen=True)
class Reduction:
    """One accumulation the loop carries: ``acc`` (an iter_arg of the loop, or the
    result of an invariant ``load`` that ``store`` writes back) is used once, by a
    combining op of kind ``kind`` whose result is used once (by the yield or the
    store)."""

    acc: SSAValue
    kind: vector.CombiningKindFlag
    identity: float
    position: int | None = None
    """The iter_args position (register form), or None (memory form)."""
    load: affine.LoadOp | None = None
    store: affine.StoreOp | None = None


# --- recognizing accumulations -----------------------------------------------------


def _combining_op(acc: SSAValue, block: Block) -> Operation | None:
    """The reducible op in ``block`` that uses ``acc`` as its accumulator."""
    user = acc.get_user_of_unique_use()
    if user is None or user.parent is not block or type(user) not in REDUCIBLE:
        return None
    if isinstance(user, math.FmaOp) and user.c is not acc:
        return None  # acc * b + c is not an accumulation into acc
    if not all(isinstance(v.type, AnyFloat) for v in user.results):
        return None
    return user


def register_reduction(loop: affine.ForOp, k: int) -> Reduction | None:
    """iter_arg #``k`` of ``loop`` as an accumulation (used once, by a reducible op
    whose result only the yield uses, at #``k``), or None."""
    block = loop.body.block
    terminator = block.last_op
    assert isinstance(terminator, affine.YieldOp)
    acc = block.args[1 + k]
    op = _combining_op(acc, block)
    if op is None:
        return None
    result = op.results[0]
    if (
        result.get_user_of_unique_use() is not terminator
        or terminator.operands[k] is not result
    ):
        return None
    kind, identity = REDUCIBLE[type(op)]
    return Reduction(acc, kind, identity, position=k)


def memory_reduction(
    store: affine.StoreOp, loads: list[affine.LoadOp]
) -> Reduction | None:
    """The accumulation that the invariant ``store`` writes (``loads``: the loop's
    loads), or None: its memref loaded once, at the stored element, by a load
    only the combining op uses, whose result only the store uses."""
    block = store.parent
    assert block is not None
    op = store.value.owner
    same_memref = [load for load in loads if load.memref is store.memref]
    if (
        isinstance(op, Operation)
        and type(op) in REDUCIBLE
        and store.value.get_user_of_unique_use() is store
        and len(same_memref) == 1
        and access_indices(same_memref[0]) == access_indices(store)
        and _combining_op(same_memref[0].result, block) is op
    ):
        load = same_memref[0]
        kind, identity = REDUCIBLE[type(op)]
        return Reduction(load.result, kind, identity, load=load, store=store)
    return None


# --- carrying them in the vector loop ----------------------------------------------


def _hint(value: SSAValue, suffix: str) -> str | None:
    """A name for a value made from ``value``: its name plus ``suffix``."""
    return None if value.name_hint is None else value.name_hint + suffix


def start_accumulators(
    reductions: list[Reduction],
    loop: affine.ForOp,
    width: int,
    vectors: dict[SSAValue, SSAValue],
) -> list[SSAValue]:
    """Give ``loop``'s body one vector iter_arg per accumulation (recorded in
    ``vectors`` as the vector of its scalar ``acc``); return their starts: the
    identity, broadcast before the loop."""
    outer = loop.parent
    assert outer is not None
    body = loop.body.block
    inits: list[SSAValue] = []
    for reduction in reductions:
        t = reduction.acc.type
        assert isinstance(t, AnyFloat)
        identity = arith.ConstantOp(FloatAttr(reduction.identity, t))
        identity.result.name_hint = _hint(reduction.acc, "_init")
        outer.insert_op_before(identity, loop)
        start = vector.BroadcastOp(identity.result, VectorType(t, [width]))
        start.vector.name_hint = identity.result.name_hint
        outer.insert_op_before(start, loop)
        inits.append(start.vector)
        carried = body.insert_arg(VectorType(t, [width]), len(body.args))
        carried.name_hint = reduction.acc.name_hint
        vectors[reduction.acc] = carried
    return inits


def fold_accumulators(
    reductions: list[Reduction], loop: affine.ForOp, vector_loop: affine.ForOp
) -> list[SSAValue]:
    """Fold each vector accumulator of ``vector_loop`` with its scalar start (the
    init of ``loop``, the scalar loop being replaced, or the element reloaded from
    memory) by a ``vector.reduction`` before ``loop``, and store the memory ones
    back; return the register ones' scalars, in iter_args order."""
    outer = loop.parent
    assert outer is not None
    results: list[SSAValue] = []
    for reduction, partial in zip(reductions, vector_loop.results, strict=True):
        partial.name_hint = _hint(reduction.acc, "_lanes")
        acc_load = reduction.load
        if acc_load is None:
            assert reduction.position is not None
            start_value = loop.inits[reduction.position]
        else:
            reload = affine.LoadOp(
                acc_load.memref, list(acc_load.indices), acc_load.map
            )
            reload.result.name_hint = acc_load.result.name_hint
            outer.insert_op_before(reload, loop)
            start_value = reload.result
        total = vector.ReductionOp.build(
            operands=[partial, [start_value]],
            result_types=[reduction.acc.type],
            properties={"kind": vector.CombiningKindAttr(reduction.kind)},
        )
        outer.insert_op_before(total, loop)
        if acc_load is not None:
            total.results[0].name_hint = _hint(acc_load.result, "_sum")
        acc_store = reduction.store
        if acc_store is not None:
            write = affine.StoreOp(
                total.results[0],
                acc_store.memref,
                list(acc_store.indices),
                acc_store.map,
            )
            outer.insert_op_before(write, loop)
        else:
            total.results[0].name_hint = loop.results[len(results)].name_hint
            results.append(total.results[0])
    return results
