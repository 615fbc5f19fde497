"""The CUDA launcher: CUDA C + a launch plan in, a checked NumPy-in/NumPy-out callable
out.

Knows no IR classes: ``qidao.compiler.cuda`` hands it a :class:`CudaProgram`, the
generated source and, as plain data, the buffers (graph inputs, outputs, scratch
buffers, constants) and the launches in order (``__global__`` function, grid, block,
the buffers passed, by index). :class:`CudaFunction` checks every input (count,
type, dtype, shape; non-contiguous arrays are copied), uploads the inputs, runs the
launches in order on one stream (the end of a launch is the only barrier), and
downloads the outputs into fresh arrays.

Two devices run a program:

- :class:`PycudaDevice` (``CudaFunction(program)``): compiles the source with
  ``nvcc --cubin -arch=sm_XY`` for the current GPU, or with NVRTC when ``nvcc`` is
  not found (``pycuda.compiler.SourceModule``), loads the module and launches with
  pycuda. **Untested on hardware**: the machines that built qidao have no GPU and
  no pycuda; it is the few lines of pycuda calls below, and everything around them
  (argument checks, buffer set-up, launch order, the launch plan) is shared with
  the emulator and tested there.
- :class:`EmulatedDevice` (``CudaFunction(program, device="emulate")``): compiles
  the same source as C++20 with ``g++`` and an emulation header, and runs the grid
  on the CPU: the threads of a block are real threads (``std::thread``), with
  ``threadIdx``/``blockIdx`` thread-local, ``__shared__`` arrays as static
  arrays shared by them, and ``__syncthreads()`` a ``std::barrier``; the blocks
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from qidao.runtime.errors import ArgumentError
from qidao.runtime.executor import TensorSpec

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


class CudaUnavailableError(RuntimeError):
    """pycuda or a GPU is missing; the message says which."""


class PycudaDevice:
    """The current CUDA GPU through pycuda (untested on hardware; see the module doc)."""

    def __init__(self) -> None:
        try:
            import pycuda.autoinit  # type: ignore[import-not-found]  # noqa: F401
            import pycuda.driver as cuda  # type: ignore[import-not-found]
        except ImportError as err:
            raise CudaUnavailableError(
                f"target='cuda' needs pycuda (pip install 'qidao[cuda]'): {err}"
            ) from err
        except Exception as err:  # pycuda.autoinit: no driver or no GPU
            raise CudaUnavailableError(f"no usable CUDA GPU: {err}") from err
        self._cuda = cuda
        self._functions: dict[str, Any] = {}
        self._module: Any = None

    def load(self, program: CudaProgram) -> None:
        major, minor = self._cuda.Context.get_device().compute_capability()
        arch = f"sm_{major}{minor}"
        if shutil.which("nvcc"):
            cubin = compile_with_nvcc(program.source, arch, "cubin")
            self._module = self._cuda.module_from_buffer(cubin)
        else:
            from pycuda.compiler import SourceModule  # type: ignore[import-not-found]

            self._module = SourceModule(
                program.source, arch=arch, no_extern_c=True, options=["-std=c++17"]
            )
        for launch in program.launches:
            self._functions[launch.function] = self._module.get_function(
                launch.function
            )

    def alloc(self, nbytes: int) -> Any:
        return self._cuda.mem_alloc(max(nbytes, 1))

    def upload(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        self._cuda.memcpy_htod(buffer, array)

    def download(self, buffer: Any, array: np.ndarray[Any, Any]) -> None:
        self._cuda.memcpy_dtoh(array, buffer)

    def launch(self, launch: Launch, buffers: Sequence[Any]) -> None:
        self._functions[launch.function](*buffers, grid=launch.grid, block=launch.block)


def compile_with_nvcc(source: str, arch: str, kind: str = "cubin") -> bytes:
    """``nvcc --<kind> -arch=<arch>`` on ``source``; ``kind`` is cubin or ptx."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CudaUnavailableError("nvcc is not on PATH")
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
#include <barrier>
#include <thread>
#include <vector>
struct qd_uint3 { unsigned int x, y, z; };
static thread_local qd_uint3 blockIdx, threadIdx;
static qd_uint3 blockDim, gridDim;
static std::barrier<>* qd_block_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
static inline void __syncthreads() { qd_block_barrier->arrive_and_wait(); }
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, 4); return f; }
static inline double __longlong_as_double(long long b) {
  double d; memcpy(&d, &b, 8); return d;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
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
        text = EMULATION_HEADER + program.source + _emulation_wrappers(program)
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
                device.upload(buffer, spec.data)

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
                what = f"dtype {array.dtype.name}"
            elif array.shape != spec.shape:
                what = f"shape {array.shape}"
            if what is not None:
                raise ArgumentError(
                    f"main(): input '{spec.name}' (#{i}): expected "
                    f"{spec.describe()}, got {what}"
                )
            checked.append(np.ascontiguousarray(array))
        return checked

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        inputs = self.check(arrays)
        by_index = {
            (b.kind, b.index): buf
            for b, buf in zip(self.program.buffers, self._buffers, strict=True)
        }
        for i, array in enumerate(inputs):
            self.device.upload(by_index["input", i], array)
        for launch in self.program.launches:
            self.device.launch(launch, [self._buffers[b] for b in launch.buffers])
        outputs = [np.empty(s.shape, s.dtype) for s in self.program.outputs]
        for j, array in enumerate(outputs):
            self.device.download(by_index["output", j], array)
        return outputs


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
]
