"""``select-conv-algo``: each NHWC convolution gets an algorithm — direct loops, a
matmul (1x1), im2col + matmul, or Winograd F(4x4, 3x3) or F(2x2, 3x3) — by a rule
or by measuring.

The same convolution can be computed in several ways, each fastest somewhere (the
book's "same model, two kernel choices"):

=========  ==========================================================================
algorithm  the tg it becomes (``x`` NHWC, ``w`` HWIO ``[KH, KW, C, F]``)
=========  ==========================================================================
direct     ``tg.conv2d`` as it is: the NHWC loops (``lowering/conv_nhwc.py``) and
           their register-tile schedule
matmul     1x1, stride 1, no padding: ``matmul(x, view(w, [C, F])) (+ bias)``, the
           matmul kernel and its schedule (B packed, an 8 x 32 register tile)
im2col     ``concat`` of the KH * KW shifted (strided) windows of the padded input
           along channels, ``[N, OH, OW, KH*KW*C]``, ``matmul`` with ``view(w,
           [KH*KW*C, F])`` (+ bias): one copy of KH*KW times the input, then a matmul
winograd   3x3, stride 1, dilation 1, a constant weight: ``pad`` to whole 4x4 tiles,
           ``tg.winograd_input`` ``[T, 36, C]``, a batched ``matmul`` of its
           ``[36, T, C]`` view with the
           filter transformed at compile time ``[36, C, F]``, ``tg.winograd_output``
           (+ bias) ``[N, 4TH, 4TW, F]``, a ``slice`` back to ``[N, OH, OW, F]``
           (``qidao/dialects/tg/winograd.py``): 4x fewer multiplications, rounding
           slightly different from the direct sum (about 1e-6 relative in float32);
           or the same with 2x2 tiles (``size = 2``, ``winograd_size``, below)
=========  ==========================================================================

Options: ``algo`` — ``"auto"`` (the default rule below), ``"benchmark"`` (every
applicable algorithm compiled and timed on this CPU for each distinct convolution,
the fastest kept; ``qidao/compiler/conv_algo.py``, registered with
:func:`set_measure`), or one algorithm, used wherever
it applies (the others stay direct); ``threads`` — what ``"benchmark"`` times with.

The rule (``auto``): a matmul (1x1) or im2col when the output is at most
``MATMUL_MAX_PIXELS`` pixels over more than one row; else Winograd where it
applies, both channel counts are at least ``WINOGRAD_MIN_CHANNELS`` and there are
at least ``WINOGRAD_MIN_TILES`` 4x4 tiles; else a matmul (1x1) or im2col when the
weight is at least ``MATMUL_MIN_WEIGHT_BYTES`` (half of L2) and the output has
more than one row; everything else direct. The direct
kernel tiles one output row at a time and reads the whole weight per row: ConvNeXt's
last downsampling (2x2, stride 2, 384 -> 768 channels, 3x3 output, a 4.7 MB weight)
took 810 µs direct, 9 rows of one matmul tile ~400 (one thread). Measured (``qidao bench conv3x3 --backends
torch qidao:algo=direct qidao:algo=winograd`` and the same for other shapes), AMD
EPYC with AVX-512, one thread, a convolution + ReLU on an NCHW input (so each qidao
time includes the NHWC round trip), medians in µs:

===================  =======  ======  ========  ======  ======
3x3, stride 1        PyTorch  direct  winograd  im2col  tiles
===================  =======  ======  ========  ======  ======
64 -> 64, 56 x 56    2268     2465    1331      3352    196
128 -> 128, 28 x 28  2289     2424    850       2888    49
256 -> 256, 14 x 14  2214     2227    1324      2474    16
512 -> 512, 7 x 7    3488     2320    5081      3085    4
32 -> 32, 56 x 56    658      673     313       987     196
16 -> 16, 56 x 56    226      193     121       263     196
===================  =======  ======  ========  ======  ======

At 7 x 7 the four tiles leave the batched matmul 4 rows deep, and the transformed
filter (36 x 512 x 512 floats, 37.7 MB) is read for them alone. For 1 x 1
convolutions (ResNet's 64 -> 256 at 56 x 56, 256 -> 64, 512 -> 128 at 28 x 28,
1024 -> 256 at 14 x 14, 2048 -> 512 at 7 x 7) direct was at least as fast as the
matmul and im2col in every case (1097 vs 1352 and 1325 µs for 256 -> 64): the
direct kernel's register tile is already a matmul's, without the extra kernel
boundary, so the rule keeps them direct. Not where the weight is past L2: the
direct kernel then streams it from L3 or memory once per output row, and on an
Intel Xeon (2 MiB of L2 per core, a shared L3 far slower per core than the EPYC's)
ResNet-50's last stage (7 x 7 outputs; 4 MiB 1x1 weights, a 9 MiB 3x3) ran its
convolutions at 32-40 GFLOP/s direct; as matmuls and im2col, which read the weight
once per column panel, the float32 model went from 97.9 to 78.2 ms (one thread,
``qidao profile``). On the EPYC the 3x3 one measured 2320 µs direct against 3085
as im2col (above): a rule that knows each cache's bandwidth would keep it direct
there. With the weights packed at compile time (``pack-panels``) the matmul
wins from 1 MiB on (Xeon, one thread, a 1x1 convolution + ReLU with its layout
copies, caches flushed between calls, µs, direct vs matmul/im2col): 256 -> 1024 on
14 x 14 977 vs 876, 1024 -> 256 798 vs 754, 1024 -> 512 (2 MiB) 3027 vs 1683, 512
-> 1024 at stride 2 from 28 x 28 3089 vs 1854, 2048 -> 512 on 7 x 7 1620 vs 838;
below it direct keeps its lead (64 -> 256 on 56 x 56: 988 vs 1183).

Winograd's tile: F(4x4, 3x3) streams a transformed filter of 36 points (9 MiB for
256 -> 256 channels) through a batched matmul of one row per 4x4 tile; on 14 x 14
pixels that is 16 rows, so the matmul is bound by reading the filter, which in a
whole model comes from memory (every layer's weights do not stay in the caches).
F(2x2, 3x3) streams 16 points (4.2 MiB) for 49 rows, at 2.25x fewer
multiplications than direct instead of 4x. ``winograd_size`` takes F(2x2) when
F(4x4)'s filter is ``WINOGRAD_F2_MIN_FILTER_BYTES`` or more and it has fewer than
``WINOGRAD_F4_MIN_TILES`` tiles. Xeon, one thread, a 3x3 convolution + ReLU with
its layout copies, caches flushed between calls, µs (ONNX Runtime): 256 -> 256 on
14 x 14, F(4x4) 2177, im2col 2166, F(2x2) 1493 (1738); 512 -> 512 on 14 x 14, im2col
7429, F(2x2) 5000 (5607); with warm caches F(4x4) and F(2x2) measured the same
(846 and 809). ResNet-50's third stage (five of these) takes F(2x2): their batched
matmuls 7.85 -> 5.40 ms in the model (``qidao profile``, one thread).

Every convolution this pass sees gets a ``qd.algo`` attribute, ``"<algorithm>:
<why>"``, on the op that computes its result (``tg.conv2d``, ``tg.matmul`` or
``tg.winograd_output``), so ``compiled.stats["conv_algo"]`` and ``qidao compile
--stats`` can say which algorithm each convolution got and why. NCHW convolutions
(those the ``layout`` pass left alone, e.g. depthwise or narrow ones) and grouped
convolutions stay direct.

Before (``select-conv-algo{algo="winograd"}``):
```mlir
%y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x8x8x16xf32>
```
After:
```mlir
%p = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0] value = 0.000000e+00 : tensor<1x8x8x16xf32> -> tensor<1x10x10x16xf32>
%v = tg.winograd_input %p tiles = [2, 2] : tensor<1x10x10x16xf32> -> tensor<4x36x16xf32>
%t = tg.transpose %v perm = [1, 0, 2] : tensor<4x36x16xf32> -> tensor<36x4x16xf32, strided<[16, 576, 1]>>
%u = tg.constant dense<...> : tensor<36x16x16xf32>
%m = tg.matmul %t, %u : (tensor<36x4x16xf32, strided<[16, 576, 1]>>, tensor<36x16x16xf32>) -> tensor<36x4x16xf32>
%y = tg.winograd_output %m tiles = [1, 2, 2] {qd.algo = "winograd: ..."} : (tensor<36x4x16xf32>) -> tensor<1x8x8x16xf32>
```
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qidao.dialects import tg
from qidao.dialects.attributes import ALGO_ATTR
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
from qidao.dialects.tg.types import dtype_name, element_of, shape_of
from qidao.dialects.tg.winograd import TILE, tiles_for, transform, transform_filter
from qidao.passes.graph._layout_chains import LAYOUT_DEPENDENT

ALGORITHMS = ("direct", "matmul", "im2col", "winograd")
"""Every algorithm, the default first."""
MODES = ("auto", "benchmark", *ALGORITHMS)
"""What the ``algo`` option takes."""
WINOGRAD_MIN_CHANNELS = 16
"""The rule's threshold for Winograd, on input and output channels."""
WINOGRAD_MIN_TILES = 16
"""The rule's threshold for Winograd on the number of 4x4 output tiles (N * TH *
TW): below it the batched matmul is too shallow to pay for the transforms."""
WINOGRAD_F4_MIN_TILES = 32
"""F(4x4, 3x3) needs this many 4x4 tiles (the batched matmul's rows) when its
transformed filter is ``WINOGRAD_F2_MIN_FILTER_BYTES`` or more; with fewer,
F(2x2, 3x3) (``winograd_size``)."""
WINOGRAD_F2_MIN_FILTER_BYTES = 2**20
"""... from this size of F(4x4)'s transformed filter (36 points x C x F) on: it
no longer stays in L2 from one call to the next."""
MATMUL_MIN_WEIGHT_BYTES = 2**20
"""The rule's threshold on the weight for a matmul (1x1) or im2col over the direct
kernel: from half of L2 (2 MiB on the Xeon measured; the EPYC's is 1 MiB) the
direct kernel streams the weight from L3 or memory once per output row, while
the matmul reads it once per column panel, packed at compile time
(``pack-panels``)."""
MATMUL_MAX_PIXELS = 12
"""The rule's threshold for a matmul (1x1) or im2col on the output pixels (N * OH *
OW), over more than one output row: as many rows as the matmul schedule keeps in
one register tile (``ONE_TILE_ROWS``), so the weight is read once."""


def applicable(op: tg.Conv2dOp) -> dict[str, str]:
    """Algorithm -> ``""`` when it can compute ``op``, else why not."""
    why: dict[str, str] = {"direct": ""}
    if op.data_layout() != NHWC:
        reason = "an NCHW convolution (the layout pass kept it)"
        return {**why, **{a: reason for a in ALGORITHMS[1:]}}
    if op.groups.value.data != 1:
        reason = "a grouped convolution"
        return {**why, **{a: reason for a in ALGORITHMS[1:]}}
    kh, kw, _, _ = shape_of(op.weight.type)
    strides, padding, dilation = ints(op.strides), ints(op.padding), ints(op.dilation)
    why["im2col"] = ""
    why["matmul"] = (
        ""
        if (kh, kw) == (1, 1) and strides == (1, 1) and not any(padding)
        else "not a 1x1, stride-1, unpadded convolution"
    )
    if (kh, kw) != (3, 3) or strides != (1, 1) or dilation != (1, 1):
        why["winograd"] = "not a 3x3, stride-1, undilated convolution"
    elif not isinstance(op.weight.owner, tg.ConstantOp):
        why["winograd"] = "the weight is not a constant (its transform is made once)"
    else:
        why["winograd"] = ""
    return why


def rule(op: tg.Conv2dOp, can: dict[str, str]) -> tuple[str, str]:
    """The ``auto`` choice and why (module docstring)."""
    _, _, c, f = shape_of(op.weight.type)
    n, oh, ow, _ = shape_of(op.result.type)
    if n * oh > 1 and n * oh * ow <= MATMUL_MAX_PIXELS:
        algo = next((a for a in ("matmul", "im2col") if not can[a]), None)
        if algo is not None:
            return algo, (
                f"rule: {n * oh * ow} output pixels, one matmul tile: the weight is "
                f"read once (direct reads it once per output row, {n * oh} times)"
            )
    tiles = n * tiles_for(oh) * tiles_for(ow)
    if can["winograd"]:
        why = f"winograd does not apply ({can['winograd']})"
    elif min(c, f) < WINOGRAD_MIN_CHANNELS:
        why = f"{c} -> {f} channels, too few for winograd"
    elif tiles < WINOGRAD_MIN_TILES:
        why = f"{tiles} 4x4 tiles, too few for winograd"
    else:
        return "winograd", f"rule: 3x3 stride 1, {c} -> {f} channels, {tiles} tiles"
    weight = math.prod(shape_of(op.weight.type)) * 4
    if n * oh > 1 and weight >= MATMUL_MIN_WEIGHT_BYTES:
        algo = next((a for a in ("matmul", "im2col") if not can[a]), None)
        if algo is not None:
            return algo, (
                f"rule: {why}; a {weight / 2**20:.1f} MiB weight, past L2: the matmul "
                f"reads it once, direct once per output row ({n * oh} times)"
            )
    return "direct", f"rule: {why}"


def winograd_size(op: tg.Conv2dOp) -> tuple[int, str]:
    """The output tile side, 4 or 2, Winograd uses for ``op``, and why (module
    docstring): F(2x2, 3x3) when F(4x4)'s transformed filter is at least
    ``WINOGRAD_F2_MIN_FILTER_BYTES`` and it has fewer than
    ``WINOGRAD_F4_MIN_TILES`` tiles, so that the batched matmul streams 16 points
    of filter instead of 36 for four times the rows."""
    _, _, c, f = shape_of(op.weight.type)
    n, oh, ow, _ = shape_of(op.result.type)
    tiles = n * tiles_for(oh) * tiles_for(ow)
    itemsize = np.dtype(dtype_name(element_of(op.weight.type))).itemsize
    filter_bytes = transform(TILE).points * c * f * itemsize
    if tiles < WINOGRAD_F4_MIN_TILES and filter_bytes >= WINOGRAD_F2_MIN_FILTER_BYTES:
        small = n * tiles_for(oh, 2) * tiles_for(ow, 2)
        return 2, (
            f"F(2x2, 3x3): {tiles} 4x4 tiles would stream a "
            f"{filter_bytes / 2**20:.1f} MiB transformed filter; {small} 2x2 tiles "
            f"stream {filter_bytes * 16 / 36 / 2**20:.1f} MiB"
        )
    return TILE, "F(4x4, 3x3)"


def signature(op: tg.Conv2dOp) -> str:
    """What a measurement of ``op`` depends on: shapes, geometry, bias."""
    x, w = shape_of(op.input.type), shape_of(op.weight.type)
    parts = [
        "x" + "x".join(map(str, x)),
        "w" + "x".join(map(str, w)),
        "s" + ",".join(map(str, ints(op.strides))),
        "p" + ",".join(map(str, ints(op.padding))),
        "d" + ",".join(map(str, ints(op.dilation))),
        "bias" if op.bias is not None else "nobias",
    ]
    return "conv2d-nhwc " + " ".join(parts)


Chooser = Callable[[tg.Conv2dOp, dict[str, str]], tuple[str, str]]
Measure = Callable[[tg.Conv2dOp, dict[str, str], int], tuple[str, str]]
"""``f(conv, applicable, threads) -> (algorithm, why)``: ``algo="benchmark"``'s
timer."""
_measure: Measure | None = None


def set_measure(measure: Measure) -> None:
    """Register ``algo="benchmark"``'s timer. Passes sit below the compiler and
    cannot compile and run code themselves; ``qidao.compiler.compile`` registers
    ``qidao.compiler.conv_algo.measured_choice`` when it is imported."""
    global _measure
    _measure = measure


@dataclass(frozen=True)
class SelectConvAlgoPass(ModulePass):
    """Give every NHWC convolution an algorithm (module docstring)."""

    name = "select-conv-algo"

    algo: str = "auto"
    threads: int = 1

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.algo not in MODES:
            raise ValueError(
                f"select-conv-algo: algo must be one of {', '.join(MODES)}, got "
                f"'{self.algo}'"
            )
        choose = self._chooser()
        for conv in [o for o in op.walk() if isinstance(o, tg.Conv2dOp)]:
            if conv.parent_op() is not None and isinstance(
                conv.parent_op(), tg.FusedOp
            ):
                continue
            can = applicable(conv)
            algo, why = choose(conv, can)
            rewrite(conv, algo, f"{algo}: {why}")

    def _chooser(self) -> Chooser:
        if self.algo == "auto":
            return rule
        if self.algo == "benchmark":
            measure = _measure
            if measure is None:
                raise ValueError(
                    'select-conv-algo: algo="benchmark" times code, which a pass '
                    "cannot compile: import qidao (qidao.compiler.compile registers "
                    "the timer)"
                )
            threads = self.threads
            return lambda conv, can: measure(conv, can, threads)
        forced = self.algo

        def force(conv: tg.Conv2dOp, can: dict[str, str]) -> tuple[str, str]:
            if can[forced]:
                return "direct", f"algo={forced} asked, but {can[forced]}"
            return forced, f"algo={forced}"

        return force


def rewrite(op: tg.Conv2dOp, algo: str, why: str) -> Operation:
    """Replace ``op`` by ``algo``'s ops (``direct``: keep it); the op computing the
    result gets ``qd.algo = why``. Returns that op."""
    builders: dict[str, Callable[[tg.Conv2dOp], list[Operation]]] = {
        "matmul": _as_matmul,
        "im2col": _im2col,
        "winograd": _winograd,
    }
    if algo == "direct":
        op.attributes[ALGO_ATTR] = StringAttr(why)
        return op
    if algo == "winograd":
        why = f"{why}; {winograd_size(op)[1]}"
    ops = builders[algo](op)
    last = ops[-1]
    anchor = next(o for o in reversed(ops) if isinstance(o, _ANCHORS))
    anchor.attributes[ALGO_ATTR] = StringAttr(why)
    hint = op.result.name_hint
    for new in ops:
        for result in new.results:
            if result.name_hint is None and hint is not None:
                result.name_hint = f"{hint}_{algo}"
    last.results[0].name_hint = hint
    uses = list(op.result.uses)
    Rewriter.replace_op(op, ops, [last.results[0]])
    if last.results[0].type != op.result.type:  # a cropping slice: a strided view
        _copy_for_layout_users(last, uses)
    return anchor


def _copy_for_layout_users(view: Operation, uses: list[Use]) -> None:
    """Users whose type depends on their operand's layout (``func.return``, views,
    ``tg.fused``, non-tg ops) read the strided view through one row-major copy; the
    other tg ops read it in place."""
    copy: tg.ContiguousOp | None = None
    for use in uses:
        user = use.operation
        if isinstance(user, LAYOUT_DEPENDENT) or user.dialect_name() != "tg":
            if copy is None:
                copy = tg.ContiguousOp(view.results[0])
                hint = view.results[0].name_hint
                copy.result.name_hint = hint
                view.results[0].name_hint = None if hint is None else f"{hint}_crop"
                Rewriter.insert_op(copy, InsertPoint.after(view))
            user.operands[use.index] = copy.result


_ANCHORS = (tg.MatmulOp, tg.WinogradOutputOp)


def _with_bias(op: tg.Conv2dOp, ops: list[Operation]) -> list[Operation]:
    """``ops`` then ``+ bias`` when ``op`` has one."""
    if op.bias is not None:
        ops.append(tg.AddOp(ops[-1].results[0], op.bias))
    return ops


def _as_matmul(op: tg.Conv2dOp) -> list[Operation]:
    """``matmul(x, view(w, [C, F]))``: a 1x1 convolution's batch dims ``N, H``
    broadcast against the plain matrix."""
    _, _, c, f = shape_of(op.weight.type)
    w = tg.ViewOp(op.weight, (c, f))
    return _with_bias(op, [w, tg.MatmulOp(op.input, w.result)])


def _padded(op: tg.Conv2dOp, high_extra: tuple[int, int] = (0, 0)) -> list[Operation]:
    """``[tg.pad]`` of the input by the convolution's padding (plus
    ``high_extra`` rows and columns at the bottom and right), or ``[]``."""
    top, left, bottom, right = ints(op.padding)
    bottom, right = bottom + high_extra[0], right + high_extra[1]
    if not any((top, left, bottom, right)):
        return []
    return [tg.PadOp(op.input, (0, top, left, 0), (0, bottom, right, 0))]


def _im2col(op: tg.Conv2dOp) -> list[Operation]:
    kh, kw, c, f = shape_of(op.weight.type)
    n, oh, ow, _ = shape_of(op.result.type)
    sh, sw = ints(op.strides)
    dh, dw = ints(op.dilation)
    ops = _padded(op)
    x: SSAValue = ops[-1].results[0] if ops else op.input
    windows: list[SSAValue] = []
    for i in range(kh):
        for j in range(kw):
            start = (0, i * dh, j * dw, 0)
            stop = (n, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1, c)
            window = tg.SliceOp(x, start, stop, (1, sh, sw, 1))
            ops.append(window)
            windows.append(window.result)
    w = tg.ViewOp(op.weight, (kh * kw * c, f))
    if len(windows) == 1:  # a 1x1 kernel: its one window, no copy
        patches = windows[0]
    else:
        concat = tg.ConcatOp(windows, 3)
        ops.append(concat)
        patches = concat.result
    ops += [w, tg.MatmulOp(patches, w.result)]
    return _with_bias(op, ops)


def _winograd(op: tg.Conv2dOp) -> list[Operation]:
    producer = op.weight.owner
    assert isinstance(producer, tg.ConstantOp)
    size, _ = winograd_size(op)
    n, oh, ow, f = shape_of(op.result.type)
    th, tw = tiles_for(oh, size), tiles_for(ow, size)
    _, h, w, _ = shape_of(op.input.type)
    top, left, bottom, right = ints(op.padding)
    # the tiles read m TH + 2 rows (and m TW + 2 columns) of the padded input
    extra = (size * th + 2 - (h + top + bottom), size * tw + 2 - (w + left + right))
    ops = _padded(op, extra)
    x: SSAValue = ops[-1].results[0] if ops else op.input
    v = tg.WinogradInputOp(x, (th, tw), size)
    by_point = tg.TransposeOp(v.result, (1, 0, 2))  # [P, T, C], a view
    u = tg.ConstantOp.from_numpy(transform_filter(producer.to_numpy(), size))
    m = tg.MatmulOp(by_point.result, u.result)
    y = tg.WinogradOutputOp(m.result, op.bias, (n, th, tw), size)
    ops += [v, by_point, u, m, y]
    if (size * th, size * tw) != (oh, ow):
        ops.append(tg.SliceOp(y.result, (0, 0, 0, 0), (n, oh, ow, f)))
    return ops


def algo_report(module: builtin.ModuleOp) -> dict[str, str]:
    """Each convolution's ``qd.algo`` (``"<algorithm>: <why>"``) by the name of the
    value it computes, for ``compiled.stats["conv_algo"]``."""
    report: dict[str, str] = {}
    for o in module.walk():
        attr = o.attributes.get(ALGO_ATTR)
        if isinstance(attr, StringAttr) and o.results:
            name = o.results[0].name_hint or f"conv{len(report)}"
            for suffix in (*(f"_{a}" for a in ALGORITHMS), "_nhwc"):
                name = name.removesuffix(suffix)
            report[name] = attr.data
    return report
