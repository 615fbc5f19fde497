"""``tg.winograd_input`` and ``tg.winograd_output`` kernels (Winograd F(4x4, 3x3)
and F(2x2, 3x3), ``qidao/dialects/tg/winograd.py``).

Both are one nest over the tiles with the channels innermost, so every load and
store is contiguous along the innermost loop and LLVM vectorizes it (m the output
tile's side, r = m + 2 the input tile's)::

    winograd_input:   for n, th, tw, c:
                        d[i][j] = x[n, m th + i, m tw + j, c]        r^2 loads
                        v = BT d BT^T                                rows, then columns
                        V[t, r a + b, c] = v[a][b]                   r^2 stores,
                                                                     contiguous
    winograd_output:  for n, th, tw, f:
                        m[a][b] = M[r a + b, t, f]                   r^2 loads
                        y = AT m AT^T (+ bias[f])
                        out[n, m th + i, m tw + j, f] = y[i][j]      m^2 stores

with ``t = (n * TH + th) * TW + tw``. The 1-D transforms are written out with their
shared terms (F(4x4)'s ``BT``: 12 additions and 4 scalings per 6 values instead of
a dense 6 x 6 product; its ``AT``: 10 additions and 3 scalings per 6 values;
F(2x2)'s are 4 and 4 additions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
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
        """F(4x4)'s ``BT @ d`` for 6 values (the rows of ``BT`` share ``p, q, s,
        u``)."""
        r0 = self.add(self.sub(self.scale(4.0, d[0]), self.scale(5.0, d[2])), d[4])
        p = self.sub(d[3], self.scale(4.0, d[1]))
        q = self.sub(d[4], self.scale(4.0, d[2]))
        s = self.scale(2.0, self.sub(d[3], d[1]))
        u = self.sub(d[4], d[2])
        r5 = self.add(self.sub(self.scale(4.0, d[1]), self.scale(5.0, d[3])), d[5])
        return [r0, self.add(p, q), self.sub(q, p), self.add(s, u), self.sub(u, s), r5]

    def at(self, m: Sequence[SSAValue]) -> list[SSAValue]:
        """F(4x4)'s ``AT @ m`` for 6 values (``a = m1 + m2``, ``b = m1 - m2``,
        ``c = m3 + m4``, ``e = m3 - m4``)."""
        a, b = self.add(m[1], m[2]), self.sub(m[1], m[2])
        c, e = self.add(m[3], m[4]), self.sub(m[3], m[4])
        return [
            self.add(self.add(m[0], a), c),
            self.add(b, self.scale(2.0, e)),
            self.add(a, self.scale(4.0, c)),
            self.add(self.add(b, self.scale(8.0, e)), m[5]),
        ]

    def bt2(self, d: Sequence[SSAValue]) -> list[SSAValue]:
        """F(2x2)'s ``BT @ d`` for 4 values."""
        return [
            self.sub(d[0], d[2]),
            self.add(d[1], d[2]),
            self.sub(d[2], d[1]),
            self.sub(d[1], d[3]),
        ]

    def at2(self, m: Sequence[SSAValue]) -> list[SSAValue]:
        """F(2x2)'s ``AT @ m`` for 4 values."""
        return [
            self.add(self.add(m[0], m[1]), m[2]),
            self.sub(self.sub(m[1], m[2]), m[3]),
        ]

    def rows(self, size: int) -> tuple[Row, Row]:
        """The 1-D input and output transforms for output tiles of ``size``."""
        return (self.bt, self.at) if size == 4 else (self.bt2, self.at2)


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
    size = op.tile_size()
    side = size + 2
    arith = _Arith(em, element_type(op.result))
    bt, _ = arith.rows(size)
    t = _tile_index((th, tw))
    with em.nest(["n", "th", "tw", "c"], [n, th, tw, c]) as ivs:
        d = [
            [
                em.load(
                    x,
                    ivs,
                    [
                        dim(0),
                        add(mul(dim(1), size), const(i)),
                        add(mul(dim(2), size), const(j)),
                        dim(3),
                    ],
                )
                for j in range(side)
            ]
            for i in range(side)
        ]
        v = _two_sided(d, bt)
        for a in range(side):
            for b in range(side):
                em.store(v[a][b], out, ivs, [t, const(a * side + b), dim(3)])


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
    size = op.tile_size()
    side = size + 2
    arith = _Arith(em, element_type(op.result))
    _, at = arith.rows(size)
    t = _tile_index((th, tw))
    with em.nest(["n", "th", "tw", "f"], [n, th, tw, f]) as ivs:
        tile = [
            [em.load(m, ivs, [const(a * side + b), t, dim(3)]) for b in range(side)]
            for a in range(side)
        ]
        y = _two_sided(tile, at)
        b_f = None if bias is None else em.load(bias, ivs, [dim(3)])
        for i in range(size):
            for j in range(size):
                value = y[i][j] if b_f is None else em.addf(y[i][j], b_f)
                index = [
                    dim(0),
                    add(mul(dim(1), size), const(i)),
                    add(mul(dim(2), size), const(j)),
                    dim(3),
                ]
                em.store(value, out, ivs, index)
