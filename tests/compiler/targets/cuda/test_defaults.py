"""The default GPU schedules (``qidao/compiler/targets/cuda/defaults.py``) without a GPU:
what each kernel kind gets, the CUDA C they give (the matmul's register tile and
``__shared__`` slices), ``nvcc -arch=sm_90`` warning-free, and the emulator's
results against NumPy, at small sizes with tails. ``tests/compiler/targets/cuda/test_emit.py`` runs the
``*_default`` workloads on a real GPU where there is one."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.compiler.targets.cuda import defaults as gpu_defaults
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.examples import EXAMPLES
from qidao.frontend.builder import Graph

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Arrays = list[np.ndarray[Any, Any]]


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    """``qidao.compile(model, target="cuda", ...)``, typed as what it returns."""
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


Case = tuple[Graph, Arrays, Arrays]


def randn(rng: np.random.Generator, *shape: int) -> np.ndarray[Any, Any]:
    return rng.standard_normal(shape).astype(np.float32)


def matmul_case(
    m: int,
    k: int,
    n: int,
    batch: int = 0,
    epilogue: bool = False,
    transposed: bool = False,
) -> Callable[[np.random.Generator], Case]:
    """a @ b (``batch`` > 0: a is batch x m x k and b batch x k x n, a real batched
    matmul: ``collapse-matmul-batch`` folds a batched a times a 2-D b into one 2-D
    matmul; ``transposed``: b is given n x k and transposed in the graph, a
    strided view), + c and relu with ``epilogue``."""

    def make(rng: np.random.Generator) -> Case:
        g = Graph("main")
        a_shape = (batch, m, k) if batch else (m, k)
        b_shape = (n, k) if transposed else (batch, k, n) if batch else (k, n)
        a = g.input("a", a_shape)
        b = g.input("b", b_shape)
        y = g.matmul(a, g.transpose(b) if transposed else b)
        a_np, b_np = randn(rng, *a_shape), randn(rng, *b_shape)
        want = a_np.astype(np.float64) @ (b_np.T if transposed else b_np)
        inputs = [a_np, b_np]
        if epilogue:
            c = g.input("c", (n,))
            y = g.relu(y + c)
            c_np = randn(rng, n)
            inputs.append(c_np)
            want = np.maximum(want + c_np, 0)
        g.output(y)
        return g, inputs, [want]

    return make


def elementwise_case(*shape: int) -> Callable[[np.random.Generator], Case]:
    def make(rng: np.random.Generator) -> Case:
        g = Graph("main")
        x = g.input("x", shape)
        g.output(g.relu(x) * 2.0 + 1.0)
        x_np = randn(rng, *shape)
        return g, [x_np], [np.maximum(x_np, 0) * 2 + 1]

    return make


def softmax_case(rows: int, cols: int) -> Callable[[np.random.Generator], Case]:
    def make(rng: np.random.Generator) -> Case:
        g = Graph("main")
        x = g.input("x", (rows, cols))
        g.output(g.softmax(x))
        x_np = randn(rng, rows, cols)
        e = np.exp(x_np - x_np.max(axis=1, keepdims=True))
        return g, [x_np], [e / e.sum(axis=1, keepdims=True)]

    return make


def layernorm_case(rows: int, cols: int) -> Callable[[np.random.Generator], Case]:
    def make(rng: np.random.Generator) -> Case:
        g = Graph("main")
        x = g.input("x", (rows, cols))
        mean = g.reduce_mean(x, axes=[1], keepdims=True)
        d = x - mean
        var = g.reduce_mean(d * d, axes=[1], keepdims=True)
        g.output(d / g.sqrt(var + 1e-5))
        x_np = randn(rng, rows, cols).astype(np.float64)
        d_np = x_np - x_np.mean(axis=1, keepdims=True)
        want = d_np / np.sqrt((d_np * d_np).mean(axis=1, keepdims=True) + 1e-5)
        return g, [x_np.astype(np.float32)], [want]

    return make


def conv_case(rng: np.random.Generator) -> Case:
    g = Graph("main")
    x = g.input("x", (2, 3, 9, 9))
    w = g.input("w", (4, 3, 3, 3))
    g.output(g.relu(g.conv2d(x, w, padding=1)))
    xs, ws = randn(rng, 2, 3, 9, 9), randn(rng, 4, 3, 3, 3)
    padded = np.pad(xs, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    return g, [xs, ws], [np.maximum(np.einsum("nchwij,ocij->nohw", windows, ws), 0)]


CASES: dict[str, tuple[Callable[[np.random.Generator], Case], str]] = {
    # name: (case, what the default schedule report says for it)
    "matmul_64x37x64": (matmul_case(64, 37, 64), "64x64 tile per block"),
    "matmul_128x20x128": (matmul_case(128, 20, 128), "128x128 tile per block"),
    "matmul_tails_37x20x45": (matmul_case(37, 20, 45), "a thread per element of C"),
    "gemm_bias_relu_32x24x48": (
        matmul_case(32, 24, 48, epilogue=True),
        "'i_epi': i_epi_o -> blockIdx.x",
    ),
    "batched_matmul_3x16x8x32": (
        matmul_case(16, 8, 32, batch=3),
        "b0 -> blockIdx.z",
    ),
    "matmul_transposed_b_32x16x32": (
        matmul_case(32, 16, 32, transposed=True),
        "a and in1 staged in __shared__",
    ),
    "elementwise_1000": (
        elementwise_case(1000),
        "4 elements a thread (i0_i vectorized): i0_o -> threadIdx.x",
    ),
    "elementwise_1001": (elementwise_case(1001), "i0_o -> blockIdx.x"),
    "elementwise_3x5x70": (elementwise_case(3, 5, 70), "i1_i -> threadIdx.y"),
    "softmax_9x50": (softmax_case(9, 50), "a row a block (i0 -> blockIdx.x), 32"),
    "softmax_70x33": (softmax_case(70, 33), "2 rows a block (i0_o -> blockIdx.x"),
    "softmax_3x1500": (softmax_case(3, 1500), "256 threads a row"),
    "layernorm_40x24": (layernorm_case(40, 24), "4 rows a block"),
    "conv2d_relu": (
        conv_case,
        "'n': n -> blockIdx.y, oh -> blockIdx.x, ow -> threadIdx.y, f -> threadIdx.x",
    ),
}
"""Small shapes with tails; the matmul tiles are those that divide the shapes
(``MATMUL_MIN_BLOCKS`` is lowered to 1 by the ``big_tiles`` fixture, so that the
largest tile that divides is taken, as at the sizes that fill a GPU)."""


@pytest.fixture
def big_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_defaults, "MATMUL_MIN_BLOCKS", 1)


def build(name: str) -> Case:
    return CASES[name][0](np.random.default_rng(7))


# --- what each kind gets ----------------------------------------------------------------


@pytest.mark.usefixtures("big_tiles")
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_kernel_gets_a_grid(name: str) -> None:
    g, _, _ = build(name)
    compiled = compile_cuda(g)
    report = "; ".join(compiled.stats["default_schedule"].values())
    assert CASES[name][1] in report, report
    assert compiled.stats["serial_launches"] == []
    assert "none: " not in report, report


def test_threads_and_rows_a_block() -> None:
    """About 8 elements a thread (32 to 512 threads a row); rows of up to 256
    take a warp each, as many a block as divide the rows, up to 4."""
    assert [gpu_defaults.row_threads(n) for n in (1, 256, 257, 1024, 4096, 8192)] == [
        32,
        32,
        64,
        128,
        512,
        512,
    ]
    for rows, cols, want in (
        (4096, 1024, "a row a block (i0 -> blockIdx.x), 128 threads a row"),
        (4096, 64, "4 rows a block (i0_o -> blockIdx.x, i0_i -> threadIdx.y), 32"),
        (6, 64, "2 rows a block"),
    ):
        g, _, _ = softmax_case(rows, cols)(np.random.default_rng(0))
        (report,) = compile_cuda(g).stats["default_schedule"].values()
        assert want in report, report


def test_thread_rows_per_block() -> None:
    """Without block-wide rows, about ``ROW_BLOCKS`` blocks: 2 rows a block at
    4096 rows, 8 at 16384."""
    for rows, per in ((4096, 2), (16384, 8), (2048, 1)):
        g, _, _ = softmax_case(rows, 4)(np.random.default_rng(0))
        s = Schedule.for_model(g)
        report = gpu_defaults.thread_rows(s, "main_k0_softmax", "i0")
        assert f"a thread per row, {per} a block: i0_o -> blockIdx.x" in report


def test_tiles_at_the_bench_sizes() -> None:
    """The first tile of ``MATMUL_TILES`` that divides M and N and gives 256
    blocks: 64 x 64 at 1024 (128 x 128 would leave most of an H200's 132 SMs
    idle with 64 blocks), 128 x 128 at 2048; none divides 37 x 45."""
    expected = {
        1024: "64x64 tile per block of 16x16 threads, 4x4 per thread in registers, "
        "k by 16, x and w staged in __shared__",
        2048: "128x128 tile per block of 16x16 threads, 8x8 per thread in registers, "
        "k by 8, x and w staged in __shared__",
    }
    for n, text in expected.items():
        s = Schedule.for_model(EXAMPLES[f"matmul{n}"].build())
        report = gpu_defaults.default_gpu_schedule(s)["main_k0_matmul"]
        assert text in report, report


def test_schedule_none_keeps_the_loops_and_default_is_the_default() -> None:
    g, _, _ = build("softmax_9x50")
    raw = compile_cuda(g, schedule=None)
    assert raw.stats["serial_launches"] == ["main_k0_softmax"]
    assert "default_schedule" not in raw.stats
    compiled = qidao.compile(g, target="cuda")
    assert compiled.stats["serial_launches"] == []
    assert compiled.stats["default_schedule"] == {
        "main_k0_softmax": "rows: 'i0': a row a block (i0 -> blockIdx.x), 32 threads "
        "a row: r_max, r_sum, r_norm block-stride, reductions combined across the row"
    }


@pytest.mark.usefixtures("big_tiles")
def test_the_trace_replays_to_the_same_cuda_c() -> None:
    g, _, _ = build("matmul_64x37x64")
    compiled = compile_cuda(g)
    trace = compiled.stats["schedule"]
    assert 's.cache_read("main_k0_matmul", "k_o_o", "a")' in trace
    replayed = compile_cuda(build("matmul_64x37x64")[0], schedule=trace)
    assert replayed.ir("cuda") == compiled.ir("cuda")


# --- the matmul's CUDA C ---------------------------------------------------------------


def product_kernel(source: str) -> str:
    """The ``__global__`` function of the product nest (after the zeroing)."""
    start = source.index('extern "C" __global__ void main_k0_matmul__i_o_o(')
    return source[start : source.index("\n}\n", start)]


@pytest.mark.usefixtures("big_tiles")
def test_register_tile_cuda_c() -> None:
    """C's 8 x 8 tile per thread: loaded once before the k loop, kept in a local
    array indexed by constants (registers), stored once after it; A's and B's
    tiles in __shared__, A's stored k-major, two stages each (k_o_o
    double-buffered); one barrier per k step."""
    g, _, _ = build("matmul_128x20x128")
    code = product_kernel(compile_cuda(g).ir("cuda"))
    assert "float acc[64];" in code
    assert (
        "__shared__ __align__(32) float a_pack[2 * 1024];  // 2 stages of 128 x 8, "
        "stored in "
    ) in code
    assert "each thread's 8 x 8 slice (16 slices along dimension 0 by i_o_i)" in code
    assert "float b_pack[2 * 1024];  // 2 stages of 8 x 128: each" in code
    k_loop = code.index("for (long long k_o_o = 0; k_o_o < 3; ++k_o_o) {")
    k_end = code.rindex("__syncthreads();")
    loads = [m.start() for m in re.finditer(r"= out\[", code)]
    stores = [m.start() for m in re.finditer(r"\n\s*out\[[^\n]*\] = ", code)]
    assert len(loads) == 64 and len(stores) == 64
    assert max(loads) < k_loop < k_end < min(stores)
    assert re.search(r"acc\[[^\]]*[a-z_]", code) is None  # constant indices only
    assert code.count("__syncthreads();") == 1
    assert "const float v" in code and (
        "a_pack_s[i_o_i * 8 + (k_o_i * 8 + k_i) * 128" in code
    )


@pytest.mark.usefixtures("big_tiles")
def test_slices_under_guarded_thread_loops_stay_per_thread() -> None:
    """M = 50 splits into thread loops with guards: some threads would skip the
    barriers, so the tiles stay each thread's own (local arrays), and correct."""
    g = Graph("main")
    a, b = g.input("a", (50, 16)), g.input("b", (16, 32))
    g.output(g.matmul(a, b))

    def schedule(s: Schedule) -> None:
        gpu_defaults.register_tile(s, "main_k0_matmul", gpu_defaults.MATMUL_TILES[4])

    source = compile_cuda(g, schedule=schedule).ir("cuda")
    assert "__shared__" not in source and "__syncthreads" not in source
    assert "float a_pack[32];" in source and "float b_pack[32];" in source


# --- nvcc --------------------------------------------------------------------------------


def nvcc(source: str, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "k.cu"
    path.write_text(source)
    cmd = [str(NVCC), "-arch=sm_90", *flags, str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@needs_nvcc
@pytest.mark.usefixtures("big_tiles")
@pytest.mark.parametrize("name", sorted(CASES))
def test_nvcc_compiles_the_default_schedules(name: str, tmp_path: Path) -> None:
    g, _, _ = build(name)
    ptx = tmp_path / "k.ptx"
    result = nvcc(compile_cuda(g).ir("cuda"), tmp_path, "--ptx", "-o", str(ptx))
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr


@needs_nvcc
@pytest.mark.parametrize("n", [1024, 2048])
def test_nvcc_keeps_the_tile_in_registers(n: int, tmp_path: Path) -> None:
    """At the bench's sizes: no spills, no local memory in the product kernel
    (the accumulators are registers), 16-byte loads from __shared__, one fma per
    multiply-add, one barrier (k_o_o double-buffered: ``emit/pipeline.py``)."""
    source = compile_cuda(EXAMPLES[f"matmul{n}"].build()).ir("cuda")
    ptx_path = tmp_path / "k.ptx"
    result = nvcc(source, tmp_path, "--ptx", "-o", str(ptx_path))
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    ptx = ptx_path.read_text()
    product = ptx[ptx.index(".entry main_k0_matmul__i_o_o(") :]
    assert "ld.local" not in product and "st.local" not in product
    assert "ld.shared.v4.f32" in product
    assert product.count("bar.sync") == 1
    tm = 4 if n == 1024 else 8
    fmas = product.count("fma.rn.f32")
    assert fmas % (tm * tm) == 0 and fmas >= tm * tm, fmas
    usage = nvcc(
        source, tmp_path, "--cubin", "-o", str(tmp_path / "k.cubin"), "-Xptxas", "-v"
    )
    assert usage.returncode == 0, usage.stderr
    assert "bytes spill" in usage.stderr
    assert re.search(r"[1-9]\d* bytes spill", usage.stderr) is None, usage.stderr


# --- the emulator ------------------------------------------------------------------------


@needs_gxx
@pytest.mark.usefixtures("big_tiles")
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_default_schedules_match_numpy(name: str) -> None:
    g, inputs, want = build(name)
    compiled = compile_cuda(g, device="emulate")
    for got, ref in zip(compiled(*inputs), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@needs_gxx
@pytest.mark.parametrize("name", ["encoder", "resnet"])
def test_emulated_models_with_the_default_schedules(name: str) -> None:
    """The real models: batched and transposed matmuls with epilogues, layer
    norm, softmax, convolutions, padding and pooling, all default-scheduled."""
    example = EXAMPLES[name]
    try:
        model = example.build()
    except ModuleNotFoundError as err:  # they export from torch
        pytest.skip(f"{name} needs {err.name}")
    rng = np.random.default_rng(5)
    inputs = example.inputs(rng)
    compiled = compile_cuda(model, device="emulate")
    assert compiled.stats["serial_launches"] == []
    for got, want in zip(compiled(*inputs), example.reference(*inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_gxx
@pytest.mark.usefixtures("big_tiles")
def test_emulator_catches_a_missing_barrier_in_the_slices() -> None:
    """Without the barrier after the copies, threads read slices other threads
    have not written yet."""
    import dataclasses

    from qidao.runtime.cuda import CudaFunction

    g, inputs, want = build("matmul_64x37x64")
    program = compile_cuda(g).program
    lines = program.source.splitlines()
    kept = [line for line in lines if "// a_pack, b_pack: stage" not in line]
    assert len(kept) == len(lines) - 1
    racy = CudaFunction(dataclasses.replace(program, source="\n".join(kept)), "emulate")
    (got,) = racy(*inputs)
    assert not np.allclose(got, want[0], rtol=1e-4, atol=1e-4)


# --- failures are reported, the loops put back ------------------------------------------


def test_a_failing_register_tile_falls_back_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(s: Schedule, kernel: str, tile: gpu_defaults.MatmulTile) -> str:
        s.split(kernel, "i", tile.tm)  # a primitive applied, then put back
        raise IllegalScheduleError("bind", kernel, "i_o", "a test says no")

    monkeypatch.setattr(gpu_defaults, "register_tile", fail)
    g, _, _ = build("matmul_64x37x64")
    compiled = compile_cuda(g)
    (report,) = compiled.stats["default_schedule"].values()
    assert "'i': a thread per element of C" in report
    assert report.endswith(
        "(no register tile: 16x16: bind: loop 'i_o' in kernel 'main_k0_matmul': a "
        "test says no; 32x32: bind: loop 'i_o' in kernel 'main_k0_matmul': a test "
        "says no; 64x64: bind: loop 'i_o' in kernel 'main_k0_matmul': a test says "
        "no)"
    ), report
    trace = compiled.stats["schedule"]  # the failed attempts' splits are gone
    assert trace.count('s.split("main_k0_matmul", "i", ') == 1  # the fallback's
    assert trace.index('s.reorder("main_k0_matmul", "i", "j", "k")') < trace.index(
        's.split("main_k0_matmul", "i", '
    )


def test_a_failing_kernel_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(s: Schedule, kernel: str) -> str:
        s.split(kernel, "i0", 4)
        raise IllegalScheduleError("split", kernel, "i0", "a test says no")

    monkeypatch.setitem(gpu_defaults.SCHEDULERS, "elementwise", fail)
    g, _, _ = build("elementwise_1000")
    compiled = compile_cuda(g)
    assert compiled.stats["default_schedule"] == {
        "main_k0_fused": "none: split: loop 'i0' in kernel 'main_k0_fused': a test "
        "says no"
    }
    assert compiled.stats["schedule"] == ""
    assert compiled.stats["serial_launches"] == ["main_k0_fused"]
