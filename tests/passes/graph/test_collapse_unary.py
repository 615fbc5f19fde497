"""``collapse-unary`` in the pipeline: results identical to NumPy's, bit for bit,
on the values where the identities are easiest to get wrong."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

SPECIAL = np.array(
    [0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -3e38], np.float32
)


def compile_unary(dtype: str, build: Any) -> Any:
    g = Graph("main")
    x = g.input("x", (SPECIAL.size,), dtype)
    g.output(build(g, x))
    return qidao.compile(g)


@pytest.mark.parametrize(
    ("name", "build", "reference"),
    [
        ("relu(relu(x))", lambda g, x: g.relu(g.relu(x)), lambda x: np.maximum(x, 0)),
        ("abs(abs(x))", lambda g, x: g.abs(g.abs(x)), np.abs),
        ("-(-x)", lambda g, x: g.neg(g.neg(x)), lambda x: x),
        ("abs(-x)", lambda g, x: g.abs(g.neg(x)), np.abs),
    ],
)
def test_collapsed_chains_match_numpy_bit_for_bit(
    name: str, build: Any, reference: Any
) -> None:
    compiled = compile_unary("float32", build)
    assert "tg.neg" not in compiled.ir("tg") or name == "relu(relu(x))"
    assert compiled.ir("tg").count("tg.relu") <= 1
    got = compiled(SPECIAL)[0]
    want = reference(SPECIAL).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), name)


def test_double_negation_of_the_most_negative_integer() -> None:
    compiled = compile_unary("int32", lambda g, x: g.neg(g.neg(x)))
    x = np.array([np.iinfo(np.int32).min, -1, 0, 7, 1, 2, 3, -4, 5, -6], np.int32)
    assert "tg.neg" not in compiled.ir("tg")
    np.testing.assert_array_equal(compiled(x)[0], x)


def test_eager_mode_keeps_every_op() -> None:
    compiled = qidao.compile(_double_relu(), mode="eager")
    assert compiled.ir("tg").count("tg.relu") == 2
    assert compiled.stats["kernels"] == 2


def _double_relu() -> Graph:
    g = Graph("main")
    x = g.input("x", (8,))
    g.output(g.relu(g.relu(x)))
    return g
