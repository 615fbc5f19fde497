"""``fold-constants``: ``op(constant, ..., constant) -> constant``, and inference batch
norm folded into the convolution or matmul before it.

    add(constant a, constant b)                     ->  constant (a + b)
    batch_norm(conv2d(x, W, b), scale, bias, mean, var)
                                                    ->  conv2d(x, W', b')
    batch_norm(matmul(x, W), scale, bias, mean, var) ->  add(matmul(x, W'), t)
    batch_norm(x, scale, bias, mean, var)           ->  add(mul(x, s), t)

with ``s = scale / sqrt(var + epsilon)``, ``t = bias - mean * s`` (per channel: dimension 1, the last one for NHWC),
``W' = W * s[:, None, None, None]`` (conv) or ``W * s[None, :]`` (matmul) and
``b' = (b - mean) * s + bias``, all computed in float64 and rounded once to the
element type.

Shape computations (ONNX ``Shape``, ``ConstantOfShape``, integer arithmetic on
shapes, ``Gather``/``Concat``/``Slice`` of them) never reach tg, whose shapes are
static and whose compute ops are float-only: the ONNX importer evaluates them in
NumPy while it reads the model (``qidao/frontend/onnx/fold.py``). This pass is the
tg half of constant folding.

Rules:
- **Folding** evaluates a Pure tg op whose operands are all constant with the NumPy
  reference semantics (``qidao/dialects/tg/numpy_eval.py``) and replaces it with one
  ``tg.constant`` per result. An operand is constant when a ``tg.constant`` makes it,
  or a view (``transpose``, ``view``, ``reshape``, ``broadcast``) of a constant.
- The result type never changes. A ``tg.constant`` is always row-major, so an op
  whose result type is a strided view (``transpose`` of a constant,
  ``tensor<3x2xf32, strided<[1, 3]>>``) is *not* replaced: it stays a view, which
  costs nothing at run time (a ``memref.reinterpret_cast`` of the constant's buffer),
  and ops that read it still fold, since a view of a constant counts as constant.
- **A matmul's constant right operand is row-major.** ``matmul(x, transpose(W))``
  with ``W`` constant (ONNX ``Gemm`` with ``transB = 1``: every classifier head)
  reads ``W`` through the view ``[K, N]`` with strides ``[1, K]``; the matmul
  gets a row-major constant ``W^T`` instead (the view and, when nothing else
  reads it, ``W`` are erased). The loops then read B along its rows: EfficientNet's
  1280 -> 1000 head took 1.9 ms as a strided GEMV and 0.1 ms so. ``W`` stays when
  another op reads it (a tied embedding), at the cost of a second copy.
- Nothing folds when the op reads or writes more than ``MAX_FOLD_ELEMENTS`` = 2^22
  elements (16 MiB of float32) per tensor, or when a ``matmul``/``conv2d`` would
  take more than ``MAX_FOLD_MACS`` = 2^30 multiply-adds: compile time and the size
  of the compiled module stay bounded; such an op runs at run time instead.
- **Batch norm into conv2d**: the conv's weight and bias (if any) and the four
  BN parameters are constant, the conv's result has no user but the BN, and both
  have the same ``layout`` (NCHW: FCHW weight scaled along axis 0; NHWC: HWIO
  weight scaled along axis 3). A conv used elsewhere too keeps its weights
  (folding would need a second conv).
- **Batch norm into matmul**: as for conv, for a rank-2 ``matmul(x, W)`` (the BN's
  channel dimension 1 is W's output dimension); the shift ``t`` becomes a
  ``tg.add`` of a ``[N]`` constant.
- **A lone batch norm** with constant parameters (its input is anything else, or a
  conv/matmul that cannot absorb it) becomes ``add(mul(x, s), t)`` with ``s`` and
  ``t`` shaped ``[C, 1, ..., 1]`` (``[C, 1, 1]`` for NCHW, ``[C]`` for NHWC), so
  ``fuse`` sees plain elementwise ops. A BN with a non-constant parameter is left
  alone.
- The BN rewrites reassociate float32 arithmetic (``x * s + t`` instead of
  ``scale * (x - mean) / sqrt(var + eps) + bias``): results agree to float32
  rounding, not bitwise, as in every framework that folds BN.
- Like MLIR's greedy driver, the pass erases every Pure op without users that it
  visits: the inputs of folded ops, the conv that fed a folded BN, and any op that
  was dead already.

Before:
```mlir
%a = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
%b = tg.constant dense<[3.0, 4.0]> : tensor<2xf32>
%s = tg.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
%y = tg.mul %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
```
After:
```mlir
%s = tg.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
%y = tg.mul %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.traits import Pure

from qidao.dialects.tg import (
    AddOp,
    BatchNormOp,
    BroadcastOp,
    ConstantOp,
    Conv2dOp,
    MatmulOp,
    MulOp,
    ReshapeOp,
    TransposeOp,
    ViewOp,
    YieldOp,
)
from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.layout import num_elements
from qidao.dialects.tg.numpy_eval import (
    batch_norm_channel_dim,
    evaluate,
    has_reference,
    is_nhwc,
)
from qidao.dialects.tg.types import dtype_name, is_row_major, shape_of

Array = np.ndarray[Any, Any]

MAX_FOLD_ELEMENTS = 1 << 22
"""No tensor an op reads or writes may have more elements than this for it to fold."""

MAX_FOLD_MACS = 1 << 30
"""No matmul or conv2d with more multiply-adds than this folds."""

_VIEW_OPS = (TransposeOp, ViewOp, ReshapeOp, BroadcastOp)


def is_constant(value: SSAValue) -> bool:
    """True when a ``tg.constant``, or a view of one, makes ``value``."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        return True
    return isinstance(owner, _VIEW_OPS) and _small(value) and is_constant(owner.input)


def constant_value(value: SSAValue) -> Array | None:
    """The value of ``value`` when a ``tg.constant`` (or a view of one) makes it."""
    owner = value.owner
    if not is_constant(value):
        return None
    if isinstance(owner, ConstantOp):
        return owner.to_numpy()
    assert isinstance(owner, _VIEW_OPS)
    source = constant_value(owner.input)
    assert source is not None
    return evaluate(owner, [source])[0]


def _small(value: SSAValue) -> bool:
    return num_elements(shape_of(value.type)) <= MAX_FOLD_ELEMENTS


def multiply_adds(op: Operation) -> int:
    """The multiply-adds a matmul or conv2d takes (0 for other ops)."""
    if isinstance(op, MatmulOp):
        return num_elements(shape_of(op.result.type)) * shape_of(op.lhs.type)[-1]
    if isinstance(op, Conv2dOp):
        weight = shape_of(op.weight.type)  # FCHW, or HWIO for NHWC
        filters = weight[3] if is_nhwc(op) else weight[0]
        per_output = num_elements(weight) // filters
        return num_elements(shape_of(op.result.type)) * per_output
    return 0


def _constant(array: Array, like: SSAValue, name: str | None) -> ConstantOp:
    """A constant of ``like``'s element type holding ``array``."""
    dtype = _dtype(like)
    op = ConstantOp.from_numpy(np.asarray(array).astype(dtype))
    op.result.name_hint = name
    return op


def _dtype(value: SSAValue) -> np.dtype[Any]:
    t = value.type
    assert isinstance(t, builtin.TensorType)
    return np.dtype(dtype_name(t.get_element_type()))


class FoldConstantOp(RewritePattern):
    """``op(constant, ..., constant) -> constant`` (row-major results only)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (
            not isinstance(op, TgOp)
            or isinstance(op, ConstantOp | YieldOp)
            or not op.operands
            or not op.has_trait(Pure)
            or not has_reference(op)
        ):
            return
        if not all(is_row_major(r.type) for r in op.results):
            return  # a strided view of a constant stays a (free) view
        if not all(_small(v) for v in (*op.operands, *op.results)):
            return
        if multiply_adds(op) > MAX_FOLD_MACS:
            return
        if not all(is_constant(v) for v in op.operands):
            return
        values: list[Array] = []
        for operand in op.operands:
            value = constant_value(operand)
            assert value is not None
            values.append(value)
        results = evaluate(op, values)
        constants = [
            _constant(array, result, result.name_hint)
            for array, result in zip(results, op.results, strict=True)
        ]
        for new, old in zip(constants, op.results, strict=True):
            assert new.result.type == old.type, (new.result.type, old.type)
        rewriter.replace(op, constants, [c.result for c in constants])


def _batch_norm_params(bn: BatchNormOp) -> tuple[Array, Array, Array, Array] | None:
    """``(scale, bias, mean, var)`` when all four are constant."""
    params = [constant_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
    scale, bias, mean, var = params
    if scale is None or bias is None or mean is None or var is None:
        return None
    return scale, bias, mean, var


def _scale(bn: BatchNormOp, scale: Array, var: Array) -> Array:
    """``s = scale / sqrt(var + epsilon)`` in float64 (epsilon is an f32 attribute)."""
    eps = float(np.float32(bn.epsilon.value.data))
    with np.errstate(all="ignore"):
        s: Array = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    return s


def _shift(bias: Array, mean: Array, s: Array) -> Array:
    """``t = bias - mean * s`` in float64."""
    t: Array = bias.astype(np.float64) - mean.astype(np.float64) * s
    return t


def _only_used_by(value: SSAValue, user: Operation) -> bool:
    return value.has_one_use() and next(iter(value.uses)).operation is user


class FoldBatchNormIntoConv(RewritePattern):
    """``batch_norm(conv2d(x, W, b), scale, bias, mean, var) -> conv2d(x, W', b')``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, BatchNormOp):
            return
        conv = op.input.owner
        if not isinstance(conv, Conv2dOp) or not _only_used_by(op.input, op):
            return
        if is_nhwc(conv) != is_nhwc(op):
            return  # the BN's channels are not the conv's output channels
        params = _batch_norm_params(op)
        weight = constant_value(conv.weight)
        if params is None or weight is None or weight.size > MAX_FOLD_ELEMENTS:
            return
        scale, bias, mean, var = params
        if conv.bias is None:
            conv_bias = np.zeros(mean.shape, np.float64)
        else:
            known = constant_value(conv.bias)
            if known is None:
                return
            conv_bias = known.astype(np.float64)
        s = _scale(op, scale, var)
        # FCHW weights (NCHW) scale axis 0; HWIO weights (NHWC) scale axis 3
        per_filter = (1, 1, 1, -1) if is_nhwc(conv) else (-1, 1, 1, 1)
        new_weight = weight.astype(np.float64) * s.reshape(per_filter)
        new_bias = (conv_bias - mean.astype(np.float64)) * s + bias.astype(np.float64)
        name = op.result.name_hint or "bn"
        w_const = _constant(new_weight, conv.weight, f"{name}_weight")
        b_const = _constant(new_bias, op.input, f"{name}_bias")
        # the same conv (strides, padding, layout, ...), now with a bias operand
        new_conv = Conv2dOp.create(
            operands=[conv.input, w_const.result, b_const.result],
            result_types=[conv.result.type],
            properties={
                **conv.properties,
                "operandSegmentSizes": DenseArrayBase.from_list(i32, [1, 1, 1]),
            },
        )
        new_conv.verify()
        rewriter.replace(op, [w_const, b_const, new_conv], [new_conv.result])


class FoldBatchNormIntoMatmul(RewritePattern):
    """``batch_norm(matmul(x, W), scale, bias, mean, var) -> add(matmul(x, W'), t)``
    for rank-2 operands."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, BatchNormOp):
            return
        matmul = op.input.owner
        if not isinstance(matmul, MatmulOp) or not _only_used_by(op.input, op):
            return
        if len(shape_of(matmul.lhs.type)) != 2 or len(shape_of(matmul.rhs.type)) != 2:
            return
        params = _batch_norm_params(op)
        weight = constant_value(matmul.rhs)
        if params is None or weight is None or weight.size > MAX_FOLD_ELEMENTS:
            return
        scale, bias, mean, var = params
        s = _scale(op, scale, var)
        name = op.result.name_hint or "bn"
        w_const = _constant(
            weight.astype(np.float64) * s[None, :], matmul.rhs, f"{name}_weight"
        )
        t_const = _constant(_shift(bias, mean, s), op.input, f"{name}_shift")
        new_matmul = MatmulOp(matmul.lhs, w_const.result)
        new_matmul.result.name_hint = matmul.result.name_hint
        add = AddOp(new_matmul.result, t_const.result)
        rewriter.replace(op, [w_const, new_matmul, t_const, add], [add.result])


class PackMatmulWeight(RewritePattern):
    """``matmul(x, transpose(constant W)) -> matmul(x, constant W^T)``: a constant
    right operand read through a strided view becomes a row-major constant."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, MatmulOp) or op.panels or is_row_major(op.rhs.type):
            return
        weight = constant_value(op.rhs)
        if weight is None:
            return
        packed = _constant(weight, op.rhs, op.rhs.name_hint)
        matmul = MatmulOp(op.lhs, packed.result)
        matmul.attributes.update(op.attributes)
        matmul.result.name_hint = op.result.name_hint
        rewriter.replace(op, [packed, matmul], [matmul.result])


class BatchNormToMulAdd(RewritePattern):
    """``batch_norm(x, scale, bias, mean, var) -> add(mul(x, s), t)`` for constant
    parameters, ``s`` and ``t`` shaped ``[C, 1, ..., 1]``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, BatchNormOp):
            return
        params = _batch_norm_params(op)
        if params is None:
            return
        scale, bias, mean, var = params
        s = _scale(op, scale, var)
        t = _shift(bias, mean, s)
        rank = len(shape_of(op.input.type))
        trailing = rank - 1 - batch_norm_channel_dim(op)
        per_channel = (s.shape[0],) + (1,) * trailing
        name = op.result.name_hint or "bn"
        s_const = _constant(s.reshape(per_channel), op.input, f"{name}_scale")
        t_const = _constant(t.reshape(per_channel), op.input, f"{name}_shift")
        mul = MulOp(op.input, s_const.result)
        mul.result.name_hint = f"{name}_scaled"
        add = AddOp(mul.result, t_const.result)
        assert add.result.type == op.result.type
        rewriter.replace(op, [s_const, mul, t_const, add], [add.result])


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Evaluate constant subgraphs at compile time; fold inference batch norm."""

    name = "fold-constants"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns: list[RewritePattern] = [
            FoldConstantOp(),
            FoldBatchNormIntoConv(),
            FoldBatchNormIntoMatmul(),
            PackMatmulWeight(),
            BatchNormToMulAdd(),
        ]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
