"""CPU lowering: affine loops -> the llvm dialect (expand-math, lower-affine,
convert-parallel-to-gomp, lower-scf-to-cf, convert-to-llvm), and the profiling
timers (instrument-kernels). xDSL's ``reconcile-unrealized-casts`` runs after
them."""
