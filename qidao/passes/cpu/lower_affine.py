"""Lower the affine dialect to scf + arith: ``affine.for -> scf.for``, maps -> index math.

``affine.for`` becomes ``scf.for`` (bounds: max over the lower-bound map's results, min
over the upper-bound map's results; ``iter_args`` carried over; the ``qd.loop`` name and
every other discardable attribute kept). ``affine.if`` becomes ``scf.if`` on the
conjunction of its constraints; ``affine.min`` becomes a chain of ``arith.minsi``;
``affine.load``/``affine.store`` become ``memref.load``/``memref.store`` on the
evaluated map; ``affine.apply`` becomes its expression; ``affine.yield`` becomes
``scf.yield``.

A loop of one iteration (constant bounds) keeps its ``scf.for``, but its index is
replaced by the lower bound: a constant, which stays one when the loop's body is
outlined into a thread function (``convert-parallel-to-gomp`` clones constants in).
An in-place kernel that loads ``a[0, i]`` and stores ``a[%i0, i]`` then shows LLVM
one address (a loop index passed as an argument hid that, and the vector loop's
alias check sent every call to the scalar loop).

Affine expressions follow MLIR's semantics: ``a mod b`` lies in ``[0, b)``,
``floordiv`` rounds toward minus infinity and ``ceildiv`` toward plus infinity (for a
positive divisor). Constant subexpressions fold, ``x * 1`` and ``x + 0`` vanish.

Preconditions: none beyond verifying IR; ``affine.parallel`` and the vector ops are
not handled and are left in place. (xDSL 0.74 has no ``affine.max`` op; a map with
several lower bounds is how a max appears.)

Before:
    affine.for %i = 0 to 8 step 2 {
      %v = affine.load %a[%i mod 4] : memref<4xf32>
      affine.store %v, %b[%i] : memref<8xf32>
    } {qd.loop = "i"}

After:
    %lb = arith.constant 0 : index
    %ub = arith.constant 8 : index
    %step = arith.constant 2 : index
    scf.for %i = %lb to %ub step %step {
      %c4 = arith.constant 4 : index
      %r = arith.remsi %i, %c4 : index
      ... (r < 0 ? r + 4 : r)
      %v = memref.load %a[%m] : memref<4xf32>
      memref.store %v, %b[%i] : memref<8xf32>
    } {qd.loop = "i"}
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.ir.affine.affine_set import AffineConstraintKind
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

_FOR_PROPERTIES = {"lowerBoundMap", "upperBoundMap", "step", "operandSegmentSizes"}


class _IndexBuilder:
    """Emits index arithmetic before an op, folding constants as it goes."""

    def __init__(self, rewriter: PatternRewriter) -> None:
        self.rewriter = rewriter
        self.constants: dict[SSAValue, int] = {}

    def const(self, value: int) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr(value, IndexType()))
        self.rewriter.insert(op)
        self.constants[op.result] = value
        return op.result

    def _emit(self, op: Operation) -> SSAValue:
        self.rewriter.insert(op)
        return op.results[0]

    def known(self, value: SSAValue) -> int | None:
        if value in self.constants:
            return self.constants[value]
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        a, b = self.known(lhs), self.known(rhs)
        if a is not None and b is not None:
            return self.const(a + b)
        if a == 0:
            return rhs
        if b == 0:
            return lhs
        return self._emit(arith.AddiOp(lhs, rhs))

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        a, b = self.known(lhs), self.known(rhs)
        if a is not None and b is not None:
            return self.const(a - b)
        if b == 0:
            return lhs
        return self._emit(arith.SubiOp(lhs, rhs))

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        a, b = self.known(lhs), self.known(rhs)
        if a is not None and b is not None:
            return self.const(a * b)
        if a == 0 or b == 0:
            return self.const(0)
        if a == 1:
            return rhs
        if b == 1:
            return lhs
        return self._emit(arith.MuliOp(lhs, rhs))

    def select(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._emit(arith.SelectOp(cond, lhs, rhs))

    def cmp(self, lhs: SSAValue, rhs: SSAValue, predicate: str) -> SSAValue:
        return self._emit(arith.CmpiOp(lhs, rhs, predicate))

    def mod(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        a, b = self.known(lhs), self.known(rhs)
        if a is not None and b is not None and b != 0:
            return self.const(a % b)
        if b == 1:
            return self.const(0)
        rem = self._emit(arith.RemSIOp(lhs, rhs))
        negative = self.cmp(rem, self.const(0), "slt")
        return self.select(negative, self.add(rem, rhs), rem)

    def floordiv(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        a, b = self.known(lhs), self.known(rhs)
        if a is not None and b is not None and b != 0:
            return self.const(a // b)
        if b == 1:
            return lhs
        # q = a < 0 ? -1 - (-1 - a) / b : a / b
        minus_one = self.const(-1)
        negative = self.cmp(lhs, self.const(0), "slt")
        dividend = self.select(negative, self.sub(minus_one, lhs), lhs)
        quotient = self._emit(arith.DivSIOp(dividend, rhs))
        return self.select(negative, self.sub(minus_one, quotient), quotient)

    def ceildiv(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        a, b = self.known(lhs), self.known(rhs)
        if a is not None and b is not None and b != 0:
            return self.const(-((-a) // b))
        if b == 1:
            return lhs
        # q = a <= 0 ? -((-a) / b) : (a - 1) / b + 1
        zero, one = self.const(0), self.const(1)
        non_positive = self.cmp(lhs, zero, "sle")
        dividend = self.select(non_positive, self.sub(zero, lhs), self.sub(lhs, one))
        quotient = self._emit(arith.DivSIOp(dividend, rhs))
        return self.select(
            non_positive, self.sub(zero, quotient), self.add(quotient, one)
        )

    def minmax(self, values: Sequence[SSAValue], take_min: bool) -> SSAValue:
        result = values[0]
        for value in values[1:]:
            a, b = self.known(result), self.known(value)
            if a is not None and b is not None:
                result = self.const(min(a, b) if take_min else max(a, b))
            elif take_min:
                result = self._emit(arith.MinSIOp(result, value))
            else:
                result = self._emit(arith.MaxSIOp(result, value))
        return result

    def expr(
        self, expr: AffineExpr, dims: Sequence[SSAValue], syms: Sequence[SSAValue]
    ) -> SSAValue:
        match expr:
            case AffineConstantExpr():
                return self.const(expr.value)
            case AffineDimExpr():
                return dims[expr.position]
            case AffineSymExpr():
                return syms[expr.position]
            case AffineBinaryOpExpr():
                lhs = self.expr(expr.lhs, dims, syms)
                rhs = self.expr(expr.rhs, dims, syms)
                match expr.kind:
                    case AffineBinaryOpKind.Add:
                        return self.add(lhs, rhs)
                    case AffineBinaryOpKind.Mul:
                        return self.mul(lhs, rhs)
                    case AffineBinaryOpKind.Mod:
                        return self.mod(lhs, rhs)
                    case AffineBinaryOpKind.FloorDiv:
                        return self.floordiv(lhs, rhs)
                    case AffineBinaryOpKind.CeilDiv:
                        return self.ceildiv(lhs, rhs)
        raise ValueError(f"lower-affine: unexpected affine expression {expr}")

    def map(
        self, affine_map: AffineMap, operands: Sequence[SSAValue]
    ) -> list[SSAValue]:
        if affine_map.num_dims + affine_map.num_symbols != len(operands):
            raise ValueError(
                f"lower-affine: map {affine_map} expects "
                f"{affine_map.num_dims + affine_map.num_symbols} operands, "
                f"got {len(operands)}"
            )
        dims = operands[: affine_map.num_dims]
        syms = operands[affine_map.num_dims :]
        return [self.expr(result, dims, syms) for result in affine_map.results]


class LowerAffineFor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ForOp, rewriter: PatternRewriter) -> None:
        b = _IndexBuilder(rewriter)
        lb = b.minmax(
            b.map(op.lowerBoundMap.data, op.lowerBoundOperands), take_min=False
        )
        ub = b.minmax(b.map(op.upperBoundMap.data, op.upperBoundOperands), True)
        step = b.const(op.step.value.data)
        low, high = b.known(lb), b.known(ub)
        if (
            low is not None
            and high is not None
            and 0 < high - low <= op.step.value.data
        ):
            # one iteration: its index is the lower bound, a constant LLVM sees
            hint = lb.name_hint
            rewriter.replace_all_uses_with(op.body.block.args[0], lb)
            lb.name_hint = hint
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new_for = scf.ForOp(lb, ub, step, op.inits, body)
        for name, attr in op.attributes.items():
            if name not in _FOR_PROPERTIES:
                new_for.attributes[name] = attr
        rewriter.replace(op, new_for)


class LowerAffineIf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.IfOp, rewriter: PatternRewriter) -> None:
        b = _IndexBuilder(rewriter)
        integer_set = op.condition.data
        dims = op.args[: integer_set.num_dims]
        syms = op.args[integer_set.num_dims :]
        cond: SSAValue | None = None
        for constraint in integer_set.constraints:
            lhs = b.expr(constraint.lhs, dims, syms)
            rhs = b.expr(constraint.rhs, dims, syms)
            predicate = {
                AffineConstraintKind.ge: "sge",
                AffineConstraintKind.le: "sle",
                AffineConstraintKind.eq: "eq",
            }[constraint.kind]
            holds = b.cmp(lhs, rhs, predicate)
            cond = holds if cond is None else b._emit(arith.AndIOp(cond, holds))
        if cond is None:
            true_op = arith.ConstantOp(IntegerAttr(1, builtin.i1))
            rewriter.insert(true_op)
            cond = true_op.result
        then_region = rewriter.move_region_contents_to_new_regions(op.then_region)
        else_region = rewriter.move_region_contents_to_new_regions(op.else_region)
        new_if = scf.IfOp(cond, op.result_types, then_region, else_region)
        for name, attr in op.attributes.items():
            new_if.attributes[name] = attr
        rewriter.replace(op, new_if)


class LowerAffineMin(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.MinOp, rewriter: PatternRewriter) -> None:
        b = _IndexBuilder(rewriter)
        value = b.minmax(b.map(op.map.data, op.arguments), take_min=True)
        rewriter.replace(op, [], [value])


class LowerAffineApply(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ApplyOp, rewriter: PatternRewriter) -> None:
        b = _IndexBuilder(rewriter)
        (value,) = b.map(op.map.data, op.mapOperands)
        rewriter.replace(op, [], [value])


class LowerAffineLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.LoadOp, rewriter: PatternRewriter) -> None:
        b = _IndexBuilder(rewriter)
        indices = b.map(op.map.data, op.indices) if op.map else list(op.indices)
        rewriter.replace(op, memref.LoadOp.get(op.memref, indices))


class LowerAffineStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.StoreOp, rewriter: PatternRewriter) -> None:
        b = _IndexBuilder(rewriter)
        indices = b.map(op.map.data, op.indices) if op.map else list(op.indices)
        rewriter.replace(op, memref.StoreOp.get(op.value, op.memref, indices))


class LowerAffineYield(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.YieldOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, scf.YieldOp(*op.arguments))


class LowerAffinePass(ModulePass):
    """affine.{for,if,min,apply,load,store,yield} -> scf + arith + memref."""

    name = "lower-affine"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    LowerAffineFor(),
                    LowerAffineIf(),
                    LowerAffineMin(),
                    LowerAffineApply(),
                    LowerAffineLoad(),
                    LowerAffineStore(),
                    LowerAffineYield(),
                ]
            )
        ).rewrite_module(op)
