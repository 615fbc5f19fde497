"""``layout``: convolution chains run channels-last (NHWC) where that vectorizes.

    conv2d(x, W) -> relu -> conv2d(_, W2)      (NCHW)
      ==>  transpose(x, [0, 2, 3, 1]) -> conv2d NHWC (W as HWIO) -> relu
           -> conv2d NHWC (W2 as HWIO) -> transpose(_, [0, 3, 1, 2])

Why: the NCHW convolution kernel sums over ``c, kh, kw`` into one scalar per output
element and does not vectorize; the NHWC kernel (``lowering/conv_nhwc.py``) keeps
the output channels ``f`` innermost, contiguous in the output and in the HWIO
weight, and LLVM turns that loop into AVX-512 multiply-adds.

Measured with ``qidao.compile`` (one thread, AMD EPYC znver5 with AVX-512, medians;
a shared, noisy machine, so ranges where runs differed). A 3x3 convolution, padding
1, bias, on a 1x64x56x56 input, 64 -> 64 channels (0.23 GFLOP):

| kernel                                        | time          | GFLOP/s |
|-----------------------------------------------|---------------|---------|
| NCHW ``n, f, oh, ow, c, kh, kw``              | 45.7-91 ms    | 5.1-2.6 |
| NHWC ``n, oh, ow, f, kh, kw, c`` (scalar sum) | 49.9 ms       | 4.7     |
| NHWC ``n, oh, ow, kh, kw, c, f`` (chosen)     | 2.18-2.27 ms  | 106     |
| NCHW graph after this pass (the NHWC kernel,  | 2.7-2.9 ms    | 85      |
| the transposes and the output copy)           |               |         |

The NHWC kernel alone is never slower (56x56, C -> F: 16 -> 16 11x, 3 -> 64 6.0x,
64 -> 10 14x, 3 -> 8 4.6x, 64 -> 4 3.7x, 64 -> 2 1.9x, 64 -> 1 1.0x); through the
pass, with its boundary copies, 64 -> 4 gained 8.8x, 4 -> 4 2.6x, 1 -> 4 1.9x,
2 -> 2 1.1x and 64 -> 1 1.0x. Pools alone lose through the pass (max pool 3x3/2 of
1x64x112x112: 0.54 ms NCHW, 0.68 ms NHWC with the transposes), though their NHWC
kernel alone is 3-5x faster: they gain only inside a chain whose boundaries a
convolution pays for.

Depthwise convolutions (``groups = C = F``, MobileNet's and EfficientNet's 3x3 and
5x5 ones) have their own NHWC kernel, the channels innermost
(``lowering/conv_depthwise.py``). The NCHW kernel sums 9 taps into a scalar per
output element behind a padding test per tap; through the pass (a dw conv + relu
alone, its boundary copies included; stride 1, padding 1, 112x112 / 56x56): C = 1
47 -> 15 us / 17 -> 9.1 us, 2: 88 -> 25 / 27 -> 21, 4: 164 -> 63 / 45 -> 33, 8: 368
-> 97 / 83 -> 46, 16: 683 -> 281 / 159 -> 75, 32: 1293 -> 646 / 314 -> 182. The
kernels alone (NCHW with its padding test vs NHWC in a chain, first NHWC version):
C = 32 on 112x112 1293 vs 290 us, 96 on 112x112 stride 2 981 vs 306, 144 on 56x56
1380 vs 331, 192 on 28x28 305 vs 92, 384 on 14x14 233 vs 59, 960 on 7x7 145 vs 44.
Without the test, on a padded NCHW copy, the NCHW kernel is competitive (MobileNetV2
before: 144 on 56x56 140 us, 960 on 7x7 94 us), but that copy, read from a chain's
NHWC output, cost more than the convolution (the 144-channel pad: 307 us).

The heuristic (``_layout_chains.prefers_nhwc``): a convolution prefers NHWC when its
vectorized loop, the output channels of one group ``F / groups``, has at least
``MIN_VECTOR_CHANNELS = 4`` iterations; a depthwise convolution when its channels
``C >= MIN_DEPTHWISE_CHANNELS = 2``; a pool when its channels ``C >= 4``. Narrow
heads (``F < 4``, a single-channel convolution among them) and grouped
convolutions with fewer than 4 outputs per group stay NCHW, and a chain is
converted only when it holds a convolution.

Rules:
- A **chain** is a maximal producer→consumer-connected set of NCHW convolutions and
  pools that prefer NHWC and of layout-agnostic ops between them: rank-4
  elementwise ops (`tg.select` too), rank-4 batch norms, rank-4 pads (the amounts and value of any
  dims, permuted: ONNX exports pad before depthwise convolutions), rank-4 concats
  and slices (their axis or bounds permuted: SqueezeNet's fire modules concatenate
  two expansions along channels; left NCHW, the concat wrote NCHW and the next
  pool and the classifier read it through a transposed view, the pool
  unvectorized) and
  ``reduce_sum``/``reduce_mean``/``reduce_max`` with ``keepdims`` over any axes,
  moved to their NHWC places (global pools ``[2, 3]`` -> ``[1, 2]``, squeeze-and-
  excitation's among them; training batch norm's statistics ``[0, 2, 3]`` ->
  ``[0, 1, 2]``, which NCHW read through the chain's strided output one
  non-vectorized element at a time: 12% of a small CNN's training step). Any other
  op stops it (an op the pass does not understand, a conv or pool that prefers
  NCHW, an op already NHWC, a reduction without ``keepdims``). Only chains that hold a convolution are converted (see
  ``_layout_chains.py``). Before, a pad between a 1x1 and a depthwise conv split
  MobileNetV2 into a chain per conv: the pads read a transposed view (27% of its
  time) and the next conv read the pad's NCHW copy through another.
- A **channel shuffle** between two chains (ShuffleNet's reshape to ``[N, G, C/G,
  H, W]``, transpose of ``G`` and ``C/G``, reshape back) is rewritten after the
  chains into one NHWC copy that the next chain reads row-major
  (``_layout_shuffle.py``).
- **Inputs** of a chain (values made outside it) enter through one
  ``tg.transpose [0, 2, 3, 1]`` each (a view, no copy). A convolution weight
  ``[F, C/g, KH, KW]`` becomes HWIO ``[KH, KW, C/g, F]``: a ``tg.constant`` is
  re-laid-out at compile time into a new constant; any other weight is
  ``tg.contiguous(tg.transpose(w, [2, 3, 1, 0]))``, a row-major copy, so the
  kernel's innermost loop reads it contiguously. Biases and batch norm parameters
  ``[C]`` stay as they are. The data input of a depthwise convolution enters as a
  row-major copy (``tg.contiguous`` of the transpose): its kernel's innermost loop
  runs over the channels, which the view would stride by ``H * W``. The data
  input of any other convolution, a pool, batch norm, pad or reduction,
  and an elementwise operand of the op's full result shape, is transposed, whatever
  its shape: after a global pool at batch 1 a ``[1, C, 1, 1]`` is a feature map,
  not a bias. Only a *broadcast* operand of an elementwise op (its shape differs
  from the result's) is laid out as a broadcast: a per-channel ``[C, 1, 1]`` or
  ``[1, C, 1, 1]`` becomes a ``tg.view`` ``[C]``, one that is 1 everywhere stays,
  any other is viewed at rank 4 and transposed. So every op of a chain keeps its
  rank-4 result, in NHWC order.
- **Inside** a chain the converted ops feed each other directly: no transposes
  between them.
- **Outputs** (chain values used outside it) leave through one
  ``tg.transpose [0, 3, 1, 2]`` each (a view): tg compute ops read it through its
  strides; users whose type depends on their operand's layout (``func.return``,
  views, reshapes, ``tg.fused``, non-tg ops) get it as one row-major copy
  (``tg.contiguous``), so no user's type changes.
- An output whose outside user is a permute back to channels-last
  (``transpose(v, [0, 2, 3, 1])``: ConvNeXt's and Swin's convolutions before a
  layer norm over the channels, the next int8 convolution's input) gives that
  permute's users the chain's NHWC value itself, row-major: tg compute ops (whose
  result types do not depend on their operands' layout) read it as it is, views
  (an int8 convolution's taps, ``tg.slice``) are rebuilt on it, their strides
  recomputed, and their users in turn; a user that cannot take it (``tg.fused``,
  ``func.return``) keeps the permute, of a row-major NCHW copy. Before, the
  users read a strided view of an NCHW copy (the copy, and a layer norm whose
  rows were not contiguous and stayed scalar loops: ConvNeXt's 3 such layer
  norms took 234 µs).
- **NHWC sources** (``tg.transpose [0, 3, 1, 2]`` of a row-major tensor: data
  channels last already, the int8 convolutions' outputs) anchor chains too: their
  NHWC value is their input, no op. A quantized ResNet-50 (U8S8, QDQ) read each
  such view NCHW in its residual adds, 9.4 of 42 ms at one thread; with the
  requantizations, the adds and the next convolutions' inputs in one NHWC chain
  the block tails fuse into one kernel each, and the 1x1 convolutions' input
  copies are gone (42 -> 39 ms; measured beside a test run, so noisy).
- Likewise an output flattened to tokens, ``transpose(reshape(v, [N, C, H*W]),
  [0, 2, 1])`` (Swin's patch embedding), read only by tg compute ops: they read
  ``reshape(nhwc, [N, H*W, C])``, a view of the chain's row-major result.
- A boundary transpose that meets an earlier transpose the other way
  (``transpose(transpose(y, [0, 3, 1, 2]), [0, 2, 3, 1])``, e.g. a model that
  transposed its NHWC input to NCHW) cancels with ``simplify``'s
  ``TransposeOfTranspose`` pattern (a depthwise input's copy of the now row-major
  ``y`` then goes too, ``ContiguousOfRowMajor``); dead transposes and weights are
  erased.
- Idempotent: a second run finds no NCHW anchors left in converted chains and
  changes nothing.

Before:
```mlir
%0 = tg.conv2d %x, %w1, %b1 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
%1 = tg.relu %0 : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32>
%2 = tg.conv2d %1, %w2 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
func.return %2 : tensor<1x8x6x6xf32>
```
After (weights that are graph inputs are copied to HWIO; a ``tg.constant`` weight
would become a new HWIO constant instead):
```mlir
%x_nhwc = tg.transpose %x perm = [0, 2, 3, 1] : tensor<1x8x6x6xf32> -> tensor<1x6x6x8xf32, strided<[288, 6, 1, 36]>>
%w1_hwio_view = tg.transpose %w1 perm = [2, 3, 1, 0] : tensor<8x8x3x3xf32> -> tensor<3x3x8x8xf32, strided<[3, 1, 9, 72]>>
%w1_hwio = tg.contiguous %w1_hwio_view : tensor<3x3x8x8xf32, strided<[3, 1, 9, 72]>> -> tensor<3x3x8x8xf32>
%w2_hwio_view = tg.transpose %w2 perm = [2, 3, 1, 0] : tensor<8x8x3x3xf32> -> tensor<3x3x8x8xf32, strided<[3, 1, 9, 72]>>
%w2_hwio = tg.contiguous %w2_hwio_view : tensor<3x3x8x8xf32, strided<[3, 1, 9, 72]>> -> tensor<3x3x8x8xf32>
%0 = tg.conv2d %x_nhwc, %w1_hwio, %b1 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32, strided<[288, 6, 1, 36]>>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
%1 = tg.relu %0 : tensor<1x6x6x8xf32> -> tensor<1x6x6x8xf32>
%2 = tg.conv2d %1, %w2_hwio strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<1x6x6x8xf32>
%3 = tg.transpose %2 perm = [0, 3, 1, 2] : tensor<1x6x6x8xf32> -> tensor<1x8x6x6xf32, strided<[288, 1, 48, 8]>>
%4 = tg.contiguous %3 : tensor<1x8x6x6xf32, strided<[288, 1, 48, 8]>> -> tensor<1x8x6x6xf32>
func.return %4 : tensor<1x8x6x6xf32>
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import VerifyException

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
from qidao.dialects.tg.types import element_of, is_row_major, shape_of
from qidao.passes.graph._layout_chains import (
    LAYOUT_DEPENDENT,
    TO_NCHW,
    TO_NHWC,
    Chain,
    find_chains,
    is_depthwise,
    is_nhwc_source,
)
from qidao.passes.graph._layout_shuffle import shuffle_channels_last
from qidao.passes.graph._simplify_patterns import (
    ContiguousOfRowMajor,
    TransposeOfTranspose,
)

TO_HWIO = (2, 3, 1, 0)
"""``tg.transpose`` perm: FCHW weight ``[F, C/g, KH, KW]`` -> HWIO
``[KH, KW, C/g, F]``."""

OperandFn = Callable[[SSAValue, str], SSAValue]
"""How ``_nhwc_op`` gets an operand: ``(old operand, role) -> NHWC operand``, role
``"data"`` (a rank-4 tensor in the chain's layout), ``"packed"`` (the same,
row-major: the input of a depthwise convolution, whose innermost loop runs over
its channels), ``"broadcast"`` (an elementwise operand that broadcasts to a
different, rank-4 result shape), ``"weight"`` or ``"param"`` (``[C]``)."""


@dataclass(frozen=True)
class LayoutPass(ModulePass):
    """Convert chains of NCHW convolutions to NHWC where the heuristic says so."""

    name = "layout"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        graphs = [f for f in op.walk() if isinstance(f, func.FuncOp)]
        for graph in graphs:
            for block in graph.body.blocks:
                rewrite = _BlockRewrite(block)
                for chain in find_chains(block):
                    rewrite.convert(chain)
                rewrite.cancel_transposes()
                shuffle_channels_last(block, _retarget)


@dataclass
class _BlockRewrite:
    """Converts the chains of one block, then cancels the transposes that meet."""

    block: Block
    entered: dict[tuple[SSAValue, str], SSAValue] = field(default_factory=dict)
    entering: list[tg.TransposeOp] = field(default_factory=list)
    packed: list[tg.ContiguousOp] = field(default_factory=list)
    maybe_dead: list[Operation] = field(default_factory=list)
    last_arg_op: Operation | None = None

    def convert(self, chain: Chain) -> None:
        members = set(chain.ops)
        nhwc: dict[SSAValue, SSAValue] = {}  # chain value -> its NHWC value

        def operand(value: SSAValue, role: str) -> SSAValue:
            if value in nhwc:
                return nhwc[value]
            if (value, role) not in self.entered:  # shared by every chain
                self.entered[value, role] = self.enter(value, role)
            return self.entered[value, role]

        sources = [op for op in chain.ops if is_nhwc_source(op)]
        for source in sources:  # NHWC already: its input, as it is
            nhwc[source.results[0]] = source.operands[0]
        for old in chain.ops:
            if old in sources:
                continue
            new = _nhwc_op(old, operand)
            _check_nhwc(old, new)
            self.block.insert_op_before(new, old)
            for old_result, new_result in zip(old.results, new.results, strict=True):
                new_result.name_hint = _hint(old_result, "nhwc")
                nhwc[old_result] = new_result

        for old in chain.ops:
            if old in sources:  # users outside keep reading the source's view
                continue
            for result in old.results:
                outside = [u for u in result.uses if u.operation not in members]
                if outside:
                    self.leave(result, nhwc[result], outside)
        for old in reversed(chain.ops):
            if old in sources:
                self.maybe_dead.append(old)
                continue
            self.maybe_dead.extend(
                o.owner for o in old.operands if isinstance(o.owner, Operation)
            )
            old.detach()
            old.erase()

    # ---- chain inputs ------------------------------------------------------------

    def enter(self, value: SSAValue, role: str) -> SSAValue:
        """``value``, made outside the chain, as an NHWC op reads it in ``role``.

        The new ops go right after ``value``'s definition, so every chain of the
        block can share them."""
        if role == "weight":
            return self.weight(value)
        if role == "param":
            return value
        source = value
        if role == "broadcast":
            shape = shape_of(value.type)
            padded = (1,) * (4 - len(shape)) + shape
            if all(d == 1 for d in padded):
                return value  # broadcasts the same way in both layouts
            if padded[0] == padded[2] == padded[3] == 1:  # per channel: [C, 1, 1]
                return self.insert(_view(value, (padded[1],)), value, "c")
            if len(shape) < 4:
                source = self.insert(_view(value, padded), value, "4d")
        t = tg.TransposeOp(source, TO_NHWC)
        self.entering.append(t)
        view = self.insert(t, value, "nhwc")
        if role == "packed":
            copy = tg.ContiguousOp(view)
            self.packed.append(copy)
            return self.insert(copy, value, "nhwc_packed")
        return view

    def weight(self, w: SSAValue) -> SSAValue:
        """An FCHW convolution weight as HWIO: a new constant, or a row-major copy."""
        producer = w.owner
        if isinstance(producer, tg.ConstantOp):
            hwio = tg.ConstantOp.from_numpy(np.transpose(producer.to_numpy(), TO_HWIO))
            self.maybe_dead.append(producer)
            return self.insert(hwio, w, "hwio")
        t = tg.TransposeOp(w, TO_HWIO)
        self.entering.append(t)
        view = self.insert(t, w, "hwio_view")
        return self.insert(tg.ContiguousOp(view), w, "hwio")

    def insert(self, op: Operation, like: SSAValue, tag: str) -> SSAValue:
        """Insert ``op`` after the definition of ``like`` (or of what ``op`` reads,
        when that came later), named after ``like``."""
        source = op.operands[0] if op.operands else like
        producer = source.owner
        if isinstance(producer, Operation):
            self.block.insert_op_after(op, producer)
            if producer is self.last_arg_op:
                self.last_arg_op = op
        elif self.last_arg_op is not None:  # a block argument: at the top, in order
            self.block.insert_op_after(op, self.last_arg_op)
            self.last_arg_op = op
        else:
            first = self.block.first_op
            assert first is not None
            self.block.insert_op_before(op, first)
            self.last_arg_op = op
        op.results[0].name_hint = _hint(like, tag)
        return op.results[0]

    # ---- chain outputs -----------------------------------------------------------

    def leave(self, old: SSAValue, new: SSAValue, uses: list[Use]) -> None:
        """Give the users outside the chain ``new`` transposed back to NCHW."""
        back = tg.TransposeOp(new, TO_NCHW)
        back.result.name_hint = old.name_hint
        producer = new.owner
        assert isinstance(producer, Operation)
        self.block.insert_op_after(back, producer)
        copy: SSAValue | None = None
        for use in uses:
            user = use.operation
            if _is_to_nhwc(user):  # the model's own permute to channels-last
                _retarget(user.results[0], new)  # only its layout differs
                if not user.results[0].uses:
                    user.operands[use.index] = back.result
                    self.maybe_dead.extend((user, back))  # erased in that order
                    continue
            tokens = _tokens_last(user)
            if tokens is not None:  # flatten(2) then transpose: Swin's patches
                flat = tg.ReshapeOp(new, shape_of(tokens.result.type))
                self.block.insert_op_after(flat, producer)
                flat.result.name_hint = tokens.result.name_hint
                tokens.result.replace_all_uses_with(flat.result)
                tokens.detach()
                tokens.erase()
                user.operands[use.index] = back.result
                user.detach()
                user.erase()
                self.maybe_dead.append(back)
                continue
            value: SSAValue = back.result
            if is_row_major(back.result.type):  # [N, C, 1, 1]: the same bytes
                pass
            elif isinstance(user, LAYOUT_DEPENDENT) or user.dialect_name() != "tg":
                if copy is None:
                    contiguous = tg.ContiguousOp(back.result)
                    self.block.insert_op_after(contiguous, back)
                    contiguous.result.name_hint = old.name_hint
                    copy = contiguous.result
                value = copy
            user.operands[use.index] = value

    # ---- cleanup -----------------------------------------------------------------

    def cancel_transposes(self) -> None:
        """``transpose(transpose(y, [0, 3, 1, 2]), [0, 2, 3, 1]) -> y`` for the
        transposes this pass made (simplify's pattern), then erase what is dead; a
        packed copy of a ``y`` that is row-major is ``y`` itself."""
        for t in self.entering:
            if t.parent is None:
                continue
            inner = t.input.owner
            TransposeOfTranspose().match_and_rewrite(t, PatternRewriter(t))
            if isinstance(inner, Operation):
                self.maybe_dead.append(inner)
        for copy in self.packed:
            if copy.parent is not None:
                ContiguousOfRowMajor().match_and_rewrite(copy, PatternRewriter(copy))
        for op in self.maybe_dead:
            if op.parent is not None and isinstance(op, tg.TransposeOp | tg.ConstantOp):
                _erase_if_dead(op)


def _is_to_nhwc(user: Operation) -> bool:
    """``user`` is ``transpose(v, [0, 2, 3, 1])``: the permute to channels-last
    (of a chain output ``v``: the model's own, or the next int8 convolution's)."""
    return isinstance(user, tg.TransposeOp) and ints(user.perm) == TO_NHWC


def _retarget(old: SSAValue, new: SSAValue) -> None:
    """Give the users of ``old`` the value ``new``: the same shape and elements,
    another layout (row-major where ``old`` is a strided view).

    A tg compute op reads any layout: it takes ``new`` as it is. A view (slice,
    transpose, view, reshape, contiguous) whose result type depends on its
    operand's layout is rebuilt on ``new`` and its own users retargeted in turn
    (an int8 convolution's taps, sliced from the permute); where the rebuilt
    view's type is the old one's, the old view just takes ``new``. Any other user
    (``tg.fused``, ``tg.shape``, another dialect's op, a view that has no
    equivalent on ``new``) keeps reading ``old``."""
    for use in list(old.uses):
        user = use.operation
        if user.dialect_name() == "tg" and not isinstance(user, LAYOUT_DEPENDENT):
            user.operands[use.index] = new
            continue
        rebuilt = _view_on(user, new)
        if rebuilt is None:
            continue
        if rebuilt.results[0].type == user.results[0].type:
            user.operands[use.index] = new
            rebuilt.erase()
            continue
        block = user.parent_block()
        assert block is not None
        block.insert_op_before(rebuilt, user)
        rebuilt.results[0].name_hint = user.results[0].name_hint
        _retarget(user.results[0], rebuilt.results[0])
        if not user.results[0].uses:
            user.detach()
            user.erase()


def _view_on(user: Operation, new: SSAValue) -> Operation | None:
    """``user``, a view, rebuilt on ``new``; None for any other op or where
    ``new``'s layout has no such view."""
    try:
        if isinstance(user, tg.SliceOp):
            starts, stops, steps = (ints(a) for a in (user.start, user.stop, user.step))
            return tg.SliceOp(new, starts, stops, steps)
        if isinstance(user, tg.TransposeOp):
            return tg.TransposeOp(new, ints(user.perm))
        if isinstance(user, tg.ViewOp | tg.ReshapeOp | tg.ContiguousOp):
            return type(user)(new, shape_of(user.results[0].type))
    except VerifyException:
        return None
    return None


def _tokens_last(user: Operation) -> tg.TransposeOp | None:
    """When ``user`` flattens a chain output's spatial dims (``reshape [N, C, H,
    W] -> [N, C, H*W]``) for one ``transpose [0, 2, 1]`` only tg compute ops read
    (Swin's and ViT-style patch embeddings): that transpose, which is the chain's
    NHWC value reshaped to ``[N, H*W, C]``; else None."""
    if not isinstance(user, tg.ReshapeOp) or user.result.uses.get_length() != 1:
        return None
    n, c, h, w = shape_of(user.input.type)
    if shape_of(user.result.type) != (n, c, h * w):
        return None
    (use,) = list(user.result.uses)
    tokens = use.operation
    if not isinstance(tokens, tg.TransposeOp) or ints(tokens.perm) != (0, 2, 1):
        return None
    if all(
        not isinstance(u.operation, LAYOUT_DEPENDENT)
        and u.operation.dialect_name() == "tg"
        for u in tokens.result.uses
    ):
        return tokens
    return None


def _nhwc_op(old: Operation, operand: OperandFn) -> Operation:
    """The NHWC twin of a chain op, its operands given by ``operand(value, role)``."""
    if isinstance(old, tg.Conv2dOp):
        return tg.Conv2dOp(
            operand(old.input, "packed" if is_depthwise(old) else "data"),
            operand(old.weight, "weight"),
            None if old.bias is None else operand(old.bias, "param"),
            strides=ints(old.strides),
            padding=ints(old.padding),
            dilation=ints(old.dilation),
            groups=old.groups.value.data,
            layout=NHWC,
        )
    if isinstance(old, tg.MaxPool2dOp):
        kernel, strides, padding = old.pool_geometry()
        x = operand(old.input, "data")
        return tg.MaxPool2dOp(x, kernel, strides, padding, old.dilations(), NHWC)
    if isinstance(old, tg.AvgPool2dOp):
        kernel, strides, padding = old.pool_geometry()
        x = operand(old.input, "data")
        include_pad = old.count_include_pad is not None
        return tg.AvgPool2dOp(
            x, kernel, strides, padding, include_pad, NHWC, old.dilations()
        )
    if isinstance(old, tg.BatchNormOp):
        params = [operand(p, "param") for p in old.operands[1:]]
        scale, bias, mean, var = params
        x = operand(old.input, "data")
        eps = old.epsilon.value.data
        return tg.BatchNormOp(x, scale, bias, mean, var, eps, NHWC)
    if isinstance(old, tg.PadOp):
        low, high = old.amounts()
        return tg.PadOp(
            operand(old.input, "data"),
            [low[i] for i in TO_NHWC],
            [high[i] for i in TO_NHWC],
            old.pad_value(),
        )
    if isinstance(old, tg.ConcatOp):  # the same axis, at its NHWC position
        inputs = [operand(v, "data") for v in old.inputs]
        return tg.ConcatOp(inputs, TO_NHWC.index(old.axis.value.data))
    if isinstance(old, tg.SliceOp):
        bounds = [ints(b) for b in (old.start, old.stop, old.step)]
        start, stop, step = ([b[i] for i in TO_NHWC] for b in bounds)
        return tg.SliceOp(operand(old.input, "data"), start, stop, step)
    if isinstance(old, tg.ReduceOp):  # keepdims: the same axes, in NHWC positions
        axes = sorted(TO_NHWC.index(a) for a in old.reduced_axes())
        return type(old)(operand(old.input, "data"), axes, keepdims=True)
    full = shape_of(old.results[0].type)

    def role(value: SSAValue) -> str:
        return "data" if shape_of(value.type) == full else "broadcast"

    if isinstance(old, tg.BinaryElementwiseOp):
        lhs, rhs = operand(old.lhs, role(old.lhs)), operand(old.rhs, role(old.rhs))
        return type(old)(lhs, rhs)
    if isinstance(old, tg.SelectOp):
        return tg.SelectOp(*(operand(v, role(v)) for v in old.operands))
    if isinstance(old, tg.CastOp):
        return tg.CastOp(operand(old.input, "data"), element_of(old.result.type))
    assert isinstance(old, tg.UnaryElementwiseOp), old.name
    return type(old)(operand(old.input, "data"))


def _check_nhwc(old: Operation, new: Operation) -> None:
    """The invariant of the rewrite: ``new`` computes ``old``'s result in NHWC."""
    assert type(new) is type(old), f"layout: {old.name} became {new.name}"
    before = shape_of(old.results[0].type)
    after = shape_of(new.results[0].type)
    expected = tuple(before[i] for i in TO_NHWC)
    assert after == expected, (
        f"layout: the NHWC {new.name} has shape {list(after)}, expected "
        f"{list(expected)} (the NCHW {list(before)} transposed)"
    )


def _view(value: SSAValue, shape: tuple[int, ...]) -> Operation:
    """``tg.view`` to ``shape``, or ``tg.reshape`` when the layout has no such view."""
    try:
        return tg.ViewOp(value, shape)
    except VerifyException:
        return tg.ReshapeOp(value, shape)


def _hint(value: SSAValue, tag: str) -> str | None:
    return None if value.name_hint is None else f"{value.name_hint}_{tag}"


def _erase_if_dead(op: Operation) -> None:
    if all(not r.uses for r in op.results):
        inputs = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
        op.detach()
        op.erase()
        for producer in inputs:
            if isinstance(producer, tg.TransposeOp) and producer.parent is not None:
                _erase_if_dead(producer)
