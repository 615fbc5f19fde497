"""Depthwise convolutions through ``qidao.compile``: the NHWC kernel
(``lowering/conv_depthwise.py``), its default schedule
(``qidao/compiler/targets/cpu/defaults/depthwise.py``) and the passes that feed it
(``layout``, ``simplify``'s pad fold), against PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.compiled import CompiledModel
from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.depthwise import (
    is_depthwise_kernel,
    schedule_depthwise,
)
from qidao.frontend.builder import Graph

torch = pytest.importorskip("torch", reason="the conv oracle is torch")

Array = np.ndarray[Any, Any]


def depthwise(
    x: Array,
    w: Array,
    b: Array | None,
    stride: int,
    padding: tuple[int, int, int, int],
    dilation: int,
) -> Array:
    """PyTorch's grouped conv2d, ``padding`` as ``[top, left, bottom, right]``."""
    top, left, bottom, right = padding
    padded = torch.nn.functional.pad(torch.from_numpy(x), (left, right, top, bottom))
    y = torch.nn.functional.conv2d(
        padded,
        torch.from_numpy(w),
        None if b is None else torch.from_numpy(b),
        stride,
        0,
        dilation,
        x.shape[1],
    )
    return np.asarray(y.numpy())


def run(
    shape: tuple[int, int, int, int],
    multiplier: int = 1,
    stride: int = 1,
    padding: tuple[int, int, int, int] = (1, 1, 1, 1),
    dilation: int = 1,
    bias: bool = True,
    relu: bool = False,
    threads: int = 1,
    swish: bool = False,
) -> CompiledModel:
    """Compile a depthwise conv (+ relu or swish), compare it with PyTorch, return
    it."""
    c = shape[1]
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((c * multiplier, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(c * multiplier).astype(np.float32) if bias else None
    g = Graph()
    x = g.input("x", shape)
    y = g.conv2d(
        x, weight, b, strides=stride, padding=padding, dilation=dilation, groups=c
    )
    if swish:
        y = g.mul(y, g.sigmoid(y))
    g.output(g.relu(y) if relu else y)
    compiled = qidao.compile(g, threads=threads)
    data = rng.standard_normal(shape).astype(np.float32)
    want = depthwise(data, weight, b, stride, padding, dilation)
    if relu:
        want = np.maximum(want, 0)
    if swish:
        want = want / (1 + np.exp(-want.astype(np.float64)))
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-5, atol=1e-5)
    return compiled


def conv_report(compiled: CompiledModel) -> str:
    (report,) = [
        done
        for kernel, done in compiled.stats["default_schedule"].items()
        if "fused" in kernel or "conv2d" in kernel
    ]
    return str(report)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("shape", "stride", "padding", "dilation"),
    [
        ((1, 32, 9, 11), 1, (1, 1, 1, 1), 1),
        ((1, 96, 4, 5), 1, (1, 1, 1, 1), 1),  # six channel blocks
        ((1, 32, 12, 12), 2, (0, 0, 1, 1), 1),  # TF "same" padding of an export
        ((2, 16, 7, 8), 2, (1, 1, 1, 1), 1),
        ((1, 48, 10, 10), 1, (2, 2, 2, 2), 2),
        ((2, 64, 5, 5), 1, (0, 0, 0, 0), 1),
    ],
)
def test_vectorized_numerics(
    shape: tuple[int, int, int, int],
    stride: int,
    padding: tuple[int, int, int, int],
    dilation: int,
    threads: int,
) -> None:
    """C a multiple of 16: NHWC, channels on vectors, whatever the geometry."""
    compiled = run(shape, stride=stride, padding=padding, dilation=dilation)
    assert conv_report(compiled).startswith("conv2d: depthwise, channels on <16")
    run(shape, stride=stride, padding=padding, relu=True, bias=False, threads=threads)


def test_swish_epilogue_left_to_llvm() -> None:
    """x * sigmoid(x) after the conv (EfficientNet): the epilogue's exp stays on
    scalars, where ``expand-math`` writes it out (on vectors it would be a libm call
    per lane), and the report says so."""
    compiled = run((1, 32, 6, 7), swish=True)
    report = conv_report(compiled)
    assert "epilogue left to LLVM's vectorizer: math.exp" in report
    assert "math.exp %" in compiled.ir("schedule")
    assert not [
        line
        for line in compiled.ir("schedule").splitlines()
        if "math.exp" in line and "vector<" in line
    ]


def test_parallel_channel_blocks() -> None:
    """With threads and enough output, the channel blocks run in parallel."""
    compiled = run((1, 32, 64, 64), threads=2)
    assert "loop cb (2 iterations) on 2 threads" in conv_report(compiled)


@pytest.mark.parametrize("channels", [2, 8, 24])
def test_channels_not_a_multiple_of_16(channels: int) -> None:
    """NHWC from C = 2; when C is not a multiple of 16 the loops stay as lowered
    (LLVM vectorizes them), and the report says why."""
    compiled = run((2, channels, 6, 7), stride=2)
    assert 'layout = "NHWC"' in compiled.ir("tg")
    reason = f"{channels} channels are not a multiple of 16"
    assert reason in conv_report(compiled)


def test_ragged_channels_still_split_rows() -> None:
    """ShuffleNet V2's 116-channel depthwise convolutions: not on vectors, but with
    enough work their rows run on the threads."""
    compiled = run((1, 116, 28, 28), threads=2)
    report = conv_report(compiled)
    assert "116 channels are not a multiple of 16" in report
    assert report.endswith("on 2 threads"), report


@pytest.mark.parametrize("multiplier", [2, 4])
def test_channel_multiplier(multiplier: int) -> None:
    """F = C * multiplier: not this kernel (NCHW for 2 outputs per group, the
    grouped NHWC nest for 4), still right."""
    run((2, 8, 6, 6), multiplier=multiplier, stride=2, relu=True)


def test_explicit_zero_pad_folds() -> None:
    """An ONNX-style ``tg.pad`` before the conv folds into its padding (``simplify``)
    and the numbers stay the same."""
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((32, 1, 3, 3)).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, 32, 8, 8))
    g.output(
        g.conv2d(g.pad(x, [0, 0, 0, 0], [0, 0, 1, 1]), weight, strides=2, groups=32)
    )
    compiled = qidao.compile(g, threads=1)
    assert "tg.pad" not in compiled.ir("tg")
    data = rng.standard_normal((1, 32, 8, 8)).astype(np.float32)
    want = depthwise(data, weight, None, 2, (0, 0, 1, 1), 1)
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-5, atol=1e-5)


def test_scheduler_declines_other_kernels() -> None:
    """A dense conv kernel is not the depthwise nest: NotApplicable, unchanged."""
    g = Graph()
    x = g.input("x", (1, 16, 12, 12))
    weight = np.ones((16, 16, 3, 3), np.float32)
    g.output(g.conv2d(x, weight, strides=2, padding=1))  # direct, not Winograd
    s = Schedule.for_model(g)
    kernel = next(k for k, ops in s.kernels().items() if "conv2d" in ops)
    assert not is_depthwise_kernel(s, kernel)
    before = str(s.module)
    with pytest.raises(NotApplicable, match="not a depthwise conv nest"):
        schedule_depthwise(s, kernel, 1)
    assert str(s.module) == before
