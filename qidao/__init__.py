"""qidao: a tensor compiler on xDSL.

import qidao
compiled = qidao.compile(model)        # onnx.ModelProto, .onnx/.mlir, builder Graph
outputs = compiled(*inputs)            # NumPy arrays in, NumPy arrays out
print(compiled.ir("affine"))           # tg, affine, scf, cf, llvm-dialect, llvm, ...
compiled.stats                         # kernels, buffers, peak_bytes, ...
"""

from qidao.compiler.compile import Compiled, compile

__all__ = ["Compiled", "compile"]
__version__ = "0.1.0"
