"""The ``tg`` (tensor graph) dialect: the top level of qidao's tower.

One op per tensor operator, value semantics, static shapes and dtypes. A graph is a
``func.func`` whose body is tg ops ending in ``func.return``. Layout is part of the
type: a strided view such as a transpose is ``tensor<3x2xf32, strided<[1, 3]>>`` (see
``types.py``), so views cost nothing and ``tg.view`` of an impossible layout fails at
compile time. Every op infers its result type in its constructor and checks it in
its verifier. Below tg come the affine loops (``passes/convert_tg_to_affine.py``).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.elementwise import (
    BINARY_OPS,
    UNARY_OPS,
    AddOp,
    BinaryElementwiseOp,
    DivOp,
    ErfOp,
    ExpOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    ReluOp,
    SigmoidOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryElementwiseOp,
)
from qidao.dialects.tg.fused import FusedOp, YieldOp
from qidao.dialects.tg.indexing import ConcatOp, GatherOp, SliceOp
from qidao.dialects.tg.layout_ops import (
    BroadcastOp,
    ContiguousOp,
    ReshapeOp,
    ShapeOp,
    TransposeOp,
    ViewOp,
)
from qidao.dialects.tg.linalg import Conv2dOp, MatmulOp
from qidao.dialects.tg.nn import (
    AvgPool2dOp,
    BatchNormOp,
    MaxPool2dOp,
    Pool2dOp,
    SoftmaxOp,
)
from qidao.dialects.tg.pad import PadOp
from qidao.dialects.tg.reduce import ReduceMaxOp, ReduceMeanOp, ReduceOp, ReduceSumOp

TG = Dialect(
    "tg",
    [
        AddOp,
        AvgPool2dOp,
        BatchNormOp,
        BroadcastOp,
        ConcatOp,
        ConstantOp,
        ContiguousOp,
        Conv2dOp,
        DivOp,
        ErfOp,
        ExpOp,
        FusedOp,
        GatherOp,
        LogOp,
        MatmulOp,
        MaxOp,
        MaxPool2dOp,
        MinOp,
        MulOp,
        NegOp,
        PadOp,
        ReduceMaxOp,
        ReduceMeanOp,
        ReduceSumOp,
        ReluOp,
        ReshapeOp,
        SigmoidOp,
        SliceOp,
        SoftmaxOp,
        SqrtOp,
        SubOp,
        TanhOp,
        TransposeOp,
        ViewOp,
        YieldOp,
    ],
    [],
)

__all__ = [
    "BINARY_OPS",
    "TG",
    "UNARY_OPS",
    "AddOp",
    "AvgPool2dOp",
    "BatchNormOp",
    "BinaryElementwiseOp",
    "BroadcastOp",
    "ConcatOp",
    "ConstantOp",
    "ContiguousOp",
    "Conv2dOp",
    "DivOp",
    "ErfOp",
    "ExpOp",
    "FusedOp",
    "GatherOp",
    "LogOp",
    "MatmulOp",
    "MaxOp",
    "MaxPool2dOp",
    "MinOp",
    "MulOp",
    "NegOp",
    "PadOp",
    "Pool2dOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceOp",
    "ReduceSumOp",
    "ReluOp",
    "ReshapeOp",
    "ShapeOp",
    "SigmoidOp",
    "SliceOp",
    "SoftmaxOp",
    "SqrtOp",
    "SubOp",
    "TanhOp",
    "TransposeOp",
    "UnaryElementwiseOp",
    "ViewOp",
    "YieldOp",
]
