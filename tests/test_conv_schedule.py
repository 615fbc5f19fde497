"""The default conv schedule (``qidao/compiler/defaults/conv.py``).

``schedule_conv`` either register-tiles an NHWC convolution kernel or returns False
and leaves it exactly as it was. The tile needs the main nest ``n, oh, ow, kh, kw,
c, f`` perfectly nested with the init nest outside it; while the NHWC lowering keeps
its init loop ``f_init`` inside ``ow``, the tiled cases skip, saying so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.defaults.conv import schedule_conv
from qidao.compiler.schedule import Schedule
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]


def conv_graph(
    c: int, f: int, hw: tuple[int, int], stride: int = 1, padding: int = 1
) -> tuple[Graph, Array, Array]:
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((f, c, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(f).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, c, *hw))
    g.output(g.conv2d(x, weight, bias, strides=stride, padding=padding))
    return g, weight, bias


def conv_kernel(s: Schedule) -> str:
    return next(k for k, ops in s.kernels().items() if ops.startswith("tg.conv2d"))


def init_is_separate(s: Schedule) -> bool:
    loops = s.loops(conv_kernel(s))
    return "f_init" in loops and loops.index("f_init") < loops.index("n")


def reference(x: Array, w: Array, b: Array, stride: int, padding: int) -> Array:
    torch = pytest.importorskip("torch", reason="the conv oracle is torch")
    y = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride, padding
    )
    return np.asarray(y.numpy())


@pytest.mark.parametrize(
    ("c", "f", "hw", "stride"),
    [(3, 5, (7, 9), 2), (8, 8, (6, 6), 1), (4, 32, (5, 5), 1)],
)
def test_leaves_other_shapes_alone(
    c: int, f: int, hw: tuple[int, int], stride: int
) -> None:
    """F not a multiple of 16, a padding test left in the nest, an OW no tile width
    divides, or the init loop inside ``ow``: False, and the module unchanged."""
    g, _, _ = conv_graph(c, f, hw, stride)
    s = Schedule.for_model(g)
    kernel = conv_kernel(s)
    before = str(s.module)
    if f == 32 and init_is_separate(s):
        pytest.skip("OW = 5 with F = 32 now tiles 5 x 32; covered below")
    assert schedule_conv(s, kernel, 1) is False
    assert str(s.module) == before
    assert s.trace == []


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("c", "f", "hw", "stride"),
    [(64, 64, (8, 8), 1), (3, 64, (7, 9), 2), (16, 32, (7, 14), 1)],
)
def test_tile_numerics(
    c: int, f: int, hw: tuple[int, int], stride: int, threads: int
) -> None:
    g, w, b = conv_graph(c, f, hw, stride)
    s = Schedule.for_model(g)
    if not init_is_separate(s):
        pytest.skip(
            "the NHWC conv lowering keeps f_init inside ow; the tile needs the init "
            "as a top-level nest"
        )

    def schedule(s: Schedule) -> None:
        assert schedule_conv(s, conv_kernel(s), threads)

    compiled = qidao.compile(g, schedule=schedule, threads=threads)
    assert "s.cache_write" in compiled.stats["schedule"]
    x = np.random.default_rng(1).standard_normal((1, c, *hw)).astype(np.float32)
    (got,) = compiled(x)
    want = reference(x, w, b, stride, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_default_schedule_numerics() -> None:
    """Through ``qidao.compile``'s defaults, whatever they did to the conv."""
    g, w, b = conv_graph(64, 64, (8, 8))
    compiled = qidao.compile(g, threads=1)
    x = np.random.default_rng(2).standard_normal((1, 64, 8, 8)).astype(np.float32)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, reference(x, w, b, 1, 1), rtol=1e-4, atol=1e-4)
