"""Part of ``layout``: a channel shuffle between two NHWC chains runs channels-last.

ShuffleNet's ``channel_shuffle`` (``x.view(N, G, C / G, H, W).transpose(1, 2)``,
back to ``[N, C, H, W]``) is a reshape, a transpose and a reshape of rank 5, which
no chain takes. Between two chains it read the first chain's NHWC output back to
NCHW (a copy), shuffled it in NCHW (a second copy), and the next chain read the
result through a transposed view: its 1x1 convolutions took twice as long as on
row-major NHWC data. Channels-last, the shuffle is the transpose of the two
trailing axes of ``[N, H, W, G, C / G]``, one copy::

    t  = transpose(y, [0, 3, 1, 2])          y: NHWC, row-major (a chain's output)
    r1 = reshape(contiguous(t), [N, G, C/G, H, W])
    r2 = reshape(transpose(r1, [0, 2, 1, 3, 4]), [N, C, H, W])
      ==>  s = view(contiguous(transpose(view(y, [N, H, W, G, C/G]),
                                         [0, 1, 2, 4, 3])), [N, H, W, C])

and each ``transpose(r2, [0, 2, 3, 1])`` (the next chain's entry) reads ``s``;
any other user reads ``transpose(s, [0, 3, 1, 2])``. The rewrite runs after the
chains are converted (``layout.py``) and only where every user of ``r2`` is a tg
compute op or such an entry (views of ``r2`` keep their row-major operand).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Block, Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.types import is_row_major, shape_of
from qidao.passes.graph._layout_chains import LAYOUT_DEPENDENT, TO_NCHW, TO_NHWC

Retarget = Callable[[SSAValue, SSAValue], None]
"""``layout``'s ``_retarget(old, new)``: the users of ``old`` read ``new`` (the same
elements in another layout), views rebuilt on it."""


def shuffle_channels_last(block: Block, retarget: Retarget) -> int:
    """Rewrite every channel shuffle of ``block`` whose input is NHWC data (module
    docstring); how many."""
    done = 0
    for op in list(block.ops):
        if op.parent is None or not isinstance(op, tg.ReshapeOp | tg.ViewOp):
            continue
        matched = _match(op)
        if matched is None or not all(
            _takes_any_layout(u.operation) for u in op.result.uses
        ):
            continue
        y, groups = matched
        _rewrite(op, y, groups, retarget)
        done += 1
    return done


def _match(r2: tg.ReshapeOp | tg.ViewOp) -> tuple[SSAValue, int] | None:
    """``(y, G)`` when ``r2`` ends a channel shuffle of NHWC ``y``."""
    out = shape_of(r2.result.type)
    p = r2.input.owner
    if len(out) != 4 or not isinstance(p, tg.TransposeOp):
        return None
    if ints(p.perm) != (0, 2, 1, 3, 4):
        return None
    r1 = p.input.owner
    if not isinstance(r1, tg.ReshapeOp | tg.ViewOp):
        return None
    split = shape_of(r1.result.type)
    source = r1.input
    if isinstance(source.owner, tg.ContiguousOp):
        source = source.owner.input
    t = source.owner
    if not isinstance(t, tg.TransposeOp) or ints(t.perm) != TO_NCHW:
        return None
    y = t.input
    n, c, h, w = shape_of(t.result.type)
    if not is_row_major(y.type) or tuple(out) != (n, c, h, w):
        return None
    if len(split) != 5 or split[0] != n or split[3:] != (h, w):
        return None
    if split[1] * split[2] != c:
        return None
    return y, split[1]


def _takes_any_layout(user: Operation) -> bool:
    """A tg compute op (it reads any layout), or the next chain's entry."""
    if isinstance(user, tg.TransposeOp):
        return ints(user.perm) == TO_NHWC
    return user.dialect_name() == "tg" and not isinstance(user, LAYOUT_DEPENDENT)


def _rewrite(
    r2: tg.ReshapeOp | tg.ViewOp, y: SSAValue, groups: int, retarget: Retarget
) -> None:
    n, h, w, c = shape_of(y.type)
    block = r2.parent_block()
    assert block is not None
    hint = r2.result.name_hint
    made: list[Operation] = [tg.ViewOp(y, [n, h, w, groups, c // groups])]
    made.append(tg.TransposeOp(made[-1].results[0], [0, 1, 2, 4, 3]))
    made.append(tg.ContiguousOp(made[-1].results[0]))
    made.append(tg.ViewOp(made[-1].results[0], [n, h, w, c]))
    shuffled = made[-1].results[0]
    for op in made:
        block.insert_op_before(op, r2)
    shuffled.name_hint = None if hint is None else f"{hint}_nhwc"
    nchw: SSAValue | None = None
    for use in list(r2.result.uses):
        user = use.operation
        if isinstance(user, tg.TransposeOp):  # the next chain's entry: NHWC already
            retarget(user.result, shuffled)
            _erase_dead(user)
            continue
        if nchw is None:
            view = tg.TransposeOp(shuffled, list(TO_NCHW))
            block.insert_op_before(view, r2)
            nchw = view.result
        user.operands[use.index] = nchw
    _erase_dead(r2)


def _erase_dead(op: Operation) -> None:
    """Erase ``op`` and, in turn, the producers it was the last user of."""
    if op.parent is None or any(r.uses for r in op.results):
        return
    producers = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
    op.detach()
    op.erase()
    for producer in producers:
        if producer.parent is not None:
            _erase_dead(producer)
