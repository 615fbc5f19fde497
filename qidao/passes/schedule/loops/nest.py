"""Loop-nest utilities shared by the schedule primitives (split, reorder, loop-fuse,
unroll, parallel).

A kernel is a ``func.func`` carrying ``qd.kernel``; each of its ``affine.for`` loops
carries a name ``qd.loop = "i"`` that is unique within the kernel. The primitives
find a loop by (kernel, loop name), check what they need (constant bounds, a
perfect nest), rebuild loops, and substitute a loop's induction variable by an
affine expression of new induction variables (``i -> 4 * i_o + i_i``), folding it
into the maps of the ``affine.load``/``affine.store``/``affine.apply``/
``affine.min`` that use it, so the IR keeps reading like the loop nest it is.

Every error a primitive raises is a ``ScheduleError`` subclass (``errors.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    IndexType,
    ModuleOp,
    StringAttr,
    i32,
)
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.rewriter import Rewriter

from qidao.dialects.attributes import KERNEL_ATTR, LOOP_ATTR, SYMBOLIC_ATTR
from qidao.passes.schedule.loops.errors import (
    DuplicateLoopNameError,
    KernelNotFoundError,
    LoopNotFoundError,
    NonConstantBoundsError,
    SymbolicLoopError,
)
from qidao.passes.schedule.loops.quotients import loop_range, simplify_quotients

# --- finding kernels and loops --------------------------------------------------


def loop_name(op: Operation) -> str | None:
    """The ``qd.loop`` name of an ``affine.for``, or None."""
    attr = op.attributes.get(LOOP_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def kernel_functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    """Every kernel (a ``func.func`` with ``qd.kernel``) by symbol name, in order."""
    return {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    }


def kernel_loops(kernel: func.FuncOp) -> list[affine.ForOp]:
    """The named loops of a kernel in nest order (pre-order: outer before inner)."""
    return [
        op
        for op in kernel.walk()
        if isinstance(op, affine.ForOp) and loop_name(op) is not None
    ]


def find_kernel(
    module: ModuleOp, primitive: str, kernel: str, loop: str
) -> func.FuncOp:
    kernels = kernel_functions(module)
    if kernel not in kernels:
        known = ", ".join(kernels) or "none"
        raise KernelNotFoundError(
            primitive, kernel, loop, f"no such kernel; the kernels are: {known}"
        )
    return kernels[kernel]


CONSTANT_TRIP_PRIMITIVES = frozenset(
    {
        *("unroll", "vectorize", "peel", "loop-fuse", "tensorize", "bind"),
        *("block_stride", "double-buffer"),
    }
)
"""The primitives that need a loop's trip count when compiling, and so refuse a
loop over a symbolic dimension (``qd.symbolic``; a ``SymbolicLoopError``). The
others take one: ``split`` keeps its run-time trip count (``qd.trip``),
``compute-at`` moves a pointwise nest (never a reduction) over the tiles of a loop,
and ``reorder``, ``parallel``, ``cache-read``, ``cache-write`` and ``prefetch`` do
not change how many times it runs."""


def symbolic_dim(op: Operation) -> str | None:
    """The symbolic dimension a loop runs over (``qd.symbolic``), or None."""
    attr = op.attributes.get(SYMBOLIC_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def find_loop(
    module: ModuleOp, primitive: str, kernel: str, loop: str
) -> tuple[func.FuncOp, affine.ForOp]:
    """The kernel function and its loop named ``loop``, or a LoopNotFoundError; a
    SymbolicLoopError where ``primitive`` cannot take a loop over a symbolic
    dimension (:data:`CONSTANT_TRIP_PRIMITIVES`)."""
    fn = find_kernel(module, primitive, kernel, loop)
    loops = kernel_loops(fn)
    for op in loops:
        if loop_name(op) == loop:
            _check_symbolic(primitive, kernel, loop, op)
            return fn, op
    known = ", ".join(str(loop_name(op)) for op in loops) or "none"
    raise LoopNotFoundError(
        primitive, kernel, loop, f"no such loop; the kernel's loops are: {known}"
    )


def _check_symbolic(primitive: str, kernel: str, loop: str, op: affine.ForOp) -> None:
    dim = symbolic_dim(op)
    if dim is not None and primitive in CONSTANT_TRIP_PRIMITIVES:
        raise SymbolicLoopError(
            primitive,
            kernel,
            loop,
            f"it runs to the size of the symbolic dimension '{dim}', known only "
            f"at run time, and {primitive} needs a constant trip count (split it "
            "first and apply it to the inner loop)",
        )


def check_new_names(
    fn: func.FuncOp, names: Sequence[str], primitive: str, kernel: str, loop: str
) -> None:
    """Raise a DuplicateLoopNameError if the kernel already has a loop so named."""
    taken = {loop_name(op) for op in kernel_loops(fn)}
    for name in names:
        if name in taken:
            raise DuplicateLoopNameError(
                primitive,
                kernel,
                loop,
                f"the new loop name '{name}' is already used in the kernel",
            )


# --- bounds ---------------------------------------------------------------------


def constant_of(affine_map: AffineMap) -> int | None:
    """The value of a map with one constant result and no operands, else None."""
    if affine_map.num_dims or affine_map.num_symbols or len(affine_map.results) != 1:
        return None
    (result,) = affine_map.results
    return result.value if isinstance(result, AffineConstantExpr) else None


def constant_bounds(loop: affine.ForOp) -> tuple[int, int] | None:
    """``(lb, ub)`` of a loop with constant bounds, else None."""
    lb = constant_of(loop.lowerBoundMap.data)
    ub = constant_of(loop.upperBoundMap.data)
    if lb is None or ub is None:
        return None
    return lb, ub


def step_of(loop: affine.ForOp) -> int:
    return loop.step.value.data


def require_constant_bounds(
    loop: affine.ForOp, primitive: str, kernel: str, step_one: bool = True
) -> tuple[int, int]:
    """``(lb, ub)``, or a NonConstantBoundsError naming the loop."""
    bounds = constant_bounds(loop)
    name = str(loop_name(loop))
    if bounds is None:
        raise NonConstantBoundsError(
            primitive,
            kernel,
            name,
            "its bounds are not constants (lower "
            f"{loop.lowerBoundMap.data}, upper {loop.upperBoundMap.data})",
        )
    if step_one and step_of(loop) != 1:
        raise NonConstantBoundsError(
            primitive, kernel, name, f"it has step {step_of(loop)}; expected step 1"
        )
    return bounds


def max_trip_count(loop: affine.ForOp) -> int | None:
    """An upper bound on the loop's trip count, when its lower bound is a constant
    and its upper bound map has a constant result (``min(4, 10 - 4 * o)`` gives 4)."""
    lb = constant_of(loop.lowerBoundMap.data)
    if lb is None:
        return None
    constants = [
        r.value
        for r in loop.upperBoundMap.data.results
        if isinstance(r, AffineConstantExpr)
    ]
    if not constants:
        return None
    step = step_of(loop)
    return max(0, -(-(min(constants) - lb) // step))


# --- nests ----------------------------------------------------------------------


def body_ops(loop: affine.ForOp) -> list[Operation]:
    """The ops of the loop body, without the terminator."""
    ops = list(loop.body.block.ops)
    return ops[:-1] if ops and isinstance(ops[-1], affine.YieldOp) else ops


def nested_child(loop: affine.ForOp) -> affine.ForOp | None:
    """The loop directly and perfectly nested in ``loop``: the body is that loop and
    the terminator, and any iter_args pass straight through (the inner loop's inits
    are the outer loop's iter_args, the outer yields the inner's results)."""
    ops = body_ops(loop)
    if len(ops) != 1 or not isinstance(ops[0], affine.ForOp):
        return None
    inner = ops[0]
    outer_iter_args = list(loop.body.block.args[1:])
    if list(inner.inits) != outer_iter_args:
        return None
    terminator = loop.body.block.last_op
    yielded = list(terminator.operands) if terminator is not None else []
    if yielded != list(inner.results):
        return None
    return inner


MEMREF_VIEWS = (
    memref.ReinterpretCastOp,
    memref.SubviewOp,
    memref.CastOp,
    memref.ExpandShapeOp,
    memref.CollapseShapeOp,
)
"""The memref ops whose result is a view of their first operand's buffer."""


def root_buffer(value: SSAValue) -> SSAValue:
    """The buffer a memref value views: follows view ops to an argument, an
    allocation or a global (``value`` itself when it is no view)."""
    while isinstance(value, OpResult) and isinstance(value.owner, MEMREF_VIEWS):
        value = value.owner.operands[0]
    return value


def replace_kernel(kernel: func.FuncOp, saved: func.FuncOp) -> None:
    """Put ``saved`` (a clone of ``kernel`` taken earlier) back in its place: how a
    caller undoes the primitives it applied to one kernel."""
    block = kernel.parent_block()
    assert block is not None
    block.insert_op_before(saved, kernel)
    kernel.detach()
    kernel.erase()


def iv(loop: affine.ForOp) -> SSAValue:
    """The induction variable of ``loop``."""
    return loop.body.block.args[0]


def make_loop(
    name: str,
    lower: tuple[AffineMap, Sequence[SSAValue]],
    upper: tuple[AffineMap, Sequence[SSAValue]],
    inits: Sequence[SSAValue] = (),
    step: int = 1,
) -> affine.ForOp:
    """An empty ``affine.for`` named ``name`` (its body holds only a block with the
    induction variable, named ``name``, and one argument per init)."""
    block = Block(arg_types=[IndexType(), *(v.type for v in inits)])
    block.args[0].name_hint = name
    loop = affine.ForOp.from_region(
        list(lower[1]),
        list(upper[1]),
        list(inits),
        [v.type for v in inits],
        AffineMapAttr(lower[0]),
        AffineMapAttr(upper[0]),
        Region(block),
        step,
    )
    loop.attributes[LOOP_ATTR] = StringAttr(name)
    return loop


def constant_map(value: int) -> tuple[AffineMap, Sequence[SSAValue]]:
    return AffineMap.constant_map(value), ()


def rebuild_loop(
    loop: affine.ForOp,
    lower: tuple[AffineMap, Sequence[SSAValue]],
    upper: tuple[AffineMap, Sequence[SSAValue]],
    step: int,
    inits: Sequence[SSAValue] | None = None,
) -> affine.ForOp:
    """Replace ``loop`` by a loop with new bounds and step and the same body, results
    and attributes (the body's block moves, so uses of its arguments stay valid)."""
    region = Region()
    loop.body.move_blocks(region)
    new = affine.ForOp.from_region(
        list(lower[1]),
        list(upper[1]),
        list(loop.inits) if inits is None else list(inits),
        list(loop.result_types),
        AffineMapAttr(lower[0]),
        AffineMapAttr(upper[0]),
        region,
        step,
    )
    for key, attr in loop.attributes.items():
        new.attributes[key] = attr
    Rewriter.replace_op(loop, new, new.results)
    return new


def rename_nested_loops(ops: Sequence[Operation], suffix: str) -> None:
    """Append ``suffix`` to the name of every named loop in ``ops`` (and to its
    induction variable's name), keeping loop names unique after a copy."""
    for top in ops:
        for op in top.walk():
            name = loop_name(op)
            if isinstance(op, affine.ForOp) and name is not None:
                op.attributes[LOOP_ATTR] = StringAttr(name + suffix)
                iv(op).name_hint = name + suffix


# --- substituting an induction variable -----------------------------------------


def simplify(expr: AffineExpr, num_dims: int, num_symbols: int) -> AffineExpr:
    """``expr`` flattened and rebuilt (``(d0 * 2 + d1) * 4 -> d0 * 8 + d1 * 4``) when
    it is pure affine and has no ``mod``, else as it is."""
    if any(
        isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Mod
        for e in expr.dfs()
    ):
        return (
            expr  # the flattener would spell ``d mod c`` as ``d - (d floordiv c) * c``
        )
    try:
        return expr.simplify(num_dims, num_symbols)
    except NotImplementedError:
        return expr


def replace_value(
    old: SSAValue, expr: AffineExpr, values: Sequence[SSAValue], block: Block
) -> None:
    """Replace every use of ``old`` by ``expr`` (whose dim ``k`` is ``values[k]``).

    An ``affine.apply`` computing ``expr`` goes at the start of ``block`` (which must
    dominate every use), the uses take it, and it is then folded into the maps of
    the ``affine.load``/``store``/``apply``/``min`` users that take it as a
    dimension; it is erased when nothing else uses it.
    """
    apply = affine.ApplyOp(
        list(values), AffineMapAttr(AffineMap(len(values), 0, (expr,)))
    )
    if block.first_op is None:
        block.add_op(apply)
    else:
        block.insert_op_before(apply, block.first_op)
    old.replace_all_uses_with(apply.result)
    fold_apply(apply)


def _map_operand_offset(op: Operation) -> int | None:
    """Where the map operands of an affine access/apply/min start, else None."""
    if isinstance(op, affine.LoadOp):
        return 1
    if isinstance(op, affine.StoreOp):
        return 2
    if isinstance(op, affine.ApplyOp | affine.MinOp):
        return 0
    return None


def _map_property(op: Operation) -> AffineMap:
    attr = op.properties["map"]
    assert isinstance(attr, AffineMapAttr)
    return attr.data


def fold_apply(apply: affine.ApplyOp) -> None:
    """Fold ``apply`` into each affine access/apply/min that takes it as an index."""
    (expr,) = apply.map.data.results
    values = list(apply.mapOperands)
    for use in list(apply.result.uses):
        user = use.operation
        if isinstance(user, affine.ForOp):
            _fold_into_bounds(user, use.index, apply.result, expr, values)
            continue
        offset = _map_operand_offset(user)
        if offset is None or use.index < offset:
            continue
        new_map, new_operands = substitute(
            _map_property(user), user.operands[offset:], apply.result, expr, values
        )
        user.operands = [*user.operands[:offset], *new_operands]
        user.properties["map"] = AffineMapAttr(new_map)
    if apply.result.first_use is None:
        apply.detach()
        apply.erase()


def _fold_into_bounds(
    loop: affine.ForOp,
    index: int,
    old: SSAValue,
    expr: AffineExpr,
    values: Sequence[SSAValue],
) -> None:
    """Fold ``old = expr(values)`` into the bound map that operand ``index`` of
    ``loop`` belongs to (iter_args inits are left alone)."""
    num_lower = len(loop.lowerBoundOperands)
    num_upper = len(loop.upperBoundOperands)
    lower = (loop.lowerBoundMap.data, list(loop.lowerBoundOperands))
    upper = (loop.upperBoundMap.data, list(loop.upperBoundOperands))
    if index < num_lower:
        lower = substitute(lower[0], lower[1], old, expr, values)
    elif index < num_lower + num_upper:
        upper = substitute(upper[0], upper[1], old, expr, values)
    else:
        return
    set_bounds(loop, lower, upper)


def set_bounds(
    loop: affine.ForOp,
    lower: tuple[AffineMap, Sequence[SSAValue]],
    upper: tuple[AffineMap, Sequence[SSAValue]],
) -> None:
    """Give ``loop`` new bound maps and operands in place (its results, body and
    identity stay, so values that name them stay valid)."""
    inits = list(loop.inits)
    loop.operands = [*lower[1], *upper[1], *inits]
    loop.properties["lowerBoundMap"] = AffineMapAttr(lower[0])
    loop.properties["upperBoundMap"] = AffineMapAttr(upper[0])
    loop.properties["operandSegmentSizes"] = DenseArrayBase.from_list(
        i32, [len(lower[1]), len(upper[1]), len(inits)]
    )


def substitute(
    affine_map: AffineMap,
    operands: Sequence[SSAValue],
    old: SSAValue,
    expr: AffineExpr,
    values: Sequence[SSAValue],
) -> tuple[AffineMap, list[SSAValue]]:
    """``affine_map`` over ``operands`` with every operand equal to ``old`` replaced
    by ``expr`` (whose dimension ``k`` is ``values[k]``).

    The result is canonical: every operand a dimension (xDSL parses ``%x[%i]`` with
    ``%i`` a symbol, qidao's lowering builds it as a dimension; both print the
    same), each value once, in order of first appearance, and each result
    simplified. So the same rewrite on parsed and on built IR prints the same.
    """
    dims: list[SSAValue] = []

    def position(value: SSAValue) -> int:
        for k, known in enumerate(dims):
            if known is value:
                return k
        dims.append(value)
        return len(dims) - 1

    replacements: list[AffineExpr] = []
    for value in operands:
        if value is old:
            new_dims = [AffineExpr.dimension(position(v)) for v in values]
            replacements.append(expr.replace_dims_and_symbols(new_dims, []))
        else:
            replacements.append(AffineExpr.dimension(position(value)))
    num_dims = affine_map.num_dims
    replaced = affine_map.replace_dims_and_symbols(
        replacements[:num_dims], replacements[num_dims:], len(dims), 0
    )
    results = tuple(simplify(r, len(dims), 0) for r in replaced.results)
    if any(_has_quotient(r) for r in results):
        ranges = [loop_range(value) for value in dims]
        results = tuple(
            simplify(simplify_quotients(r, ranges), len(dims), 0)
            if _has_quotient(r)
            else r
            for r in results
        )
    return AffineMap(len(dims), 0, results), dims


def _has_quotient(expr: AffineExpr) -> bool:
    return any(
        isinstance(e, AffineBinaryOpExpr)
        and e.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.Mod)
        for e in expr.dfs()
    )


def move_body(source: Block, target: Block) -> None:
    """Move every op of ``source`` (terminator included) to the end of ``target``."""
    for op in list(source.ops):
        op.detach()
        target.add_op(op)


def access_indices(
    op: affine.LoadOp | affine.StoreOp,
) -> tuple[AffineMap, list[SSAValue]]:
    return op.map.data, list(op.indices)


def parse_loop_list(text: str | tuple[str, ...]) -> list[str]:
    """``"k,i,j"`` or ``("k", "i", "j")`` as a list of names, blanks dropped."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    names: list[str] = []
    for part in parts:
        names.extend(p.strip() for p in part.split(",") if p.strip())
    return names


def indices_are(
    op: affine.LoadOp | affine.StoreOp, values: list[SSAValue], shape: list[int]
) -> bool:
    """Whether the access's index is exactly ``[values[0], values[1], ...]`` (or the
    constant 0 in a dimension of size 1, as a broadcast reads it)."""
    affine_map = op.map.data
    operands = list(op.indices)
    num_dims = affine_map.num_dims
    as_dims = affine_map.replace_dims_and_symbols(
        [AffineExpr.dimension(k) for k in range(num_dims)],
        [AffineExpr.dimension(num_dims + k) for k in range(affine_map.num_symbols)],
        len(operands),
        0,
    )
    if len(as_dims.results) != len(values):
        return False
    for d, result in enumerate(as_dims.results):
        expr = simplify(result, len(operands), 0)
        if isinstance(expr, AffineDimExpr) and operands[expr.position] is values[d]:
            continue
        if shape[d] == 1 and expr == AffineExpr.constant(0):
            continue
        return False
    return True
