"""Block-wide rows on the GPU without a GPU: ``block_stride`` (a loop shared by a
block's ``threadIdx.x`` threads, its reduction combined across them) and the
default rows schedule built on it. The emulator runs the CUDA C (warp shuffles
through each warp's slots, ``__syncthreads`` a barrier) against NumPy; nvcc
compiles it for sm_80 and sm_90, warning-free."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.frontend.builder import Graph, Value

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Arrays = list[np.ndarray[Any, Any]]


def softmax_np(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def layernorm_np(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    d = x - x.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)  # type: ignore[no-any-return]


def layernorm(g: Graph, x: Value) -> Value:
    mean = g.reduce_mean(x, axes=[-1], keepdims=True)
    d = x - mean
    var = g.reduce_mean(d * d, axes=[-1], keepdims=True)
    return d / g.sqrt(var + 1e-5)


Case = tuple[
    tuple[int, ...],
    Callable[[Graph, Value], Value],
    Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]],
    str,
]

CASES: dict[str, Case] = {
    # name: (input shape, graph, NumPy, what the default schedule says)
    "softmax_warp_rows": (
        (12, 70),
        lambda g, x: g.softmax(x, axis=-1),
        softmax_np,
        "4 rows a block (i0_o -> blockIdx.x, i0_i -> threadIdx.y), 32 threads a row",
    ),
    "softmax_block_row": (
        (3, 1500),
        lambda g, x: g.softmax(x, axis=-1),
        softmax_np,
        "a row a block (i0 -> blockIdx.x), 256 threads a row",
    ),
    "softmax_3d": (
        (2, 3, 300),
        lambda g, x: g.softmax(x, axis=-1),
        softmax_np,
        "i0 -> blockIdx.y, i1 -> blockIdx.x), 64 threads a row",
    ),
    "layernorm": ((5, 600), layernorm, layernorm_np, "128 threads a row"),
    "sum": (
        (7, 999),
        lambda g, x: g.reduce_sum(x, axes=[1]),
        lambda x: x.sum(axis=1),
        "r0 block-stride",
    ),
    "max_one_row": (
        (1, 5000),
        lambda g, x: g.reduce_max(x, axes=[1]),
        lambda x: x.max(axis=1),
        "512 threads a row",
    ),
    "mean_two_axes": (
        (4, 6, 50),
        lambda g, x: g.reduce_mean(x, axes=[1, 2]),
        lambda x: x.mean(axis=(1, 2)),
        "r0 block-stride",
    ),
}


def build(name: str, dtype: str = "float32") -> tuple[Graph, Arrays, Arrays]:
    shape, make, reference, _ = CASES[name]
    g = Graph("main")
    x = g.input("x", shape, dtype=dtype)
    g.output(make(g, x))
    data = np.random.default_rng(3).standard_normal(shape) * 3
    return g, [data.astype(dtype)], [reference(data)]


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_default_shares_each_row(name: str) -> None:
    g, _, _ = build(name)
    compiled = compile_cuda(g)
    (report,) = compiled.stats["default_schedule"].values()
    assert CASES[name][3] in report, report
    assert "reductions combined across the row" in report
    assert compiled.stats["serial_launches"] == []
    assert 's.block_stride("main_k0_' in compiled.stats["schedule"]


@needs_gxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_emulator_matches_numpy(name: str) -> None:
    g, inputs, want = build(name)
    (got,) = compile_cuda(g, device="emulate")(*inputs)
    np.testing.assert_allclose(got, want[0], rtol=2e-5, atol=2e-5)


@needs_gxx
def test_double_rows_shuffle_eight_bytes() -> None:
    g, inputs, want = build("softmax_block_row", dtype="float64")
    compiled = compile_cuda(g, device="emulate")
    assert "__shared__ double qd_red_double[8]" in compiled.ir("cuda")
    (got,) = compiled(*inputs)
    np.testing.assert_allclose(got, want[0], rtol=1e-12, atol=1e-14)


def test_the_cuda_c_combines_with_shuffles_and_stores_once() -> None:
    g, _, _ = build("sum")
    source = compile_cuda(g).ir("cuda")
    assert "r0 += 128) {  // block-stride: 128 threads of threadIdx.x" in source
    assert "__shfl_xor_sync(0xffffffffu, acc" in source
    assert "__shared__ float qd_red_float[4];" in source  # 4 warps, one row a block
    assert "if (threadIdx.x == 0) out[" in source
    g, _, _ = build("softmax_warp_rows")
    source = compile_cuda(g).ir("cuda")
    assert "qd_red_float" not in source  # a warp a row: shuffles alone
    assert source.count("__syncthreads();") == 3  # one after each pass


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_every_case_warning_free(arch: str, tmp_path: Path) -> None:
    sources = []
    for name in sorted(CASES):
        g, _, _ = build(name)
        sources.append(compile_cuda(g).ir("cuda").replace("main_k0_", f"{name}_k0_"))
    preamble_end = sources[0].index("\n// grid")
    body = [s[s.index("\n// grid") :] for s in sources]  # one preamble
    (tmp_path / "k.cu").write_text(sources[0][:preamble_end] + "".join(body))
    cmd = [str(NVCC), f"-arch={arch}", "--cubin", "-o", str(tmp_path / "k.cubin")]
    result = subprocess.run(
        [*cmd, str(tmp_path / "k.cu")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr


@needs_gxx
def test_a_hand_written_schedule_and_its_replay() -> None:
    g, inputs, want = build("softmax_block_row")
    kernel = "main_k0_softmax"

    def rows(s: Schedule) -> None:
        s.bind(kernel, "i0", "blockIdx.x")
        s.block_stride(kernel, 64, "r_max", "r_sum", "r_norm")

    compiled = compile_cuda(g, schedule=rows, device="emulate")
    (got,) = compiled(*inputs)
    np.testing.assert_allclose(got, want[0], rtol=2e-5, atol=2e-5)
    trace = compiled.stats["schedule"]
    assert f's.block_stride("{kernel}", 64, "r_max", "r_sum", "r_norm")' in trace
    again = compile_cuda(build("softmax_block_row")[0], schedule=trace)
    assert again.ir("cuda") == compiled.ir("cuda")


def test_passes_one_at_a_time_are_refused_and_leave_the_module() -> None:
    g, _, _ = build("softmax_block_row")
    s = Schedule.for_model(g)
    kernel = "main_k0_softmax"
    s.bind(kernel, "i0", "blockIdx.x")
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match="no barrier orders the read"):
        s.block_stride(kernel, 64, "r_max")
    assert str(s.module) == before
