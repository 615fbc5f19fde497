"""The GPU ladder: matmul 4096 FP32 up the GPU's schedule ladder, rung by rung.

``qidao bench-cuda --suite ladder`` runs the same graph (``x (m x k) @ w (k x
n)``, float32, kernel ``main_k0_matmul``) under one schedule per rung, each
checked against PyTorch on the device before it is timed, each beside cuBLAS in
the same precision on the same inputs (its ``torch`` row: the CSV's
``vs_torch`` is the ratio to cuBLAS), the exact trace of ``compiled.stats
["schedule"]`` in the CSV's ``schedule`` column, as ``qidao bench ladder`` does
on the CPU. The rungs, each a step the one before lacks::

    naive         schedule=None: the lowered loops, a <<<1, 1>>> launch (i, k, j
                  serial on one thread). At 4096 that is 2 * 4096^3 serial FLOPs,
                  minutes a call: this rung runs at 128^3 (NAIVE_SIZE) and says so
                  in its summary and the plot; its cuBLAS row is 128^3 too
    bind          a thread per element of C: j split by 256 onto threadIdx.x and
                  blockIdx.x, i on blockIdx.y, k serial in each thread
    shared        16 x 16 tiles of C a block, the 16 x 16 tiles of x and w staged in
                  __shared__ per k step (``tiled_matmul``'s hand-written schedule)
    register      schedule="default": the register tile (a thread's 8 x 8 of a
                  128 x 128 block tile, staged tiles; whatever the default GPU
                  schedule learns, double-buffered staging included, shows here)
    tensor_cores  the default schedule with tensor_cores="tf32": WMMA on the tensor
                  cores, precision tf32, beside cuBLAS with TF32 on
    tuned         the default schedule with ``--records FILE`` (a ``qidao tune
                  matmul4096 --target cuda`` run): the record's trace wins, and
                  records with none for this GPU fail the row (no silent default);
                  without records the row says ``not run: no records (qidao tune
                  matmul4096 --target cuda)``, which is not a failure

So a rung's schedule, for the bind rung (``bind``), as its trace prints::

    s.split("main_k0_matmul", "j_init", 256)
    s.bind("main_k0_matmul", "j_init_o", "blockIdx.x")
    ...
    s.split("main_k0_matmul", "j", 256)
    s.reorder("main_k0_matmul", "i", "j_o", "j_i", "k")
    s.bind("main_k0_matmul", "i", "blockIdx.y")

``ladder-small`` is the same rungs at 64 x 64 x 64 (named ``<rung>_small``: the
bind rung's split by 64, the tensor cores' 64 x 64 tile), for the emulator in the
tests. The plot (``bench_cuda_plot.plot_ladder``) draws TFLOP/s per rung with
cuBLAS FP32 and TF32 as lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from qidao.bench.cuda.workloads import (
    MATMUL_KERNEL,
    TENSOR_CORES,
    GpuWorkload,
    dense_matmul,
    tiled_matmul,
)
from qidao.compiler.schedule import Schedule

SIZE = 4096
"""m = k = n of the ladder (the speed targets' matmul)."""

NAIVE_SIZE = 128
"""The naive rung's m = k = n: one GPU thread does all of it (at 128^3, 4.2 M
multiply-adds, well under a second a call; at 4096, minutes)."""

SMALL_SIZE = 64
"""m = k = n of ``ladder-small`` (every rung, the emulator's size)."""

BIND_THREADS = 256
"""Threads a block in the bind rung (fewer when n is smaller)."""

RUNGS = ("naive", "bind", "shared", "register", "tensor_cores", "tuned")
"""The rungs, in order."""

TUNE_COMMAND = f"qidao tune matmul{SIZE} --target cuda"
"""What makes the records of the tuned rung."""


def bind_schedule(n: int) -> Callable[[Schedule], None]:
    """A thread per element of C: j split by ``min(BIND_THREADS, n)`` onto
    threadIdx.x / blockIdx.x, i on blockIdx.y, k serial inside (the zero-fill nest
    the same way)."""
    threads = min(BIND_THREADS, n)

    def schedule(s: Schedule) -> None:
        k = MATMUL_KERNEL
        s.split(k, "j_init", threads)
        s.bind(k, "i_init", "blockIdx.y")
        s.bind(k, "j_init_o", "blockIdx.x")
        s.bind(k, "j_init_i", "threadIdx.x")
        s.split(k, "j", threads)
        s.reorder(k, "i", "j_o", "j_i", "k")
        s.bind(k, "i", "blockIdx.y")
        s.bind(k, "j_o", "blockIdx.x")
        s.bind(k, "j_i", "threadIdx.x")

    return schedule


def _rung(rung: str, size: int, small: bool) -> GpuWorkload:
    """Rung ``rung`` of the ladder at ``size`` cubed (the naive one at
    ``NAIVE_SIZE`` unless ``small``)."""
    n = size if small or rung != "naive" else NAIVE_SIZE
    base = tiled_matmul(n, n, n)  # the graph, inputs, references, tolerance
    at = f"{n}x{n} @ {n}x{n} float32"
    name = f"ladder_{rung}" + ("_small" if small else "")
    if rung == "naive":
        return dataclasses.replace(
            base,
            name=name,
            summary=f"{at}: schedule=None, the lowered loops serial on one thread "
            f"(<<<1, 1>>>){'' if small else f'; at {n}^3, not {size}^3: serial'}",
            schedule=None,
        )
    if rung == "bind":
        return dataclasses.replace(
            base,
            name=name,
            summary=f"{at}: a thread per element of C, k serial",
            schedule=bind_schedule(n),
        )
    if rung == "shared":
        return dataclasses.replace(base, name=name, summary=base.summary)
    if rung == "register":
        return dataclasses.replace(
            base,
            name=name,
            summary=f"{at}: the default GPU schedule (the register tile)",
            schedule="default",
        )
    if rung == "tensor_cores":
        return dataclasses.replace(
            base,
            name=name,
            summary=f"{at} on the tensor cores in TF32 (tensor_cores='tf32'), "
            "against cuBLAS TF32",
            schedule="default",
            precision="tf32",
            options=((TENSOR_CORES, "tf32"),),
            tolerance=dense_matmul(n, n, n, "tf32").tolerance,
        )
    if rung == "tuned":
        return dataclasses.replace(
            base,
            name=name,
            summary=f"{at}: the records of `{TUNE_COMMAND}` (--records FILE)",
            schedule="default",
            tune_command=f"qidao tune matmul{n} --target cuda",
        )
    raise ValueError(f"unknown ladder rung '{rung}'; choose from {RUNGS}")


def ladder(small: bool = False) -> dict[str, GpuWorkload]:
    """The rungs by name, in order: at ``SIZE`` (the naive one at ``NAIVE_SIZE``),
    or every one at ``SMALL_SIZE`` (``small``)."""
    size = SMALL_SIZE if small else SIZE
    workloads = [
        dataclasses.replace(_rung(rung, size, small), timeout_s=RUNG_TIMEOUT_S)
        for rung in RUNGS
    ]
    return {w.name: w for w in workloads}


RUNG_TIMEOUT_S = 60.0
"""Seconds a row of a rung may take (inputs, the reference, nvcc, the check and
the timing: about 10 on an H200; the bind rung's calls take tens of ms)."""

LADDER: dict[str, GpuWorkload] = ladder()
"""The rungs at the speed targets' size, in order."""

LADDER_SMALL: dict[str, GpuWorkload] = ladder(small=True)
"""The same at 64^3, for the emulator (``<rung>_small``)."""


def rung_of(workload: str) -> str:
    """The rung a ladder workload's name is (``ladder_bind_small`` -> ``bind``)."""
    name = workload.removeprefix("ladder_").removesuffix("_small")
    if not workload.startswith("ladder_") or name not in RUNGS:
        raise ValueError(f"'{workload}' is not a ladder rung; rungs: {RUNGS}")
    return name


__all__ = [
    "LADDER",
    "LADDER_SMALL",
    "NAIVE_SIZE",
    "RUNGS",
    "SIZE",
    "SMALL_SIZE",
    "TUNE_COMMAND",
    "bind_schedule",
    "ladder",
    "rung_of",
]
