"""A kernel's arguments have distinct names, so that a schedule primitive can name
each buffer (``cache_read(kernel, loop, "transpose")``).

Two graph values with one name (PyTorch's BERT has two ``transpose`` nodes feeding
its attention scores' matmul, in different subgraphs' numbering) made two kernel
arguments with one hint; xDSL's printer showed them ``%transpose`` and
``%transpose_1``, but ``cache_read`` matched by hint, found two and refused, and
the default schedule left that matmul as lowered (BERT's float32 torch path at 48
instead of 28 ms)."""

from __future__ import annotations

import numpy as np

import qidao
from qidao.frontend.builder import Graph
from qidao.passes.kernels.lowering.common import _distinct

RNG = np.random.default_rng(0)


def test_two_values_of_one_name_are_two_buffers_a_schedule_can_name() -> None:
    g = Graph("main")
    a = g.input("a", (2, 64, 32))
    b = g.input("b", (2, 48, 64))
    left = g.transpose(a, (0, 2, 1)).named("transpose")
    right = g.transpose(b, (0, 2, 1)).named("transpose")
    g.output(g.matmul(left, right))  # [2, 32, 64] x [2, 64, 48]: B read transposed
    compiled = qidao.compile(g, threads=1)
    x, y = RNG.standard_normal((2, 64, 32)), RNG.standard_normal((2, 48, 64))
    x, y = x.astype(np.float32), y.astype(np.float32)
    (got,) = compiled(x, y)
    want = x.transpose(0, 2, 1) @ y.transpose(0, 2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    report = compiled.stats["default_schedule"]
    (matmul,) = [v for k, v in report.items() if "matmul" in k or "fused" in k]
    assert matmul.startswith("matmul: "), report  # scheduled, not "none: ... failed"
    text = compiled.ir("affine")
    assert "%transpose:" in text and "%transpose2:" in text


def test_distinct_hints() -> None:
    assert _distinct(["t", "t", "t2", "t", None, None, "u"]) == [
        "t",
        "t3",
        "t2",
        "t4",
        None,
        None,
        "u",
    ]
