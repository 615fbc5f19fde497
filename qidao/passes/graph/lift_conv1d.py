"""``lift-conv1d``: the ops between 1-D convolutions compute on the convolutions'
2-D form, so that ``layout`` makes the convolutions and them one NHWC chain.

Both frontends import a 1-D convolution or pool as the 2-D one of a unit-height
view (``qidao/frontend/spatial.py``): ``reshape [N, C, L] -> [N, C, 1, L]``, then
``tg.conv2d``, then the *squeeze* ``reshape [N, C, 1, L'] -> [N, C, L']``. What
comes between two convolutions (wav2vec2's, HuBERT's and WavLM's feature
extractors: a group norm, a GELU) then computes on rank-3 values, and ``layout``'s
chains are rank-4 only: each convolution was a chain of its own. Its output went
back to NCL through a copy, the GELU ran NCL, and the next convolution read its
input through a transposed view whose channels are ``L`` floats apart. wav2vec2
at the zoo's sizes (seven 256-channel convolutions over one second of audio, one
thread): 9.6 ms, ONNX Runtime 7.4 ms; the two largest convolutions took 58% of it.

The pass moves each squeeze of a convolution's or pool's result down, below the
ops that read it, to where a rank-3 value is really needed:

- an **elementwise** op with a rank-3 result that reads such a squeeze computes
  on the rank-4 value instead. Its other operands: another squeeze (its rank-4
  value), an operand of the result's shape (read through a new ``reshape`` to
  rank 4: a view, of a row-major operand or a strided one), or a broadcast, whose shape, aligned
  to rank 3, gains the unit height (``[C, 1]`` -> ``[C, 1, 1]``; one of rank 0 or
  that broadcasts along the last axis only is read as it is);
- a ``keepdims`` **reduction** of a squeeze reduces the rank-4 value (axes 0, 1,
  2 -> 0, 1, 3);
- a rank-3 **slice** of a squeeze slices the rank-4 value (the unit axis whole).

Each rewritten op's users read a squeeze of its rank-4 result, which the next
op moves further down. Where the value reaches a 1-D convolution again, the
unsqueeze of a squeeze is the rank-4 value itself (when its type is the
unsqueeze's: a strided slice's is not). What stays rank 3 (a transpose to
``[N, L, C]`` before a layer norm, a graph output) reads a squeeze, which
``layout`` handles like any reshape of a chain's output.

SqueezeBERT's residual adds read a convolution's squeeze and a layer norm's
``[N, L, C]`` output transposed to ``[N, C, L]``: lifted, the add joins the
convolution's NHWC chain, where that operand is row-major again, and the layer
norm reads the chain's output as ``[N, L, C]`` rows without a copy.

It does not fire on a squeeze of anything but a ``tg.conv2d``/pool result (or of
an op it rewrote), on a reshape that is not the squeeze of the unit height
``[N, C, 1, L] -> [N, C, L]``, on a reduction without ``keepdims``, or on an
elementwise op with an operand it cannot view at rank 4.

Before:
```mlir
%c = tg.conv2d %x, %w ... -> tensor<1x8x1x6xf32>
%s = tg.reshape %c : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
%g = tg.relu %s : tensor<1x8x6xf32> -> tensor<1x8x6xf32>
%u = tg.reshape %g : tensor<1x8x6xf32> -> tensor<1x8x1x6xf32>
%y = tg.conv2d %u, %w2 ...
```
After:
```mlir
%c = tg.conv2d %x, %w ... -> tensor<1x8x1x6xf32>
%g = tg.relu %c : tensor<1x8x1x6xf32> -> tensor<1x8x1x6xf32>
%y = tg.conv2d %g, %w2 ...
```
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from qidao.dialects import tg
from qidao.dialects.tg.base import TgOp, ints
from qidao.dialects.tg.types import element_of, is_row_major, shape_of


@dataclass(frozen=True)
class LiftConv1dPass(ModulePass):
    """Move the squeezes of 1-D convolutions' results below the rank-3 ops that
    read them."""

    name = "lift-conv1d"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for graph in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            for block in graph.body.blocks:
                _Lift(block).run()


def _unit_height(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A rank-3 ``[N, C, L]`` as ``[N, C, 1, L]``."""
    return (shape[0], shape[1], 1, shape[2])


@dataclass
class _Lift:
    block: Block
    lifted: set[SSAValue] = field(default_factory=set)
    """The rank-4 results of the ops this pass rewrote."""

    def run(self) -> None:
        squeezes: list[tg.ReshapeOp] = []  # the ones this pass made
        for op in list(self.block.ops):
            if op.parent is None:
                continue
            if isinstance(op, tg.ReshapeOp) and self._fold_unsqueeze(op):
                continue
            new = self._rebuilt(op)
            if new is None:
                continue
            self.block.insert_op_before(new, op)
            old = op.results[0]
            new.results[0].name_hint = old.name_hint
            self.lifted.add(new.results[0])
            squeeze = tg.ReshapeOp(new.results[0], shape_of(old.type))
            self.block.insert_op_after(squeeze, new)
            squeezes.append(squeeze)
            old.replace_all_uses_with(squeeze.result)
            read = [v.owner for v in op.operands if self._source(v) is not None]
            self.block.erase_op(op)
            squeezes.extend(r for r in read if isinstance(r, tg.ReshapeOp))
        for squeeze in reversed(squeezes):  # those no op reads any more
            if squeeze.parent is not None and not squeeze.result.uses:
                self.block.erase_op(squeeze)

    # ---- what moves ----------------------------------------------------------------

    def _source(self, value: SSAValue) -> SSAValue | None:
        """The rank-4 ``[N, C, 1, L]`` value that ``value`` squeezes, when it is the
        squeeze of a convolution's or pool's result or of an op this pass rewrote."""
        owner = value.owner
        if not isinstance(owner, tg.ReshapeOp):
            return None
        source = owner.input
        before, after = shape_of(source.type), shape_of(owner.result.type)
        if len(before) != 4 or len(after) != 3 or _unit_height(after) != before:
            return None
        producer = source.owner
        if source in self.lifted or isinstance(producer, tg.Conv2dOp | tg.Pool2dOp):
            return source
        return None

    def _fold_unsqueeze(self, op: tg.ReshapeOp) -> bool:
        """``reshape(squeeze(x), shape of x) -> x`` where the types agree."""
        source = self._source(op.input)
        if source is None or source.type != op.result.type:
            return False
        op.result.replace_all_uses_with(source)
        self.block.erase_op(op)
        return True

    def _rebuilt(self, op: Operation) -> Operation | None:
        """``op`` on the rank-4 values, or None where it does not move."""
        if not isinstance(op, TgOp) or len(op.results) != 1:
            return None
        if isinstance(op, tg.ReduceOp):
            source = self._source(op.input)
            if source is None or op.keepdims is None:
                return None
            axes = sorted(a + (a == 2) for a in op.reduced_axes())
            return type(op)(source, axes, keepdims=True)
        if isinstance(op, tg.SliceOp):
            source = self._source(op.input)
            if source is None:
                return None
            start, stop, step = (ints(b) for b in (op.start, op.stop, op.step))
            return tg.SliceOp(
                source,
                (start[0], start[1], 0, start[2]),
                _unit_height(stop),
                (step[0], step[1], 1, step[2]),
            )
        if op.FUSION != "elementwise":
            return None
        full = shape_of(op.results[0].type)
        if len(full) != 3 or all(self._source(v) is None for v in op.operands):
            return None
        operands: list[SSAValue] = []
        for value in op.operands:
            lifted = self._operand(value, full, op)
            if lifted is None:
                return None
            operands.append(lifted)
        result = op.results[0]
        return type(op).create(
            operands=operands,
            result_types=[TensorType(element_of(result.type), _unit_height(full))],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )

    def _operand(
        self, value: SSAValue, full: tuple[int, ...], user: Operation
    ) -> SSAValue | None:
        """``value`` as the rank-4 twin of ``user`` reads it, or None."""
        source = self._source(value)
        if source is not None:
            return source
        shape = shape_of(value.type)
        padded = (1,) * (3 - len(shape)) + shape
        if shape == full or (padded[0] != 1 or padded[1] != 1):
            view = _unit_height_view(value, _unit_height(padded))
            if view is None:
                return None
            self.block.insert_op_before(view, user)
            return view.results[0]
        return value  # rank 0, or along the last axis only: the same broadcast


def _unit_height_view(value: SSAValue, shape: tuple[int, ...]) -> Operation | None:
    """``value`` with the unit height inserted, as a view: ``tg.view`` of a
    row-major value, ``tg.reshape`` of a strided one (SqueezeBERT's residual, the
    ``[N, L, C]`` output of a layer norm seen as ``[N, C, L]``), whose result is
    then strided too; None where the reshape would copy."""
    try:
        if is_row_major(value.type):
            return tg.ViewOp(value, shape)
        reshape = tg.ReshapeOp(value, shape)
    except VerifyException:
        return None
    return None if is_row_major(reshape.result.type) else reshape
