"""The patterns of ``convert-to-llvm``, one file per source dialect: the shared state
and types (``lowering.py``), arith/math, func/cf, memref, vector and the outlined
parallel regions."""
