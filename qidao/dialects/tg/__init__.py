"""The ``tg`` (tensor graph) dialect: the top level of qidao's tower.

One op per tensor operator, value semantics, static shapes and dtypes. A graph is a
``func.func`` whose body is tg ops ending in ``func.return``. Layout is part of the
type: a strided view such as a transpose is ``tensor<3x2xf32, strided<[1, 3]>>`` (see
``types.py``), so views cost nothing and ``tg.view`` of an impossible layout fails at
compile time. Every op infers its result type in its constructor and checks it in
its verifier. Below tg come the affine loops (``passes/kernels/convert_tg_to_affine.py``).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from qidao.dialects.tg.cast import CastOp
from qidao.dialects.tg.compare import (
    CompareOp,
    EqualOp,
    GreaterEqualOp,
    GreaterOp,
    LessEqualOp,
    LessOp,
    LogicalAndOp,
    LogicalNotOp,
    LogicalOrOp,
    LogicalXorOp,
    NotEqualOp,
    SelectOp,
)
from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.custom import CustomOp, CustomYieldOp
from qidao.dialects.tg.dynamic_indexing import GatherElementsOp, TakeOp
from qidao.dialects.tg.elementwise import (
    BINARY_OPS,
    UNARY_OPS,
    AbsOp,
    AddOp,
    BinaryElementwiseOp,
    CosOp,
    DivOp,
    ElementwiseOp,
    ErfOp,
    ExpOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PowOp,
    ReluOp,
    SigmoidOp,
    SinOp,
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
from qidao.dialects.tg.winograd import WinogradInputOp, WinogradOutputOp

COMPARE_OPS: tuple[type[CompareOp], ...] = (
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
    EqualOp,
    NotEqualOp,
)
LOGICAL_OPS: tuple[type[ElementwiseOp], ...] = (
    LogicalAndOp,
    LogicalOrOp,
    LogicalXorOp,
    LogicalNotOp,
)
ELEMENTWISE_OPS: tuple[type[ElementwiseOp], ...] = (
    *BINARY_OPS,
    *UNARY_OPS,
    *COMPARE_OPS,
    *LOGICAL_OPS,
    SelectOp,
    CastOp,
)
"""Every elementwise op class: one kernel nest over the output, fusable."""

TG = Dialect(
    "tg",
    [
        AbsOp,
        AddOp,
        AvgPool2dOp,
        BatchNormOp,
        BroadcastOp,
        CastOp,
        ConcatOp,
        ConstantOp,
        ContiguousOp,
        Conv2dOp,
        CosOp,
        CustomOp,
        CustomYieldOp,
        DivOp,
        EqualOp,
        ErfOp,
        ExpOp,
        FusedOp,
        GatherElementsOp,
        GatherOp,
        GreaterEqualOp,
        GreaterOp,
        LessEqualOp,
        LessOp,
        LogOp,
        LogicalAndOp,
        LogicalNotOp,
        LogicalOrOp,
        LogicalXorOp,
        MatmulOp,
        MaxOp,
        MaxPool2dOp,
        MinOp,
        MulOp,
        NegOp,
        NotEqualOp,
        PadOp,
        PowOp,
        ReduceMaxOp,
        ReduceMeanOp,
        ReduceSumOp,
        ReluOp,
        ReshapeOp,
        SelectOp,
        SigmoidOp,
        SinOp,
        SliceOp,
        SoftmaxOp,
        SqrtOp,
        SubOp,
        TakeOp,
        TanhOp,
        TransposeOp,
        ViewOp,
        WinogradInputOp,
        WinogradOutputOp,
        YieldOp,
    ],
    [],
)

__all__ = [
    "BINARY_OPS",
    "COMPARE_OPS",
    "ELEMENTWISE_OPS",
    "LOGICAL_OPS",
    "TG",
    "UNARY_OPS",
    "AbsOp",
    "AddOp",
    "AvgPool2dOp",
    "BatchNormOp",
    "BinaryElementwiseOp",
    "BroadcastOp",
    "CastOp",
    "CompareOp",
    "ConcatOp",
    "ConstantOp",
    "ContiguousOp",
    "Conv2dOp",
    "CosOp",
    "CustomOp",
    "CustomYieldOp",
    "DivOp",
    "ElementwiseOp",
    "EqualOp",
    "ErfOp",
    "ExpOp",
    "FusedOp",
    "GatherElementsOp",
    "GatherOp",
    "GreaterEqualOp",
    "GreaterOp",
    "LessEqualOp",
    "LessOp",
    "LogOp",
    "LogicalAndOp",
    "LogicalNotOp",
    "LogicalOrOp",
    "LogicalXorOp",
    "MatmulOp",
    "MaxOp",
    "MaxPool2dOp",
    "MinOp",
    "MulOp",
    "NegOp",
    "NotEqualOp",
    "PadOp",
    "Pool2dOp",
    "PowOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceOp",
    "ReduceSumOp",
    "ReluOp",
    "ReshapeOp",
    "SelectOp",
    "ShapeOp",
    "SigmoidOp",
    "SinOp",
    "SliceOp",
    "SoftmaxOp",
    "SqrtOp",
    "SubOp",
    "TakeOp",
    "TanhOp",
    "TransposeOp",
    "UnaryElementwiseOp",
    "ViewOp",
    "WinogradInputOp",
    "WinogradOutputOp",
    "YieldOp",
]
