"""The CUDA path: CUDA C from bound loops, its launch plan, and its results.

Three levels of checking, each skipped with its reason when its tool is missing:

- ``nvcc -arch=sm_90 --ptx`` compiles the generated CUDA C, warning-free;
- the emulator (``device="emulate"``: the same CUDA C built by ``g++`` with an
  emulation header, every block and thread run in turn) gives NumPy's results;
- on a real GPU with pycuda, ``qidao.compile(target="cuda")`` gives NumPy's results.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.cli import main as cli_main
from qidao.compiler.cuda import CompiledCuda, compile_cuda
from qidao.compiler.cuda.emit import CudaEmitError
from qidao.compiler.examples import EXAMPLES
from qidao.compiler.schedule import Schedule
from qidao.frontend.builder import Graph
from qidao.runtime.errors import ArgumentError

RNG = np.random.default_rng(3)
NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Arrays = list[np.ndarray[Any, Any]]


def randn(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(np.float32)


# --- the workloads: graph, GPU schedule, inputs, reference -------------------------


def matmul_case() -> tuple[Graph, Callable[[Schedule], None], Arrays, Arrays]:
    g = Graph("main")
    a = g.input("a", (37, 20))
    b = g.input("b", (20, 45))
    g.output(g.matmul(a, b))
    k = "main_k0_matmul"

    def schedule(s: Schedule) -> None:
        s.bind(k, "i_init", "blockIdx.x")
        s.bind(k, "j_init", "threadIdx.x")
        s.bind(k, "i", "blockIdx.x")
        s.bind(k, "j", "threadIdx.x")

    x, w = randn(37, 20), randn(20, 45)
    return g, schedule, [x, w], [x @ w]


def chain_case() -> tuple[Graph, Callable[[Schedule], None], Arrays, Arrays]:
    g = Graph("main")
    x = g.input("x", (1000,))
    g.output(g.tanh(g.exp(x) * 0.5 + g.relu(x)) - 1.0)
    data = randn(1000)

    def schedule(s: Schedule) -> None:
        (k,) = s.kernels()
        s.split(k, "i0", 128)  # 1000 = 7 * 128 + 104: the last block is guarded
        s.bind(k, "i0_o", "blockIdx.x")
        s.bind(k, "i0_i", "threadIdx.x")

    ref = np.tanh(np.exp(data) * 0.5 + np.maximum(data, 0)) - 1.0
    return g, schedule, [data], [ref]


def softmax_case() -> tuple[Graph, Callable[[Schedule], None], Arrays, Arrays]:
    g = Graph("main")
    x = g.input("x", (9, 50))
    g.output(g.softmax(x))
    data = randn(9, 50)

    def schedule(s: Schedule) -> None:
        s.bind("main_k0_softmax", "i0", "blockIdx.x")  # one row per block

    e = np.exp(data - data.max(axis=1, keepdims=True))
    return g, schedule, [data], [e / e.sum(axis=1, keepdims=True)]


CASES = {"matmul": matmul_case, "chain": chain_case, "softmax": softmax_case}


def check_close(got: Arrays, want: Arrays) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# --- the emitted code ---------------------------------------------------------------


def test_matmul_source_and_plan() -> None:
    g, schedule, _, _ = matmul_case()
    compiled = compile_cuda(g, schedule=schedule)
    source = compiled.ir("cuda")
    assert "const long long i = (long long)blockIdx.x;" in source
    assert "const long long j = (long long)threadIdx.x;" in source
    assert "for (long long k = 0; k < 20; ++k) {" in source
    assert (
        "float* __restrict__ out" in source and "const float* __restrict__ a" in source
    )
    plan = compiled.program.launches
    assert [launch.function for launch in plan] == [
        "main_k0_matmul__i_init",
        "main_k0_matmul__i",
    ]
    assert all(
        launch.grid == (37, 1, 1) and launch.block == (45, 1, 1) for launch in plan
    )
    assert compiled.stats["serial_launches"] == []
    assert "main_k0_matmul__i<<<(37,1,1), (45,1,1)>>>(a, b, output0);" in source


def test_split_gives_a_guard() -> None:
    g, schedule, _, _ = chain_case()
    source = compile_cuda(g, schedule=schedule).ir("cuda")
    assert "if (i0_i < 1000 - i0_o * 128) {" in source


def test_no_bound_loop_is_an_explicit_serial_launch() -> None:
    compiled = compile_cuda(EXAMPLES["softmax"].build())
    (launch,) = compiled.program.launches
    assert launch.serial and launch.grid == (1, 1, 1) and launch.block == (1, 1, 1)
    assert "serial: no bound loop, one thread" in compiled.ir("cuda")
    assert compiled.stats["serial_launches"] == ["main_k0_softmax"]


def test_vector_ops_are_refused() -> None:
    g = Graph("main")
    x = g.input("x", (64,))
    g.output(g.relu(x))

    def schedule(s: Schedule) -> None:
        (k,) = s.kernels()
        s.vectorize(k, "i0", 8)

    with pytest.raises(CudaEmitError, match="vectorize is a CPU primitive"):
        compile_cuda(g, schedule=schedule)


def test_compile_target_cuda_needs_no_gpu_to_emit() -> None:
    g, schedule, _, _ = softmax_case()
    compiled = qidao.compile(g, target="cuda", schedule=schedule)
    assert isinstance(compiled, CompiledCuda)
    assert 'extern "C" __global__ void main_k0_softmax(' in compiled.ir("cuda")
    assert "affine.for" in compiled.ir("schedule")
    with pytest.raises(ValueError, match="unknown stage 'llvm' for target 'cuda'"):
        compiled.ir("llvm")


def test_cli_emits_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["compile", "chain", "--target", "cuda", "--emit", "cuda"]) == 0
    assert "__global__ void main_k0_fused(" in capsys.readouterr().out


# --- nvcc ---------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.parametrize("name", sorted(CASES))
def test_nvcc_compiles_the_source(name: str, tmp_path: Path) -> None:
    g, schedule, _, _ = CASES[name]()
    source = tmp_path / f"{name}.cu"
    source.write_text(compile_cuda(g, schedule=schedule).ir("cuda"))
    cmd = [
        str(NVCC),
        "-arch=sm_90",
        "--ptx",
        "-o",
        str(tmp_path / "k.ptx"),
        str(source),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr
    assert ".entry" in (tmp_path / "k.ptx").read_text()


@needs_nvcc
@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_nvcc_compiles_every_example(mode: str, tmp_path: Path) -> None:
    for name, example in EXAMPLES.items():
        source = tmp_path / f"{name}.cu"
        source.write_text(compile_cuda(example.build(), mode=mode).ir("cuda"))
        cmd = [
            str(NVCC),
            "-arch=sm_90",
            "--ptx",
            "-o",
            str(tmp_path / "k.ptx"),
            str(source),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{name}: {result.stderr}"


# --- the emulator: the generated CUDA C, run on the CPU --------------------------------


@needs_gxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_results_match_numpy(name: str) -> None:
    g, schedule, inputs, reference = CASES[name]()
    compiled = compile_cuda(g, schedule=schedule, device="emulate")
    check_close(compiled(*inputs), reference)


@needs_gxx
@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("name", ["book", "chain", "layernorm", "softmax", "conv3x3"])
def test_emulated_examples_serial(name: str, mode: str) -> None:
    """Unscheduled kernels (serial launches), scratch buffers, constants, strided
    views and ``affine.if`` padding, as the host plan passes them."""
    example = EXAMPLES[name]
    inputs = example.inputs(RNG)
    compiled = compile_cuda(example.build(), mode=mode, device="emulate")
    for got, want in zip(compiled(*inputs), example.reference(*inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_gxx
def test_emulated_conv_bound_to_blocks_and_threads() -> None:
    g = Graph("main")
    x = g.input("x", (2, 3, 9, 9))
    w = g.input("w", (4, 3, 3, 3))
    g.output(g.relu(g.conv2d(x, w, padding=1)))
    xs, ws = randn(2, 3, 9, 9), randn(4, 3, 3, 3)
    compiled0 = qidao.compile(g, schedule=None)
    (want,) = compiled0(xs, ws)
    kernels = Schedule.for_model(g).kernels()
    conv = next(k for k, ops in kernels.items() if "conv2d" in ops)

    def schedule(s: Schedule) -> None:
        loops = s.loops(conv)
        s.bind(conv, "oh", "blockIdx.x")
        s.bind(conv, "n", "blockIdx.y") if "n" in loops else None

    compiled = compile_cuda(g, schedule=schedule, device="emulate")
    assert any(not launch.serial for launch in compiled.program.launches)
    (got,) = compiled(xs, ws)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_gxx
def test_arguments_are_checked() -> None:
    g, schedule, inputs, _ = softmax_case()
    compiled = compile_cuda(g, schedule=schedule, device="emulate")
    with pytest.raises(ArgumentError, match="takes 1 input"):
        compiled()
    with pytest.raises(ArgumentError, match="got shape"):
        compiled(inputs[0][:3])
    with pytest.raises(ArgumentError, match="got dtype float64"):
        compiled(inputs[0].astype(np.float64))
    (y,) = compiled(np.asfortranarray(inputs[0]))  # copied to row-major
    assert y.shape == (9, 50)


# --- a real GPU ------------------------------------------------------------------------


def _gpu_reason() -> str | None:
    try:
        import pycuda.driver as cuda  # type: ignore[import-not-found]

        cuda.init()
        if cuda.Device.count() == 0:
            return "pycuda sees no CUDA device"
    except ImportError:
        return "pycuda is not installed (pip install 'qidao[cuda]')"
    except Exception as err:
        return f"no usable CUDA GPU: {err}"
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_results_match_numpy(name: str) -> None:
    reason = _gpu_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        pytest.skip(reason)
    g, schedule, inputs, reference = CASES[name]()
    check_close(qidao.compile(g, target="cuda", schedule=schedule)(*inputs), reference)
