"""GPU workloads: a graph, a GPU schedule (loops bound to blockIdx/threadIdx),
inputs, a NumPy reference and the PyTorch version, for tests and ``qidao
bench-cuda``.

``TEST_WORKLOADS`` are small (``tests/compiler/targets/cuda/test_emit.py`` runs each through nvcc, the
emulator and, where there is one, a GPU); ``BENCH_WORKLOADS`` adds sizes that fill
a GPU (matmul 1024 and 2048, the five-op chain over 2^20..2^24 floats, softmax
4096 x 1024)::

    w = BENCH_WORKLOADS["tiled2048"]
    compiled = qidao.compile(w.build(), target="cuda", schedule=w.schedule)
    inputs = w.inputs(np.random.default_rng(0))
    w.check(compiled(*inputs), w.reference(*inputs))   # AssertionError if off

The schedules:

- ``matmul``: a block per row of the output, a thread per column (n <= 1024);
  ``matmul_row_staged`` also stages the row of b that a k step reads in
  ``__shared__`` memory.
- ``tiled``: 16 x 16 output tiles, a block each, k split by 16, the 16 x 16 tiles
  of x and w staged in ``__shared__`` memory per k step (``x_at="j_o"``: the
  16 x k panel of x once per block instead).
- ``chain``/``chain20``...: one element per thread, blocks of 128 or 256 threads,
  the last block guarded.
- ``softmax``: a block per row, one thread walking it; ``softmax_rows``: a thread
  per row, 128 rows per block.
- ``*_default``: the same graphs with ``schedule="default"``, the default GPU
  schedules of ``defaults.py`` (the matmul register-tiled, a thread per row for
  softmax, blocks of 256 threads for the chain), beside the hand-written ones.

The speed targets' workloads (``qidao/bench/cuda/suites.py`` lists them, at their
sizes and small ones for the tests) all take ``schedule="default"``, so whatever the
default GPU schedules learn shows in the bench without a change here:
``device_copy`` (the device's copy bandwidth, against which the chain is judged),
``layer_norm`` (from tg ops, as the layer norm example), and ``dense_matmul`` in a
``precision``:

- ``fp32``: float32 in, float32 out, compared with cuBLAS with TF32 off;
- ``tf32``: the same graph compiled with ``tensor_cores="tf32"``
  (``TENSOR_CORES``), compared with torch's matmul with ``allow_tf32 = True``;
- ``fp16``: the same graph with ``tensor_cores="fp16"`` (the tensor cores
  multiply halves, accumulate in float32; float32 in and out), on inputs that
  are exact in half, compared with torch's half matmul of the same values
  (half in and out, converted once before the timing).

A workload says what the bench measures (``backends``: ``qidao``, ``torch``, and
for a copy ``memcpy``, the driver's ``cuMemcpyDtoD``), the speed ``target`` for
its qidao row (``vs_torch >= 0.9``, ``of_copy >= 0.85``), the seconds its rows may
take (``timeout_s``), how torch computes the reference on the GPU
(``torch_reference``; by default ``torch_fn`` on float64 copies of the inputs) and
how torch's timed call is set up (``torch_prepare``: a copy into a preallocated
output, ``y.copy_(x)``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule
from qidao.examples.basic import B, C, S, W
from qidao.frontend.builder import Graph

Arrays = list[np.ndarray[Any, Any]]

PRECISIONS = ("fp32", "tf32", "fp16")
"""What a workload computes in (see the module doc)."""

TENSOR_CORES = "tensor_cores"
"""The ``qidao.compile`` option that puts the default schedule's matmuls on the
tensor cores: the ``tf32`` and ``fp16`` workloads pass their precision
(``tensor_cores="tf32"``), and the bench reports them not built where the CUDA
target takes no such option."""

METRICS = ("vs_torch", "of_copy")
"""A target's measure: torch's median over qidao's, or qidao's GB/s over the
device's copy bandwidth (the best of ``cuMemcpyDtoD`` and torch's ``copy_`` on as
many bytes, measured in the same run)."""


@dataclass(frozen=True)
class Target:
    """The speed target of a workload's qidao row: ``metric >= at_least``."""

    metric: str
    at_least: float

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(
                f"unknown target metric '{self.metric}'; choose from {METRICS}"
            )

    def describe(self) -> str:
        return f"{self.metric}>={self.at_least:g}"


@dataclass(frozen=True)
class GpuWorkload:
    name: str
    summary: str
    build: Callable[[], Any]
    """The model: a builder ``Graph``, or anything else ``qidao.compile`` takes (a
    whole model's ONNX file)."""
    schedule: Callable[[Schedule], None] | str | None
    """A GPU schedule, ``"default"``: ``qidao.compile``'s default GPU schedules, or
    None: the lowered loops unscheduled (each nest one ``<<<1, 1>>>`` launch)."""
    inputs: Callable[[np.random.Generator], Arrays]
    reference: Callable[..., Arrays]
    """NumPy, in float64 where rounding would otherwise blur the check (matmul)."""
    torch_fn: Callable[..., Any]
    """The same function on torch tensors (PyTorch eager; CUDA tensors in the bench)."""
    flops_per_call: int = 0
    bytes_per_call: int = 0
    """The fewest bytes a call moves (inputs read once, outputs written once)."""
    tolerance: tuple[float, float] = (1e-5, 1e-5)
    """(rtol, atol) for ``np.allclose`` against the reference."""
    scale_atol: bool = False
    """atol is a fraction of the reference's largest magnitude (the zoo's rule for
    whole models, whose outputs have no fixed scale)."""
    precision: str = "fp32"
    """``PRECISIONS``: torch's rows run with ``allow_tf32`` on for ``tf32`` alone."""
    options: tuple[tuple[str, Any], ...] = ()
    """More ``qidao.compile`` options, as (name, value) pairs (``TENSOR_CORES``)."""
    backends: tuple[str, ...] = ("qidao", "torch")
    """The rows the bench measures: ``qidao``, ``torch``, and ``memcpy`` for a copy."""
    target: Target | None = None
    """The speed target of the qidao row, if it has one."""
    timeout_s: float | None = None
    """Seconds one of its rows may take in the bench (the worker's start, inputs,
    reference, compile, check and timing); None: the bench's ``--timeout``."""
    torch_reference: Callable[..., Any] | None = None
    """The reference computed by torch from the inputs as torch tensors (CUDA ones
    in the bench); None: ``torch_fn`` on float64 copies of the float inputs."""
    torch_prepare: Callable[..., Callable[[], Any]] | None = None
    """From the inputs as torch tensors, the call torch's row times (returning the
    output); None: ``torch_fn`` on them."""
    tune_command: str = ""
    """Set: the qidao row compiles with the records file the bench is given
    (``--records``, the ``qidao.compile`` option ``records``), which this command
    makes; without one the row is ``not run: no records (<tune_command>)``."""

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"workload '{self.name}': unknown precision '{self.precision}'; "
                f"choose from {PRECISIONS}"
            )

    def check(self, got: Sequence[Any], want: Sequence[Any]) -> float:
        """Raise an AssertionError naming the worst element unless ``got`` matches
        ``want`` within the tolerance (NaN never passes); return the relative
        error ``‖got - want‖ / ‖want‖`` of the worst output."""
        if len(got) != len(want):
            raise AssertionError(
                f"{self.name}: {len(got)} output(s), expected {len(want)}"
            )
        rtol, atol = self.tolerance
        worst = 0.0
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            g, w = np.asarray(g), np.asarray(w)
            if g.shape != w.shape:
                raise AssertionError(
                    f"{self.name}: output #{k} has shape {g.shape}, expected {w.shape}"
                )
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            if self.scale_atol:
                atol = self.tolerance[1] * float(np.max(np.abs(w64), initial=0.0))
            ok = np.isclose(g64, w64, rtol=rtol, atol=atol)
            if not ok.all():
                bad = np.unravel_index(int(np.argmin(ok)), w.shape)
                where = tuple(int(i) for i in bad)
                raise AssertionError(
                    f"{self.name}: output #{k} differs from the reference at "
                    f"{where}: got {g64[bad]!r}, expected {w64[bad]!r} "
                    f"({int((~ok).sum())} of {ok.size} elements off; rtol {rtol}, "
                    f"atol {atol:.3g})"
                )
            norm = float(np.linalg.norm(w64))
            diff = float(np.linalg.norm(g64 - w64))
            worst = max(worst, diff / norm if norm else diff)
        return worst


def _randn(rng: np.random.Generator, *shape: int) -> np.ndarray[Any, Any]:
    return rng.standard_normal(shape).astype(np.float32)


def _matmul_reference(x: Any, w: Any) -> Arrays:
    return [x.astype(np.float64) @ w.astype(np.float64)]


def _matmul_torch(x: Any, w: Any) -> Any:
    return x @ w


def _matmul_tolerance(k: int) -> tuple[float, float]:
    # float32 sums of k products: rounding grows with k (here against float64)
    return (1e-4, max(1e-5, 5e-7 * k))


def _matmul_graph(m: int, k: int, n: int, names: tuple[str, str]) -> Graph:
    g = Graph("main")
    a = g.input(names[0], (m, k))
    b = g.input(names[1], (k, n))
    g.output(g.matmul(a, b))
    return g


MATMUL_KERNEL = "main_k0_matmul"


def matmul(m: int, k: int, n: int, staged: bool = False, name: str = "") -> GpuWorkload:
    """a (m x k) @ b (k x n): a block per row of the output, a thread per column;
    ``staged``: the row of b that a k step reads goes through ``__shared__``."""

    def schedule(s: Schedule) -> None:
        s.bind(MATMUL_KERNEL, "i_init", "blockIdx.x")
        s.bind(MATMUL_KERNEL, "j_init", "threadIdx.x")
        s.bind(MATMUL_KERNEL, "i", "blockIdx.x")
        s.bind(MATMUL_KERNEL, "j", "threadIdx.x")
        if staged:
            s.cache_read(MATMUL_KERNEL, "k", "b")

    return GpuWorkload(
        name or f"matmul{m}",
        f"{m}x{k} @ {k}x{n} float32: a block per output row, a thread per column"
        + (", b's row staged in __shared__" if staged else ""),
        lambda: _matmul_graph(m, k, n, ("a", "b")),
        schedule,
        lambda rng: [_randn(rng, m, k), _randn(rng, k, n)],
        _matmul_reference,
        _matmul_torch,
        flops_per_call=2 * m * k * n,
        tolerance=_matmul_tolerance(k),
    )


def tiled_matmul(
    m: int, k: int, n: int, x_at: str = "k_o_o", name: str = ""
) -> GpuWorkload:
    """The shared-memory tiled matmul: 16 x 16 blocks of threads, k split by 16,
    the tiles of x and w staged in ``__shared__`` memory by ``cache_read``.

    ``x_at="k_o_o"``: both 16 x 16 tiles per k step (k_o split by 1 gives the second
    loop that w needs: one ``cache_read`` per loop). ``x_at="j_o"``: the 16 x k
    panel of x once per block, the tile of w per k step. The zero-fill nest takes
    a block per row and a thread per column (n <= 1024), else blocks of 256
    columns."""

    def schedule(s: Schedule) -> None:
        kernel = MATMUL_KERNEL
        s.bind(kernel, "i_init", "blockIdx.x" if n <= 1024 else "blockIdx.y")
        if n <= 1024:
            s.bind(kernel, "j_init", "threadIdx.x")
        else:
            s.split(kernel, "j_init", 256)
            s.bind(kernel, "j_init_o", "blockIdx.x")
            s.bind(kernel, "j_init_i", "threadIdx.x")
        s.split(kernel, "i", 16)
        s.split(kernel, "j", 16)
        s.split(kernel, "k", 16)
        s.reorder(kernel, "i_o", "j_o", "k_o", "i_i", "j_i", "k_i")
        s.bind(kernel, "i_o", "blockIdx.y")
        s.bind(kernel, "j_o", "blockIdx.x")
        s.bind(kernel, "i_i", "threadIdx.y")
        s.bind(kernel, "j_i", "threadIdx.x")
        if x_at == "k_o_o":
            s.split(kernel, "k_o", 1)
            s.cache_read(kernel, "k_o_o", "x")
            s.cache_read(kernel, "k_o_i", "w")
        else:
            s.cache_read(kernel, x_at, "x")
            s.cache_read(kernel, "k_o", "w")

    where = "both 16x16 tiles per k step" if x_at == "k_o_o" else "x's 16xk panel"
    return GpuWorkload(
        name or f"tiled{m}",
        f"{m}x{k} @ {k}x{n} float32: 16x16 thread blocks, {where} in __shared__",
        lambda: _matmul_graph(m, k, n, ("x", "w")),
        schedule,
        lambda rng: [_randn(rng, m, k), _randn(rng, k, n)],
        _matmul_reference,
        _matmul_torch,
        flops_per_call=2 * m * k * n,
        tolerance=_matmul_tolerance(k),
    )


def _one_loop(block: int) -> Callable[[Schedule], None]:
    """Split the one loop ``i0`` of the one kernel by ``block``: blocks x threads."""

    def schedule(s: Schedule) -> None:
        (kernel,) = s.kernels()
        s.split(kernel, "i0", block)
        s.bind(kernel, "i0_o", "blockIdx.x")
        s.bind(kernel, "i0_i", "threadIdx.x")

    return schedule


def tanh_chain(n: int) -> GpuWorkload:
    """tanh(exp(x)*0.5 + relu(x)) - 1: math functions, fused, one loop."""

    def build() -> Graph:
        g = Graph("main")
        x = g.input("x", (n,))
        g.output(g.tanh(g.exp(x) * 0.5 + g.relu(x)) - 1.0)
        return g

    def reference(x: Any) -> Arrays:
        return [np.tanh(np.exp(x) * 0.5 + np.maximum(x, 0)) - 1.0]

    def torch_fn(x: Any) -> Any:
        import torch

        return torch.tanh(torch.exp(x) * 0.5 + torch.relu(x)) - 1.0

    return GpuWorkload(
        "chain" if n == 1000 else f"tanh_chain{n}",
        f"tanh(exp(x)*0.5 + relu(x)) - 1 over {n} float32, blocks of 128 threads",
        build,
        _one_loop(128),
        lambda rng: [_randn(rng, n)],
        reference,
        torch_fn,
        bytes_per_call=2 * 4 * n,
    )


def five_op_chain(log2n: int) -> GpuWorkload:
    """``qidao bench``'s chain: relu(x*w + b)*s + c over 2^log2n floats."""
    n = 1 << log2n

    def build() -> Graph:
        from qidao.examples import chain_graph

        return chain_graph(n)

    def reference(x: Any) -> Arrays:
        f = np.float32
        return [np.maximum(x * f(W) + f(B), 0) * f(S) + f(C)]

    def torch_fn(x: Any) -> Any:
        import torch

        return torch.relu(x * W + B) * S + C

    return GpuWorkload(
        f"chain{log2n}",
        f"relu(x*w + b)*s + c over 2^{log2n} float32 (five ops, fused), blocks of "
        "256 threads",
        build,
        _one_loop(256),
        lambda rng: [_randn(rng, n)],
        reference,
        torch_fn,
        bytes_per_call=2 * 4 * n,
    )


SOFTMAX_KERNEL = "main_k0_softmax"


def softmax(rows: int, cols: int, per_thread: int = 0, name: str = "") -> GpuWorkload:
    """Softmax over the last axis: a block per row, one thread walking it; or with
    ``per_thread`` > 0, a thread per row, ``per_thread`` rows per block."""

    def build() -> Graph:
        g = Graph("main")
        x = g.input("x", (rows, cols))
        g.output(g.softmax(x))
        return g

    def schedule(s: Schedule) -> None:
        if per_thread:
            s.split(SOFTMAX_KERNEL, "i0", per_thread)
            s.bind(SOFTMAX_KERNEL, "i0_o", "blockIdx.x")
            s.bind(SOFTMAX_KERNEL, "i0_i", "threadIdx.x")
        else:
            s.bind(SOFTMAX_KERNEL, "i0", "blockIdx.x")

    def reference(x: Any) -> Arrays:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return [e / e.sum(axis=1, keepdims=True)]

    def torch_fn(x: Any) -> Any:
        import torch

        return torch.softmax(x, dim=-1)

    how = (
        f"a thread per row, {per_thread} rows per block"
        if per_thread
        else "a block per row, one thread"
    )
    return GpuWorkload(
        name or f"softmax{rows}" + ("_rows" if per_thread else ""),
        f"softmax over the last axis of {rows}x{cols} float32: {how}",
        build,
        schedule,
        lambda rng: [_randn(rng, rows, cols)],
        reference,
        torch_fn,
        bytes_per_call=2 * 4 * rows * cols,
    )


def device_copy(log2n: int, name: str = "") -> GpuWorkload:
    """y = x over 2^log2n floats, to measure the device's copy bandwidth three ways:
    qidao's copy kernel (the default schedule), the driver's ``cuMemcpyDtoD``
    (``memcpy``) and torch's ``y.copy_(x)`` into a preallocated ``y``."""
    n = 1 << log2n

    def build() -> Graph:
        g = Graph("main")
        x = g.input("x", (n,))
        g.output(g.contiguous(x))  # an output that is an input is copied all the same
        return g

    def torch_prepare(x: Any) -> Callable[[], Any]:
        import torch

        y = torch.empty_like(x)
        return lambda: y.copy_(x)

    return GpuWorkload(
        name or f"copy{log2n}",
        f"y = x over 2^{log2n} float32: the copy bandwidth (qidao's default-scheduled "
        "copy, cuMemcpyDtoD, torch's y.copy_(x))",
        build,
        "default",
        lambda rng: [_randn(rng, n)],
        lambda x: [x.copy()],
        lambda x: x.clone(),
        bytes_per_call=2 * 4 * n,
        backends=("qidao", "memcpy", "torch"),
        torch_prepare=torch_prepare,
    )


LAYER_NORM_EPS = 1e-5


def _layer_norm_params(cols: int) -> tuple[np.ndarray[Any, Any], ...]:
    """Weight near 1 and bias near 0 (fixed: graph and references agree)."""
    rng = np.random.default_rng(1234)
    weight = (1.0 + 0.1 * rng.standard_normal(cols)).astype(np.float32)
    bias = (0.1 * rng.standard_normal(cols)).astype(np.float32)
    return weight, bias


def layer_norm(rows: int, cols: int, name: str = "") -> GpuWorkload:
    """Layer norm over the last axis of rows x cols floats, built from tg ops as
    the ``layernorm`` example is ((x - mean) / sqrt(var + eps) * weight + bias,
    weight and bias constants), with the default GPU schedule."""
    weight, bias = _layer_norm_params(cols)

    def build() -> Graph:
        g = Graph("main")
        x = g.input("x", (rows, cols))
        centered = x - g.reduce_mean(x, -1, keepdims=True)
        variance = g.reduce_mean(centered * centered, -1, keepdims=True)
        normalized = centered / g.sqrt(variance + LAYER_NORM_EPS)
        g.output(normalized * g.constant(weight) + g.constant(bias))
        return g

    def reference(x: Any) -> Arrays:
        x64 = x.astype(np.float64)
        centered = x64 - x64.mean(axis=-1, keepdims=True)
        variance = (centered * centered).mean(axis=-1, keepdims=True)
        return [centered / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias]

    def torch_fn(x: Any) -> Any:
        import torch

        w, b = (torch.from_numpy(p).to(x.device, x.dtype) for p in (weight, bias))
        return torch.nn.functional.layer_norm(x, (cols,), w, b, LAYER_NORM_EPS)

    return GpuWorkload(
        name or f"layernorm{rows}",
        f"layer norm over the last axis of {rows}x{cols} float32 (tg ops), the "
        "default GPU schedule",
        build,
        "default",
        lambda rng: [_randn(rng, rows, cols)],
        reference,
        torch_fn,
        bytes_per_call=2 * 4 * rows * cols + 2 * 4 * cols,
        tolerance=(1e-4, 1e-5),
    )


def _precision_tolerance(precision: str, k: int) -> tuple[float, float]:
    """fp32: as ``_matmul_tolerance``; tf32 (10-bit mantissas) and fp16 (torch's
    half output): errors of a few 2^-11 per product, growing with sqrt(k)."""
    if precision == "fp32":
        return _matmul_tolerance(k)
    return (1e-2, 4e-3 * math.sqrt(k))


def dense_matmul(
    m: int, k: int, n: int, precision: str = "fp32", name: str = ""
) -> GpuWorkload:
    """a (m x k) @ b (k x n), float32 in and out, with the default GPU schedule in
    ``precision`` (``PRECISIONS``; see the module doc); the reference is float64."""
    options = () if precision == "fp32" else ((TENSOR_CORES, precision),)

    def inputs(rng: np.random.Generator) -> Arrays:
        a, b = _randn(rng, m, k), _randn(rng, k, n)
        if precision == "fp16":  # values a half holds exactly: both sides see them
            a, b = (x.astype(np.float16).astype(np.float32) for x in (a, b))
        return [a, b]

    def half_matmul(a: Any, b: Any) -> Callable[[], Any]:
        a16, b16 = a.half(), b.half()
        return lambda: a16 @ b16

    how = {
        "fp32": "float32, TF32 off on both sides",
        "tf32": "float32 on the tensor cores in TF32 (tensor_cores='tf32'), torch "
        "with allow_tf32",
        "fp16": "float32 in and out on the tensor cores in half "
        "(tensor_cores='fp16'), torch's half matmul",
    }[precision]
    return GpuWorkload(
        name or f"matmul{m}" + ("" if precision == "fp32" else f"_{precision}"),
        f"{m}x{k} @ {k}x{n} {how}: the default GPU schedule",
        lambda: _matmul_graph(m, k, n, ("a", "b")),
        "default",
        inputs,
        _matmul_reference,
        _matmul_torch,
        flops_per_call=2 * m * k * n,
        tolerance=_precision_tolerance(precision, k),
        precision=precision,
        options=options,
        torch_prepare=half_matmul if precision == "fp16" else None,
    )


def default_scheduled(workload: GpuWorkload, name: str = "") -> GpuWorkload:
    """``workload`` compiled with the default GPU schedules (``defaults.py``)
    instead of its hand-written one; named ``<name>_default``."""
    graph = workload.summary.split(":")[0].split(", blocks of")[0]
    return dataclasses.replace(
        workload,
        name=name or f"{workload.name}_default",
        summary=f"{graph}: the default GPU schedule",
        schedule="default",
    )


def _by_name(*workloads: GpuWorkload) -> dict[str, GpuWorkload]:
    return {w.name: w for w in workloads}


TEST_WORKLOADS: dict[str, GpuWorkload] = _by_name(
    matmul(37, 20, 45, name="matmul"),
    matmul(37, 20, 45, staged=True, name="matmul_row_staged"),
    tanh_chain(1000),  # 1000 = 7 * 128 + 104: the last block is guarded
    softmax(9, 50, name="softmax"),
    softmax(9, 50, per_thread=4, name="softmax_rows"),  # 9 = 2 * 4 + 1: a guard
    tiled_matmul(64, 48, 80, name="tiled"),
    tiled_matmul(50, 37, 70, name="tiled_tails"),
    tiled_matmul(64, 48, 80, x_at="j_o", name="tiled_panel"),
    tiled_matmul(50, 37, 70, x_at="j_o", name="tiled_panel_tails"),
    # the default schedules: a thread per element (no register tile divides 37 x
    # 45), a 16 x 16 register tile with a k tail (37), a thread per row, a tail
    default_scheduled(matmul(37, 20, 45), "matmul_default"),
    default_scheduled(tiled_matmul(64, 37, 80), "tiled_default"),
    default_scheduled(softmax(9, 50), "softmax_default"),
    default_scheduled(tanh_chain(1000), "chain_default"),
)
"""Small: every edge (guards, tails, staging) at a size the emulator runs fast."""

DEFAULT_WORKLOADS: dict[str, GpuWorkload] = _by_name(
    default_scheduled(matmul(1024, 1024, 1024)),
    default_scheduled(matmul(2048, 2048, 2048)),
    default_scheduled(softmax(4096, 1024)),
    default_scheduled(five_op_chain(24)),
)
"""Sizes that fill a GPU, with the default GPU schedules: ``qidao bench-cuda``
runs them first."""

BENCH_WORKLOADS: dict[str, GpuWorkload] = {
    **TEST_WORKLOADS,
    **DEFAULT_WORKLOADS,
    **_by_name(
        matmul(1024, 1024, 1024),
        tiled_matmul(1024, 1024, 1024),
        tiled_matmul(2048, 2048, 2048),
        five_op_chain(20),
        five_op_chain(22),
        five_op_chain(24),
        softmax(4096, 1024),
        softmax(4096, 1024, per_thread=128),
    ),
}
"""The test workloads, then sizes that fill a GPU."""

LARGE_WORKLOADS: tuple[str, ...] = tuple(
    name for name in BENCH_WORKLOADS if name not in TEST_WORKLOADS
)


__all__ = [
    "BENCH_WORKLOADS",
    "DEFAULT_WORKLOADS",
    "LARGE_WORKLOADS",
    "METRICS",
    "PRECISIONS",
    "TENSOR_CORES",
    "TEST_WORKLOADS",
    "GpuWorkload",
    "Target",
    "default_scheduled",
    "dense_matmul",
    "device_copy",
    "five_op_chain",
    "layer_norm",
    "matmul",
    "softmax",
    "tanh_chain",
    "tiled_matmul",
]
