"""``tg.grid_sample``: sample an image at runtime coordinates (ONNX ``GridSample``,
``torch.nn.functional.grid_sample``).

The input ``x`` is ``[N, C, D1, .., Dk]`` (k spatial dimensions: 2 for an image, 3
for a volume) and the grid ``[N, O1, .., Ok, k]`` holds, per output position, one
normalized coordinate per spatial dimension, **last dimension first** (``(x, y)``
for an image: ``grid[..., 0]`` walks ``W``). The result is ``[N, C, O1, .., Ok]``:
every channel is sampled at the same points.

A coordinate ``g`` on a dimension of ``d`` entries becomes the position
``u = (g + 1) / 2 * (d - 1)`` with ``align_corners`` (-1 and 1 are the centres of the
first and last entries), else ``u = ((g + 1) * d - 1) / 2`` (-1 and 1 are their
outer edges). ``mode`` picks the value at ``u``:

- ``nearest``: the entry ``round(u)``, rounding half to even (ONNX Runtime's
  ``nearbyint``, onnx.reference's ``np.rint``, PyTorch);
- ``linear``: ``(1 - t) * x[floor(u)] + t * x[floor(u) + 1]`` with
  ``t = u - floor(u)``, separably in every dimension (bilinear, trilinear);
- ``cubic``: Keys' cubic convolution (``A = -0.75``) over the four entries
  ``floor(u) - 1 .. floor(u) + 2``, separably.

``padding_mode`` says what lies outside the input. The borders are ``[0, d - 1]``
with ``align_corners``, else ``[-0.5, d - 0.5]``. In ``nearest`` and ``linear``
mode a position outside the borders is first moved: ``border`` clamps it to ``0``
or ``d - 1``, ``reflection`` reflects it back by the borders as often as needed,
``zeros`` leaves it (``nearest`` rounds before it moves). ``cubic`` keeps the
position. Then each entry read is placed: ``zeros`` reads 0 for an entry outside
``[0, d)``, ``border`` the nearest entry, ``reflection`` the reflected one. The
results are ONNX Runtime's (and PyTorch's for ``linear`` and ``cubic``).
onnx.reference also moves a ``cubic`` position, which changes ``cubic`` with
``border`` or ``reflection`` near the borders; PyTorch's ``nearest`` moves before it
rounds, which changes a ``reflection`` tie (a position ``k + 0.5`` outside).

**Values the grid may hold.** No verifier sees them and a kernel never reads
outside its input, so every grid value has a defined result. A coordinate far
outside ``[-1, 1]`` follows the padding rule (0, the border entry, or its
reflection; a float32 position millions of entries away has no exact reflection,
and reads some entry). A NaN coordinate gives NaN in every mode. An infinite one
reads the border entry with ``border`` padding in ``nearest`` and ``linear`` mode,
0 with ``zeros`` padding in ``nearest`` mode, and NaN otherwise (its weights are
``inf - floor(inf)``).

**Why an op with its own kernel.** Built from gathers, one output element needs
``2^k`` (linear) or ``4^k`` (cubic) gathered ``[N, C, O..]`` tensors plus as many
weight and mask tensors (64 full-size intermediates for a cubic volume). The
kernel computes the coordinates once per output position, and reads each tap
with one ``memref.load`` at a clamped position
(``qidao/passes/kernels/lowering/grid_sample.py``).

Both operands are f32 or f64, of one element type; the frontends cast f16 and a
grid of another type.
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, tensor
from qidao.dialects.tg.types import fmt_shape, shape_of, tensor_type

GRID_SAMPLE_MODES = ("nearest", "linear", "cubic")
"""The interpolation modes of ``tg.grid_sample``."""

GRID_SAMPLE_PADDINGS = ("zeros", "border", "reflection")
"""The padding modes of ``tg.grid_sample``."""

TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
"""The entries a mode reads along each spatial dimension."""


def grid_sample_type(
    name: str, x: TensorType[Attribute], grid: TensorType[Attribute]
) -> TensorType[Attribute]:
    """The row-major result type ``[N, C, O1, .., Ok]``, or an error naming what
    does not fit."""
    shape, grid_shape = shape_of(x), shape_of(grid)
    k = len(shape) - 2
    if k < 1:
        raise VerifyException(
            f"{name} expects an input [N, C, D1, ..] of rank >= 3, got {x}"
        )
    if len(grid_shape) != k + 2 or grid_shape[-1] != k:
        expected = "[" + ", ".join([str(shape[0]), *["O"] * k, str(k)]) + "]"
        raise VerifyException(
            f"{name}: the input {fmt_shape(shape)} has {k} spatial dimension(s), so "
            f"the grid must be {expected}, got {fmt_shape(grid_shape)}"
        )
    if grid_shape[0] != shape[0]:
        raise VerifyException(
            f"{name}: the grid's batch {grid_shape[0]} differs from the input's "
            f"{shape[0]}"
        )
    result = (shape[0], shape[1], *grid_shape[1:-1])
    if 0 in shape[2:] and math.prod(result) > 0:
        raise VerifyException(
            f"{name}: the input {fmt_shape(shape)} has an empty spatial dimension, "
            f"so its {math.prod(result)} result element(s) have no entry to read"
        )
    return tensor_type(result, x.get_element_type())


@irdl_op_definition
class GridSampleOp(TgOp):
    """Sample ``x [N, C, D1..Dk]`` at the normalized coordinates of ``grid
    [N, O1..Ok, k]`` (last spatial dimension first): ``mode`` nearest, linear or
    cubic, ``padding_mode`` zeros, border or reflection, ``align_corners`` 0 or 1
    (module text). The result is ``[N, C, O1..Ok]``.

    ```mlir
    %r = tg.grid_sample %x, %grid mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
    ```
    """

    name = "tg.grid_sample"

    KERNEL_KIND: ClassVar[str] = "other"

    input = operand_def(TensorType)
    grid = operand_def(TensorType)
    mode = prop_def(StringAttr)
    padding_mode = prop_def(StringAttr)
    align_corners = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $grid `mode` `=` $mode `padding_mode` `=` $padding_mode "
        "`align_corners` `=` $align_corners attr-dict `:` `(` type($input) `,` "
        "type($grid) `)` `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        grid: SSAValue,
        mode: str = "linear",
        padding_mode: str = "zeros",
        align_corners: bool = False,
    ) -> None:
        super().__init__(
            operands=[input, grid],
            result_types=[grid_sample_type(self.name, tensor(input), tensor(grid))],
            properties={
                "mode": StringAttr(mode),
                "padding_mode": StringAttr(padding_mode),
                "align_corners": IntegerAttr(int(align_corners), 64),
            },
        )

    def aligned(self) -> bool:
        return self.align_corners.value.data != 0

    def flops(self) -> int:
        """Per output element, one multiply-add per tap and channel (the
        coordinates are shared by the channels)."""
        spatial = len(shape_of(tensor(self.input))) - 2
        taps: int = TAPS.get(self.mode.data, 1) ** spatial
        points = math.prod(shape_of(tensor(self.result, "result")))
        return 2 * taps * points

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_float()
        self.expect_same_element_type()
        mode, padding = self.mode.data, self.padding_mode.data
        if mode not in GRID_SAMPLE_MODES:
            raise VerifyException(
                f"{self.name}: mode '{mode}' is not one of {', '.join(GRID_SAMPLE_MODES)}"
            )
        if padding not in GRID_SAMPLE_PADDINGS:
            raise VerifyException(
                f"{self.name}: padding_mode '{padding}' is not one of "
                f"{', '.join(GRID_SAMPLE_PADDINGS)}"
            )
        if self.align_corners.value.data not in (0, 1):
            raise VerifyException(
                f"{self.name}: align_corners is 0 or 1, got "
                f"{self.align_corners.value.data}"
            )
        self.expect_result_type(
            grid_sample_type(self.name, tensor(self.input), tensor(self.grid))
        )
