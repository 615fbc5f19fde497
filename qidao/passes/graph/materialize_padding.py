"""``materialize-padding``: ``conv2d(x, padding=p) -> conv2d(pad(x, p), padding=0)``
for compute-bound NHWC convolutions.

Why: a padded convolution's kernel tests, for every window tap, whether the tap
falls inside the input (``affine.if`` in ``lowering/conv_nhwc.py``). The test sits
between the window loops and the channel loops, so no schedule can tile or reorder
across it: the register tile of the default conv schedule
(``qidao/compiler/targets/cpu/defaults/conv.py``: output pixels x output channels accumulated
in vector registers over ``kh, kw, c``) needs the loops ``ow, kh, kw, c, f``
perfectly nested. With the padding in a ``tg.pad`` of its own the convolution's
loops have no test left. The pad is one copy of the input; when the input is the
NCHW -> NHWC transpose made by ``layout``, that transpose is a view, and the pad
kernel reads through it, so transposing and padding are one copy kernel.

The rule (documented, and tested at both sides): a ``tg.conv2d`` is rewritten when

- its layout is NHWC and some padding amount is > 0 (NCHW kernels keep the tests:
  they do not vectorize over channels, so no tile needs the loops free);
- the conv register tile takes its output channels: ungrouped, ``F`` a multiple
  of 8 or at least 16 (a ragged last panel is peeled); grouped, each group's
  ``Fg = F / groups`` a multiple of 16 (a depthwise convolution has ``Fg = 1``);
- it is compute-bound: it does at least ``MIN_MACS_PER_COPIED_ELEMENT`` (32;
  ``MIN_MACS_GROUPED``, 16, when grouped) multiply-adds per element the pad
  copies, ``OH * OW * KH * KW * Fg / (Hp * Wp)`` (a 3x3 convolution to 64
  channels does ~540; a 1x1 convolution to 16 channels only 16, and the copy would
  cost more than the tests);
- grouped, ``OW`` is a multiple of one of 4 .. 8 (``GROUPED_TILE_WIDTHS``): a tile
  width for every ``Fg`` above, so the tile applies and the copy is not lost.

The ungrouped threshold was 64 and the channels whole ``<16 x float>`` vectors
until the tile took other widths; then stems and stride-2 3x3 convolutions to
16-28 channels (28-54 multiply-adds per copied element) were found keeping their
padding test. One thread, medians of 200, µs, the test in the kernel -> the pad
and the tile (PyTorch): ``C -> F @ HxW / stride`` 3 -> 16 @ 224 / 2 1541 -> 148
(123), 3 -> 24 @ 224 / 2 504 -> 264 (234), 3 -> 24 @ 224 / 1 2475 -> 1323 (786),
16 -> 16 @ 56 / 2 56 -> 39 (61), 16 -> 24 @ 56 / 2 80 -> 65 (79), 24 -> 20 @ 28
/ 2 31 -> 23 (65).

Grouped convolutions (RegNet's: groups of 16 output channels) get the tile per
group (``conv.py``), and their kernel without it (the padding test in, LLVM
vectorizing ``f``) is slow, so the copy pays at less work than the dense rule
asks: RegNet's 3x3 grouped convolutions at stride 2 do only 28 to 34
multiply-adds per copied element. Measured (one thread, AMD EPYC znver5, a busy
2-core machine shared with other runs: medians of 7 interleaved rounds, twice;
us, the padding test in the kernel vs the pad + the tiled kernel, ``C@HxW/stride
g groups``, Fg 16, ratio in parentheses): 32@56x56/2 g2 (34) 142-154 vs 72-73, of
which the pad 9; 64@28x28/2 g4 (31) 61-73 vs 36-38; 128@14x14/2 g8 (28) 31-35 vs
18; 256@7x7/2 g16 (28) 16-18 vs 12-15; 128@7x7/1 g8 (87) 28-29 vs 16; a padded
1x1 convolution (16): 64@14x14 9.4 vs 6.5, 32@56x56 182 vs 170. Where no tile
width divides ``OW`` the pad is pure cost: 64@5x5/2 g4 (``OW`` 3) 1.8 vs 3.8,
256@4x4/2 g16 (``OW`` 2) 4.0 vs 6.4, and a 3- or 2-wide tile does not win it back
(2.0 and 5.5), so those keep their test.

Depthwise convolutions (``groups = C = F``, ``lowering/conv_depthwise.py``) keep
their padding test: it costs once per output pixel and tap for a whole block of 16
channels, and no tile needs their loops free. Measured (one thread, medians of 3,
us: padding test in the kernel vs pad + the branch-free kernel with its channel
blocks outermost, both scheduled): stride 1, 3x3, 16 channels on 112x112 53 vs
54, 32 on 56x56 27 vs 28, 96 on 56x56 98 vs 106, 144 on 56x56 336 vs 332, 192 on
28x28 66 vs 64, 384 on 14x14 36 vs 31, 960 on 7x7 38 vs 28; stride 2 (the pad
copies the 4x larger input): 96 on 112x112 246 vs 579, 144 on 56x56 54 vs 207, 576
on 14x14 22 vs 45. The copy costs about what the tests do at stride 1 and far more
at stride 2, so the whole-vectors condition above (their ``Fg`` is 1) leaves them
alone.

Everything else is left alone, so a second run changes nothing (the rewritten
convolution has no padding left).

Before:
```mlir
%y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x6x6x16xf32>
```
After:
```mlir
%x_padded = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0] value = 0.000000e+00 : tensor<1x6x6x8xf32> -> tensor<1x8x8x8xf32>
%y = tg.conv2d %x_padded, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x6x6x16xf32>
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
from qidao.dialects.tg.types import shape_of

VECTOR_WIDTH = 16
"""A grouped convolution's output channels per group must come in whole ``<16 x
float>`` vectors."""
HALF_WIDTH = 8
"""An ungrouped one's in whole ``<8 x float>`` vectors, or at least one ``<16 x
float>`` (the tile peels a ragged last panel)."""
MIN_MACS_PER_COPIED_ELEMENT = 32
"""Multiply-adds the convolution must do per element of the padded copy."""
MIN_MACS_GROUPED = 16
"""The same for a grouped convolution: its untiled kernel is slower (see above)."""
GROUPED_TILE_WIDTHS = range(4, 9)
"""A grouped convolution's ``OW`` must be a multiple of one of these: the widths
the conv tile takes for every ``Fg`` that is a multiple of 16."""


def should_materialize(op: tg.Conv2dOp) -> bool:
    """The rule of the module docstring: an NHWC, padded convolution with whole
    vectors of output channels per group that does enough work per copied
    element (and, grouped, has a row of output pixels the tile divides)."""
    padding = ints(op.padding)
    if op.data_layout() != NHWC or not any(padding):
        return False
    kh, kw, _, f = shape_of(op.weight.type)
    groups = op.groups.value.data
    fg = f // groups  # one group's output channels: F itself when ungrouped
    if groups > 1 and fg % VECTOR_WIDTH:
        return False
    if groups == 1 and f % HALF_WIDTH and f < VECTOR_WIDTH:
        return False
    _, h, w, _ = shape_of(op.input.type)
    _, oh, ow, _ = shape_of(op.result.type)
    if groups > 1 and not any(ow % width == 0 for width in GROUPED_TILE_WIDTHS):
        return False
    top, left, bottom, right = padding
    copied = (h + top + bottom) * (w + left + right)
    macs = oh * ow * kh * kw * fg
    least = MIN_MACS_PER_COPIED_ELEMENT if groups == 1 else MIN_MACS_GROUPED
    return macs >= least * copied


class MaterializeConvPadding(RewritePattern):
    """``conv2d(x, padding=p) -> conv2d(pad(x, p), padding=0)`` under the rule."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.Conv2dOp, rewriter: PatternRewriter) -> None:
        if not should_materialize(op):
            return
        top, left, bottom, right = ints(op.padding)
        pad = tg.PadOp(op.input, (0, top, left, 0), (0, bottom, right, 0))
        hint = op.input.name_hint
        pad.result.name_hint = None if hint is None else f"{hint}_padded"
        conv = tg.Conv2dOp(
            pad.result,
            op.weight,
            op.bias,
            strides=ints(op.strides),
            padding=(0, 0, 0, 0),
            dilation=ints(op.dilation),
            groups=op.groups.value.data,
            layout=NHWC,
        )
        conv.result.name_hint = op.result.name_hint
        conv.attributes.update(op.attributes)  # select-conv-algo's qd.algo
        rewriter.replace(op, [pad, conv], [conv.result])


@dataclass(frozen=True)
class MaterializePaddingPass(ModulePass):
    """Move the padding of compute-bound NHWC convolutions into a ``tg.pad``."""

    name = "materialize-padding"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            MaterializeConvPadding(), apply_recursively=False
        ).rewrite_module(op)
