"""``vectorize``: an innermost loop runs ``width`` iterations at once on vectors.

    for i in [lb, ub)                       ==>   for i in [lb, ub) step W
      a = load x[.., i]      (contiguous)           va = vector.load x[.., i]  : vector<W>
      b = load y[..]         (invariant)            b  = load y[..]
      c = a * b                                     vb = vector.broadcast b    : vector<W>
      store c, z[.., i]      (contiguous)           vc = arith.mulf va, vb     : vector<W>
                                                    vector.store vc, z[.., i]

Options: ``kernel``, ``loop`` (its ``qd.loop`` name), ``width`` (W, the number of
lanes, default 16: one ``<16 x float>`` AVX-512 register), e.g. ``vectorize{
kernel="main_k0_fused" loop="i1" width=16}``. The loop keeps its name and attributes;
only its step becomes W and its body works on ``vector<Wx...>`` values.

Legality (each failure raises an ``IllegalScheduleError`` naming kernel, loop, reason;
the module is left as it was):

- the loop is innermost (no loop inside it), has constant bounds, step 1 and no
  ``iter_args`` (a reduction carried in registers is not vectorized yet);
- its extent is divisible by W. Tail policy: there is no scalar tail loop; the error
  suggests ``split{... factor=W}`` first (the inner ``<loop>_i`` then has extent W);
- its body holds only ``affine.load``/``affine.store``, ``arith.constant`` and the
  float ops ``arith.addf/subf/mulf/divf/negf/maximumf/minimumf/maxnumf/minnumf`` and
  ``math.fma/sqrt/absf/exp/log/exp2/log2/sin/cos/floor/ceil/tanh/trunc/round``
  (anything else is named in the error), on float element types;
- every access is either *invariant* (its indices do not depend on the loop: a scalar
  load then ``vector.broadcast``) or *unit-stride contiguous* (only the last index
  depends on the loop, with coefficient 1, and the memref's innermost stride is 1: one
  ``vector.load``/``vector.store`` of W elements from that index). Any other index
  (stride 2, ``i mod 4``, the loop in an outer dimension) is a non-unit stride: error;
- no store is invariant (every iteration writing the same element is a reduction
  through memory: not supported yet), and a memref that the loop stores to is loaded
  only at exactly the stored indices (otherwise a loop-carried dependence through
  memory could be reordered).

Values defined outside the loop (and constants inside it, which are hoisted) are
broadcast once, before the loop. ``convert-to-llvm`` lowers the vector ops (see
``qidao/passes/_llvm_vector.py``) to ``llvm.load``/``llvm.store`` of ``vector<Wxf32>``
(alignment: the element size) and a splat (``insertelement`` + ``shufflevector``).

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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, math, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
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

from qidao.passes._loops import (
    IllegalScheduleError,
    InvalidArgumentError,
    find_loop,
    iv,
    loop_name,
    require_constant_bounds,
    step_of,
)

PRIMITIVE = "vectorize"

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
)
"""Float ops applied lane by lane, so the vector op is the same op on vectors."""


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
        and all(x is y for x, y in zip(a.indices, b.indices, strict=True))
        and len(a.indices) == len(b.indices)
    )


def check_vectorizable(
    loop: affine.ForOp, kernel: str, name: str, width: int
) -> dict[Operation, str]:
    """Check every legality rule; return the access kind of each load/store."""
    lb, ub = require_constant_bounds(loop, PRIMITIVE, kernel)
    if step_of(loop) != 1:
        raise IllegalScheduleError(
            PRIMITIVE, kernel, name, f"its step is {step_of(loop)}, not 1"
        )
    if loop.inits:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            name,
            "it carries iter_args (a reduction in registers): not supported yet",
        )
    extent = max(0, ub - lb)
    kinds: dict[Operation, str] = {}
    stores: list[affine.StoreOp] = []
    loads: list[affine.LoadOp] = []
    for op in loop.body.block.ops:
        if isinstance(op, affine.ForOp):
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"it is not innermost: loop '{loop_name(op)}' is inside it",
            )
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
    for store in stores:
        if kinds[store] == "invariant":
            raise IllegalScheduleError(
                PRIMITIVE,
                kernel,
                name,
                f"a store to {store.memref.type} writes the same element every "
                "iteration (a reduction through memory): not supported yet",
            )
        for load in loads:
            if load.memref is store.memref and not _same_access(load, store):
                raise IllegalScheduleError(
                    PRIMITIVE,
                    kernel,
                    name,
                    f"{store.memref.type} is stored at {store.map.data} and loaded "
                    f"at {load.map.data}: a dependence across iterations",
                )
    if extent % width:
        raise IllegalScheduleError(
            PRIMITIVE,
            kernel,
            name,
            f"its extent {extent} is not divisible by width {width}; split it first "
            f'(split{{kernel="{kernel}" loop="{name}" factor={width}}}) and '
            f"vectorize '{name}_i'",
        )
    return kinds


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


def vectorize_loop(module: ModuleOp, kernel: str, loop: str, width: int) -> None:
    """Vectorize ``loop`` of ``kernel`` by ``width`` lanes (see the module doc)."""
    if width < 1:
        raise InvalidArgumentError(
            PRIMITIVE, kernel, loop, f"width must be at least 1, got {width}"
        )
    _, target = find_loop(module, PRIMITIVE, kernel, loop)
    kinds = check_vectorizable(target, kernel, loop, width)
    outer_block = target.parent
    assert outer_block is not None
    body = target.body.block

    # Constants inside the loop move before it: they are invariant scalars.
    for op in list(body.ops):
        if isinstance(op, arith.ConstantOp):
            op.detach()
            outer_block.insert_op_before(op, target)

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
            outer_block.insert_op_before(splat, target)
            splats[value] = splat.vector
        return splats[value]

    for op in list(body.ops):
        if isinstance(op, affine.YieldOp):
            continue
        if isinstance(op, affine.LoadOp):
            if kinds[op] == "invariant":
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
    for op in reversed(scalar):  # users before the values they use
        body.erase_op(op)
    target.properties["step"] = IntegerAttr.from_index_int_value(width)


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    """Run an innermost loop ``width`` iterations at a time on vector values."""

    name = "vectorize"

    kernel: str
    loop: str
    width: int = 16

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        vectorize_loop(op, self.kernel, self.loop, self.width)
