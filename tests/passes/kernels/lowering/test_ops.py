"""Every tg op, lowered by convert-tg-to-affine + the CPU back end, against NumPy/torch.

Each case builds a small graph ``@main`` with the tg op constructors, lowers it to
LLVM IR, JIT-compiles it and runs it on random inputs. Inputs are passed as their
*storage* (so a strided graph input reads its storage through its layout), outputs
are fresh row-major arrays.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StridedLayoutAttr, TensorType, f32
from xdsl.ir import Attribute, Block, Region, SSAValue

import qidao
from qidao.compiler.pipeline import run_stages, stages, without
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.dialects import tg
from qidao.dialects.tg.types import tensor_type
from qidao.frontend.builder import Graph
from qidao.passes.kernels.convert_tg_to_affine import ConvertTgToAffinePass
from qidao.runtime.cpu import jit_compile
from qidao.runtime.executor import NativeFunction, TensorSpec

torch = pytest.importorskip("torch")
F = torch.nn.functional

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(0)


def rand(*shape: int, low: float = -2.0, high: float = 2.0) -> Array:
    return rng.uniform(low, high, size=shape).astype(np.float32)


def t(*shape: int) -> Attribute:
    return tensor_type(shape, f32)


def build(
    in_types: Sequence[Attribute],
    body: Callable[..., SSAValue | Sequence[SSAValue]],
) -> ModuleOp:
    """``func.func @main`` over ``in_types`` whose body ``body(*args)`` builds."""
    block = Block(arg_types=in_types)
    with ImplicitBuilder(block):
        results = body(*block.args)
        results = [results] if isinstance(results, SSAValue) else list(results)
        func.ReturnOp(*results)
    main = func.FuncOp("main", (in_types, [r.type for r in results]), Region(block))
    module = ModuleOp([main])
    module.verify()
    return module


def run(module: ModuleOp, *storages: Array, expand_math: bool = False) -> list[Array]:
    """Lower, JIT and call ``@main`` on the inputs' storage arrays (``expand_math``:
    math ops as the pipeline's arith expansions, else as LLVM/libm calls)."""
    main = module.body.block.first_op
    assert isinstance(main, func.FuncOp)
    out_types = main.function_type.outputs.data
    ConvertTgToAffinePass().apply(Context(), module)
    module.verify()
    lowering = stages("cpu", "scf", "llvm-dialect")
    run_stages(module, lowering if expand_math else without(lowering, "expand-math"))
    jit = jit_compile(llvm_ir_text(module))
    outs = [np.empty(tuple(o.get_shape()), np.float32) for o in out_types]  # type: ignore[attr-defined]
    specs = [TensorSpec(f"a{i}", s.shape, "float32") for i, s in enumerate(storages)]
    out_specs = [TensorSpec(f"o{i}", o.shape, "float32") for i, o in enumerate(outs)]
    native = NativeFunction(jit, "main", specs, out_specs)
    native.raw(*[np.ascontiguousarray(s) for s in storages], *outs)
    return outs


def assert_close(got: Array, want: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    want = np.asarray(want, dtype=np.float32)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at index {idx}: got {got[idx]!r}, expected {want[idx]!r} "
            f"({int(bad.sum())} of {bad.size} elements differ)"
        )


# ----------------------------------------------------------------------------------
# elementwise

BINARY_REF = {
    tg.AddOp: np.add,
    tg.SubOp: np.subtract,
    tg.MulOp: np.multiply,
    tg.DivOp: np.divide,
    tg.MaxOp: np.maximum,
    tg.MinOp: np.minimum,
}
BROADCASTS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3))]


@pytest.mark.parametrize("op", list(BINARY_REF), ids=lambda c: c.name)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary(op: type[tg.BinaryElementwiseOp], shapes: tuple[Any, Any]) -> None:
    a, b = rand(*shapes[0]), rand(*shapes[1], low=0.5, high=2.0)
    module = build([t(*shapes[0]), t(*shapes[1])], lambda x, y: op(x, y).result)
    (got,) = run(module, a, b)
    assert_close(got, BINARY_REF[op](a, b))


def _sigmoid(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


_erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf


UNARY_REF: dict[type[tg.UnaryElementwiseOp], tuple[Callable[[Array], Array], float]] = {
    tg.NegOp: (np.negative, -2.0),
    tg.ExpOp: (np.exp, -2.0),
    tg.LogOp: (np.log, 0.1),
    tg.SqrtOp: (np.sqrt, 0.0),
    tg.TanhOp: (np.tanh, -2.0),
    tg.ErfOp: (_erf, -3.0),
    tg.SinOp: (np.sin, -4.0),
    tg.CosOp: (np.cos, -4.0),
    tg.SigmoidOp: (_sigmoid, -4.0),
    tg.ReluOp: (lambda x: np.maximum(x, 0), -2.0),
}


@pytest.mark.parametrize("op", list(UNARY_REF), ids=lambda c: c.name)
def test_unary(op: type[tg.UnaryElementwiseOp]) -> None:
    ref, low = UNARY_REF[op]
    x = rand(3, 5, low=low)
    (got,) = run(build([t(3, 5)], lambda a: op(a).result), x)
    assert_close(got, ref(x), rtol=2e-6 if op is not tg.TanhOp else 1e-5, atol=1e-6)


ERF_POINTS = np.array(
    [
        *(0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-30, -3e-8, 1e-4),
        *(0.5, -0.92187494, 0.921875, 0.95, -1.0, 2.5, -3.9, 4.0, 10.0, -1e30),
        *(3.4028235e38, -3.4028235e38, 0.25, -0.75),
    ],
    np.float32,
)


@pytest.mark.parametrize("expand", [False, True], ids=["libm", "expand-math"])
def test_erf_special_values_tails_and_tiny_inputs(expand: bool) -> None:
    """+-inf -> +-1, NaN -> NaN, -0 -> -0, large |x| -> +-1 exactly, denormals to
    within one denormal step; the rest within 2e-7 relative (about 2 ulp) of the
    float64 reference, whether erf is libm's erff or expand-math's expansion."""
    x = ERF_POINTS.reshape(4, 6)
    (got,) = run(build([t(4, 6)], lambda a: tg.ErfOp(a).result), x, expand_math=expand)
    want = _erf(x.astype(np.float64))
    assert_close(got, want, rtol=2e-7, atol=2.0**-149)
    finite = ~np.isnan(x)
    assert (np.signbit(got) == np.signbit(x))[finite].all(), "erf keeps the sign"
    assert np.isnan(got[~finite]).all()
    saturated = np.abs(x) >= 4.0
    assert (got[saturated] == np.sign(x[saturated])).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sin_cos_compiled_match_numpy(dtype: str) -> None:
    """tg.sin/tg.cos through qidao.compile (the default schedule: LLVM vectorizes the
    loop, its 1000 elements leave a tail) within 1e-6 relative of the float64
    reference on float32 (libm's sinf/cosf, at most one ulp), 1e-15 on float64; the
    special values as C99's: sin(-0) = -0, +-inf -> NaN, NaN -> NaN; big arguments
    (rotary angles: position * frequency) are reduced exactly."""
    tiny = np.finfo(dtype).smallest_subnormal
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -1e-30, np.pi, -np.pi / 2]
    big = [2047.5, 1e5, -3e6, 1e30, -3e38, 4096.0 * np.pi]
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            np.array(special + big, dtype),
            rng.uniform(-10, 10, 500).astype(dtype),
            rng.uniform(-1e4, 1e4, 485).astype(dtype),
        ]
    )
    g = Graph("main")
    v = g.input("x", x.shape, dtype)
    g.output(g.sin(v), g.cos(v))
    sin, cos = qidao.compile(g)(x)
    rtol = 1e-6 if dtype == "float32" else 1e-15
    with np.errstate(invalid="ignore"):
        wants = np.sin(x.astype(np.float64)), np.cos(x.astype(np.float64))
    for name, got, want in (("sin", sin, wants[0]), ("cos", cos, wants[1])):
        assert got.dtype == np.dtype(dtype)
        bad = ~np.isclose(got, want, rtol=rtol, atol=0.0, equal_nan=True)
        assert not bad.any(), (
            f"{name}({x[bad][0]!r}) = {got[bad][0]!r}, expected {want[bad][0]!r} "
            f"({int(bad.sum())} of {x.size} differ)"
        )
    assert np.signbit(sin[1]) and sin[1] == 0.0, "sin(-0) = -0"
    assert np.isnan(sin[2:5]).all() and np.isnan(cos[2:5]).all()


def test_nan_propagates_through_max_min_relu_reduce_max() -> None:
    x = np.array([[1.0, np.nan, -1.0], [0.5, 2.0, -3.0]], np.float32)
    y = np.array([np.nan, 0.0, 1.0], np.float32)
    module = build(
        [t(2, 3), t(3)],
        lambda a, b: [
            tg.MaxOp(a, b).result,
            tg.MinOp(a, b).result,
            tg.ReluOp(a).result,
            tg.ReduceMaxOp(a, [1]).result,
        ],
    )
    mx, mn, relu, rmax = run(module, x, y)
    assert_close(mx, np.maximum(x, y))
    assert_close(mn, np.minimum(x, y))
    assert_close(relu, torch.relu(torch.from_numpy(x)).numpy())
    assert_close(rmax, np.max(x, axis=1))


def test_fused_chain_with_splat_constant_and_views() -> None:
    x, b = rand(4, 6), rand(6)
    types = [t(4, 6), t(6), t(6)]

    def body(xa: SSAValue, ba: SSAValue) -> SSAValue:
        two = tg.ConstantOp.from_numpy(np.full((6,), 2.0, np.float32)).result
        inputs = [xa, ba, two]
        region = tg.FusedOp.empty_body(inputs)
        bx, bb, bc = region.block.args
        with ImplicitBuilder(region.block):
            m = tg.MulOp(bx, bc).result
            s = tg.AddOp(m, bb).result
            tr = tg.TransposeOp(s, [1, 0]).result
            flat = tg.ReshapeOp(tr, [24]).result
            v = tg.ViewOp(flat, [4, 6]).result
            tg.YieldOp(tg.SigmoidOp(v).result)
        return tg.FusedOp(inputs, [t(4, 6)], region).results[0]

    module = build(types[:2], body)
    (got,) = run(module, x, b)
    want = _sigmoid((x * 2 + b).T.reshape(24).reshape(4, 6))
    assert_close(got, want)


# ----------------------------------------------------------------------------------
# layout: transposes, views, reshapes, strided inputs


PERMS = [p for rank in range(1, 5) for p in itertools.permutations(range(rank))]


@pytest.mark.parametrize("perm", PERMS, ids=str)
def test_every_transpose(perm: tuple[int, ...]) -> None:
    shape = (2, 3, 4, 5)[: len(perm)]
    x = rand(*shape)
    module = build(
        [t(*shape)],
        lambda a: [
            tg.ContiguousOp(tr := tg.TransposeOp(a, perm).result).result,
            tg.NegOp(tr).result,
            tr,
        ],
    )
    contiguous, negated, view = run(module, x)
    want = np.transpose(x, perm)
    assert_close(contiguous, want)
    assert_close(negated, -want)
    assert_close(view, want)


def test_view_versus_reshape_copy() -> None:
    x = rand(2, 6)

    def body(a: SSAValue) -> list[SSAValue]:
        v = tg.ViewOp(a, [3, 4]).result  # a view
        tr = tg.TransposeOp(a, [1, 0]).result
        copied = tg.ReshapeOp(tr, [3, 4])  # the transpose has no 3x4 view: copy
        assert copied.is_copy()
        viewed = tg.ReshapeOp(tr, [6, 2, 1])  # splits no chunk: a view
        assert not viewed.is_copy()
        return [tg.AddOp(v, copied.result).result, tg.ExpOp(viewed.result).result]

    added, expd = run(build([t(2, 6)], body), x)
    assert_close(added, x.reshape(3, 4) + x.T.reshape(3, 4))
    assert_close(expd, np.exp(x.T.reshape(6, 2, 1)), rtol=2e-6)


def test_strided_graph_inputs() -> None:
    storage = rand(2, 3)
    transposed = TensorType(f32, [3, 2], StridedLayoutAttr([1, 3], 0))
    offset = TensorType(f32, [2, 2], StridedLayoutAttr([3, 1], 1))
    broadcast = TensorType(f32, [4, 3], StridedLayoutAttr([0, 1], 0))
    row = rand(3)
    module = build(
        [transposed, offset, broadcast],
        lambda a, b, c: [
            tg.ReluOp(a).result,
            tg.ContiguousOp(b).result,
            tg.MulOp(c, c).result,
            tg.ReduceSumOp(a, [0]).result,
        ],
    )
    relu, sliced, squared, summed = run(module, storage, storage, row)
    assert_close(relu, np.maximum(storage.T, 0))
    assert_close(sliced, storage[:, 1:3])
    assert_close(squared, np.broadcast_to(row * row, (4, 3)))
    assert_close(summed, storage.T.sum(axis=0))


def test_broadcast_view_then_compute() -> None:
    v = rand(3)
    module = build(
        [t(3)],
        lambda a: [
            tg.BroadcastOp(a, [2, 4, 3]).result,
            tg.ExpOp(tg.BroadcastOp(a, [4, 3]).result).result,
        ],
    )
    view, expd = run(module, v)
    assert_close(view, np.broadcast_to(v, (2, 4, 3)))
    assert_close(expd, np.exp(np.broadcast_to(v, (4, 3))), rtol=2e-6)


def test_outputs_that_are_inputs_constants_or_returned_twice() -> None:
    x = rand(2, 3)
    c = rand(2, 3)

    def body(a: SSAValue) -> list[SSAValue]:
        r = tg.ReluOp(a).result
        const = tg.ConstantOp.from_numpy(c).result
        splat = tg.ConstantOp.from_numpy(np.full((2, 3), 1.5, np.float32)).result
        return [r, r, a, const, splat, tg.AddOp(r, const).result]

    r1, r2, same, const, splat, added = run(build([t(2, 3)], body), x)
    assert_close(r1, np.maximum(x, 0))
    assert_close(r2, np.maximum(x, 0))
    assert_close(same, x)
    assert_close(const, c)
    assert_close(splat, np.full((2, 3), 1.5))
    assert_close(added, np.maximum(x, 0) + c)


# ----------------------------------------------------------------------------------
# contractions

MATMULS = [
    ((4, 3), (3, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 2), (4, 2, 3)),
]


@pytest.mark.parametrize("shapes", MATMULS, ids=str)
def test_matmul(shapes: tuple[Any, Any]) -> None:
    a, b = rand(*shapes[0]), rand(*shapes[1])
    module = build(
        [t(*shapes[0]), t(*shapes[1])], lambda x, w: tg.MatmulOp(x, w).result
    )
    (got,) = run(module, a, b)
    assert_close(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_matmul_through_transpose_and_constant_weight() -> None:
    a, w, bias = rand(4, 3), rand(5, 3), rand(5)

    def body(x: SSAValue) -> SSAValue:
        wt = tg.TransposeOp(tg.ConstantOp.from_numpy(w).result, [1, 0]).result
        y = tg.MatmulOp(x, wt).result
        return tg.AddOp(y, tg.ConstantOp.from_numpy(bias).result).result

    (got,) = run(build([t(4, 3)], body), a)
    assert_close(got, a @ w.T + bias, atol=1e-5)


CONVS = [
    # (x shape, w shape, strides, padding [t, l, b, r], dilation, groups, bias)
    ((1, 3, 6, 6), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, True),
    ((2, 4, 7, 7), (6, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2, True),
    ((1, 2, 8, 7), (3, 2, 3, 2), (1, 2), (2, 1, 0, 1), (2, 1), 1, False),
    ((1, 4, 5, 5), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, True),
]


@pytest.mark.parametrize("case", CONVS, ids=str)
def test_conv2d(case: tuple[Any, ...]) -> None:
    xs, ws, strides, padding, dilation, groups, with_bias = case
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    types = [t(*xs), t(*ws), t(ws[0])]

    def body(xa: SSAValue, wa: SSAValue, ba: SSAValue) -> SSAValue:
        conv = tg.Conv2dOp(
            xa,
            wa,
            ba if with_bias else None,
            strides=strides,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )
        return conv.result

    (got,) = run(build(types, body), x, w, b)
    top, left, bottom, right = padding
    padded = F.pad(torch.from_numpy(x), (left, right, top, bottom))
    want = F.conv2d(
        padded,
        torch.from_numpy(w),
        torch.from_numpy(b) if with_bias else None,
        stride=strides,
        dilation=dilation,
        groups=groups,
    )
    assert_close(got, want.numpy(), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------------
# nn

POOLS = [
    # kernel, strides, symmetric padding (h, w), dilation
    ((2, 2), (2, 2), (0, 0), (1, 1)),
    ((3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 2), (2, 1), (1, 0), (1, 1)),
    ((2, 2), (1, 2), (1, 1), (2, 1)),
]


@pytest.mark.parametrize("case", POOLS, ids=str)
def test_max_pool(case: tuple[Any, ...]) -> None:
    kernel, strides, (ph, pw), dilation = case
    x = rand(2, 3, 7, 6)

    def op(a: SSAValue) -> SSAValue:
        return tg.MaxPool2dOp(a, kernel, strides, (ph, pw, ph, pw), dilation).result

    (got,) = run(build([t(2, 3, 7, 6)], op), x)
    want = F.max_pool2d(torch.from_numpy(x), kernel, strides, (ph, pw), dilation)
    assert_close(got, want.numpy())


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("case", [c for c in POOLS if c[3] == (1, 1)], ids=str)
def test_avg_pool(case: tuple[Any, ...], include_pad: bool) -> None:
    kernel, strides, (ph, pw), _ = case
    x = rand(2, 3, 7, 6)

    def op(a: SSAValue) -> SSAValue:
        return tg.AvgPool2dOp(a, kernel, strides, (ph, pw, ph, pw), include_pad).result

    (got,) = run(build([t(2, 3, 7, 6)], op), x)
    want = F.avg_pool2d(
        torch.from_numpy(x), kernel, strides, (ph, pw), count_include_pad=include_pad
    )
    assert_close(got, want.numpy())


def test_batch_norm() -> None:
    x = rand(2, 3, 4, 5)
    scale, bias, mean = rand(3), rand(3), rand(3)
    var = rand(3, low=0.1, high=2.0)
    module = build(
        [t(2, 3, 4, 5), t(3), t(3), t(3), t(3)],
        lambda x, s, b, m, v: tg.BatchNormOp(x, s, b, m, v, epsilon=1e-3).result,
    )
    (got,) = run(module, x, scale, bias, mean, var)
    c = (1, 3, 1, 1)
    eps = np.float32(1e-3)
    want = scale.reshape(c) * (x - mean.reshape(c)) / np.sqrt(var.reshape(c) + eps)
    assert_close(got, want + bias.reshape(c))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax(axis: int) -> None:
    x = rand(3, 4, 5, low=-5, high=5)
    (got,) = run(build([t(3, 4, 5)], lambda a: tg.SoftmaxOp(a, axis).result), x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    assert_close(got, e / e.sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-6)


REDUCTIONS: dict[type[tg.ReduceOp], Callable[..., Array]] = {
    tg.ReduceSumOp: np.sum,
    tg.ReduceMeanOp: np.mean,
    tg.ReduceMaxOp: np.max,
}


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (-1,), (2, 0, 1)], ids=str)
@pytest.mark.parametrize("op", list(REDUCTIONS), ids=lambda c: c.name)
def test_reduce(op: type[tg.ReduceOp], axes: tuple[int, ...], keepdims: bool) -> None:
    x = rand(3, 4, 5)
    module = build([t(3, 4, 5)], lambda a: op(a, axes, keepdims).result)
    (got,) = run(module, x)
    want = REDUCTIONS[op](x, axis=axes, keepdims=keepdims)
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_host_call_checks_and_runs_through_native_function() -> None:
    """The entry ABI: inputs, then outputs, as NativeFunction calls it."""
    a, w, b = rand(4, 3), rand(3, 5), rand(5)
    module = build(
        [t(4, 3), t(3, 5), t(5)],
        lambda x, y, z: tg.ReluOp(tg.AddOp(tg.MatmulOp(x, y).result, z).result).result,
    )
    ConvertTgToAffinePass().apply(Context(), module)
    run_stages(module, stages("cpu", "scf", "llvm-dialect"))
    jit = jit_compile(llvm_ir_text(module))
    specs = [
        TensorSpec(n, s.shape, "float32") for n, s in zip("xwb", (a, w, b), strict=True)
    ]
    native = NativeFunction(jit, "main", specs, [TensorSpec("y", (4, 5), "float32")])
    (got,) = native(a, w, b)
    assert_close(got, np.maximum(a @ w + b, 0), atol=1e-5)
