"""The default conv schedule (``qidao/compiler/targets/cpu/defaults/conv.py``), of
the direct algorithm (``algo="direct"``: the rule would give some of these shapes
Winograd).

``schedule_conv`` either register-tiles an NHWC convolution kernel or returns False
and leaves it exactly as it was. The tile needs the main nest ``n, oh, ow, kh, kw,
c, f`` (grouped: ``n, oh, ow, kh, kw, g, c, f``) perfectly nested, the init nest
``n_init, ...`` and the epilogue outside it (as the NHWC lowering makes them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.conv import TILES, pick_tile, schedule_conv
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]


def conv_graph(
    c: int,
    f: int,
    hw: tuple[int, int],
    stride: int = 1,
    padding: int = 1,
    groups: int = 1,
) -> tuple[Graph, Array, Array]:
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((f, c // groups, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(f).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, c, *hw))
    y = g.conv2d(x, weight, bias, strides=stride, padding=padding, groups=groups)
    g.output(y)
    return g, weight, bias


def conv_kernel(s: Schedule) -> str:
    return next(k for k, ops in s.kernels().items() if ops.startswith("tg.conv2d"))


def reference(
    x: Array, w: Array, b: Array, stride: int, padding: int, groups: int = 1
) -> Array:
    torch = pytest.importorskip("torch", reason="the conv oracle is torch")
    y = torch.nn.functional.conv2d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        torch.from_numpy(b),
        stride,
        padding,
        groups=groups,
    )
    return np.asarray(y.numpy())


@pytest.mark.parametrize(
    ("c", "f", "hw", "stride"),
    [(3, 5, (7, 9), 2), (8, 8, (6, 6), 2)],
)
def test_leaves_other_shapes_alone(
    c: int, f: int, hw: tuple[int, int], stride: int
) -> None:
    """F under one vector (3 -> 5), or a padding test left in the nest (8 -> 8 at
    stride 2: too little work for ``materialize-padding``): False, the module
    unchanged."""
    g, _, _ = conv_graph(c, f, hw, stride)
    s = Schedule.for_model(g, algo="direct")
    kernel = conv_kernel(s)
    before = str(s.module)
    assert schedule_conv(s, kernel, 1) is None
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

    def schedule(s: Schedule) -> None:
        done = schedule_conv(s, conv_kernel(s), threads)
        assert done is not None and "outermost" not in done  # weights stay in L2

    compiled = qidao.compile(g, schedule=schedule, threads=threads, algo="direct")
    assert "s.cache_write" in compiled.stats["schedule"]
    x = np.random.default_rng(1).standard_normal((1, c, *hw)).astype(np.float32)
    (got,) = compiled(x)
    want = reference(x, w, b, stride, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_weight_panels_outermost_when_the_weights_leave_l2(threads: int) -> None:
    """3x3 256 -> 256 on 6x6: 2.25 MiB of weights, far more than re-reading the
    small input once per panel; the panels of output channels go outside the
    pixels (and onto the threads), and the numbers stay the same."""
    g, w, b = conv_graph(256, 256, (6, 6))
    compiled = qidao.compile(g, threads=threads, algo="direct")
    (kernel,) = [
        k for k, v in compiled.stats["default_schedule"].items() if "conv" in v
    ]
    report = compiled.stats["default_schedule"][kernel]
    assert "panels of 32 output channels outermost (the weights, 2.2 MiB" in report
    trace = compiled.stats["schedule"]
    assert f's.reorder("{kernel}", "n", "f_o", "oh", "ow_o"' in trace
    assert (f's.parallel("{kernel}", "f_o")' in trace) == (threads > 1), trace
    x = np.random.default_rng(5).standard_normal((1, 256, 6, 6)).astype(np.float32)
    want = reference(x, w, b, 1, 1)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-3, atol=1e-3)


def test_default_schedule_numerics() -> None:
    """Through ``qidao.compile``'s defaults, whatever they did to the conv."""
    g, w, b = conv_graph(64, 64, (8, 8))
    compiled = qidao.compile(g, threads=1, algo="direct")
    x = np.random.default_rng(2).standard_normal((1, 64, 8, 8)).astype(np.float32)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, reference(x, w, b, 1, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_default_conv_relu_epilogue_in_the_tile(threads: int) -> None:
    """conv + bias + relu: the epilogue nest runs inside the tile (compute_at)."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    g = Graph()
    x = g.input("x", (2, 16, 12, 16))
    g.output(g.relu(g.conv2d(x, w, b, padding=1)))
    compiled = qidao.compile(g, threads=threads, algo="direct")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "fused" in k]
    assert compiled.stats["default_schedule"][kernel].startswith("conv2d: register")
    assert f's.compute_at("{kernel}", "n_epi"' in compiled.stats["schedule"]
    data = rng.standard_normal((2, 16, 12, 16)).astype(np.float32)
    want = np.maximum(reference(data, w, b, 1, 1), 0)
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-4, atol=1e-4)


def test_swish_epilogue_after_the_write_back() -> None:
    """conv + x * sigmoid(x) (EfficientNet): the epilogue's exp stays on scalars,
    where ``expand-math`` writes it out; it moves into the tile after
    ``cache_write``, onto ``out``, not onto the vector accumulators."""
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, 16, 8, 16))
    y = g.conv2d(x, w, b, padding=1)
    g.output(g.mul(y, g.sigmoid(y)))
    compiled = qidao.compile(g, threads=1, algo="direct")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "fused" in k]
    trace = compiled.stats["schedule"]
    write = trace.index(f's.cache_write("{kernel}"')
    assert trace.index(f's.compute_at("{kernel}", "n_epi"') > write
    ir = compiled.ir("schedule")
    assert not [
        line for line in ir.splitlines() if "math.exp" in line and "vector<" in line
    ]
    data = rng.standard_normal((1, 16, 8, 16)).astype(np.float32)
    conv = reference(data, w, b, 1, 1).astype(np.float64)
    want = conv / (1 + np.exp(-conv))
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-5, atol=1e-5)


RAGGED = [
    # c, f, hw, stride, epilogue (no padding): OW 11, which no tile width divides
    (16, 32, (5, 13), 1, "relu"),  # all F in one tile: the tile loop is ow_o
    (32, 128, (4, 13), 1, "relu"),  # 64-channel panels: the tile loop is f_o
    (16, 24, (4, 13), 1, "none"),  # F a multiple of 8: <8 x float> tiles
    (256, 256, (5, 23), 2, "none"),  # weights past L2: panels outermost
    (16, 32, (6, 13), 1, "swish"),  # a late epilogue stays a nest of its own
    (16, 32, (3, 11), 1, "relu"),  # OW 9: 8 pixels and a peeled one, not 3 x 3
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("c", "f", "hw", "stride", "epilogue"), RAGGED)
def test_ragged_row_peels_the_last_tile(
    c: int, f: int, hw: tuple[int, int], stride: int, epilogue: str, threads: int
) -> None:
    """``OW`` that no tile width divides (wav2vec2's 799 output steps): the
    first tile that fits, its last, narrower one peeled (``ow_o_t``), the two parts
    each in registers; the same numbers as torch's conv (and epilogue)."""
    rng = np.random.default_rng(9)
    w = (rng.standard_normal((f, c, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(f).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, c, *hw))
    y = g.conv2d(x, w, b, strides=stride)
    if epilogue == "relu":
        y = g.relu(y)
    elif epilogue == "swish":
        y = g.mul(y, g.sigmoid(y))
    g.output(y)
    compiled = qidao.compile(g, threads=threads, algo="direct")
    (kernel,) = [
        k for k, v in compiled.stats["default_schedule"].items() if "conv2d:" in v
    ]
    report = compiled.stats["default_schedule"][kernel]
    assert "pixels in a peeled tile (ow_o_t)" in report, report
    trace = compiled.stats["schedule"]
    assert f's.peel("{kernel}", "ow_o"' in trace
    assert trace.count(f's.cache_write("{kernel}"') == 2
    data = rng.standard_normal((1, c, *hw)).astype(np.float32)
    want = reference(data, w, b, stride, 0).astype(np.float64)
    if epilogue == "relu":
        want = np.maximum(want, 0)
    elif epilogue == "swish":
        want = want / (1 + np.exp(-want))
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("f", "ow", "tile"),
    [
        (64, 56, (32, 8)),  # 8 pixels divide OW
        (64, 28, (64, 4)),
        (64, 7, (32, 7)),
        (64, 1599, (32, 8)),  # only 3 divides: 8 and a peeled 7 (wav2vec2)
        (64, 9, (32, 8)),
        (64, 3, (64, 3)),  # no tile of 4 or more fits: the narrow one
        (16, 9, (16, 8)),  # F 16: the 16-column tiles
    ],
)
def test_the_tile_prefers_wide_tiles_then_peeling(
    f: int, ow: int, tile: tuple[int, int]
) -> None:
    assert pick_tile(TILES, f, ow, peel=True) == tile


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("c", "f", "hw"), [(16, 24, (6, 10)), (8, 40, (6, 6))])
def test_half_width_tile_for_f_a_multiple_of_8(
    c: int, f: int, hw: tuple[int, int], threads: int
) -> None:
    """F = 24 or 40 (MobileNetV2's projections): the tile on <8 x float> vectors,
    all F columns in it, against PyTorch (unpadded: ``materialize-padding`` takes
    F a multiple of 16 only)."""
    g, w, b = conv_graph(c, f, hw, padding=0)
    compiled = qidao.compile(g, threads=threads, algo="direct")
    kernel = conv_kernel_of(compiled)
    report = compiled.stats["default_schedule"][kernel]
    assert report.startswith("conv2d: register tile"), report
    assert "vector<8xf32>" in compiled.ir("schedule")
    x = np.random.default_rng(5).standard_normal((1, c, *hw)).astype(np.float32)
    want = reference(x, w, b, 1, 0)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("c", "f", "hw", "cols"),
    [
        (116, 116, (6, 14), 20),  # ShuffleNet's 116: 3 32-column panels + 20 (16 + 4)
        (64, 232, (3, 9), 8),  # 232, a multiple of 8: 7 32-column panels + 8
        (32, 72, (3, 6), 8),  # 72: 2 panels + 8 columns, OW 4
        (58, 58, (4, 30), 10),  # 58: 3 panels + 10 columns (8 lanes + 2 scalars)
        (12, 20, (5, 8), 4),  # 3x3: one panel + 4 columns
    ],
)
def test_ragged_output_channels_peel_the_last_panel(
    c: int, f: int, hw: tuple[int, int], cols: int, threads: int
) -> None:
    """F not a multiple of 8: 16-column panels (32-column ones from 64 channels,
    and then also for F a multiple of 8 but not of 16), the last columns in a
    peeled panel on 16-, 8- and 4-lane vectors and scalars (before: the kernel
    kept its loops, or ran on 8-lane vectors), against PyTorch."""
    g, w, b = conv_graph(c, f, hw, padding=0)
    compiled = qidao.compile(g, threads=threads, algo="direct")
    kernel = conv_kernel_of(compiled)
    report = compiled.stats["default_schedule"][kernel]
    assert f"the last {cols} output channels in a peeled panel (f_o_p)" in report
    x = np.random.default_rng(6).standard_normal((1, c, *hw)).astype(np.float32)
    want = reference(x, w, b, 1, 0)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-4, atol=1e-4)


def conv_kernel_of(compiled: qidao.Compiled) -> str:
    """The convolution's kernel (the one the tile applies to, or would)."""
    reports = compiled.stats["default_schedule"]
    return next(k for k, done in reports.items() if done.startswith("conv2d"))


GROUPED = [
    # (C, F, (H, W), stride, groups): Fg = F / groups output channels per group
    (32, 32, (8, 8), 2, 2),  # RegNet's first: Fg 16, stride 2, OW 4
    (64, 64, (6, 7), 1, 4),  # Fg 16, stride 1, OW 7
    (32, 64, (5, 8), 1, 2),  # Fg 32, OW 8
    (64, 128, (7, 10), 2, 4),  # Fg 32, stride 2, OW 5
    (32, 256, (3, 4), 1, 2),  # Fg 128: f split by 64, the side nests stay apart
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("c", "f", "hw", "stride", "groups"), GROUPED)
def test_grouped_tile_numerics(
    c: int, f: int, hw: tuple[int, int], stride: int, groups: int, threads: int
) -> None:
    """A grouped convolution (RegNet's) through the defaults: ``materialize-padding``
    takes out its padding test and the tile runs per group, ``g`` outside the
    reduction ``kh, kw, c``."""
    g, w, b = conv_graph(c, f, hw, stride, groups=groups)
    compiled = qidao.compile(g, threads=threads, algo="direct")
    assert "tg.pad" in compiled.ir("tg")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "conv2d" in k]
    report = compiled.stats["default_schedule"][kernel]
    assert report.startswith("conv2d: register tile of output pixels x output")
    trace = compiled.stats["schedule"]
    assert f's.reorder("{kernel}", "n", "oh", "ow_o", "g", ' in trace
    assert f's.cache_write("{kernel}"' in trace
    x = np.random.default_rng(5).standard_normal((1, c, *hw)).astype(np.float32)
    (got,) = compiled(x)
    want = reference(x, w, b, stride, 1, groups)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_relu_epilogue_in_the_tile(threads: int) -> None:
    """RegNet's grouped conv + relu: the init and epilogue nests run per group's
    tile (``compute_at`` at ``g``), on the accumulators."""
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    g = Graph()
    x = g.input("x", (2, 32, 9, 16))
    g.output(g.relu(g.conv2d(x, w, b, strides=2, padding=1, groups=2)))
    compiled = qidao.compile(g, threads=threads, algo="direct")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "fused" in k]
    assert compiled.stats["default_schedule"][kernel].startswith("conv2d: register")
    trace = compiled.stats["schedule"]
    assert f's.compute_at("{kernel}", "n_init", "g")' in trace
    assert f's.compute_at("{kernel}", "n_epi", "g")' in trace
    data = rng.standard_normal((2, 32, 9, 16)).astype(np.float32)
    want = np.maximum(reference(data, w, b, 2, 1, 2), 0)
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-4, atol=1e-4)


def test_grouped_rows_in_parallel() -> None:
    """At 2 threads a grouped tile of enough work (4.7 MFLOP) splits ``oh``."""
    g, w, b = conv_graph(64, 64, (16, 16), 1, groups=4)
    compiled = qidao.compile(g, threads=2, algo="direct")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "conv2d" in k]
    assert f's.parallel("{kernel}", "oh")' in compiled.stats["schedule"]
    x = np.random.default_rng(8).standard_normal((1, 64, 16, 16)).astype(np.float32)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, reference(x, w, b, 1, 1, 4), rtol=1e-4, atol=1e-4)


def test_grouped_without_a_tile_width_is_left_alone() -> None:
    """OW 3 (no tile width 4..8 divides it): ``materialize-padding`` leaves the
    padding test in, and the schedule leaves the kernel as lowered."""
    g, w, b = conv_graph(32, 32, (5, 5), 2, groups=2)
    compiled = qidao.compile(g, threads=1, algo="direct")
    assert "tg.pad" not in compiled.ir("tg")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "conv2d" in k]
    assert compiled.stats["default_schedule"][kernel].startswith("none: ")
    x = np.random.default_rng(7).standard_normal((1, 32, 5, 5)).astype(np.float32)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, reference(x, w, b, 2, 1, 2), rtol=1e-4, atol=1e-4)


def test_one_row_splits_its_pixel_tiles() -> None:
    """A 1-D convolution (a 2-D one of height 1, batch 1: wav2vec2's feature
    extractor) splits its pixel tiles ``ow_o`` over the threads: ``oh`` and ``n``
    have one iteration each, and splitting either ran it on one thread."""
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((64, 32, 1, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    g = Graph()
    x = g.input("x", (1, 32, 1, 203))
    g.output(g.conv2d(x, w, b, strides=(1, 2), padding=0))
    compiled = qidao.compile(g, threads=2, algo="direct")
    (kernel,) = [k for k in compiled.stats["default_schedule"] if "conv2d" in k]
    assert compiled.stats["default_schedule"][kernel].endswith("ow_o on 2 threads")
    assert f's.parallel("{kernel}", "ow_o")' in compiled.stats["schedule"]
    data = rng.standard_normal((1, 32, 1, 203)).astype(np.float32)
    want = reference(data, w, b, (1, 2), 0)  # type: ignore[arg-type]
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-4, atol=1e-4)
