"""qidao: a tensor compiler on xDSL.

import qidao
compiled = qidao.compile(model)        # onnx.ModelProto, .onnx/.mlir, builder Graph
outputs = compiled(*inputs)            # NumPy arrays in, NumPy arrays out
print(compiled.ir("affine"))           # tg, affine, scf, cf, llvm-dialect, llvm, ...
compiled.stats                         # kernels, buffers, peak_bytes, ...

``qidao.compile`` and ``qidao.Compiled`` load the compiler on first use, so that a
tool that needs only the dialects and passes (``qidao-opt``, which lit runs for
every FileCheck line) starts without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qidao.compiler.compile import Compiled, compile

__all__ = ["Compiled", "compile"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        from qidao.compiler import compile as module

        return getattr(module, name)
    raise AttributeError(f"module 'qidao' has no attribute {name!r}")
