"""``collapse-matmul-batch``: a batched lhs times a plain matrix is one 2-D matmul.

    matmul(x: [b..., M, K], w: [K, N])
      ==>  view(matmul(view(x, [P, K]), w), [b..., M, N])       P = prod(b) * M

A ``Linear`` on a ``[B, S, D]`` activation, or ConvNeXt's pointwise MLP on an NHWC
``[1, H, W, C]`` map, multiplies every row of every batch by the same ``w``. The
matmul lowering makes a loop per batch dimension outside ``i``, so the default
schedule tiles ``M`` rows (3 at ConvNeXt's last stage) and repacks ``w`` once per
batch index. Here the batch dimensions fold into ``M``: a ``tg.view`` to ``[P, K]``
(no copy: a ``memref.reinterpret_cast``), one matmul of ``P`` rows, and a view back.

Measured on the zoo's ConvNeXt (``qidao profile``, one thread, AMD EPYC; a shared
machine under load, so the fastest of 12 runs' medians; each kernel's time summed
over its calls):

| fused matmul (+ GELU, or + bias + residual)     | calls | before  | after   |
|-------------------------------------------------|-------|---------|---------|
| ``[1, 3, 3, 768] x [768, 3072]``, ``M`` 3 -> 9  | 1     | 2.30 ms | 1.28 ms |
| ``[1, 3, 3, 3072] x [3072, 768]``               | 1     | 2.30 ms | 1.19 ms |
| ``[1, 7, 7, 384] x [384, 1536]``, ``M`` 7 -> 49 | 3     | 3.34 ms | 2.32 ms |
| ``[1, 7, 7, 1536] x [1536, 384]``               | 3     | 3.16 ms | 2.15 ms |
| ``[1, 14, 14, 192] x [192, 768]`` and back      | 1 + 1 | 1.48 ms | 1.25 ms |
| ``[1, 28, 28, 96] x [96, 384]`` and back        | 1 + 1 | 1.52 ms | 1.36 ms |

Rules:
- A bare ``tg.matmul`` fires when its rhs has rank 2 (or is a matrix in column
  panels, ``pack-panels``'s ``rhs_layout = "panels"``), its lhs rank 3 or more with
  more than one batch (``prod(b) > 1``: a ``[1, S, D]`` lhs already runs its rows
  in one batch iteration), and ``tg.view`` accepts ``[P, K]`` for the lhs's layout
  (a transposed lhs has no such view: it stays). An rhs with batch dimensions
  (attention's ``q @ k^T``) is a real batched matmul: it stays.
- A ``tg.fused`` group fires when its body is one such matmul, with an rhs that is
  a group input used by nothing else, plus elementwise ops (an epilogue, or an lhs
  prologue), every one of them on the *row space* ``[b..., M]``. Each value of the
  group, input or op result, of shape ``S`` (right-aligned to ``[b..., M, X]``):
  - ``[b..., M, X]`` (the full rows, ``X`` the last dimension, ``N``, ``K`` or 1)
    becomes ``[P, X]``: an input through a ``tg.view`` (no fire when its layout
    has none), an op by being rebuilt at the new shape;
  - 1 in every row dimension (a bias ``[N]``, ``[1, N]``, a scalar) broadcasts
    over every row: kept as it is at rank 2 or less, viewed to ``[1, X]`` above;
  - anything else (``[b..., 1, N]``, a per-batch value, or ``[M, N]`` broadcast
    over ``b``) has no 2-D form: the group stays. So does a group holding any
    other op.
- The results come back through ``tg.view`` to their old shapes, row-major as
  before, so no user's type changes. A view to ``[P, X]`` of a value that is itself
  a view back from ``[P, X]`` (the previous group's result) reads that value
  directly, and one view of a value serves every group after it. A result that the
  graph returns is a view, so the host copies it into the caller's buffer (one
  ``copy`` kernel: ``P * N`` elements against the matmul's ``P * N * K``).
- Idempotent: the rewritten matmuls are 2-D.

Before:
```mlir
%h = tg.fused %x, %w, %b : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> {
^bb0(%x_1: tensor<2x3x8xf32>, %w_1: tensor<8x4xf32>, %b_1: tensor<4xf32>):
  %m = tg.matmul %x_1, %w_1 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
  %a = tg.add %m, %b_1 : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %h = tg.relu %a : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  tg.yield %h : tensor<2x3x4xf32>
}
```
After:
```mlir
%x_2d = tg.view %x : tensor<2x3x8xf32> -> tensor<6x8xf32>
%h_2d = tg.fused %x_2d, %w, %b : (tensor<6x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<6x4xf32> {
^bb0(%x_1: tensor<6x8xf32>, %w_1: tensor<8x4xf32>, %b_1: tensor<4xf32>):
  %m = tg.matmul %x_1, %w_1 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %a = tg.add %m, %b_1 : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
  %h = tg.relu %a : tensor<6x4xf32> -> tensor<6x4xf32>
  tg.yield %h : tensor<6x4xf32>
}
%h = tg.view %h_2d : tensor<6x4xf32> -> tensor<2x3x4xf32>
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects import tg
from qidao.dialects.tg.base import tensor
from qidao.dialects.tg.layout import broadcast_shapes, num_elements, view_strides
from qidao.dialects.tg.types import element_of, shape_of, strides_of, tensor_type

Shape = tuple[int, ...]


@dataclass(frozen=True)
class CollapseMatmulBatchPass(ModulePass):
    """Fold the batch dimensions of a matmul's lhs into its rows when the rhs is a
    plain matrix, alone or with its fused epilogue and prologue."""

    name = "collapse-matmul-batch"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        candidates = [
            inner
            for inner in op.walk()
            if isinstance(inner, tg.MatmulOp | tg.FusedOp)
            and not isinstance(inner.parent_op(), tg.FusedOp)
        ]
        for candidate in candidates:
            if isinstance(candidate, tg.MatmulOp):
                _collapse_matmul(candidate)
            else:
                _collapse_group(candidate)


@dataclass(frozen=True)
class _Rows:
    """The row space ``[b..., M]`` of a matmul lhs ``[b..., M, K]``."""

    shape: Shape

    @staticmethod
    def of(matmul: tg.MatmulOp) -> _Rows | None:
        """The row space to collapse, if the matmul has a batched lhs (more than one
        batch) and a 2-D rhs (or one in column panels, ``rhs_layout``)."""
        lhs, rhs = shape_of(matmul.lhs.type), matmul.rhs_matrix_shape()
        if len(lhs) < 3 or len(rhs) != 2 or num_elements(lhs[:-2]) == 1:
            return None
        return _Rows(lhs[:-1])

    @property
    def count(self) -> int:
        """``P = prod(b) * M``."""
        return num_elements(self.shape)

    def collapsed(self, shape: Shape) -> Shape | None:
        """The 2-D form of a value of ``shape`` on these rows: ``[b..., M, X] ->
        [P, X]``; one broadcast over every row stays (rank <= 2) or is ``[1, X]``;
        None when there is no such form."""
        rank = len(self.shape) + 1
        if len(shape) > rank:
            return None
        padded = (1,) * (rank - len(shape)) + shape
        if all(d == 1 for d in padded[:-1]):
            return shape if len(shape) <= 2 else (1, padded[-1])
        if padded[:-1] == self.shape:
            return (self.count, padded[-1])
        return None


# ----------------------------------------------------------------------------------
# a bare matmul


def _layout(matmul: tg.MatmulOp) -> str:
    """The rhs layout the flattened matmul keeps (its rhs is the same value)."""
    return "" if matmul.rhs_layout is None else matmul.rhs_layout.data


def _n(matmul: tg.MatmulOp) -> int:
    """N, which a rhs in panels does not say by itself."""
    return matmul.rhs_matrix_shape()[-1]


def _collapse_matmul(matmul: tg.MatmulOp) -> None:
    rows = _Rows.of(matmul)
    if rows is None:
        return
    flat_lhs = (rows.count, shape_of(matmul.lhs.type)[-1])
    if not _has_view(matmul.lhs, flat_lhs):
        return
    lhs = _view_before(matmul.lhs, flat_lhs, matmul)
    flat = tg.MatmulOp(lhs, matmul.rhs, _layout(matmul), _n(matmul))
    flat.attributes.update(matmul.attributes)  # e.g. select-conv-algo's qd.algo
    _replace(matmul, flat)


# ----------------------------------------------------------------------------------
# a fusion group around a matmul


def _collapse_group(group: tg.FusedOp) -> None:
    shapes = _plan(group)
    if shapes is None:
        return
    block = group.body.block
    inputs = [
        _view_before(value, shapes[arg], group)
        for arg, value in zip(block.args, group.inputs, strict=True)
    ]
    body = tg.FusedOp.empty_body(inputs)
    mapping: dict[SSAValue, SSAValue] = {}
    for old_arg, new_arg in zip(block.args, body.block.args, strict=True):
        new_arg.name_hint = old_arg.name_hint
        mapping[old_arg] = new_arg
    for op in block.ops:
        operands = [mapping[o] for o in op.operands]
        new = _rebuild(op, operands, [shapes[r] for r in op.results])
        body.block.add_op(new)
        for old_result, new_result in zip(op.results, new.results, strict=True):
            new_result.name_hint = old_result.name_hint
            mapping[old_result] = new_result
    terminator = body.block.last_op
    assert isinstance(terminator, tg.YieldOp)
    flat = tg.FusedOp(inputs, [v.type for v in terminator.values], body)
    _replace(group, flat)


def _plan(group: tg.FusedOp) -> dict[SSAValue, Shape] | None:
    """The 2-D shape of every value of ``group``'s body, or None when the group
    does not collapse (see the rules)."""
    block = group.body.block
    matmuls = [op for op in block.ops if isinstance(op, tg.MatmulOp)]
    if len(matmuls) != 1:
        return None
    (matmul,) = matmuls
    rows = _Rows.of(matmul)
    rhs = matmul.rhs
    if (
        rows is None
        or not isinstance(rhs, BlockArgument)
        or rhs.owner is not block
        or not rhs.has_one_use()
    ):
        return None
    shapes: dict[SSAValue, Shape] = {rhs: shape_of(rhs.type)}
    for arg, value in zip(block.args, group.inputs, strict=True):
        if arg is rhs:
            continue
        flat = rows.collapsed(shape_of(arg.type))
        if flat is None or not _has_view(value, flat):
            return None
        shapes[arg] = flat
    for op in block.ops:
        if isinstance(op, tg.YieldOp):
            continue
        if op is not matmul and not isinstance(op, tg.ElementwiseOp):
            return None
        flat = rows.collapsed(shape_of(op.results[0].type))
        if flat is None:
            return None
        # the matmul's [P, K] x [K, N] -> [P, N] holds by construction; an
        # elementwise op's 2-D operands must broadcast to its 2-D result
        operands = [shapes[o] for o in op.operands]
        if op is not matmul and broadcast_shapes(*operands) != flat:
            return None
        shapes[op.results[0]] = flat
    terminator = block.last_op
    assert isinstance(terminator, tg.YieldOp)
    for value in terminator.values:
        if num_elements(shapes[value]) != num_elements(shape_of(value.type)):
            return None  # a broadcast yielded: no view back to its old shape
    return shapes


def _rebuild(
    op: Operation, operands: Sequence[SSAValue], shapes: list[Shape]
) -> Operation:
    """``op`` on the 2-D ``operands``, its results of ``shapes``."""
    if isinstance(op, tg.MatmulOp):
        flat = tg.MatmulOp(operands[0], operands[1], _layout(op), _n(op))
        flat.attributes.update(op.attributes)  # e.g. select-conv-algo's qd.algo
        return flat
    if isinstance(op, tg.YieldOp):
        return tg.YieldOp(*operands)
    new = type(op).create(
        operands=operands,
        result_types=[
            tensor_type(shape, element_of(r.type))
            for r, shape in zip(op.results, shapes, strict=True)
        ],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    new.verify()
    return new


# ----------------------------------------------------------------------------------
# views


def _has_view(value: SSAValue, shape: Shape) -> bool:
    return view_strides(shape_of(value.type), strides_of(value.type), shape) is not None


def _view_before(value: SSAValue, shape: Shape, user: Operation) -> SSAValue:
    """``value`` as ``shape`` for ``user``: itself, the source of the view it came
    from when that has ``shape`` already, a view of it to ``shape`` that comes
    before ``user``, or a new ``tg.view`` right before ``user``."""
    if shape_of(value.type) == shape:
        return value
    target = tg.ViewOp.infer(tensor(value), shape)
    producer = value.owner
    if isinstance(producer, tg.ViewOp) and producer.input.type == target:
        return producer.input
    for use in value.uses:
        other = use.operation
        if (
            isinstance(other, tg.ViewOp)
            and other.result.type == target
            and other.parent is user.parent
            and other.is_before_in_block(user)
        ):
            return other.result
    view = tg.ViewOp(value, shape)
    _block(user).insert_op_before(view, user)
    view.result.name_hint = _hint(value, "2d")
    return view.result


def _replace(old: Operation, new: Operation) -> None:
    """Put ``new`` (the 2-D twin of ``old``) in its place, each result viewed back
    to ``old``'s shape; erase ``old`` and the views it read that nothing else
    reads now."""
    block = _block(old)
    block.insert_op_before(new, old)
    for old_result, new_result in zip(old.results, new.results, strict=True):
        back = tg.ViewOp(new_result, shape_of(old_result.type))
        assert back.result.type == old_result.type, (back.result.type, old_result.type)
        block.insert_op_before(back, old)
        new_result.name_hint = _hint(old_result, "2d")
        back.result.name_hint = old_result.name_hint
        old_result.replace_all_uses_with(back.result)
    read = [o.owner for o in old.operands]
    old.detach()
    old.erase()
    for producer in read:
        if (
            isinstance(producer, tg.ViewOp)
            and producer.parent is not None
            and not producer.result.uses
        ):
            producer.detach()
            producer.erase()


def _block(op: Operation) -> Block:
    block = op.parent_block()
    assert block is not None
    return block


def _hint(value: SSAValue, tag: str) -> str | None:
    return None if value.name_hint is None else f"{value.name_hint}_{tag}"
