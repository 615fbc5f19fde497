"""Pooling: ONNX ``MaxPool`` / ``AveragePool`` / ``LpPool`` in 1-D, 2-D and 3-D with
``ceil_mode``, dilations and ``count_include_pad``, ``GlobalLpPool``, and the
``dilation`` of ``tg.avg_pool2d``, compiled and run.

The oracles: PyTorch (``max_pool1d/2d/3d``, ``avg_pool1d/2d/3d`` with ``ceil_mode``
and ``count_include_pad``: symmetric padding, no average dilation), and for the rest
``reference_pool`` below, a direct loop over the output positions written from the
ONNX definition (and checked against PyTorch where both apply). ONNX's
``ReferenceEvaluator`` is not the oracle for ``ceil_mode``: when the last window runs
two or more positions past the input it shifts the input by one
(``op_pool_common.get_output_shape_explicit_padding`` splits that extra padding
between both ends).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

import qidao
from qidao.dialects import tg
from qidao.dialects.tg.numpy_eval import evaluate
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError, OnnxImportError
from qidao.frontend.onnx import import_onnx

Array = np.ndarray[Any, Any]


def rand(*shape: int, seed: int = 0) -> Array:
    rng = np.random.default_rng(seed + sum(shape))
    return rng.standard_normal(shape).astype(np.float32)


def assert_close(
    got: Array, want: Array, rtol: float = 1e-5, atol: float = 1e-5
) -> None:
    """Equal shapes and values; a mismatch names the first index and both values."""
    want = np.asarray(want, dtype=np.float32)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at index {idx}: got {got[idx]!r}, expected {want[idx]!r} "
            f"({int(bad.sum())} of {bad.size} differ)"
        )


def reference_pool(
    x: Array,
    kind: str,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int] | None = None,
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    p: int = 2,
) -> Array:
    """ONNX pooling of ``[N, C, *spatial]``, one output position at a time.

    ``kind`` is ``"max"``, ``"avg"`` or ``"lp"``; ``pads`` is ONNX's ``[begins...,
    ends...]``. The output size is floor (or, with ``ceil_mode``, ceil, less one
    when the last window would start in the end padding) of ``(size + pads -
    extent) / stride + 1``. A window's taps are clipped to the padded input; the
    average divides by the clipped taps with ``count_include_pad``, else by the
    real ones; lp sums ``|x| ** p`` over the real taps (padding is 0)."""
    rank = x.ndim - 2
    dilations = dilations or [1] * rank
    begin, end = pads[:rank], pads[rank:]
    out = []
    for size, k, s, d, b, e in zip(
        x.shape[2:], kernel, strides, dilations, begin, end, strict=True
    ):
        span = size + b + e - (d * (k - 1) + 1)
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + b:
            o -= 1
        out.append(o)
    y = np.zeros((*x.shape[:2], *out), np.float64)
    for pos in itertools.product(*(range(o) for o in out)):
        taps = [
            [o * s - b + j * d for j in range(k)]
            for o, s, b, k, d in zip(
                pos, strides, begin, kernel, dilations, strict=True
            )
        ]
        padded = [
            [t for t in ts if t < size + e]
            for ts, size, e in zip(taps, x.shape[2:], end, strict=True)
        ]
        real = [
            [t for t in ts if 0 <= t < size]
            for ts, size in zip(taps, x.shape[2:], strict=True)
        ]
        window = x[(slice(None), slice(None), *np.ix_(*real))].astype(np.float64)
        axes = tuple(range(2, x.ndim))
        if kind == "max":
            value = window.max(axis=axes)
        elif kind == "lp":
            value = (np.abs(window) ** p).sum(axis=axes) ** (1.0 / p)
        else:
            count = np.prod([len(t) for t in (padded if count_include_pad else real)])
            value = window.sum(axis=axes) / count
        y[(slice(None), slice(None), *pos)] = value
    return y.astype(np.float32)


def pool_model(op: str, shape: Sequence[int], opset: int = 22, **attrs: Any) -> Any:
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="pool", **attrs)],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def run_onnx(model: Any, x: Array) -> Array:
    (y,) = qidao.compile(model)(x)
    return np.asarray(y)


# ---- ONNX pools against PyTorch ------------------------------------------------------

TORCH_CASES = [
    # (op, input shape, kernel, strides, symmetric pad, dilations, ceil, include)
    ("MaxPool", (1, 3, 11), (3,), (2,), (1,), (1,), True, False),
    ("MaxPool", (2, 2, 9), (2,), (1,), (0,), (3,), False, False),
    ("MaxPool", (1, 2, 5, 7), (3, 3), (2, 2), (0, 0), (1, 1), True, False),
    ("MaxPool", (1, 3, 2, 2), (3, 3), (3, 3), (1, 1), (1, 1), True, False),
    ("MaxPool", (1, 2, 6, 6), (4, 4), (4, 4), (0, 0), (1, 1), True, False),
    (
        "MaxPool",
        (1, 2, 5, 6, 7),
        (2, 3, 2),
        (2, 2, 1),
        (1, 1, 0),
        (1, 1, 2),
        True,
        False,
    ),
    (
        "MaxPool",
        (1, 1, 8, 8, 8),
        (3, 3, 3),
        (2, 2, 2),
        (1, 1, 1),
        (2, 2, 2),
        False,
        False,
    ),
    ("AveragePool", (1, 3, 10), (3,), (2,), (1,), (1,), True, True),
    ("AveragePool", (1, 3, 10), (3,), (2,), (1,), (1,), True, False),
    ("AveragePool", (1, 2, 6, 7), (3, 3), (2, 2), (1, 1), (1, 1), True, True),
    ("AveragePool", (1, 2, 6, 7), (3, 3), (2, 2), (1, 1), (1, 1), True, False),
    ("AveragePool", (1, 3, 2, 2), (3, 3), (3, 3), (1, 1), (1, 1), True, True),
    ("AveragePool", (1, 2, 6, 6), (4, 4), (4, 4), (0, 0), (1, 1), True, True),
    (
        "AveragePool",
        (1, 2, 5, 6, 7),
        (3, 3, 2),
        (2, 2, 2),
        (1, 1, 1),
        (1, 1, 1),
        True,
        True,
    ),
    (
        "AveragePool",
        (2, 1, 5, 6, 7),
        (3, 2, 3),
        (2, 1, 2),
        (1, 0, 1),
        (1, 1, 1),
        True,
        False,
    ),
    (
        "AveragePool",
        (1, 2, 4, 5, 6),
        (2, 2, 2),
        (2, 2, 2),
        (0, 0, 0),
        (1, 1, 1),
        False,
        False,
    ),
]


def torch_pool(
    op: str,
    x: Array,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pad: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil: bool,
    include: bool,
) -> Array:
    t = torch.from_numpy(x)
    rank = len(kernel)
    if op == "MaxPool":
        fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[rank - 1]
        y = fn(t, kernel, strides, pad, dilations, ceil_mode=ceil)
    else:
        assert dilations == (1,) * rank, "PyTorch's average pools have no dilation"
        avg = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[rank - 1]
        y = avg(t, kernel, strides, pad, ceil_mode=ceil, count_include_pad=include)
    return y.numpy()


@pytest.mark.parametrize(
    ("op", "shape", "kernel", "strides", "pad", "dilations", "ceil", "include"),
    TORCH_CASES,
    ids=[f"{c[0]}-{len(c[2])}d-{k}" for k, c in enumerate(TORCH_CASES)],
)
def test_onnx_pool_matches_torch(
    op: str,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pad: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil: bool,
    include: bool,
) -> None:
    attrs: dict[str, Any] = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "pads": [*pad, *pad],
        "ceil_mode": int(ceil),
    }
    if op == "AveragePool":
        attrs["count_include_pad"] = int(include)
    if dilations != (1,) * len(kernel):
        attrs["dilations"] = list(dilations)
    x = rand(*shape)
    want = torch_pool(op, x, kernel, strides, pad, dilations, ceil, include)
    assert_close(run_onnx(pool_model(op, shape, **attrs), x), want)
    kind = "max" if op == "MaxPool" else "avg"
    ref = reference_pool(
        x, kind, kernel, strides, [*pad, *pad], dilations, ceil, include
    )
    assert_close(ref, want)  # the NumPy reference below agrees with PyTorch


# ---- what PyTorch does not cover: asymmetric pads, dilated averages, LpPool ------------

REFERENCE_CASES = [
    # (op, input shape, attributes)
    (
        "MaxPool",
        (1, 2, 7, 6),
        {"kernel_shape": [3, 2], "pads": [0, 1, 2, 0], "ceil_mode": 1},
    ),
    (
        "AveragePool",
        (1, 1, 4, 4),
        {"kernel_shape": [2, 2], "dilations": [2, 2], "ceil_mode": 1},
    ),
    (
        "AveragePool",
        (1, 2, 7, 9),
        {
            "kernel_shape": [3, 3],
            "strides": [2, 3],
            "pads": [2, 0, 1, 2],
            "dilations": [2, 1],
            "ceil_mode": 1,
            "count_include_pad": 1,
        },
    ),
    (
        "AveragePool",
        (1, 2, 7, 9),
        {
            "kernel_shape": [3, 3],
            "strides": [2, 3],
            "pads": [2, 0, 1, 2],
            "dilations": [2, 1],
            "ceil_mode": 1,
        },
    ),
    (
        "AveragePool",
        (1, 1, 9, 8, 7),
        {
            "kernel_shape": [3, 2, 2],
            "strides": [3, 2, 2],
            "dilations": [2, 2, 1],
            "ceil_mode": 1,
            "count_include_pad": 1,
        },
    ),
    ("AveragePool", (1, 2, 9), {"kernel_shape": [2], "dilations": [3], "pads": [1, 2]}),
    (
        "AveragePool",
        (1, 2, 6, 6),
        {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "count_include_pad": 1},
    ),
    (
        "LpPool",
        (1, 3, 10),
        {"kernel_shape": [3], "strides": [2], "p": 3, "pads": [1, 0]},
    ),
    ("LpPool", (1, 2, 6, 7), {"kernel_shape": [2, 3], "p": 2, "pads": [1, 1, 1, 1]}),
    ("LpPool", (1, 2, 6, 7), {"kernel_shape": [2, 2], "p": 1, "dilations": [2, 1]}),
    (
        "LpPool",
        (1, 2, 5, 6),
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    ),
    (
        "LpPool",
        (1, 1, 5, 6, 4),
        {"kernel_shape": [2, 2, 2], "p": 4, "pads": [0, 1, 0, 1, 0, 1]},
    ),
]


@pytest.mark.parametrize(
    ("op", "shape", "attrs"),
    REFERENCE_CASES,
    ids=[f"{c[0]}-{len(c[1]) - 2}d-{k}" for k, c in enumerate(REFERENCE_CASES)],
)
def test_onnx_pool_matches_the_reference(
    op: str, shape: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    rank = len(shape) - 2
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides", [1] * rank)
    pads = attrs.get("pads", [0] * 2 * rank)
    if attrs.get("auto_pad") == "SAME_LOWER":  # stride 1: the extra one at the start
        pads = [(k - 1) - (k - 1) // 2 for k in kernel] + [(k - 1) // 2 for k in kernel]
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[op]
    x = rand(*shape)
    want = reference_pool(
        x,
        kind,
        kernel,
        strides,
        pads,
        attrs.get("dilations"),
        bool(attrs.get("ceil_mode", 0)),
        bool(attrs.get("count_include_pad", 0)),
        attrs.get("p", 2),
    )
    assert_close(run_onnx(pool_model(op, shape, **attrs), x), want, rtol=1e-4)


def test_global_lp_pool() -> None:
    x = rand(2, 3, 4, 5)
    for p in (1, 2, 3):
        got = run_onnx(pool_model("GlobalLpPool", x.shape, p=p), x)
        want = (np.abs(x.astype(np.float64)) ** p).sum(axis=(2, 3), keepdims=True)
        assert_close(got, want ** (1.0 / p), rtol=1e-4)


# ---- how the pools are built ------------------------------------------------------------


def tg_op_names(model: Any) -> list[str]:
    module = import_onnx(model)
    func = next(iter(module.ops))
    return [op.name for op in func.walk() if op.name.startswith("tg.")]


def test_1d_pool_is_a_2d_pool_over_a_unit_row() -> None:
    model = pool_model("MaxPool", (1, 3, 32), kernel_shape=[3], strides=[2])
    assert tg_op_names(model) == ["tg.reshape", "tg.max_pool2d", "tg.reshape"]


def test_3d_pool_is_two_separable_2d_pools() -> None:
    model = pool_model("AveragePool", (1, 2, 6, 6, 6), kernel_shape=[2, 3, 3])
    assert tg_op_names(model) == [
        "tg.reshape",
        "tg.avg_pool2d",  # over (H, W) of [N, C*D, H, W]
        "tg.reshape",
        "tg.avg_pool2d",  # over D of [N, C, D, OH*OW]
        "tg.reshape",
    ]
    # a window of depth 1 needs no second pool
    flat = pool_model("MaxPool", (1, 2, 6, 6, 6), kernel_shape=[1, 3, 3])
    assert tg_op_names(flat).count("tg.max_pool2d") == 1


def test_ceil_mode_with_count_include_pad_pads_explicitly() -> None:
    # the divisor counts the declared padding but not the ceil padding, so the
    # declared padding becomes real zeros (tg.pad) and real elements are counted
    model = pool_model(
        "AveragePool",
        (1, 1, 6, 7),
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        ceil_mode=1,
        count_include_pad=1,
    )
    assert tg_op_names(model) == ["tg.pad", "tg.avg_pool2d"]
    # without a ceil padding, count_include_pad stays on the op
    plain = pool_model(
        "AveragePool", (1, 1, 7, 7), kernel_shape=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1
    )
    assert tg_op_names(plain) == ["tg.avg_pool2d"]


def test_window_starting_in_the_end_padding_before_opset_22_is_refused() -> None:
    # [1, 1, 2, 2], kernel 3, stride 3, pads 1: ceil gives 2 windows per axis, the
    # second starting at row 2 of 2 (in the end padding). Opset 22 drops it (one
    # window: what PyTorch computes); before 22 ONNX's output shape counts it.
    attrs: dict[str, Any] = {
        "kernel_shape": [3, 3],
        "strides": [3, 3],
        "pads": [1, 1, 1, 1],
        "ceil_mode": 1,
    }
    x = rand(1, 1, 2, 2)
    y = run_onnx(pool_model("MaxPool", x.shape, **attrs), x)
    assert_close(y, x.max(axis=(2, 3), keepdims=True))
    with pytest.raises(
        OnnxImportError,
        match=r"MaxPool node 'pool': ceil_mode=1: the last window along an axis of "
        r"size 2 .* would start in the end padding .* convert the model to opset 22 "
        r"\(the model imports 21\)",
    ):
        import_onnx(pool_model("MaxPool", x.shape, opset=21, **attrs))
    # at opset 21 a ceil_mode that drops no window is converted as at 22
    ok = pool_model(
        "AveragePool",
        (1, 1, 5, 5),
        opset=21,
        kernel_shape=[2, 2],
        strides=[2, 2],
        ceil_mode=1,
    )
    x5 = rand(1, 1, 5, 5)
    want = reference_pool(x5, "avg", (2, 2), (2, 2), (0, 0, 0, 0), None, True)
    assert_close(run_onnx(ok, x5), want)


@pytest.mark.parametrize(
    ("shape", "attrs", "match"),
    [
        (
            (1, 1, 2, 2, 2, 2),
            {"kernel_shape": [1, 1, 1, 1]},
            r"MaxPool node 'pool': expects an \[N, C, \.\.\.\] input with 1, 2 or 3 "
            r"spatial dimensions, got input shape \[1, 1, 2, 2, 2, 2\]",
        ),
        (
            (1, 1, 8),
            {"kernel_shape": [2], "pads": [2, 0]},
            r"MaxPool node 'pool'.*padding \[0, 2, 0, 0\] must be smaller than the "
            r"window \[1, 2\]",
        ),
    ],
)
def test_pool_errors_name_the_node(
    shape: tuple[int, ...], attrs: dict[str, Any], match: str
) -> None:
    with pytest.raises(OnnxImportError, match=match):
        import_onnx(pool_model("MaxPool", shape, **attrs))


# ---- tg.avg_pool2d's dilation ------------------------------------------------------------


@pytest.mark.parametrize("include", [False, True])
def test_dilated_avg_pool_nchw_and_folded(include: bool) -> None:
    x = rand(1, 3, 9, 8)
    want = reference_pool(
        x, "avg", (3, 2), (2, 1), (1, 0, 2, 1), (2, 3), False, include
    )
    g = Graph("main")
    xi = g.input("x", x.shape)
    g.output(g.avg_pool2d(xi, (3, 2), (2, 1), (1, 0, 2, 1), include, dilation=(2, 3)))
    (got,) = qidao.compile(g)(x)
    assert_close(got, want)
    # fold-constants evaluates the op with NumPy (numpy_eval)
    op = tg.AvgPool2dOp(
        Graph("c").constant(x).ssa,
        (3, 2),
        (2, 1),
        (1, 0, 2, 1),
        include,
        dilation=(2, 3),
    )
    (folded,) = evaluate(op, [x])
    assert_close(folded, want)


def test_dilated_avg_pool_nhwc_after_a_convolution() -> None:
    # the conv makes a chain the layout pass turns NHWC, pool included
    x, w = rand(1, 4, 10, 10), rand(8, 4, 1, 1, seed=1)
    g = Graph("main")
    xi = g.input("x", x.shape)
    conv = g.conv2d(xi, g.constant(w))
    g.output(g.avg_pool2d(conv, 2, 1, (1, 1, 0, 0), dilation=3))
    compiled = qidao.compile(g)
    assert 'layout = "NHWC"' in compiled.ir("tg")
    (got,) = compiled(x)
    y = F.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    want = reference_pool(y, "avg", (2, 2), (1, 1), (1, 1, 0, 0), (3, 3))
    assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_avg_pool_dilation_round_trips_and_is_checked() -> None:
    x = Graph("main").input("x", (1, 2, 8, 8))
    op = tg.AvgPool2dOp(x.ssa, (2, 2), (1, 1), (0, 0, 0, 0), dilation=(2, 2))
    assert op.dilations() == (2, 2)
    assert tg.AvgPool2dOp(x.ssa, (2, 2)).dilation is None  # [1, 1] is omitted
    g = Graph("main")
    xi = g.input("x", (1, 2, 8, 8))
    with pytest.raises(GraphError, match=r"must be smaller than the window \[3, 3\]"):
        g.avg_pool2d(xi, 2, 1, (3, 0, 0, 0), dilation=2)
    # padding 2 >= kernel 2 is fine inside a dilated window of extent 3
    assert g.avg_pool2d(xi, 2, 1, (2, 0, 0, 0), dilation=2).shape == (1, 2, 8, 6)
