"""Row-group kernels: a ``tg.fused`` of row-wise reductions and elementwise ops.

The ``fuse`` pass builds these from softmax, layer norm and the like written out of
tg ops. Every reduction in the group reduces the same trailing ``k`` axes of a
tensor of the same *full* shape ``F = O + R``: ``O`` are the outer (row) dimensions,
``R`` the row. Every value in the body is either *row-varying* (shape ``F``) or
*per-row*: one value per row, shaped ``O + [1] * k`` (keepdims) or ``O``.

One kernel: loops ``i0, i1, ...`` over ``O``, and in their body, per row:

1. for each reduction, in body order, one pass over the row (loops ``r_<kind>``,
   then ``r_<kind>2``, ... for a second one of the same kind; one loop per reduced
   dimension, suffixed ``_d0``, ``_d1``, ... when ``k > 1``) carrying the
   accumulator in ``iter_args``; the result is a scalar for the rest of the row
   (``reduce_mean`` divides it by the row length);
2. the per-row outputs are stored;
3. one last pass ``r_out`` computes and stores every row-varying output.

When a reduction's input holds a transcendental op (``exp(x - max)`` of a softmax)
and a row-varying output needs it again, its pass also stores it into that
output's buffer and later passes load it from there (the row is in L1) instead of
recomputing it; the output pass overwrites each element after reading it.
Per-row elementwise values (``sqrt(var + eps)``) are computed once per row, before
the first pass that needs them. A row-varying division by a per-row value
(``e / sum``, ``d / sqrt(var + eps)``) multiplies by the divisor's reciprocal,
computed once per row, as PyTorch's softmax and layer norm do: a vector multiply
instead of a vector divide per element, at most about 1 ulp from the division. Row-varying elementwise values are recomputed in
every pass that needs them (``x - max`` in the sum pass and in the output pass of a
softmax): cheap arithmetic on a row that is in cache, traded for the buffer and
the memory round trip. A reduction is never recomputed. Accumulations carry
``fastmath<reassoc,contract>`` (``REDUCTION_FASTMATH``), so each pass vectorizes.

Example (softmax from ops, ``x : 4096x1024``)::

    affine.for %i0 = 0 to 4096 {
      %max = affine.for %r_max = 0 to 1024 iter_args(%a = -inf) { maximumf %a, x }
      %sum = affine.for %r_sum = 0 to 1024 iter_args(%a = 0) { e = exp(x - %max);
                                                                out = e; addf %a, e }
      (the sum pass also stores e = exp(x - %max) into out)
      %rcp = 1 / %sum
      affine.for %r_out = 0 to 1024 { out = out * %rcp }
    }
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.passes.kernels.lowering.common import (
    NEG_INF,
    Kernel,
    Source,
    TgLoweringError,
    broadcast_index,
    const,
    dim,
    element_type,
    loop_names,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.elementwise import (
    ELEMENTWISE_OPS,
    PointwiseEvaluator,
)

_KIND: dict[type[Operation], str] = {
    tg.ReduceSumOp: "sum",
    tg.ReduceMeanOp: "mean",
    tg.ReduceMaxOp: "max",
}


def _error(message: str) -> TgLoweringError:
    return TgLoweringError(f"convert-tg-to-affine: tg.fused row group: {message}")


class _RowSpace:
    """The full shape ``F``, the number ``k`` of reduced trailing axes, and the
    classification of body values."""

    def __init__(self, reductions: list[tg.ReduceOp]) -> None:
        first = reductions[0]
        self.full = shape(first.input)
        rank = len(self.full)
        self.k = len(first.reduced_axes())
        trailing = tuple(range(rank - self.k, rank))
        for red in reductions:
            if shape(red.input) != self.full or red.reduced_axes() != trailing:
                raise _error(
                    f"'{red.name}' reduces axes {list(red.reduced_axes())} of a "
                    f"{list(shape(red.input))} tensor; every reduction must reduce "
                    f"the trailing axes {list(trailing)} of a {list(self.full)} tensor"
                )
        self.outer = self.full[: rank - self.k]
        self.row = self.full[rank - self.k :]
        self.per_row_shapes = (self.outer + (1,) * self.k, self.outer)

    def check(self, value: SSAValue) -> None:
        if shape(value) != self.full and shape(value) not in self.per_row_shapes:
            raise _error(
                f"a value of shape {list(shape(value))} is neither a row "
                f"{list(self.full)} nor one value per row "
                f"({' or '.join(str(list(s)) for s in self.per_row_shapes)})"
            )

    def per_row(self, value: SSAValue) -> bool:
        """For a value of the body (checked shape): one value per row."""
        return shape(value) != self.full

    def same_along_row(self, value: SSAValue) -> bool:
        """For any operand, broadcast to the full shape (NumPy's right alignment):
        true when it has size 1 (or no dimension) along every row axis."""
        s = shape(value)
        pad = len(self.full) - len(s)
        row_axes = range(len(self.full) - self.k, len(self.full))
        return all(d - pad < 0 or s[d - pad] == 1 for d in row_axes)

    def row_index(self, value: SSAValue) -> list[AffineExpr]:
        """The index of a per-row value inside the outer loops."""
        index = [dim(d) for d in range(len(self.outer))]
        if len(shape(value)) == len(self.full):
            index += [const(0)] * self.k
        return index


class _PassEvaluator(PointwiseEvaluator):
    """Inside a pass: a division by a per-row value multiplies by its reciprocal."""

    def __init__(self, row: _Row, ivs: list[SSAValue]) -> None:
        super().__init__(row.em, ivs, row.sources, row.pool, row.known)
        self.reciprocals = row.reciprocals

    def _compute(self, value: SSAValue, index: tuple[AffineExpr, ...]) -> SSAValue:
        op = value.owner
        if isinstance(op, tg.DivOp) and op.rhs in self.reciprocals:
            lhs = self.at(op.lhs, broadcast_index(index, shape(op.lhs)))
            return self.em.mulf(lhs, self.reciprocals[op.rhs])
        return super()._compute(value, index)


def _validate(group: tg.FusedOp, space: _RowSpace) -> None:
    block = group.body.block
    accepted: tuple[type[Operation], ...] = (
        tg.YieldOp,
        tg.ConstantOp,
        tg.ReduceOp,
        *ELEMENTWISE_OPS,
    )
    for op in block.ops:
        if not isinstance(op, accepted):
            raise _error(
                f"the body holds '{op.name}', but a row group takes only "
                "elementwise ops, reductions and constants"
            )
        if isinstance(op, tg.YieldOp | tg.ConstantOp):
            continue
        space.check(op.results[0])
        if isinstance(op, tg.ReduceOp):
            continue
        for operand in op.operands:
            inside = isinstance(operand.owner, Operation)
            if inside and len(shape(operand)) != len(shape(op.results[0])):
                raise _error(
                    f"'{op.name}' broadcasts a {list(shape(operand))} value of the "
                    f"group to {list(shape(op.results[0]))}; a per-row value meets a "
                    "row only through keepdims (same rank)"
                )


def lower_row_group(
    group: tg.FusedOp,
    k: Kernel,
    args: dict[SSAValue, Source],
    pool: ConstantPool,
) -> None:
    block = group.body.block
    reductions = [op for op in block.ops if isinstance(op, tg.ReduceOp)]
    space = _RowSpace(reductions)
    _validate(group, space)
    terminator = block.last_op
    assert isinstance(terminator, tg.YieldOp)
    outputs = list(terminator.values)
    stash = _stash_plan(reductions, outputs, k.outputs, space, args)
    with k.em.nest(loop_names("i", len(space.outer)), space.outer) as outer:
        row = _Row(k, space, args, pool, outer)
        for red in reductions:
            row.reduce(red, stash.get(red))
        row.store(outputs)


_TRANSCENDENTAL = (
    tg.ExpOp,
    tg.LogOp,
    tg.TanhOp,
    tg.ErfOp,
    tg.SinOp,
    tg.CosOp,
    tg.SigmoidOp,
    tg.SqrtOp,
)


def _stash_plan(
    reductions: list[tg.ReduceOp],
    outputs: list[SSAValue],
    buffers: list[SSAValue],
    space: _RowSpace,
    args: dict[SSAValue, Source],
) -> dict[tg.ReduceOp, tuple[SSAValue, SSAValue]]:
    """Per reduction, a value its pass stores and the buffer it goes to, so that
    later passes load it instead of recomputing it:

    - a row-varying output that holds a transcendental op and that the reduction
      reads (GELU's output, whose range a dynamic quantization reduces, twice):
      stored into its own buffer, finished, and the output pass skips it;
    - else the reduction's row-varying input when it holds a transcendental op
      (``exp(x - max)`` of a softmax) and a row-varying output needs it again:
      stored into that output's buffer (free until the output pass overwrites
      it, element by element, after reading it).

    Each output buffer holds at most one such value."""
    plan: dict[tg.ReduceOp, tuple[SSAValue, SSAValue]] = {}
    free = [
        (value, buffer)
        for value, buffer in zip(outputs, buffers, strict=True)
        if value not in args and not space.per_row(value)
    ]
    finished: set[SSAValue] = set()
    for red in reductions:
        value = red.input
        if value in args:
            continue
        tree = _row_varying_tree(value, space, args)
        own = next(
            (
                (output, buffer)
                for output, buffer in free
                if output in tree and _reaches_op(output, _TRANSCENDENTAL, space, args)
            ),
            None,
        )
        if own is not None:
            plan[red] = own
            free.remove(own)
            finished.add(own[0])
            continue
        if any(v in finished for v in tree) or not _reaches_op(
            value, _TRANSCENDENTAL, space, args
        ):
            continue
        for output, buffer in free:
            if output is not value and value in _row_varying_tree(output, space, args):
                plan[red] = (value, buffer)
                free.remove((output, buffer))
                break
    return plan


def _row_varying_tree(
    value: SSAValue, space: _RowSpace, args: dict[SSAValue, Source]
) -> set[SSAValue]:
    """The row-varying body values computing ``value`` reads (itself included)."""
    found: set[SSAValue] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v in found or v in args or space.per_row(v):
            continue
        found.add(v)
        op = v.owner
        if isinstance(op, Operation) and not isinstance(op, tg.ReduceOp):
            stack.extend(op.operands)
    return found


def _reaches_op(
    value: SSAValue,
    kinds: tuple[type[Operation], ...],
    space: _RowSpace,
    args: dict[SSAValue, Source],
) -> bool:
    return any(
        isinstance(v.owner, kinds) for v in _row_varying_tree(value, space, args)
    )


class _Row:
    """The body of the outer loops: one row's passes."""

    def __init__(
        self,
        k: Kernel,
        space: _RowSpace,
        args: dict[SSAValue, Source],
        pool: ConstantPool,
        outer: list[SSAValue],
    ) -> None:
        self.k = k
        self.em = k.em
        self.space = space
        self.args = args
        self.sources: dict[SSAValue, Source] = dict(args)
        self.pool = pool
        self.outer = outer
        self.known: dict[SSAValue, SSAValue] = {}
        self.row_ev = PointwiseEvaluator(self.em, outer, args, pool, self.known)
        self.full_index = [dim(d) for d in range(len(space.full))]
        self.used_names: dict[str, int] = {}
        self.reciprocals: dict[SSAValue, SSAValue] = {}

    def names(self, base: str) -> list[str]:
        """``r_sum``, then ``r_sum2``, ...; one loop per reduced dimension."""
        self.used_names[base] = self.used_names.get(base, 0) + 1
        count = self.used_names[base]
        stem = base if count == 1 else f"{base}{count}"
        return [stem] if self.space.k == 1 else loop_names(f"{stem}_d", self.space.k)

    def evaluator(self, ivs: list[SSAValue]) -> PointwiseEvaluator:
        """An evaluator inside a pass: per-row values come from ``known``."""
        return _PassEvaluator(self, ivs)

    def prepare(self, values: list[SSAValue]) -> None:
        """Compute, once in the row body, the per-row values and the reciprocals of
        per-row divisors that computing ``values`` in a pass needs."""
        leaves, divisors = _per_row_leaves(values, self.space, self.known, self.args)
        for value in leaves:
            self.known[value] = self.row_ev.at(value, self.space.row_index(value))
        full_row = [
            *(dim(d) for d in range(len(self.space.outer))),
            *[const(0)] * self.space.k,
        ]
        for divisor in divisors:
            if divisor in self.reciprocals:
                continue
            d = self.row_ev.at(divisor, broadcast_index(full_row, shape(divisor)))
            one = self.em.constant(1.0, element_type(divisor))
            self.reciprocals[divisor] = self.em.divf(one, d)

    def reduce(self, red: tg.ReduceOp, stash: tuple[SSAValue, SSAValue] | None) -> None:
        """One pass over the row; the result joins ``known``. With ``stash`` (a
        value and an output buffer), the pass also stores the value there for
        later passes (``_stash_plan``)."""
        em = self.em
        self.prepare([red.input])
        is_max = isinstance(red, tg.ReduceMaxOp)
        t = element_type(red.result)
        init = em.constant(NEG_INF if is_max else 0.0, t)

        def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            ev = self.evaluator(ivs)
            if stash is not None:
                value, buffer = stash
                em.store(ev.at(value, self.full_index), buffer, ivs, self.full_index)
            x = ev.at(red.input, self.full_index)
            return [em.max_step(accs[0], x) if is_max else em.sum_step(accs[0], x)]

        names = self.names(f"r_{_KIND[type(red)]}")
        (total,) = em.accumulate(names, self.space.row, [init], step, self.outer)
        if isinstance(red, tg.ReduceMeanOp):
            count = 1
            for size in self.space.row:
                count *= size
            total = em.divf(total, em.constant(float(count), t))
        self.known[red.result] = total
        if stash is not None:
            self.sources[stash[0]] = stash[1]

    def store(self, values: list[SSAValue]) -> None:
        """Per-row outputs now; row-varying ones in one last pass ``r_out``."""
        em = self.em
        rows: list[tuple[SSAValue, SSAValue]] = []
        for value, out in zip(values, self.k.outputs, strict=True):
            if self.sources.get(value) is out:  # stored by a reduction's pass
                continue
            if self.space.per_row(value):
                self.prepare([value])
                index = self.space.row_index(value)
                em.store(self.row_ev.at(value, index), out, self.outer, index)
            else:
                rows.append((value, out))
        if not rows:
            return
        self.prepare([value for value, _ in rows])
        with em.nest(self.names("r_out"), self.space.row) as inner:
            ivs = [*self.outer, *inner]
            ev = self.evaluator(ivs)
            for value, out in rows:
                em.store(ev.at(value, self.full_index), out, ivs, self.full_index)


def _per_row_leaves(
    values: list[SSAValue],
    space: _RowSpace,
    known: dict[SSAValue, SSAValue],
    args: dict[SSAValue, Source],
) -> tuple[list[SSAValue], list[SSAValue]]:
    """The per-row values computed in the body, not yet known, that computing
    ``values`` in a pass reaches first (in the order first reached), and the per-row
    divisors of row-varying divisions on the way."""
    found: list[SSAValue] = []
    divisors: list[SSAValue] = []
    seen: set[SSAValue] = set()
    stack = list(reversed(values))
    while stack:
        value = stack.pop()
        if value in seen or value in known or value in args:
            continue
        seen.add(value)
        op = value.owner
        assert isinstance(op, Operation)
        if space.per_row(value) and not isinstance(op, tg.ConstantOp):
            if isinstance(op, tg.ReduceOp):
                raise _error(f"'{op.name}' is used before it is computed")
            found.append(value)
            continue
        if isinstance(op, tg.DivOp) and space.same_along_row(op.rhs):
            divisors.append(op.rhs)
        stack.extend(reversed(op.operands))
    return found, divisors
