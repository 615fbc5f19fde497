"""The ``vectorize`` schedule primitive: numerics against NumPy, the vector code it
makes (``<16 x float>`` in the optimized LLVM IR), its trace, and its errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.frontend.builder import Graph

Model = tuple[Graph, Callable[..., Any], list[np.ndarray[Any, Any]]]


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def add_relu() -> Model:
    g = Graph("main")
    x = g.input("x", (8, 64))
    y = g.input("y", (8, 64))
    g.output(g.relu(g.add(x, y)))
    return g, lambda a, b: np.maximum(a + b, 0), [rand(8, 64), rand(8, 64)]


def matmul() -> Model:
    g = Graph("main")
    x = g.input("x", (32, 48))
    w = g.input("w", (48, 64))
    g.output(x @ w)
    return g, lambda a, b: a @ b, [rand(32, 48), rand(48, 64)]


def check(model: Model, schedule: Any) -> qidao.Compiled:
    graph, reference, inputs = model
    compiled = qidao.compile(graph, schedule=schedule)
    (got,) = compiled(*inputs)
    np.testing.assert_allclose(got, reference(*inputs), rtol=1e-5, atol=1e-5)
    return compiled


def test_elementwise_innermost_loop() -> None:
    compiled = check(add_relu(), lambda s: s.vectorize("main_k0_fused", "i1"))
    scheduled = compiled.ir("schedule")
    assert "affine.for %i1 = 0 to 64 step 16" in scheduled
    assert "vector.load %x[%i0, %i1] : memref<8x64xf32>, vector<16xf32>" in scheduled
    assert "arith.maximumf" in scheduled and "vector.broadcast" in scheduled
    assert "<16 x float>" in compiled.ir("llvm-opt")
    assert compiled.stats["schedule"] == 's.vectorize("main_k0_fused", "i1", 16)\n'


def test_matmul_j_loop() -> None:
    compiled = check(matmul(), lambda s: s.vectorize("main_k0_matmul", "j"))
    scheduled = compiled.ir("schedule")
    # x[i, k] is invariant in j: a scalar load broadcast before the j loop.
    assert "vector.broadcast %1 : f32 to vector<16xf32>" in scheduled
    assert "vector.load %w[%k, %j] : memref<48x64xf32>, vector<16xf32>" in scheduled
    assert "vector.store" in scheduled and "affine.store %0, %out" in scheduled
    assert "<16 x float>" in compiled.ir("llvm-opt")


@pytest.mark.parametrize("width", [4, 8, 16, 32, 64])
def test_widths(width: int) -> None:
    check(matmul(), lambda s: s.vectorize("main_k0_matmul", "j", width))


def test_split_then_vectorize() -> None:
    def schedule(s: Schedule) -> None:
        s.split("main_k0_matmul", "j", 32)
        s.vectorize("main_k0_matmul", "j_i", 8)
        s.vectorize("main_k0_matmul", "j_init")

    check(matmul(), schedule)


def test_trace_replays() -> None:
    graph = matmul()[0]
    s = Schedule.for_model(graph)
    s.vectorize("main_k0_matmul", "j", 8)
    assert s.pipeline() == 'vectorize{kernel="main_k0_matmul" loop="j" width=8}'
    for text in (s.python(), s.pipeline()):
        again = Schedule.replay(Schedule.for_model(graph).module, text)
        assert str(again.module) == str(s.module)
    check(matmul(), s.pipeline())


@pytest.mark.parametrize(
    ("loop", "width", "reason"),
    [
        ("j", 12, "not divisible by width 12; split it first"),
        ("k", 16, "not innermost"),
        ("i", 16, "not innermost"),
    ],
)
def test_illegal_leaves_the_module(loop: str, width: int, reason: str) -> None:
    s = Schedule.for_model(matmul()[0])
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match=reason):
        s.vectorize("main_k0_matmul", loop, width)
    assert str(s.module) == before
    assert s.trace == []


def test_reduction_in_registers_is_refused() -> None:
    g = Graph("main")
    x = g.input("x", (4, 32))
    g.output(g.reduce_sum(x, axes=[1]))
    s = Schedule.for_model(g)
    with pytest.raises(IllegalScheduleError, match="iter_args"):
        s.vectorize("main_k0_reduce_sum", "r0", 16)


def test_every_lanewise_op_has_a_vector_lowering() -> None:
    """vectorize accepts exactly the ops the vector lowering knows how to emit."""
    from qidao.passes import _llvm_vector
    from qidao.passes.vectorize import LANEWISE

    lowered = set(_llvm_vector._SAME_OP) | set(_llvm_vector._INTRINSIC)
    assert set(LANEWISE) == lowered
