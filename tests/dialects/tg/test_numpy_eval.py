"""The NumPy reference evaluator of tg ops (``qidao.dialects.tg.numpy_eval``) against
PyTorch and NumPy on random cases: conv2d, pools, softmax, batch norm, and the rest.

This evaluator is the oracle of other tests and the engine of ``fold-constants``, so
it is checked against an independent implementation, never against itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.numpy_eval import EvaluationError, evaluate, evaluate_function
from qidao.dialects.tg.types import tensor_type

torch = pytest.importorskip("torch")
F = torch.nn.functional

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(1)


def rand(*shape: int, low: float = -2.0, high: float = 2.0) -> Array:
    return rng.uniform(low, high, size=shape).astype(np.float32)


def args(*arrays: Array) -> list[SSAValue]:
    """Block arguments typed like ``arrays`` (the op under test reads their types)."""
    block = Block(arg_types=[tensor_type(a.shape, f32) for a in arrays])
    return list(block.args)


def run_one(make: Callable[..., Operation], *arrays: Array) -> Array:
    op = make(*args(*arrays))
    op.verify()
    (result,) = evaluate(op, list(arrays))
    assert result.dtype == np.float32
    return result


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


# ---- conv2d ------------------------------------------------------------------------

CONVS = [
    # (x shape, w shape, strides, padding [t, l, b, r], dilation, groups, bias)
    ((1, 3, 6, 6), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, True),
    ((2, 4, 7, 7), (6, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2, True),
    ((1, 2, 8, 7), (3, 2, 3, 2), (1, 2), (2, 1, 0, 1), (2, 1), 1, False),
    ((1, 4, 5, 5), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, True),
    ((2, 6, 9, 8), (6, 3, 2, 3), (3, 2), (0, 2, 1, 0), (2, 2), 2, True),
    ((1, 1, 4, 4), (2, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, False),
]


def _random_conv() -> tuple[Any, ...]:
    groups = int(rng.choice([1, 2, 3]))
    cg, fg = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pad = tuple(int(p) for p in rng.integers(0, 3, size=4))
    h = (kh - 1) * dh + 1 + int(rng.integers(0, 6))
    w = (kw - 1) * dw + 1 + int(rng.integers(0, 6))
    return (
        (int(rng.integers(1, 3)), cg * groups, h, w),
        (fg * groups, cg, kh, kw),
        (sh, sw),
        pad,
        (dh, dw),
        groups,
        bool(rng.integers(0, 2)),
    )


@pytest.mark.parametrize("case", CONVS + [_random_conv() for _ in range(12)], ids=str)
def test_conv2d_matches_torch(case: tuple[Any, ...]) -> None:
    xs, ws, strides, padding, dilation, groups, with_bias = case
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])

    def make(xa: SSAValue, wa: SSAValue, ba: SSAValue) -> Operation:
        return tg.Conv2dOp(
            xa,
            wa,
            ba if with_bias else None,
            strides=strides,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )

    op = make(*args(x, w, b))
    op.verify()
    operands = [x, w, b] if with_bias else [x, w]
    (got,) = evaluate(op, operands)
    top, left, bottom, right = padding
    padded = F.pad(torch.from_numpy(x).double(), (left, right, top, bottom))
    want = F.conv2d(
        padded,
        torch.from_numpy(w).double(),
        torch.from_numpy(b).double() if with_bias else None,
        stride=strides,
        dilation=dilation,
        groups=groups,
    )
    assert_close(got, want.numpy())


# ---- pools -------------------------------------------------------------------------

POOLS = [
    # kernel, strides, symmetric padding (h, w), dilation
    ((2, 2), (2, 2), (0, 0), (1, 1)),
    ((3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 2), (2, 1), (1, 0), (1, 1)),
    ((2, 2), (1, 2), (1, 1), (2, 1)),
    ((3, 3), (2, 2), (1, 1), (2, 2)),
]


@pytest.mark.parametrize("case", POOLS, ids=str)
def test_max_pool_matches_torch(case: tuple[Any, ...]) -> None:
    kernel, strides, (ph, pw), dilation = case
    x = rand(2, 3, 9, 8)
    got = run_one(
        lambda a: tg.MaxPool2dOp(a, kernel, strides, (ph, pw, ph, pw), dilation), x
    )
    want = F.max_pool2d(torch.from_numpy(x), kernel, strides, (ph, pw), dilation)
    assert_close(got, want.numpy(), rtol=0, atol=0)


def test_max_pool_padding_never_wins() -> None:
    x = -rand(1, 1, 4, 4, low=1.0, high=2.0)  # all negative: a 0 pad would win
    got = run_one(lambda a: tg.MaxPool2dOp(a, (3, 3), (1, 1), (1, 1, 1, 1)), x)
    assert (got < 0).all()


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("case", [c for c in POOLS if c[3] == (1, 1)], ids=str)
def test_avg_pool_matches_torch(case: tuple[Any, ...], include_pad: bool) -> None:
    kernel, strides, (ph, pw), _ = case
    x = rand(2, 3, 7, 6)
    got = run_one(
        lambda a: tg.AvgPool2dOp(a, kernel, strides, (ph, pw, ph, pw), include_pad), x
    )
    want = F.avg_pool2d(
        torch.from_numpy(x).double(),
        kernel,
        strides,
        (ph, pw),
        count_include_pad=include_pad,
    )
    assert_close(got, want.numpy())


# ---- softmax, batch norm -----------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_softmax_matches_torch(axis: int) -> None:
    x = rand(3, 4, 5, low=-30, high=30)
    got = run_one(lambda a: tg.SoftmaxOp(a, axis), x)
    want = torch.softmax(torch.from_numpy(x).double(), dim=axis)
    assert_close(got, want.numpy(), rtol=1e-6, atol=1e-7)


def test_softmax_is_stable_for_large_inputs() -> None:
    x = np.array([[1000.0, 1001.0, 1002.0]], np.float32)
    got = run_one(lambda a: tg.SoftmaxOp(a, 1), x)
    want = torch.softmax(torch.from_numpy(x), dim=1)
    assert np.isfinite(got).all()
    assert_close(got, want.numpy())


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 6), (2, 5, 7)], ids=str)
def test_batch_norm_matches_torch(shape: tuple[int, ...]) -> None:
    c = shape[1]
    x, scale, bias, mean = rand(*shape), rand(c), rand(c), rand(c)
    var = rand(c, low=0.1, high=2.0)
    got = run_one(
        lambda *v: tg.BatchNormOp(*v, epsilon=1e-3), x, scale, bias, mean, var
    )
    want = F.batch_norm(
        torch.from_numpy(x).double(),
        torch.from_numpy(mean).double(),
        torch.from_numpy(var).double(),
        torch.from_numpy(scale).double(),
        torch.from_numpy(bias).double(),
        training=False,
        eps=float(np.float32(1e-3)),
    )
    assert_close(got, want.numpy())


# ---- the rest against NumPy ----------------------------------------------------------


def test_elementwise_broadcast_and_float32_rounding() -> None:
    a, b = rand(2, 1, 4), rand(3, 1, low=0.5, high=2.0)
    for cls, ref in [
        (tg.AddOp, np.add),
        (tg.SubOp, np.subtract),
        (tg.MulOp, np.multiply),
        (tg.DivOp, np.divide),
        (tg.MaxOp, np.maximum),
        (tg.MinOp, np.minimum),
    ]:
        got = run_one(cls, a, b)
        # float64 then one rounding is exactly IEEE float32 arithmetic
        np.testing.assert_array_equal(got, ref(a, b))
    got = run_one(tg.SqrtOp, b)
    np.testing.assert_array_equal(got, np.sqrt(b))


def test_unary_ops_and_nan() -> None:
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0, np.nan], np.float32)
    cases: list[tuple[Any, Callable[[Any], Any]]] = [
        (tg.NegOp, torch.neg),
        (tg.ExpOp, torch.exp),
        (tg.TanhOp, torch.tanh),
        (tg.SinOp, torch.sin),
        (tg.CosOp, torch.cos),
        (tg.SigmoidOp, torch.sigmoid),
        (tg.ReluOp, torch.relu),
    ]
    for cls, ref in cases:
        got = run_one(cls, x)
        assert_close(got, ref(torch.from_numpy(x)).numpy())
    positive = np.array([0.25, 1.0, 7.0], np.float32)
    assert_close(run_one(tg.LogOp, positive), np.log(positive))


@pytest.mark.parametrize(
    "shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2))]
)
def test_matmul(shapes: tuple[Sequence[int], Sequence[int]]) -> None:
    a, b = rand(*shapes[0]), rand(*shapes[1])
    assert_close(run_one(tg.MatmulOp, a, b), np.matmul(a, b))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", [(0,), (1, 2), (-1,), (2, 0, 1)], ids=str)
def test_reductions(axes: tuple[int, ...], keepdims: bool) -> None:
    x = rand(3, 4, 5)
    for cls, ref in [
        (tg.ReduceSumOp, np.sum),
        (tg.ReduceMeanOp, np.mean),
        (tg.ReduceMaxOp, np.max),
    ]:
        got = run_one(lambda a, c=cls: c(a, axes, keepdims), x)
        assert_close(got, ref(x, axis=axes, keepdims=keepdims))


def test_layout_ops_are_values_only() -> None:
    x = rand(2, 3, 4)
    t_op = tg.TransposeOp(args(x)[0], (2, 0, 1))
    (t,) = evaluate(t_op, [x])
    np.testing.assert_array_equal(t, np.transpose(x, (2, 0, 1)))
    assert t.flags.c_contiguous
    # reshape of the strided transpose: row-major order of the *logical* tensor
    r_op = tg.ReshapeOp(t_op.result, (4, 6))
    (r,) = evaluate(r_op, [t])
    np.testing.assert_array_equal(r, np.transpose(x, (2, 0, 1)).reshape(4, 6))
    (c,) = evaluate(tg.ContiguousOp(t_op.result), [t])
    np.testing.assert_array_equal(c, t)
    v = rand(3)
    (b,) = evaluate(tg.BroadcastOp(args(v)[0], (2, 3)), [v])
    np.testing.assert_array_equal(b, np.broadcast_to(v, (2, 3)))
    (w,) = evaluate(tg.ViewOp(args(x)[0], (6, 4)), [x])
    np.testing.assert_array_equal(w, x.reshape(6, 4))


def _function(
    in_types: Sequence[Attribute], body: Callable[..., Sequence[SSAValue]]
) -> func.FuncOp:
    block = Block(arg_types=in_types)
    with ImplicitBuilder(block):
        results = list(body(*block.args))
        func.ReturnOp(*results)
    fn = func.FuncOp("main", (in_types, [r.type for r in results]), Region(block))
    fn.verify()
    return fn


def test_evaluate_function_with_constants_and_a_fused_group() -> None:
    x, w = rand(2, 3), rand(3, 4)
    bias = rand(4)

    def body(xa: SSAValue) -> Sequence[SSAValue]:
        wc = tg.ConstantOp.from_numpy(w).result
        bc = tg.ConstantOp.from_numpy(bias).result
        y = tg.MatmulOp(xa, wc).result
        group = tg.FusedOp.empty_body([y, bc])
        with ImplicitBuilder(group.block):
            ya, ba = group.block.args
            tg.YieldOp(tg.ReluOp(tg.AddOp(ya, ba).result).result)
        fused = tg.FusedOp([y, bc], [y.type], group)
        return [fused.results[0], y]

    fn = _function([tensor_type((2, 3), f32)], body)
    relu, y = evaluate_function(fn, [x])
    assert_close(y, x @ w)
    assert_close(relu, np.maximum(x @ w + bias, 0))


def test_errors_name_the_problem() -> None:
    fn = _function([tensor_type((2, 3), f32)], lambda a: [tg.ExpOp(a).result])
    with pytest.raises(EvaluationError, match=r"expects shape \[2, 3\], got \[3\]"):
        evaluate_function(fn, [np.zeros(3, np.float32)])
    op = tg.ExpOp(args(np.zeros(3, np.float32))[0])
    with pytest.raises(EvaluationError, match="operand #0 has shape"):
        evaluate(op, [np.zeros(4, np.float32)])


# ---- channels-last (layout = "NHWC") ---------------------------------------------------


def nhwc(x: Array) -> Array:
    return np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))


@pytest.mark.parametrize("case", CONVS[:4], ids=str)
def test_conv2d_nhwc_is_the_nchw_conv_transposed(case: tuple[Any, ...]) -> None:
    xs, ws, strides, padding, dilation, groups, with_bias = case
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    hwio = np.ascontiguousarray(np.transpose(w, (2, 3, 1, 0)))
    geometry: dict[str, Any] = {
        "strides": strides,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
    }
    xa, wa, ba = args(x, w, b)
    nchw_op = tg.Conv2dOp(xa, wa, ba if with_bias else None, **geometry)
    xt, wt, bt = args(nhwc(x), hwio, b)
    nhwc_op = tg.Conv2dOp(xt, wt, bt if with_bias else None, **geometry, layout="NHWC")
    nhwc_op.verify()
    tail = [b] if with_bias else []
    (want,) = evaluate(nchw_op, [x, w, *tail])
    (got,) = evaluate(nhwc_op, [nhwc(x), hwio, *tail])
    assert_close(got, nhwc(want))


def test_pools_and_batch_norm_nhwc() -> None:
    x = rand(2, 3, 7, 6)
    (xa,), (xt,) = args(x), args(nhwc(x))
    for make in (
        lambda a, **k: tg.MaxPool2dOp(a, (3, 2), (2, 1), (1, 1, 1, 1), (1, 1), **k),
        lambda a, **k: tg.AvgPool2dOp(a, (3, 3), (1, 2), (1, 1, 1, 1), False, **k),
        lambda a, **k: tg.AvgPool2dOp(a, (2, 2), (1, 1), (1, 0, 1, 0), True, **k),
    ):
        (want,) = evaluate(make(xa), [x])
        (got,) = evaluate(make(xt, layout="NHWC"), [nhwc(x)])
        assert_close(got, nhwc(want))
    params = [rand(3), rand(3), rand(3), rand(3, low=0.1, high=2.0)]
    p = args(*params)
    (want,) = evaluate(tg.BatchNormOp(xa, *p), [x, *params])
    (got,) = evaluate(tg.BatchNormOp(xt, *p, layout="NHWC"), [nhwc(x), *params])
    assert_close(got, nhwc(want))
