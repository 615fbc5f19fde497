"""``checkpoint``: gradients with any checkpointing are those without it, the peak
falls as the book says, a budget holds for the planned peak, bad options are
named (the pass's IR is checked in tests/filecheck/passes/graph/checkpoint.mlir)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

import qidao
from qidao.bench.train_models import cross_entropy, linear
from qidao.compiler.context import make_context
from qidao.errors import ArgumentError
from qidao.frontend.builder import Graph
from qidao.passes.graph._checkpoint_plan import (
    chain_of,
    plan,
    recompute_flops,
    simulate,
)
from qidao.passes.graph.checkpoint import CheckpointError, choose

Array = np.ndarray[Any, Any]
WIDTH, BATCH = 16, 8


def deep(layers: int, residual: bool = False) -> tuple[Graph, list[str]]:
    """``layers`` linear layers with ReLU (or residual blocks), a 10-way head."""
    g = Graph()
    x = g.input("x", (BATCH, WIDTH))
    labels = g.input("labels", (BATCH, 10))
    h = x
    for i in range(layers - 1):
        if residual:
            r = g.relu(linear(g, h, f"b{i}.fc1", WIDTH, WIDTH))
            h = h + linear(g, r, f"b{i}.fc2", WIDTH, WIDTH)
        else:
            h = g.relu(linear(g, h, f"l{i}", WIDTH, WIDTH))
    g.output(cross_entropy(g, linear(g, h, "head", WIDTH, 10), labels))
    prefixes = [f"b{i}.fc{j}" for i in range(layers - 1) for j in (1, 2)]
    if not residual:
        prefixes = [f"l{i}" for i in range(layers - 1)]
    names = [f"{p}.{k}" for p in [*prefixes, "head"] for k in ("weight", "bias")]
    return g, names


def inputs(g: Graph, names: list[str], seed: int = 0) -> list[Array]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]
    weights = []
    for n in names:
        rows = 10 if n.startswith("head") else WIDTH
        shape = (rows, WIDTH) if n.endswith("weight") else (rows,)
        weights.append((rng.standard_normal(shape) / np.sqrt(WIDTH)).astype(np.float32))
    return [x, labels, *weights]


@pytest.mark.parametrize(
    ("residual", "settings"),
    [(False, (3, "sqrt", "budget")), (True, (1, 2))],
    ids=["mlp", "residual"],
)
def test_gradients_are_bitwise_those_without_checkpointing(
    residual: bool, settings: tuple[object, ...]
) -> None:
    g, names = deep(6, residual)
    args = inputs(g, names)
    plain = qidao.compile(g, grad=names, threads=1)
    expected = plain(*args)
    budget = {"budget": int(plain.stats["peak_bytes"] * 0.7)}
    for checkpoint in settings:
        if checkpoint == "budget":
            checkpoint = budget
        f = qidao.compile(g, grad=names, threads=1, checkpoint=checkpoint)
        assert f.stats["recompute_flops"] > 0, checkpoint
        for name, got, want in zip(["loss", *names], f(*args), expected, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"{checkpoint}: {name}")


def test_the_books_twenty_layers_at_k_4_keep_under_half_the_peak() -> None:
    g, names = deep(20)
    plain = qidao.compile(g, grad=names, threads=1)
    f = qidao.compile(g, grad=names, threads=1, checkpoint=4)
    assert f.stats["segments"] == 20 and f.stats["kept"] == 4
    assert f.stats["peak_bytes"] <= 0.5 * plain.stats["peak_bytes"]
    assert f.stats["saved_bytes"] < plain.stats["saved_bytes"]
    # the clones' FLOPs: segments 1-15 but each group's last (recomputed from
    # the kept activation before it), a share of the step's FLOPs
    assert 0 < f.stats["recompute_share"] < 0.5
    assert plain.stats["recompute_flops"] == 0


def test_a_budget_holds_for_the_planned_peak() -> None:
    g, names = deep(12)
    plain = qidao.compile(g, grad=names, threads=1)
    budget = int(0.45 * plain.stats["peak_bytes"])
    f = qidao.compile(g, grad=names, threads=1, checkpoint={"budget": budget})
    assert f.stats["peak_bytes"] <= budget
    with pytest.raises(CheckpointError, match="no plan keeps the peak under budget=64"):
        qidao.compile(g, grad=names, threads=1, checkpoint={"budget": 64})


def test_a_checkpointed_training_step_follows_the_plain_one() -> None:
    g, names = deep(6)
    x, labels, *weights = inputs(g, names)
    held = dict(zip(names, weights, strict=True))
    sgd = qidao.optim.SGD(lr=0.1, momentum=0.9)
    steps = [
        qidao.compile(g, grad=names, optimizer=sgd, weights=held, threads=1, **extra)
        for extra in ({}, {"checkpoint": 2})
    ]
    for _ in range(3):
        (a,), (b,) = steps[0](x, labels), steps[1](x, labels)
        assert a == b
    for name in names:
        np.testing.assert_array_equal(
            steps[0].parameters[name], steps[1].parameters[name]
        )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "checkpoint=0; expected a positive integer k"),
        (True, "checkpoint=True; expected"),
        ("fast", "checkpoint='fast'; expected"),
        ({"budget": -1}, "checkpoint={'budget': -1}; expected"),
        ({"bytes": 10}, "checkpoint={'bytes': 10}; expected"),
    ],
)
def test_bad_options_are_named(value: object, message: str) -> None:
    g, names = deep(3)
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(")):
        qidao.compile(g, grad=names, checkpoint=value)


def test_checkpoint_needs_grad() -> None:
    g, _ = deep(3)
    with pytest.raises(ArgumentError, match="it needs grad"):
        qidao.compile(g, checkpoint=2)


@pytest.mark.parametrize("residual", [False, True], ids=["mlp", "residual"])
def test_the_exact_search_never_recomputes_more_than_the_greedy_one(
    residual: bool,
) -> None:
    """Both searches on the same model of memory (the fused training graph): the
    exact one tries every kept set, so at each budget its plan recomputes at most
    the greedy plan's FLOPs, and both stay under the budget."""
    g, names = deep(7, residual)
    module = Parser(
        make_context(), qidao.compile(g, grad=names).ir("tg")
    ).parse_module()
    chain = chain_of(next(f for f in module.ops if isinstance(f, func.FuncOp)))
    full = simulate(chain, plan(chain, frozenset(range(len(chain.boundaries)))))
    fitted = 0
    for share in (0.9, 0.8, 0.7, 0.6, 0.5):
        budget = int(full * share)
        try:
            exact = plan(chain, choose(chain, budget=budget, exact=True))
        except CheckpointError:  # nothing fits: the greedy search finds nothing
            with pytest.raises(CheckpointError, match="no plan keeps the peak"):
                choose(chain, budget=budget)
            continue
        greedy = plan(chain, choose(chain, budget=budget))
        assert simulate(chain, greedy) <= budget and simulate(chain, exact) <= budget
        assert recompute_flops(exact) <= recompute_flops(greedy), share
        fitted += 1
    assert fitted >= 2


def test_the_exact_search_compiles_and_refuses_long_chains() -> None:
    g, names = deep(6)
    args = inputs(g, names)
    plain = qidao.compile(g, grad=names, threads=1)
    budget = int(plain.stats["peak_bytes"] * 0.7)
    f = qidao.compile(
        g, grad=names, threads=1, checkpoint={"budget": budget, "search": "exact"}
    )
    assert f.stats["peak_bytes"] <= budget
    for got, want in zip(f(*args), plain(*args), strict=True):
        np.testing.assert_array_equal(got, want)
    g20, names20 = deep(20)
    with pytest.raises(CheckpointError, match="it takes at most 16 segments"):
        qidao.compile(g20, grad=names20, checkpoint={"budget": 1, "search": "exact"})
    with pytest.raises(ArgumentError, match="'search': 'greedy'"):
        qidao.compile(g, grad=names, checkpoint={"budget": 1, "search": "best"})
