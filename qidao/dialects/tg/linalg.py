"""Contractions: ``tg.matmul`` (2-D and batched) and ``tg.conv2d`` (NCHW or NHWC).

The data layout of ``tg.conv2d``, the pools and ``tg.batch_norm`` is an optional
``layout`` property: omitted means ``"NCHW"`` (channels first, PyTorch's and ONNX's
layout), ``layout = "NHWC"`` means channels last. :func:`layout_of` reads it; the
``layout`` pass chooses it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, expect_length, i64_array, ints, tensor
from qidao.dialects.tg.layout import broadcast_shapes
from qidao.dialects.tg.types import fmt_shape, numel, shape_of, tensor_type

NCHW = "NCHW"
NHWC = "NHWC"


def layout_props(layout: str, op: str) -> dict[str, Attribute]:
    """The ``layout`` property for a constructor: none for the default NCHW."""
    if layout not in (NCHW, NHWC):
        raise VerifyException(f'{op}: layout must be "NCHW" or "NHWC", got "{layout}"')
    return {} if layout == NCHW else {"layout": StringAttr(NHWC)}


def layout_of(attr: StringAttr | None, op: str) -> str:
    """``"NCHW"`` when the property is absent, ``"NHWC"`` when it says so. Spelling
    out the default is rejected, so every op has one canonical form."""
    if attr is None:
        return NCHW
    if attr.data != NHWC:
        raise VerifyException(
            f'{op}: layout must be "NHWC" or omitted (NCHW, the default), got '
            f'"{attr.data}"'
        )
    return NHWC


def layout_name(op: str, layout: str) -> str:
    """How error messages name an op: ``tg.conv2d`` or ``tg.conv2d (NHWC)``."""
    return op if layout == NCHW else f"{op} ({layout})"


PANELS = "panels"
"""The ``rhs_layout`` of a matmul rhs stored in column panels (``MatmulOp``)."""
PANEL_WIDTH = 32
"""The columns of one panel: the width of the CPU's register tile of C."""


def pack_panels(w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``[..., K, N] -> [..., ceil(N / 32), K, 32]``: ``packed[.., p, k, c] = w[..,
    k, 32 p + c]``, the columns past N (a ragged last panel) zero."""
    *batch, k, n = w.shape
    panels = -(-n // PANEL_WIDTH)
    padded = np.zeros((*batch, k, panels * PANEL_WIDTH), w.dtype)
    padded[..., :n] = w
    split = padded.reshape(*batch, k, panels, PANEL_WIDTH)
    return np.ascontiguousarray(split.swapaxes(-3, -2))


def unpack_panels(packed: np.ndarray[Any, Any], n: int) -> np.ndarray[Any, Any]:
    """The ``[..., K, N]`` matrices a panel-packed rhs stands for."""
    *batch, p, k, c = packed.shape
    return packed.swapaxes(-3, -2).reshape(*batch, k, p * c)[..., :n]


@irdl_op_definition
class MatmulOp(TgOp):
    """Matrix product with NumPy ``matmul`` semantics for rank >= 2.

    ``[..., M, K] x [..., K, N] -> [..., M, N]``; the batch dimensions broadcast.

    ```mlir
    %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %z = tg.matmul %x, %p rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x64xf32>
    ```

    ``rhs_layout = "panels"``: each rhs matrix ``B`` (``K x N``, after any batch
    dimensions) is stored as its column panels, ``[..., ceil(N / 32), K, 32]``
    with ``rhs[.., p, k, c] = B[.., k, 32 p + c]``: each panel of 32 columns
    contiguous, the layout the CPU's register tile reads (the ``pack-panels``
    pass makes it from a constant weight, once, at compile time, as ONNX Runtime
    prepacks its GEMM weights). N is the result's: a ragged last panel (N not a
    multiple of 32) holds ``N mod 32`` columns, the rest never read.
    """

    KERNEL_KIND: ClassVar[str] = "matmul"
    FUSION: ClassVar[str] = "anchor"

    name = "tg.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    rhs_layout = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`rhs_layout` `=` $rhs_layout^)? attr-dict `:` "
        "`(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, rhs_layout: str = "", n: int = 0
    ) -> None:
        """``n``: N, for a rhs in panels (default: every panel's 32 columns)."""
        t = self.infer(tensor(lhs), tensor(rhs), rhs_layout, n)
        props = {"rhs_layout": StringAttr(rhs_layout)} if rhs_layout else {}
        super().__init__(operands=[lhs, rhs], result_types=[t], properties=props)

    @property
    def panels(self) -> bool:
        """Whether the rhs is stored in column panels (``[.., ceil(N / 32), K, 32]``)."""
        return self.rhs_layout is not None

    def rhs_matrix_shape(self) -> tuple[int, ...]:
        """The rhs's ``[..., K, N]``, packed or not."""
        shape = shape_of(self.rhs.type)
        if not self.panels:
            return shape
        return (*shape[:-3], shape[-2], shape_of(self.result.type)[-1])

    @staticmethod
    def infer(
        lhs: TensorType[Attribute],
        rhs: TensorType[Attribute],
        rhs_layout: str = "",
        n: int = 0,
    ) -> Attribute:
        a, b = lhs.get_shape(), rhs.get_shape()
        if rhs_layout:
            b = _unpacked_shape(rhs_layout, b, n)
        if len(a) < 2 or len(b) < 2:
            raise VerifyException(
                f"tg.matmul expects operands of rank >= 2, got {fmt_shape(a)} and "
                f"{fmt_shape(b)} (reshape a vector to a 1xK or Kx1 matrix first)"
            )
        if a[-1] != b[-2]:
            raise VerifyException(
                f"tg.matmul: contraction sizes differ: lhs {fmt_shape(a)} has K = "
                f"{a[-1]} but rhs {fmt_shape(b)} has K = {b[-2]}"
            )
        batch = broadcast_shapes(a[:-2], b[:-2])
        if batch is None:
            raise VerifyException(
                f"tg.matmul: batch dimensions {fmt_shape(a[:-2])} and "
                f"{fmt_shape(b[:-2])} are not broadcastable"
            )
        return tensor_type((*batch, a[-2], b[-1]), lhs.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_same_element_type()
        layout = "" if self.rhs_layout is None else self.rhs_layout.data
        if self.rhs_layout is not None and layout != PANELS:
            raise VerifyException(
                f'tg.matmul: rhs_layout must be "{PANELS}" or omitted (K x N, the '
                f'default), got "{layout}"'
            )
        result = shape_of(self.result.type)
        n = result[-1] if result else 0
        self.expect_result_type(
            self.infer(tensor(self.lhs), tensor(self.rhs), layout, n)
        )

    def flops(self) -> int:
        """``2·M·N·K`` per batch: a multiply and an add per term."""
        return 2 * numel(self.result.type) * shape_of(self.lhs.type)[-1]


def _unpacked_shape(layout: str, packed: Sequence[int], n: int) -> tuple[int, ...]:
    """The ``[..., K, N]`` a panel-packed rhs stands for (N: ``n``, or every
    panel's columns when 0), after checking it."""
    if layout != PANELS:
        raise VerifyException(
            f'tg.matmul: rhs_layout must be "{PANELS}" or omitted, got "{layout}"'
        )
    if len(packed) < 3 or packed[-1] != PANEL_WIDTH:
        raise VerifyException(
            f'tg.matmul with rhs_layout = "{PANELS}" takes a rhs [..., ceil(N / '
            f"{PANEL_WIDTH}), K, {PANEL_WIDTH}] (column panels), got "
            f"{fmt_shape(tuple(packed))}"
        )
    panels = packed[-3]
    n = n or panels * PANEL_WIDTH
    if not (panels - 1) * PANEL_WIDTH < n <= panels * PANEL_WIDTH:
        raise VerifyException(
            f"tg.matmul: {panels} panels of {PANEL_WIDTH} columns hold N from "
            f"{(panels - 1) * PANEL_WIDTH + 1} to {panels * PANEL_WIDTH}, but the "
            f"result has N = {n}"
        )
    return (*packed[:-3], packed[-2], n)


def conv_output_size(
    size: int, kernel: int, stride: int, pad: int, dilation: int
) -> int:
    """Output length of a 1-D window sweep: floor((size + pad - d(k-1) - 1)/s) + 1."""
    return (size + pad - dilation * (kernel - 1) - 1) // stride + 1


@irdl_op_definition
class Conv2dOp(TgOp):
    """2-D convolution (cross-correlation), NCHW (default) or NHWC.

    | layout | input          | weight                      | result           |
    |--------|----------------|-----------------------------|------------------|
    | NCHW   | ``[N, C, H, W]`` | ``[F, C / groups, KH, KW]`` (FCHW) | ``[N, F, OH, OW]`` |
    | NHWC   | ``[N, H, W, C]`` | ``[KH, KW, C / groups, F]`` (HWIO) | ``[N, OH, OW, F]`` |

    The NHWC weight is HWIO, what channels-last kernels want: the output channel
    ``F`` is innermost and contiguous, so the loop over ``F`` vectorizes. An FCHW
    weight ``w`` becomes HWIO as ``transpose(w, [2, 3, 1, 0])``.

    ``padding`` is ``[top, left, bottom, right]``; ``groups`` splits the channels:
    the weight has ``C / groups`` input channels, ``F`` must divide by ``groups``.
    The bias ``[F]`` is optional.

    ```mlir
    %y = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %z = tg.conv2d %xt, %wt strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32>
    ```
    """

    KERNEL_KIND: ClassVar[str] = "conv2d"
    FUSION: ClassVar[str] = "anchor"

    name = "tg.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(I64))
    padding = prop_def(DenseArrayBase.constr(I64))
    dilation = prop_def(DenseArrayBase.constr(I64))
    groups = prop_def(IntegerAttr[I64])
    layout = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `strides` `=` $strides `padding` `=` "
        "$padding `dilation` `=` $dilation `groups` `=` $groups "
        "(`layout` `=` $layout^)? attr-dict `:` "
        "`(` type($input) `,` type($weight) (`,` type($bias)^)? `)` `->` "
        "type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        padding: Sequence[int] = (0, 0, 0, 0),
        dilation: Sequence[int] = (1, 1),
        groups: int = 1,
        layout: str = NCHW,
    ) -> None:
        props = layout_props(layout, self.name)
        t = self.infer(
            tensor(input),
            tensor(weight),
            None if bias is None else tensor(bias),
            tuple(strides),
            tuple(padding),
            tuple(dilation),
            groups,
            layout,
        )
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[t],
            properties={
                "strides": i64_array(strides),
                "padding": i64_array(padding),
                "dilation": i64_array(dilation),
                "groups": IntegerAttr(groups, 64),
                **props,
            },
        )

    def data_layout(self) -> str:
        """``"NCHW"`` or ``"NHWC"``."""
        return layout_of(self.layout, self.name)

    @staticmethod
    def infer(
        input: TensorType[Attribute],
        weight: TensorType[Attribute],
        bias: TensorType[Attribute] | None,
        strides: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
        layout: str = NCHW,
    ) -> Attribute:
        op = layout_name("tg.conv2d", layout)
        expect_length(op, "strides", strides, 2)
        expect_length(op, "padding [top, left, bottom, right]", padding, 4)
        expect_length(op, "dilation", dilation, 2)
        if min(strides) < 1 or min(dilation) < 1 or min(padding) < 0:
            raise VerifyException(
                f"{op}: strides and dilation must be >= 1 and padding >= 0, got "
                f"strides {fmt_shape(strides)}, dilation {fmt_shape(dilation)}, "
                f"padding {fmt_shape(padding)}"
            )
        x, w = input.get_shape(), weight.get_shape()
        weight_layout = "FCHW" if layout == NCHW else "HWIO"
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(
                f"{op} expects a rank-4 {layout} input and {weight_layout} weight, "
                f"got {fmt_shape(x)} and {fmt_shape(w)}"
            )
        if layout == NCHW:
            n, c, h, wd = x
            f, cg, kh, kw = w
        else:
            n, h, wd, c = x
            kh, kw, cg, f = w
        if groups < 1 or c % groups or f % groups:
            raise VerifyException(
                f"{op}: groups = {groups} must divide the input channels ({c}) and "
                f"the output channels ({f})"
            )
        if cg != c // groups:
            raise VerifyException(
                f"{op}: weight {fmt_shape(w)} has {cg} input channels per group, "
                f"expected C / groups = {c} / {groups} = {c // groups}"
            )
        if bias is not None and bias.get_shape() != (f,):
            raise VerifyException(
                f"{op}: bias must have shape [{f}] (one per output channel), got "
                f"{fmt_shape(bias.get_shape())}"
            )
        oh = conv_output_size(h, kh, strides[0], padding[0] + padding[2], dilation[0])
        ow = conv_output_size(wd, kw, strides[1], padding[1] + padding[3], dilation[1])
        if oh < 1 or ow < 1:
            raise VerifyException(
                f"{op}: the {kh}x{kw} kernel (dilation {fmt_shape(dilation)}) does not "
                f"fit the {h}x{wd} input with padding {fmt_shape(padding)}"
            )
        out = (n, f, oh, ow) if layout == NCHW else (n, oh, ow, f)
        return tensor_type(out, input.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_same_element_type()
        layout = self.data_layout()
        self.expect_result_type(
            self.infer(
                tensor(self.input),
                tensor(self.weight),
                None if self.bias is None else tensor(self.bias),
                ints(self.strides),
                ints(self.padding),
                ints(self.dilation),
                self.groups.value.data,
                layout,
            )
        )

    def flops(self) -> int:
        """Per output, a multiply and an add per term (``(C_in/groups)·kh·kw``:
        the weight's elements over its ``F`` filters, in either layout), and one
        add for a bias."""
        w = shape_of(self.weight.type)
        filters = w[-1] if self.data_layout() == NHWC else w[0]
        per_output = 2 * (math.prod(w) // filters)
        bias = 1 if self.bias is not None else 0
        return numel(self.result.type) * (per_output + bias)
