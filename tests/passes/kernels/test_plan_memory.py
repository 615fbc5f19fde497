"""plan-memory end to end: results never change, the peak never grows, and the
traffic/peak/buffer counts of ``compiled.stats`` mean what they say.

The IR-level rules (and the cases where the pass must not fire) are in
``tests/filecheck/passes/plan_memory.mlir``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph, Value

Arrays = list[np.ndarray[Any, Any]]


def random_graph(seed: int) -> tuple[Graph, Arrays, Arrays]:
    """A small random graph of elementwise, broadcast, transpose, matmul and
    reduction ops with fan-out, its inputs and its NumPy outputs."""
    rng = np.random.default_rng(seed)
    g = Graph("main")
    shapes = [(4, 6), (6,), (6, 4), (1, 6)]
    arrays: Arrays = []
    values: list[tuple[Value, np.ndarray[Any, Any]]] = []
    for k in range(3):
        shape = shapes[int(rng.integers(len(shapes)))]
        a = rng.standard_normal(shape).astype(np.float32)
        arrays.append(a)
        values.append((g.input(f"i{k}", shape), a))
    for _ in range(int(rng.integers(6, 14))):
        kind = int(rng.integers(6))
        v, a = values[int(rng.integers(len(values)))]
        w, b = values[int(rng.integers(len(values)))]
        if kind == 0 and _broadcastable(a.shape, b.shape):
            values.append((v + w, a + b) if rng.integers(2) else (v * w, a * b))
        elif kind == 1:
            values.append((g.tanh(v), np.tanh(a)))
        elif kind == 2:
            values.append((-v, -a))
        elif kind == 3 and a.ndim == 2:
            values.append((g.transpose(v, [1, 0]), a.T))
        elif kind == 4 and a.ndim == 2 and a.shape[1] == 6:
            m = rng.standard_normal((6, 3)).astype(np.float32)
            values.append((v @ g.constant(m), a @ m))
        elif kind == 5 and a.ndim == 2:
            values.append((g.reduce_sum(v, axes=0), a.sum(axis=0)))
    outputs = [values[-1], values[len(values) // 2 + 1]]
    g.output(*(v for v, _ in outputs))
    return g, arrays, [a for _, a in outputs]


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("seed", range(16))
def test_random_graphs_agree_in_every_mode(seed: int) -> None:
    _, inputs, want = random_graph(seed)
    eager = qidao.compile(random_graph(seed)[0], mode="eager")
    graph = qidao.compile(random_graph(seed)[0])
    unfused = qidao.compile(random_graph(seed)[0], fuse=False)
    for compiled in (eager, graph, unfused):
        for got, w in zip(compiled(*inputs), want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)
    # no fusion, but folding and planned memory: never more kernels or buffers, never
    # a higher peak or more traffic than eager
    assert unfused.stats["kernels"] <= eager.stats["kernels"]
    assert unfused.stats["buffers"] <= eager.stats["buffers"]
    assert unfused.stats["peak_bytes"] <= eager.stats["peak_bytes"]
    assert unfused.stats["traffic_bytes"] <= eager.stats["traffic_bytes"]


def test_traffic_counts_one_read_per_call_through_any_views() -> None:
    """exp(x) is written once (64 B) and read once by the add (64 B), even though
    the add reads it twice: directly and transposed."""
    g = Graph("main")
    x = g.input("x", (4, 4))
    a = g.exp(x)
    g.output(a + g.transpose(a, [1, 0]))
    compiled = qidao.compile(g, mode="eager")
    assert compiled.stats["kernels"] == 2
    assert compiled.stats["buffers"] == 1
    assert compiled.stats["peak_bytes"] == 64
    assert compiled.stats["traffic_bytes"] == 64 + 64
    xs = np.random.default_rng(0).standard_normal((4, 4), dtype=np.float32)
    np.testing.assert_allclose(
        compiled(xs)[0], np.exp(xs) + np.exp(xs).T, rtol=1e-6, atol=1e-6
    )


def test_an_intermediate_read_by_two_kernels_is_read_twice() -> None:
    """t = exp(x) feeds a neg and an add: t costs 1 write + 2 reads of 32 bytes, the
    neg's result 1 write + 1 read; both are alive at the add."""
    g = Graph("main")
    x = g.input("x", (8,))
    t = g.exp(x)
    g.output(-t + t)
    compiled = qidao.compile(g, mode="eager")
    assert compiled.stats["kernels"] == 3
    assert compiled.stats["buffers"] == 2
    assert compiled.stats["peak_bytes"] == 2 * 32
    assert compiled.stats["traffic_bytes"] == 32 * 3 + 32 * 2
