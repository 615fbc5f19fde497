"""The CPU target: LLVM IR from the llvm dialect (``emit.py``), JIT-compiled for the
host by llvmlite, default schedules per kernel kind (``defaults/``)."""
