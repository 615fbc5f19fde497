"""The GPU bench's suites: the workloads of the GPU speed targets, at their sizes and
small, and the GPU ladder.

``qidao bench-cuda --suite targets`` runs the workloads that measure the GPU path
against the hardware's limits (the copy bandwidth, cuBLAS, PyTorch), in this order,
every one with ``schedule="default"`` (the default GPU schedules, so a better
default shows at the next run), checked against PyTorch on the device before it is
timed, with its speed target:

| workload | what | target (qidao row) |
|---|---|---|
| ``chain26`` | relu(x*w + b)*s + c over 2^26 floats | >= 0.85 of the copy bandwidth |
| ``copy26`` | y = x over 2^26 floats: qidao, ``cuMemcpyDtoD``, torch ``copy_`` | |
| ``softmax8192`` | softmax over the last axis of 8192 x 8192 | >= 1.0x PyTorch |
| ``layernorm8192`` | layer norm (tg ops) over 8192 x 8192 | >= 1.0x PyTorch |
| ``matmul4096`` | 4096^3, FP32, TF32 off on both sides | >= 0.9x cuBLAS |
| ``matmul4096_tf32`` | the same on tensor cores (TF32) | >= 0.7x cuBLAS TF32 |
| ``matmul4096_fp16`` | float16 in and out, tensor cores | >= 0.7x cuBLAS FP16 |
| ``resnet50`` | ResNet-50, batch 32, 224x224 (``cuda_models.py``) | >= 1.0x eager |
| ``bert`` | BERT-base, sequence 128, batch 8 | >= 1.0x eager |

Each workload's ``timeout_s`` budgets its rows so the suite stays under about 4
minutes on an H200 when everything compiles (the models get the most: their
export and compile run on the CPU). ``targets-small`` is the same workloads at
sizes the emulator runs in seconds (``<name>_small``), for the tests.

``ladder`` is the GPU ladder (``cuda_ladder.py``): matmul 4096 FP32 under one
schedule per rung, from the naive loops to the tensor cores and the tuner's
records; ``ladder-small`` the same rungs at 64^3.

``issue13`` and ``issue13-small``, the suites' names before, are still accepted
(``SUITE_ALIASES``), with a note naming the new ones.
"""

from __future__ import annotations

import dataclasses

from qidao.bench.cuda.ladder import LADDER, LADDER_SMALL
from qidao.bench.cuda.models import (
    BERT_BASE_B8,
    BERT_TINY_B2,
    RESNET50_B32,
    RESNET_TINY_B2,
    zoo_workload,
)
from qidao.bench.cuda.workloads import (
    BENCH_WORKLOADS,
    GpuWorkload,
    Target,
    default_scheduled,
    dense_matmul,
    device_copy,
    five_op_chain,
    layer_norm,
    softmax,
)

OP_TIMEOUT_S = 60.0
"""Seconds a row of an operator workload may take (start, inputs, the reference,
compile, check, timing): about 10 on an H200."""

MODEL_TIMEOUT_S = {"resnet50": 180.0, "bert": 150.0}
"""Seconds a row of a whole model may take: the ONNX export (ResNet-50's BatchNorm
calibration at batch 32 included) and the compile run on the CPU."""


OF_COPY = Target("of_copy", 0.85)
"""The chain: at least 85% of the device-to-device copy bandwidth."""
AS_FAST = Target("vs_torch", 1.0)
"""Softmax, layer norm and the whole models: at least PyTorch eager's speed."""
FP32_MATMUL = Target("vs_torch", 0.9)
"""matmul FP32: at least 0.9x cuBLAS (TF32 off on both sides)."""
TENSOR_CORE_MATMUL = Target("vs_torch", 0.7)
"""matmul TF32 and FP16: at least 0.7x cuBLAS in the same precision."""


def _speed_targets(small: bool) -> list[GpuWorkload]:
    """The speed targets' workloads, in order; ``small``: emulator sizes, named
    ``<name>_small``."""
    log2n = 10 if small else 26
    rows, cols = (5, 40) if small else (8192, 8192)
    m, k, n = (64, 32, 64) if small else (4096, 4096, 4096)
    ops = [
        ("chain26", default_scheduled(five_op_chain(log2n)), OF_COPY),
        ("copy26", device_copy(log2n), None),
        ("softmax8192", default_scheduled(softmax(rows, cols)), AS_FAST),
        ("layernorm8192", layer_norm(rows, cols), AS_FAST),
        ("matmul4096", dense_matmul(m, k, n, "fp32"), FP32_MATMUL),
        ("matmul4096_tf32", dense_matmul(m, k, n, "tf32"), TENSOR_CORE_MATMUL),
        ("matmul4096_fp16", dense_matmul(m, k, n, "fp16"), TENSOR_CORE_MATMUL),
    ]
    suffix = "_small" if small else ""
    workloads = [
        dataclasses.replace(
            w, name=name + suffix, target=target, timeout_s=OP_TIMEOUT_S
        )
        for name, w, target in ops
    ]
    models = {
        "resnet50": RESNET_TINY_B2 if small else RESNET50_B32,
        "bert": BERT_TINY_B2 if small else BERT_BASE_B8,
    }
    workloads += [
        zoo_workload(name + suffix, model, AS_FAST, MODEL_TIMEOUT_S[name])
        for name, model in models.items()
    ]
    return workloads


TARGET_WORKLOADS: dict[str, GpuWorkload] = {
    w.name: w for w in _speed_targets(small=False)
}
"""The speed targets' workloads at their sizes, in order."""

TARGET_WORKLOADS_SMALL: dict[str, GpuWorkload] = {
    w.name: w for w in _speed_targets(small=True)
}
"""The same at sizes the emulator runs in seconds (``<name>_small``)."""

SUITES: dict[str, tuple[str, ...]] = {
    "targets": tuple(TARGET_WORKLOADS),
    "targets-small": tuple(TARGET_WORKLOADS_SMALL),
    "ladder": tuple(LADDER),
    "ladder-small": tuple(LADDER_SMALL),
}
"""``qidao bench-cuda --suite NAME``: the workloads, in order."""

SUITE_ALIASES: dict[str, str] = {"issue13": "targets", "issue13-small": "targets-small"}
"""Old suite names, still accepted (not listed): old name -> its suite."""

ALL_WORKLOADS: dict[str, GpuWorkload] = {
    **BENCH_WORKLOADS,
    **TARGET_WORKLOADS,
    **TARGET_WORKLOADS_SMALL,
    **LADDER,
    **LADDER_SMALL,
}
"""Every workload ``qidao bench-cuda`` knows, by name."""


def get_workload(name: str) -> GpuWorkload:
    """Workload ``name``, or a ValueError listing the names."""
    if name not in ALL_WORKLOADS:
        raise ValueError(
            f"unknown GPU workload '{name}'; choose from {', '.join(ALL_WORKLOADS)}"
        )
    return ALL_WORKLOADS[name]


__all__ = [
    "ALL_WORKLOADS",
    "MODEL_TIMEOUT_S",
    "OP_TIMEOUT_S",
    "SUITES",
    "SUITE_ALIASES",
    "TARGET_WORKLOADS",
    "TARGET_WORKLOADS_SMALL",
    "get_workload",
]
