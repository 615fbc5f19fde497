"""``mark-symbolic-loops``: find the loops that run over a symbolic dimension.

A model with symbolic dimensions (``qidao.dialects.symbolic``) is lowered at each
dimension's capacity, so its kernels are ordinary static loop nests. This pass
finds which loops run over a symbolic dimension, tags each with the dimension and
its trip count at run time (``qd.symbolic = "seq"``, ``qd.trip = ()[s0] -> (s0)``,
``qd.exact`` when the loop reduces), lists on each kernel with such loops the
dimensions it will take the sizes of (``qd.sizes``) and records which axes of the
outputs are symbolic (``qd.output_dim_labels`` on the host). The schedule then works on the static loops
(the tiles it picks are for the capacity), ``split`` keeps the trip counts right
(``passes/schedule/split.py``), and ``bound-symbolic-loops`` finally makes each
tagged loop run to its trip count.

How it knows: labels start at the graph inputs (``qd.dim_labels``) and flow through
the host in program order: through views (``memref.reinterpret_cast``: the axis
with the labeled axis's size and stride), and through each kernel, where a loop
whose induction variable indexes a labeled axis *as itself* runs over that
dimension, and an axis a symbolic loop's variable stores to as itself is labeled
(to a fixed point). Nothing else about the ops is assumed, so each kernel is
checked: the result is the same for every size only when each labeled axis is
indexed by a symbolic loop's variable or a constant below the dimension's ``lo``.
An index that does arithmetic on a symbolic loop's variable (a shift, a merge of
axes, a reversal), a position counted from the end (a constant past ``lo``), data
used as an index into a labeled axis, or a mean over a symbolic axis (its divisor
is the capacity) is refused, naming the kernel, the buffer and the index.

Reading past the call's size is allowed: a loop that does not reduce may compute
whole tiles past it (``split``), into rows every buffer has; what those rows hold
is never read by a result that is returned.

Before (``x`` is ``[seq, 32]``, seq's capacity 64):
```mlir
func.func private @main_k0_tanh(%x: memref<64x32xf32>, %out: memref<64x32xf32>) {
  affine.for %i0 = 0 to 64 { affine.for %i1 = 0 to 32 { ... } {qd.loop = "i1"} }
    {qd.loop = "i0"}
```
After:
```mlir
func.func private @main_k0_tanh(%x: memref<64x32xf32>, %out: memref<64x32xf32>) {
  affine.for %i0 = 0 to 64 { ... } {qd.loop = "i0", qd.symbolic = "seq",
                                    qd.trip = affine_map<()[s0] -> (s0)>}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass

from qidao.dialects.attributes import (
    DIM_LABELS_ATTR,
    EXACT_ATTR,
    KERNEL_ATTR,
    LOOP_ATTR,
    NUM_INPUTS_ATTR,
    OUTPUT_DIM_LABELS_ATTR,
    SIZES_ATTR,
    SYMBOLIC_ATTR,
    TRIP_ATTR,
)
from qidao.dialects.symbolic import Dim, declared_dims, dim_labels
from qidao.dialects.tg.layout import contiguous_strides
from qidao.errors import UnsupportedError

COUNTING_OPS = ("tg.reduce_mean", "tg.avg_pool2d")
"""Ops whose kernels divide by the number of elements they reduce: over a symbolic
axis that number would be the capacity, not the call's size."""


class SymbolicDimError(UnsupportedError):
    """A kernel computes something that depends on a symbolic dimension's size in a
    way the bounded lowering cannot follow; the message names kernel and index."""


Labels = list[str]


@dataclass
class _Index:
    """One axis of one access: the loop whose variable it is, a constant, or an
    expression (``loops``: the loops it uses; ``data``: it reads memory)."""

    loop: affine.ForOp | None = None
    const: int | None = None
    loops: set[affine.ForOp] = field(default_factory=set)
    data: bool = False
    text: str = ""


@dataclass
class _Access:
    op: Operation
    buffer: SSAValue
    axes: list[_Index]
    store: bool


def _loop_of(value: SSAValue) -> affine.ForOp | None:
    if isinstance(value, BlockArgument) and value.index == 0:
        parent = value.block.parent_op()
        if isinstance(parent, affine.ForOp):
            return parent
    return None


def _reached(
    value: SSAValue, seen: set[SSAValue] | None = None
) -> tuple[set[affine.ForOp], bool]:
    """The loops whose variables ``value`` is computed from, and whether it reads
    memory on the way."""
    seen = set() if seen is None else seen
    if value in seen:
        return set(), False
    seen.add(value)
    loop = _loop_of(value)
    if loop is not None:
        return {loop}, False
    owner = value.owner
    if not isinstance(owner, Operation):
        return set(), False
    loops: set[affine.ForOp] = set()
    if isinstance(owner, affine.LoadOp | memref.LoadOp):
        for operand in owner.operands[1:]:
            loops |= _reached(operand, seen)[0]
        return loops, True
    data = False
    for operand in owner.operands:
        more, d = _reached(operand, seen)
        loops |= more
        data = data or d
    return loops, data


def _affine_axes(amap: AffineMap, operands: Sequence[SSAValue]) -> list[_Index]:
    axes = []
    for expr in amap.results:
        text = str(expr)
        if isinstance(expr, AffineConstantExpr):
            axes.append(_Index(const=expr.value, text=text))
            continue
        if isinstance(expr, AffineDimExpr):
            loop = _loop_of(operands[expr.position])
            if loop is not None:
                axes.append(_Index(loop=loop, text=text))
                continue
        loops: set[affine.ForOp] = set()
        data = False
        for k in [*expr.used_dims(), *range(amap.num_dims, len(operands))]:
            more, d = _reached(operands[k])
            loops |= more
            data = data or d
        axes.append(_Index(loops=loops, data=data, text=text))
    return axes


def _value_axes(indices: Sequence[SSAValue]) -> list[_Index]:
    axes = []
    for v in indices:
        loop = _loop_of(v)
        if loop is not None:
            axes.append(_Index(loop=loop, text=v.name_hint or "iv"))
        elif isinstance(v.owner, arith.ConstantOp) and isinstance(
            v.owner.value, IntegerAttr
        ):
            axes.append(_Index(const=v.owner.value.value.data, text="constant"))
        else:
            loops, data = _reached(v)
            axes.append(_Index(loops=loops, data=data, text="computed index"))
    return axes


def _accesses(fn: func.FuncOp) -> list[_Access]:
    found = []
    for op in fn.walk():
        if isinstance(op, affine.LoadOp):
            axes = _affine_axes(op.map.data, op.indices) if op.map else []
            found.append(_Access(op, op.memref, axes, False))
        elif isinstance(op, affine.StoreOp):
            axes = _affine_axes(op.map.data, op.indices) if op.map else []
            found.append(_Access(op, op.memref, axes, True))
        elif isinstance(op, memref.LoadOp):
            found.append(_Access(op, op.memref, _value_axes(op.indices), False))
        elif isinstance(op, memref.StoreOp):
            found.append(_Access(op, op.memref, _value_axes(op.indices), True))
    return found


def _rank(value: SSAValue) -> int:
    t = value.type
    return len(t.get_shape()) if isinstance(t, MemRefType) else 0


def _loop_text(loop: affine.ForOp) -> str:
    name = loop.attributes.get(LOOP_ATTR)
    return f"'{name.data}'" if isinstance(name, StringAttr) else "a loop"


@dataclass
class _KernelResult:
    labels: list[Labels]
    loops: dict[affine.ForOp, str]


def _analyze(
    fn: func.FuncOp, arg_labels: list[Labels], dims: dict[str, Dim]
) -> _KernelResult:
    """Label ``fn``'s loops and buffers from its arguments' labels; check it."""
    kernel = fn.sym_name.data
    labels: dict[SSAValue, Labels] = {
        arg: list(lab) for arg, lab in zip(fn.args, arg_labels, strict=True)
    }
    accesses = _accesses(fn)
    loops: dict[affine.ForOp, str] = {}

    def of(buffer: SSAValue) -> Labels:
        if buffer not in labels:
            labels[buffer] = [""] * _rank(buffer)
        return labels[buffer]

    copies = [op for op in fn.walk() if isinstance(op, memref.CopyOp)]
    changed = True
    while changed:
        changed = False
        for acc in accesses:
            lab = of(acc.buffer)
            for axis, index in enumerate(acc.axes):
                loop = index.loop
                if loop is None:
                    continue
                if lab[axis]:
                    if loop not in loops:
                        loops[loop] = lab[axis]
                        changed = True
                    elif loops[loop] != lab[axis]:
                        raise SymbolicDimError(
                            f"kernel @{kernel}: loop {_loop_text(loop)} runs over "
                            f"both '{loops[loop]}' and '{lab[axis]}'; two symbolic "
                            "dimensions of one loop must be one dimension"
                        )
                elif acc.store and loop in loops:
                    lab[axis] = loops[loop]
                    changed = True
        for copy in copies:
            src, dst = of(copy.source), of(copy.destination)
            for axis, name in enumerate(src):
                if name and not dst[axis]:
                    dst[axis] = name
                    changed = True
    _check(kernel, fn, accesses, labels, loops, dims)
    return _KernelResult([labels[arg] for arg in fn.args], loops)


def _check(
    kernel: str,
    fn: func.FuncOp,
    accesses: list[_Access],
    labels: dict[SSAValue, Labels],
    loops: dict[affine.ForOp, str],
    dims: dict[str, Dim],
) -> None:
    for acc in accesses:
        lab = labels.get(acc.buffer, [])
        name = acc.buffer.name_hint or "a buffer"
        for axis, index in enumerate(acc.axes):
            dim = lab[axis] if axis < len(lab) else ""
            where = (
                f"kernel @{kernel}: axis {axis} of %{name} is indexed by {index.text}"
            )
            symbolic_used = [lp for lp in index.loops if lp in loops]
            if index.loop is not None:
                continue
            if index.const is not None:
                if dim and index.const >= dims[dim].lo:
                    raise SymbolicDimError(
                        f"{where}: position {index.const} of '{dim}', which a call "
                        f"of size {dims[dim].lo} (the least declared) does not have "
                        "(a position counted from the end, such as x[-1], is one)"
                    )
                continue
            if index.data and not dim:
                continue  # a gather from a static axis (an embedding's rows)
            if symbolic_used:
                raise SymbolicDimError(
                    f"{where}, arithmetic on the loop "
                    f"{_loop_text(symbolic_used[0])} over '{loops[symbolic_used[0]]}' "
                    "(a shift, reversal, padding or merge of axes): the bounded "
                    "lowering runs such loops to the call's size and cannot follow "
                    "the index"
                )
            if dim:
                what = "data" if index.data else "an expression"
                raise SymbolicDimError(
                    f"{where}: {what} indexes the symbolic dimension '{dim}', whose "
                    "valid positions the kernel cannot check"
                )
    label = fn.attributes.get(KERNEL_ATTR)
    text = label.data if isinstance(label, StringAttr) else ""
    counting = [op for op in COUNTING_OPS if op in text.split("+")]
    for loop, dim in loops.items():
        extent = _extent(loop)
        capacity = dims[dim].capacity
        if extent != capacity:
            raise SymbolicDimError(
                f"kernel @{kernel}: loop {_loop_text(loop)} runs over '{dim}' but "
                f"{extent} times, not its capacity {capacity}"
            )
        if _reduces(loop) and counting:
            raise SymbolicDimError(
                f"kernel @{kernel}: {counting[0]} over the symbolic dimension "
                f"'{dim}' divides by its size, which is only known at run time "
                "(write the mean as a sum and a division by the size)"
            )


def _extent(loop: affine.ForOp) -> int | None:
    lb, ub = loop.lowerBoundMap.data, loop.upperBoundMap.data
    if lb.num_dims or lb.num_symbols or ub.num_dims or ub.num_symbols:
        return None
    if len(lb.results) != 1 or len(ub.results) != 1:
        return None
    lo, hi = lb.results[0], ub.results[0]
    if not isinstance(lo, AffineConstantExpr) or not isinstance(hi, AffineConstantExpr):
        return None
    if lo.value != 0 or loop.step.value.data != 1:
        return None
    return hi.value


def _reduces(loop: affine.ForOp) -> bool:
    """Whether ``loop`` carries values or writes one element in several iterations
    (a store whose index does not use its variable, to a buffer from outside)."""
    if loop.inits:
        return True
    var = loop.body.block.args[0]
    for op in loop.body.walk():
        if isinstance(op, memref.CopyOp):
            return True
        if not isinstance(op, affine.StoreOp | memref.StoreOp):
            continue
        buffer = op.memref
        owner = buffer.owner
        if isinstance(owner, Operation) and loop.is_ancestor(owner):
            continue  # a buffer local to one iteration
        indices = list(op.indices)
        if isinstance(op, affine.StoreOp) and op.map:
            amap = op.map.data
            used = set().union(*(e.used_dims() for e in amap.results))
            indices = [op.indices[k] for k in used]
        if not any(var is v or loop in _reached(v)[0] for v in indices):
            return True
    return False


def _view_labels(op: memref.ReinterpretCastOp, source: Labels) -> Labels:
    """The labels of a view: the axis with a labeled axis's size and stride."""
    src_t, res_t = op.source.type, op.result.type
    assert isinstance(src_t, MemRefType) and isinstance(res_t, MemRefType)
    src_shape, res_shape = src_t.get_shape(), res_t.get_shape()
    src_strides, res_strides = _strides(src_t), _strides(res_t)
    result = [""] * len(res_shape)
    for axis, name in enumerate(source):
        if not name:
            continue
        size, stride = src_shape[axis], src_strides[axis]
        match = [
            k
            for k in range(len(res_shape))
            if res_shape[k] == size and res_strides[k] == stride
        ]
        if len(match) != 1:
            what = (
                "covers part of it (a slice such as x[-1] or x[:k], or a merge "
                "with other axes)"
                if not match
                else "repeats it"
            )
            raise SymbolicDimError(
                f"a view of %{op.source.name_hint or 'a buffer'} as {res_t} "
                f"{what}: its axis {axis} is the symbolic dimension '{name}', whose "
                "positions a call's size decides, so every view keeps it whole"
            )
        result[match[0]] = name
    return result


def _strides(t: MemRefType) -> list[int]:
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        return [int(s) if s is not None else -1 for s in layout.get_strides()]
    return list(contiguous_strides(t.get_shape()))


def mark_symbolic_loops(module: ModuleOp) -> None:
    host = _host(module)
    if host is None:
        return
    dims = declared_dims(host)
    if not dims:
        return
    kernels = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    }
    args = list(host.body.block.args)
    n_in = host.attributes[NUM_INPUTS_ATTR]
    assert isinstance(n_in, IntegerAttr)
    inputs = dim_labels(host, DIM_LABELS_ATTR)
    labels: dict[SSAValue, Labels] = {}
    for arg in args:
        labels[arg] = [""] * _rank(arg)
    for arg, lab in zip(args[: n_in.value.data], inputs, strict=True):
        labels[arg] = list(lab)
    analyzed: dict[str, tuple[list[Labels], _KernelResult]] = {}
    for op in list(host.body.block.ops):
        if isinstance(op, memref.ReinterpretCastOp):
            labels[op.result] = _view_labels(op, labels.get(op.source, []))
        elif isinstance(op, memref.CopyOp):
            src = labels.get(op.source, [])
            labels[op.destination] = list(src)
        elif isinstance(op, func.CallOp) and op.callee.string_value() in kernels:
            name = op.callee.string_value()
            given = [labels.get(v) or [""] * _rank(v) for v in op.arguments]
            if name in analyzed and analyzed[name][0] != given:
                raise SymbolicDimError(
                    f"kernel @{name} is called on buffers with different symbolic "
                    "dimensions"
                )
            result = _analyze(kernels[name], given, dims)
            analyzed[name] = (given, result)
            for v, lab in zip(op.arguments, result.labels, strict=True):
                if any(lab):
                    labels[v] = lab
        elif isinstance(op, memref.AllocOp):
            labels[op.memref] = [""] * _rank(op.memref)
    outputs = args[n_in.value.data :]
    host.attributes[OUTPUT_DIM_LABELS_ATTR] = ArrayAttr(
        [ArrayAttr([StringAttr(a) for a in labels[v]]) for v in outputs]
    )
    for name, (_, result) in analyzed.items():
        _tag(result.loops)
        used = sorted(set(result.loops.values()))
        if used:
            kernels[name].attributes[SIZES_ATTR] = DictionaryAttr(
                {n: IntegerAttr(dims[n].capacity, i64) for n in used}
            )


def _host(module: ModuleOp) -> func.FuncOp | None:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    return None


def _tag(loops: dict[affine.ForOp, str]) -> None:
    for loop, name in loops.items():
        loop.attributes[SYMBOLIC_ATTR] = StringAttr(name)
        loop.attributes[TRIP_ATTR] = AffineMapAttr(
            AffineMap(0, 1, (AffineExpr.symbol(0),))
        )
        if _reduces(loop):
            loop.attributes[EXACT_ATTR] = UnitAttr()


@dataclass(frozen=True)
class MarkSymbolicLoops(ModulePass):
    """Tag the loops over symbolic dimensions and pass the sizes (module text)."""

    name = "mark-symbolic-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mark_symbolic_loops(op)
