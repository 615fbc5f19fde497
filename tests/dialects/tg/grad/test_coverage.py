"""Every tg op has a vjp rule or a stated reason not to, and every rule is checked
by a test: each test file of this folder declares the ops whose rules it checks in
a module-level ``COVERS`` set (a file without one fails here, so a new test file
cannot be forgotten)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context

from qidao.dialects.tg import TG
from qidao.dialects.tg.grad import RULES
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.autodiff import AutodiffError, AutodiffPass

NO_RULE = {
    # results that are not floats carry no gradient: the autodiff pass follows
    # float values only, so these never need a rule
    "tg.equal",
    "tg.not_equal",
    "tg.less",
    "tg.less_equal",
    "tg.greater",
    "tg.greater_equal",
    "tg.logical_and",
    "tg.logical_or",
    "tg.logical_xor",
    "tg.logical_not",
    "tg.bitwise_and",  # integer-only ops
    "tg.bitwise_or",
    "tg.bitwise_xor",
    "tg.bitwise_not",
    "tg.shift_left",
    "tg.shift_right",
    "tg.matmul_integer",  # 8-bit integers in, int32 out
    # made by a graph pass (bf16-matmul) after autodiff ran: a gradient is taken
    # of the tg.matmul it replaces
    "tg.matmul_bf16",
    # a weight in GGUF blocks: bytes, no gradient; its models run inference
    "tg.matmul_blockq",
    # i64 positions: TopK's values are a tg.gather_elements of the input by them,
    # whose rule carries the gradient (test_sort.py)
    "tg.top_k_indices",
    # i64 positions of the non-zero entries: a position has no gradient
    "tg.nonzero_indices",
    # a bool mask of the boxes kept: a selection has no gradient
    "tg.nms_keep",
    "tg.constant",  # no operands: nothing to pass a gradient to
    "tg.yield",  # terminators of tg.fused / tg.custom regions
    "tg.custom_yield",
    # made by graph passes that run after autodiff (fuse, select-conv-algo), so
    # the autodiff pass never meets them
    "tg.fused",
    "tg.winograd_input",
    "tg.winograd_output",
}

NOT_YET = {
    "tg.cumprod": "PyTorch's cumprod_backward with zeros in a row is its own algorithm",
    "tg.gather_nd": "a scatter_nd (reduction add) of g into zeros; not written yet",
    "tg.scatter_elements": "the updates' gradient is a gather_elements of g, minus "
    "the entries a later update overwrote; not written yet",
    "tg.scatter_nd": "as scatter_elements, with gather_nd; not written yet",
    "tg.grid_sample": "the gradient w.r.t. the grid (the interpolation weights' "
    "derivatives, per mode and padding) is not written yet",
}
"""Float ops that have no vjp rule yet: differentiating through one is the autodiff
pass's clear error (``no vjp rule for tg.cumprod ...``, checked below)."""

TEST_MODULES = sorted(
    p.stem for p in Path(__file__).parent.glob("test_*.py") if p.stem != "test_coverage"
)
"""The test files of this folder (``test_elementwise``, ``test_layout``, ...)."""

COVERED_ELSEWHERE = {
    "tg.custom": "tests/dialects/tg/test_custom.py (its vjp is its grad region)",
}


def _op_class(name: str) -> type:
    return next(op for op in TG.operations if op.name == name)


def test_every_op_has_a_rule_or_a_reason() -> None:
    names = {op.name for op in TG.operations}
    reasons = NO_RULE | set(NOT_YET)
    missing = sorted(n for n in names - reasons if rule_for_class(_op_class(n)) is None)
    assert not missing, f"tg ops without a vjp rule: {missing}"
    assert names >= reasons, f"stale entries: {sorted(reasons - names)}"
    assert not NO_RULE & set(NOT_YET), "an op both in NO_RULE and NOT_YET"
    ruled = sorted(n for n in reasons if rule_for_class(_op_class(n)) is not None)
    assert not ruled, f"ops with a rule listed as having none: {ruled}"


def rule_for_class(cls: type) -> object:
    """The rule ``rule_for`` finds for an op of class ``cls`` (its MRO's first)."""
    return next((RULES[c] for c in cls.__mro__ if c in RULES), None)


def test_every_rule_is_tested() -> None:
    root = Path(__file__).parents[4]
    for name, where in COVERED_ELSEWHERE.items():
        assert (root / where.split()[0]).is_file(), f"{name}: {where} is gone"
    covered: set[str] = set(COVERED_ELSEWHERE)
    for module in TEST_MODULES:
        found = importlib.import_module(f"tests.dialects.tg.grad.{module}")
        assert isinstance(getattr(found, "COVERS", None), set), (
            f"{module}.py declares no COVERS set of the ops whose rules it checks"
        )
        covered |= found.COVERS
    with_rules = {op.name for op in TG.operations if rule_for_class(op) is not None}
    assert not with_rules - covered, (
        f"untested vjp rules: {sorted(with_rules - covered)}"
    )
    assert not covered - with_rules, (
        f"COVERS names ops without rules: {sorted(covered - with_rules)}"
    )


_INDEX = np.array([[1], [0]])

NOT_YET_BUILD: dict[str, Callable[[Graph, Value], Value]] = {
    "tg.cumprod": lambda g, x: g.cumprod(x, 1),
    "tg.gather_nd": lambda g, x: g.gather_nd(x, _INDEX),
    "tg.scatter_elements": lambda g, x: g.scatter_elements(x, [[1, 0, 1]] * 2, x),
    "tg.scatter_nd": lambda g, x: g.scatter_nd(x, _INDEX, x),
    "tg.grid_sample": lambda g, x: g.grid_sample(
        g.reshape(x, [1, 1, 2, 3]), g.constant(np.zeros((1, 1, 1, 2), np.float32))
    ),
}
"""A graph through each ``NOT_YET`` op from a 2x3 f32 input."""


@pytest.mark.parametrize("name", sorted(NOT_YET))
def test_not_yet_is_a_clear_error(name: str) -> None:
    g = Graph("main")
    x = g.input("x", (2, 3))
    g.output(NOT_YET_BUILD[name](g, x))
    module = g.module()
    assert any(o.name == name for o in module.walk())
    with pytest.raises(AutodiffError, match=f"no vjp rule for {name}[ ;]"):
        AutodiffPass(wrt=("x",)).apply(Context(), module)
