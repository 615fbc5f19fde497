"""``prefetch``: while one iteration of a loop runs, fetch what the next one reads,
spread evenly over the iterations in between.

    for a in [0, A)                          for a in [0, A)
      for i in [0, I)                  ==>     for i in [0, I)
        for k in [0, K)                          for k in [0, K)
          ... B[a, k, c] ...                       e = (i K + k) floor(S / (I K))
                                                   cache.prefetch B[min(a + 1, A - 1),
                                                                    e floordiv 32,
                                                                    e mod 32]
                                                   ... B[a, k, c] ...

(``B`` of shape ``[A, K, 32]``: the slice ``B[a + 1]`` has S = 32 K elements.)

What it is for: a matmul whose weight comes from memory (a whole model's weights do
not stay in the caches from one call to the next) reads each 32-column panel of it
once per row tile. The first row tile waits on memory, the hardware prefetcher
running only a few lines ahead of it; the others find the panel in L2 and leave
memory idle. Prefetching the next panel a little at every step of every row tile
keeps memory busy while the cores compute: ResNet-50's last 3x3 convolution
(49 x 4608 @ 4608 x 512, 9 MiB of panels; Xeon, one thread, caches flushed between
calls) 3.34 -> 2.42 ms (ONNX Runtime 2.08-2.25), with warm caches within noise.

Options: ``kernel``, ``loop`` (the loop whose body prefetches), ``buffer`` (the
``name_hint`` of a memref that ``loop``'s body loads), ``ahead`` (an enclosing loop)
and ``locality`` (LLVM's hint, 0..3, default 2: into L2), e.g.
``prefetch{kernel="main_k0_fused" loop="k" buffer="w_panels" ahead="j_o"}``.

The rule: every load of ``buffer`` in ``loop``'s body has ``ahead``'s induction
variable alone as its first index, and no other index reads it (iteration ``a`` of
``ahead`` reads the slice ``buffer[a]``). The loops from ``ahead`` (exclusive) down
to ``loop`` (inclusive), with constant bounds from 0 and step 1, run T iterations
per iteration of ``ahead``; the t-th (their ivs linearized, outermost first)
prefetches element ``t floor(S / T)`` of the slice ``buffer[min(a + 1, A - 1)]``
(row-major, S elements; A the buffer's leading dimension) when S >= T, an index
linear in the loops that LLVM turns into a pointer increment (the T prefetches
cover at least half of the slice, in order; the matmul's 32 / I elements a step
for I row tiles cover 88-100 %), else element ``floor(t S / T)``. The last slice is prefetched again by its own iteration
(the clamp keeps every index in bounds). Inserted at the start of ``loop``'s body (``cache.prefetch``, lowered
to ``llvm.prefetch``).

A prefetch reads nothing and writes nothing the program sees, so it never changes
a result; it costs a few instructions per iteration of ``loop`` (a schedule uses it
where memory, not the core, is the bound: ``compiler/targets/cpu/defaults/matmul.py``).

Errors (``ScheduleError`` subclasses, naming kernel and loop): an unknown kernel or
loop; ``loop`` not inside ``ahead``; a loop in between (or ``ahead``) whose bounds are
not constants, or do not start at 0, or whose step is not 1; no load of ``buffer`` in
``loop``'s body, or loads of two memrefs by that name; a load whose first index is
not ``ahead``'s variable alone, or another index that reads it; ``ahead`` of one
iteration (no next slice); a locality outside 0..3. All checks come before the first
change to the IR.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qidao.dialects.cache import LOCALITIES, PrefetchOp
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
)
from qidao.passes.schedule.loops.linear import coefficient
from qidao.passes.schedule.loops.nest import (
    find_loop,
    iv,
    loop_name,
    require_constant_bounds,
)

PRIMITIVE = "prefetch"


def prefetch_next(
    module: ModuleOp,
    kernel: str,
    loop: str,
    buffer: str,
    ahead: str,
    locality: int = 2,
) -> None:
    """In ``loop``'s body, prefetch ``buffer``'s slice for the next iteration of
    ``ahead`` (module docstring)."""
    if locality not in LOCALITIES:
        raise InvalidArgumentError(
            PRIMITIVE, kernel, loop, f"locality must be 0..3, got {locality}"
        )
    _, body_loop = find_loop(module, PRIMITIVE, kernel, loop)
    _, ahead_loop = find_loop(module, PRIMITIVE, kernel, ahead)
    chain = _chain(body_loop, ahead_loop, kernel, loop, ahead)
    first, end = require_constant_bounds(ahead_loop, PRIMITIVE, kernel)
    if end - first < 2:
        raise IllegalScheduleError(
            PRIMITIVE, kernel, ahead, "it has one iteration: there is no next slice"
        )
    trips: list[int] = []
    for inner in chain:
        lb, ub = require_constant_bounds(inner, PRIMITIVE, kernel)
        if lb != 0:
            raise IllegalScheduleError(
                PRIMITIVE, kernel, str(loop_name(inner)), f"it starts at {lb}, not 0"
            )
        trips.append(ub)
    memref = _slice_reads(body_loop, iv(ahead_loop), buffer, kernel, loop, ahead)
    t = memref.type
    assert isinstance(t, MemRefType)
    shape = list(t.get_shape())[1:]
    size, total = math.prod(shape), math.prod(trips)
    # t-th iteration (ivs linearized, outermost first) -> element floor(t S / T)
    step: AffineExpr = AffineExpr.constant(0)
    for d, trip in enumerate(trips):
        step = step * trip + AffineDimExpr(d)
    if size >= total:  # a whole number of elements a step: linear in the ivs
        element = step * (size // total)
    else:
        g = math.gcd(size, total)
        element = (step * (size // g)) // (total // g)
    results: list[AffineExpr] = []
    stride = size
    for d, extent in enumerate(shape):
        stride //= extent
        index = element // stride if stride > 1 else element
        results.append(index % extent if d else index)
    ivs = [iv(inner) for inner in chain]
    last = AffineExpr.constant(t.get_shape()[0] - 1)  # the last slice
    following = affine.MinOp(
        [iv(ahead_loop)],
        AffineMapAttr(AffineMap(1, 0, (AffineDimExpr(0) + 1, last))),
    )
    ops: list[Operation] = [following]
    indices: list[SSAValue] = [following.results[0]]
    for expr in results:
        apply = affine.ApplyOp(ivs, AffineMapAttr(AffineMap(len(ivs), 0, (expr,))))
        ops.append(apply)
        indices.append(apply.result)
    ops.append(PrefetchOp(memref, indices, locality))
    Rewriter.insert_op(ops, InsertPoint.at_start(body_loop.body.block))


def _chain(
    body_loop: affine.ForOp,
    ahead_loop: affine.ForOp,
    kernel: str,
    loop: str,
    ahead: str,
) -> list[affine.ForOp]:
    """The loops from ``ahead_loop`` (exclusive) down to ``body_loop`` (inclusive),
    outermost first, or an error when ``body_loop`` is not inside it."""
    chain: list[affine.ForOp] = []
    op: Operation | None = body_loop
    while op is not None and op is not ahead_loop:
        if isinstance(op, affine.ForOp):
            chain.append(op)
        op = op.parent_op()
    if op is None or body_loop is ahead_loop:
        raise IllegalScheduleError(
            PRIMITIVE, kernel, loop, f"it is not nested in '{ahead}'"
        )
    return chain[::-1]


def _slice_reads(
    body_loop: affine.ForOp,
    ahead_iv: SSAValue,
    buffer: str,
    kernel: str,
    loop: str,
    ahead: str,
) -> SSAValue:
    """The memref ``buffer`` that ``body_loop``'s body loads at ``[ahead, ...]``
    (first index ``ahead``'s variable alone, no other index reading it)."""
    loads = [
        op
        for op in body_loop.body.walk()
        if isinstance(op, affine.LoadOp | affine.VectorLoadOp)
        and op.memref.name_hint == buffer
    ]
    if not loads:
        raise IllegalScheduleError(
            PRIMITIVE, kernel, loop, f"its body loads no memref named '{buffer}'"
        )
    memrefs = {id(op.memref) for op in loads}
    if len(memrefs) > 1:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            loop,
            f"its body loads {len(memrefs)} memrefs named '{buffer}'",
        )
    for op in loads:
        access = op.map.data
        results = access.results
        operands = list(op.indices)
        first = _operand(results[0], access, operands) if results else None
        if first is not ahead_iv:
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                loop,
                f"'{buffer}' is read at {op.map.data} whose "
                f"first index is not '{ahead}' alone: no slice per iteration of it",
            )
        for expr in results[1:]:
            if coefficient(expr, operands, access.num_dims, ahead_iv) != 0:
                raise IllegalScheduleError(
                    PRIMITIVE,
                    kernel,
                    loop,
                    f"'{buffer}' is read at {op.map.data}, "
                    f"whose later indices read '{ahead}' too",
                )
    return loads[0].memref


def _operand(
    expr: AffineExpr, access: AffineMap, operands: list[SSAValue]
) -> SSAValue | None:
    """The operand an index that is one dimension or symbol alone reads, else
    None."""
    if isinstance(expr, AffineDimExpr):
        return operands[expr.position]
    if isinstance(expr, AffineSymExpr):
        return operands[access.num_dims + expr.position]
    return None


@dataclass(frozen=True)
class PrefetchPass(ModulePass):
    """While ``ahead`` runs one iteration, prefetch ``buffer``'s slice of the next
    in ``loop``'s body, spread over the iterations in between."""

    name = "prefetch"

    kernel: str
    loop: str
    buffer: str
    ahead: str
    locality: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        prefetch_next(
            op, self.kernel, self.loop, self.buffer, self.ahead, self.locality
        )
