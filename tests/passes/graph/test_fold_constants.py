"""The graph-cleanup passes keep the numbers: ``fold-constants``, ``simplify``, ``cse``
and ``dce`` on builder graphs, compiled before and after, against NumPy and PyTorch.

Each case builds a graph with ``qidao.frontend.builder.Graph``, compiles the module
as built and the module after the passes with ``qidao.compile``, runs both on the
same inputs and compares each with a NumPy or PyTorch reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import qidao
from qidao.compiler.context import make_context, make_pass
from qidao.dialects import tg
from qidao.frontend.builder import Graph

torch = pytest.importorskip("torch")
F = torch.nn.functional

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(2)


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> Array:
    return rng.uniform(low, high, size=shape).astype(np.float32)


def optimized(g: Graph, passes: Sequence[str]) -> ModuleOp:
    """A copy of the graph's module after ``passes`` (the graph's own is kept)."""
    module = g.module().clone()
    ctx = make_context()
    for name in passes:
        make_pass(name).apply(ctx, module)
        module.verify()
    return module


def ops_of(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("tg.")]


def run_both(
    g: Graph, passes: Sequence[str], *inputs: Array
) -> tuple[list[Array], list[Array], ModuleOp]:
    """Outputs of the graph compiled as built and after ``passes``."""
    module = optimized(g, passes)
    before = qidao.compile(g.module())(*inputs)
    after = qidao.compile(module)(*inputs)
    return before, after, module


def assert_close(got: Array, want: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    want = np.asarray(want, dtype=np.float32)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at index {idx}: got {got[idx]!r}, expected {want[idx]!r} "
            f"({int(bad.sum())} of {bad.size} elements differ)"
        )


# ---- fold-constants: constant subgraphs --------------------------------------------


def test_constant_subgraph_folds_and_keeps_the_numbers() -> None:
    w1, b1, b2 = rand(5, 4), rand(4), rand(4)
    x = rand(3, 5)
    g = Graph("main")
    xv = g.input("x", (3, 5))
    wt = g.transpose(g.constant(w1.T.copy()))  # a strided view of a constant
    bias = g.exp(g.constant(b1)) * 2.0 - g.constant(b2)
    g.output(g.relu(xv @ wt + bias))
    before, after, module = run_both(g, ["fold-constants"], x)
    want = np.maximum(x @ w1 + (np.exp(b1) * 2 - b2), 0)
    assert_close(before[0], want)
    assert_close(after[0], want)
    ops = ops_of(module)
    # the bias chain became one constant; the matmul reads the transposed weight
    # as a row-major constant (no view left)
    assert ops.count("tg.exp") == 0 and ops.count("tg.sub") == 0, ops
    assert sorted(ops) == sorted(
        ["tg.constant", "tg.matmul", "tg.constant", "tg.add", "tg.relu"]
    ), ops


def test_fully_constant_graph_with_every_kind_of_op() -> None:
    a = rand(1, 2, 6, 6)
    w = rand(3, 2, 3, 3)
    g = Graph("main")
    x = g.input("x", (3,))
    c = g.conv2d(g.constant(a), g.constant(w), padding=1)
    p = g.max_pool2d(c, 2)
    s = g.softmax(g.reshape(p, (3, 9)), axis=1)
    m = g.reduce_mean(s, axes=1)
    g.output(x + m)
    xs = rand(3)
    before, after, module = run_both(g, ["fold-constants"], xs)
    conv = F.conv2d(torch.from_numpy(a), torch.from_numpy(w), padding=1)
    pooled = F.max_pool2d(conv, 2).reshape(3, 9)
    want = xs + torch.softmax(pooled, dim=1).mean(dim=1).numpy()
    assert_close(before[0], want)
    assert_close(after[0], want)
    assert ops_of(module) == ["tg.constant", "tg.add"]


# ---- fold-constants: batch norm ------------------------------------------------------


def bn_params(c: int) -> list[Array]:
    return [rand(c), rand(c), rand(c), rand(c, low=0.2, high=2.0)]


def torch_bn(y: Any, params: Sequence[Array], eps: float) -> Any:
    scale, bias, mean, var = (torch.from_numpy(p) for p in params)
    return F.batch_norm(y, mean, var, scale, bias, training=False, eps=eps)


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("groups", [1, 2])
def test_batch_norm_folds_into_conv(with_bias: bool, groups: int) -> None:
    x, w, b = rand(2, 4, 7, 7), rand(6, 4 // groups, 3, 3), rand(6)
    params = bn_params(6)
    g = Graph("main")
    xv = g.input("x", x.shape)
    conv = g.conv2d(
        xv, w, b if with_bias else None, strides=2, padding=1, groups=groups
    )
    g.output(g.batch_norm(conv, *params, epsilon=1e-3))
    before, after, module = run_both(g, ["fold-constants"], x)
    ref = F.conv2d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        torch.from_numpy(b) if with_bias else None,
        stride=2,
        padding=1,
        groups=groups,
    )
    want = torch_bn(ref, params, float(np.float32(1e-3))).numpy()
    assert_close(before[0], want, rtol=1e-4, atol=1e-5)
    assert_close(after[0], want, rtol=1e-4, atol=1e-5)
    assert ops_of(module) == ["tg.constant", "tg.constant", "tg.conv2d"]


def test_batch_norm_folds_into_matmul() -> None:
    x, w = rand(5, 8), rand(8, 3)
    params = bn_params(3)
    g = Graph("main")
    xv = g.input("x", x.shape)
    g.output(g.batch_norm(xv @ w, *params))
    before, after, module = run_both(g, ["fold-constants"], x)
    ref = torch.from_numpy(x) @ torch.from_numpy(w)
    want = torch_bn(ref, params, float(np.float32(1e-5))).numpy()
    assert_close(before[0], want)
    assert_close(after[0], want)
    assert ops_of(module) == ["tg.constant", "tg.matmul", "tg.constant", "tg.add"]


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 6)], ids=str)
def test_lone_batch_norm_becomes_mul_add(shape: tuple[int, ...]) -> None:
    x = rand(*shape)
    params = bn_params(shape[1])
    g = Graph("main")
    xv = g.input("x", shape)
    g.output(g.relu(g.batch_norm(xv, *params)))
    before, after, module = run_both(g, ["fold-constants"], x)
    want = torch.relu(torch_bn(torch.from_numpy(x), params, 1e-5)).numpy()
    assert_close(before[0], want)
    assert_close(after[0], want)
    assert "tg.batch_norm" not in ops_of(module)
    assert ops_of(module).count("tg.mul") == 1


def test_conv_used_twice_keeps_its_weights() -> None:
    x, w = rand(1, 2, 5, 5), rand(2, 2, 3, 3)
    params = bn_params(2)
    g = Graph("main")
    xv = g.input("x", x.shape)
    conv = g.conv2d(xv, w, padding=1)
    g.output(g.batch_norm(conv, *params), conv)
    before, after, module = run_both(g, ["fold-constants"], x)
    ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    want = torch_bn(ref, params, 1e-5).numpy()
    for outs in (before, after):
        assert_close(outs[0], want)
        assert_close(outs[1], ref.numpy())
    assert ops_of(module).count("tg.conv2d") == 1
    assert "tg.batch_norm" not in ops_of(module)


# ---- simplify, cse, dce ------------------------------------------------------------


def test_simplify_is_exact_and_keeps_signed_zeros() -> None:
    x = np.array([[-0.0, 0.0, 1.5], [-2.0, np.inf, np.nan]], np.float32)
    g = Graph("main")
    xv = g.input("x", x.shape)
    ones = g.constant(np.ones(3, np.float32))
    neg_zero = g.constant(np.full((1,), -0.0, np.float32))
    zero = g.constant(np.zeros((), np.float32))
    a = (ones * xv + neg_zero) / 1.0 - zero
    t = g.transpose(g.transpose(a, (1, 0)), (1, 0))
    r = g.reshape(g.reshape(t, (6,)), (3, 2))
    plus_zero = xv + zero  # not an identity for -0.0: must stay
    g.output(r, plus_zero)
    before, after, module = run_both(g, ["simplify"], x)
    ops = ops_of(module)
    assert ops.count("tg.mul") == 0 and ops.count("tg.div") == 0, ops
    assert ops.count("tg.transpose") == 0 and ops.count("tg.reshape") == 1, ops
    assert ops.count("tg.add") == 1, ops  # only x + 0.0 is left
    want = x.reshape(3, 2)  # every identity is exact: x itself, bit for bit
    for got in (before[0], after[0]):
        np.testing.assert_array_equal(got, want)  # values, NaN in place
    np.testing.assert_array_equal(np.signbit(after[0]), np.signbit(want))
    np.testing.assert_array_equal(after[1], before[1])
    assert not np.signbit(after[1][0, 0]), "-0.0 + 0.0 must give +0.0"


def test_cleanup_pipeline() -> None:
    """simplify, fold-constants, cse and dce together on one graph."""
    x = rand(4, 3)
    w = rand(3, 3)
    g = Graph("main")
    xv = g.input("x", x.shape)
    scale = g.constant(np.full(3, 2.0, np.float32)) * 0.5  # folds to ones
    a = g.exp(xv @ w) * scale  # then x * 1 simplifies
    b = g.exp(xv @ w)  # the same as a's exp: cse merges
    g.exp(xv)  # never used: dce removes it
    g.output(a + b)
    passes = ["fold-constants", "simplify", "cse", "dce"]
    before, after, module = run_both(g, passes, x)
    want = 2 * np.exp(x @ w)
    assert_close(before[0], want)
    assert_close(after[0], want)
    assert ops_of(module) == ["tg.constant", "tg.matmul", "tg.exp", "tg.add"]
    assert isinstance(next(iter(module.walk())), ModuleOp)
    assert not any(isinstance(op, tg.MulOp) for op in module.walk())
