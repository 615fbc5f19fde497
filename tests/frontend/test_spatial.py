"""``conv_nd`` and ``pool_nd`` (``qidao/frontend/spatial.py``), the N-D convolutions
and pools both frontends build, on builder graphs compiled with ``qidao.compile``:
1-D and 3-D against PyTorch (float64 and float16 too), what
they build (one ``tg.conv2d``; two 2-D pools for a 3-D pool) and their errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qidao
from qidao.frontend.builder import Graph
from qidao.frontend.errors import GraphError
from qidao.frontend.spatial import conv_nd, pool_nd

Array = np.ndarray[Any, Any]


def rand(*shape: int, seed: int = 0, dtype: Any = np.float32) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_conv_nd_against_torch_in_float64() -> None:
    """1-D and 3-D, strided, dilated, grouped, with asymmetric padding (PyTorch's
    pads are symmetric: ``F.pad`` first)."""
    x1, w1, b1 = rand(2, 4, 9, seed=1), rand(6, 2, 3, seed=2), rand(6, seed=3)
    x3, w3 = rand(1, 2, 5, 4, 6, seed=4), rand(4, 1, 3, 2, 3, seed=5)
    x1, w1, b1, x3, w3 = (a.astype(np.float64) for a in (x1, w1, b1, x3, w3))
    g = Graph("main")
    y1 = conv_nd(
        g,
        g.input("x1", x1.shape, "float64"),
        w1,
        g.constant(b1, dtype="float64"),
        strides=[2],
        padding=[1, 2],
        dilation=[2],
        groups=2,
    )
    y3 = conv_nd(
        g,
        g.input("x3", x3.shape, "float64"),
        w3,
        strides=[2, 1, 2],
        padding=[0, 1, 1, 2, 0, 1],
        dilation=[1, 2, 1],
        groups=2,
    )
    g.output(y1, y3)
    got1, got3 = qidao.compile(g)(x1, x3)
    t = torch.from_numpy
    want1 = F.conv1d(F.pad(t(x1), (1, 2)), t(w1), t(b1), 2, 0, 2, 2)
    padded = F.pad(t(x3), (1, 1, 1, 0, 0, 2))  # last axis first
    want3 = F.conv3d(padded, t(w3), None, (2, 1, 2), 0, (1, 2, 1), 2)
    assert np.asarray(got1).dtype == np.float64
    np.testing.assert_allclose(np.asarray(got1), want1.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got3), want3.numpy(), rtol=1e-12)


def test_conv_nd_float16_computes_in_float32() -> None:
    """A float16 3-D convolution (its depth padding is a ``tg.pad``, which takes
    f32 and f64) computes in float32 and rounds once: PyTorch's float32 result
    rounded to float16."""
    x, w = rand(1, 2, 4, 5, 5, seed=7), rand(3, 2, 3, 3, 3, seed=8)
    x16, w16 = x.astype(np.float16), w.astype(np.float16)
    g = Graph("main")
    y = conv_nd(
        g,
        g.input("x", x.shape, "float16"),
        w16,
        strides=[1, 2, 1],
        padding=[1] * 6,
        dilation=[1] * 3,
    )
    g.output(y)
    (got,) = qidao.compile(g)(x16)
    t = torch.from_numpy
    want = F.conv3d(
        t(x16.astype(np.float32)), t(w16.astype(np.float32)), None, (1, 2, 1), 1
    )
    assert np.asarray(got).dtype == np.float16
    np.testing.assert_allclose(
        np.asarray(got).astype(np.float32), want.numpy().astype(np.float16), 1e-3, 1e-3
    )


def test_pool_nd_3d_against_torch() -> None:
    """Separable 3-D max and mean (padding counted in the divisor, or not)."""
    x = rand(2, 3, 5, 6, 7, seed=6)
    window = [(3, 2, 1, 1, 1), (2, 2, 1, 1, 1), (3, 1, 1, 1, 1)]
    g = Graph("main")
    v = g.input("x", x.shape)
    g.output(
        pool_nd(g, v, "max", window, False),
        pool_nd(g, v, "avg", window, True),
        pool_nd(g, v, "avg", window, False),
    )
    got = qidao.compile(g)(x)
    t = torch.from_numpy(x)
    args = ((3, 2, 3), (2, 2, 1), 1)
    wants = [
        F.max_pool3d(t, *args),
        F.avg_pool3d(t, *args, count_include_pad=True),
        F.avg_pool3d(t, *args, count_include_pad=False),
    ]
    for k, want in enumerate(wants):
        np.testing.assert_allclose(np.asarray(got[k]), want.numpy(), 1e-5, 1e-6)


def test_what_they_build() -> None:
    """A 3-D convolution is one ``tg.conv2d`` after one ``tg.concat`` of ``KD``
    depth slices; a 1-D one is a ``tg.conv2d`` between reshapes; a 3-D pool is two
    2-D pools."""
    g = Graph("main")
    x = g.input("x", (1, 2, 4, 5, 5))
    y = conv_nd(
        g, x, rand(3, 2, 3, 3, 3), strides=[1] * 3, padding=[1] * 6, dilation=[1] * 3
    )
    l1 = conv_nd(
        g,
        g.input("l", (1, 2, 8)),
        rand(3, 2, 3),
        strides=[1],
        padding=[0, 0],
        dilation=[1],
    )
    g.output(y, l1, pool_nd(g, x, "max", [(2, 2, 1, 0, 0)] * 3, False))
    text = str(g.module())
    assert text.count("tg.conv2d") == 2
    assert text.count("tg.concat") == 1
    assert text.count("tg.max_pool2d") == 2


@pytest.mark.parametrize("shape", [(4, 9), (1, 1, 3, 3, 3, 3)])
def test_conv_nd_refuses_other_ranks(shape: tuple[int, ...]) -> None:
    g = Graph("main")
    x = g.input("x", shape)
    weight = rand(2, *shape[1:]) if len(shape) > 2 else rand(2, 4, 3)
    with pytest.raises(GraphError) as info:
        conv_nd(g, x, weight, strides=[1], padding=[0, 0], dilation=[1])
    assert str(info.value) == (
        "conv expects an [N, C, ...] input with 1, 2 or 3 spatial dimensions, got "
        f"input shape {list(shape)}"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"strides": [1, 1], "padding": [0, 0], "dilation": [1]},
            "conv: strides must have 1 values for a 1-D convolution, got [1, 1]",
        ),
        (
            {"strides": [0], "padding": [0, 0], "dilation": [1]},
            "conv: strides [0] and dilation [1] must be >= 1 and padding [0, 0] >= 0",
        ),
        (
            {"strides": [1], "padding": [0, 0], "dilation": [1], "groups": 3},
            "conv: groups = 3 must divide the input channels (4) and the output "
            "channels (2)",
        ),
        (
            {"strides": [1], "padding": [0, 0], "dilation": [5]},
            "conv: the kernel [3] (dilation [5]) does not fit the input shape "
            "[1, 4, 9] with padding [0, 0]",
        ),
    ],
)
def test_conv_nd_errors_name_the_value(kwargs: dict[str, Any], message: str) -> None:
    g = Graph("main")
    x = g.input("x", (1, 4, 9))
    with pytest.raises(GraphError) as info:
        conv_nd(g, x, rand(2, 4, 3), **kwargs)
    assert str(info.value) == message


def test_pool_nd_refuses_other_ranks() -> None:
    g = Graph("main")
    x = g.input("x", (1, 1, 2, 2, 2, 2))
    with pytest.raises(GraphError, match="1, 2 or 3 spatial dimensions"):
        pool_nd(g, x, "max", [(2, 2, 1, 0, 0)] * 4, False)
