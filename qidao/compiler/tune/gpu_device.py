"""The GPU part of a record's key: which device measured it.

A record of ``target="cuda"`` is keyed by the GPU's model and compute capability,
as pycuda names them (``"NVIDIA H200 (sm_90)"``), so a record tuned on one GPU is
never applied on another; the CPU emulation (``device="emulate"``) is the device
``"emulator"``, whose wall-clock times say nothing about a GPU: its records apply
only on the emulator, and a GPU's never there::

    gpu_key("emulate")  ==>  "emulator"
    gpu_key("cuda")     ==>  "NVIDIA H200 (sm_90)"       (device $CUDA_DEVICE or 0)
    gpu_key("cuda")     ==>  CudaUnavailableError("... no GPU here: pycuda is not
                             installed ...; device 'emulate' runs on the CPU")

Reading the name opens no context (``cuda.init`` and ``cuda.Device`` only).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from qidao.runtime.cuda import (
    CudaUnavailableError,
    EmulatedDevice,
    cuda_unavailable_reason,
)

EMULATOR = "emulator"
"""The device key of ``device="emulate"``."""
DEVICES = ("cuda", "emulate")


def require_gpu(why: str) -> None:
    """Raise ``CudaUnavailableError`` saying ``why`` a GPU is needed and why there
    is none (``cuda_unavailable_reason``); nothing when there is one."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise CudaUnavailableError(
            f"{why} needs a CUDA GPU, and there is none here: {reason}; "
            "device 'emulate' runs the CUDA C on the CPU emulator instead"
        )


@functools.cache
def _gpu_name() -> str:
    import pycuda.driver as cuda  # type: ignore[import-not-found]

    device = cuda.Device(int(os.environ.get("CUDA_DEVICE", "0")))
    major, minor = device.compute_capability()
    return f"{device.name()} (sm_{major}{minor})"


def gpu_key(device: Any, why: str = "a GPU record key") -> str:
    """The device key of ``device`` (``"cuda"``, ``"emulate"`` or a
    ``qidao.runtime.cuda`` device object): ``EMULATOR``, or the current GPU's
    model and compute capability; ``CudaUnavailableError`` naming ``why`` when
    ``device`` is the GPU and there is none."""
    if isinstance(device, EmulatedDevice) or device == "emulate":
        return EMULATOR
    if isinstance(device, str) and device != "cuda":
        raise ValueError(f"unknown device {device!r}; one of {', '.join(DEVICES)}")
    require_gpu(why)
    return _gpu_name()
