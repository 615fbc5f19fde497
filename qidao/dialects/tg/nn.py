"""Neural-network ops: softmax, 2-D pooling and inference batch normalization.

1-D and 3-D pools are not ops of their own: a frontend builds them from the 2-D
ones (``qidao/frontend/onnx/nn.py``: 1-D is a 2-D pool over a unit row, 3-D a 2-D
pool over (H, W) then one over D, since max and mean windows are separable).

Pools and batch normalization take the optional ``layout`` property of
``linalg.py``: omitted is NCHW (channels at dimension 1), ``layout = "NHWC"`` puts
the channels last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import (
    TgOp,
    expect_length,
    i64_array,
    ints,
    normalize_axis,
    tensor,
)
from qidao.dialects.tg.linalg import (
    NCHW,
    conv_output_size,
    layout_name,
    layout_of,
    layout_props,
)
from qidao.dialects.tg.types import fmt_shape, tensor_type


@irdl_op_definition
class SoftmaxOp(TgOp):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (numerically stable).

    ```mlir
    %p = tg.softmax %x axis = 1 : tensor<4x10xf32> -> tensor<4x10xf32>
    ```
    """

    KERNEL_KIND: ClassVar[str] = "rows"

    name = "tg.softmax"
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `axis` `=` $axis attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, axis: int = -1) -> None:
        t = tensor(input)
        normalize_axis(axis, len(t.get_shape()), self.name)
        super().__init__(
            operands=[input],
            result_types=[tensor_type(t.get_shape(), t.get_element_type())],
            properties={"axis": IntegerAttr(axis, 64)},
        )

    def normalized_axis(self) -> int:
        rank = len(tensor(self.input).get_shape())
        return normalize_axis(self.axis.value.data, rank, self.name)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        t = tensor(self.input)
        if not t.get_shape():
            raise VerifyException(f"tg.softmax expects a tensor of rank >= 1, got {t}")
        self.normalized_axis()
        self.expect_result_type(tensor_type(t.get_shape(), t.get_element_type()))


class Pool2dOp(TgOp):
    """A window reduction over ``[N, C, H, W]`` (NCHW, the default) or
    ``[N, H, W, C]`` (``layout = "NHWC"``) input; the result has the same layout."""

    KERNEL_KIND: ClassVar[str] = "pool"

    input = operand_def(TensorType)
    kernel = prop_def(DenseArrayBase.constr(I64))
    strides = prop_def(DenseArrayBase.constr(I64))
    padding = prop_def(DenseArrayBase.constr(I64))
    layout = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def data_layout(self) -> str:
        """``"NCHW"`` or ``"NHWC"``."""
        return layout_of(self.layout, self.name)

    def pool_geometry(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        return ints(self.kernel), ints(self.strides), ints(self.padding)

    def dilations(self) -> tuple[int, ...]:
        """The spacing of the window's taps along H and W."""
        return (1, 1)

    @classmethod
    def infer_pool(
        cls,
        input: TensorType[Attribute],
        kernel: tuple[int, ...],
        strides: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...] = (1, 1),
        layout: str = NCHW,
    ) -> Attribute:
        op = layout_name(cls.name, layout)
        expect_length(op, "kernel", kernel, 2)
        expect_length(op, "strides", strides, 2)
        expect_length(op, "padding [top, left, bottom, right]", padding, 4)
        expect_length(op, "dilation", dilation, 2)
        if min(kernel) < 1 or min(strides) < 1 or min(dilation) < 1 or min(padding) < 0:
            raise VerifyException(
                f"{op}: kernel, strides and dilation must be >= 1 and padding >= 0, "
                f"got kernel {fmt_shape(kernel)}, strides {fmt_shape(strides)}, "
                f"dilation {fmt_shape(dilation)}, padding {fmt_shape(padding)}"
            )
        shape = input.get_shape()
        if len(shape) != 4:
            raise VerifyException(f"{op} expects a rank-4 {layout} input, got {input}")
        if layout == NCHW:
            n, c, h, w = shape
        else:
            n, h, w, c = shape
        # the window's extent d * (k - 1) + 1: more padding than that would make
        # whole windows of padding (ONNX's ceil_mode adds end padding up to it)
        extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
        if any(p >= extent[axis % 2] for axis, p in enumerate(padding)):
            raise VerifyException(
                f"{op}: padding {fmt_shape(padding)} must be smaller than the window "
                f"{fmt_shape(extent)} (kernel {fmt_shape(kernel)}, dilation "
                f"{fmt_shape(dilation)})"
            )
        oh = conv_output_size(
            h, kernel[0], strides[0], padding[0] + padding[2], dilation[0]
        )
        ow = conv_output_size(
            w, kernel[1], strides[1], padding[1] + padding[3], dilation[1]
        )
        if oh < 1 or ow < 1:
            raise VerifyException(
                f"{op}: the window {fmt_shape(kernel)} (dilation "
                f"{fmt_shape(dilation)}) does not fit the {h}x{w} input with padding "
                f"{fmt_shape(padding)}"
            )
        out = (n, c, oh, ow) if layout == NCHW else (n, oh, ow, c)
        return tensor_type(out, input.get_element_type())

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        kernel, strides, padding = self.pool_geometry()
        self.expect_result_type(
            self.infer_pool(
                tensor(self.input),
                kernel,
                strides,
                padding,
                self.dilations(),
                self.data_layout(),
            )
        )


@irdl_op_definition
class MaxPool2dOp(Pool2dOp):
    """Max over each ``kernel`` window of NCHW (or NHWC) input; padding never wins.

    ```mlir
    %p = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
    %q = tg.max_pool2d %xt kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
    ```
    """

    name = "tg.max_pool2d"
    dilation = prop_def(DenseArrayBase.constr(I64))
    assembly_format = (
        "$input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding "
        "`dilation` `=` $dilation (`layout` `=` $layout^)? attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0, 0, 0),
        dilation: Sequence[int] = (1, 1),
        layout: str = NCHW,
    ) -> None:
        strides = tuple(kernel) if strides is None else tuple(strides)
        props = layout_props(layout, self.name)
        t = self.infer_pool(
            tensor(input),
            tuple(kernel),
            strides,
            tuple(padding),
            tuple(dilation),
            layout,
        )
        super().__init__(
            operands=[input],
            result_types=[t],
            properties={
                "kernel": i64_array(kernel),
                "strides": i64_array(strides),
                "padding": i64_array(padding),
                "dilation": i64_array(dilation),
                **props,
            },
        )

    def dilations(self) -> tuple[int, ...]:
        return ints(self.dilation)


@irdl_op_definition
class AvgPool2dOp(Pool2dOp):
    """Mean over each ``kernel`` window of NCHW (or NHWC) input.

    Padded positions count in the divisor only with ``count_include_pad`` (then the
    divisor is always ``kh * kw``). ``dilation`` spaces the taps as for
    ``tg.max_pool2d``; omitted, it is ``[1, 1]``.

    ```mlir
    %p = tg.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
    %q = tg.avg_pool2d %xt kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
    %d = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilation = [2, 2] : tensor<1x4x8x8xf32> -> tensor<1x4x6x6xf32>
    ```
    """

    name = "tg.avg_pool2d"
    count_include_pad = opt_prop_def(UnitAttr)
    dilation = opt_prop_def(DenseArrayBase.constr(I64))
    assembly_format = (
        "$input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding "
        "(`dilation` `=` $dilation^)? (`count_include_pad` $count_include_pad^)? "
        "(`layout` `=` $layout^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0, 0, 0),
        count_include_pad: bool = False,
        layout: str = NCHW,
        dilation: Sequence[int] = (1, 1),
    ) -> None:
        strides = tuple(kernel) if strides is None else tuple(strides)
        props: dict[str, Attribute] = layout_props(layout, self.name)
        t = self.infer_pool(
            tensor(input),
            tuple(kernel),
            strides,
            tuple(padding),
            tuple(dilation),
            layout,
        )
        props |= {
            "kernel": i64_array(kernel),
            "strides": i64_array(strides),
            "padding": i64_array(padding),
        }
        if tuple(dilation) != (1, 1):
            props["dilation"] = i64_array(dilation)
        if count_include_pad:
            props["count_include_pad"] = UnitAttr()
        super().__init__(operands=[input], result_types=[t], properties=props)

    def dilations(self) -> tuple[int, ...]:
        return (1, 1) if self.dilation is None else ints(self.dilation)


@irdl_op_definition
class BatchNormOp(TgOp):
    """Inference batch normalization over the channels:
    ``scale * (x - mean) / sqrt(var + epsilon) + bias``.

    The channels are dimension 1 (NCHW, the default: ``[N, C, ...]``) or, with
    ``layout = "NHWC"``, the last dimension (``[N, ..., C]``).

    ```mlir
    %y = tg.batch_norm %x, %scale, %bias, %mean, %var epsilon = 1.000000e-05 : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
    %z = tg.batch_norm %xt, %scale, %bias, %mean, %var epsilon = 1.000000e-05 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
    ```
    """

    name = "tg.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    epsilon = prop_def(FloatAttr[Float32Type])
    layout = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $var `epsilon` `=` $epsilon "
        "(`layout` `=` $layout^)? attr-dict `:` type($input) `,` type($scale) `,` "
        "type($bias) `,` type($mean) `,` type($var) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        scale: SSAValue,
        bias: SSAValue,
        mean: SSAValue,
        var: SSAValue,
        epsilon: float = 1e-5,
        layout: str = NCHW,
    ) -> None:
        t = tensor(input)
        super().__init__(
            operands=[input, scale, bias, mean, var],
            result_types=[tensor_type(t.get_shape(), t.get_element_type())],
            properties={
                "epsilon": FloatAttr(epsilon, Float32Type()),
                **layout_props(layout, self.name),
            },
        )

    def data_layout(self) -> str:
        """``"NCHW"`` or ``"NHWC"``."""
        return layout_of(self.layout, self.name)

    def channel_dim(self) -> int:
        """The dimension of the channels: 1 for NCHW, the last one for NHWC."""
        rank = len(tensor(self.input).get_shape())
        return 1 if self.data_layout() == NCHW else rank - 1

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_same_element_type()
        t = tensor(self.input)
        shape = t.get_shape()
        layout = self.data_layout()
        op = layout_name(self.name, layout)
        if len(shape) < 2:
            dims = "N, C, ..." if layout == NCHW else "N, ..., C"
            raise VerifyException(
                f"{op} expects an input of rank >= 2 ({dims}), got {t}"
            )
        channels = shape[self.channel_dim()]
        for name in ("scale", "bias", "mean", "var"):
            param = tensor(getattr(self, name))
            if param.get_shape() != (channels,):
                raise VerifyException(
                    f"{op}: {name} must have shape [{channels}] (one per "
                    f"channel of {t}), got {fmt_shape(param.get_shape())}"
                )
        self.expect_result_type(tensor_type(shape, t.get_element_type()))
