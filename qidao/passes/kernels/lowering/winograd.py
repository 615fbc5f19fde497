"""``tg.winograd_input`` and ``tg.winograd_output`` kernels (Winograd F(4x4, 3x3),
``qidao/dialects/tg/winograd.py``).

Both are one nest over the tiles with the channels innermost, so every load and
store is contiguous along the innermost loop and LLVM vectorizes it::

    winograd_input:   for n, th, tw, c:
                        d[i][j] = x[n, 4 th + i, 4 tw + j, c]        36 loads
                        v = BT d BT^T                                rows, then columns
                        V[t, 6 a + b, c] = v[a][b]                   36 stores,
                                                                     contiguous
    winograd_output:  for n, th, tw, f:
                        m[a][b] = M[6 a + b, t, f]                   36 loads
                        y = AT m AT^T (+ bias[f])
                        out[n, 4 th + i, 4 tw + j, f] = y[i][j]      16 stores

with ``t = (n * TH + th) * TW + tw``. The 1-D transforms are written out with their
shared terms (``BT``: 12 additions and 4 scalings per 6 values instead of a dense
6 x 6 product; ``AT``: 10 additions and 3 scalings per 6 values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.winograd import INPUT_TILE, TILE
from qidao.passes.kernels.lowering.common import (
    Emitter,
    Kernel,
    Source,
    add,
    const,
    dim,
    element_type,
    mul,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool

Row = Callable[[Sequence[SSAValue]], list[SSAValue]]


class _Arith:
    """Scalar arithmetic at the emitter's insertion point."""

    def __init__(self, em: Emitter, t: object) -> None:
        self.em, self.t = em, t

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.em.addf(a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.em.subf(a, b)

    def scale(self, c: float, a: SSAValue) -> SSAValue:
        return self.em.mulf(self.em.constant(c, self.t), a)  # type: ignore[arg-type]

    def bt(self, d: Sequence[SSAValue]) -> list[SSAValue]:
        """``BT @ d`` for 6 values (the rows of ``BT`` share ``p, q, s, u``)."""
        r0 = self.add(self.sub(self.scale(4.0, d[0]), self.scale(5.0, d[2])), d[4])
        p = self.sub(d[3], self.scale(4.0, d[1]))
        q = self.sub(d[4], self.scale(4.0, d[2]))
        s = self.scale(2.0, self.sub(d[3], d[1]))
        u = self.sub(d[4], d[2])
        r5 = self.add(self.sub(self.scale(4.0, d[1]), self.scale(5.0, d[3])), d[5])
        return [r0, self.add(p, q), self.sub(q, p), self.add(s, u), self.sub(u, s), r5]

    def at(self, m: Sequence[SSAValue]) -> list[SSAValue]:
        """``AT @ m`` for 6 values (``a = m1 + m2``, ``b = m1 - m2``, ``c = m3 +
        m4``, ``e = m3 - m4``)."""
        a, b = self.add(m[1], m[2]), self.sub(m[1], m[2])
        c, e = self.add(m[3], m[4]), self.sub(m[3], m[4])
        return [
            self.add(self.add(m[0], a), c),
            self.add(b, self.scale(2.0, e)),
            self.add(a, self.scale(4.0, c)),
            self.add(self.add(b, self.scale(8.0, e)), m[5]),
        ]


def _two_sided(tile: list[list[SSAValue]], row: Row) -> list[list[SSAValue]]:
    """``T tile T^T`` for the 1-D transform ``row`` (``T @ values``): down the
    columns, then along the rows."""
    columns = [row([r[j] for r in tile]) for j in range(len(tile[0]))]
    half = [
        [columns[j][a] for j in range(len(columns))] for a in range(len(columns[0]))
    ]
    return [row(r) for r in half]


def _tile_index(tiles: tuple[int, int]) -> AffineExpr:
    """``t = (n * TH + th) * TW + tw`` over the ivs ``n, th, tw``."""
    th, tw = tiles
    return add(add(mul(dim(0), th * tw), mul(dim(1), tw)), dim(2))


def lower_winograd_input(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.WinogradInputOp)
    em = k.em
    (x,) = sources
    (out,) = k.outputs
    n, _, _, c = shape(op.input)
    th, tw = op.tile_counts()
    arith = _Arith(em, element_type(op.result))
    t = _tile_index((th, tw))
    with em.nest(["n", "th", "tw", "c"], [n, th, tw, c]) as ivs:
        d = [
            [
                em.load(
                    x,
                    ivs,
                    [
                        dim(0),
                        add(mul(dim(1), TILE), const(i)),
                        add(mul(dim(2), TILE), const(j)),
                        dim(3),
                    ],
                )
                for j in range(INPUT_TILE)
            ]
            for i in range(INPUT_TILE)
        ]
        v = _two_sided(d, arith.bt)
        for a in range(INPUT_TILE):
            for b in range(INPUT_TILE):
                em.store(v[a][b], out, ivs, [t, const(a * INPUT_TILE + b), dim(3)])


def lower_winograd_output(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.WinogradOutputOp)
    em = k.em
    m = sources[0]
    bias = sources[1] if op.bias is not None else None
    (out,) = k.outputs
    n, th, tw = op.tile_counts()
    f = shape(op.input)[2]
    arith = _Arith(em, element_type(op.result))
    t = _tile_index((th, tw))
    with em.nest(["n", "th", "tw", "f"], [n, th, tw, f]) as ivs:
        tile = [
            [
                em.load(m, ivs, [const(a * INPUT_TILE + b), t, dim(3)])
                for b in range(INPUT_TILE)
            ]
            for a in range(INPUT_TILE)
        ]
        y = _two_sided(tile, arith.at)
        b_f = None if bias is None else em.load(bias, ivs, [dim(3)])
        for i in range(TILE):
            for j in range(TILE):
                value = y[i][j] if b_f is None else em.addf(y[i][j], b_f)
                index = [
                    dim(0),
                    add(mul(dim(1), TILE), const(i)),
                    add(mul(dim(2), TILE), const(j)),
                    dim(3),
                ]
                em.store(value, out, ivs, index)
