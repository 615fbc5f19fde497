"""CPU lowering: affine loops -> the llvm dialect (expand-math, lower-affine,
convert-parallel-to-gomp, convert-to-llvm), and the profiling timers
(instrument-kernels). xDSL's ``convert-scf-to-cf`` and
``reconcile-unrealized-casts`` run between them."""
