"""ONNX ``ConvTranspose`` (``qidao/frontend/onnx/nn.py``) in 1-D, 2-D and 3-D: strides,
pads, dilations, groups, ``output_padding``, ``output_shape`` and ``auto_pad``, with
and without bias, constant and runtime weights, compiled with ``qidao.compile`` and
run on the CPU.

The oracle is ONNX Runtime on the same model and random inputs (many nodes in one
model: compiling dominates these tests); for float64, which ONNX Runtime lacks,
PyTorch's ``conv_transpose2d``. Refusals are checked for their message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]


@dataclass
class Case:
    """One ``ConvTranspose`` node: input and weight shapes, its attributes, whether
    it has a bias, and whether the weight is an initializer (else a graph input)."""

    x: tuple[int, ...]
    w: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    bias: bool = False
    constant_weight: bool = False


def rand(shape: Sequence[int], seed: int) -> Array:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


def conv_transpose_model(cases: Sequence[Case]) -> tuple[Any, dict[str, Array]]:
    """A model of one node ``ct<k>`` per case (from ``x<k>``, ``w<k>``, ``b<k>`` to
    ``y<k>``) and random values of its graph inputs."""
    nodes, inputs, initializers = [], [], []
    feeds: dict[str, Array] = {}
    for k, case in enumerate(cases):
        names = [f"x{k}", f"w{k}"]
        values = {f"x{k}": rand(case.x, 3 * k), f"w{k}": rand(case.w, 3 * k + 1)}
        if case.bias:
            channels = case.w[1] * int(case.attrs.get("group", 1))
            names.append(f"b{k}")
            values[f"b{k}"] = rand((channels,), 3 * k + 2)
        for name, value in values.items():
            if name == f"w{k}" and case.constant_weight:
                initializers.append(numpy_helper.from_array(value, name))
                continue
            inputs.append(
                helper.make_tensor_value_info(name, TensorProto.FLOAT, value.shape)
            )
            feeds[name] = value
        nodes.append(
            helper.make_node(
                "ConvTranspose", names, [f"y{k}"], name=f"ct{k}", **case.attrs
            )
        )
    outputs = [
        helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None)
        for k in range(len(cases))
    ]
    graph = helper.make_graph(nodes, "ct", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 9
    return model, feeds


def assert_close(
    got: Array, want: Array, what: str, rtol: float = 1e-4, atol: float = 1e-4
) -> None:
    """Equal shapes and values; a mismatch names the case, the first index and both
    values."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: mismatch at index {idx}: got {got[idx]!r}, expected "
            f"{want[idx]!r} ({int(bad.sum())} of {bad.size} differ)"
        )


def check(cases: Sequence[Case]) -> None:
    model, feeds = conv_transpose_model(cases)
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = qidao.compile(model)(*feeds.values())
    for k, case in enumerate(cases):
        assert_close(np.asarray(got[k]), want[k], f"case {k} {case}")


# ---- against ONNX Runtime -------------------------------------------------------------


def test_strides_pads_dilations_and_output_padding() -> None:
    x, w = (2, 3, 4, 5), (3, 2, 3, 3)
    check(
        [
            Case(x, w, bias=True),
            Case(x, w, {"strides": [2, 2], "pads": [1, 1, 1, 1]}, bias=True),
            Case(
                x,
                w,
                {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
            ),
            Case(
                x,
                w,
                {"strides": [3, 2], "pads": [1, 2, 0, 1], "dilations": [2, 1]},
                bias=True,
            ),
            # pads beyond the kernel's reach crop the spread input
            Case(x, w, {"strides": [2, 2], "pads": [3, 3, 3, 2]}),
            # DCGAN's upsampling layer, with its weight an initializer
            Case(
                (1, 4, 3, 3),
                (4, 2, 4, 4),
                {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                bias=True,
                constant_weight=True,
            ),
        ]
    )


def test_groups() -> None:
    check(
        [
            Case((1, 6, 3, 4), (6, 2, 3, 3), {"group": 3, "strides": [2, 2]}, True),
            Case(
                (2, 4, 3, 3),
                (4, 3, 3, 2),
                {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 0]},
                constant_weight=True,
            ),
        ]
    )


def test_output_shape_and_auto_pad() -> None:
    """``output_shape`` splits the padding it implies with the larger half first
    (at the end for ``SAME_UPPER``), and one larger than the full output adds zeros
    and the bias at the end; ``SAME_*`` asks for ``input size * stride``."""
    x, w = (1, 2, 3, 4), (2, 3, 3, 3)
    check(
        [
            Case(x, w, {"strides": [2, 2], "output_shape": [6, 8]}),
            Case(x, w, {"strides": [2, 2], "output_shape": [4, 6]}, bias=True),
            Case(
                x,
                w,
                {"strides": [2, 2], "output_shape": [6, 8], "auto_pad": "SAME_UPPER"},
            ),
            Case(x, w, {"strides": [3, 2], "output_shape": [10, 10]}, bias=True),
            Case(x, w, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
            Case(x, w, {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
            Case(x, w, {"strides": [2, 2], "auto_pad": "VALID"}),
        ]
    )


def test_one_dimensional() -> None:
    check(
        [
            Case(
                (2, 3, 7),
                (3, 4, 3),
                {"strides": [2], "pads": [1, 0], "output_padding": [1]},
                bias=True,
            ),
            Case((1, 2, 5), (2, 3, 3), {"strides": [3], "dilations": [2]}, True, True),
        ]
    )


def test_three_dimensional() -> None:
    """A 3-D ConvTranspose: the spread input, then the 3-D convolution of
    ``qidao/frontend/spatial.py``."""
    check(
        [
            Case((1, 2, 3, 4, 3), (2, 3, 2, 3, 2), bias=True),
            Case(
                (2, 2, 3, 3, 4),
                (2, 2, 3, 3, 3),
                {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]},
                bias=True,
                constant_weight=True,
            ),
            Case(
                (1, 4, 2, 3, 3),
                (4, 1, 2, 2, 3),
                {
                    "group": 2,
                    "strides": [3, 2, 1],
                    "dilations": [1, 2, 1],
                    "output_padding": [1, 1, 0],
                },
            ),
        ]
    )


def test_float64_against_torch() -> None:
    """ONNX Runtime has no float64 ConvTranspose; PyTorch is the oracle."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 3, 4))
    w = rng.standard_normal((4, 3, 3, 3))
    b = rng.standard_normal(6)
    attrs: dict[str, Any] = {
        "strides": [2, 2],
        "pads": [1, 0, 1, 0],
        "output_padding": [1, 0],
        "group": 2,
    }
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "ct",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    (got,) = qidao.compile(model)(x)
    want = F.conv_transpose2d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        torch.from_numpy(b),
        stride=2,
        padding=(1, 0),
        output_padding=(1, 0),
        groups=2,
    )
    assert np.asarray(got).dtype == np.float64
    assert_close(np.asarray(got), want.numpy(), "float64", rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rank", [2, 3])
def test_float16_computes_in_float32(rank: int) -> None:
    """A strided float16 ConvTranspose (its spread is a ``tg.pad``, which takes f32
    and f64) computes in float32 and rounds once: PyTorch's float32 result rounded
    to float16."""
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((1, 2, *[3] * rank)).astype(np.float16)
    w = rng.standard_normal((2, 3, *[2] * rank)).astype(np.float16)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2] * rank)
    graph = helper.make_graph(
        [node],
        "ct",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    (got,) = qidao.compile(model)(x)
    transposed = F.conv_transpose2d if rank == 2 else F.conv_transpose3d
    want = transposed(
        torch.from_numpy(x).float(), torch.from_numpy(w).float(), stride=2
    )
    assert np.asarray(got).dtype == np.float16
    assert_close(
        np.asarray(got).astype(np.float32),
        want.numpy().astype(np.float16).astype(np.float32),
        "float16",
        rtol=1e-3,
        atol=1e-3,
    )


# ---- what the converter builds ----------------------------------------------------------


def test_one_convolution_with_the_weight_flipped_at_import() -> None:
    """A constant weight becomes the convolution's constant: no op transforms it;
    the input is spread by one pad between two reshapes."""
    model, _ = conv_transpose_model(
        [Case((1, 2, 3, 3), (2, 3, 3, 3), {"strides": [2, 2]}, constant_weight=True)]
    )
    text = str(import_onnx(model))
    assert text.count("tg.conv2d") == 1 and text.count("tg.pad") == 1
    assert "tg.gather" not in text and "tg.transpose" not in text
    runtime, _ = conv_transpose_model([Case((1, 2, 3, 3), (2, 3, 3, 3))])
    text = str(import_onnx(runtime))
    assert text.count("tg.conv2d") == 1 and "tg.transpose" in text


# ---- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "w", "attrs", "message"),
    [
        (
            (1, 1, 3, 3, 3, 3),
            (1, 1, 2, 2, 2, 2),
            {},
            "expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions, got "
            "input shape [1, 1, 3, 3, 3, 3]",
        ),
        (
            (1, 1, 3, 3),
            (1, 1, 3, 3),
            {"strides": [2, 2], "output_shape": [9, 9]},
            "output_shape [9, 9] is larger than ConvTranspose makes from an input of "
            "size 3 (at most 8",
        ),
        (
            (1, 1, 3, 3),
            (1, 1, 3, 3),
            {"strides": [2, 2], "auto_pad": "SAME_UPPER", "output_padding": [1, 1]},
            "auto_pad=SAME_UPPER with output_padding [1, 1]",
        ),
        (
            (1, 1, 3, 3),
            (1, 1, 3, 3),
            {"pads": [3, 3, 3, 3]},
            "the padding [3, 3, 3, 3] leaves an output of spatial size [-1, -1]",
        ),
        (
            (1, 1, 3, 3),
            (1, 1, 3, 3),
            {"kernel_shape": [2, 2]},
            "kernel_shape [2, 2] does not match the weight shape [1, 1, 3, 3]",
        ),
    ],
)
def test_refusals_name_the_node_and_the_value(
    x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, Any], message: str
) -> None:
    model, _ = conv_transpose_model([Case(x, w, attrs)])
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert "ConvTranspose node 'ct0'" in str(info.value)
    assert message in str(info.value)
