"""``tg.matmul_blockq`` kernels: a float32 matrix times a weight in GGUF blocks,
each block decoded in registers as it is read (``tg/matmul_blockq.py``).

Each output element sums its K products in 32 lanes, one per position in a
block, across the blocks, then adds the lanes up (a float32 sum the loop can
keep in two 16-wide vectors: no reassociation is needed to vectorize it)::

    for n, b.., i:
        for e_init:             lanes[n, e] = 0
        for blk, e:             lanes[n, e] += x[b.., i, 32 blk + e] * (d(n, blk) * q(n, blk, e))
        out[b.., i, n] = sum over e_sum of lanes[n, e]

``d`` is the block's float16 scale, its two bytes joined and widened to float32;
``q`` the element: ``Q8_0``'s int8 at byte ``2 + e``, ``Q4_0``'s nibble (byte
``2 + e`` for ``e < 16`` low, byte ``2 + e - 16`` high) less 8. A ``Q4_K`` block
is a super-block of 256 (``blk`` runs over them): eight sub-blocks of 32, each
with a 6-bit scale and min, ``d * sc * q - dmin * m`` (:func:`_decode_q4_k`),
whose elements share the 32 lanes (sub-block ``j``'s element ``e`` goes to lane
``e``), so the partial sums stay in registers as ``Q8_0``'s do. The weight stays
bytes in memory; nothing is decoded ahead. ``lanes`` is the kernel's own
buffer, a row of 32 floats per column ``n``, so that the loop over ``n``
(outermost: each weight row is read for every row of ``x`` while it is in the
caches) may run in parallel. Several rows of x (M a multiple of 2, 4 or 8)
share each decoded block instead (:func:`_row_tiles`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import f16, f32, i16, i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects.tg.block_quant import ENCODINGS
from qidao.dialects.tg.matmul_blockq import MatmulBlockqOp
from qidao.passes.kernels.lowering.common import Emitter, Kernel, Source, dim, shape
from qidao.passes.kernels.lowering.constants import ConstantPool

LANES = 32
"""Partial sums per output element: one per position in a block of 32 (a
``Q4_K`` super-block's eight sub-blocks share them), so that they stay in two
16-wide registers."""


def block_of(encoding: str) -> int:
    """Elements per block: 32 (``Q8_0``, ``Q4_0``), 256 (``Q4_K``'s super-block)."""
    return ENCODINGS[encoding].block


ROW_TILES = (8, 4, 2)
"""Rows of x that share each decoded block: the largest that divides M (else one
row at a time, each element decoded where it is multiplied)."""


def row_tile(m: int) -> int:
    """How many rows of x share each decoded block (``ROW_TILES``)."""
    return next((t for t in ROW_TILES if m % t == 0), 1)


def lower_matmul_blockq(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, MatmulBlockqOp)
    x, w = sources
    (out,) = k.outputs
    tile = row_tile(shape(op.result)[-2])
    if tile == 1:
        _one_row(op, k.em, x, w, out)
    else:
        _row_tiles(op, k.em, x, w, out, tile)


def _one_row(
    op: MatmulBlockqOp, em: Emitter, x: Source, w: Source, out: SSAValue
) -> None:
    """Each element decoded where it is multiplied (module docstring)."""
    out_shape = shape(op.result)
    lead = len(out_shape) - 1  # b.., i
    n_size = out_shape[-1]
    blocks = shape(op.rhs)[1]
    block = block_of(op.encoding.data)
    lanes = em.add(memref.AllocOp.get(f32, shape=[n_size, LANES])).memref
    lanes.name_hint = "lanes"
    names = ["n", *(f"b{d}" for d in range(lead - 1)), "i"]
    zero = em.constant(0.0, f32)
    n = dim(0)
    row = [dim(j) for j in range(1, lead + 1)]  # b.., i
    with em.nest(names, [n_size, *out_shape[:-1]]) as outer:
        with em.nest(["e_init"], [LANES]) as (e_init,):
            em.store(zero, lanes, [*outer, e_init], [n, dim(lead + 1)])
        with em.nest(["blk"], [blocks]) as (blk_iv,):
            blk = dim(lead + 1)

            def use(
                ivs: list[SSAValue],
                position: AffineExpr,
                lane: AffineExpr,
                weight: SSAValue,
            ) -> None:
                xv = em.load(x, ivs, [*row, blk * block + position])
                _add_product(em, lanes, ivs, [n, lane], xv, weight)

            _decode_block(em, op.encoding.data, w, [*outer, blk_iv], use)

        def add_lane(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            lane = em.load(lanes, ivs, [n, dim(len(ivs) - 1)])
            return [em.value(arith.AddfOp(accs[0], lane))]

        (total,) = em.accumulate(["e_sum"], [LANES], [zero], add_lane, outer)
        em.store(total, out, outer, [*row, n])
    em.add(memref.DeallocOp.get(lanes))


def _row_tiles(
    op: MatmulBlockqOp, em: Emitter, x: Source, w: Source, out: SSAValue, tile: int
) -> None:
    """Each block decoded once, into ``decoded[n]``, for ``tile`` rows of x::

        for n, b.., i_o:
            for i_init, e_init:  lanes[n, i_i, e] = 0
            for blk:
                for e:           decoded[n, e] = d(n, blk) * q(n, blk, e)
                for i_i, e_mul:  lanes[n, i_i, e] += x[b.., tile i_o + i_i, 32 blk + e] * decoded[n, e]
            for i_sum:           out[b.., tile i_o + i_i, n] = sum of lanes[n, i_i, e] over e_sum

    The default schedule vectorizes ``e_mul`` (left to itself, LLVM unrolls it
    and vectorizes ``i_i`` with gathers)."""
    out_shape = shape(op.result)
    lead = len(out_shape) - 1
    n_size, m = out_shape[-1], out_shape[-2]
    blocks = shape(op.rhs)[1]
    block = block_of(op.encoding.data)
    lanes = em.add(memref.AllocOp.get(f32, shape=[n_size, tile, LANES])).memref
    lanes.name_hint = "lanes"
    decoded = em.add(memref.AllocOp.get(f32, shape=[n_size, block])).memref
    decoded.name_hint = "decoded"
    names = ["n", *(f"b{d}" for d in range(lead - 1)), "i_o"]
    zero = em.constant(0.0, f32)
    n = dim(0)
    batch = [dim(j) for j in range(1, lead)]
    i_o = dim(lead)
    with em.nest(names, [n_size, *out_shape[:-2], m // tile]) as outer:
        with em.nest(["i_init", "e_init"], [tile, LANES]) as inits:
            em.store(zero, lanes, [*outer, *inits], [n, dim(lead + 1), dim(lead + 2)])
        with em.nest(["blk"], [blocks]) as (blk_iv,):
            blk = dim(lead + 1)

            def keep(
                ivs: list[SSAValue],
                position: AffineExpr,
                lane: AffineExpr,
                weight: SSAValue,
            ) -> None:
                em.store(weight, decoded, ivs, [n, position])

            _decode_block(em, op.encoding.data, w, [*outer, blk_iv], keep)
            subs = block // LANES  # Q4_K: its eight sub-blocks share the lanes
            names_mul = ["i_i", *(["e_sub"] if subs > 1 else []), "e_mul"]
            with em.nest(
                names_mul, [tile, *([subs] if subs > 1 else []), LANES]
            ) as inner:
                ivs = [*outer, blk_iv, *inner]
                i_i, e = dim(lead + 2), dim(len(ivs) - 1)
                position = e + dim(lead + 3) * LANES if subs > 1 else e
                xv = em.load(x, ivs, [*batch, i_o * tile + i_i, blk * block + position])
                weight = em.load(decoded, ivs, [n, position])
                _add_product(em, lanes, ivs, [n, i_i, e], xv, weight)
        with em.nest(["i_sum"], [tile]) as (i_sum,):
            rows = [*outer, i_sum]

            def add_lane(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
                lane = em.load(lanes, ivs, [n, dim(lead + 1), dim(len(ivs) - 1)])
                return [em.value(arith.AddfOp(accs[0], lane))]

            (total,) = em.accumulate(["e_sum"], [LANES], [zero], add_lane, rows)
            em.store(total, out, rows, [*batch, i_o * tile + dim(lead + 1), n])
    em.add(memref.DeallocOp.get(decoded))
    em.add(memref.DeallocOp.get(lanes))


Use = Callable[[list[SSAValue], AffineExpr, AffineExpr, SSAValue], None]
"""What a decoder hands each element to: the loops, its position in the block,
its lane and its value."""


def _decode_block(
    em: Emitter,
    encoding: str,
    w: Source,
    ivs: list[SSAValue],
    use: Use,
) -> None:
    """Decode the block ``w[n, blk]`` (``ivs``: the loops down to ``blk``, ``n``
    the first, ``blk`` the last): its scale once, then each element in a loop of
    its part, handed to ``use(ivs, position, lane, d * q)`` (``position``: its
    place in the block; ``lane``: the partial sum it goes to, ``position`` mod
    32)."""
    n, blk = dim(0), dim(len(ivs) - 1)
    if encoding == "Q4_K":
        _decode_q4_k(em, w, ivs, use)
        return
    d = _scale(em, w, ivs, n, blk)
    for part in _PARTS[encoding]:
        with em.nest([part.loop], [part.count]) as (e_iv,):
            inner = [*ivs, e_iv]
            e = dim(len(ivs))
            q = part.element(em, em.load(w, inner, [n, blk, e + part.byte]))
            use(inner, e + part.lane, e + part.lane, em.value(arith.MulfOp(d, q)))


def _add_product(
    em: Emitter,
    lanes: SSAValue,
    ivs: list[SSAValue],
    index: list[AffineExpr],
    x: SSAValue,
    weight: SSAValue,
) -> None:
    """``lanes[index] += x * weight``."""
    old = em.load(lanes, ivs, index)
    product = em.value(arith.MulfOp(x, weight))
    em.store(em.value(arith.AddfOp(old, product)), lanes, ivs, index)


def _decode_q4_k(
    em: Emitter,
    w: Source,
    ivs: list[SSAValue],
    use: Use,
) -> None:
    """A ``Q4_K`` super-block of 256: its float16 ``d`` and ``dmin``, then per
    sub-block ``j`` of 32 its 6-bit scale and min (llama.cpp's
    ``get_scale_min_k4``, from the 12 bytes at 4: ``j`` is known here, so each is
    two or three byte loads and masks) and its elements, the low nibbles of the
    32 bytes at ``16 + 32 (j // 2)`` for an even ``j``, the high ones for an odd:
    ``d * sc * q - dmin * m``."""
    n, blk = dim(0), dim(len(ivs) - 1)
    d = _scale(em, w, ivs, n, blk)
    dmin = _scale(em, w, ivs, n, blk, at=2)

    def byte(at: int) -> SSAValue:
        raw = em.load(w, ivs, [n, blk, AffineExpr.constant(4 + at)])
        return em.value(arith.ExtUIOp(raw, i32))

    def bits(value: SSAValue, shift: int, mask: int) -> SSAValue:
        if shift:
            value = em.value(arith.ShRUIOp(value, em.constant(shift, i32)))
        return em.value(arith.AndIOp(value, em.constant(mask, i32)))

    def joined(low: SSAValue, high: SSAValue) -> SSAValue:
        return em.value(
            arith.OrIOp(low, em.value(arith.ShLIOp(high, em.constant(4, i32))))
        )

    for j in range(8):
        if j < 4:
            sc, m = bits(byte(j), 0, 63), bits(byte(j + 4), 0, 63)
        else:
            sc = joined(bits(byte(j + 4), 0, 15), bits(byte(j - 4), 6, 3))
            m = joined(bits(byte(j + 4), 4, 15), bits(byte(j), 6, 3))
        scale = em.value(arith.MulfOp(d, em.value(arith.SIToFPOp(sc, f32))))
        offset = em.value(arith.MulfOp(dmin, em.value(arith.SIToFPOp(m, f32))))
        with em.nest([f"e{j}"], [32]) as (e_iv,):
            inner = [*ivs, e_iv]
            e = dim(len(ivs))
            raw = em.load(w, inner, [n, blk, e + 16 + 32 * (j // 2)])
            q = bits(em.value(arith.ExtUIOp(raw, i32)), 4 * (j % 2), 15)
            product = em.value(arith.MulfOp(scale, em.value(arith.SIToFPOp(q, f32))))
            use(inner, e + 32 * j, e, em.value(arith.SubfOp(product, offset)))


def _scale(
    em: Emitter,
    w: Source,
    ivs: list[SSAValue],
    n: AffineExpr,
    blk: AffineExpr,
    at: int = 0,
) -> SSAValue:
    """The block's float16 at bytes ``at``, ``at + 1`` (little-endian) as
    float32: its scale (``Q4_K``'s ``dmin`` at 2)."""
    low, high = (
        em.value(
            arith.ExtUIOp(em.load(w, ivs, [n, blk, AffineExpr.constant(at + b)]), i16)
        )
        for b in (0, 1)
    )
    shifted = em.value(arith.ShLIOp(high, em.constant(8, i16)))
    half = em.value(arith.BitcastOp(em.value(arith.OrIOp(low, shifted)), f16))
    return em.value(arith.ExtFOp(half, f32))


@dataclass(frozen=True)
class _Part:
    """A run of a block's elements decoded alike: ``count`` of them from lane
    ``lane``, element ``e`` of the run in byte ``byte + e``, ``shift``: None for a
    signed byte (Q8_0), else the nibble's shift (Q4_0: 0 low, 4 high), less 8."""

    loop: str
    count: int
    lane: int
    byte: int
    shift: int | None

    def element(self, em: Emitter, byte: SSAValue) -> SSAValue:
        if self.shift is None:
            return em.value(arith.SIToFPOp(byte, f32))
        wide = em.value(arith.ExtUIOp(byte, i32))
        if self.shift:
            wide = em.value(arith.ShRUIOp(wide, em.constant(self.shift, i32)))
        nibble = em.value(arith.AndIOp(wide, em.constant(15, i32)))
        centered = em.value(arith.SubiOp(nibble, em.constant(8, i32)))
        return em.value(arith.SIToFPOp(centered, f32))


_PARTS: dict[str, tuple[_Part, ...]] = {
    "Q8_0": (_Part("e", 32, 0, 2, None),),
    "Q4_0": (_Part("e_lo", 16, 0, 2, 0), _Part("e_hi", 16, 16, 2, 4)),
}
"""How each encoding's 32 elements are decoded (module docstring)."""
