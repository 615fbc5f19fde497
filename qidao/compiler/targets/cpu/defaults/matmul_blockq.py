"""The default schedule of a ``tg.matmul_blockq`` kernel (a float32 matrix times
a weight in GGUF blocks, ``passes/kernels/lowering/matmul_blockq.py``): the
outermost loop, over the weight's rows ``n``, in parallel when the work pays.

The lowering already puts what matters in place: ``n`` outermost, so each weight
row (``K/32`` blocks or ``K/256`` ``Q4_K`` super-blocks, a few KiB) is decoded for every row of ``x`` while it is
in the caches, and each block's 32 products in two 16-float vectors that LLVM
keeps in registers. Each ``n`` has its own row of ``lanes``, so its iterations
are independent."""

from __future__ import annotations

import math
import re

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.loops import parallel_outer

ROW_LOOP = re.compile(r"b\d+|i|i_o|i_i")
"""The loops over x's rows: its batch dimensions and ``i`` (not ``blk``)."""


def schedule_matmul_blockq(s: Schedule, kernel: str, threads: int) -> str:
    """``n`` in parallel on ``threads`` threads when its ``M·K`` multiply-adds per
    iteration add up to enough work."""
    extents = s.extents(kernel)
    done: list[str] = []
    if "e_mul" in extents:  # rows in tiles: each block's products on vectors
        s.vectorize(kernel, "e_mul", 16)
        done.append("e_mul on 16-wide vectors")
    rows = [v for name, v in extents.items() if ROW_LOOP.fullmatch(name)]
    block = extents.get("e_init") or 1  # its elements: 32, or Q4_K's 256
    per_n = math.prod(v or 1 for v in rows) * (extents.get("blk") or 1) * block
    try:
        done.append(parallel_outer(s, kernel, threads, ["n"], per_n))
    except NotApplicable:
        if not done:
            raise
    return "; ".join(done)
