"""Tensor cores without a GPU: the ``tensorize`` primitive's checks, the WMMA CUDA C
the emitter writes for it (``nvcc -arch=sm_80`` and ``sm_90``, warning-free), the
emulator's ``nvcuda::wmma`` against NumPy, and ``qidao.compile(...,
tensor_cores=...)``.

The references round the inputs as the tensor cores do (TF32: to nearest, ties
away, 10 mantissa bits; FP16: ``np.float16``) and multiply in float64; the
emulator accumulates in f32, so they agree to about 1e-5 here, while the exact
fp32 product is 1e-3 away (the rounding is really there). GPU speed is not
measured here (no GPU): the issue's target is 0.7x cuBLAS at 4096.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.parser import Parser

import qidao
from qidao.compiler.context import make_context
from qidao.compiler.schedule import (
    InvalidArgumentError,
    Schedule,
    ScheduleError,
)
from qidao.compiler.targets.cuda import tensor_cores
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.compiler.targets.cuda.emit import CudaEmitError, emit_kernel
from qidao.frontend.builder import Graph
from qidao.passes.schedule.loops.nest import kernel_functions
from qidao.passes.schedule.tensorize import (
    NotMatmulTileError,
    TileDtypeError,
    TileExtentError,
    TileStrideError,
    WarpMappingError,
)

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Array = np.ndarray[Any, Any]
K = "main_k0_matmul"
KERNELS = Path(__file__).parents[3] / "filecheck/passes/schedule/tensorize.mlir"
"""The FileCheck test's kernels: the example and one per refusal."""
PRECISIONS = {"tf32": "wmma_tf32", "fp16": "wmma_f16"}


def matmul(m: int, k: int, n: int) -> Graph:
    g = Graph("main")
    a, b = g.input("a", (m, k)), g.input("b", (k, n))
    g.output(g.matmul(a, b))
    return g


def inputs(m: int, k: int, n: int, seed: int = 0) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    return a, rng.standard_normal((k, n)).astype(np.float32)


def rounded(x: Array, precision: str) -> Array:
    """``x`` as the tensor cores read it: TF32 (round to nearest, ties away from
    zero, at 13 bits below f32's mantissa) or half."""
    if precision == "fp16":
        return x.astype(np.float16).astype(np.float64)
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


def check_against_numpy(
    compiled: CompiledCuda, shape: tuple[int, int, int], precision: str
) -> None:
    """The emulated result equals NumPy's product of the rounded inputs (float64)
    to 1e-4, and is farther from the exact fp32 product (the rounding happened)."""
    a, b = inputs(*shape)
    (got,) = compiled(a, b)
    want = rounded(a, precision).astype(np.float64) @ rounded(b, precision)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    exact = a.astype(np.float64) @ b
    assert np.abs(got - exact).max() > 10 * np.abs(got - want).max()


def warp_tiles(precision: str, warp: int = 32) -> Callable[[Schedule], None]:
    """The tensor-core schedule written out: 2 x 2 warps of ``warp x warp`` a block,
    C in each warp's fragments, A and B staged, every tile tensorized."""
    kt = 8 if precision == "tf32" else 16

    def schedule(s: Schedule) -> None:
        s.split(K, "i", warp)
        s.split(K, "i_o", 2)
        s.split(K, "j", warp)
        s.split(K, "j_o", 2)
        s.reorder(K, "i_o_o", "j_o_o", "i_o_i", "j_o_i", "k", "i_i", "j_i")
        s.bind(K, "i_o_o", "blockIdx.y")
        s.bind(K, "j_o_o", "blockIdx.x")
        s.bind(K, "i_o_i", "threadIdx.z")
        s.bind(K, "j_o_i", "threadIdx.y")
        s.cache_write(K, "j_o_i")
        s.block_stride(K, 32, "j_o_i_cw_i0", "j_o_i_wb_i0")
        s.split(K, "k", 32)
        s.split(K, "k_o", 1)
        s.cache_read(K, "k_o_o", "a")
        s.cache_read(K, "k_o_i", "b")
        s.split(K, "i_i", 16)
        s.split(K, "j_i", 16)
        s.split(K, "k_i", kt)
        s.reorder(K, "k_i_o", "i_i_o", "j_i_o", "i_i_i", "j_i_i", "k_i_i")
        s.unroll(K, s.fuse(K, "i_i_o", "j_i_o"), 0)
        for name in s.loops(K):
            if name == "i_i_i" or name.startswith("i_i_i_u"):
                s.tensorize(K, name, PRECISIONS[precision])

    return schedule


@pytest.fixture
def big_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The largest block tile that divides, as at the sizes that fill a GPU."""
    monkeypatch.setattr(tensor_cores, "MIN_BLOCKS", 1)


# --- the primitive ----------------------------------------------------------------------


def test_tensorize_is_recorded_and_replays() -> None:
    s = Schedule.for_model(matmul(64, 64, 64))
    warp_tiles("tf32")(s)
    assert 's.tensorize("main_k0_matmul", "i_i_i", "wmma_tf32")' in s.python()
    assert (
        'tensorize{kernel="main_k0_matmul" loop="i_i_i_u3" intrinsic="wmma_tf32"}'
        in s.pipeline()
    )
    marked = [
        op.attributes["qd.tensorize"]
        for op in kernel_functions(s.module)[K].walk()
        if "qd.tensorize" in op.attributes
    ]
    assert len(marked) == 4  # a warp's 32 x 32: 2 x 2 tiles
    for trace in (s.python(), s.pipeline()):
        again = Schedule.replay(Schedule.for_model(matmul(64, 64, 64)).module, trace)
        assert str(again.module) == str(s.module)


REFUSALS: list[tuple[str, str, str, type[ScheduleError], str]] = [
    ("k", "i_t", "wmma_bf16", InvalidArgumentError, "unknown intrinsic"),
    ("k", "i_t", "wmma_f16", TileExtentError, "run 16 x 16 x 8"),
    ("k", "j_t", "wmma_tf32", NotMatmulTileError, "perfect nest of three loops"),
    ("k", "tj", "wmma_tf32", NotMatmulTileError, "multiply-accumulate"),
    ("k_sub", "i_t", "wmma_tf32", NotMatmulTileError, "arith.subf"),
    ("k_f64", "i_t", "wmma_tf32", TileDtypeError, "holds f64"),
    ("k_stride", "i_t", "wmma_tf32", TileStrideError, "unit stride"),
    ("k_ldm", "i_t", "wmma_tf32", TileStrideError, "leading dimension of 10"),
    ("k_global_f16", "i_t", "wmma_f16", TileDtypeError, "cache_read it"),
    ("k_serial", "i_t", "wmma_tf32", WarpMappingError, "bound to the GPU"),
    ("k_lanes", "i_t", "wmma_tf32", WarpMappingError, "has no lanes"),
    ("k_x", "i_t", "wmma_tf32", WarpMappingError, "warp's 32 lanes"),
    ("k_64", "i_t", "wmma_tf32", WarpMappingError, "2 warps a row"),
]


@pytest.mark.parametrize(("kernel", "loop", "intrinsic", "error", "why"), REFUSALS)
def test_each_refusal_names_kernel_loop_and_reason(
    kernel: str, loop: str, intrinsic: str, error: type[ScheduleError], why: str
) -> None:
    """The kernels of the FileCheck test, each refused with its ``ScheduleError``
    subclass, and left as they were."""
    module = Parser(make_context(), KERNELS.read_text()).parse_module()
    before = str(module)
    with pytest.raises(error) as caught:
        Schedule(module).tensorize(kernel, loop, intrinsic)
    assert f"tensorize: loop '{loop}' in kernel '{kernel}': " in str(caught.value)
    assert why in str(caught.value)
    assert str(module) == before


def test_a_tile_is_tensorized_once() -> None:
    module = Parser(make_context(), KERNELS.read_text()).parse_module()
    s = Schedule(module)
    s.tensorize("k", "i_t", "wmma_tf32")
    with pytest.raises(NotMatmulTileError, match="tensorized already"):
        s.tensorize("k", "i_t", "wmma_tf32")


# --- the CUDA C -------------------------------------------------------------------------


def product(source: str) -> str:
    """The ``__global__`` function of the product nest."""
    start = source.index('extern "C" __global__ void main_k0_matmul__i_o_o(')
    return source[start : source.index("\n}\n", start)]


@pytest.mark.usefixtures("big_tiles")
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_the_default_tensor_core_schedule_as_wmma(precision: str) -> None:
    """A 128 x 128 block of 2 x 2 warps: each warp's 64 x 64 of C in 16
    accumulator fragments, loaded before the k loop and stored after it; per
    step of k, 4 A and 4 B fragments feeding 16 mma_sync; A and B rounded by
    their staging copies."""
    compiled = compile_cuda(matmul(128, 64, 128), tensor_cores=precision)
    (report,) = compiled.stats["default_schedule"].values()
    assert (
        "tensor cores (wmma_" in report
        and "128x128 tile per block of 2x2 warps" in (report)
    )
    source = compiled.ir("cuda")
    assert "#ifdef __CUDACC__\n#include <mma.h>\n#endif" in source
    code = product(source)
    k = 8 if precision == "tf32" else 16
    assert (
        code.count(f"wmma::fragment<wmma::accumulator, 16, 16, {k}, float> acc[16];")
        == 1
    )
    assert "float acc[" not in code
    k_loop = code.index("for (long long k_o_o = 0;")
    loads = [code.index(f"wmma::load_matrix_sync(acc[{q}], ") for q in range(16)]
    stores = [
        code.index(f"wmma::store_matrix_sync(qd_out_1{'' if q == 0 else ' + '}")
        for q in (0, 1)
    ]
    assert max(loads) < k_loop < min(stores)
    assert code.count("wmma::mma_sync(") == 16
    assert code.count("wmma::load_matrix_sync(qd_a") == 4
    assert code.count("wmma::load_matrix_sync(qd_b") == 4
    if precision == "tf32":
        assert "wmma::precision::tf32, wmma::col_major> qd_a;" in code
        assert "] = wmma::__float_to_tf32(v" in code
        assert "qd_to_tf32(" not in code  # rounded when staged
    else:
        assert "wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> qd_a;" in code
        assert "reinterpret_cast<__half*>(a_pack)[" in code
        assert "= __float2half_rn(v" in code


def test_the_default_trace_replays_to_the_same_cuda_c() -> None:
    compiled = compile_cuda(matmul(64, 32, 64), tensor_cores="fp16")
    trace = compiled.stats["schedule"]
    assert 's.tensorize("main_k0_matmul", "i_i_i", "wmma_f16")' in trace
    assert 's.block_stride("main_k0_matmul", 32, "j_o_i_cw_i0", "j_o_i_wb_i0")' in trace
    replayed = compile_cuda(matmul(64, 32, 64), schedule=trace)
    assert replayed.ir("cuda") == compiled.ir("cuda")


def test_without_the_option_the_matmul_stays_on_cuda_cores() -> None:
    compiled = compile_cuda(matmul(128, 64, 128))
    (report,) = compiled.stats["default_schedule"].values()
    assert "tensor cores" not in report and "wmma" not in compiled.ir("cuda")


@needs_nvcc
@pytest.mark.usefixtures("big_tiles")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_nvcc_compiles_the_wmma_code(precision: str, arch: str, tmp_path: Path) -> None:
    """Warning-free; in PTX the accumulators stay in registers (no local memory),
    and each A fragment feeds 4 mma (the 4 x 4 tiles of a warp share them)."""
    source = compile_cuda(matmul(128, 64, 128), tensor_cores=precision).ir("cuda")
    cu, ptx = tmp_path / "k.cu", tmp_path / "k.ptx"
    cu.write_text(source)
    cmd = [str(NVCC), f"-arch={arch}", "--ptx", "-o", str(ptx), str(cu)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr
    text = ptx.read_text()
    code = text[text.index(".entry main_k0_matmul__i_o_o(") :]
    assert "ld.local" not in code and "st.local" not in code
    mma = code.count("wmma.mma.sync")
    assert mma >= 16 and mma == 4 * code.count("wmma.load.a.sync")
    assert code.count("wmma.store.d.sync") == 16


# --- the emulator ------------------------------------------------------------------------


@needs_gxx
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (128, 64, 96)])
def test_emulated_tensor_cores_match_numpy(
    shape: tuple[int, int, int], precision: str
) -> None:
    """The default tensor-core schedule (32 x 32 blocks at these sizes)."""
    compiled = compile_cuda(matmul(*shape), tensor_cores=precision, device="emulate")
    (report,) = compiled.stats["default_schedule"].values()
    assert "tensor cores" in report, report
    check_against_numpy(compiled, shape, precision)


@needs_gxx
def test_emulated_batched_matmul_with_an_epilogue() -> None:
    """relu(a @ b + c), a batch of 3: the batch on blockIdx.z (the accumulator a
    1 x 16 x 16 buffer), the epilogue its own launch."""
    g = Graph("main")
    a, b = g.input("a", (3, 64, 32)), g.input("b", (3, 32, 64))
    c = g.input("c", (64,))
    g.output(g.relu(g.matmul(a, b) + c))
    compiled = compile_cuda(g, tensor_cores="fp16", device="emulate")
    (report,) = compiled.stats["default_schedule"].values()
    assert "tensor cores (wmma_f16" in report and "b0 -> blockIdx.z" in report, report
    rng = np.random.default_rng(1)
    xs = [
        rng.standard_normal(s).astype(np.float32)
        for s in ((3, 64, 32), (3, 32, 64), (64,))
    ]
    (got,) = compiled(*xs)
    product = rounded(xs[0], "fp16") @ rounded(xs[1], "fp16")
    np.testing.assert_allclose(
        got, np.maximum(product + xs[2], 0), rtol=1e-4, atol=1e-4
    )


@needs_gxx
@pytest.mark.usefixtures("big_tiles")
def test_emulated_128x128_blocks_of_64x64_warps() -> None:
    compiled = compile_cuda(matmul(128, 32, 128), tensor_cores="tf32", device="emulate")
    assert "128x128 tile per block" in compiled.stats["default_schedule"][K]
    check_against_numpy(compiled, (128, 32, 128), "tf32")


@needs_gxx
def test_a_written_out_schedule_matches_numpy() -> None:
    """``warp_tiles``, FP16, with 32 x 32 warps (4 fragments each)."""
    schedule = warp_tiles("fp16", warp=32)
    compiled = compile_cuda(matmul(64, 32, 64), schedule=schedule, device="emulate")
    check_against_numpy(compiled, (64, 32, 64), "fp16")


@needs_gxx
def test_lanes_sharing_a_tile_of_global_c() -> None:
    """No accumulator and no staging: the tile's head is the block-stride loop
    (the lanes share its rows), C loaded, multiplied into and stored by each
    tile, A and B read from global memory and rounded in the fragments."""

    def schedule(s: Schedule) -> None:
        s.split(K, "i", 16)
        s.split(K, "i_o", 2)
        s.split(K, "j", 16)
        s.split(K, "j_o", 2)
        s.reorder(K, "i_o_o", "j_o_o", "i_o_i", "j_o_i", "k", "i_i", "j_i")
        s.bind(K, "i_o_o", "blockIdx.y")
        s.bind(K, "j_o_o", "blockIdx.x")
        s.bind(K, "i_o_i", "threadIdx.z")
        s.bind(K, "j_o_i", "threadIdx.y")
        s.split(K, "k", 8)
        s.reorder(K, "k_o", "i_i", "j_i", "k_i")
        s.block_stride(K, 32, "i_i")
        s.tensorize(K, "i_i", "wmma_tf32")

    compiled = compile_cuda(matmul(64, 24, 32), schedule=schedule, device="emulate")
    code = product(compiled.ir("cuda"))
    assert "qd_to_tf32(qd_a);" in code and "wmma::store_matrix_sync(out + " in code
    check_against_numpy(compiled, (64, 24, 32), "tf32")


# --- the emitter's refusals ---------------------------------------------------------------


def kernel_source(name: str) -> str:
    """One kernel of the FileCheck test, as text."""
    text = KERNELS.read_text()
    start = text.index(f"\nfunc.func private @{name}(") + 1
    return text[start : text.index("\n}\n", start) + 3]


def test_the_emitter_refuses_other_uses_of_an_accumulator() -> None:
    """A load of ``%acc`` besides the tile and its copies: a fragment's elements
    are not addressable."""
    text = kernel_source("k").replace(
        "    affine.for %tj = 0 to 2 {",
        "    %peek = affine.load %acc[0, 0] : memref<16x32xf32>\n"
        "    affine.for %tj = 0 to 2 {",
    )
    module = Parser(make_context(), text).parse_module()
    Schedule(module).tensorize("k", "i_t", "wmma_tf32")
    with pytest.raises(
        CudaEmitError, match=r"'affine\.load' uses it outside the tiles"
    ):
        emit_kernel(kernel_functions(module)["k"])


def test_the_emitter_refuses_an_operand_each_thread_holds() -> None:
    """With no block loop around them the copies of ``k_f16`` are not staged in
    ``__shared__``: each lane would hold its own A."""
    module = Parser(make_context(), kernel_source("k_f16")).parse_module()
    Schedule(module).tensorize("k_f16", "i_t", "wmma_f16")
    with pytest.raises(CudaEmitError, match="not staged in __shared__"):
        emit_kernel(kernel_functions(module)["k_f16"])


# --- the option ----------------------------------------------------------------------------


def test_the_option_is_checked() -> None:
    g = matmul(32, 32, 32)
    with pytest.raises(ValueError, match="only target='cuda' has"):
        qidao.compile(g, target="cpu", tensor_cores="tf32")
    with pytest.raises(ValueError, match="'tf32' or 'fp16'; got 'bf16'"):
        qidao.compile(g, target="cuda", tensor_cores="bf16")
    with pytest.raises(ValueError, match="tensorize its tiles instead"):
        qidao.compile(g, target="cuda", tensor_cores="fp16", schedule=None)
    assert qidao.compile(g, target="cpu", tensor_cores=None) is not None


@pytest.mark.parametrize(
    ("shape", "why"),
    [
        ((37, 32, 45), "M x N = 37 x 45: no tensor-core block tile divides it ("),
        ((64, 20, 64), "K = 20 is not a multiple of 32 or 16"),
    ],
)
def test_the_report_says_why_not(shape: tuple[int, int, int], why: str) -> None:
    """The fp32 schedule instead, and the reason."""
    report = compile_cuda(matmul(*shape), tensor_cores="tf32").stats["default_schedule"]
    assert f"(no tensor cores: {why}" in report[K], report
