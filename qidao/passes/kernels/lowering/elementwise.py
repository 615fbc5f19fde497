"""Elementwise kernels: one nest ``i0, i1, ...`` over the output, innermost last.

A standalone elementwise op and a ``tg.fused`` group lower the same way: the value
of the result at the loop index is computed by walking the op tree back to the
kernel's inputs (:class:`PointwiseEvaluator`), so intermediates stay in registers.
Broadcast operands read with their size-1 and missing dimensions pinned to 0.

A ``tg.fused`` group of elementwise ops lowers here (``lower_pointwise_group``; the
matmul, conv2d and row groups in ``fused.py`` reuse the evaluator for
their prologues and epilogues). Accepted inside such a body: every elementwise op
(``tg.ELEMENTWISE_OPS``: arithmetic, comparisons, logical ops, ``tg.select``,
``tg.cast``; their scalar code, per element type, is in ``scalar.py``),
the views ``tg.transpose``, ``tg.broadcast``, ``tg.view``,
``tg.reshape`` and ``tg.contiguous`` (on any value: they only change how loads
index), and
``tg.constant`` (a splat becomes ``arith.constant``; any other constant is read
from a ``memref.global`` with ``memref.get_global`` in the kernel). Anything else
raises :class:`TgLoweringError`. All results of one group must share a shape.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import memref
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.passes.kernels.lowering.common import (
    Emitter,
    Kernel,
    Source,
    TgLoweringError,
    broadcast_index,
    dim,
    element_type,
    loop_names,
    memref_type,
    reshape_index,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool, splat_of
from qidao.passes.kernels.lowering.scalar import (
    BINARY,
    UNARY,
    binary,
    cast,
    select,
    unary,
)

Index = tuple[AffineExpr, ...]

ELEMENTWISE_OPS: tuple[type[Operation], ...] = tg.ELEMENTWISE_OPS
"""The ops the evaluator computes elementwise (views and constants aside)."""

_VIEWS = (tg.TransposeOp, tg.BroadcastOp, tg.ViewOp, tg.ReshapeOp, tg.ContiguousOp)


class PointwiseEvaluator:
    """Computes a tensor value's element at an affine index inside a loop nest.

    ``known`` maps values already computed as scalars for the element at hand (a
    matmul/conv accumulator, a row's reduction result) to those scalars; they are
    used whatever the index (the caller guarantees they do not vary with it).
    """

    def __init__(
        self,
        em: Emitter,
        ivs: Sequence[SSAValue],
        sources: dict[SSAValue, Source],
        pool: ConstantPool,
        known: dict[SSAValue, SSAValue] | None = None,
    ) -> None:
        self.em = em
        self.ivs = list(ivs)
        self.sources = sources
        self.pool = pool
        self.known = {} if known is None else known
        self.memo: dict[tuple[SSAValue, Index], SSAValue] = {}

    def at(self, value: SSAValue, index: Sequence[AffineExpr]) -> SSAValue:
        """The element of ``value`` at ``index``, its operands' elements computed
        first, depth first and in operand order, with an explicit stack: a fused
        chain thousands of ops long must not meet Python's recursion limit."""
        if value in self.known:
            return self.known[value]
        root = (value, tuple(index))
        stack = [root]
        while stack:
            key = stack[-1]
            if key in self.memo:
                stack.pop()
                continue
            missing = [
                dep
                for dep in self._operands(*key)
                if dep[0] not in self.known and dep not in self.memo
            ]
            if missing:
                stack.extend(reversed(missing))  # the first operand on top
                continue
            stack.pop()
            self.memo[key] = self._compute(*key)  # every operand is in the memo
        return self.memo[root]

    def _operands(self, value: SSAValue, index: Index) -> list[tuple[SSAValue, Index]]:
        """The elements (value, index) that ``_compute`` reads to compute
        ``value`` at ``index``."""
        op = value.owner
        if value in self.sources or not isinstance(op, Operation):
            return []
        if type(op) in BINARY or isinstance(op, tg.SelectOp):
            return [(v, tuple(broadcast_index(index, shape(v)))) for v in op.operands]
        if type(op) in UNARY or isinstance(op, tg.CastOp):
            return [(op.operands[0], index)]
        if isinstance(op, tg.TransposeOp):
            return [(op.input, _transposed(index, ints(op.perm)))]
        if isinstance(op, tg.BroadcastOp):
            return [(op.input, tuple(broadcast_index(index, shape(op.input))))]
        if isinstance(op, tg.ViewOp | tg.ReshapeOp | tg.ContiguousOp):
            src = op.operands[0]
            return [(src, tuple(reshape_index(index, shape(value), shape(src))))]
        return []

    def _compute(self, value: SSAValue, index: Index) -> SSAValue:
        if value in self.sources:
            return self.em.load(self.sources[value], self.ivs, index)
        op = value.owner
        assert isinstance(op, Operation), f"{value} is not an input of the kernel"
        if type(op) in BINARY:
            lhs, rhs = (
                self.at(v, broadcast_index(index, shape(v))) for v in op.operands
            )
            return binary(self.em, op, lhs, rhs)
        if type(op) in UNARY:
            return unary(self.em, op, self.at(op.operands[0], index))
        if isinstance(op, tg.SelectOp):
            c, a, b = (
                self.at(v, broadcast_index(index, shape(v))) for v in op.operands
            )
            return select(self.em, c, a, b)
        if isinstance(op, tg.CastOp):
            source = element_type(op.input)
            return cast(self.em, self.at(op.input, index), source, op.target())
        if isinstance(op, tg.TransposeOp):
            return self.at(op.input, _transposed(index, ints(op.perm)))
        if isinstance(op, tg.BroadcastOp):
            return self.at(op.input, broadcast_index(index, shape(op.input)))
        if isinstance(op, tg.ViewOp | tg.ReshapeOp | tg.ContiguousOp):
            src = op.operands[0]
            return self.at(src, reshape_index(index, shape(value), shape(src)))
        if isinstance(op, tg.ConstantOp):
            splat = splat_of(op.value)
            if splat is not None:
                return self.em.scalar(splat)
            name = self.pool.global_for(op.value)
            glob = self.em.value(memref.GetGlobalOp(name, memref_type(value.type)))
            return self.em.load(glob, self.ivs, index)
        raise TgLoweringError(
            f"convert-tg-to-affine: '{op.name}' cannot be part of an elementwise "
            "kernel (tg.fused bodies take elementwise ops, views and constants)"
        )


def _transposed(index: Index, perm: Sequence[int]) -> Index:
    """The index of a transpose's input element that output ``index`` reads."""
    source: list[AffineExpr] = list(index)
    for k, p in enumerate(perm):
        source[p] = index[k]
    return tuple(source)


def _pointwise_kernel(
    k: Kernel,
    results: Sequence[SSAValue],
    sources: dict[SSAValue, Source],
    pool: ConstantPool,
    what: str,
) -> None:
    out_shape = shape(results[0])
    if any(shape(r) != out_shape for r in results):
        shapes = ", ".join(str(shape(r)) for r in results)
        raise TgLoweringError(
            f"convert-tg-to-affine: {what} results have different shapes ({shapes}); "
            "one kernel needs one output shape"
        )
    with k.em.nest(loop_names("i", len(out_shape)), out_shape) as ivs:
        ev = PointwiseEvaluator(k.em, ivs, sources, pool)
        index = [dim(d) for d in range(len(out_shape))]
        for result, out in zip(results, k.outputs, strict=True):
            k.em.store(ev.at(result, index), out, ivs, index)


def lower_elementwise(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    """``tg.add``, ``tg.relu``, ...: ``out[i] = f(a[bcast(i)], b[bcast(i)])``."""
    _pointwise_kernel(
        k, op.results, dict(zip(op.operands, sources, strict=True)), pool, op.name
    )


def lower_pointwise_group(
    group: tg.FusedOp,
    k: Kernel,
    args: dict[SSAValue, Source],
    pool: ConstantPool,
) -> None:
    """A ``tg.fused`` of elementwise ops: the whole body in one nest, block arguments
    read the inputs."""
    block = group.body.block
    accepted: tuple[type[Operation], ...] = (
        tg.YieldOp,
        tg.ConstantOp,
        *ELEMENTWISE_OPS,
        *_VIEWS,
    )
    for inner in block.ops:
        if not isinstance(inner, accepted):
            raise TgLoweringError(
                f"convert-tg-to-affine: tg.fused body holds '{inner.name}', but a "
                "fused kernel takes only elementwise ops, views and constants (or one "
                "matmul/conv2d with its epilogue, or row-wise reductions)"
            )
    terminator = block.last_op
    assert isinstance(terminator, tg.YieldOp)
    _pointwise_kernel(k, list(terminator.values), args, pool, "tg.fused")
