"""``qidao.dialects.tg.cost`` reads what each op declares (``FREE``, ``flops``): for
every tg op it gives what the rule it replaced gave (one function of isinstance
cases and a list of free ops, written here as the reference), on every op of the
ops' docstring examples and a few more."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from qidao.dialects.tg import (
    TG,
    BroadcastOp,
    ConstantOp,
    ContiguousOp,
    Conv2dOp,
    FusedOp,
    GridSampleOp,
    MatmulBf16Op,
    MatmulBlockqOp,
    MatmulIntegerOp,
    MatmulOp,
    NmsKeepOp,
    ReshapeOp,
    TopKIndicesOp,
    TransposeOp,
    ViewOp,
    YieldOp,
)
from qidao.dialects.tg.cost import flops, is_free, numel
from qidao.dialects.tg.types import shape_of
from tests.dialects.tg.test_registry import example_of, parse, wrap_example

TG_OPS: list[type[Operation]] = list(TG.operations)

OLD_FREE_OPS = (ConstantOp, TransposeOp, ViewOp, BroadcastOp, ReshapeOp, YieldOp)
"""``cost.FREE_OPS`` before the ops declared ``FREE``."""


def _old_flops(op: Operation) -> int:
    """``cost.flops`` before the ops declared their cost."""
    if isinstance(op, FusedOp):
        return sum(_old_flops(inner) for inner in op.body.block.ops)
    if isinstance(op, OLD_FREE_OPS):
        return 0
    if isinstance(op, ContiguousOp):
        return numel(op.result.type)
    if isinstance(op, MatmulOp | MatmulIntegerOp | MatmulBf16Op | MatmulBlockqOp):
        k = shape_of(op.lhs.type)[-1]
        return 2 * numel(op.result.type) * k
    if isinstance(op, Conv2dOp):
        # (C_in / groups) * kh * kw terms per output, read from the input's
        # channels and the kernel's window in the op's own layout (the old rule,
        # prod(weight[1:]), was right for FCHW weights only: an HWIO weight gave
        # kw * C_in/groups * F)
        x, w = shape_of(op.input.type), shape_of(op.weight.type)
        nhwc = op.data_layout() == "NHWC"
        channels = x[3] if nhwc else x[1]
        kh, kw = (w[0], w[1]) if nhwc else (w[2], w[3])
        per_output = 2 * (channels // op.groups.value.data) * kh * kw
        bias = 1 if op.bias is not None else 0
        return numel(op.result.type) * (per_output + bias)
    if isinstance(op, GridSampleOp):  # a multiply-add per tap, channel and point
        spatial = len(shape_of(op.input.type)) - 2
        taps: int = {"nearest": 1, "linear": 2, "cubic": 4}[op.mode.data] ** spatial
        return 2 * taps * numel(op.result.type)
    if isinstance(op, NmsKeepOp):  # an IoU (about 20 operations) a pair of boxes
        return 20 * numel(op.scores.type) * shape_of(op.scores.type)[2]
    if isinstance(op, TopKIndicesOp):  # n entries compared with k slots, a row
        n = shape_of(op.input.type)[op.normalized_axis()]
        return numel(op.input.type) // max(n, 1) * n * op.count()
    sizes = [numel(v.type) for v in (*op.operands, *op.results)]
    return max(sizes, default=0)


MORE = """
func.func @more(%a: tensor<2x5x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<2x5x4xf32> {
  %m = tg.matmul %a, %b : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
  %f = tg.fused %a, %b, %c : (tensor<2x5x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x5x4xf32> {
  ^bb0(%x: tensor<2x5x3xf32>, %w: tensor<3x4xf32>, %bias: tensor<4xf32>):
    %y = tg.matmul %x, %w : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
    %z = tg.add %y, %bias : (tensor<2x5x4xf32>, tensor<4xf32>) -> tensor<2x5x4xf32>
    tg.yield %z : tensor<2x5x4xf32>
  }
  func.return %f : tensor<2x5x4xf32>
}
"""
"""A batched matmul, a matmul group, and a non-tg op (``func.return``)."""


def _modules() -> list[ModuleOp]:
    return [parse(wrap_example(op, example_of(op))) for op in TG_OPS] + [parse(MORE)]


def test_the_declared_free_ops_are_the_old_list() -> None:
    free = {op for op in TG_OPS if getattr(op, "FREE", False)}
    assert free == set(OLD_FREE_OPS)


def test_the_declared_costs_give_the_old_rule_for_every_op() -> None:
    seen: set[type[Operation]] = set()
    for module in _modules():
        for op in module.walk():
            if op is module or isinstance(op, func.FuncOp):
                continue
            seen.add(type(op))
            assert flops(op) == _old_flops(op), op
            assert is_free(op) == isinstance(op, OLD_FREE_OPS), op
    assert seen >= set(TG_OPS) | {func.ReturnOp}
