"""``fuse``: producer→consumer chains become one ``tg.fused`` kernel.

    mul(x, w) -> add(_, b) -> relu(_)          ==>   tg.fused { mul; add; relu }
    relu(matmul(x, w) + b)                     ==>   tg.fused { matmul; add; relu }
    e = exp(x - reduce_max(x)); e / reduce_sum(e)  ==>   tg.fused { 5 ops }

The principle: **a fusion group never recomputes expensive work silently.** Fusing
removes a kernel launch and a round trip of the intermediate through memory; it
must not buy that with a matmul, a convolution tap or a reduction done twice. The
only recomputation allowed is cheap elementwise arithmetic along one row of a row
group (rule 1), and it is documented there. Groups form in this order; an op joins
at most one group, and a group of one op stays as it is. What an op is to these
rules its class declares (``FUSION``: ``reduction`` for rule 1's seeds, ``anchor``
for rule 2's, ``elementwise`` for the ops that join, ``boundary`` for the rest);
the rules add what depends on its operands, type and uses.

1. **Row groups** (softmax, layer norm written out of tg ops). A seed is a
   ``tg.reduce_sum``/``reduce_mean``/``reduce_max`` that reduces the *trailing*
   ``k`` axes of its input, of shape ``F = O + R`` (``O`` the outer, row,
   dimensions, ``R`` the row). A reduction over any other axes (``axes = [0]`` of a
   matrix) seeds nothing. The group grows along producer→consumer edges, in both
   directions, by:
   - reductions of the same ``F`` over the same trailing axes;
   - elementwise ops whose result is *row-varying* (shape ``F``) or *per-row*
     (``O + [1] * k``, keepdims, or ``O``), of the reduced input's element type
     (a comparison or a cast to another type stays outside: the row kernel keeps
     values in the output's buffer), and whose operands inside the group
     have the op's rank: a per-row value meets a row only through keepdims
     broadcasting, never by NumPy's right-aligned broadcasting.
   Operands from outside (``gamma`` of shape ``R``, ``eps``) are read broadcast.
   One kernel loops over ``O``; per row, each reduction is one pass over the row
   carrying a scalar, computed once; per-row elementwise values are computed once
   per row; row-varying elementwise values are *recomputed in every pass that needs
   them* (``x - mean`` feeds the variance pass and the output pass of a layer
   norm): cheap arithmetic on a row that is in cache, instead of a buffer written
   and read back. (A value holding ``exp``/``log``/``tanh``/``sigmoid``/``sqrt``
   that a reduction consumes and an output needs again, the ``exp(x - max)`` of a
   softmax, is kept in the output's buffer for the row instead: see
   ``lowering/rows.py``.)
   A value also used outside the group (an intermediate that is a graph output)
   does not split the group: it becomes a further result of the same ``tg.fused``,
   stored by the kernel in the pass that computes it (decided so because a split
   would compute the intermediate once into memory and read it back in every pass,
   while the extra result costs one store per element).
2. **Matmul and conv2d groups.**
   - *Epilogue*: the elementwise ops computed from the ``tg.matmul``/``tg.conv2d``
     result join, as long as each has the result's shape and element type (their
     other operands, graph values or constants, are read broadcast to that shape)
     and the group keeps **one** value used outside it, of that element type. A
     comparison joins too when its every use is a select's condition (``Clip``'s
     ``where(y >= lo, y, max(y, lo))``, ReLU6): its mask lives in registers. A ``tg.matmul_integer``'s
     epilogue may change the element type (int32 sums requantized to int8): its
     kernel sums in an int32 buffer of its own and the epilogue writes the
     output (``sink-reshape`` first moves an int8 convolution's reshape to NHWC
     below its requantization, so that the two meet in the product's shape).
     A ``tg.matmul_bf16`` sums in a float32 buffer of its own the same way, so
     its epilogue may end in the cast back to bfloat16 (always: its kernel needs
     no option).
     An int8 product's elementwise side inputs join too (a residual's dequantization, used
     only there). Only with the option ``integer_epilogues`` (the pipeline's
     ``vnni``: the CPU's int8 schedules keep that buffer per tile). The epilogue may be a DAG:
     GELU, ``h * 0.5 * (1 + erf(h / sqrt 2))``, uses ``h`` twice and joins whole.
     When the grown group would have two values used outside (an intermediate
     that is also a graph output, a ``h`` that another matmul reads too), it falls
     back to the chain: ops join while the current value has exactly one use, and
     a matmul/conv result with two uses has no epilogue. Each output element runs
     the epilogue once, right after its sum is complete (matmul: in a nest over
     the finished tile; conv2d: before its store).
   - **No prologues.** An elementwise producer of a matmul lhs, or of any
     conv2d/matmul operand, stays a kernel of its own. Fused into the lhs it would
     be computed once per ``(i, k)`` in the naive ``i, k, j`` loops, but once per
     ``(i, k)`` *and column tile* under the default schedule (the tile loop ``j_o``
     runs outermost), and the group would no longer be a plain matmul for the
     default schedule: measured on the encoder's second MLP matmul (64×512 ·
     512×128 after GELU), the fused prologue took 400 µs, the matmul and a GELU
     kernel 46 + 21 µs. (A hand-written ``tg.fused`` with an lhs prologue still
     lowers; fuse just never makes one.) Into the rhs a prologue would run once
     per lhs row; into a conv2d input or weight, up to KH·KW·F times per element.
3. **Elementwise chains** (``tg.add`` ... ``tg.relu``, comparisons, logical ops,
   ``tg.select``, ``tg.cast``: any element types, the values live in registers);
   everything else is a fusion boundary (``FUSION = "boundary"``, the default).
   - A producer joins its consumer's group only when the consumer is its *only*
     user, so no intermediate is both kept in memory and recomputed; or when its
     users, two or more, all belong to one group (grown consumers first) that
     stays convex: the kernel computes the value once and reads it in each
     (GELU's ``x * 0.5 * (1 + erf(x / sqrt 2))`` of a normalized ``x``: wav2vec2's
     first group norm and GELU were two kernels, the normalized activations
     written and read back in between).
   - A producer joins only when its shape equals the consumer's result shape:
     fusing ``exp(a[4])`` into ``_ + b[1000, 4]`` would evaluate ``exp`` 1000 times
     per element, so a broadcast intermediate stays its own kernel.

Every group is *convex*: no path leaves it and comes back (the kernel would need
its own result as an input); an op that would break this does not join.

Convexity is checked on the block's producer→consumer graph with ``nx.bfs_layers``
from the group forwards and backwards (one multi-source search each way, linear in
the block): the group is convex exactly when the two searches meet only in it. The
elementwise chains of rule 3 are the ``nx.connected_components`` of the
producer→only-consumer edges, since each producer joins its one consumer's group.

Before:
```mlir
%0 = tg.mul %x, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
%1 = tg.add %0, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
%2 = tg.relu %1 : tensor<8xf32> -> tensor<8xf32>
```
After:
```mlir
%2 = tg.fused %x, %w, %b : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
^bb0(%x_1: tensor<8xf32>, %w_1: tensor<8xf32>, %b_1: tensor<8xf32>):
  %0 = tg.mul %x_1, %w_1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = tg.add %0, %b_1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = tg.relu %1 : tensor<8xf32> -> tensor<8xf32>
  tg.yield %2 : tensor<8xf32>
}
```
A matmul epilogue, before:
```mlir
%0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
%1 = tg.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
%2 = tg.relu %1 : tensor<2x4xf32> -> tensor<2x4xf32>
```
After:
```mlir
%2 = tg.fused %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
^bb0(%x_1: tensor<2x3xf32>, %w_1: tensor<3x4xf32>, %b_1: tensor<4xf32>):
  %0 = tg.matmul %x_1, %w_1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tg.add %0, %b_1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = tg.relu %1 : tensor<2x4xf32> -> tensor<2x4xf32>
  tg.yield %2 : tensor<2x4xf32>
}
```
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import UPDATE_ATTR
from qidao.dialects.tg import (
    CompareOp,
    FusedOp,
    MatmulIntegerOp,
    ReduceOp,
    SelectOp,
    YieldOp,
)
from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.packed_matmul import WideningMatmulOp
from qidao.dialects.tg.types import element_of, shape_of


def _role(op: Operation | None) -> str:
    """What ``op`` declares it is to fusion (``TgOp.FUSION``: ``elementwise``,
    ``reduction``, ``anchor``, ``boundary``); an op of another dialect is a
    boundary."""
    return op.FUSION if isinstance(op, TgOp) else "boundary"


def _is_elementwise(op: Operation | None) -> bool:
    # the role is the op's class; an op already inside a tg.fused is in a group
    return (
        op is not None
        and _role(op) == "elementwise"
        and not isinstance(op.parent_op(), FusedOp)
    )


def _fuses_into(operand: SSAValue, consumer: Operation) -> bool:
    """True when ``operand``'s producer may join ``consumer``'s elementwise group
    (rule 3)."""
    producer = operand.owner
    return (
        isinstance(producer, Operation)
        and producer.parent is consumer.parent
        and _is_elementwise(producer)
        and operand.has_one_use()
        and shape_of(operand.type) == shape_of(consumer.results[0].type)
    )


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Group producer→consumer chains into ``tg.fused`` kernels: row-wise
    reductions with their elementwise neighbours, matmul/conv2d with their
    elementwise epilogues, elementwise chains."""

    name = "fuse"

    integer_epilogues: bool = False
    """Whether a ``tg.matmul_integer`` takes an epilogue (its kernel sums in a
    buffer of its own, which the CPU's int8 schedules keep per tile; the
    pipeline sets it with ``vnni``: the CUDA emitter has no kernel-local buffer)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        blocks = [
            block
            for inner in op.walk()
            if not isinstance(inner, FusedOp)
            for region in inner.regions
            for block in region.blocks
        ]
        for block in blocks:
            _fuse_rows(block)
            _fuse_anchors(block, self.integer_epilogues)
            for group in _elementwise_groups(block):
                _outline(group)


# ----------------------------------------------------------------------------------
# rule 1: row groups


@dataclass(frozen=True)
class _RowSpace:
    full: tuple[int, ...]
    k: int
    element: Attribute

    @staticmethod
    def of(op: Operation) -> _RowSpace | None:
        """The row space a reduction seeds, if it reduces trailing axes (its
        ``axes``, not its class, decide: the pass's rule)."""
        if _role(op) != "reduction":
            return None
        assert isinstance(op, ReduceOp), f"{op.name}: a reduction is a ReduceOp"
        full = shape_of(op.input.type)
        k = len(op.reduced_axes())
        if op.reduced_axes() != tuple(range(len(full) - k, len(full))):
            return None
        return _RowSpace(full, k, element_of(op.input.type))

    def admits(self, op: Operation) -> bool:
        if _role(op) == "reduction":
            return _RowSpace.of(op) == self
        if not _is_elementwise(op) or element_of(op.results[0].type) != self.element:
            return False
        outer = self.full[: len(self.full) - self.k]
        return shape_of(op.results[0].type) in (self.full, outer + (1,) * self.k, outer)


def _fuse_rows(block: Block) -> None:
    tried: set[Operation] = set()
    while True:
        seed = next(
            (
                op
                for op in block.ops
                if op not in tried and _RowSpace.of(op) is not None
            ),
            None,
        )
        if seed is None:
            return
        tried.add(seed)
        group = _grow_row_group(seed, block)
        if len(group) > 1:
            _outline(sorted(group, key=block.get_operation_index))


def _grow_row_group(seed: Operation, block: Block) -> set[Operation]:
    space = _RowSpace.of(seed)
    assert space is not None
    flow = _dataflow(block)  # the block does not change while the group grows
    members = {seed}
    changed = True
    while changed:
        changed = False
        for member in sorted(members, key=block.get_operation_index):
            for other in _neighbours(member):
                if (
                    other not in members
                    and other.parent is block
                    and space.admits(other)
                    and _ranks_match(members | {other})
                    and _is_convex(members | {other}, flow)
                ):
                    members.add(other)
                    changed = True
    return members


def _neighbours(op: Operation) -> list[Operation]:
    producers = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
    consumers = [use.operation for r in op.results for use in r.uses]
    return [*producers, *consumers]


def _ranks_match(members: set[Operation]) -> bool:
    """Every elementwise member reads in-group values of its own rank."""
    for op in members:
        if _role(op) == "reduction":
            continue
        rank = len(shape_of(op.results[0].type))
        for operand in op.operands:
            if operand.owner in members and len(shape_of(operand.type)) != rank:
                return False
    return True


def _is_convex(members: set[Operation], flow: nx.DiGraph) -> bool:
    """No op outside ``members`` is both reached from a member and reaches one
    (``flow``: the block's ``_dataflow``)."""
    after = set().union(*nx.bfs_layers(flow, members))
    before = set().union(*nx.bfs_layers(flow.reverse(copy=False), members))
    return after & before == members


def _dataflow(block: Block) -> nx.DiGraph:
    """The producer→consumer graph of ``block``'s ops."""
    flow = nx.DiGraph((o.owner, op) for op in block.ops for o in op.operands)
    flow.add_nodes_from(block.ops)
    return flow


# ----------------------------------------------------------------------------------
# rule 2: matmul and conv2d with epilogues


def _fuse_anchors(block: Block, integer_epilogues: bool) -> None:
    anchors = [
        op
        for op in block.ops
        if _role(op) == "anchor"
        and (integer_epilogues or not isinstance(op, MatmulIntegerOp))
    ]
    for anchor in anchors:
        epilogue = _epilogue(anchor, block)
        if epilogue:
            # the anchor first, which names the kernel's kind (a side input of an
            # int8 product's epilogue may come before it in the block, but does
            # not use it), then the rest in block order
            _outline([anchor, *sorted(epilogue, key=block.get_operation_index)])


def _epilogue(anchor: Operation, block: Block) -> list[Operation]:
    """The epilogue DAG if it leaves one value used outside, else the chain (an
    int8 product's with its side inputs)."""
    dag = _epilogue_dag(anchor, block)
    escaping = _escaping({anchor, *dag})
    if len(escaping) != 1 or (
        # a mask whose select stayed outside would be the output
        not isinstance(anchor, WideningMatmulOp)
        and element_of(escaping[0].type) != element_of(anchor.results[0].type)
    ):
        dag = _epilogue_chain(anchor)
    if isinstance(anchor, MatmulIntegerOp):
        dag += _side_inputs(anchor, dag, block)
    return dag


def _side_inputs(
    anchor: Operation, epilogue: list[Operation], block: Block
) -> list[Operation]:
    """The elementwise producers of epilogue operands (and theirs) that nothing
    else uses, of the anchor's shape: a block's residual, dequantized in its own
    chain, joins its requantization (rule 3's principle: one use, no
    recomputation). Only for ``tg.matmul_integer``, whose epilogues have them."""
    flow = _dataflow(block)
    inside: set[Operation] = {anchor, *epilogue}
    frontier = list(epilogue)
    added: list[Operation] = []
    while frontier:
        member = frontier.pop(0)
        for operand in member.operands:
            producer = operand.owner
            if (
                isinstance(producer, Operation)
                and producer not in inside
                and operand.has_one_use()
                and _joins_epilogue(producer, anchor)
                and _is_convex(inside | {producer}, flow)
            ):
                inside.add(producer)
                added.append(producer)
                frontier.append(producer)
    return added


def _joins_epilogue(op: Operation, anchor: Operation) -> bool:
    return (
        _is_elementwise(op)
        and UPDATE_ATTR not in op.attributes  # update-in-place needs its own kernel
        and op.parent is anchor.parent
        and shape_of(op.results[0].type) == shape_of(anchor.results[0].type)
        and (
            # an int8 or bf16 product sums in a buffer of its own: any type may
            # follow
            isinstance(anchor, WideningMatmulOp)
            or element_of(op.results[0].type) == element_of(anchor.results[0].type)
        )
    )


def _is_mask(op: Operation, anchor: Operation) -> bool:
    """A comparison in a float epilogue whose every use is a select's condition
    (``Clip``'s ``where(x >= lo, x, max(x, lo))``): the mask lives in registers
    (the DAG keeps it only if its selects join too, see ``_epilogue``)."""
    return (
        isinstance(op, CompareOp)
        and _is_elementwise(op)
        and op.parent is anchor.parent
        and shape_of(op.results[0].type) == shape_of(anchor.results[0].type)
        and all(
            isinstance(use.operation, SelectOp) and use.index == 0
            for use in op.results[0].uses
        )
    )


def _epilogue_dag(anchor: Operation, block: Block) -> list[Operation]:
    """Every elementwise op reachable from ``anchor`` through ops that join, while
    the group stays convex."""
    flow = _dataflow(block)
    members: list[Operation] = []
    inside: set[Operation] = {anchor}
    frontier: list[Operation] = [anchor]
    while frontier:
        current = frontier.pop(0)
        for result in current.results:
            for use in list(result.uses):
                user = use.operation
                if (
                    user not in inside
                    and (_joins_epilogue(user, anchor) or _is_mask(user, anchor))
                    and _is_convex(inside | {user}, flow)
                ):
                    inside.add(user)
                    members.append(user)
                    frontier.append(user)
    return members


def _escaping(members: set[Operation]) -> list[SSAValue]:
    """The members' results used by an op outside ``members`` (or by none)."""
    return [
        r
        for m in members
        for r in m.results
        if not r.uses or any(use.operation not in members for use in r.uses)
    ]


def _epilogue_chain(anchor: Operation) -> list[Operation]:
    chain: list[Operation] = []
    value = anchor.results[0]
    while value.has_one_use():
        user = next(iter(value.uses)).operation
        if not _joins_epilogue(user, anchor):
            break
        chain.append(user)
        value = user.results[0]
    return chain


# ----------------------------------------------------------------------------------
# rule 3: elementwise chains


def _elementwise_groups(block: Block) -> list[list[Operation]]:
    """Fusion groups of two or more ops, in block order; the last op is the root."""
    ops = [op for op in block.ops if _is_elementwise(op)]
    joins = nx.Graph()
    joins.add_nodes_from(ops)
    joins.add_edges_from(
        (o.owner, op) for op in ops for o in op.operands if _fuses_into(o, op)
    )
    groups = {op: group for group in nx.connected_components(joins) for op in group}
    flow: nx.DiGraph | None = None
    for producer in reversed(ops):  # consumers first: their groups are grown
        users = _one_group_of_users(producer, groups)
        if users is None:
            continue
        merged = groups[producer] | users
        flow = _dataflow(block) if flow is None else flow
        if _is_convex(merged, flow):
            for op in merged:
                groups[op] = merged
    unique = {id(group): group for group in groups.values()}.values()
    return sorted(
        (sorted(g, key=block.get_operation_index) for g in unique if len(g) > 1),
        key=lambda g: block.get_operation_index(g[0]),
    )


def _one_group_of_users(
    producer: Operation, groups: dict[Operation, set[Operation]]
) -> set[Operation] | None:
    """The group of ``producer``'s users when it has several and they are all in
    one elementwise group, not ``producer``'s, each of ``producer``'s shape: the
    value is computed once in that group's kernel and read there twice or more
    (GELU's ``x * (1 + erf(x / sqrt 2))`` of a normalized ``x``); else None."""
    result = producer.results[0]
    if len(producer.results) != 1 or result.has_one_use() or not result.uses:
        return None
    shape = shape_of(result.type)
    users = {use.operation for use in result.uses}
    if any(
        user not in groups or shape_of(user.results[0].type) != shape for user in users
    ):
        return None
    found = {id(groups[user]) for user in users}
    if len(found) != 1:
        return None
    group = groups[next(iter(users))]
    return None if producer in group else group


# ----------------------------------------------------------------------------------
# outlining


def _outline(group: list[Operation]) -> None:
    """Replace ``group`` (convex, in block order, or an anchor then the rest in
    block order) by one ``tg.fused`` at the place of its last op. Its results are the members' results used outside the group (the
    last op's if none is); ops between the members that use them move after it."""
    members = set(group)
    last = group[-1]
    block = last.parent_block()
    assert block is not None
    inputs: list[SSAValue] = []
    for member in group:
        for operand in member.operands:
            if operand.owner not in members and operand not in inputs:
                inputs.append(operand)
    outputs = [
        r
        for member in group
        for r in member.results
        if any(use.operation not in members for use in r.uses)
    ] or list(last.results)
    body = FusedOp.empty_body(inputs)
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.block.args, strict=True))
    for arg, value in zip(body.block.args, inputs, strict=True):
        arg.name_hint = value.name_hint
    for member in group:
        body.block.add_op(member.clone(mapping))
    body.block.add_op(YieldOp(*(mapping[v] for v in outputs)))
    fused = FusedOp(inputs, [v.type for v in outputs], body)
    block.insert_op_before(fused, last)
    for old, new in zip(outputs, fused.results, strict=True):
        new.name_hint = old.name_hint
        for use in list(old.uses):
            if use.operation not in members:
                use.operation.operands[use.index] = new
    _move_users_after(fused, group[0], block)
    for member in reversed(group):
        member.detach()
        member.erase()


def _move_users_after(fused: FusedOp, first: Operation, block: Block) -> None:
    """Ops between ``first`` and ``fused`` that (transitively) use ``fused``'s
    results move right after it, in order. None of them feeds a member (the group
    is convex), so this keeps every value defined before its uses. (One scan of
    that window, which block order already sorts topologically: cheaper than
    building the block's graph for ``nx.descendants`` at every outline.)"""
    late: set[SSAValue] = set(fused.results)
    moving: list[Operation] = []
    op = first.next_op
    while op is not None and op is not fused:
        if any(o in late for o in op.operands):
            moving.append(op)
            late.update(op.results)
        op = op.next_op
    anchor: Operation = fused
    for op in moving:
        op.detach()
        block.insert_op_after(op, anchor)
        anchor = op
