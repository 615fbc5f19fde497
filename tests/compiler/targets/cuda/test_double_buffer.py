"""Double-buffered ``__shared__`` staging (``double_buffer``,
``qidao/compiler/targets/cuda/emit/pipeline.py``): the default matmuls run on the
emulator and match NumPy, the primitive's refusals name the kernel and the loop,
and ``nvcc`` compiles the ``cp.async`` code warning-free for sm_80 and sm_90 (the
sm_80 PTX holds ``cp.async``). GPU timings cannot be measured here (no GPU)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.compiler.targets.cuda import tensor_cores
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.compiler.targets.cuda.emit import CudaEmitError
from qidao.frontend.builder import Graph

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
KERNEL = "main_k0_matmul"

Array = np.ndarray[Any, Any]


def matmul(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Graph:
    g = Graph("main")
    a, b = g.input("a", shape_a), g.input("b", shape_b)
    g.output(g.matmul(a, b))
    return g


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


def inputs(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> tuple[Array, Array]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a).astype(np.float32)
    return a, rng.standard_normal(shape_b).astype(np.float32)


def tf32(x: Array) -> Array:
    """``x`` rounded to TF32 as the staging copy rounds it (nearest, ties away)."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


# --- the default matmuls on the emulator ---------------------------------------------

SHAPES = {
    "64x64x64": ((64, 64), (64, 64)),
    "128x48x128": ((128, 48), (48, 128)),
    "k tail 64x40x64": ((64, 40), (40, 64)),  # the last k tile clipped (min)
    "batched 3x32x64x32": ((3, 32, 64), (3, 64, 32)),
    # b0 stays a serial loop around k_o_o: a barrier after k_o_o, before the next
    # b0's first copy overwrites stage 0
    "batched 2x2x32x64x32": ((2, 2, 32, 64), (2, 2, 64, 32)),
}


@needs_gxx
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_default_matmul_double_buffered_matches_numpy(name: str) -> None:
    shape_a, shape_b = SHAPES[name]
    compiled = compile_cuda(matmul(shape_a, shape_b), device="emulate")
    report = compiled.stats["default_schedule"][KERNEL]
    assert "k_o_o double-buffered" in report, report
    assert f's.double_buffer("{KERNEL}", "k_o_o")' in compiled.stats["schedule"]
    source = compiled.ir("cuda")
    assert "__pipeline_memcpy_async(" in source and "[2 * " in source
    a, b = inputs(shape_a, shape_b)
    (got,) = compiled(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_gxx
def test_tensor_core_tf32_double_buffered_matches_numpy() -> None:
    """The rounding copies stay synchronous (no cp.async), still two stages."""
    compiled = compile_cuda(matmul((64, 64), (64, 64)), tensor_cores="tf32")
    report = compiled.stats["default_schedule"][KERNEL]
    assert "tensor cores" in report and "k_o_o double-buffered" in report, report
    source = compiled.ir("cuda")
    assert "__pipeline_memcpy_async" not in source
    assert "wmma::__float_to_tf32" in source and "[2 * " in source
    emulated = compile_cuda(
        matmul((64, 64), (64, 64)), tensor_cores="tf32", device="emulate"
    )
    a, b = inputs((64, 64), (64, 64))
    (got,) = emulated(a, b)
    want = tf32(a).astype(np.float64) @ tf32(b).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_gxx
def test_a_convolution_as_im2col_gets_the_double_buffered_tiles() -> None:
    """Convolution tiles: a 3x3 convolution compiled with ``algo="im2col"`` is one
    matmul over the windows, which takes the register tile with A's and B's
    k-tiles double-buffered; the result matches PyTorch."""
    torch = pytest.importorskip("torch")
    g = Graph("main")
    x, w = g.input("x", (2, 32, 16, 16)), g.input("w", (64, 32, 3, 3))
    g.output(g.relu(g.conv2d(x, w, padding=1)))
    compiled = compile_cuda(g, algo="im2col", device="emulate")
    assert compiled.stats["conv_algo"] == {"conv0": "im2col: algo=im2col"}
    reports = compiled.stats["default_schedule"].values()
    matmuls = [v for v in reports if v.startswith("matmul: ")]
    assert len(matmuls) == 1 and "double-buffered" in matmuls[0], matmuls
    assert "__pipeline_memcpy_async" in compiled.ir("cuda")
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((2, 32, 16, 16)).astype(np.float32)
    ws = rng.standard_normal((64, 32, 3, 3)).astype(np.float32)
    conv = torch.nn.functional.conv2d(
        torch.from_numpy(xs), torch.from_numpy(ws), padding=1
    )
    (got,) = compiled(xs, ws)
    np.testing.assert_allclose(got, torch.relu(conv).numpy(), rtol=1e-4, atol=1e-4)


def test_one_barrier_an_iteration() -> None:
    """The barrier at the top of each k step both publishes stage k and frees stage
    k + 1: none at the end of the iteration (``pipeline.py``'s docstring)."""
    source = compile_cuda(matmul((64, 64), (64, 64))).ir("cuda")
    product = source[source.index("void main_k0_matmul__i_o_o(") :]
    assert product.count("__syncthreads();") == 1
    loop = product.index("for (long long k_o_o = 0;")
    assert product.index("__pipeline_wait_prior(0);", loop) < product.index(
        "__syncthreads();", loop
    )
    assert product.index("__syncthreads();", loop) < product.index(
        "if (k_o_o + 1 < 4)", loop
    )


# --- refusals ----------------------------------------------------------------------------


def scheduled(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Schedule:
    """The schedule stage of a matmul, the default schedule applied but for the
    ``double_buffer`` step (its trace replayed without it)."""
    compiled = compile_cuda(matmul(shape_a, shape_b))
    trace = "".join(
        line + "\n"
        for line in compiled.stats["schedule"].splitlines()
        if "double_buffer" not in line
    )
    s = Schedule.for_model(matmul(shape_a, shape_b))
    s.replay(s.module, trace)
    return s


def test_refuses_a_loop_of_one_trip_and_leaves_the_module() -> None:
    s = scheduled((64, 64), (64, 64))
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match=r"loop 'k_o_i' .* at least 2"):
        s.double_buffer(KERNEL, "k_o_i")
    assert str(s.module) == before


def test_refuses_a_bound_loop_and_a_loop_without_copies() -> None:
    s = scheduled((64, 64), (64, 64))
    with pytest.raises(IllegalScheduleError, match=r"'j_o_i' in kernel .* bound to"):
        s.double_buffer(KERNEL, "j_o_i")
    with pytest.raises(IllegalScheduleError, match="does not start with a cache_read"):
        s.double_buffer(KERNEL, "k_i")


def test_default_declines_two_stages_over_48_kib_and_the_emitter_refuses_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 128 x 128 tensor-core tile stages 32 KiB a k step: two stages are 64
    KiB, so the default goes on without them and says why; asking for them
    anyway is refused by the emitter, naming the kernel and the loop."""
    monkeypatch.setattr(tensor_cores, "MIN_BLOCKS", 1)
    g = matmul((256, 256), (256, 256))
    compiled = compile_cuda(g, tensor_cores="tf32")
    report = compiled.stats["default_schedule"][KERNEL]
    assert "128x128 tile" in report, report
    assert "k_o_o not double-buffered: two stages" in report, report
    forced = compiled.stats["schedule"] + f's.double_buffer("{KERNEL}", "k_o_o")\n'
    with pytest.raises(CudaEmitError, match=r"kernel 'main_k0_matmul'.*65536 bytes"):
        compile_cuda(g, schedule=forced)


# --- nvcc ---------------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("precision", [None, "tf32", "fp16"])
def test_nvcc_compiles_warning_free_with_cp_async(
    arch: str, precision: str | None, tmp_path: Path
) -> None:
    options = {"tensor_cores": precision} if precision else {}
    source = compile_cuda(matmul((128, 64), (64, 128)), **options).ir("cuda")
    assert "[2 * " in source
    path, ptx = tmp_path / "k.cu", tmp_path / "k.ptx"
    path.write_text(source)
    cmd = [str(NVCC), f"-arch={arch}", "--ptx", "-o", str(ptx), str(path)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr
    if precision is None:  # the fp32 copies are cp.async; the rounding ones not
        assert "cp.async" in ptx.read_text()
