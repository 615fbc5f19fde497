"""Schedule primitives: affine loops -> affine loops, one primitive per file (split,
peel, reorder, tile, loop-fuse, unroll, vectorize, parallel, bind, block-stride,
tensorize, cache-read, cache-write, compute-at), each also a method of
``qidao.compiler.schedule.Schedule``. The loop library they share is ``loops/``."""
