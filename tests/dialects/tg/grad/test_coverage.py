"""Every tg op has a vjp rule or a stated reason not to, and every rule is checked
by a test: each test file of this folder declares the ops whose rules it checks in
a module-level ``COVERS`` set (a file without one fails here, so a new test file
cannot be forgotten)."""

from __future__ import annotations

import importlib
from pathlib import Path

from qidao.dialects.tg import TG
from qidao.dialects.tg.grad import RULES

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
    "tg.constant",  # no operands: nothing to pass a gradient to
    "tg.yield",  # terminators of tg.fused / tg.custom regions
    "tg.custom_yield",
    # made by graph passes that run after autodiff (fuse, select-conv-algo), so
    # the autodiff pass never meets them
    "tg.fused",
    "tg.winograd_input",
    "tg.winograd_output",
}

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
    missing = sorted(n for n in names - NO_RULE if rule_for_class(_op_class(n)) is None)
    assert not missing, f"tg ops without a vjp rule: {missing}"
    assert names >= NO_RULE, f"stale entries: {sorted(NO_RULE - names)}"
    ruled = sorted(n for n in NO_RULE if rule_for_class(_op_class(n)) is not None)
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
