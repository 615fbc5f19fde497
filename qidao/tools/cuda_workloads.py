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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule
from qidao.frontend.builder import Graph
from qidao.tools.examples.basic import B, C, S, W

Arrays = list[np.ndarray[Any, Any]]


@dataclass(frozen=True)
class GpuWorkload:
    name: str
    summary: str
    build: Callable[[], Graph]
    schedule: Callable[[Schedule], None] | str
    """A GPU schedule, or ``"default"``: ``qidao.compile``'s default GPU schedules."""
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
            g = np.asarray(g)
            if g.shape != w.shape:
                raise AssertionError(
                    f"{self.name}: output #{k} has shape {g.shape}, expected {w.shape}"
                )
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            ok = np.isclose(g64, w64, rtol=rtol, atol=atol)
            if not ok.all():
                bad = np.unravel_index(int(np.argmin(ok)), w.shape)
                where = tuple(int(i) for i in bad)
                raise AssertionError(
                    f"{self.name}: output #{k} differs from the NumPy reference at "
                    f"{where}: got {g64[bad]!r}, expected {w64[bad]!r} "
                    f"({int((~ok).sum())} of {ok.size} elements off; rtol {rtol}, "
                    f"atol {atol})"
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
        from qidao.tools.examples import chain_graph

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
    "TEST_WORKLOADS",
    "GpuWorkload",
    "default_scheduled",
    "five_op_chain",
    "matmul",
    "softmax",
    "tanh_chain",
    "tiled_matmul",
]
