"""The CUDA launcher: CUDA C + a launch plan in, a checked NumPy-in/NumPy-out callable
out.

Knows no IR classes: ``qidao.compiler.targets.cuda`` hands it a :class:`CudaProgram`, the
generated source and, as plain data, the buffers (graph inputs, outputs, scratch
buffers, constants) and the launches in order (``__global__`` function, grid, block,
the buffers passed, by index). :class:`CudaFunction` checks every input (count,
type, dtype, shape; non-contiguous arrays are copied), uploads the inputs, runs the
launches in order on one stream (the end of a launch is the only barrier), and
downloads the outputs into fresh arrays; ``upload``/``launch``/``download`` do the
three steps one at a time (``qidao bench-cuda`` times ``launch`` alone), and
``close`` frees the device buffers.

Two devices run a program:

- :class:`PycudaDevice` (``CudaFunction(program)``): compiles the source with
  ``nvcc --cubin -arch=sm_XY`` for the current GPU (nvcc must be on PATH), loads
  the module into the device's primary context (``pycuda.autoprimaryctx``: the
  context the CUDA runtime, and so PyTorch, uses too, so their memory and streams
  mix) and launches with pycuda on the default stream. Device buffers are filled
  with 0xFF bytes when allocated (a NaN in every float, as in the emulator), so a
  kernel that leaves an output element unwritten shows. ``cuda_unavailable_reason``
  says, without raising, why no GPU can be used here; ``event_times`` times GPU
  work with CUDA events. ``scripts/gpu_check.sh`` runs the tests and the bench on
  a GPU machine.
- :class:`EmulatedDevice` (``CudaFunction(program, device="emulate")``): compiles
  the same source as C++20 with ``g++`` and an emulation header, and runs the grid
  on the CPU: the threads of a block are real threads (``std::thread``), with
  ``threadIdx``/``blockIdx`` thread-local, ``__shared__`` arrays as static
  arrays shared by them, ``__syncthreads()`` a ``std::barrier``, and
  ``__shfl_xor_sync`` an exchange through a warp's 32 slots between two arrivals
  at the warp's own barrier (each 32 consecutive threads of the block); the blocks
  run one after the other (the same threads, a barrier between two blocks, so a
  block's ``__shared__`` arrays are free when the next one starts). A missing
  barrier shows as a wrong result (or as a different one from run to run), up to
  the order of float operations inside CUDA's math library. Slow; for tests.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from qidao.errors import QidaoError
from qidao.runtime.cuda_emulate_wmma import wmma_emulation
from qidao.runtime.errors import ArgumentError
from qidao.runtime.executor import TensorSpec, dtype_mismatch

# --- the program, as plain data -----------------------------------------------------

BUFFER_KINDS = ("input", "output", "scratch", "constant")


@dataclass(frozen=True)
class BufferSpec:
    """A device buffer: a graph input or output (``index`` its position), a scratch
    buffer of the host program, or a constant uploaded once (``data``)."""

    name: str
    kind: str
    nbytes: int
    index: int = -1
    data: np.ndarray[Any, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Launch:
    """One ``__global__`` function launch: ``function<<<grid, block>>>(buffers...)``.

    ``params`` are the C types of the parameters (``float*``), for the emulator.
    ``serial`` marks a launch with no bound loop: one block of one thread runs all
    of its loops.
    """

    kernel: str
    function: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: tuple[int, ...]
    params: tuple[str, ...]
    serial: bool = False

    def describe(self, buffers: Sequence[BufferSpec]) -> str:
        names = ", ".join(buffers[b].name for b in self.buffers)
        grid = ",".join(map(str, self.grid))
        block = ",".join(map(str, self.block))
        note = "  // serial: no bound loop, one thread" if self.serial else ""
        return f"{self.function}<<<({grid}), ({block})>>>({names});{note}"


@dataclass(frozen=True)
class CudaProgram:
    """CUDA C source and the host's launch plan for one model."""

    source: str
    buffers: tuple[BufferSpec, ...]
    launches: tuple[Launch, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def plan(self) -> str:
        """The launch plan as text: buffers, then each launch in order."""
        lines = ["// buffers"]
        for b in self.buffers:
            where = f" #{b.index}" if b.index >= 0 else ""
            lines.append(f"//   {b.name}: {b.kind}{where}, {b.nbytes} bytes")
        lines.append("// launches")
        lines += [f"//   {launch.describe(self.buffers)}" for launch in self.launches]
        return "\n".join(lines)


# --- devices --------------------------------------------------------------------------


class Device(Protocol):
    """What a program needs from a device: buffers, copies and launches."""

    def load(self, program: CudaProgram) -> None: ...
    def alloc(self, nbytes: int) -> Any: ...
    def upload(self, buffer: Any, array: np.ndarray[Any, Any]) -> None: ...
    def download(self, buffer: Any, array: np.ndarray[Any, Any]) -> None: ...
    def launch(self, launch: Launch, buffers: Sequence[Any]) -> None: ...
    def synchronize(self) -> None: ...
    def free(self, buffer: Any) -> None: ...


class CudaUnavailableError(QidaoError, RuntimeError):
    """pycuda, the CUDA driver, a GPU or nvcc is missing; the message says which."""


def cuda_unavailable_reason() -> str | None:
    """None when pycuda can drive a CUDA GPU here; else why not, in words (pycuda
    missing, no driver library, the driver failing to start, no device). Creates no
    context."""
    try:
        import pycuda.driver as cuda  # type: ignore[import-not-found]
    except ImportError as err:
        if "libcuda" in str(err):
            return f"no CUDA driver: pycuda cannot load it ({err})"
        return f"pycuda is not installed (pip install 'qidao[cuda]'): {err}"
    try:
        cuda.init()
        count = cuda.Device.count()
    except Exception as err:  # pycuda._driver.Error and its subclasses
        return f"the CUDA driver does not start: {err}"
    if count == 0:
        return "the CUDA driver sees no device"
    return None


def _primary_context() -> Any:
    """The current device's primary context, pushed on this thread once per process
    (``pycuda.autoprimaryctx``: device ``$CUDA_DEVICE`` or the first that works;
    popped at exit). Raises CudaUnavailableError saying why when there is none."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise CudaUnavailableError(reason)
    try:
        import pycuda.autoprimaryctx  # type: ignore[import-not-found]
    except Exception as err:  # no usable device
        raise CudaUnavailableError(f"no usable CUDA GPU: {err}") from err
    return pycuda.autoprimaryctx.context


class PycudaDevice:
    """The current CUDA GPU through pycuda, in its primary context (see the module
    doc)."""

    def __init__(self) -> None:
        self._context = _primary_context()
        import pycuda.driver as cuda

        self._cuda = cuda
        self._functions: dict[str, Any] = {}
        self._module: Any = None

    @property
    def arch(self) -> str:
        """``sm_XY`` of the current device (``sm_90`` on an H100 or H200)."""
        major, minor = self._cuda.Context.get_device().compute_capability()
        return f"sm_{major}{minor}"

    def load(self, program: CudaProgram) -> None:
        cubin = compile_with_nvcc(program.source, self.arch, "cubin")
        self._module = self._cuda.module_from_buffer(cubin)
        for launch in program.launches:
            function = self._module.get_function(launch.function)
            # every parameter is a pointer ("P"): launches pack plain integers
            function.prepare("P" * len(launch.params))
            self._functions[launch.function] = function

    def alloc(self, nbytes: int) -> Any:
        buffer = self._cuda.mem_alloc(max(nbytes, 1))
        self._cuda.memset_d8(int(buffer), 0xFF, max(nbytes, 1))
        return buffer

    def upload(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        if array.nbytes:
            self._cuda.memcpy_htod(buffer, np.ascontiguousarray(array))

    def download(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        if array.nbytes:
            self._cuda.memcpy_dtoh(array, buffer)

    def launch(self, launch: Launch, buffers: Sequence[Any]) -> None:
        grid = tuple(int(d) for d in launch.grid)
        block = tuple(int(d) for d in launch.block)
        self._functions[launch.function].prepared_call(
            grid, block, *[int(b) for b in buffers]
        )

    def synchronize(self) -> None:
        """Wait for every launch so far; raises the first asynchronous error
        (an illegal address, say) as a pycuda error."""
        self._cuda.Context.synchronize()

    def free(self, buffer: Any) -> None:
        buffer.free()


def event_times(
    run: Callable[[], object], min_time: float = 0.3, max_runs: int = 200
) -> list[float]:
    """Seconds per call of ``run`` (GPU work on the default stream), each between
    two CUDA events: 3 warm-up calls, one timed alone to size the run, then
    ``min_time`` seconds' worth of calls (at least 10, at most ``max_runs``)."""
    import pycuda.driver as cuda

    for _ in range(3):
        run()
    cuda.Context.synchronize()
    start, end = cuda.Event(), cuda.Event()
    start.record()
    run()
    end.record()
    end.synchronize()
    one = max(end.time_since(start) * 1e-3, 1e-6)
    runs = max(10, min(max_runs, int(min_time / one)))
    pairs = [(cuda.Event(), cuda.Event()) for _ in range(runs)]
    for s, e in pairs:
        s.record()
        run()
        e.record()
    pairs[-1][1].synchronize()
    return [e.time_since(s) * 1e-3 for s, e in pairs]


def compile_with_nvcc(source: str, arch: str, kind: str = "cubin") -> bytes:
    """``nvcc --<kind> -arch=<arch>`` on ``source``; ``kind`` is cubin or ptx."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CudaUnavailableError(
            "nvcc is not on PATH: target='cuda' compiles its CUDA C with nvcc "
            "(the CUDA toolkit's bin folder)"
        )
    with tempfile.TemporaryDirectory(prefix="qidao-cuda-") as tmp:
        src = Path(tmp) / "kernels.cu"
        out = Path(tmp) / f"kernels.{kind}"
        src.write_text(source)
        cmd = [
            nvcc,
            f"--{kind}",
            f"-arch={arch}",
            "-std=c++17",
            "-o",
            str(out),
            str(src),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{result.stderr}")
        return out.read_bytes()


EMULATION_HEADER = r"""// qidao: CUDA C on the CPU, a block's threads as threads (qidao/runtime/cuda.py).
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <algorithm>
#include <barrier>
#include <deque>
#include <thread>
#include <vector>
// CUDA's vector types, for the wide loads and stores of vectorized loops
// (qidao/compiler/targets/cuda/emit/vectors.py): aligned to their size, as on a GPU.
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(16))) double2 { double x, y; };
static inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline double2 make_double2(double x, double y) { return {x, y}; }
// (end of the vector types)
struct qd_uint3 { unsigned int x, y, z; };
static thread_local qd_uint3 blockIdx, threadIdx;
static qd_uint3 blockDim, gridDim;
static std::barrier<>* qd_block_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
static inline void __syncthreads() { qd_block_barrier->arrive_and_wait(); }
// Warp shuffles: each warp of the block exchanges through 32 slots, between two
// arrivals at the warp's own barrier (every lane of the warp must call it, as the
// full mask 0xffffffff says on a GPU).
struct qd_warp { std::barrier<>* bar; unsigned char slot[32][8]; };
static qd_warp* qd_warps;
static inline unsigned qd_linear_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  const unsigned t = qd_linear_tid(), lane = t % 32;
  qd_warp& w = qd_warps[t / 32];
  memcpy(w.slot[lane], &v, sizeof(T));
  w.bar->arrive_and_wait();
  T other;
  memcpy(&other, w.slot[lane ^ (unsigned)lane_mask], sizeof(T));
  w.bar->arrive_and_wait();
  return other;
}
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, 4); return f; }
static inline double __longlong_as_double(long long b) {
  double d; memcpy(&d, &b, 8); return d;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
// (double_buffer, qidao/compiler/targets/cuda/emit/pipeline.py) <cuda_pipeline.h>'s
// cp.async: the copy done at once, so committing and waiting have nothing to do.
static inline void __pipeline_memcpy_async(void* dst, const void* src, size_t n) {
  memcpy(dst, src, n);
}
static inline void __pipeline_commit() {}
static inline void __pipeline_wait_prior(size_t) {}
// (end of double_buffer)
"""


class EmulatedDevice:
    """Runs a program's kernels on the CPU: g++ and a loop over the grid (for tests)."""

    def __init__(self, compiler: str = "g++") -> None:
        path = shutil.which(compiler)
        if path is None:
            raise CudaUnavailableError(f"the emulator needs '{compiler}' on PATH")
        self._compiler = path
        self._lib: ctypes.CDLL | None = None
        self._keep: list[Any] = []

    def load(self, program: CudaProgram) -> None:
        text = EMULATION_HEADER + wmma_emulation(program.source) + program.source
        text += _emulation_wrappers(program)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        folder = Path(tempfile.gettempdir()) / "qidao-cuda-emulate"
        folder.mkdir(exist_ok=True)
        lib = folder / f"{digest}.so"
        if not lib.exists():
            src = folder / f"{digest}.cpp"
            src.write_text(text)
            tmp = folder / f"{digest}.{os.getpid()}.so"
            cmd = [self._compiler, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread"]
            cmd += ["-o", str(tmp), str(src)]
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"emulator build failed:\n{result.stderr}")
            tmp.replace(lib)
        self._lib = ctypes.CDLL(str(lib))

    def alloc(self, nbytes: int) -> Any:
        # 0xFF bytes: a NaN in every float, so a read of an unwritten element shows.
        return np.full(max(nbytes, 1), 0xFF, np.uint8)

    def upload(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        buffer[: raw.size] = raw

    def download(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        flat = array.reshape(-1).view(np.uint8)
        flat[:] = buffer[: flat.size]

    def launch(self, launch: Launch, buffers: Sequence[Any]) -> None:
        assert self._lib is not None, "load() first"
        pointers = (ctypes.c_void_p * max(len(buffers), 1))(
            *[b.ctypes.data for b in buffers]
        )
        dims = (ctypes.c_uint * 6)(*launch.grid, *launch.block)
        getattr(self._lib, f"qd_launch_{launch.function}")(pointers, dims)

    def synchronize(self) -> None:
        """Launches run to the end before they return: nothing to wait for."""

    def free(self, buffer: Any) -> None:
        """NumPy owns the memory."""


def _emulation_wrappers(program: CudaProgram) -> str:
    lines: list[str] = []
    seen: set[str] = set()
    for launch in program.launches:
        if launch.function in seen:
            continue
        seen.add(launch.function)
        args = ", ".join(f"({t})args[{i}]" for i, t in enumerate(launch.params))
        lines += [
            f'extern "C" void qd_launch_{launch.function}(void** args, '
            "const unsigned int* d) {",
            "  gridDim = {d[0], d[1], d[2]}; blockDim = {d[3], d[4], d[5]};",
            "  const unsigned n = d[3] * d[4] * d[5];",
            "  std::barrier<> barrier(n);",
            "  qd_block_barrier = &barrier;",
            "  std::deque<std::barrier<>> warp_barriers;",
            "  std::vector<qd_warp> warps((n + 31) / 32);",
            "  for (unsigned w = 0; w < warps.size(); ++w)",
            "    warps[w].bar = &warp_barriers.emplace_back("
            "std::min<std::ptrdiff_t>(32, n - 32 * w));",
            "  qd_warps = warps.data();",
            "  auto thread = [&](unsigned t) {",
            "    threadIdx = {t % d[3], t / d[3] % d[4], t / (d[3] * d[4])};",
            "    for (unsigned bz = 0; bz < d[2]; ++bz)",
            "    for (unsigned by = 0; by < d[1]; ++by)",
            "    for (unsigned bx = 0; bx < d[0]; ++bx) {",
            "      blockIdx = {bx, by, bz};",
            f"      {launch.function}({args});",
            "      barrier.arrive_and_wait();  // the block ends",
            "    }",
            "  };",
            "  std::vector<std::thread> pool;",
            "  for (unsigned t = 1; t < n; ++t) pool.emplace_back(thread, t);",
            "  thread(0);",
            "  for (auto& worker : pool) worker.join();",
            "}",
        ]
    return "\n" + "\n".join(lines) + "\n"


# --- the callable -------------------------------------------------------------------


class CudaFunction:
    """A loaded :class:`CudaProgram`: call it with NumPy arrays in input order."""

    def __init__(self, program: CudaProgram, device: Device | str = "cuda") -> None:
        if isinstance(device, str):
            if device not in ("cuda", "emulate"):
                raise ValueError(f"device must be 'cuda' or 'emulate', got {device!r}")
            device = PycudaDevice() if device == "cuda" else EmulatedDevice()
        self.program = program
        self.device = device
        device.load(program)
        self._buffers = [device.alloc(b.nbytes) for b in program.buffers]
        for spec, buffer in zip(program.buffers, self._buffers, strict=True):
            if spec.kind == "constant" and spec.data is not None:
                device.upload(buffer, np.ascontiguousarray(spec.data))
        by_kind = [(b.kind, b.index) for b in program.buffers]
        self._inputs = {
            i: self._buffers[by_kind.index(("input", i))]
            for i in range(len(program.inputs))
        }
        self._outputs = {
            j: self._buffers[by_kind.index(("output", j))]
            for j in range(len(program.outputs))
        }
        self._plan = [
            (launch, [self._buffers[b] for b in launch.buffers])
            for launch in program.launches
        ]
        self._closed = False

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.program.outputs

    def check(self, arrays: Sequence[Any]) -> list[np.ndarray[Any, Any]]:
        """The inputs as C-contiguous arrays, or an ArgumentError naming the bad one."""
        specs = self.program.inputs
        if len(arrays) != len(specs):
            names = ", ".join(repr(s.name) for s in specs)
            raise ArgumentError(
                f"main() takes {len(specs)} input(s) ({names}), got {len(arrays)}"
            )
        checked = []
        for i, (spec, array) in enumerate(zip(specs, arrays, strict=True)):
            what = None
            if not isinstance(array, np.ndarray):
                what = f"an object of type {type(array).__name__}"
            elif array.dtype != np.dtype(spec.dtype):
                what = dtype_mismatch(array.dtype, spec.dtype)
            elif array.shape != spec.shape:
                what = f"shape {array.shape}"
            if what is not None:
                raise ArgumentError(
                    f"main(): input '{spec.name}' (#{i}): expected "
                    f"{spec.describe()}, got {what}"
                )
            checked.append(np.ascontiguousarray(array))
        return checked

    def upload(self, *arrays: Any) -> None:
        """Check the inputs and copy them to the device."""
        if self._closed:
            raise RuntimeError("this CudaFunction is closed: its buffers are freed")
        for i, array in enumerate(self.check(arrays)):
            self.device.upload(self._inputs[i], array)

    def launch(self) -> None:
        """Run the launches in order on the inputs last uploaded (asynchronous on a
        GPU: ``download`` or ``device.synchronize()`` waits)."""
        for launch, buffers in self._plan:
            self.device.launch(launch, buffers)

    def download(self) -> list[np.ndarray[Any, Any]]:
        """The outputs of the last launches, in fresh arrays."""
        outputs = [np.empty(s.shape, s.dtype) for s in self.program.outputs]
        for j, array in enumerate(outputs):
            self.device.download(self._outputs[j], array)
        return outputs

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        self.upload(*arrays)
        self.launch()
        return self.download()

    def close(self) -> None:
        """Free the device buffers now (else when this object is collected)."""
        for buffer in self._buffers:
            self.device.free(buffer)
        self._buffers, self._plan, self._inputs, self._outputs = [], [], {}, {}
        self._closed = True


__all__ = [
    "BufferSpec",
    "CudaFunction",
    "CudaProgram",
    "CudaUnavailableError",
    "Device",
    "EmulatedDevice",
    "Launch",
    "PycudaDevice",
    "compile_with_nvcc",
    "cuda_unavailable_reason",
    "event_times",
]
