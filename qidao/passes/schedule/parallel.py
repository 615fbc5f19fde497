"""``parallel``: mark one loop of a kernel as parallel, after proving its iterations
independent.

    affine.for %i ... { body } {qd.loop = "i"}
        ==>  affine.for %i ... { body } {qd.loop = "i", qd.parallel}

Options: ``kernel`` (the kernel's function name) and ``loop`` (its ``qd.loop`` name),
e.g. ``parallel{kernel="main_k0_fused" loop="i0"}``. The mark is all this pass does;
``convert-parallel-to-gomp`` (after ``lower-affine``) outlines the marked loop and runs
its iterations on libgomp's worker threads.

Legality: the loop's iterations may run in any order and at the same time when no
iteration touches an element that another iteration writes. The pass proves that
per buffer written in the loop (a buffer allocated inside the loop is private to an
iteration and needs nothing):

1. The loop has no ``iter_args`` (a value carried from one iteration to the next is
   a reduction), contains no parallel loop and is not inside one.
2. Every op in the loop is understood: pure ops, loops, ``affine.if``/``apply``/
   ``min``, ``affine``/``memref`` loads and stores, allocations and views. A call or
   any other op with effects makes the loop illegal.
3. For every written buffer, some index dimension ``d`` reads, in *every* access of
   that buffer in the loop (stores and loads alike), ``a * iv + P + o`` with the same
   coefficient ``a != 0`` and the same loop-invariant part ``P`` (values defined
   outside the loop), while the rest ``o`` stays within a window narrower than
   ``|a| * step``. Then iteration ``iv`` only touches dimension-``d`` indices in
   ``[a * iv + P + lo, a * iv + P + hi]``, and the windows of different iterations
   are disjoint. ``o`` gathers constants and inner loop counters, bounded by their
   loops' bounds (``affine.for %j = 0 to min(4, ...)`` gives ``0 <= j <= 3``, and
   ``%j = %t to %t + 4`` gives ``j = t + [0, 3]``), and ``x mod c`` (in ``[0, c)``).
   So ``out[i, j]``, ``out[4 * i_o + i_i]`` (after ``split``) and ``out[2 * i + 1]``
   pass; ``out[j]`` (no ``i``), ``out[i + j]`` with ``j`` unbounded by the step, or
   a write ``out[i]`` next to a read ``out[i + 1]`` do not.
4. A buffer is a kernel argument, an allocation or a global, whatever views of it
   an access goes through. A written buffer's layout must map different indices to
   different addresses (no stride 0, no overlapping strides). Accesses of one
   buffer through views of another type, or through another kernel argument that
   may alias it (one without ``llvm.noalias``, as ``plan-memory`` leaves in-place
   kernels) and has another type, are refused; may-alias arguments of the same
   type are taken as one buffer.

A request that fails raises ``IllegalScheduleError`` naming the kernel, the loop and
the written buffer; an unknown kernel or loop raises ``KernelNotFoundError`` /
``LoopNotFoundError`` (``qidao.passes.schedule.loops.nest``).

When it pays: a parallel loop costs one ``GOMP_parallel`` call each time it starts
(see ``convert-parallel-to-gomp`` for the numbers: under 1 µs more than a serial
call on two warm threads here, but up to ~8 ms after the process idles, under
libgomp's default wait policy). Parallelize the outer loop of a kernel with a lot
of work per start, not an inner loop: marking the ``f`` loop of a convolution is
legal, but it starts a parallel region per output pixel, tap and input channel.

Before (``parallel{kernel="k" loop="i"}``):
```mlir
func.func @k(%x: memref<64x32xf32>, %y: memref<64x32xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %v = affine.load %x[%i, %j] : memref<64x32xf32>
      affine.store %v, %y[%i, %j] : memref<64x32xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}
```
After:
```mlir
  affine.for %i = 0 to 64 {
    ...
  } {qd.loop = "i", qd.parallel}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, func, memref, scf, vector
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue
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
from xdsl.traits import is_side_effect_free

from qidao.dialects.attributes import PARALLEL_ATTR
from qidao.dialects.cache import PrefetchOp
from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.nest import (
    MEMREF_VIEWS,
    find_loop,
    iv,
    loop_name,
    root_buffer,
    step_of,
)

_ALLOCS = (memref.AllocOp, memref.AllocaOp)
_STRUCTURE = (
    affine.ForOp,
    affine.IfOp,
    affine.YieldOp,
    affine.ApplyOp,
    affine.MinOp,
    scf.YieldOp,
)
_MAY_ALIAS = "kernel arguments without llvm.noalias"


# --- index expressions as a * iv + P + [lo, hi] -----------------------------------


@dataclass(frozen=True)
class _Index:
    """An index value ``a * iv + sum(c_v * v) + o`` with ``lo <= o <= hi``: ``iv`` is
    the parallel loop's counter, each ``v`` a value defined outside the loop."""

    a: int
    invariant: frozenset[tuple[SSAValue, int]]
    lo: int
    hi: int

    @staticmethod
    def const(value: int) -> _Index:
        return _Index(0, frozenset(), value, value)

    def plus(self, other: _Index) -> _Index:
        coeffs = dict(self.invariant)
        for value, c in other.invariant:
            coeffs[value] = coeffs.get(value, 0) + c
        return _Index(
            self.a + other.a,
            frozenset((v, c) for v, c in coeffs.items() if c != 0),
            self.lo + other.lo,
            self.hi + other.hi,
        )

    def times(self, k: int) -> _Index:
        lo, hi = sorted((self.lo * k, self.hi * k))
        return _Index(
            self.a * k,
            frozenset((v, c * k) for v, c in self.invariant if c * k != 0),
            lo,
            hi,
        )

    @property
    def bounded(self) -> bool:
        """True when the value is just the window (no iv, no invariant part)."""
        return self.a == 0 and not self.invariant


@dataclass
class _IndexAnalysis:
    """Index values inside one loop, as ``_Index`` (None: unknown)."""

    loop: affine.ForOp
    root: Operation | None = None
    """Values defined inside ``root`` (default: the loop) vary within the analysis:
    loop counters in it become windows; values outside it are invariant."""
    fixed: frozenset[SSAValue] = frozenset()
    """Values taken as invariant even when defined inside ``root``."""
    memo: dict[SSAValue, _Index | None] = field(
        default_factory=dict[SSAValue, "_Index | None"]
    )

    def inside(self, op: Operation) -> bool:
        return (self.root or self.loop).is_ancestor(op)

    def value(self, value: SSAValue) -> _Index | None:
        if value not in self.memo:
            self.memo[value] = None  # guards against cycles
            self.memo[value] = self._value(value)
        return self.memo[value]

    def _value(self, value: SSAValue) -> _Index | None:
        if value is iv(self.loop):
            return _Index(1, frozenset(), 0, 0)
        if value in self.fixed:
            return _Index(0, frozenset({(value, 1)}), 0, 0)
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return _Index.const(owner.value.value.data)
        defining_op = owner.parent_op() if isinstance(value, BlockArgument) else owner
        if not isinstance(defining_op, Operation) or not self.inside(defining_op):
            return _Index(0, frozenset({(value, 1)}), 0, 0)
        if isinstance(value, BlockArgument):
            if isinstance(defining_op, affine.ForOp) and value.index == 0:
                return self._counter(defining_op)
            return None
        assert isinstance(value, OpResult)
        if isinstance(owner, affine.ApplyOp):
            return self.map_result(owner.map.data, list(owner.mapOperands), 0)
        return None

    def _counter(self, loop: affine.ForOp) -> _Index | None:
        """An inner loop's counter ``j`` in ``[lb, ub)``: ``lb + [0, ub - lb - 1]``
        for a lower bound ``lb`` and an upper bound ``ub`` (any results of their
        max/min maps) whose difference is bounded."""
        lbs = loop.lowerBoundMap.data
        ubs = loop.upperBoundMap.data
        best: _Index | None = None
        for k in range(len(lbs.results)):
            lower = self.map_result(lbs, list(loop.lowerBoundOperands), k)
            if lower is None:
                continue
            for m in range(len(ubs.results)):
                upper = self.map_result(ubs, list(loop.upperBoundOperands), m)
                if upper is None:
                    continue
                width = upper.plus(lower.times(-1))
                if not width.bounded:
                    continue
                extent = max(width.hi - 1, 0)
                counter = _Index(lower.a, lower.invariant, lower.lo, lower.hi + extent)
                if best is None or counter.hi - counter.lo < best.hi - best.lo:
                    best = counter
        return best

    def map_result(
        self, affine_map: AffineMap, operands: Sequence[SSAValue], k: int
    ) -> _Index | None:
        dims = operands[: affine_map.num_dims]
        syms = operands[affine_map.num_dims :]
        return self.expr(affine_map.results[k], dims, syms)

    def expr(
        self, expr: AffineExpr, dims: Sequence[SSAValue], syms: Sequence[SSAValue]
    ) -> _Index | None:
        if isinstance(expr, AffineConstantExpr):
            return _Index.const(expr.value)
        if isinstance(expr, AffineDimExpr):
            return self.value(dims[expr.position])
        if isinstance(expr, AffineSymExpr):
            return self.value(syms[expr.position])
        assert isinstance(expr, AffineBinaryOpExpr)
        lhs = self.expr(expr.lhs, dims, syms)
        rhs = self.expr(expr.rhs, dims, syms)
        constant = (
            rhs.lo if rhs is not None and rhs.bounded and rhs.lo == rhs.hi else None
        )
        match expr.kind:
            case AffineBinaryOpKind.Add:
                return None if lhs is None or rhs is None else lhs.plus(rhs)
            case AffineBinaryOpKind.Mul:
                if lhs is not None and constant is not None:
                    return lhs.times(constant)
                if (
                    rhs is not None
                    and lhs is not None
                    and lhs.bounded
                    and lhs.lo == lhs.hi
                ):
                    return rhs.times(lhs.lo)
                return None
            case AffineBinaryOpKind.Mod:
                if constant is not None and constant > 0:
                    return _Index(0, frozenset(), 0, constant - 1)
                return None
            case AffineBinaryOpKind.FloorDiv | AffineBinaryOpKind.CeilDiv:
                if lhs is None or not lhs.bounded or constant is None or constant <= 0:
                    return None
                if expr.kind == AffineBinaryOpKind.FloorDiv:
                    return _Index(
                        0, frozenset(), lhs.lo // constant, lhs.hi // constant
                    )
                return _Index(
                    0, frozenset(), -(-lhs.lo // constant), -(-lhs.hi // constant)
                )
        return None


# --- the accesses of the loop --------------------------------------------------------


@dataclass
class _Access:
    op: Operation
    memref: SSAValue
    indices: list[_Index | None]
    writes: bool


def _is_noalias_argument(value: SSAValue, kernel: func.FuncOp) -> bool:
    if not isinstance(value, BlockArgument) or value.owner is not kernel.body.block:
        return False
    attrs = kernel.arg_attrs
    if attrs is None:
        return False
    entry = attrs.data[value.index]
    return isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data


def _injective_layout(t: MemRefType[Attribute]) -> bool:
    """True when different in-bounds indices of ``t`` give different addresses."""
    strides = t.get_strides()
    if strides is None or any(s is None for s in strides):
        return False
    dims = sorted(
        (abs(s), n)
        for s, n in zip(strides, t.get_shape(), strict=True)
        if s is not None and n != 1
    )
    reach = 1
    for stride, size in dims:
        if stride < reach:
            return False
        reach = stride * size
    return True


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "%<unnamed>"


class _Checker:
    """Proves one loop parallel, or raises IllegalScheduleError."""

    def __init__(
        self,
        kernel_fn: func.FuncOp,
        loop: affine.ForOp,
        kernel: str,
        primitive: str = "parallel",
        root: Operation | None = None,
        fixed: frozenset[SSAValue] = frozenset(),
        carried: bool = False,
    ) -> None:
        self.fn = kernel_fn
        self.carried = carried
        self.loop = loop
        self.kernel = kernel
        self.primitive = primitive
        self.loop_name = str(loop_name(loop))
        self.index = _IndexAnalysis(loop, root, fixed)

    def fail(self, reason: str) -> IllegalScheduleError:
        return IllegalScheduleError(self.primitive, self.kernel, self.loop_name, reason)

    def check(self) -> None:
        if self.loop.inits and not self.carried:
            raise self.fail(
                "it carries values from one iteration to the next (iter_args: a "
                "reduction); its iterations cannot run at the same time"
            )
        parent = self.loop.parent_op()
        while parent is not None:
            if PARALLEL_ATTR in parent.attributes:
                raise self.fail(
                    f"it is inside the parallel loop '{loop_name(parent)}' "
                    "(nested parallel loops are not supported)"
                )
            parent = parent.parent_op()
        accesses = self.accesses()
        groups: dict[SSAValue | str, list[_Access]] = {}
        for access in accesses:
            groups.setdefault(self.buffer_of(access.memref), []).append(access)
        for group in groups.values():
            if any(a.writes for a in group):
                self.check_buffer(group)

    def buffer_of(self, value: SSAValue) -> SSAValue | str:
        """The key that groups accesses of one buffer: its root, where arguments
        that may alias each other (no ``llvm.noalias``) share one key."""
        root = root_buffer(value)
        in_kernel = isinstance(root, BlockArgument) and root.owner is self.fn.body.block
        if in_kernel and not _is_noalias_argument(root, self.fn):
            return _MAY_ALIAS
        if isinstance(root, OpResult) and isinstance(root.owner, memref.GetGlobalOp):
            return f"@{root.owner.name_.root_reference.data}"  # one key per global
        return root

    def accesses(self) -> list[_Access]:
        found: list[_Access] = []
        for op in self.loop.body.walk():
            if isinstance(op, affine.ForOp) and PARALLEL_ATTR in op.attributes:
                raise self.fail(
                    f"it contains the parallel loop '{loop_name(op)}' "
                    "(nested parallel loops are not supported)"
                )
            if isinstance(op, affine.LoadOp | affine.StoreOp):
                affine_map = op.map.data
                operands = list(op.indices)
                indices = [
                    self.index.map_result(affine_map, operands, k)
                    for k in range(len(affine_map.results))
                ]
                found.append(
                    _Access(op, op.memref, indices, isinstance(op, affine.StoreOp))
                )
            elif isinstance(op, memref.LoadOp | memref.StoreOp):
                indices = [self.index.value(v) for v in op.indices]
                found.append(
                    _Access(op, op.memref, indices, isinstance(op, memref.StoreOp))
                )
            elif isinstance(op, vector.LoadOp | vector.StoreOp):
                # A vector access covers W consecutive elements of the last
                # dimension: widen that index's range by W - 1.
                indices = [self.index.value(v) for v in op.indices]
                vector_type = (
                    op.result if isinstance(op, vector.LoadOp) else op.vector
                ).type
                assert isinstance(vector_type, VectorType)
                last = indices[-1] if indices else None
                if last is not None:
                    width = vector_type.get_shape()[-1]
                    indices[-1] = replace(last, hi=last.hi + width - 1)
                found.append(
                    _Access(op, op.base, indices, isinstance(op, vector.StoreOp))
                )
            elif not self.understood(op):
                raise self.fail(
                    f"it contains '{op.name}', whose effects on memory the parallel "
                    "check does not know"
                )
        return [a for a in found if not self.private(a.memref)]

    def understood(self, op: Operation) -> bool:
        if isinstance(op, _STRUCTURE + _ALLOCS + MEMREF_VIEWS + (PrefetchOp,)):
            return True  # a prefetch reads and writes nothing the program sees
        if isinstance(op, memref.DeallocOp):
            return self.private(op.memref)
        return is_side_effect_free(op) and not op.regions

    def private(self, value: SSAValue) -> bool:
        """True for a buffer allocated inside the loop (one per iteration)."""
        root = root_buffer(value)
        return (
            isinstance(root, OpResult)
            and isinstance(root.owner, _ALLOCS)
            and self.loop.is_ancestor(root.owner)
        )

    def check_buffer(self, group: list[_Access]) -> None:
        written = next(a for a in group if a.writes).memref
        name = _name(written)
        t = written.type
        assert isinstance(t, MemRefType)
        for access in group:
            if access.memref.type != t:
                raise self.fail(
                    f"{name} is written, and {_name(access.memref)} may be the same "
                    f"buffer with another type ({access.memref.type} vs {t}); the "
                    "check cannot compare their indices"
                )
        if not _injective_layout(t):
            raise self.fail(
                f"{name} is written, and its layout {t} maps different indices to "
                "the same element"
            )
        for d in range(t.get_num_dims()):
            if self.separates(group, d):
                return
        writes = ", ".join(
            f"{_name(a.memref)}[{self.render(a)}]" for a in group if a.writes
        )
        if all(
            all(i is not None and i.a == 0 for i in a.indices)
            for a in group
            if a.writes
        ):
            raise self.fail(
                f"every iteration writes {writes}: the indices do not depend on "
                f"'{self.loop_name}', so iterations write the same elements of {name}"
            )
        raise self.fail(
            f"iterations may touch the same element of the written buffer {name}: "
            f"no index dimension reads `a * {self.loop_name} + c` with the same a "
            f"and c in every access of {name} in the loop (writes: {writes})"
        )

    def separates(self, group: list[_Access], d: int) -> bool:
        """True when dimension ``d`` puts different iterations in disjoint windows."""
        first = group[0].indices[d]
        if first is None or first.a == 0:
            return False
        lo, hi = first.lo, first.hi
        for access in group:
            index = access.indices[d]
            if index is None or index.a != first.a:
                return False
            if index.invariant != first.invariant:
                return False
            lo, hi = min(lo, index.lo), max(hi, index.hi)
        return hi - lo < abs(first.a) * step_of(self.loop)

    def render(self, access: _Access) -> str:
        op = access.op
        if isinstance(op, affine.StoreOp | affine.LoadOp):
            names = [_name(v) for v in op.indices]
            return ", ".join(
                _format(r, names, op.map.data.num_dims) for r in op.map.data.results
            )
        assert isinstance(
            op, memref.StoreOp | memref.LoadOp | vector.LoadOp | vector.StoreOp
        )
        return ", ".join(_name(v) for v in op.indices)


def _format(expr: AffineExpr, names: Sequence[str], num_dims: int) -> str:
    """``expr`` with its dimensions and symbols spelled as the values' names."""
    if isinstance(expr, AffineDimExpr):
        return names[expr.position]
    if isinstance(expr, AffineSymExpr):
        return names[num_dims + expr.position]
    if isinstance(expr, AffineBinaryOpExpr):
        op = {
            AffineBinaryOpKind.Add: "+",
            AffineBinaryOpKind.Mul: "*",
            AffineBinaryOpKind.Mod: "mod",
            AffineBinaryOpKind.FloorDiv: "floordiv",
            AffineBinaryOpKind.CeilDiv: "ceildiv",
        }[expr.kind]
        lhs = _format(expr.lhs, names, num_dims)
        rhs = _format(expr.rhs, names, num_dims)
        return f"{lhs} {op} {rhs}"
    return str(expr)


def check_parallel(
    kernel_fn: func.FuncOp,
    loop: affine.ForOp,
    kernel: str,
    primitive: str = "parallel",
    root: Operation | None = None,
    fixed: frozenset[SSAValue] = frozenset(),
    carried: bool = False,
) -> None:
    """Prove that no two iterations of ``loop`` touch an element that one of them
    writes (rules 1-4 above), or raise ``IllegalScheduleError`` from ``primitive``.

    ``root`` (an op around ``loop``; default the loop itself) widens the proof to
    every iteration of the loops between ``root`` and ``loop``: their counters
    count as windows, not as invariants, so the iterations of ``loop`` are
    disjoint whatever those loops' iterations are (``bind`` uses it for a GPU
    axis inside a serial loop, whose iterations no barrier separates). Values in
    ``fixed`` stay invariant (the counters of enclosing bound loops). With
    ``carried``, ``iter_args`` are the caller's to combine (``block_stride``'s
    reductions across a block): only memory is checked."""
    _Checker(kernel_fn, loop, kernel, primitive, root, fixed, carried).check()


def parallelize(
    module: ModuleOp, kernel: str, loop: str, primitive: str = "parallel"
) -> None:
    """Check ``loop`` of ``kernel`` and mark it ``qd.parallel``."""
    fn, target = find_loop(module, primitive, kernel, loop)
    check_parallel(fn, target, kernel, primitive)
    target.attributes[PARALLEL_ATTR] = UnitAttr()


@dataclass(frozen=True)
class ParallelPass(ModulePass):
    """Mark a loop whose iterations are independent as ``qd.parallel``."""

    name = "parallel"

    kernel: str = ""
    loop: str = ""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        parallelize(op, self.kernel, self.loop)


__all__ = ["ParallelPass", "check_parallel", "parallelize"]
