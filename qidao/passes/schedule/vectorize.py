"""``vectorize``: an innermost loop runs ``width`` iterations at once on vectors.

    for i in [lb, ub)                       ==>   for i in [lb, lb + (ub-lb)/W*W) step W
      a = load x[.., i]      (contiguous)           va = vector.load x[.., i]  : vector<W>
      b = load y[..]         (invariant)            b  = load y[..]
      c = a * b + d                                 vb = vector.broadcast b    : vector<W>
      store c, z[.., i]      (contiguous)           vc = math.fma va, vb, vd   : vector<W>
                                                    vector.store vc, z[.., i]
                                                  for i_tail in [.., ub)    (scalar)
                                                    the loop body as it was (fma'd)

Options: ``kernel``, ``loop`` (its ``qd.loop`` name), ``width`` (W, the number of
lanes, default 16: one ``<16 x float>`` AVX-512 register), e.g. ``vectorize{
kernel="main_k0_fused" loop="i1" width=16}``. The loop keeps its name and attributes;
its step becomes W and its body works on ``vector<Wx...>`` values.

Tails. The vector loop covers ``floor(extent / W) * W`` iterations; when W does not
divide the extent, a scalar loop named ``<loop>_tail`` (``qd.loop`` and induction
variable) runs the rest, right after it. Constant bounds fold to numbers (``0 to 37``
with W=16: ``0 to 32 step 16`` then ``32 to 37``). A ``min`` upper bound (from
``split`` by a factor that does not divide the extent) works the same way, per result:
the vector loop stops at ``min(lb + ((u_k - lb) floordiv W) * W)``, computed once more
by an ``affine.min`` for the tail, which starts at ``max(lb, that)``. A bound that W
provably divides (``min(48, 96 - 48 * o)`` with W=16) gets no tail.

FMA contraction. ``arith.addf(arith.mulf(a, b), c)`` (either operand order) becomes
one ``math.fma(a, b, c)`` when both sit in the loop body and the addf is the mulf's
only use (a product that is also stored or used elsewhere stays a mulf), in the
vector loop and the tail alike (so every element is computed the same way).
``convert-to-llvm`` lowers it to ``llvm.intr.fma`` (``llvm.fma.v16f32``: one
``vfmadd`` instead of a multiply and an add). The fma rounds once where mulf + addf
round twice, so results can differ in the last bit from the unfused expression; BLAS
libraries (OpenBLAS, MKL) and PyTorch's CPU kernels contract the same way, and the
numerics tests compare with NumPy to a tolerance. The fma carries no fastmath flags.

Reductions. A loop that accumulates, through ``iter_args`` (``%s = addf %acc, %x;
affine.yield %s``, as ``tg.reduce_*`` lowers) or through memory at a loop-invariant
element (``acc[i] = acc[i] + x[i, j]``), carries a vector of W partial accumulators
instead, starting at the identity (``-0.0`` for add, ``-inf``/``+inf`` for max/min);
after the loop, ``vector.reduction`` folds the lanes and the scalar start value (the
init, or the element reloaded from memory) into one scalar, which the tail (if any)
then continues from. The combining op must be ``addf``, ``maximumf``, ``minimumf``,
``maxnumf``, ``minnumf``, or an ``fma`` into the accumulator (``fma(a, b, acc)``, as
contraction makes of ``acc + a * b``); the accumulator is used by that op only, and
the result only by the yield (or the store back). Max and min are exact in any order;
float add is not associative, so W partial sums and a tree (``passes/cpu/llvm/vector.py``) round
differently from one left-to-right sum, as the ``reorder`` pass already allows for
pure accumulations (and as every vectorized BLAS dot product does).

    for j in [0, N)                            acc_v = splat(-0.0)
      acc = acc + x[j]              ==>        for j in [0, N/W*W) step W
                                                 acc_v = acc_v + vector.load x[j]
                                               acc = vector.reduction <add>, acc_v, acc
                                               for j_tail in [N/W*W, N): acc = acc + x[j]

Legality (each failure raises an ``IllegalScheduleError`` naming kernel, loop, reason;
the module is left as it was):

- the loop is innermost (no loop inside it), has step 1, a lower bound that is one
  expression (not a max) and any upper bound (one expression or a min);
- every ``iter_args`` value is an accumulation as above;
- its body holds only ``affine.load``/``affine.store``, ``arith.constant`` and the
  float ops ``arith.addf/subf/mulf/divf/negf/maximumf/minimumf/maxnumf/minnumf`` and
  ``math.fma/sqrt/absf/exp/log/exp2/log2/sin/cos/floor/ceil/tanh/trunc/round``,
  and ``arith.extf/truncf`` (f16 kernels compute in f32 between the two; anything
  else is named in the error), on float element types (integer and bool memrefs
  are refused: "only float elements are vectorized");
- every access is either *invariant* (its indices do not depend on the loop: a scalar
  load then ``vector.broadcast``) or *unit-stride contiguous* (only the last index
  depends on the loop, with coefficient 1, and the memref's innermost stride is 1: one
  ``vector.load``/``vector.store`` of W elements from that index). Any other index
  (stride 2, ``i mod 4``, the loop in an outer dimension) is a non-unit stride: error;
- an invariant store is an accumulation through memory as above (its memref loaded
  once in the loop, at the stored element, and only the combining op using that),
  and a memref that the loop stores to is loaded only at exactly the stored indices
  (otherwise a loop-carried dependence through memory could be reordered);
- a tail loop's name ``<loop>_tail`` is not taken (``DuplicateLoopNameError``).

Values defined outside the loop (and constants inside it, which are hoisted) are
broadcast once, before the loop. ``convert-to-llvm`` lowers the vector ops (see
``qidao/passes/cpu/llvm/vector.py``) to ``llvm.load``/``llvm.store`` of ``vector<Wxf32>``
(alignment: the element size), a splat (``insertelement`` + ``shufflevector``),
``llvm.intr.fma`` and a shuffle tree for ``vector.reduction``.

Before (``vectorize{kernel="k" loop="j" width=4}``):
```mlir
affine.for %i = 0 to 2 {
  affine.for %j = 0 to 8 {
    %a = affine.load %x[%i, %j] : memref<2x8xf32>
    %b = affine.load %s[%i] : memref<2xf32>
    %c = arith.mulf %a, %b : f32
    affine.store %c, %y[%i, %j] : memref<2x8xf32>
  } {qd.loop = "j"}
} {qd.loop = "i"}
```
After:
```mlir
affine.for %i = 0 to 2 {
  affine.for %j = 0 to 8 step 4 {
    %a = vector.load %x[%i, %j] : memref<2x8xf32>, vector<4xf32>
    %b = affine.load %s[%i] : memref<2xf32>
    %b_1 = vector.broadcast %b : f32 to vector<4xf32>
    %c = arith.mulf %a, %b_1 : vector<4xf32>
    vector.store %c, %y[%i, %j] : memref<2x8xf32>, vector<4xf32>
  } {qd.loop = "j"}
} {qd.loop = "i"}
```

A dot product with a tail (``vectorize{kernel="k_dot" loop="j" width=4}``), before:
```mlir
%zero = arith.constant 0.000000e+00 : f32
%sum = affine.for %j = 0 to 10 iter_args(%acc = %zero) -> (f32) {
  %a = affine.load %x[%j] : memref<10xf32>
  %b = affine.load %y[%j] : memref<10xf32>
  %p = arith.mulf %a, %b : f32
  %s = arith.addf %acc, %p : f32
  affine.yield %s : f32
} {qd.loop = "j"}
affine.store %sum, %out[0] : memref<1xf32>
```
After:
```mlir
%zero = arith.constant 0.000000e+00 : f32
%acc_init = arith.constant -0.000000e+00 : f32
%acc_init_1 = vector.broadcast %acc_init : f32 to vector<4xf32>
%acc_lanes = affine.for %j = 0 to 8 step 4 iter_args(%acc = %acc_init_1) -> (vector<4xf32>) {
  %a = vector.load %x[%j] : memref<10xf32>, vector<4xf32>
  %b = vector.load %y[%j] : memref<10xf32>, vector<4xf32>
  %s = math.fma %a, %b, %acc : vector<4xf32>
  affine.yield %s : vector<4xf32>
} {qd.loop = "j"}
%sum = vector.reduction <add>, %acc_lanes, %zero : vector<4xf32> into f32
%sum_1 = affine.for %j_tail = 8 to 10 iter_args(%acc_1 = %sum) -> (f32) {
  %a_1 = affine.load %x[%j_tail] : memref<10xf32>
  %b_1 = affine.load %y[%j_tail] : memref<10xf32>
  %s_1 = math.fma %a_1, %b_1, %acc_1 : f32
  affine.yield %s_1 : f32
} {qd.loop = "j_tail"}
affine.store %sum_1, %out[0] : memref<1xf32>
```
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, math, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    FloatAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass

from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
)
from qidao.passes.schedule.loops.nest import (
    LOOP_ATTR,
    check_new_names,
    find_loop,
    iv,
    loop_name,
    simplify,
    step_of,
)

PRIMITIVE = "vectorize"
TAIL_SUFFIX = "_tail"

LANEWISE: tuple[type[Operation], ...] = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.NegfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    math.FmaOp,
    math.SqrtOp,
    math.AbsFOp,
    math.ExpOp,
    math.LogOp,
    math.Exp2Op,
    math.Log2Op,
    math.SinOp,
    math.CosOp,
    math.FloorOp,
    math.CeilOp,
    math.TanhOp,
    math.TruncOp,
    math.RoundOp,
    arith.ExtFOp,
    arith.TruncFOp,
)
"""Float ops applied lane by lane, so the vector op is the same op on vectors
(``extf``/``truncf`` too: an f16 kernel computes in f32 between them)."""

REDUCIBLE: dict[type[Operation], tuple[vector.CombiningKindFlag, float]] = {
    arith.AddfOp: (vector.CombiningKindFlag.ADD, -0.0),
    math.FmaOp: (vector.CombiningKindFlag.ADD, -0.0),  # fma(a, b, acc) = acc + a*b
    arith.MaximumfOp: (vector.CombiningKindFlag.MAXIMUMF, -pymath.inf),
    arith.MinimumfOp: (vector.CombiningKindFlag.MINIMUMF, pymath.inf),
    arith.MaxnumfOp: (vector.CombiningKindFlag.MAXNUMF, -pymath.inf),
    arith.MinnumfOp: (vector.CombiningKindFlag.MINNUMF, pymath.inf),
}
"""The ops an accumulation may combine with, their ``vector.reduction`` kind and
identity (``-0.0`` for add: ``-0.0 + x == x`` for every x, ``-0.0`` included)."""


# --- legality ---------------------------------------------------------------------


def _coefficient(expr: AffineExpr, dims: set[int], syms: set[int]) -> int | None:
    """The coefficient of the loop's variable (dimensions ``dims``, symbols ``syms``)
    in ``expr``, or None when ``expr`` is not affine-linear in it."""
    if isinstance(expr, AffineDimExpr):
        return 1 if expr.position in dims else 0
    if isinstance(expr, AffineSymExpr):
        return 1 if expr.position in syms else 0
    if not isinstance(expr, AffineBinaryOpExpr):
        return 0
    lhs = _coefficient(expr.lhs, dims, syms)
    rhs = _coefficient(expr.rhs, dims, syms)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        return lhs + rhs
    if expr.kind == AffineBinaryOpKind.Mul:
        if isinstance(expr.rhs, AffineConstantExpr):
            return lhs * expr.rhs.value
        if isinstance(expr.lhs, AffineConstantExpr):
            return rhs * expr.lhs.value
        return None if lhs or rhs else 0
    return None if lhs or rhs else 0


def _access_kind(
    op: affine.LoadOp | affine.StoreOp, loop: affine.ForOp, kernel: str, name: str
) -> str:
    """``"invariant"`` or ``"contiguous"``; raises for anything else."""
    what = "load from" if isinstance(op, affine.LoadOp) else "store to"
    memref = op.memref
    t = memref.type
    assert isinstance(t, MemRefType)
    if not isinstance(t.element_type, AnyFloat):
        raise IllegalScheduleError(
            PRIMITIVE, kernel, name, f"a {what} {t}: only float elements are vectorized"
        )
    variable = iv(loop)
    indices = list(op.indices)
    for value in indices:
        if value is not variable and _defined_in(value, loop):
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"a {what} {t} has an index computed inside the loop",
            )
    num_dims = op.map.data.num_dims
    at = [k for k, value in enumerate(indices) if value is variable]
    dims = {k for k in at if k < num_dims}
    syms = {k - num_dims for k in at if k >= num_dims}
    coefficients = [_coefficient(e, dims, syms) for e in op.map.data.results]
    if all(c == 0 for c in coefficients):
        return "invariant"
    strides = t.get_strides()
    if (
        coefficients[-1] == 1
        and all(c == 0 for c in coefficients[:-1])
        and strides is not None
        and strides[-1] == 1
    ):
        return "contiguous"
    raise IllegalScheduleError(
        PRIMITIVE,
        kernel,
        name,
        f"a {what} {t} with indices {op.map.data} is not unit-stride in the loop "
        "(only loop-invariant and contiguous last-dimension accesses of a memref "
        "with innermost stride 1 are vectorized)",
    )


def _defined_in(value: SSAValue, loop: affine.ForOp) -> bool:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def _same_access(
    a: affine.LoadOp | affine.StoreOp, b: affine.LoadOp | affine.StoreOp
) -> bool:
    return (
        a.map.data == b.map.data
        and len(a.indices) == len(b.indices)
        and all(x is y for x, y in zip(a.indices, b.indices, strict=True))
    )


def _hint(value: SSAValue, suffix: str) -> str | None:
    """A name for a value made from ``value``: its name plus ``suffix``."""
    return None if value.name_hint is None else value.name_hint + suffix


def _sole_user(value: SSAValue) -> Operation | None:
    """The op that uses ``value``, when exactly one use exists."""
    return value.get_user_of_unique_use() if value.has_one_use() else None


@dataclass(frozen=True)
class Reduction:
    """One accumulation the loop carries: ``acc`` (an iter_arg of the loop, or the
    result of an invariant ``load`` that ``store`` writes back) is used once, by a
    combining op of kind ``kind`` whose result is used once (by the yield or the
    store)."""

    acc: SSAValue
    kind: vector.CombiningKindFlag
    identity: float
    position: int | None = None
    """The iter_args position (register form), or None (memory form)."""
    load: affine.LoadOp | None = None
    store: affine.StoreOp | None = None


def _combining_op(acc: SSAValue, block: Block) -> Operation | None:
    """The reducible op in ``block`` that uses ``acc`` as its accumulator."""
    user = _sole_user(acc)
    if user is None or user.parent is not block or type(user) not in REDUCIBLE:
        return None
    if isinstance(user, math.FmaOp) and user.c is not acc:
        return None  # acc * b + c is not an accumulation into acc
    if not all(isinstance(v.type, AnyFloat) for v in user.results):
        return None
    return user


def _register_reductions(loop: affine.ForOp, kernel: str, name: str) -> list[Reduction]:
    """Every iter_arg must be an accumulation; one Reduction each, in order."""
    block = loop.body.block
    terminator = block.last_op
    assert isinstance(terminator, affine.YieldOp)
    found: list[Reduction] = []
    for k, acc in enumerate(block.args[1:]):
        op = _combining_op(acc, block)
        result = op.results[0] if op is not None else None
        if (
            op is None
            or result is None
            or _sole_user(result) is not terminator
            or terminator.operands[k] is not result
        ):
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"its iter_arg #{k} is not an accumulation (one "
                "addf/maximumf/minimumf/maxnumf/minnumf/fma of the carried value "
                "whose result only the yield uses)",
            )
        kind, identity = REDUCIBLE[type(op)]
        found.append(Reduction(acc, kind, identity, position=k))
    return found


def _memory_reduction(
    store: affine.StoreOp, loads: list[affine.LoadOp], kernel: str, name: str
) -> Reduction:
    """The accumulation that the invariant ``store`` writes, or an error."""
    block = store.parent
    assert block is not None
    op = store.value.owner
    same_memref = [load for load in loads if load.memref is store.memref]
    if (
        isinstance(op, Operation)
        and type(op) in REDUCIBLE
        and _sole_user(store.value) is store
        and len(same_memref) == 1
        and _same_access(same_memref[0], store)
        and _combining_op(same_memref[0].result, block) is op
    ):
        load = same_memref[0]
        kind, identity = REDUCIBLE[type(op)]
        return Reduction(load.result, kind, identity, load=load, store=store)
    raise IllegalScheduleError(
        PRIMITIVE,
        kernel,
        name,
        f"a store to {store.memref.type} writes the same element every iteration "
        "but is not a pure accumulation (acc = acc + x, or max/min, the loaded "
        "value used only there and the memref accessed nowhere else in the loop)",
    )


@dataclass(frozen=True)
class Bounds:
    """Where the vector loop stops (``vector_upper``, a min over its results, on
    ``operands``) and whether a scalar tail loop must run the rest. ``lower`` is the
    loop's lower bound on the same operands."""

    lower: AffineExpr
    upper: tuple[AffineExpr, ...]
    vector_upper: tuple[AffineExpr, ...]
    operands: tuple[SSAValue, ...]
    tail: bool


def _bounds(loop: affine.ForOp, width: int, kernel: str, name: str) -> Bounds:
    """The loop's bounds on one operand list, and where its vector part stops: for
    each upper bound ``u``, ``lower + ((u - lower) floordiv W) * W``; a tail is
    needed unless every ``u - lower`` simplifies to a multiple of W."""
    lower_map = loop.lowerBoundMap.data
    upper_map = loop.upperBoundMap.data
    if len(lower_map.results) != 1:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            name,
            f"its lower bound {lower_map} is a max of several values",
        )
    values: list[SSAValue] = []

    def dims_of(operands: list[SSAValue]) -> list[AffineExpr]:
        exprs: list[AffineExpr] = []
        for value in operands:
            for k, known in enumerate(values):
                if known is value:
                    exprs.append(AffineExpr.dimension(k))
                    break
            else:
                values.append(value)
                exprs.append(AffineExpr.dimension(len(values) - 1))
        return exprs

    lower_dims = dims_of(list(loop.lowerBoundOperands))
    upper_dims = dims_of(list(loop.upperBoundOperands))
    n = len(values)

    def rebase(amap: AffineMap, dims: list[AffineExpr]) -> tuple[AffineExpr, ...]:
        moved = amap.replace_dims_and_symbols(
            dims[: amap.num_dims], dims[amap.num_dims :], n, 0
        )
        return tuple(simplify(r, n, 0) for r in moved.results)

    (lower,) = rebase(lower_map, lower_dims)
    upper = rebase(upper_map, upper_dims)
    if not values:  # constant bounds: fold each to one number
        assert isinstance(lower, AffineConstantExpr)
        assert all(isinstance(u, AffineConstantExpr) for u in upper)
        lb = lower.value
        ub = min(u.value for u in upper if isinstance(u, AffineConstantExpr))
        main = lb + max(0, ub - lb) // width * width
        return Bounds(
            lower,
            (AffineExpr.constant(ub),),
            (AffineExpr.constant(main),),
            (),
            main < ub,
        )
    vector_upper: list[AffineExpr] = []
    tail = False
    for bound in upper:
        extent = simplify(bound - lower, n, 0)
        whole = simplify((extent // width) * width, n, 0)
        if whole != extent:
            tail = True
        vector_upper.append(simplify(lower + whole, n, 0))
    return Bounds(lower, upper, tuple(vector_upper), tuple(values), tail)


@dataclass(frozen=True)
class Plan:
    """What ``check_vectorizable`` found: each access's kind, the accumulations the
    loop carries (iter_args first, then through memory) and its bounds."""

    kinds: dict[Operation, str]
    reductions: list[Reduction]
    bounds: Bounds


def check_vectorizable(loop: affine.ForOp, kernel: str, name: str, width: int) -> Plan:
    """Check every legality rule; return the plan (leaves the IR as it is)."""
    if step_of(loop) != 1:
        raise IllegalScheduleError(
            PRIMITIVE, kernel, name, f"its step is {step_of(loop)}, not 1"
        )
    for op in loop.body.block.ops:
        if isinstance(op, affine.ForOp):
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"it is not innermost: loop '{loop_name(op)}' is inside it",
            )
    bounds = _bounds(loop, width, kernel, name)
    kinds: dict[Operation, str] = {}
    stores: list[affine.StoreOp] = []
    loads: list[affine.LoadOp] = []
    for op in loop.body.walk():
        if op is loop or isinstance(op, affine.YieldOp):
            continue
        if isinstance(op, affine.LoadOp | affine.StoreOp):
            kinds[op] = _access_kind(op, loop, kernel, name)
            if isinstance(op, affine.StoreOp):
                stores.append(op)
            else:
                loads.append(op)
            continue
        if isinstance(op, arith.ConstantOp):
            continue
        if not isinstance(op, LANEWISE) or not all(
            isinstance(v.type, AnyFloat) for v in (*op.operands, *op.results)
        ):
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"its body has '{op.name}', which is not vectorized (only affine "
                "loads/stores and float arith/math ops)",
            )
    reductions = _register_reductions(loop, kernel, name)
    for store in stores:
        if kinds[store] == "invariant":
            reductions.append(_memory_reduction(store, loads, kernel, name))
            continue
        for load in loads:
            if load.memref is store.memref and not _same_access(load, store):
                raise IllegalScheduleError(
                    PRIMITIVE,
                    kernel,
                    name,
                    f"{store.memref.type} is stored at {store.map.data} and loaded "
                    f"at {load.map.data}: a dependence across iterations",
                )
    return Plan(kinds, reductions, bounds)


# --- rewriting --------------------------------------------------------------------


def contract(block: Block) -> None:
    """``addf(mulf(a, b), c)`` (either operand order) -> ``math.fma(a, b, c)`` when
    the mulf sits in ``block`` and the addf is its only use."""
    for op in list(block.ops):
        if not isinstance(op, arith.AddfOp):
            continue
        for k, operand in enumerate(op.operands):
            mul = operand.owner
            if (
                not isinstance(mul, arith.MulfOp)
                or mul.parent is not block
                or _sole_user(operand) is not op
            ):
                continue
            fma = math.FmaOp(mul.lhs, mul.rhs, op.operands[1 - k])
            fma.result.name_hint = op.result.name_hint
            block.insert_op_before(fma, op)
            op.result.replace_all_uses_with(fma.result)
            block.erase_op(op)
            block.erase_op(mul)
            break


def _index_values(
    op: affine.LoadOp | affine.StoreOp, before: Operation
) -> list[SSAValue]:
    """One index value per map result: the operand itself when the result is a bare
    dimension, else an ``affine.apply`` inserted before ``before``."""
    amap = op.map.data
    operands = list(op.indices)
    values: list[SSAValue] = []
    for result in amap.results:
        if isinstance(result, AffineDimExpr):
            values.append(operands[result.position])
            continue
        if isinstance(result, AffineSymExpr):
            values.append(operands[amap.num_dims + result.position])
            continue
        apply = affine.ApplyOp(
            operands,
            AffineMapAttr(AffineMap(amap.num_dims, amap.num_symbols, (result,))),
        )
        assert before.parent is not None
        before.parent.insert_op_before(apply, before)
        values.append(apply.result)
    return values


def _compact(
    results: tuple[AffineExpr, ...], operands: list[SSAValue]
) -> tuple[AffineMap, list[SSAValue]]:
    """The map ``results`` over ``operands`` without the operands it does not use."""
    amap = AffineMap(len(operands), 0, results)
    unused = amap.unused_dims()
    keep = [k for k in range(len(operands)) if k not in unused]
    renumber = [
        AffineExpr.dimension(keep.index(k)) if k in keep else AffineExpr.constant(0)
        for k in range(len(operands))
    ]
    compact = amap.replace_dims_and_symbols(renumber, [], len(keep), 0)
    return compact, [operands[k] for k in keep]


def _tail_lower(
    bounds: Bounds, outer: Block, before: Operation
) -> tuple[AffineMap, list[SSAValue]]:
    """The tail's lower bound: max(lower, where the vector loop stopped). A vector
    bound that is a min of several values is computed once by an ``affine.min``."""
    n = len(bounds.operands)
    operands = list(bounds.operands)
    if not operands:  # constant bounds: the vector loop stopped at a number >= lower
        return _compact(bounds.vector_upper, operands)
    if len(bounds.vector_upper) == 1:
        stop = bounds.vector_upper[0]
    else:
        stopped = affine.MinOp(
            operands, AffineMapAttr(AffineMap(n, 0, bounds.vector_upper))
        )
        outer.insert_op_before(stopped, before)
        operands.append(stopped.result)
        n += 1
        stop = AffineExpr.dimension(n - 1)
    return _compact((bounds.lower, stop), operands)


def vectorize_loop(module: ModuleOp, kernel: str, loop: str, width: int) -> None:
    """Vectorize ``loop`` of ``kernel`` by ``width`` lanes (see the module doc)."""
    if width < 1:
        raise InvalidArgumentError(
            PRIMITIVE, kernel, loop, f"width must be at least 1, got {width}"
        )
    fn, target = find_loop(module, PRIMITIVE, kernel, loop)
    plan = check_vectorizable(target, kernel, loop, width)
    bounds = plan.bounds
    tail_name = loop + TAIL_SUFFIX
    if bounds.tail:
        check_new_names(fn, [tail_name], PRIMITIVE, kernel, loop)
    # Legal: from here on nothing raises.
    outer = target.parent
    assert outer is not None
    body = target.body.block
    contract(body)
    tail = target.clone() if bounds.tail else None

    # Constants inside the loop move before it: they are invariant scalars.
    for op in list(body.ops):
        if isinstance(op, arith.ConstantOp):
            op.detach()
            outer.insert_op_before(op, target)

    vectors: dict[SSAValue, SSAValue] = {}
    splats: dict[SSAValue, SSAValue] = {}
    scalar: list[Operation] = []

    def vector_type(t: Attribute) -> VectorType:
        return VectorType(t, [width])

    def lanes(value: SSAValue) -> SSAValue:
        if value in vectors:
            return vectors[value]
        if value not in splats:
            splat = vector.BroadcastOp(value, vector_type(value.type))
            splat.vector.name_hint = value.name_hint
            outer.insert_op_before(splat, target)
            splats[value] = splat.vector
        return splats[value]

    # Each accumulation gets a vector iter_arg, which starts at the identity.
    inits: list[SSAValue] = []
    for reduction in plan.reductions:
        t = reduction.acc.type
        assert isinstance(t, AnyFloat)
        identity = arith.ConstantOp(FloatAttr(reduction.identity, t))
        identity.result.name_hint = _hint(reduction.acc, "_init")
        outer.insert_op_before(identity, target)
        start = vector.BroadcastOp(identity.result, vector_type(t))
        start.vector.name_hint = identity.result.name_hint
        outer.insert_op_before(start, target)
        inits.append(start.vector)
        carried = body.insert_arg(vector_type(t), len(body.args))
        carried.name_hint = reduction.acc.name_hint
        vectors[reduction.acc] = carried

    yielded: list[SSAValue] = []
    for reduction in plan.reductions:
        combined = _sole_user(reduction.acc)  # after contract: addf may be an fma
        assert combined is not None
        yielded.append(combined.results[0])

    for op in list(body.ops):
        if isinstance(op, affine.YieldOp):
            continue
        if any(op is r.load or op is r.store for r in plan.reductions):
            scalar.append(op)
            continue
        if isinstance(op, affine.LoadOp):
            if plan.kinds[op] == "invariant":
                splat = vector.BroadcastOp(op.result, vector_type(op.result.type))
                splat.vector.name_hint = op.result.name_hint
                body.insert_op_after(splat, op)
                vectors[op.result] = splat.vector
                continue
            load = vector.LoadOp(
                op.memref, _index_values(op, op), vector_type(op.result.type)
            )
            load.result.name_hint = op.result.name_hint
            body.insert_op_before(load, op)
            vectors[op.result] = load.result
            scalar.append(op)
            continue
        if isinstance(op, affine.StoreOp):
            store = vector.StoreOp(lanes(op.value), op.memref, _index_values(op, op))
            body.insert_op_before(store, op)
            scalar.append(op)
            continue
        new = type(op).create(
            operands=[lanes(v) for v in op.operands],
            result_types=[vector_type(r.type) for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        for old, result in zip(op.results, new.results, strict=True):
            result.name_hint = old.name_hint
            vectors[old] = result
        body.insert_op_before(new, op)
        scalar.append(op)
    terminator = body.last_op
    assert isinstance(terminator, affine.YieldOp)
    body.insert_op_before(
        affine.YieldOp.get(*(vectors[v] for v in yielded)), terminator
    )
    body.erase_op(terminator)
    for op in reversed(scalar):  # users before the values they use
        body.erase_op(op)
    for arg in reversed(body.args[1 : 1 + len(target.inits)]):
        body.erase_arg(arg)

    # The vector loop: [lower, vector_upper) step W, carrying the vector accumulators.
    region = Region()
    target.body.move_blocks(region)
    operands = list(bounds.operands)
    lower_map, lower_operands = _compact((bounds.lower,), operands)
    upper_map, upper_operands = _compact(bounds.vector_upper, operands)
    vector_loop = affine.ForOp.from_region(
        lower_operands,
        upper_operands,
        inits,
        [v.type for v in inits],
        AffineMapAttr(lower_map),
        AffineMapAttr(upper_map),
        region,
        width,
    )
    for key, attr in target.attributes.items():
        vector_loop.attributes[key] = attr
    for reduction, partial in zip(plan.reductions, vector_loop.results, strict=True):
        partial.name_hint = _hint(reduction.acc, "_lanes")
    outer.insert_op_before(vector_loop, target)

    # Each vector accumulator folds into its scalar: the loop's init, or memory.
    results: list[SSAValue] = []
    for reduction, partial in zip(plan.reductions, vector_loop.results, strict=True):
        kind = vector.CombiningKindAttr(reduction.kind)
        acc_load = reduction.load
        if acc_load is None:
            assert reduction.position is not None
            start_value = target.inits[reduction.position]
        else:
            reload = affine.LoadOp(
                acc_load.memref, list(acc_load.indices), acc_load.map
            )
            reload.result.name_hint = acc_load.result.name_hint
            outer.insert_op_before(reload, target)
            start_value = reload.result
        total = vector.ReductionOp.build(
            operands=[partial, [start_value]],
            result_types=[reduction.acc.type],
            properties={"kind": kind},
        )
        outer.insert_op_before(total, target)
        if acc_load is not None:
            total.results[0].name_hint = _hint(acc_load.result, "_sum")
        acc_store = reduction.store
        if acc_store is not None:
            write = affine.StoreOp(
                total.results[0],
                acc_store.memref,
                list(acc_store.indices),
                acc_store.map,
            )
            outer.insert_op_before(write, target)
        else:
            total.results[0].name_hint = target.results[len(results)].name_hint
            results.append(total.results[0])

    # The scalar tail: [max(lower, vector_upper), upper), the loop as it was.
    if tail is not None:
        lower_map, lower_operands = _tail_lower(bounds, outer, target)
        tail_region = Region()
        tail.body.move_blocks(tail_region)
        upper_map, upper_operands = _compact(bounds.upper, operands)
        tail_loop = affine.ForOp.from_region(
            lower_operands,
            upper_operands,
            results,
            [v.type for v in results],
            AffineMapAttr(lower_map),
            AffineMapAttr(upper_map),
            tail_region,
            1,
        )
        for key, attr in target.attributes.items():
            tail_loop.attributes[key] = attr
        tail_loop.attributes[LOOP_ATTR] = StringAttr(tail_name)
        iv(tail_loop).name_hint = tail_name
        outer.insert_op_before(tail_loop, target)
        results = list(tail_loop.results)
    for old, new_value in zip(target.results, results, strict=True):
        old.replace_all_uses_with(new_value)
    outer.erase_op(target)


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    """Run an innermost loop ``width`` iterations at a time on vector values."""

    name = "vectorize"

    kernel: str
    loop: str
    width: int = 16

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        vectorize_loop(op, self.kernel, self.loop, self.width)
