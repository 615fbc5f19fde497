"""The ``layout`` pass and the NHWC kernels, against PyTorch.

Each graph is built with the builder in NCHW, compiled as it is and again after the
``layout`` pass; both runs must match ``torch.nn.functional``. The pass must also
have fired (or not) as its rules say, and running it twice changes nothing. The NHWC
kernels' loop order is checked in
``tests/filecheck/passes/kernels/convert_tg_to_affine_nhwc.mlir``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import qidao
from qidao.compiler.context import make_context, make_pass
from qidao.dialects import tg
from qidao.frontend.builder import Graph, Value

torch = pytest.importorskip("torch")
F = torch.nn.functional

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(np.float32)


def with_layout(module: ModuleOp) -> ModuleOp:
    out = module.clone()
    make_pass("layout").apply(make_context(), out)
    out.verify()
    return out


def nhwc_ops(module: ModuleOp) -> list[str]:
    return [
        op.name
        for op in module.walk()
        if getattr(op, "layout", None) is not None and op.name.startswith("tg.")
    ]


def transposes(module: ModuleOp) -> int:
    return sum(isinstance(op, tg.TransposeOp) for op in module.walk())


def check(
    build: Callable[..., Value],
    inputs: dict[str, np.ndarray[Any, Any]],
    reference: Callable[..., Any],
    fires: bool = True,
) -> ModuleOp:
    """Compile the graph before and after ``layout``; both must match PyTorch."""
    g = Graph("main")
    values = {name: g.input(name, a.shape) for name, a in inputs.items()}
    g.output(build(g, **values))
    before = g.module()
    after = with_layout(before)
    assert bool(nhwc_ops(after)) == fires, str(after)
    expected = reference(*(torch.from_numpy(a) for a in inputs.values())).numpy()
    for module in (before, after):
        (got,) = qidao.compile(module)(*inputs.values())
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    again = with_layout(after)
    assert str(again) == str(after), "a second run of layout changed the IR"
    return after


# --- convolutions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("c", "f", "size", "stride", "padding", "dilation"),
    [
        (3, 16, 9, 1, 1, 1),
        (8, 8, 7, 2, 0, 1),
        (16, 24, 8, 1, 2, 2),
        (5, 12, 6, 2, 1, 1),
    ],
)
def test_conv_relu_conv_chain(
    c: int, f: int, size: int, stride: int, padding: int, dilation: int
) -> None:
    w1, b1, w2 = rand(f, c, 3, 3), rand(f), rand(f, f, 1, 1)

    def build(g: Graph, x: Value) -> Value:
        y = g.conv2d(x, w1, b1, strides=stride, padding=padding, dilation=dilation)
        return g.conv2d(g.relu(y), w2)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        y = F.conv2d(x, t(w1), t(b1), stride=stride, padding=padding, dilation=dilation)
        return F.conv2d(F.relu(y), t(w2))

    after = check(build, {"x": rand(2, c, size, size)}, reference)
    assert nhwc_ops(after) == ["tg.conv2d", "tg.conv2d"]
    # one transpose in, one out; the constant weights were re-laid-out directly
    assert transposes(after) == 2


def test_weights_as_inputs_and_bias_broadcast() -> None:
    """Weights that are graph inputs get a transpose + contiguous copy; a ``[C, 1, 1]``
    bias added after the conv becomes a ``[C]`` view."""
    inputs = {"x": rand(1, 8, 6, 6), "w": rand(16, 8, 3, 3), "b": rand(16, 1, 1)}

    def build(g: Graph, x: Value, w: Value, b: Value) -> Value:
        return g.relu(g.conv2d(x, w, padding=1) + b)

    def reference(x: Any, w: Any, b: Any) -> Any:
        return F.relu(F.conv2d(x, w, padding=1) + b)

    after = check(build, inputs, reference)
    assert any(isinstance(op, tg.ContiguousOp) for op in after.walk())
    views = [op for op in after.walk() if isinstance(op, tg.ViewOp)]
    assert [tuple(op.result.type.get_shape()) for op in views] == [(16,)]


def test_residual_block_with_batch_norm_and_pools() -> None:
    c = 16
    w1, w2 = rand(c, c, 3, 3), rand(c, c, 3, 3)
    scale, shift, mean = rand(c), rand(c), rand(c)
    var = np.abs(rand(c)) + 0.5

    def build(g: Graph, x: Value) -> Value:
        y = g.max_pool2d(x, 2)
        z = g.batch_norm(g.conv2d(y, w1, padding=1), scale, shift, mean, var)
        z = g.relu(g.conv2d(g.relu(z), w2, padding=1) + y)
        return g.avg_pool2d(z, 3, 2, 1)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        y = F.max_pool2d(x, 2)
        z = F.batch_norm(
            F.conv2d(y, t(w1), padding=1), t(mean), t(var), t(scale), t(shift)
        )
        z = F.relu(F.conv2d(F.relu(z), t(w2), padding=1) + y)
        return F.avg_pool2d(z, 3, 2, 1, count_include_pad=False)

    after = check(build, {"x": rand(1, c, 12, 12)}, reference)
    assert sorted(nhwc_ops(after)) == [
        "tg.avg_pool2d",
        "tg.batch_norm",
        "tg.conv2d",
        "tg.conv2d",
        "tg.max_pool2d",
    ]
    assert transposes(after) == 2


def test_fire_module_and_channel_split_stay_in_the_chain() -> None:
    """SqueezeNet's concat of two expansions along the channels and ShuffleNet's
    split of them (a slice) join the chain: one transpose in, one out."""
    w, w1, w3, w2 = (
        rand(8, 4, 1, 1),
        rand(8, 8, 1, 1),
        rand(8, 8, 3, 3),
        rand(8, 8, 1, 1),
    )

    def build(g: Graph, x: Value) -> Value:
        s = g.relu(g.conv2d(x, w))
        c = g.concat([g.relu(g.conv2d(s, w1)), g.relu(g.conv2d(s, w3, padding=1))], 1)
        half = g.slice(c, [0, 8, 0, 0], [1, 16, 7, 7])
        return g.max_pool2d(g.conv2d(half, w2), 2)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        s = F.relu(F.conv2d(x, t(w)))
        a, b = F.relu(F.conv2d(s, t(w1))), F.relu(F.conv2d(s, t(w3), padding=1))
        c = torch.cat([a, b], 1)
        return F.max_pool2d(F.conv2d(c[:, 8:16], t(w2)), 2)

    after = check(build, {"x": rand(1, 4, 7, 7)}, reference)
    assert transposes(after) == 2, str(after)


def test_channel_shuffle_between_chains_runs_channels_last() -> None:
    """ShuffleNet's shuffle (reshape, transpose of [G, C/G], reshape) between two
    convolutions: one copy in NHWC, the chains joined (one transpose in, one out),
    and two users of the shuffle (the next convolution and a residual add)."""
    w, w2 = rand(12, 4, 1, 1), rand(12, 12, 1, 1)

    def build(g: Graph, x: Value) -> Value:
        a = g.relu(g.conv2d(x, w))
        shuffled = g.reshape(
            g.transpose(g.reshape(a, (1, 3, 4, 5, 5)), (0, 2, 1, 3, 4)), (1, 12, 5, 5)
        )
        return g.conv2d(shuffled, w2) + shuffled

    def reference(x: Any) -> Any:
        a = F.relu(F.conv2d(x, torch.from_numpy(w)))
        shuffled = a.view(1, 3, 4, 5, 5).transpose(1, 2).reshape(1, 12, 5, 5)
        return F.conv2d(shuffled, torch.from_numpy(w2)) + shuffled

    after = check(build, {"x": rand(1, 4, 5, 5)}, reference)
    assert transposes(after) == 3, str(after)  # in, the shuffle's own, out
    assert not [op for op in after.walk() if isinstance(op, tg.ReshapeOp)]


@pytest.mark.parametrize("channels", [2, 8, 32])
def test_depthwise_conv_in_nhwc(channels: int) -> None:
    """groups = C = F, from C = 2: NHWC, the channels innermost, whatever C."""
    w, b = rand(channels, 1, 3, 3), rand(channels)

    def build(g: Graph, x: Value) -> Value:
        return g.relu(g.conv2d(x, w, b, strides=2, padding=1, groups=channels))

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        return F.relu(F.conv2d(x, t(w), t(b), stride=2, padding=1, groups=channels))

    after = check(build, {"x": rand(2, channels, 7, 6)}, reference)
    assert nhwc_ops(after) == ["tg.conv2d"]


def test_grouped_conv_in_nhwc() -> None:
    """Two groups of 8 output channels: NHWC, with a group loop."""
    w = rand(16, 4, 3, 3)

    def build(g: Graph, x: Value) -> Value:
        return g.conv2d(x, w, padding=1, groups=2)

    def reference(x: Any) -> Any:
        return F.conv2d(x, torch.from_numpy(w), padding=1, groups=2)

    check(build, {"x": rand(1, 8, 5, 5)}, reference)


@pytest.mark.parametrize(("f", "groups"), [(2, 1), (8, 4)])
def test_must_not_fire_on_narrow_conv(f: int, groups: int) -> None:
    """F / groups < 4 (and not depthwise): the NHWC loop is too short to pay for
    the transposes."""
    w = rand(f, 8 // groups, 3, 3)

    def build(g: Graph, x: Value) -> Value:
        return g.relu(g.conv2d(x, w, groups=groups))

    def reference(x: Any) -> Any:
        return F.relu(F.conv2d(x, torch.from_numpy(w), groups=groups))

    check(build, {"x": rand(1, 8, 6, 6)}, reference, fires=False)


def test_must_not_fire_on_pools_alone() -> None:
    def build(g: Graph, x: Value) -> Value:
        return g.relu(g.max_pool2d(x, 2))

    def reference(x: Any) -> Any:
        return F.relu(F.max_pool2d(x, 2))

    check(build, {"x": rand(1, 16, 8, 8)}, reference, fires=False)


def test_unknown_op_splits_the_chain() -> None:
    """A softmax between two convs: two chains, each with its own boundaries."""
    w1, w2 = rand(8, 8, 3, 3), rand(8, 8, 1, 1)

    def build(g: Graph, x: Value) -> Value:
        y = g.softmax(g.conv2d(x, w1, padding=1), axis=1)
        return g.conv2d(y, w2)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        return F.conv2d(F.softmax(F.conv2d(x, t(w1), padding=1), dim=1), t(w2))

    after = check(build, {"x": rand(1, 8, 5, 5)}, reference)
    assert transposes(after) == 4


def test_input_transposed_from_nhwc_cancels() -> None:
    """A model that transposes its NHWC input to NCHW: the two transposes cancel,
    and the conv reads the input as it is."""
    w = rand(8, 3, 3, 3)

    def build(g: Graph, x: Value) -> Value:
        return g.conv2d(g.transpose(x, (0, 3, 1, 2)), w, padding=1)

    def reference(x: Any) -> Any:
        return F.conv2d(x.permute(0, 3, 1, 2), torch.from_numpy(w), padding=1)

    after = check(build, {"x": rand(1, 6, 6, 3)}, reference)
    assert transposes(after) == 1  # only the one back to NCHW


def test_permute_back_to_channels_last_reads_the_chain() -> None:
    """ConvNeXt's stem: conv, then the model's own permute to NHWC and a layer norm
    over the channels. The norm reads the chain's NHWC result: no copy back to
    NCHW, no transpose left but the input's."""
    w, b = rand(16, 3, 2, 2), rand(16)

    def build(g: Graph, x: Value) -> Value:
        y = g.transpose(g.conv2d(x, w, b, strides=2), (0, 2, 3, 1))
        mean = g.reduce_mean(y, axes=[3], keepdims=True)
        return g.relu(y - mean)

    def reference(x: Any) -> Any:
        y = F.conv2d(x, torch.from_numpy(w), torch.from_numpy(b), 2).permute(0, 2, 3, 1)
        return torch.relu(y - y.mean(dim=3, keepdim=True))

    after = check(build, {"x": rand(1, 3, 8, 8)}, reference)
    assert transposes(after) == 1  # the input's, to NHWC
    assert not any(isinstance(op, tg.ContiguousOp) for op in after.walk()), after


def test_nhwc_source_anchors_a_chain_and_the_next_permute_reads_it() -> None:
    """An NCHW view of channels-last data (an int8 convolution's output) is an NHWC
    source: the residual add that reads it and the block's NCHW input runs NHWC,
    and the next convolution's permute to NHWC, its stride-2 tap sliced off it,
    reads the chain's row-major result (the slice rebuilt on it): the only
    transpose left is the NCHW input's, and no copy."""

    def build(g: Graph, x: Value, skip: Value) -> Value:
        s = g.relu(g.transpose(x, (0, 3, 1, 2)) + skip)
        tap = g.slice(g.transpose(s, (0, 2, 3, 1)), (0, 0, 0, 0), None, (1, 2, 2, 1))
        return g.exp(tap)

    def reference(x: Any, skip: Any) -> Any:
        s = torch.relu(x.permute(0, 3, 1, 2) + skip)
        return torch.exp(s.permute(0, 2, 3, 1)[:, ::2, ::2, :])

    g = Graph("main")
    inputs = {"x": rand(1, 5, 5, 8), "skip": rand(1, 8, 5, 5)}
    values = {name: g.input(name, a.shape) for name, a in inputs.items()}
    g.output(build(g, **values))
    before = g.module()
    after = with_layout(before)
    assert transposes(before) == 2 and transposes(after) == 1, str(after)
    assert not any(isinstance(op, tg.ContiguousOp) for op in after.walk()), after
    expected = reference(*(torch.from_numpy(a) for a in inputs.values())).numpy()
    for module in (before, after):
        (got,) = qidao.compile(module)(*inputs.values())
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert str(with_layout(after)) == str(after), "a second run changed the IR"


def test_patches_flattened_to_tokens_read_the_chain() -> None:
    """Swin's patch embedding: conv, flatten(2), transpose(1, 2), then a norm over
    the channels: the tokens are a view of the chain's NHWC result."""
    w, b = rand(16, 3, 2, 2), rand(16)

    def build(g: Graph, x: Value) -> Value:
        y = g.conv2d(x, w, b, strides=2)
        tokens = g.transpose(g.reshape(y, (1, 16, 16)), (0, 2, 1))
        return g.relu(tokens - g.reduce_mean(tokens, axes=[2], keepdims=True))

    def reference(x: Any) -> Any:
        y = F.conv2d(x, torch.from_numpy(w), torch.from_numpy(b), 2)
        tokens = y.flatten(2).transpose(1, 2)
        return torch.relu(tokens - tokens.mean(dim=2, keepdim=True))

    after = check(build, {"x": rand(1, 3, 8, 8)}, reference)
    assert transposes(after) == 1  # the input's, to NHWC
    assert not any(isinstance(op, tg.ContiguousOp) for op in after.walk()), after


# --- pooled [1, C, 1, 1] feature maps (issue 11) -------------------------------------
# After a global average pool at batch 1 a feature map has the shape of a per-channel
# bias. The pass used to view it to [C] as if it were one, and built a conv2d (NHWC)
# with a rank-1 input: "expects a rank-4 NHWC input and HWIO weight, got [16] ...".


def test_pooled_classifier_conv() -> None:
    """Global average pool, then a 1x1 conv as the classifier (DenseNet's head)."""
    w1, w2, b2 = rand(16, 8, 3, 3), rand(10, 16, 1, 1), rand(10)

    def build(g: Graph, x: Value) -> Value:
        pooled = g.reduce_mean(g.relu(g.conv2d(x, w1)), (2, 3), keepdims=True)
        return g.conv2d(pooled, w2, b2)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        pooled = F.relu(F.conv2d(x, t(w1))).mean((2, 3), keepdim=True)
        return F.conv2d(pooled, t(w2), t(b2))

    after = check(build, {"x": rand(1, 8, 8, 8)}, reference)
    assert nhwc_ops(after) == ["tg.conv2d", "tg.conv2d"]
    assert not any(isinstance(op, tg.ViewOp) for op in after.walk())


def test_squeeze_excitation_block() -> None:
    """pool -> 1x1 conv -> relu -> 1x1 conv -> sigmoid -> mul with the feature map:
    one chain, the global pool inside it (a reduction over the NHWC axes [1, 2])."""
    w, w1, b1 = rand(16, 8, 3, 3), rand(4, 16, 1, 1), rand(4)
    w2, b2 = rand(16, 4, 1, 1), rand(16)

    def build(g: Graph, x: Value) -> Value:
        f = g.relu(g.conv2d(x, w, padding=1))
        s = g.relu(g.conv2d(g.reduce_mean(f, (2, 3), keepdims=True), w1, b1))
        return f * g.sigmoid(g.conv2d(s, w2, b2))

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        f = F.relu(F.conv2d(x, t(w), padding=1))
        s = F.relu(F.conv2d(f.mean((2, 3), keepdim=True), t(w1), t(b1)))
        return f * torch.sigmoid(F.conv2d(s, t(w2), t(b2)))

    after = check(build, {"x": rand(1, 8, 6, 6)}, reference)
    assert nhwc_ops(after) == ["tg.conv2d", "tg.conv2d", "tg.conv2d"]
    (pool,) = [op for op in after.walk() if isinstance(op, tg.ReduceMeanOp)]
    assert pool.reduced_axes() == (1, 2)
    assert transposes(after) == 2  # in: x; out: the result


@pytest.mark.parametrize(
    ("low", "high", "value"),
    [((0, 0, 0, 0), (0, 0, 1, 1), 0.0), ((0, 2, 1, 0), (0, 1, 0, 2), -1.5)],
)
def test_pad_in_the_chain(
    low: tuple[int, ...], high: tuple[int, ...], value: float
) -> None:
    """conv -> relu -> pad -> depthwise conv: one chain, the pad in NHWC (any value,
    channels too; then the second conv is a dense one over the padded channels)."""
    c = 16 + low[1] + high[1]
    w1, w2 = rand(16, 8, 1, 1), rand(c, 1, 3, 3)

    def build(g: Graph, x: Value) -> Value:
        y = g.pad(g.relu(g.conv2d(x, w1)), low, high, value)
        return g.conv2d(y, w2, strides=2, groups=c)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        pads = (low[3], high[3], low[2], high[2], low[1], high[1])
        y = F.pad(F.relu(F.conv2d(x, t(w1))), pads, value=value)
        return F.conv2d(y, t(w2), stride=2, groups=c)

    after = check(build, {"x": rand(1, 8, 7, 7)}, reference)
    assert nhwc_ops(after) == ["tg.conv2d", "tg.conv2d"]
    assert transposes(after) == 2  # in: x; out: the result


def test_pooled_operands_of_an_elementwise_op() -> None:
    """An add of two pooled tensors feeding a conv, and a pooled tensor that
    broadcasts against a conv's output: the global pools join the chain, so their
    NHWC [1, 1, 1, C] results feed the add and the mul directly (no views)."""
    w = rand(8, 8, 1, 1)

    def build(g: Graph, x: Value) -> Value:
        a = g.reduce_mean(x, (2, 3), keepdims=True)
        b = g.reduce_max(x, (2, 3), keepdims=True)
        return g.conv2d(x, w) * a + g.conv2d(a + b, w)

    def reference(x: Any) -> Any:
        t = torch.from_numpy
        a, b = x.mean((2, 3), keepdim=True), x.amax((2, 3), keepdim=True)
        return F.conv2d(x, t(w)) * a + F.conv2d(a + b, t(w))

    after = check(build, {"x": rand(1, 8, 5, 5)}, reference)
    assert nhwc_ops(after) == ["tg.conv2d", "tg.conv2d"]
    assert not any(isinstance(op, tg.ViewOp) for op in after.walk())
    pools = [op for op in after.walk() if isinstance(op, tg.ReduceOp)]
    assert [op.reduced_axes() for op in pools] == [(1, 2), (1, 2)]
