"""Fusion groups of the ``fuse`` pass, compiled and run: fused vs unfused vs NumPy.

Each case builds a graph with the Python builder, compiles it with and without
fusion, checks both against NumPy, and checks the kernel count of the fused build
(``compiled.stats["kernels"]``): the launches fusion saves. Reductions accumulate
with ``fastmath<reassoc,contract>``, so sums may differ from NumPy's by a few ulp:
the tolerances are float32 ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(7)


def rand(*shape: int) -> Array:
    return rng.uniform(-2.0, 2.0, size=shape).astype(np.float32)


def check(
    build: Callable[[Graph], list[Value]],
    inputs: dict[str, Array],
    reference: Callable[..., list[Array]],
    fused_kernels: int,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> qidao.Compiled:
    """Compile ``build`` fused and unfused, compare both with ``reference``."""

    def graph() -> Graph:
        g = Graph("main")
        values = [g.input(name, a.shape) for name, a in inputs.items()]
        g.output(*build(g, *values))  # type: ignore[call-arg]
        return g

    want = reference(*[a.astype(np.float64) for a in inputs.values()])
    fused = qidao.compile(graph())
    unfused = qidao.compile(graph(), fuse=False)
    for compiled in (fused, unfused):
        got = compiled(*inputs.values())
        assert len(got) == len(want)
        for out, ref in zip(got, want, strict=True):
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
    assert fused.stats["kernels"] == fused_kernels, fused.ir("tg")
    return fused


def relu(a: Array) -> Array:
    return np.maximum(a, 0.0)


# ----------------------------------------------------------------------------------
# matmul and conv2d


def test_matmul_epilogue_is_one_kernel() -> None:
    check(
        lambda g, x, w, b: [g.relu(x @ w + b)],
        {"x": rand(9, 17), "w": rand(17, 33), "b": rand(33)},
        lambda x, w, b: [relu(x @ w + b)],
        fused_kernels=1,
    )


def test_batched_matmul_epilogue_with_broadcast_operand() -> None:
    check(
        lambda g, x, w, s: [g.sigmoid(x @ w) * s],
        {"x": rand(3, 5, 7), "w": rand(3, 7, 4), "s": rand(5, 1)},
        lambda x, w, s: [1.0 / (1.0 + np.exp(-(x @ w))) * s],
        fused_kernels=1,
    )


def test_matmul_lhs_producer_stays_its_own_kernel() -> None:
    # no prologues: exp(x * s) is one kernel, the matmul with its epilogue another
    fused = check(
        lambda g, x, s, w, b: [g.tanh(g.exp(x * s) @ w + b)],
        {"x": rand(6, 10), "s": rand(10), "w": rand(10, 8), "b": rand(8)},
        lambda x, s, w, b: [np.tanh(np.exp(x * s) @ w + b)],
        fused_kernels=2,
    )
    affine = fused.ir("affine")
    assert "tg.mul+tg.exp" in affine and "tg.matmul+tg.add+tg.tanh" in affine


def gelu(x: Array) -> Array:
    from math import erf

    return np.asarray(x * 0.5 * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0))))


def test_gelu_epilogue_is_a_dag_in_the_matmul_kernel() -> None:
    # h = x @ w + b is used twice (h / sqrt 2 and h * ...): the whole GELU joins
    def build(g: Graph, x: Value, w: Value, b: Value) -> list[Value]:
        h = x @ w + b
        return [h * (g.erf(h / float(np.sqrt(2.0))) + 1.0) * 0.5]

    fused = check(
        build,
        {"x": rand(6, 10), "w": rand(10, 8), "b": rand(8)},
        lambda x, w, b: [gelu(x @ w + b)],
        fused_kernels=1,
    )
    assert "tg.matmul+tg.add+tg.div+tg.erf+tg.add+tg.mul+tg.mul" in fused.ir("affine")


def test_epilogue_dag_with_two_outside_uses_falls_back_to_the_chain() -> None:
    # h feeds relu(h) + h inside, but h is also a graph output: the DAG would
    # leave two values; the chain stops at h (two uses), so the add is separate
    def build(g: Graph, x: Value, w: Value, b: Value) -> list[Value]:
        h = x @ w + b
        return [g.relu(h) + h, h]

    check(
        build,
        {"x": rand(4, 6), "w": rand(6, 5), "b": rand(5)},
        lambda x, w, b: [relu(x @ w + b) + (x @ w + b), x @ w + b],
        fused_kernels=2,  # matmul + bias; relu + add
    )


def test_matmul_used_twice_keeps_its_result() -> None:
    def build(g: Graph, x: Value, w: Value) -> list[Value]:
        y = x @ w
        return [g.relu(y), g.exp(y)]

    check(
        build,
        {"x": rand(4, 6), "w": rand(6, 5)},
        lambda x, w: [relu(x @ w), np.exp(x @ w)],
        fused_kernels=3,  # the matmul, relu, exp
    )


def test_rhs_prologue_is_not_fused() -> None:
    check(
        lambda g, x, w: [x @ g.exp(w)],
        {"x": rand(4, 6), "w": rand(6, 5)},
        lambda x, w: [x @ np.exp(w)],
        fused_kernels=2,
    )


def test_conv2d_bias_add_relu_is_one_kernel() -> None:
    # Three output channels: the layout pass keeps this conv NCHW (it needs at
    # least four to vectorize), so this checks fusion alone.
    shift = rand(3, 1, 1)
    fused = check(
        lambda g, x, w, b: [g.relu(g.conv2d(x, w, b, padding=1) + shift)],
        {"x": rand(2, 3, 6, 6), "w": rand(3, 3, 3, 3), "b": rand(3)},
        lambda x, w, b: [relu(conv2d_nchw(x, w, b, padding=1) + shift)],
        fused_kernels=1,
    )
    assert "tg.conv2d+tg.add+tg.relu" in fused.ir("affine")


def test_conv2d_input_prologue_is_not_fused() -> None:
    check(
        lambda g, x, w: [g.relu(g.conv2d(g.exp(x), w))],
        {"x": rand(1, 2, 5, 5), "w": rand(3, 2, 3, 3)},
        lambda x, w: [relu(conv2d_nchw(np.exp(x), w, None, padding=0))],
        fused_kernels=2,
    )


def conv2d_nchw(x: Array, w: Array, b: Array | None, padding: int) -> Array:
    n, _, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = h + 2 * padding - kh + 1, wd + 2 * padding - kw + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + oh, j : j + ow]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


# ----------------------------------------------------------------------------------
# row groups


def softmax_ref(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def softmax_from_ops(g: Graph, x: Value) -> Value:
    e = g.exp(x - g.reduce_max(x, [-1], keepdims=True))
    return e / g.reduce_sum(e, [-1], keepdims=True)


def layer_norm_from_ops(g: Graph, x: Value, gamma: Value, beta: Value) -> Value:
    m = g.reduce_mean(x, [-1], keepdims=True)
    d = x - m
    v = g.reduce_mean(d * d, [-1], keepdims=True)
    return d / g.sqrt(v + 1e-5) * gamma + beta


def layer_norm_ref(x: Array, gamma: Array, beta: Array) -> Array:
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * gamma + beta  # type: ignore[no-any-return]


@pytest.mark.parametrize("shape", [(5, 37), (2, 3, 64), (1000,)])
def test_softmax_from_ops_is_one_kernel(shape: tuple[int, ...]) -> None:
    check(
        lambda g, x: [softmax_from_ops(g, x)],
        {"x": rand(*shape) * 4},
        lambda x: [softmax_ref(x)],
        fused_kernels=1,
    )


def test_softmax_from_ops_matches_tg_softmax_and_torch() -> None:
    torch = pytest.importorskip("torch")
    x = rand(16, 100) * 5
    g = Graph("main")
    xi = g.input("x", x.shape)
    g.output(softmax_from_ops(g, xi), g.softmax(xi))
    ours, op = qidao.compile(g)(x)
    want = torch.softmax(torch.from_numpy(x), -1).numpy()
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(op, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(7, 64), (2, 3, 50)])
def test_layer_norm_from_ops_is_one_kernel(shape: tuple[int, ...]) -> None:
    n = shape[-1]
    check(
        lambda g, x, gamma, beta: [layer_norm_from_ops(g, x, gamma, beta)],
        {"x": rand(*shape) * 3 + 1, "gamma": rand(n), "beta": rand(n)},
        lambda x, gamma, beta: [layer_norm_ref(x, gamma, beta)],
        fused_kernels=1,
        rtol=1e-4,
        atol=1e-4,
    )


def test_layer_norm_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    x, gamma, beta = rand(32, 256) * 3, rand(256), rand(256)
    g = Graph("main")
    xi, gi, bi = g.input("x", x.shape), g.input("g", (256,)), g.input("b", (256,))
    g.output(layer_norm_from_ops(g, xi, gi, bi))
    (ours,) = qidao.compile(g)(x, gamma, beta)
    F = torch.nn.functional
    t = [torch.from_numpy(a) for a in (x, gamma, beta)]
    want = F.layer_norm(t[0], (256,), t[1], t[2], 1e-5).numpy()
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-4)


def test_two_trailing_axes_and_per_row_output() -> None:
    def build(g: Graph, x: Value) -> list[Value]:
        e = g.exp(x - g.reduce_max(x, [-2, -1], keepdims=True))
        return [g.reduce_sum(e, [-2, -1]), g.reduce_mean(x * x, [-2, -1])]

    def reference(x: Array) -> list[Array]:
        e = np.exp(x - x.max(axis=(-2, -1), keepdims=True))
        return [e.sum(axis=(-2, -1)), (x * x).mean(axis=(-2, -1))]

    # two groups: they share only the graph input x, no producer→consumer edge
    check(build, {"x": rand(3, 4, 5, 6)}, reference, fused_kernels=2)


def test_intermediate_returned_is_a_second_result() -> None:
    def build(g: Graph, x: Value) -> list[Value]:
        e = g.exp(x - g.reduce_max(x, [-1], keepdims=True))
        s = g.reduce_sum(e, [-1], keepdims=True)
        return [e / s, e, s]

    def reference(x: Array) -> list[Array]:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        s = e.sum(axis=-1, keepdims=True)
        return [e / s, e, s]

    check(build, {"x": rand(6, 20)}, reference, fused_kernels=1)


def test_user_between_members_moves_after_the_group() -> None:
    # z = e @ w is built between exp and reduce_sum; it cannot join the row group
    # and must run after the fused kernel that produces e.
    def build(g: Graph, x: Value, w: Value) -> list[Value]:
        e = g.exp(x - g.reduce_max(x, [-1], keepdims=True))
        z = e @ w
        return [e / g.reduce_sum(e, [-1], keepdims=True), z]

    def reference(x: Array, w: Array) -> list[Array]:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return [e / e.sum(axis=-1, keepdims=True), e @ w]

    check(build, {"x": rand(4, 8), "w": rand(8, 3)}, reference, fused_kernels=2)


def test_divisors_along_and_across_the_row() -> None:
    # c varies along the row (its reciprocal cannot be taken once per row; found by
    # tests/compiler/test_differential.py), r is one value per row (it can)
    c = rand(4, 1) + 3.0

    def build(g: Graph, x: Value, r: Value) -> list[Value]:
        y = x / c
        return [
            g.reduce_max(y, [0, 1, 2], keepdims=True),
            g.exp(x - g.reduce_max(x, [-1], keepdims=True)) / r,
        ]

    def reference(x: Array, r: Array) -> list[Array]:
        return [
            (x / c).max(keepdims=True),
            np.exp(x - x.max(axis=-1, keepdims=True)) / r,
        ]

    check(
        build,
        {"x": rand(4, 4, 6), "r": rand(4, 4, 1) + 3.0},
        reference,
        fused_kernels=2,
    )


def test_reduction_over_leading_axis_is_not_a_row_group() -> None:
    check(
        lambda g, x: [g.exp(x - g.reduce_max(x, [0], keepdims=True))],
        {"x": rand(5, 6)},
        lambda x: [np.exp(x - x.max(axis=0, keepdims=True))],
        fused_kernels=2,  # reduce_max, then sub+exp
    )


def test_nan_still_propagates_through_fused_max_and_sum() -> None:
    x = rand(3, 16)
    x[1, 5] = np.nan
    g = Graph("main")
    xi = g.input("x", x.shape)
    g.output(softmax_from_ops(g, xi))
    (y,) = qidao.compile(g)(x)
    assert np.isnan(y[1]).all()
    np.testing.assert_allclose(y[[0, 2]], softmax_ref(x[[0, 2]]), rtol=1e-5)


def test_fused_kernel_keeps_zero_and_negative_zero_apart() -> None:
    """relu's 0.0 and the constant -0.0 are different kernel constants."""
    g = Graph("main")
    x = g.input("x", (4,))
    g.output(g.relu(x) * np.float32(-0.0))
    compiled = qidao.compile(g)
    assert compiled.stats["kernels"] == 1
    xs = np.array([2.0, -2.0, 0.5, 3.0], np.float32)
    (got,) = compiled(xs)
    np.testing.assert_array_equal(
        np.signbit(got), np.signbit(np.maximum(xs, 0) * np.float32(-0.0))
    )
