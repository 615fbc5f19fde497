"""``llvm.fptosi`` and ``llvm.fptoui``, which xDSL's llvm dialect and its llvmlite
translator (xdsl as pinned in ``pyproject.toml``) lack: two cast ops of the same
kind as its ``llvm.sitofp``, registered with the translator's table of casts
(:func:`register`, idempotent, called when ``arith.py`` is imported).

Why not the saturating intrinsics (``llvm.fptoui.sat``) everywhere: they are
exact, but LLVM's x86 backend splits their vector forms into one conversion per
lane. A quantizing kernel (``float -> uint8``), which LLVM vectorizes, spent 87
µs on 128 x 1024 elements instead of ~20 (measured, one thread). ``arith.py``
writes the saturating conversion to an 8- or 16-bit integer as a clamp to the
type's range (both ends exact floats), the plain conversion, and NaN -> 0: the
same results as the intrinsic, each step one vector instruction.
"""

from __future__ import annotations

from xdsl.backend.llvm import convert_op
from xdsl.dialects import llvm
from xdsl.irdl import irdl_op_definition


@irdl_op_definition
class FPToSIOp(llvm.GenericCastOp):
    """``fptosi``: poison when the value does not fit (the caller clamps first)."""

    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(llvm.GenericCastOp):
    """``fptoui``: poison when the value does not fit (the caller clamps first)."""

    name = "llvm.fptoui"


def register() -> None:
    """Teach xDSL's llvmlite translator the two casts."""
    convert_op._CAST_OP_NAMES.setdefault(FPToSIOp, "fptosi")
    convert_op._CAST_OP_NAMES.setdefault(FPToUIOp, "fptoui")
