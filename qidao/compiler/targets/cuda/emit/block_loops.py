"""Block-stride loops (``block_stride``) as C: the threads of ``threadIdx.x`` deal out
the iterations, and the values the loop carries are combined across them.

A block-stride loop over ``T`` threads, ``for r in [lb, ub) step s`` carrying
``acc = init`` (an accumulation: ``loops/block.py`` rule 4), becomes::

    float acc = -0.0f;                   // this thread's partial: the identity
    for (long long r = lb + s * (long long)threadIdx.x; r < ub; r += T * s) {
      ...                                // the body, acc = acc + x
    }
    {  // acc: the block's T partials combined (W = T / 32 warps)
      for (int qd_lane = 16; qd_lane > 0; qd_lane /= 2) {   // within each warp:
        const float qd_other = __shfl_xor_sync(0xffffffffu, acc, qd_lane);
        acc = acc + qd_other;            // a butterfly: every lane ends with the
      }                                  // warp's total, the same bits in each
      __syncthreads();                   // (W > 1) the slots are free
      if ((threadIdx.x & 31) == 0) qd_red_float[row * W + threadIdx.x / 32] = acc;
      __syncthreads();                   // every warp's total is there
      acc = qd_red_float[row * W];       // every thread adds them in one order:
      for (int qd_w = 1; qd_w < W; ++qd_w) acc = acc + qd_red_float[row * W + qd_w];
    }
    const float sum = init + acc;        // the loop's result, in every thread

``row`` is the thread's row of the block (``threadIdx.y``, then ``threadIdx.z``,
bound around the loop: several rows a block), ``qd_red_<type>`` one
``__shared__`` array per element type, ``W`` slots a row, declared at the top of
the function. Every thread of a row ends with the same bits (the butterfly adds
the same two values in each lane, commutatively; the warps' totals are added in
one order), which the code after the loop relies on: it runs in every thread
and must agree (a store of the total is made by ``threadIdx.x == 0`` alone).

A ``__syncthreads()`` ends every block-stride loop (the combine's first barrier
is that barrier when ``W > 1``), so what the loop wrote is seen by the code and
the loops after it; every thread reaches it (``loops/block.py`` rule 2).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, func, math
from xdsl.ir import Block

from qidao.compiler.targets.cuda.emit.affine_exprs import fold
from qidao.compiler.targets.cuda.emit.c_types import c_type, float_literal
from qidao.compiler.targets.cuda.emit.writer import CWriter
from qidao.passes.schedule.bind import stride_threads
from qidao.passes.schedule.loops.block import WARP, identity_of, reduction_kind
from qidao.passes.schedule.loops.nest import loop_name

SCRATCH = "qd_red_{}"
"""The ``__shared__`` array of a launch's reductions of one C type."""


def combine_c(kind: type, ctype: str, a: str, b: str) -> str:
    """The C expression that combines two partials of a reduction ``kind``."""
    suffix = "f" if ctype == "float" else ""
    if kind in (arith.AddfOp, math.FmaOp):
        return f"{a} + {b}"
    if kind is arith.MaximumfOp:
        return f"qd_maximum{suffix}({a}, {b})"
    if kind is arith.MinimumfOp:
        return f"qd_minimum{suffix}({a}, {b})"
    if kind is arith.MaxnumfOp:
        return f"fmax{suffix}({a}, {b})"
    assert kind is arith.MinnumfOp, kind
    return f"fmin{suffix}({a}, {b})"


class BlockLoopWriter(CWriter):
    """The block-stride loops of a kernel body (the statement writer's base)."""

    block_dims: tuple[int, int, int] = (1, 1, 1)
    """The launch's block (the rows of a block-stride reduction's slots)."""

    def __init__(self, fn: func.FuncOp, kernel: str) -> None:
        super().__init__(fn, kernel)
        self.scratch: dict[str, int] = {}
        """C type -> elements of its ``__shared__`` reduction slots, filled while
        writing."""

    def block(self, block: Block) -> None:
        raise NotImplementedError  # the statement writer's

    def assign_yield(self, block: Block, targets: Sequence[str]) -> None:
        raise NotImplementedError  # the statement writer's

    def block_stride_loop(self, op: affine.ForOp) -> None:
        """Write the block-stride loop ``op`` and the combine of what it carries."""
        w = self
        threads = stride_threads(op)
        assert threads is not None
        name = w.fresh(loop_name(op) or op.body.block.args[0].name_hint, "i")
        w.names[op.body.block.args[0]] = name
        lower = w.map_indices(op.lowerBoundMap.data, op.lowerBoundOperands)
        upper = w.map_indices(op.upperBoundMap.data, op.upperBoundOperands)
        step = op.step.value.data
        kinds = []
        partials = []
        for k, (arg, result) in enumerate(
            zip(op.body.block.args[1:], op.results, strict=True)
        ):
            kind = reduction_kind(op, k)
            assert kind is not None, "checked by block_stride"
            ctype = c_type(arg.type)
            var = w.fresh(arg.name_hint or result.name_hint, "acc")
            identity = float_literal(identity_of(kind), arg.type)
            w.line(f"{ctype} {var} = {identity};  // this thread's partial")
            w.names[arg] = var
            kinds.append(kind)
            partials.append(var)
        offset = (
            "(long long)threadIdx.x"
            if step == 1
            else f"{step} * (long long)threadIdx.x"
        )
        lb = fold("max", lower)
        start = offset if lb == "0" else f"{lb} + {offset}"
        ub = fold("min", upper)
        w.line(
            f"for (long long {name} = {start}; {name} < {ub}; {name} += {threads * step}) "
            f"{{  // block-stride: {threads} threads of threadIdx.x"
        )
        w.depth += 1
        w.block(op.body.block)
        w.assign_yield(op.body.block, partials)
        w.depth -= 1
        w.line("}")
        warps = threads // WARP
        for kind, var, init, result, arg in zip(
            kinds, partials, op.inits, op.results, op.body.block.args[1:], strict=True
        ):
            w.combine(kind, c_type(arg.type), var, warps)
            total = w.fresh(result.name_hint, "total")
            w.line(
                f"const {c_type(arg.type)} {total} = "
                f"{combine_c(kind, c_type(arg.type), w.name(init), var)};"
            )
            w.names[result] = total
        if warps == 1 or not kinds:
            w.line(
                f"__syncthreads();  // the block's writes in '{loop_name(op)}' are seen"
            )

    def combine(self, kind: type, ctype: str, var: str, warps: int) -> None:
        """Combine ``var`` across the threads of the row: shuffles, then the warps'
        slots in ``__shared__`` memory when the row has several warps."""
        w = self
        w.line(f"{{  // {var}: the row's {warps * WARP} partials combined")
        w.depth += 1
        w.line("for (int qd_lane = 16; qd_lane > 0; qd_lane /= 2) {")
        w.depth += 1
        w.line(
            f"const {ctype} qd_other = __shfl_xor_sync(0xffffffffu, {var}, qd_lane);"
        )
        w.line(f"{var} = {combine_c(kind, ctype, var, 'qd_other')};")
        w.depth -= 1
        w.line("}")
        if warps > 1:
            scratch = SCRATCH.format(ctype.replace(" ", "_"))
            rows = w.block_dims[1] * w.block_dims[2]
            w.scratch[ctype] = max(w.scratch.get(ctype, 0), rows * warps)
            row = w.row()
            base = f"{row} * {warps} + " if row != "0" else ""
            w.line("__syncthreads();  // the slots are free")
            w.line(
                f"if ((threadIdx.x & 31) == 0) {scratch}[{base}threadIdx.x / 32] = {var};"
            )
            w.line("__syncthreads();  // every warp's total is in its slot")
            w.line(f"{var} = {scratch}[{base}0];")
            w.line(
                f"for (int qd_w = 1; qd_w < {warps}; ++qd_w) "
                f"{var} = {combine_c(kind, ctype, var, f'{scratch}[{base}qd_w]')};"
            )
        w.depth -= 1
        w.line("}")

    def row(self) -> str:
        """The C index of the thread's row in the block (``threadIdx.y``, ``z``)."""
        w = self
        _, y, z = w.block_dims
        if y == 1 and z == 1:
            return "0"
        if z == 1:
            return "(int)threadIdx.y"
        return f"(int)(threadIdx.y + {y} * threadIdx.z)"


def scratch_declarations(scratch: dict[str, int]) -> list[str]:
    """The ``__shared__`` arrays of a launch's block-wide reductions."""
    return [
        f"__shared__ {ctype} {SCRATCH.format(ctype.replace(' ', '_'))}[{size}];"
        f"  // a slot per warp of each row: block-wide reductions"
        for ctype, size in sorted(scratch.items())
    ]


__all__ = ["SCRATCH", "BlockLoopWriter", "combine_c", "scratch_declarations"]
