"""Whether this process may run AMX tile instructions.

Two things must hold: the CPU has AMX-TILE and AMX-INT8 (LLVM's features
``amx-tile`` and ``amx-int8``), and Linux has granted the process the tile data
state. Linux enables the 8 KiB of tile registers per process on request only
(``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``, kernel 5.16 and
later); a tile instruction in a process that did not ask stops it with SIGILL.
:func:`amx_available` asks once (the grant covers every thread of the process)
and answers False where the CPU lacks the features, the OS is not Linux on
x86-64, or the kernel refuses.
"""

from __future__ import annotations

import ctypes
import functools
import platform

from qidao.runtime.cpu import host_has

AMX_FEATURES = ("amx-tile", "amx-int8")
"""LLVM's names for the tile registers and their 8-bit products (``tdpbusd``)."""
AMX_BF16_FEATURE = "amx-bf16"
"""LLVM's name for the tiles' bfloat16 products (``tdpbf16ps``)."""

_SYS_ARCH_PRCTL = 158  # x86-64
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18


@functools.cache
def tiles_granted() -> bool:
    """Ask Linux for the tile data state; whether it granted it."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA)
    except (OSError, AttributeError):
        return False
    return int(rc) == 0


def amx_available() -> bool:
    """The host CPU has AMX-INT8 and this process may use its tiles."""
    return all(host_has(f) for f in AMX_FEATURES) and tiles_granted()


def amx_bf16_available() -> bool:
    """:func:`amx_available`, and the host CPU has AMX-BF16 too."""
    return amx_available() and host_has(AMX_BF16_FEATURE)
