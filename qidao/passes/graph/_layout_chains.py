"""The analysis half of ``layout``: which ops prefer NHWC, and the chains they form.

A *chain* is a maximal set of ops of one block, connected producer→consumer, made of

- **anchors**: NCHW ``tg.conv2d``, ``tg.max_pool2d`` and ``tg.avg_pool2d`` whose
  heuristic (:func:`prefers_nhwc`) says NHWC;
- **NHWC sources** (:func:`is_nhwc_source`): ``tg.transpose [0, 3, 1, 2]`` of a
  row-major rank-4 tensor, an NCHW view of data that is channels last already
  (the int8 convolutions' outputs, ``frontend/onnx/conv_integer.py``, or an NHWC
  graph input). Its NHWC value is its input: no copy. A source joins the chain of
  its users, never its input's producer's;
- **layout-agnostic ops**: elementwise ops with a rank-4 result (``relu``, a bias
  ``add`` of a ``[C, 1, 1]`` tensor, a residual ``add`` of two chain values, ...),
  rank-4 NCHW ``tg.batch_norm``, rank-4 ``tg.pad`` (any amounts: padding commutes
  with the transpose), rank-4 ``tg.concat`` and ``tg.slice`` (along any axis, moved
  to its NHWC place) and ``tg.reduce_sum``/``reduce_mean``/``reduce_max`` with
  ``keepdims`` over any axes (a global pool ``[2, 3]``, ``[1, 2]`` in NHWC;
  training batch norm's ``[0, 2, 3]``, ``[0, 1, 2]`` in NHWC).

Every other op stops a chain: an op it does not understand, an anchor whose
heuristic says NCHW, an op already in NHWC, anything inside a ``tg.fused``. A chain
is converted only when it holds a convolution or an NHWC source: pools and
elementwise ops alone gain less than the two boundary transposes cost, while ops
that read an NHWC source NCHW stride through it one channel at a time (a quantized
ResNet-50's residual adds, 9.4 of its 42 ms, read both operands so).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from xdsl.ir import Block, Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NCHW
from qidao.dialects.tg.types import is_row_major, shape_of

TO_NHWC = (0, 2, 3, 1)
"""``tg.transpose`` perm: NCHW ``[N, C, H, W]`` -> NHWC ``[N, H, W, C]``."""
TO_NCHW = (0, 3, 1, 2)
"""``tg.transpose`` perm: NHWC -> NCHW."""
LAYOUT_DEPENDENT = (tg.TransposeOp, tg.ShapeOp, tg.SliceOp, tg.FusedOp)
"""Users whose result type depends on their operand's layout: a value in another
layout reaches them as a row-major copy (or a rebuilt view); every other tg op
reads it through its strides."""

MIN_VECTOR_CHANNELS = 4
"""The fewest channels in the innermost (vectorized) loop for which an NHWC kernel is
chosen. Measured through the pass (``layout.py``'s docstring): from 4 output
channels on NHWC won by 1.9x to 20x and more; at 2 by 1.1x to 1.9x, at 1 not at
all."""

MIN_DEPTHWISE_CHANNELS = 2
"""The fewest channels for which a depthwise convolution is chosen NHWC (its kernel,
``lowering/conv_depthwise.py``, runs the channels innermost). Measured through the
pass (``layout.py``'s docstring): NHWC won from C = 2 on, by 1.3x to 3.8x, its
boundary copies included; C = 1 is a plain single-channel convolution, left to
``MIN_VECTOR_CHANNELS``."""


def is_depthwise(op: tg.Conv2dOp) -> bool:
    """An NCHW convolution with one input and one output channel per group
    (``groups = C = F``, weight ``[F, 1, KH, KW]``); its NHWC twin is
    ``lowering/conv_depthwise.py``'s kernel."""
    f_out, per_group = shape_of(op.weight.type)[:2]
    channels = shape_of(op.input.type)[1]
    groups = op.groups.value.data
    return op.data_layout() == NCHW and groups == channels == f_out and per_group == 1


def prefers_nhwc(op: Operation) -> bool:
    """The heuristic: NHWC when the loop the NHWC kernel vectorizes is at least
    ``MIN_VECTOR_CHANNELS`` long (``MIN_DEPTHWISE_CHANNELS`` for a depthwise
    convolution).

    That loop is the output channels of one group (``F / groups``) for a
    convolution, the channels ``C`` for a depthwise convolution (``groups = C = F``)
    and for a pool. Narrow heads (``F < 4``) and grouped convolutions with fewer
    than 4 outputs per group (not depthwise) stay NCHW.
    """
    if isinstance(op, tg.Conv2dOp):
        f_out = shape_of(op.weight.type)[0]
        if is_depthwise(op):
            return f_out >= MIN_DEPTHWISE_CHANNELS
        return f_out // op.groups.value.data >= MIN_VECTOR_CHANNELS
    if isinstance(op, tg.Pool2dOp):
        return shape_of(op.input.type)[1] >= MIN_VECTOR_CHANNELS
    return False


def is_anchor(op: Operation) -> bool:
    """An NCHW convolution or pool whose heuristic says NHWC."""
    return (
        isinstance(op, tg.Conv2dOp | tg.Pool2dOp)
        and op.data_layout() == NCHW
        and prefers_nhwc(op)
    )


def is_nhwc_source(op: Operation) -> bool:
    """``tg.transpose [0, 3, 1, 2]`` of a row-major rank-4 tensor: NHWC data
    viewed NCHW."""
    return (
        isinstance(op, tg.TransposeOp)
        and ints(op.perm) == (0, 3, 1, 2)
        and is_row_major(op.input.type)
    )


def is_layout_agnostic(op: Operation) -> bool:
    """An op that computes the same in either layout once its operands are permuted:
    a rank-4 elementwise op (``tg.select`` among them: ONNX's Clip is two; ``tg.cast``:
    a quantized model's dequantization starts with one), an NCHW
    rank-4 batch norm, a rank-4 pad, a rank-4 concat or slice (SqueezeNet's fire
    modules join their two expansions along channels, ShuffleNet's units split
    and join them), or a ``keepdims`` reduction of a rank-4 tensor (its axes
    permute with the rest)."""
    if isinstance(op, tg.ElementwiseOp):
        return len(shape_of(op.results[0].type)) == 4
    if isinstance(op, tg.BatchNormOp):
        return op.data_layout() == NCHW and len(shape_of(op.input.type)) == 4
    if isinstance(op, tg.PadOp):
        return len(shape_of(op.input.type)) == 4
    if isinstance(op, tg.ReduceOp):
        return len(shape_of(op.input.type)) == 4 and op.keepdims is not None
    if isinstance(op, tg.ConcatOp | tg.SliceOp):
        return len(shape_of(op.results[0].type)) == 4
    return False


@dataclass
class Chain:
    """Ops to convert to NHWC together, in block order."""

    ops: list[Operation]

    def worth_converting(self) -> bool:
        """It holds a convolution, or an NHWC source and an op that reads it."""
        if any(isinstance(op, tg.Conv2dOp) for op in self.ops):
            return True
        sources = sum(is_nhwc_source(op) for op in self.ops)
        return 0 < sources < len(self.ops)


def find_chains(block: Block) -> list[Chain]:
    """The chains of ``block`` worth converting (:meth:`Chain.worth_converting`),
    ordered by their first op.

    Members are anchors, NHWC sources and layout-agnostic ops; two members are in one chain when
    one uses a result of the other as data: the chains are the connected components
    of the producer→consumer graph of the members (``nx.connected_components``). A
    convolution's weight and bias are not data: a weight computed by an elementwise
    op (``w - zero_point``) enters the chain as a weight, re-laid-out as HWIO.
    """
    members = [
        op
        for op in block.ops
        if is_anchor(op) or is_nhwc_source(op) or is_layout_agnostic(op)
    ]
    order = {op: index for index, op in enumerate(members)}
    graph = nx.Graph()
    graph.add_nodes_from(members)
    graph.add_edges_from(
        (operand.owner, op)
        for op in members
        for operand in _data_operands(op)
        if operand.owner in order
    )
    components = (
        sorted(c, key=order.__getitem__) for c in nx.connected_components(graph)
    )
    chains = sorted((Chain(ops) for ops in components), key=lambda c: order[c.ops[0]])
    return [chain for chain in chains if chain.worth_converting()]


def _data_operands(op: Operation) -> list[SSAValue]:
    """The operands through which ``op`` joins its producers' chain: a
    convolution's input alone, none of an NHWC source (its input is NHWC: an op
    that made it is not in NCHW order), every operand of any other op."""
    if isinstance(op, tg.Conv2dOp):
        return [op.input]
    if is_nhwc_source(op):
        return []
    return list(op.operands)
