"""qidao: a tensor compiler on xDSL.

import qidao
compiled = qidao.compile(model)        # onnx.ModelProto, .onnx/.mlir, builder Graph
outputs = compiled(*inputs)            # NumPy arrays in, NumPy arrays out
print(compiled.ir("affine"))           # tg, affine, scf, cf, llvm-dialect, llvm, ...
compiled.stats                         # kernels, buffers, peak_bytes, ...
f = qidao.compile(model, grad=["w"])   # outputs, then d sum(output 0) / d w
qidao.compile(model, debug=qidao.PrintIR(after_change=True, diff=True))  # per pass
qidao.compile(model, disable=["fuse"])  # skip an optional pass
qidao.gradcheck(model, inputs, wrt=["w"])  # vs float64 central differences
print(qidao.bisect(model))             # the first pass/kernel/primitive that is wrong
@qidao.custom_op("demo::swish", vjp=...)  # a user op: forward (and vjp) in tg ops
except qidao.QidaoError                # every error qidao raises for a user

``qidao.compile`` and ``qidao.Compiled`` load the compiler on first use, so that a
tool that needs only the dialects and passes (``qidao-opt``, which lit runs for
every FileCheck line) starts without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from qidao.errors import (
    ArgumentError,
    CheckError,
    GradcheckError,
    ModelError,
    QidaoError,
    RecordsError,
    ResourceError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from qidao.compiler.bisect import bisect
    from qidao.compiler.compile import Compiled, compile
    from qidao.compiler.gradcheck import gradcheck
    from qidao.compiler.pipeline import InternalCompilerError
    from qidao.compiler.print_ir import PrintIR
    from qidao.compiler.schedule import ScheduleError
    from qidao.frontend.custom import custom_op

__all__ = [
    "ArgumentError",
    "CheckError",
    "Compiled",
    "GradcheckError",
    "InternalCompilerError",
    "ModelError",
    "PrintIR",
    "QidaoError",
    "RecordsError",
    "ResourceError",
    "ScheduleError",
    "UnsupportedError",
    "bisect",
    "compile",
    "custom_op",
    "gradcheck",
]
__version__ = "0.1.0"

_LAZY = {
    "Compiled": "qidao.compiler.compile",
    "bisect": "qidao.compiler.bisect",
    "compile": "qidao.compiler.compile",
    "custom_op": "qidao.frontend.custom",
    "gradcheck": "qidao.compiler.gradcheck",
    "InternalCompilerError": "qidao.compiler.pipeline",
    "PrintIR": "qidao.compiler.print_ir",
    "ScheduleError": "qidao.compiler.schedule",
}
"""Names loaded on first use, from the module that defines them (the error hierarchy:
``qidao/errors.py``)."""


def __getattr__(name: str) -> Any:
    if name == "optim":  # the optimizers, a module: qidao.optim.SGD(...)
        return importlib.import_module("qidao.optim")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'qidao' has no attribute {name!r}")
