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
lanes, 1 to ``MAX_WIDTH`` = 256, default 16: one ``<16 x float>`` AVX-512 register), e.g. ``vectorize{
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
pure accumulations (and as every vectorized BLAS dot product does). The
accumulations are recognized and carried by ``loops/reductions.py``.

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
  ``math.fma/sqrt/absf/exp/log/exp2/log2/sin/cos/floor/ceil/tanh/trunc/round/roundeven``,
  and ``arith.extf/truncf`` (f16 kernels compute in f32 between the two), on float
  element types (integer and bool memrefs are refused: "only float elements are
  vectorized"), plus ``arith.select`` of floats and the float ``arith.cmpf``
  whose every use is a select's condition in the body (anything else is named in
  the error);
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

Masks. ``arith.cmpf`` on vectors is ``lanes.cmpf`` (a ``vector<W x i1>``, see
``qidao/dialects/lanes.py``: the pinned xDSL types ``arith.cmpf`` with a scalar
``i1`` only) and a select by it ``lanes.select``; a select whose condition is
defined outside the loop stays ``arith.select`` (a scalar ``i1`` picks a whole
vector). ``where(x >= 0, x, max(x, 0))`` keeps every lane's bits, NaN and ``-0.0``
included, as the scalar loop does.

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

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import affine, arith, math, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass

from qidao.dialects import lanes as lanes_dialect
from qidao.dialects.attributes import LOOP_ATTR
from qidao.dialects.lanes import PREDICATES
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
)
from qidao.passes.schedule.loops.linear import coefficient
from qidao.passes.schedule.loops.nest import (
    access_indices,
    check_new_names,
    find_loop,
    iv,
    loop_name,
    simplify,
    step_of,
)
from qidao.passes.schedule.loops.reductions import (
    Reduction,
    fold_accumulators,
    memory_reduction,
    register_reduction,
    start_accumulators,
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
    math.RoundEvenOp,
    arith.ExtFOp,
    arith.TruncFOp,
)
"""Float ops applied lane by lane, so the vector op is the same op on vectors
(``extf``/``truncf`` too: an f16 kernel computes in f32 between them)."""

# --- legality ---------------------------------------------------------------------


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
    coefficients = [
        coefficient(e, indices, num_dims, variable) for e in op.map.data.results
    ]
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


def _register_reductions(loop: affine.ForOp, kernel: str, name: str) -> list[Reduction]:
    """Every iter_arg must be an accumulation; one Reduction each, in order."""
    found: list[Reduction] = []
    for k in range(len(loop.body.block.args) - 1):
        reduction = register_reduction(loop, k)
        if reduction is None:
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"its iter_arg #{k} is not an accumulation (one "
                "addf/maximumf/minimumf/maxnumf/minnumf/fma of the carried value "
                "whose result only the yield uses)",
            )
        found.append(reduction)
    return found


def _memory_reduction(
    store: affine.StoreOp, loads: list[affine.LoadOp], kernel: str, name: str
) -> Reduction:
    """The accumulation that the invariant ``store`` writes, or an error."""
    reduction = memory_reduction(store, loads)
    if reduction is None:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            name,
            f"a store to {store.memref.type} writes the same element every iteration "
            "but is not a pure accumulation (acc = acc + x, or max/min, the loaded "
            "value used only there and the memref accessed nowhere else in the loop)",
        )
    return reduction


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
        if isinstance(op, arith.CmpfOp | arith.SelectOp):
            _check_mask_op(op, loop, kernel, name)
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
        stored_at = access_indices(store)
        for load in loads:
            if load.memref is store.memref and access_indices(load) != stored_at:
                raise IllegalScheduleError(
                    PRIMITIVE,
                    kernel,
                    name,
                    f"{store.memref.type} is stored at {store.map.data} and loaded "
                    f"at {load.map.data}: a dependence across iterations",
                )
    return Plan(kinds, reductions, bounds)


def _check_mask_op(
    op: arith.CmpfOp | arith.SelectOp, loop: affine.ForOp, kernel: str, name: str
) -> None:
    """A float ``cmpf`` whose every use is the condition of a ``select`` in the body
    (its vector form is a ``lanes.cmpf`` mask, which nothing else reads), or a
    ``select`` of floats."""
    if isinstance(op, arith.CmpfOp):
        if op.predicate.value.data not in PREDICATES.values():
            why = "a constant 'false'/'true' comparison"
        elif not isinstance(op.lhs.type, AnyFloat):
            why = f"a comparison of {op.lhs.type}"
        elif not all(
            isinstance(u.operation, arith.SelectOp)
            and u.index == 0
            and u.operation.parent_block() is loop.body.block
            for u in op.result.uses
        ):
            why = "a comparison whose result is used other than as a select's condition"
        else:
            return
    elif isinstance(op.lhs.type, AnyFloat):
        return
    else:
        why = f"a select of {op.lhs.type}"
    raise IllegalScheduleError(
        PRIMITIVE,
        kernel,
        name,
        f"its body has '{op.name}', {why}, which is not vectorized (only float "
        "comparisons that feed a select, and selects of floats)",
    )


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
                or operand.get_user_of_unique_use() is not op
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


@dataclass
class _Lanes:
    """The vector of each scalar value of the loop body: ``vectors`` holds those of
    the body's values (filled as the body is rewritten); a value defined outside the
    loop is broadcast once, right before it (``splats``)."""

    loop: affine.ForOp
    width: int
    vectors: dict[SSAValue, SSAValue] = field(default_factory=dict)
    splats: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def vector_type(self, element: Attribute) -> VectorType:
        """``vector<W x element>``."""
        return VectorType(element, [self.width])

    def of(self, value: SSAValue) -> SSAValue:
        """The vector of ``value``: its vector form, or its broadcast."""
        if value in self.vectors:
            return self.vectors[value]
        if value not in self.splats:
            splat = vector.BroadcastOp(value, self.vector_type(value.type))
            splat.vector.name_hint = value.name_hint
            outer = self.loop.parent
            assert outer is not None
            outer.insert_op_before(splat, self.loop)
            self.splats[value] = splat.vector
        return self.splats[value]


def _hoist_constants(loop: affine.ForOp) -> None:
    """Move the constants of the body before the loop: they are invariant scalars."""
    outer = loop.parent
    assert outer is not None
    for op in list(loop.body.block.ops):
        if isinstance(op, arith.ConstantOp):
            op.detach()
            outer.insert_op_before(op, loop)


def _vectorize_op(op: Operation, plan: Plan, lanes: _Lanes) -> bool:
    """Put the vector form of body op ``op`` next to it; True when ``op`` must go
    (all but an invariant load, which stays and is broadcast after it)."""
    block = op.parent
    assert block is not None
    if any(op is r.load or op is r.store for r in plan.reductions):
        return True  # the accumulator is a vector iter_arg now
    if isinstance(op, affine.LoadOp) and plan.kinds[op] == "invariant":
        splat = vector.BroadcastOp(op.result, lanes.vector_type(op.result.type))
        splat.vector.name_hint = op.result.name_hint
        block.insert_op_after(splat, op)
        lanes.vectors[op.result] = splat.vector
        return False
    if isinstance(op, affine.LoadOp):  # contiguous
        load = vector.LoadOp(
            op.memref, _index_values(op, op), lanes.vector_type(op.result.type)
        )
        load.result.name_hint = op.result.name_hint
        block.insert_op_before(load, op)
        lanes.vectors[op.result] = load.result
        return True
    if isinstance(op, affine.StoreOp):  # contiguous
        store = vector.StoreOp(lanes.of(op.value), op.memref, _index_values(op, op))
        block.insert_op_before(store, op)
        return True
    if isinstance(op, arith.CmpfOp):
        mask = lanes_dialect.CmpfOp(
            lanes.of(op.lhs), lanes.of(op.rhs), op.predicate.value.data
        )
        mask.result.name_hint = op.result.name_hint
        block.insert_op_before(mask, op)
        lanes.vectors[op.result] = mask.result
        return True
    if isinstance(op, arith.SelectOp) and op.cond in lanes.vectors:
        select = lanes_dialect.SelectOp(
            lanes.vectors[op.cond], lanes.of(op.lhs), lanes.of(op.rhs)
        )
        select.result.name_hint = op.result.name_hint
        block.insert_op_before(select, op)
        lanes.vectors[op.result] = select.result
        return True
    new = type(op).create(  # lanewise (a select on an invariant i1 keeps it scalar)
        operands=[
            v if isinstance(v.type, IntegerType) else lanes.of(v) for v in op.operands
        ],
        result_types=[lanes.vector_type(r.type) for r in op.results],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    for old, result in zip(op.results, new.results, strict=True):
        result.name_hint = old.name_hint
        lanes.vectors[old] = result
    block.insert_op_before(new, op)
    return True


def _vectorize_body(loop: affine.ForOp, plan: Plan, lanes: _Lanes) -> None:
    """Rewrite the body to work on vectors: each op becomes its vector form, the
    yield yields the vector accumulators, and the scalar iter_args go."""
    body = loop.body.block
    yielded: list[SSAValue] = []
    for reduction in plan.reductions:
        # after contract: an addf may be an fma
        combined = reduction.acc.get_user_of_unique_use()
        assert combined is not None
        yielded.append(combined.results[0])
    scalar: list[Operation] = []  # erased once their vector forms are all in
    for op in list(body.ops):
        if not isinstance(op, affine.YieldOp) and _vectorize_op(op, plan, lanes):
            scalar.append(op)
    terminator = body.last_op
    assert isinstance(terminator, affine.YieldOp)
    body.insert_op_before(
        affine.YieldOp.get(*(lanes.vectors[v] for v in yielded)), terminator
    )
    body.erase_op(terminator)
    for op in reversed(scalar):  # users before the values they use
        body.erase_op(op)
    for arg in reversed(body.args[1 : 1 + len(loop.inits)]):
        body.erase_arg(arg)


def _vector_loop(
    loop: affine.ForOp, bounds: Bounds, inits: list[SSAValue], width: int
) -> affine.ForOp:
    """The vector loop, inserted before ``loop``: ``[lower, vector_upper)`` step W,
    with ``loop``'s (vectorized) body and attributes, carrying ``inits``."""
    outer = loop.parent
    assert outer is not None
    region = Region()
    loop.body.move_blocks(region)
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
    for key, attr in loop.attributes.items():
        vector_loop.attributes[key] = attr
    outer.insert_op_before(vector_loop, loop)
    return vector_loop


def _tail_loop(
    tail: affine.ForOp,
    loop: affine.ForOp,
    bounds: Bounds,
    inits: list[SSAValue],
    name: str,
) -> list[SSAValue]:
    """The scalar tail, inserted before ``loop``: ``[max(lower, vector_upper),
    upper)`` with the body of ``tail`` (the loop as it was), carrying ``inits``,
    named ``name``; returns its results."""
    outer = loop.parent
    assert outer is not None
    lower_map, lower_operands = _tail_lower(bounds, outer, loop)
    region = Region()
    tail.body.move_blocks(region)
    upper_map, upper_operands = _compact(bounds.upper, list(bounds.operands))
    tail_loop = affine.ForOp.from_region(
        lower_operands,
        upper_operands,
        inits,
        [v.type for v in inits],
        AffineMapAttr(lower_map),
        AffineMapAttr(upper_map),
        region,
        1,
    )
    for key, attr in loop.attributes.items():
        tail_loop.attributes[key] = attr
    tail_loop.attributes[LOOP_ATTR] = StringAttr(name)
    iv(tail_loop).name_hint = name
    outer.insert_op_before(tail_loop, loop)
    return list(tail_loop.results)


MAX_WIDTH = 256
"""The widest vector ``vectorize`` makes: sixteen AVX-512 registers of f32. LLVM's
code for a vector grows with its lanes (width 2^20 took 6.5 s and 21 MB of LLVM IR
on a 41-iteration loop; 2^31 never finished)."""


def _find_checked(
    module: ModuleOp, kernel: str, loop: str, width: int
) -> tuple[affine.ForOp, Plan]:
    """The loop to vectorize and its plan, once every check has passed (the IR is
    not touched)."""
    if not 1 <= width <= MAX_WIDTH:
        raise InvalidArgumentError(
            PRIMITIVE,
            kernel,
            loop,
            f"width must be between 1 and {MAX_WIDTH} lanes, got {width}",
        )
    fn, target = find_loop(module, PRIMITIVE, kernel, loop)
    plan = check_vectorizable(target, kernel, loop, width)
    if plan.bounds.tail:
        check_new_names(fn, [loop + TAIL_SUFFIX], PRIMITIVE, kernel, loop)
    return target, plan


def vectorize_loop(module: ModuleOp, kernel: str, loop: str, width: int) -> None:
    """Vectorize ``loop`` of ``kernel`` by ``width`` lanes (see the module doc)."""
    target, plan = _find_checked(module, kernel, loop, width)
    # Legal: from here on nothing raises.
    outer = target.parent
    assert outer is not None
    contract(target.body.block)
    tail = target.clone() if plan.bounds.tail else None
    _hoist_constants(target)
    lanes = _Lanes(target, width)
    inits = start_accumulators(plan.reductions, target, width, lanes.vectors)
    _vectorize_body(target, plan, lanes)
    vector_loop = _vector_loop(target, plan.bounds, inits, width)
    # Each vector accumulator folds into its scalar: the loop's init, or memory.
    results = fold_accumulators(plan.reductions, target, vector_loop)
    if tail is not None:
        tail_name = loop + TAIL_SUFFIX
        results = _tail_loop(tail, target, plan.bounds, results, tail_name)
    for old, new in zip(target.results, results, strict=True):
        old.replace_all_uses_with(new)
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
