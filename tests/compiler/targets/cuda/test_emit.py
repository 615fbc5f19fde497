"""The CUDA path: CUDA C from bound loops, its launch plan, and its results.

Three levels of checking, each skipped with its reason when its tool is missing:

- ``nvcc -arch=sm_90 --ptx`` compiles the generated CUDA C, warning-free;
- the emulator (``device="emulate"``: the same CUDA C built by ``g++`` with an
  emulation header, every block and thread run in turn) gives NumPy's results;
- on a real GPU with pycuda, ``qidao.compile(target="cuda")`` gives NumPy's results.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

import qidao
from qidao.bench.cuda.workloads import (
    BENCH_WORKLOADS,
    TEST_WORKLOADS,
    GpuWorkload,
    tiled_matmul,
)
from qidao.compiler.context import make_context
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.compiler.targets.cuda.emit import CudaEmitError, emit_kernel
from qidao.examples import EXAMPLES
from qidao.frontend.builder import Graph
from qidao.runtime import cuda as runtime_cuda
from qidao.runtime.cuda import CudaFunction, PycudaDevice, cuda_unavailable_reason
from qidao.runtime.errors import ArgumentError
from qidao.tools.cli import main as cli_main

RNG = np.random.default_rng(3)


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    """``qidao.compile(model, target="cuda", ...)``, typed as what it returns."""
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Arrays = list[np.ndarray[Any, Any]]


def randn(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(np.float32)


# --- the workloads: graph, GPU schedule, inputs, reference -------------------------
# (qidao/bench/cuda/workloads.py: the same ones `qidao bench-cuda` times)

Case = tuple[Graph, Callable[[Schedule], None] | str, Arrays, Arrays]


def case(workload: GpuWorkload) -> Case:
    inputs = workload.inputs(RNG)
    return workload.build(), workload.schedule, inputs, workload.reference(*inputs)


def matmul_case() -> Case:
    return case(TEST_WORKLOADS["matmul"])


def chain_case() -> Case:
    return case(TEST_WORKLOADS["chain"])


def softmax_case() -> Case:
    return case(TEST_WORKLOADS["softmax"])


def tiled_matmul_case(m: int, k: int, n: int, x_at: str = "k_o_o") -> Case:
    return case(tiled_matmul(m, k, n, x_at))


def check_close(got: Arrays, want: Arrays, name: str) -> None:
    """Within workload ``name``'s tolerance (NaN never passes)."""
    TEST_WORKLOADS[name].check(got, want)


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
    compiled = compile_cuda(EXAMPLES["softmax"].build(), schedule=None)
    (launch,) = compiled.program.launches
    assert launch.serial and launch.grid == (1, 1, 1) and launch.block == (1, 1, 1)
    assert "serial: no bound loop, one thread" in compiled.ir("cuda")
    assert compiled.stats["serial_launches"] == ["main_k0_softmax"]


def test_vector_accumulators_are_refused() -> None:
    """A vectorized reduction (a vector carried by a loop) names the kernel and
    the loop; vector loads, stores and arithmetic are emitted (test_vectors.py)."""
    g = Graph("main")
    x = g.input("x", (64,))
    g.output(g.reduce_sum(x, axes=[0]))

    def schedule(s: Schedule) -> None:
        (k,) = s.kernels()
        s.vectorize(k, "r0", 8)

    with pytest.raises(
        CudaEmitError, match=r"kernel 'main_k0_reduce_sum'.*loop 'r0' carries"
    ):
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


# --- shared memory: cache_read tiles staged by a block's threads --------------------


def test_cache_read_in_a_block_is_staged_in_shared_memory() -> None:
    g, schedule, _, _ = tiled_matmul_case(64, 48, 80, x_at="j_o")
    source = compile_cuda(g, schedule=schedule).ir("cuda")
    assert "// __shared__ 4096 of 49152 bytes: x_pack (3072 bytes, at loop 'j_o')" in (
        source
    )
    assert "const long long qd_tid = (long long)threadIdx.x + 16 * (long long)" in (
        source
    )
    assert "__shared__ __align__(32) float x_pack[768];" in source
    assert "__shared__ __align__(32) float w_pack[256];" in source
    assert "for (long long k_o_cr = qd_tid; k_o_cr < 256; k_o_cr += 256) {" in source
    assert "const long long k_o_cr_i0 = k_o_cr / 16;" in source
    assert "const long long j_o_cr_i1 = j_o_cr % 48;" in source
    # one barrier after the copies (x's waits for w's, at the top of the k_o loop
    # that runs at least once), one before the next copy of w overwrites the tile
    order = [
        "__shared__ __align__(32) float x_pack",
        "for (long long k_o = 0; k_o < 3; ++k_o) {",
        "__shared__ __align__(32) float w_pack",
        "__syncthreads();  // x_pack, w_pack staged",
        "// loop 'i_i' bound to threadIdx.y",
        "__syncthreads();  // the next copy into w_pack waits",
    ]
    positions = [source.index(text) for text in order]
    assert positions == sorted(positions)
    assert source.count("__syncthreads();") == 2


def test_staging_copies_are_guarded_at_the_edges() -> None:
    g, schedule, _, _ = tiled_matmul_case(50, 37, 70)
    source = compile_cuda(g, schedule=schedule).ir("cuda")
    assert "if (k_o_o_cr_i0 < 50 - i_o * 16 && k_o_o_cr_i1 < 37 - k_o_o * 16) {" in (
        source
    )
    # after both copies, and at the end of k_o_i, which also ends k_o_o's body
    assert source.count("__syncthreads();") == 2


def test_cache_read_inside_a_thread_loop_stays_per_thread() -> None:
    g, schedule, _, _ = matmul_case()

    def per_thread(s: Schedule) -> None:
        assert callable(schedule)
        schedule(s)
        s.cache_read("main_k0_matmul", "j", "b")  # j is bound to threadIdx.x

    source = compile_cuda(g, schedule=per_thread).ir("cuda")
    assert "float b_pack[1];" in source
    assert "__shared__" not in source and "__syncthreads" not in source


def test_shared_memory_over_48_kib_is_refused() -> None:
    g, schedule, _, _ = tiled_matmul_case(32, 1024, 32, x_at="j_o")
    with pytest.raises(
        CudaEmitError,
        match=r"kernel 'main_k0_matmul': launch 'main_k0_matmul__i_o': its "
        r"__shared__ staging buffers take 66560 bytes \(%x_pack at loop 'j_o': "
        r"65536 bytes, .*over the 49152 bytes \(48 KiB\)",
    ):
        compile_cuda(g, schedule=schedule)


def _kernel(source: str) -> func.FuncOp:
    module = Parser(make_context(), source).parse_module()
    module.verify()
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


NON_UNIFORM = """
func.func @k(%n: memref<1xindex> {llvm.noalias}, %x: memref<64xf32> {llvm.noalias},
             %y: memref<64xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %b = 0 to 4 {
    %m = affine.load %n[0] : memref<1xindex>
    affine.for %s = 0 to %m {
      %x_pack = memref.alloca() : memref<16xf32>
      affine.for %s_cr_i0 = 0 to 16 {
        %v = affine.load %x[%b * 16 + %s_cr_i0] : memref<64xf32>
        affine.store %v, %x_pack[%s_cr_i0] : memref<16xf32>
      } {qd.loop = "s_cr_i0"}
      affine.for %t = 0 to 16 {
        %w = affine.load %x_pack[%t] : memref<16xf32>
        affine.store %w, %y[%b * 16 + %t] : memref<64xf32>
      } {qd.loop = "t", qd.bind = "threadIdx.x"}
    } {qd.loop = "s"}
  } {qd.loop = "b", qd.bind = "blockIdx.x"}
  func.return
}
"""


def test_staging_under_a_loaded_bound_is_refused() -> None:
    with pytest.raises(
        CudaEmitError,
        match=r"kernel 'k': loop 's': %x_pack cannot be staged in __shared__ memory: "
        r"the bounds of loop 's' around it use a value loaded from memory",
    ):
        emit_kernel(_kernel(NON_UNIFORM))


def test_bind_checks_are_rerun_on_the_final_nest() -> None:
    """A write outside the innermost bound loop (every thread would run it)."""
    source = NON_UNIFORM.replace(
        "%m = affine.load %n[0] : memref<1xindex>",
        "%m = affine.load %n[0] : memref<1xindex>\n"
        "    %z = arith.constant 0.0 : f32\n"
        "    affine.store %z, %y[0] : memref<64xf32>",
    )
    with pytest.raises(
        CudaEmitError,
        match=r"the nest of loop 'b' no longer passes bind's checks .*'affine.store' "
        r"writes %y outside the innermost bound loop 't'",
    ):
        emit_kernel(_kernel(source))


@needs_gxx
def test_emulator_catches_a_missing_barrier() -> None:
    """Without the barrier after the copies of x and w, threads read tiles that
    others have not written yet: the emulator's threads show it."""
    g, schedule, inputs, reference = tiled_matmul_case(64, 48, 80)
    compiled = compile_cuda(g, schedule=schedule)
    program = compiled.program
    lines = program.source.splitlines()
    kept = [line for line in lines if "// x_pack, w_pack staged" not in line]
    assert len(kept) == len(lines) - 1
    racy = CudaFunction(dataclasses.replace(program, source="\n".join(kept)), "emulate")
    (got,) = racy(*inputs)
    assert not np.allclose(got, reference[0], rtol=1e-5, atol=1e-5)


# --- nvcc ---------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.parametrize("name", sorted(TEST_WORKLOADS))
def test_nvcc_compiles_the_source(name: str, tmp_path: Path) -> None:
    g, schedule, _, _ = case(TEST_WORKLOADS[name])
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
    ptx = (tmp_path / "k.ptx").read_text()
    assert ".entry" in ptx
    if name.startswith("tiled") or name.endswith("staged"):
        assert ".shared .align 32 .b8" in ptx and "bar.sync" in ptx


@needs_nvcc
@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_nvcc_compiles_every_example(mode: str, tmp_path: Path) -> None:
    for name, example in EXAMPLES.items():
        if name.startswith("gemv_q"):  # GGUF blocks: CPU only (test below)
            print(f"{name}: skipped, tg.matmul_blockq has no CUDA kernel")
            continue
        try:
            model = example.build()
        except ModuleNotFoundError as err:  # the real models export from torch
            if err.name != "torch":
                raise
            print(f"{name}: skipped, torch is not installed")
            continue
        source = tmp_path / f"{name}.cu"
        source.write_text(compile_cuda(model, mode=mode).ir("cuda"))
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
@pytest.mark.parametrize("name", sorted(TEST_WORKLOADS))
def test_emulated_results_match_numpy(name: str) -> None:
    g, schedule, inputs, reference = case(TEST_WORKLOADS[name])
    compiled = compile_cuda(g, schedule=schedule, device="emulate")
    check_close(compiled(*inputs), reference, name)


@needs_gxx
@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("name", ["book", "chain", "layernorm", "softmax", "conv3x3"])
def test_emulated_examples_serial(name: str, mode: str) -> None:
    """Unscheduled kernels (serial launches), scratch buffers, constants, strided
    views and ``affine.if`` padding, as the host plan passes them."""
    example = EXAMPLES[name]
    inputs = example.inputs(RNG)
    compiled = compile_cuda(example.build(), mode=mode, device="emulate", schedule=None)
    for got, want in zip(compiled(*inputs), example.reference(*inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_gxx
def test_emulated_conv_bound_to_blocks_and_threads() -> None:
    g = Graph("main")
    x = g.input("x", (2, 3, 9, 9))
    w = g.input("w", (4, 3, 3, 3))
    g.output(g.relu(g.conv2d(x, w, padding=1)))
    xs, ws = randn(2, 3, 9, 9), randn(4, 3, 3, 3)
    # NumPy's conv (no CPU JIT here, so the file runs wherever nvcc or g++ does)
    padded = np.pad(xs, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    want = np.maximum(np.einsum("nchwij,ocij->nohw", windows, ws), 0)
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


def sin_cos_graph(dtype: str, n: int = 1000) -> tuple[Graph, Arrays, Arrays]:
    """sin(x) and cos(x) * x over ``n`` values of ``dtype``, big angles included."""
    g = Graph("main")
    x = g.input("x", (n,), dtype)
    g.output(g.sin(x), g.cos(x) * x)
    xs = np.random.default_rng(5).uniform(-1e3, 1e3, n).astype(dtype)
    wide = xs.astype(np.float64)
    return g, [xs], [np.sin(wide).astype(dtype), (np.cos(wide) * wide).astype(dtype)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sin_cos_emit_the_c_functions_of_their_type(dtype: str) -> None:
    g, _, _ = sin_cos_graph(dtype)
    source = qidao.compile(g, target="cuda").ir("cuda")
    suffix = "f" if dtype == "float32" else ""
    assert f"sin{suffix}(" in source and f"cos{suffix}(" in source
    if dtype == "float64":
        assert "sinf(" not in source and "cosf(" not in source


@needs_gxx
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_emulated_sin_cos_match_numpy(dtype: str) -> None:
    g, inputs, want = sin_cos_graph(dtype)
    got = compile_cuda(g, device="emulate")(*inputs)
    rtol = 1e-6 if dtype == "float32" else 1e-15
    for got_, want_ in zip(got, want, strict=True):
        assert got_.dtype == want_.dtype
        np.testing.assert_allclose(got_, want_, rtol=rtol, atol=rtol)


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


def test_every_bench_workload_compiles_to_cuda() -> None:
    """The bench's big sizes emit (no GPU needed): launch shapes within CUDA's
    limits, nothing serial."""
    for name, workload in BENCH_WORKLOADS.items():
        compiled = compile_cuda(workload.build(), schedule=workload.schedule)
        launches = compiled.program.launches
        assert launches, name
        for launch in launches:
            assert not launch.serial, f"{name}: {launch.function} is serial"
            assert np.prod(launch.block) <= 1024, (name, launch.block)
            assert launch.grid[1] <= 65535 and launch.grid[2] <= 65535, name


def test_no_gpu_reason_is_given_without_raising() -> None:
    reason = cuda_unavailable_reason()
    assert reason is None or ("pycuda" in reason or "CUDA" in reason), reason


class FakeDriver:
    """``pycuda.driver`` as far as ``PycudaDevice`` uses it: device memory as byte
    arrays at fake addresses, launches recorded (the kernels do nothing)."""

    def __init__(self) -> None:
        self.memory: dict[int, np.ndarray[Any, Any]] = {}
        self.launches: list[tuple[str, Any, Any, tuple[Any, ...]]] = []
        self.loaded: list[bytes] = []
        driver = self

        class Alloc:
            def __init__(self, nbytes: int) -> None:
                self.address = 0x1000 * (len(driver.memory) + 1)
                driver.memory[self.address] = np.zeros(nbytes, np.uint8)

            def __int__(self) -> int:
                return self.address

            def free(self) -> None:
                del driver.memory[self.address]

        class Function:
            def __init__(self, name: str) -> None:
                self.name, self.format = name, ""

            def prepare(self, arg_format: str) -> None:
                self.format = arg_format

            def prepared_call(self, grid: Any, block: Any, *args: Any) -> None:
                assert len(args) == len(self.format)
                driver.launches.append((self.name, grid, block, args))

        class Module:
            def get_function(self, name: str) -> Function:
                return Function(name)

        class Context:
            @staticmethod
            def get_device() -> Any:
                return types.SimpleNamespace(compute_capability=lambda: (9, 0))

            @staticmethod
            def synchronize() -> None:
                pass

        self.Context = Context
        self.Device = types.SimpleNamespace(count=lambda: 1)
        self.mem_alloc = Alloc

        def module_from_buffer(cubin: bytes) -> Module:
            self.loaded.append(cubin)
            return Module()

        self.module_from_buffer = module_from_buffer

    def init(self) -> None:
        pass

    def memset_d8(self, address: int, value: int, nbytes: int) -> None:
        assert type(address) is int
        self.memory[address][:nbytes] = value

    def memcpy_htod(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        assert array.flags.c_contiguous
        raw = array.reshape(-1).view(np.uint8)
        self.memory[int(buffer)][: raw.size] = raw

    def memcpy_dtoh(self, array: np.ndarray[Any, Any], buffer: Any) -> None:
        flat = array.reshape(-1).view(np.uint8)
        flat[:] = self.memory[int(buffer)][: flat.size]


def test_pycuda_launcher_on_a_fake_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``PycudaDevice`` hands pycuda: sm_90 for a 9.0 device, pointer
    arguments as plain ints in the plan's order, grid and block as int tuples,
    buffers poisoned with 0xFF (an output no kernel writes reads back as NaN)."""
    driver = FakeDriver()
    package = types.ModuleType("pycuda")
    auto = types.ModuleType("pycuda.autoprimaryctx")
    auto.context = "primary"  # type: ignore[attr-defined]
    package.driver = driver  # type: ignore[attr-defined]
    package.autoprimaryctx = auto  # type: ignore[attr-defined]
    for name, module in [
        ("pycuda", package),
        ("pycuda.driver", driver),
        ("pycuda.autoprimaryctx", auto),
    ]:
        monkeypatch.setitem(sys.modules, name, module)
    archs: list[str] = []

    def fake_nvcc(source: str, arch: str, kind: str) -> bytes:
        archs.append(arch)
        return b"CUBIN"

    monkeypatch.setattr(runtime_cuda, "compile_with_nvcc", fake_nvcc)
    assert cuda_unavailable_reason() is None
    g, schedule, inputs, _ = tiled_matmul_case(50, 37, 70)
    program = compile_cuda(g, schedule=schedule).program
    function = CudaFunction(program, PycudaDevice())
    assert archs == ["sm_90"] and driver.loaded == [b"CUBIN"]
    (out,) = function(*inputs)
    assert np.isnan(out).all()  # the fake kernels wrote nothing: poison shows
    addresses = {
        b.name: int(buf)
        for b, buf in zip(program.buffers, function._buffers, strict=True)
    }
    assert driver.memory[addresses["x"]].view(np.float32).tolist() == (
        inputs[0].reshape(-1).tolist()
    )
    assert [name for name, *_ in driver.launches] == [
        launch.function for launch in program.launches
    ]
    for (_, grid, block, args), launch in zip(
        driver.launches, program.launches, strict=True
    ):
        assert grid == launch.grid and block == launch.block
        assert all(type(d) is int for d in (*grid, *block))
        assert all(type(a) is int for a in args)
        assert list(args) == [
            addresses[program.buffers[b].name] for b in launch.buffers
        ]
    function.close()
    assert driver.memory == {}


def test_no_driver_and_no_pycuda_are_told_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import builtins

    real_import = builtins.__import__

    def failing(message: str) -> Callable[..., Any]:
        def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
            if name.startswith("pycuda"):
                raise ImportError(message)
            return real_import(name, *args, **kwargs)

        return fake_import

    monkeypatch.delitem(sys.modules, "pycuda.driver", raising=False)
    monkeypatch.setattr(
        builtins, "__import__", failing("libcuda.so.1: cannot open shared object file")
    )
    assert (cuda_unavailable_reason() or "").startswith("no CUDA driver: pycuda cannot")
    monkeypatch.setattr(builtins, "__import__", failing("No module named 'pycuda'"))
    assert (cuda_unavailable_reason() or "").startswith("pycuda is not installed")
    with pytest.raises(runtime_cuda.CudaUnavailableError, match="pycuda is not"):
        PycudaDevice()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_sin_cos_match_numpy(dtype: str) -> None:
    """CUDA's sinf/cosf are within 2 ulp (sin/cos: 2 ulp of double) on any
    argument, without --use_fast_math."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    g, inputs, want = sin_cos_graph(dtype)
    got = qidao.compile(g, target="cuda")(*inputs)
    rtol = 1e-6 if dtype == "float32" else 1e-15
    for got_, want_ in zip(got, want, strict=True):
        assert got_.dtype == want_.dtype
        np.testing.assert_allclose(got_, want_, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(TEST_WORKLOADS))
def test_gpu_results_match_numpy(name: str) -> None:
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    g, schedule, inputs, reference = case(TEST_WORKLOADS[name])
    compiled = qidao.compile(g, target="cuda", schedule=schedule)
    check_close(compiled(*inputs), reference, name)
    check_close(compiled(*inputs), reference, name)  # a second call, same buffers


def test_a_weight_in_gguf_blocks_is_refused_by_name() -> None:
    with pytest.raises(CudaEmitError, match=r"tg.matmul_blockq .* no CUDA kernel"):
        compile_cuda(EXAMPLES["gemv_q8_0"].build())
