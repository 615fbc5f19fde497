"""``bound-symbolic-loops``: each loop over a symbolic dimension runs to the size of
the call.

``mark-symbolic-loops`` tagged the loops that run over a symbolic dimension with
the dimension and their trip count as a map of its size (``qd.trip``), and gave the
kernel the size as an ``index`` argument; the schedule kept the trip counts right.
Until here every loop still has the static bounds of the capacity, which the
schedule reasoned with. This pass loads the sizes from the host's ``symbolic_dims``
input, gives each kernel with tagged loops one ``index`` argument per dimension
(``%seq: index {qd.symbolic = "seq"}``), passes the sizes at its calls, and
replaces each tagged loop's upper bound by its trip count applied to the size: ``affine.for %i = 0 to 2048`` becomes
``affine.for %i = 0 to affine_map<()[s0] -> (s0)>()[%seq]``, and a loop ``split``
by 8 ``affine.for %i_o = 0 to affine_map<()[s0] -> (s0 ceildiv 8)>()[%seq]``.

Checks (a failure is a compiler bug, named): the loop starts at 0 with step 1, its
kernel has the dimension's argument, and its static extent is the trip count at
the capacity (so a primitive that changed the loop without updating ``qd.trip``
is caught here, not by a wrong result).

Before:
```mlir
affine.for %i = 0 to 64 { ... } {qd.loop = "i", qd.symbolic = "seq",
                                 qd.trip = affine_map<()[s0] -> (s0)>}
```
After:
```mlir
affine.for %i = 0 to affine_map<()[s0] -> (s0)>()[%seq] { ... } {qd.loop = "i", ...}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from qidao.dialects.attributes import (
    INPUT_NAMES_ATTR,
    LOOP_ATTR,
    SIZES_ATTR,
    SYMBOLIC_ATTR,
    TRIP_ATTR,
)
from qidao.dialects.symbolic import DIMS_INPUT, Dim, declared_dims
from qidao.errors import QidaoError
from qidao.passes.schedule.loops.nest import (
    constant_bounds,
    rebuild_loop,
)


class SymbolicLoopError(QidaoError, AssertionError):
    """A tagged loop whose bounds no longer match its trip count: a compiler bug."""


def bound_symbolic_loops(module: ModuleOp) -> None:
    """Bound the tagged loops of every kernel in ``module`` and pass the sizes.

    Works on a part of a module too (``targets/cpu/lower.py``): a kernel lists its
    dimensions and their capacities itself (``qd.sizes``), as do the declarations
    of the kernels a part calls, and the host is rewritten where it is present."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    takes: dict[str, list[str]] = {}
    for fn in functions:
        sizes = fn.attributes.get(SIZES_ATTR)
        if not isinstance(sizes, DictionaryAttr):
            continue
        capacity = {
            n: v.value.data for n, v in sizes.data.items() if isinstance(v, IntegerAttr)
        }
        used = sorted(capacity)
        takes[fn.sym_name.data] = used
        if not fn.body.blocks:  # a declaration: the kernel's new signature
            fn.function_type = FunctionType.from_lists(
                [*fn.function_type.inputs.data, *(IndexType() for _ in used)],
                fn.function_type.outputs.data,
            )
            attrs = list(fn.arg_attrs.data) if fn.arg_attrs else []
            if attrs:
                fn.arg_attrs = ArrayAttr([*attrs, *_size_attrs(used)])
            continue
        args = _add_args(fn, used)
        for loop in [
            op
            for op in fn.walk()
            if isinstance(op, affine.ForOp) and SYMBOLIC_ATTR in op.attributes
        ]:
            _bound(fn, loop, args, capacity)
    host = next((f for f in functions if declared_dims(f)), None)
    if host is not None and takes:
        _pass_sizes(host, _load_sizes(host, declared_dims(host)), takes)


def _size_attrs(used: list[str]) -> list[DictionaryAttr]:
    return [DictionaryAttr({SYMBOLIC_ATTR: StringAttr(n)}) for n in used]


def _add_args(fn: func.FuncOp, used: list[str]) -> dict[str, SSAValue]:
    """One ``index`` argument per dimension in ``used``, appended to ``fn``."""
    block: Block = fn.body.block
    args: dict[str, SSAValue] = {}
    for name in used:
        arg = block.insert_arg(IndexType(), len(block.args))
        arg.name_hint = name
        args[name] = arg
    n = len(block.args) - len(used)
    attrs = list(fn.arg_attrs.data) if fn.arg_attrs else [DictionaryAttr({})] * n
    fn.arg_attrs = ArrayAttr([*attrs, *_size_attrs(used)])
    fn.function_type = FunctionType.from_lists(
        [a.type for a in block.args], fn.function_type.outputs.data
    )
    return args


def _pass_sizes(
    host: func.FuncOp, sizes: dict[str, SSAValue], takes: dict[str, list[str]]
) -> None:
    """Each call of a kernel in ``takes`` gets the sizes it takes."""
    calls = [
        op
        for op in host.walk()
        if isinstance(op, func.CallOp) and op.callee.string_value() in takes
    ]
    for op in calls:
        used = takes[op.callee.string_value()]
        call = func.CallOp(
            op.callee, [*op.arguments, *(sizes[n] for n in used)], op.result_types
        )
        call.attributes.update(op.attributes)
        Rewriter.replace_op(op, call)


def _bound(
    fn: func.FuncOp,
    loop: affine.ForOp,
    sizes: dict[str, SSAValue],
    capacity: dict[str, int],
) -> None:
    dim = loop.attributes[SYMBOLIC_ATTR]
    trip = loop.attributes.get(TRIP_ATTR)
    name = loop.attributes.get(LOOP_ATTR)
    where = (
        f"bound-symbolic-loops: kernel @{fn.sym_name.data}, loop "
        f"'{name.data if isinstance(name, StringAttr) else '?'}'"
    )
    assert isinstance(dim, StringAttr)
    if not isinstance(trip, AffineMapAttr) or dim.data not in sizes:
        raise SymbolicLoopError(f"{where}: no trip count or size for '{dim.data}'")
    bounds = constant_bounds(loop)
    if bounds is None or bounds[0] != 0 or loop.step.value.data != 1:
        raise SymbolicLoopError(
            f"{where}: expected bounds 0 to N with step 1, got "
            f"{loop.lowerBoundMap.data} to {loop.upperBoundMap.data} step "
            f"{loop.step.value.data}"
        )
    at_capacity = trip.data.eval([], [capacity[dim.data]])
    if list(at_capacity) != [bounds[1]]:
        raise SymbolicLoopError(
            f"{where}: it runs {bounds[1]} times but its trip count {trip.data} is "
            f"{list(at_capacity)} at the capacity {capacity[dim.data]}"
        )
    rebuild_loop(
        loop,
        (AffineMap(0, 0, (AffineConstantExpr(0),)), ()),
        (trip.data, (sizes[dim.data],)),
        1,
    )


def _load_sizes(host: func.FuncOp, dims: dict[str, Dim]) -> dict[str, SSAValue]:
    """Each dimension's size as an ``index`` at the top of the host."""
    names = host.attributes.get(INPUT_NAMES_ATTR)
    assert isinstance(names, ArrayAttr)
    position = [n.data for n in names.data if isinstance(n, StringAttr)].index(
        DIMS_INPUT
    )
    buffer = host.body.block.args[position]
    block = host.body.block
    first = block.first_op
    assert first is not None
    sizes: dict[str, SSAValue] = {}
    for k, name in enumerate(dims):
        at = arith.ConstantOp(IntegerAttr(k, IndexType()))
        load = memref.LoadOp.get(buffer, [at.result])
        cast = arith.IndexCastOp(load.res, IndexType())
        cast.result.name_hint = name
        for new in (at, load, cast):
            block.insert_op_before(new, first)
        sizes[name] = cast.result
    return sizes


@dataclass(frozen=True)
class BoundSymbolicLoops(ModulePass):
    """Make each loop over a symbolic dimension run to the call's size."""

    name = "bound-symbolic-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bound_symbolic_loops(op)
