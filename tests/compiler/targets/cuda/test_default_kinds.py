"""The default GPU schedules of convolutions, pools, reductions over axes before the
last (``qidao/compiler/targets/cuda/default_kinds.py``), and of gathers, transposes,
concats and slices (``elementwise`` kernels), without a GPU: what each kernel's
report says, no ``<<<1, 1>>>`` launch, the thread loop (``threadIdx.x``) driving
the output's last index (coalesced writes), the emulator's results against NumPy,
and ``nvcc`` for sm_80 and sm_90 warning-free (every case in one model, one nvcc
run per architecture). Small shapes with tails."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import affine, vector
from xdsl.ir import OpResult, SSAValue

import qidao
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda import default_kinds
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.frontend.builder import Graph
from qidao.passes.schedule.bind import bound_axis
from qidao.passes.schedule.loops.nest import iv, kernel_functions, loop_name

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Array = np.ndarray[Any, Any]
Case = Callable[[Graph, np.random.Generator, str], tuple[list[Array], list[Array]]]
"""Adds its inputs (names prefixed) and outputs to a graph; returns the input
arrays and the NumPy results."""


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


def randn(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape).astype(np.float32)


# --- NumPy references -------------------------------------------------------------------


def conv_ref(x: Array, w: Array, stride: int, pad: int, groups: int) -> Array:
    """NCHW x, FCHW w (C per group), zero padding: ``torch.nn.functional.conv2d``."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]  # n, c, oh, ow, kh, kw
    n, c, oh, ow = win.shape[:4]
    f = w.shape[0]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.astype(np.float64).reshape(groups, f // groups, c // groups, kh, kw)
    out: Array = np.einsum("ngchwij,gfcij->ngfhw", win, wg)
    return out.reshape(n, f, oh, ow)


def pool_ref(x: Array, k: int, stride: int, pad: int, kind: str) -> Array:
    """Max (padding never wins) or average (padding not counted) over NCHW windows."""
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(
        x.astype(np.float64),
        ((0, 0), (0, 0), (pad, pad), (pad, pad)),
        constant_values=fill,
    )
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    if kind == "max":
        return np.asarray(win.max(axis=(-2, -1)))
    return np.asarray(np.nanmean(win, axis=(-2, -1)))


# --- the cases ---------------------------------------------------------------------------


def conv_case(
    shape: tuple[int, int, int, int],
    filters: int,
    kernel: int,
    stride: int = 1,
    pad: int = 0,
    groups: int = 1,
    relu: bool = True,
) -> Case:
    def make(
        g: Graph, rng: np.random.Generator, p: str
    ) -> tuple[list[Array], list[Array]]:
        x_np = randn(rng, *shape)
        w_np = randn(rng, filters, shape[1] // groups, kernel, kernel)
        x = g.input(f"{p}x", shape)
        w = g.input(f"{p}w", w_np.shape)
        y = g.conv2d(x, w, strides=stride, padding=pad, groups=groups)
        want = conv_ref(x_np, w_np, stride, pad, groups)
        if relu:
            y, want = g.relu(y), np.maximum(want, 0)
        g.output(y)
        return [x_np, w_np], [want]

    return make


def pool_case(channels: int, kind: str, k: int, stride: int, pad: int) -> Case:
    """A 1x1 conv to ``channels`` (so that the pool is in the conv chain, NHWC, as in
    the models), then the pool."""

    def make(
        g: Graph, rng: np.random.Generator, p: str
    ) -> tuple[list[Array], list[Array]]:
        x_np, w_np = randn(rng, 2, 3, 9, 9), randn(rng, channels, 3, 1, 1)
        x, w = g.input(f"{p}x", x_np.shape), g.input(f"{p}w", w_np.shape)
        y = g.conv2d(x, w)
        if kind == "max":
            y = g.max_pool2d(y, k, stride, pad)
        else:
            y = g.avg_pool2d(y, k, stride, pad)
        g.output(y)
        return [x_np, w_np], [
            pool_ref(conv_ref(x_np, w_np, 1, 0, 1), k, stride, pad, kind)
        ]

    return make


def nchw_avg_pool(
    g: Graph, rng: np.random.Generator, p: str
) -> tuple[list[Array], list[Array]]:
    """A lone pool stays NCHW: its window loops innermost."""
    x_np = randn(rng, 2, 3, 9, 9)
    g.output(g.avg_pool2d(g.input(f"{p}x", x_np.shape), 3, 2))
    return [x_np], [pool_ref(x_np, 3, 2, 0, "avg")]


def global_pool(
    g: Graph, rng: np.random.Generator, p: str
) -> tuple[list[Array], list[Array]]:
    """ResNet's head: a conv chain (NHWC), then the mean over H and W."""
    x_np, w_np = randn(rng, 2, 3, 5, 7), randn(rng, 40, 3, 1, 1)
    x, w = g.input(f"{p}x", x_np.shape), g.input(f"{p}w", w_np.shape)
    g.output(g.reduce_mean(g.relu(g.conv2d(x, w)), [2, 3], keepdims=True))
    y = np.maximum(conv_ref(x_np, w_np, 1, 0, 1), 0)
    return [x_np, w_np], [y.mean(axis=(2, 3), keepdims=True)]


def reduce_case(shape: tuple[int, ...], axes: list[int], kind: str) -> Case:
    def make(
        g: Graph, rng: np.random.Generator, p: str
    ) -> tuple[list[Array], list[Array]]:
        x_np = randn(rng, *shape)
        x = g.input(f"{p}x", shape)
        if kind == "sum":
            g.output(g.reduce_sum(x, axes))
            return [x_np], [x_np.astype(np.float64).sum(axis=tuple(axes))]
        g.output(g.reduce_max(x, axes))
        return [x_np], [x_np.max(axis=tuple(axes))]

    return make


def take_case(
    g: Graph, rng: np.random.Generator, p: str
) -> tuple[list[Array], list[Array]]:
    """An embedding: rows of a table at int64 ids known at run time."""
    table, ids = randn(rng, 50, 24), rng.integers(0, 50, (2, 7), dtype=np.int64)
    t, i = g.input(f"{p}table", table.shape), g.input(f"{p}ids", ids.shape, "int64")
    g.output(g.take(t, i))
    return [table, ids], [table[ids]]


def gather_case(
    g: Graph, rng: np.random.Generator, p: str
) -> tuple[list[Array], list[Array]]:
    """Constant indices along the middle axis (a ``tg.gather``)."""
    x_np = randn(rng, 3, 11, 20)
    picked = [7, 0, 10, 3]
    g.output(g.gather(g.input(f"{p}x", x_np.shape), picked, axis=1))
    return [x_np], [x_np[:, picked]]


def transpose_case(
    g: Graph, rng: np.random.Generator, p: str
) -> tuple[list[Array], list[Array]]:
    x_np = randn(rng, 17, 40)
    g.output(g.contiguous(g.transpose(g.input(f"{p}x", x_np.shape))))
    return [x_np], [x_np.T]


def slice_concat_case(
    g: Graph, rng: np.random.Generator, p: str
) -> tuple[list[Array], list[Array]]:
    x_np, y_np = randn(rng, 6, 20), randn(rng, 6, 7)
    x, y = g.input(f"{p}x", x_np.shape), g.input(f"{p}y", y_np.shape)
    a = g.slice(x, [1, 3], [5, 18], [1, 2])
    b = g.slice(y, [0, 0], [4, 7])
    g.output(g.concat([a, b], axis=1))
    return [x_np, y_np], [np.concatenate([x_np[1:5, 3:18:2], y_np[:4]], axis=1)]


CASES: dict[str, tuple[Case, str, str]] = {
    # name: (case, the kind of the kernel to look at, what its report says)
    "conv3x3_docstring": (
        conv_case((2, 8, 6, 6), 16, 3, relu=False),
        "conv2d",
        "'n': n -> blockIdx.y, oh -> blockIdx.x, ow -> threadIdx.y, f -> threadIdx.x; "
        "reorder(n, oh, ow, f, kh, kw, c); the reduction in a register "
        "(cache_write f)",
    ),
    "conv3x3": (
        conv_case((2, 6, 9, 9), 20, 3),
        "conv2d",
        "reorder(n, oh, ow, f, kh, kw, c); the reduction in a register (cache_write f)",
    ),
    "conv3x3_padded": (
        conv_case((2, 5, 8, 8), 12, 3, pad=1),
        "conv2d",
        "f -> threadIdx.x; inside the padding test: reorder(f, c); the reduction in a "
        "register (cache_write f)",
    ),
    "conv3x3_stride2_300_filters": (
        conv_case((1, 3, 11, 11), 300, 3, stride=2, relu=False),
        "conv2d",
        "f_o -> blockIdx.x, f_i -> threadIdx.x",
    ),
    "conv_grouped_padded": (
        conv_case((2, 8, 6, 6), 16, 3, pad=1, groups=2),
        "conv2d",
        "f -> threadIdx.x; inside the padding test: reorder(g, f, c)",
    ),
    "depthwise": (
        conv_case((2, 32, 7, 7), 32, 3, groups=32),
        "conv2d",
        "c -> threadIdx.x; reorder(n, cb, oh, ow, c, kh, kw); the reduction in a "
        "register (cache_write c)",
    ),
    "depthwise_padded_stride2": (
        conv_case((2, 32, 7, 7), 32, 3, stride=2, pad=1, groups=32),
        "conv2d",
        "cb -> blockIdx.y, oh -> blockIdx.x, ow -> threadIdx.y, c -> threadIdx.x",
    ),
    "max_pool_40_channels": (
        pool_case(40, "max", 3, 2, 1),
        "pool",
        "channel loops c_init, c block-stride over 64 threads",
    ),
    "avg_pool_40_channels": (
        pool_case(40, "avg", 2, 2, 0),
        "pool",
        "ow_i -> threadIdx.y; channel loops c_init, c, c_norm block-stride over 64",
    ),
    "max_pool_8_channels": (
        pool_case(8, "max", 3, 2, 1),
        "pool",
        "ow -> threadIdx.x; c_init, kh, kw, c serial in each thread (no "
        "block-stride channels: 8 channels, fewer than 32)",
    ),
    "avg_pool_nchw": (
        nchw_avg_pool,
        "pool",
        "ow -> threadIdx.x; the reduction in a register (cache_write ow)",
    ),
    "global_avg_pool": (
        global_pool,
        "rows",
        "over axes before the last: 'i0_init': i0_init -> threadIdx.y, i1_init -> "
        "threadIdx.x; 'i0': i0 -> threadIdx.y, i1 -> threadIdx.x; reorder(i0, i1, r0, "
        "r1); the reduction in a register (cache_write i1)",
    ),
    "reduce_sum_axis1": (
        reduce_case((4, 30, 33), [1], "sum"),
        "rows",
        "reorder(i0, i1, r0); the reduction in a register (cache_write i1)",
    ),
    "reduce_max_axes01": (
        reduce_case((20, 12, 40), [0, 1], "max"),
        "rows",
        "reorder(i0, r0, r1); the reduction in a register (cache_write i0)",
    ),
    "take": (take_case, "elementwise", "i2 -> threadIdx.x"),
    "gather": (gather_case, "elementwise", "threadIdx.x"),
    "transpose": (transpose_case, "elementwise", "i1 -> threadIdx.x"),
    "slice_concat": (slice_concat_case, "elementwise", "'i0_1': "),
}
"""Every convolution form the lowering makes (dense, padded with the test inside,
strided with more filters than a block has threads, grouped, depthwise with and
without the test), NHWC pools with many and few channels and an NCHW pool, NHWC
global pooling and reductions over middle and leading axes, and the elementwise
kernels that move data."""


def build(name: str) -> tuple[Graph, list[Array], list[Array]]:
    g = Graph("main")
    inputs, want = CASES[name][0](g, np.random.default_rng(11), "")
    return g, inputs, want


def report_of(compiled: CompiledCuda, kind: str) -> str:
    """The reports of the kernels of ``kind``, joined."""
    found = [
        what
        for what in compiled.stats["default_schedule"].values()
        if what.startswith(f"{kind}: ")
    ]
    assert found, compiled.stats["default_schedule"]
    return "; ".join(found)


# --- what each kind gets ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_nest_gets_a_thread_per_output_element(name: str) -> None:
    g, _, _ = build(name)
    compiled = compile_cuda(g)
    everything = "; ".join(compiled.stats["default_schedule"].values())
    assert compiled.stats["serial_launches"] == [], everything
    assert "none: " not in everything, everything
    _, kind, expected = CASES[name]
    assert expected in report_of(compiled, kind)


def last_index_roots(op: affine.StoreOp | vector.StoreOp) -> set[SSAValue]:
    """The block arguments (loop counters) that the last index of a store reads,
    through the ops that compute it (``affine.apply`` of a vectorized loop)."""
    if isinstance(op, vector.StoreOp):
        values = [op.indices[-1]]
    else:
        last = op.map.data.results[-1]
        values = [op.indices[d] for d in sorted(last.used_dims())]
    roots: set[SSAValue] = set()
    while values:
        value = values.pop()
        if isinstance(value, OpResult):
            values.extend(value.owner.operands)
        else:
            roots.add(value)
    return roots


def uncoalesced_stores(compiled: CompiledCuda, kind: str) -> list[str]:
    """The stores to a kernel argument (global memory) in the kernels of ``kind``
    whose last index does not move with a ``threadIdx.x`` loop around them."""
    module = compiled.module("schedule")
    kinds = {
        kernel
        for kernel, what in compiled.stats["default_schedule"].items()
        if what.startswith(f"{kind}: ")
    }
    found = []
    for kernel in kinds:
        fn = kernel_functions(module)[kernel]
        args = set(fn.body.block.args)
        for op in fn.walk():
            if not isinstance(op, affine.StoreOp | vector.StoreOp):
                continue
            target = op.memref if isinstance(op, affine.StoreOp) else op.base
            if target not in args:
                continue
            threads = set()
            parent = op.parent_op()
            while parent is not None and parent is not fn:
                if isinstance(parent, affine.ForOp) and (
                    bound_axis(parent) == "threadIdx.x"
                ):
                    threads.add(iv(parent))
                parent = parent.parent_op()
            if not threads & last_index_roots(op):
                found.append(f"{kernel}: a store in {_loops_around(op, fn)}")
    return found


def _loops_around(op: Any, fn: Any) -> list[str]:
    names: list[str] = []
    parent = op.parent_op()
    while parent is not None and parent is not fn:
        if isinstance(parent, affine.ForOp):
            names.insert(0, str(loop_name(parent)))
        parent = parent.parent_op()
    return names


@pytest.mark.parametrize("name", sorted(CASES))
def test_threads_write_neighbouring_elements(name: str) -> None:
    """Every store to global memory indexes its last dimension with the
    ``threadIdx.x`` loop: a warp writes 32 neighbouring elements (or, for a
    thread's channels serial in a pool of few channels, there is none to check)."""
    g, _, _ = build(name)
    compiled = compile_cuda(g)
    _, kind, _ = CASES[name]
    if name == "max_pool_8_channels":  # a thread per pixel: channels serial
        assert uncoalesced_stores(compiled, kind), "expected the serial channels"
        return
    assert uncoalesced_stores(compiled, kind) == []


def test_the_docstring_example() -> None:
    """``default_kinds.py``'s Before/After: the product nest of a 3x3 conv."""
    g, _, _ = build("conv3x3_docstring")
    trace = compile_cuda(g).stats["schedule"]
    product = [
        line
        for line in trace.splitlines()
        if line.startswith("s.") and '"main_k1_conv2d"' in line and "_init" not in line
    ]
    assert product == [
        's.reorder("main_k1_conv2d", "n", "oh", "ow", "f", "kh", "kw", "c")',
        's.bind("main_k1_conv2d", "n", "blockIdx.y")',
        's.bind("main_k1_conv2d", "oh", "blockIdx.x")',
        's.bind("main_k1_conv2d", "ow", "threadIdx.y")',
        's.bind("main_k1_conv2d", "f", "threadIdx.x")',
        's.cache_write("main_k1_conv2d", "f")',
    ]


def test_the_trace_replays_to_the_same_cuda_c() -> None:
    g, _, _ = build("conv3x3_padded")
    compiled = compile_cuda(g)
    trace = compiled.stats["schedule"]
    assert 's.reorder("main_k1_fused", "f", "c")' in trace, trace
    replayed = compile_cuda(build("conv3x3_padded")[0], schedule=trace)
    assert replayed.ir("cuda") == compiled.ir("cuda")


def test_a_refused_reorder_keeps_the_kept_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When ``reorder`` refuses, the band stays as lowered: its parallel prefix goes
    on the grid and ``f`` (inside ``kh, kw, c``) on ``threadIdx.x``, each thread
    adding into its output element in memory; the report says why."""
    from qidao.compiler.schedule import IllegalScheduleError

    def refuse(self: Schedule, kernel: str, *loops: str) -> None:
        raise IllegalScheduleError("reorder", kernel, loops[0], "a test says no")

    monkeypatch.setattr(Schedule, "reorder", refuse)
    g, inputs, want = build("conv3x3")
    compiled = compile_cuda(g, device="emulate")
    report = report_of(compiled, "conv2d")
    assert (
        "'n': n -> blockIdx.y, oh -> blockIdx.x, ow -> threadIdx.y, f -> threadIdx.x; "
        "the band as lowered, accumulated in memory (reorder: loop 'n' in kernel "
        "'main_k1_fused': a test says no); 'n_epi'" in report
    ), report
    assert compiled.stats["serial_launches"] == []
    if GXX is not None:
        (got,) = compiled(*inputs)
        np.testing.assert_allclose(got, want[0], rtol=1e-4, atol=1e-4)


def test_a_refused_nest_falls_back_to_its_band_as_lowered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A primitive refusing the thread-per-output schedule of a nest puts the nest
    back (its reorder too), then the band as lowered goes on the grid."""
    from qidao.compiler.schedule import IllegalScheduleError

    real = default_kinds.bind_grid
    calls: list[list[str]] = []

    def refuse_once(
        s: Schedule, kernel: str, outer: list[str], inner: str, threads: int = 256
    ) -> tuple[str, str]:
        calls.append([*outer, inner])
        if inner == "f" and len([c for c in calls if c[-1] == "f"]) == 1:
            raise IllegalScheduleError("bind", kernel, inner, "a test says no")
        return real(s, kernel, outer, inner, threads)

    monkeypatch.setattr(default_kinds, "bind_grid", refuse_once)
    g, inputs, want = build("conv3x3_docstring")
    compiled = compile_cuda(g, device="emulate")
    report = report_of(compiled, "conv2d")
    assert (
        "'n': n -> blockIdx.y, oh -> blockIdx.x, ow -> threadIdx.y, f -> threadIdx.x "
        "(no thread per output element: bind: loop 'f' in kernel 'main_k1_conv2d': "
        "a test says no)" in report
    ), report
    assert "s.reorder(" not in compiled.stats["schedule"]
    assert compiled.stats["serial_launches"] == []
    if GXX is not None:
        (got,) = compiled(*inputs)
        np.testing.assert_allclose(got, want[0], rtol=1e-4, atol=1e-4)


def test_a_kernel_that_is_not_a_reduction_goes_to_the_rows_scheduler() -> None:
    """``reduce_or`` hands softmax and reductions over the last axis to the row
    scheduler it wraps, and takes the reductions over axes before the last."""

    def rows(s: Schedule, kernel: str) -> str:
        return "the rows scheduler"

    schedule = default_kinds.reduce_or(rows)

    def report(make: Callable[[Graph, Any], Any]) -> str:
        g = Graph("main")
        g.output(make(g, g.input("x", (4, 6, 10))))
        s = Schedule.for_model(g)
        (kernel,) = s.kernels()
        return schedule(s, kernel)

    assert report(lambda g, x: g.reduce_sum(x, [2])) == "the rows scheduler"
    assert report(lambda g, x: g.softmax(x)) == "the rows scheduler"
    assert report(lambda g, x: g.reduce_sum(x, [1])).startswith(
        "over axes before the last: 'i0_init': "
    )


# --- the emulator -------------------------------------------------------------------


@needs_gxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_schedules_match_numpy(name: str) -> None:
    g, inputs, want = build(name)
    compiled = compile_cuda(g, device="emulate")
    for got, ref in zip(compiled(*inputs), want, strict=True):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


# --- nvcc -----------------------------------------------------------------------------


def every_case() -> Graph:
    """All the cases in one model, each on its own inputs."""
    g = Graph("main")
    rng = np.random.default_rng(11)
    for k, name in enumerate(sorted(CASES)):
        CASES[name][0](g, rng, f"c{k}_")
    return g


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_every_kind_warning_free(arch: str, tmp_path: Path) -> None:
    compiled = compile_cuda(every_case())
    assert compiled.stats["serial_launches"] == []
    source = tmp_path / "kinds.cu"
    source.write_text(compiled.program.source)
    cmd = [str(NVCC), f"-arch={arch}", "-std=c++17", "--cubin", "-o"]
    result = subprocess.run(
        [*cmd, str(tmp_path / "kinds.cubin"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr
