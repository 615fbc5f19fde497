"""ONNX ``Conv`` and the pools on 1-D ``[N, C, L]`` and 3-D ``[N, C, D, H, W]``
inputs (``qidao/frontend/onnx/nn.py`` through ``qidao/frontend/spatial.py``):
strides, dilations, pads, ``auto_pad``, groups (depthwise included) and bias, a
whisper-like Conv1d + GELU stack, the gradients of both ranks, and the refusal of
other ranks.

The oracle is ONNX Runtime on the same model and random inputs (many nodes in one
model: compiling dominates these tests); the gradients are checked by
``qidao.gradcheck`` (central differences in float64).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]


@dataclass
class Node:
    """One node: its op type, the shapes of its inputs (None: an absent optional
    input), its attributes, and which inputs are initializers (else graph inputs)."""

    op: str
    shapes: Sequence[tuple[int, ...] | None]
    attrs: dict[str, Any] = field(default_factory=dict)
    constants: Sequence[int] = ()


def conv(
    x: tuple[int, ...],
    w: tuple[int, ...],
    attrs: dict[str, Any] | None = None,
    bias: bool = False,
    constant_weight: bool = False,
) -> Node:
    """A ``Conv`` node; the bias has one value per output channel ``w[0]``."""
    shapes = [x, w, (w[0],)] if bias else [x, w]
    constants = (1, 2) if constant_weight else ()
    return Node("Conv", shapes, attrs or {}, constants)


def rand(shape: Sequence[int], seed: int) -> Array:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


def model_of(nodes: Sequence[Node], opset: int = 22) -> tuple[Any, dict[str, Array]]:
    """A model of the nodes side by side (node ``k`` reads ``in<k>_<i>`` and writes
    ``y<k>``) and random values of its graph inputs."""
    protos, inputs, initializers = [], [], []
    feeds: dict[str, Array] = {}
    for k, node in enumerate(nodes):
        names = []
        for i, shape in enumerate(node.shapes):
            name = "" if shape is None else f"in{k}_{i}"
            names.append(name)
            if shape is None:
                continue
            value = rand(shape, 7 * k + i)
            if i in node.constants:
                initializers.append(numpy_helper.from_array(value, name))
            else:
                inputs.append(
                    helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
                )
                feeds[name] = value
        protos.append(
            helper.make_node(node.op, names, [f"y{k}"], name=f"n{k}", **node.attrs)
        )
    outputs = [
        helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None)
        for k in range(len(nodes))
    ]
    graph = helper.make_graph(protos, "nd", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model, feeds


def assert_close(got: Array, want: Array, what: str, tol: float = 1e-4) -> None:
    """Equal shapes and values; a mismatch names the node, the first index and both
    values."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=tol, atol=tol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: mismatch at index {idx}: got {got[idx]!r}, expected "
            f"{want[idx]!r} ({int(bad.sum())} of {bad.size} differ)"
        )


def check(nodes: Sequence[Node], opset: int = 22) -> None:
    model, feeds = model_of(nodes, opset)
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = qidao.compile(model)(*feeds.values())
    for k, node in enumerate(nodes):
        assert_close(np.asarray(got[k]), want[k], f"node {k} {node}")


# ---- Conv ---------------------------------------------------------------------------


def test_conv_1d() -> None:
    x = (2, 4, 11)
    check(
        [
            conv(x, (6, 4, 3), bias=True, constant_weight=True),
            conv(x, (6, 4, 3), {"strides": [2], "pads": [1, 2], "dilations": [2]}),
            conv(x, (4, 2, 5), {"group": 2, "auto_pad": "SAME_UPPER"}, bias=True),
            conv(x, (3, 4, 4), {"strides": [3], "auto_pad": "SAME_LOWER"}),
            conv(x, (8, 1, 3), {"group": 4, "auto_pad": "VALID"}, bias=True),
        ]
    )


def test_conv_3d() -> None:
    x = (2, 4, 5, 6, 5)
    check(
        [
            conv(
                x, (3, 4, 3, 3, 3), {"pads": [1] * 6}, bias=True, constant_weight=True
            ),
            conv(
                x,
                (4, 2, 2, 3, 2),
                {
                    "group": 2,
                    "strides": [2, 1, 2],
                    "dilations": [2, 1, 1],
                    "pads": [1, 0, 2, 0, 1, 1],
                },
            ),
            conv(x, (4, 1, 3, 3, 3), {"group": 4, "auto_pad": "SAME_UPPER"}, True),
            conv(x, (2, 4, 1, 2, 2), {"strides": [1, 2, 2], "auto_pad": "SAME_LOWER"}),
        ]
    )


def test_whisper_like_conv1d_gelu_stack() -> None:
    """Whisper's encoder stem: Conv1d(k=3, pad 1) + GELU, then Conv1d(k=3, stride 2,
    pad 1) + GELU, on a [1, mel bins, frames] spectrogram."""
    mel, width, frames = 16, 24, 30
    w1, b1 = rand((width, mel, 3), 1), rand((width,), 2)
    w2, b2 = rand((width, width, 3), 3), rand((width,), 4)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1]),
        helper.make_node("Gelu", ["c1"], ["g1"]),
        helper.make_node("Conv", ["g1", "w2", "b2"], ["c2"], pads=[1, 1], strides=[2]),
        helper.make_node("Gelu", ["c2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "whisper_stem",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, mel, frames))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(v, n)
            for n, v in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 9
    x = rand((1, mel, frames), 5)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    (got,) = qidao.compile(model)(x)
    assert_close(np.asarray(got), want, "whisper stem", tol=1e-3)


def test_one_convolution_per_node() -> None:
    """Every rank is one ``tg.conv2d``: 1-D over a view, 3-D over gathered depth
    windows."""
    for x, w in (((1, 2, 9), (3, 2, 3)), ((1, 2, 4, 5, 5), (3, 2, 3, 3, 3))):
        model, _ = model_of([conv(x, w, {"pads": [1] * 2 * (len(x) - 2)})])
        text = str(import_onnx(model))
        assert text.count("tg.conv2d") == 1, text


@pytest.mark.parametrize("rank", [1, 3])
def test_conv_gradients(rank: int) -> None:
    """The input, weight and bias gradients of a strided, padded, grouped 1-D or
    3-D convolution (the vjp rules of the 2-D ops it is built from), against central
    differences."""
    x = (1, 4, 7) if rank == 1 else (1, 4, 4, 3, 3)
    w = (2, 2, 3) if rank == 1 else (2, 2, 2, 2, 2)
    attrs = {"group": 2, "strides": [2] * rank, "pads": [1] * 2 * rank}
    model, feeds = model_of([conv(x, w, attrs, bias=True)])
    assert qidao.gradcheck(model, list(feeds.values()), wrt=list(feeds))


# ---- pools --------------------------------------------------------------------------


def pool(op: str, x: tuple[int, ...], **attrs: Any) -> Node:
    return Node(op, [x], attrs)


def test_pools_1d() -> None:
    x = (2, 3, 13)
    check(
        [
            pool("MaxPool", x, kernel_shape=[3], strides=[2], pads=[1, 1]),
            pool("MaxPool", x, kernel_shape=[2], dilations=[3], ceil_mode=1),
            pool("AveragePool", x, kernel_shape=[4], strides=[3], pads=[2, 1]),
            pool(
                "AveragePool",
                x,
                kernel_shape=[3],
                pads=[1, 1],
                count_include_pad=1,
                auto_pad="NOTSET",
            ),
            pool(
                "AveragePool", x, kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER"
            ),
            pool("LpPool", x, kernel_shape=[3], strides=[2], p=2),
            pool("GlobalAveragePool", x),
            pool("GlobalMaxPool", x),
        ]
    )


def test_pools_3d() -> None:
    x = (1, 2, 5, 6, 7)
    check(
        [
            pool("MaxPool", x, kernel_shape=[2, 3, 2], strides=[2, 2, 1]),
            pool("MaxPool", x, kernel_shape=[3, 3, 3], pads=[1] * 6, ceil_mode=1),
            pool("AveragePool", x, kernel_shape=[2, 2, 3], pads=[1, 0, 1, 0, 1, 1]),
            pool(
                "AveragePool",
                x,
                kernel_shape=[3, 2, 2],
                strides=[2, 2, 2],
                pads=[1, 1, 1, 1, 1, 1],
                count_include_pad=1,
            ),
            pool("LpPool", x, kernel_shape=[2, 2, 2], strides=[2, 2, 2], p=1),
            pool("GlobalAveragePool", x),
            pool("GlobalMaxPool", x),
        ]
    )


def test_global_lp_pool_1d_and_3d() -> None:
    """ONNX Runtime has no ``GlobalLpPool`` at opset 22: NumPy is the oracle."""
    nodes = [
        pool("GlobalLpPool", (2, 3, 7), p=3),
        pool("GlobalLpPool", (1, 2, 3, 4, 5)),
    ]
    model, feeds = model_of(nodes)
    got = qidao.compile(model)(*feeds.values())
    for k, (x, p) in enumerate(zip(feeds.values(), (3, 2), strict=True)):
        axes = tuple(range(2, x.ndim))
        want = (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1 / p)
        assert_close(np.asarray(got[k]), want, f"GlobalLpPool of {x.shape}")


# ---- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (  # ONNX's shape inference refuses it before the converter does
            conv((4, 9), (2, 4, 3)),
            "Input tensor must have at least 3 dimensions",
        ),
        (
            conv((1, 1, 3, 3, 3, 3), (1, 1, 2, 2, 2, 2)),
            "expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions, got "
            "input shape [1, 1, 3, 3, 3, 3]",
        ),
        (
            conv((1, 2, 9), (3, 2, 3, 3)),
            "spatial dimensions in the weight tensor (2) does not match the number of "
            "spatial dimensions in the input tensor (1)",
        ),
        (
            conv((1, 4, 9), (3, 2, 3), {"group": 2}),
            "groups = 2 must divide the input channels (4) and the output channels (3)",
        ),
        (
            conv((1, 2, 3, 3, 3), (1, 2, 5, 1, 1)),
            "the kernel [5, 1, 1] (dilation [1, 1, 1]) does not fit the input shape "
            "[1, 2, 3, 3, 3]",
        ),
        (
            pool("MaxPool", (1, 2, 2, 2, 2, 2), kernel_shape=[2, 2, 2, 2]),
            "expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions",
        ),
    ],
)
def test_refusals_name_the_node_and_the_value(node: Node, message: str) -> None:
    model, _ = model_of([node])
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert node.op in str(info.value) and "n0" in str(info.value)
    assert message in str(info.value)
