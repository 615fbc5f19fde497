"""The targets qidao compiles for, built the same way: lowering stages (in
``qidao.compiler.pipeline``), an emitter, default schedules and the compiled
object. ``cpu/``: LLVM IR JIT-compiled by llvmlite; ``cuda/``: CUDA C built by nvcc
and launched with pycuda."""
