"""The facts a tg op declares on its class give, for every op, what the rules they
replaced gave; and every op has its NumPy reference semantics.

- ``FUSION`` (``TgOp`` in ``base.py``), read by the ``fuse`` pass, against the
  pass's isinstance lists as they were written before the ops declared it.
- The evaluator: ``qidao/dialects/tg/numpy_eval.py`` keeps one table of every op's
  NumPy semantics (they share its precision rule and its window and padding
  helpers, and the oracle stays apart from the op definitions); this test lists
  every op, so an op added without an entry fails here.

The cost facts (``FREE``, ``flops``) are checked in ``test_cost.py``.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation

from qidao.dialects.tg import (
    TG,
    Conv2dOp,
    CustomYieldOp,
    ElementwiseOp,
    MatmulBf16Op,
    MatmulIntegerOp,
    MatmulOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceOp,
    ReduceSumOp,
    YieldOp,
)
from qidao.dialects.tg.numpy_eval import evaluate_function, has_reference
from qidao.dialects.tg.types import dtype_name, element_of, shape_of
from tests.dialects.tg.test_registry import example_of, parse, wrap_example

TG_OPS: list[type[Operation]] = list(TG.operations)

FUSION_ROLES = {"elementwise", "reduction", "anchor", "boundary"}

# --- fusion role ---------------------------------------------------------------------

OLD_REDUCTIONS = (ReduceSumOp, ReduceMeanOp, ReduceMaxOp)
"""``fuse.py``'s ``Reduction``: the ops that seed and join row groups."""
OLD_ANCHORS = (MatmulOp, Conv2dOp, MatmulIntegerOp, MatmulBf16Op)
"""``fuse.py``'s ``_fuse_anchors``: the ops that head a group with an epilogue
(``tg.matmul_integer`` since its requantization fuses)."""


def _role_by_classes(op: type[Operation]) -> str:
    """The role as ``fuse.py`` decided it before the ops declared ``FUSION``
    (``_is_elementwise``: an ``ElementwiseOp``; the lists above; else a boundary)."""
    if issubclass(op, ElementwiseOp):
        return "elementwise"
    if issubclass(op, OLD_REDUCTIONS):
        return "reduction"
    if issubclass(op, OLD_ANCHORS):
        return "anchor"
    return "boundary"


def test_the_declared_fusion_roles_give_the_old_lists() -> None:
    roles = {op.__name__: getattr(op, "FUSION", None) for op in TG_OPS}
    assert set(roles.values()) <= FUSION_ROLES, roles
    differ = {
        op.__name__: (roles[op.__name__], _role_by_classes(op))
        for op in TG_OPS
        if roles[op.__name__] != _role_by_classes(op)
    }
    assert not differ, f"declared FUSION vs the old rule: {differ}"


def test_a_reduction_is_a_reduce_op() -> None:
    """The row groups read a reduction's ``input`` and ``reduced_axes()``."""
    for op in TG_OPS:
        if getattr(op, "FUSION", None) == "reduction":
            assert issubclass(op, ReduceOp), op.__name__


# --- evaluator -----------------------------------------------------------------------

NO_EVALUATOR = {
    YieldOp: "the terminator of a tg.fused body: the tg.fused's evaluator reads it",
    CustomYieldOp: "the terminator of a tg.custom body: likewise",
}


def test_every_op_has_an_evaluator_or_a_reason() -> None:
    """Each op of its docstring's example (run on zeros) is known to
    ``numpy_eval``, but for the ops of ``NO_EVALUATOR``."""
    missing: list[str] = []
    for cls in TG_OPS:
        module = parse(wrap_example(cls, example_of(cls)))
        fn = next(o for o in module.walk() if isinstance(o, func.FuncOp))
        ops = [o for o in module.walk() if isinstance(o, cls)]
        assert ops, f"no {cls.name} in its example"
        known = all(has_reference(o) for o in ops)
        if cls in NO_EVALUATOR:
            assert not known, f"{cls.name} has an evaluator: drop it from NO_EVALUATOR"
            continue
        if not known:
            missing.append(cls.name)
            continue
        inputs = [
            np.zeros(shape_of(a.type), dtype_name(element_of(a.type)))
            for a in fn.body.block.args
        ]
        assert evaluate_function(fn, inputs) == []
    assert not missing, f"tg ops numpy_eval does not know: {missing}"
    stale = sorted(op.name for op in NO_EVALUATOR if op not in TG_OPS)
    assert not stale, f"NO_EVALUATOR names ops that are gone: {stale}"
