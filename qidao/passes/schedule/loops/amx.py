"""``tensorize``'s CPU intrinsics ``amx_int8`` and ``amx_bf16``: a block of an
int8 (bfloat16) matmul, whole along K, becomes AMX tile products (``tdpbusd``;
``tdpbf16ps``), its int32 (float32) sums kept in tiles for the whole reduction.

    for i in [0, 16a)                          amx.tile_config (16 rows x 64 bytes each)
      for k in [0, K4)                         C tiles (a x b) <- C[i0 + 16 ta, j0 + 16 tb]
        for j in [0, 16b)            ==>       for k in [0, K4) step 16
          for r in [0, 4)                        A tiles (a)  <- A[i0 + 16 ta, 4 k]
            C[i, j] += zext(A[i, 4k + r])        B tiles (b)  <- P[k, j0 + 16 tb, 0]
                     * sext(P[k, j, r])          tile_mul C(ta, tb), A(ta), B(tb)
                                               C[i0 + 16 ta, j0 + 16 tb] <- C tiles

(``i0``, ``j0``: the block's first row and column, the indices at ``i = j = 0``;
``a``, ``b`` in {1, 2}; ``K4`` = K / 4, the groups of four bytes, a multiple of
16.) Tiles 0..3 hold C, 4..5 A, 6..7 B: with ``a = b = 2`` a step of k loads four
tiles and issues four ``tdpbusd`` (65,536 multiply-adds). The C tiles are loaded
once before the k loop and stored once after it (C's index must not move with k),
so the sums stay in tiles for the whole K: storing and reloading them every step
halves the throughput (measured, one thread: 2,100-2,900 against 1,250 GOP/s on
a 32 x 576 x 32 block in L1). Two cases need no memory for C: where C is a buffer of exactly the block
indexed ``[i, j]`` (the tile ``cache_write`` leaves when an epilogue reads the
sums, ``defaults/matmul_integer.py``) and the nest right before the block only
stores 0 to all of it (the init nest ``compute_at`` moved there), the C tiles
start as ``tilezero`` and that nest goes. The configuration (``ldtilecfg``) runs
once per thread, not per block: at the top of the innermost parallel loop around
the block (each of its iterations may run on another thread, whose tile state is
its own), else of the kernel; if a different configuration is already there, it
stays before the block. Like ``avx512_vnni`` this intrinsic replaces the
loops by what they compute; ``convert-to-llvm`` lowers the ``amx`` ops to LLVM's
tile intrinsics (``qidao/passes/cpu/llvm/amx.py``).

The loops must be exactly (each failure a ``TileError`` naming the rule):

1. ``i`` (the loop named) holding only ``k``, holding only ``j``, holding only
   ``r``, each from 0 with step 1 and without iter_args: ``i`` 16 or 32 long, ``k``
   a multiple of 16, ``j`` 16 or 32, ``r`` 4; ``r``'s body is ``avx512_vnni``'s
   (``C[..] = addi(C[..], muli(extui(A[..]), extsi(P[..])))``, A and P ``i8``, C
   ``i32``).
2. A's index moves with ``i`` in its next-to-last dimension (coefficient 1) and
   with ``k`` (4) and ``r`` (1) in its last, not with ``j``; P's with ``k``, ``j``
   and ``r`` in its last three dimensions (1 each), not with ``i``, and P's last
   two dimensions are ``[N, 4]`` with strides ``[4, 1]`` and its third-to-last has
   stride ``4 N`` (a tile row is 64 contiguous bytes of 16 columns, the next row
   the next group of four k); C's with ``i`` in its next-to-last dimension and
   ``j`` in its last (1 each), not with ``k`` or ``r``; every last dimension has
   stride 1.

A ``ui8 x i8`` ``tg.matmul_integer`` with its rhs packed for VNNI lowers to such
loops once split and reordered (``qidao/compiler/targets/cpu/defaults/
matmul_integer.py``'s AMX schedule). The result is the same integers in the same
wrapping int32 arithmetic, summed in another order (exact).

``amx_bf16`` is the same block of bfloat16 pairs: ``r`` 2, ``k`` over pairs (A's
index moves with ``k`` by 2), the body ``avx512_bf16``'s (``C[..] = addf(C[..],
mulf(bf16(A[..]), bf16(P[..])))``, A and P ``i16``, C ``f32``), P's last three
dimensions with strides ``[2 w, 2, 1]`` (a ``tg.matmul_bf16`` rhs in panels of
``w`` columns: a tile row is 16 columns' 64 contiguous bytes, the next row the
next pair of k), C zeroed by a store of 0.0, and each product one
``amx.tile_mulf`` (``tdpbf16ps``): the same float32 products (exact) summed in
another order, inputs and sums below 2**-126 flushed to zero.
"""

from __future__ import annotations

from xdsl.dialects import affine, arith, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from qidao.dialects.amx import (
    MAX_COLSB,
    MAX_ROWS,
    TILES,
    TileConfigOp,
    TileLoadOp,
    TileMulfOp,
    TileMulOp,
    TileStoreOp,
    TileZeroOp,
    memref_strides,
)
from qidao.dialects.attributes import PARALLEL_ATTR
from qidao.dialects.x86vector import GROUP
from qidao.passes.schedule.loops.linear import coefficient
from qidao.passes.schedule.loops.nest import (
    body_ops,
    constant_bounds,
    constant_map,
    indices_are,
    iv,
    loop_name,
    make_loop,
    step_of,
)
from qidao.passes.schedule.loops.vnni import VnniMatcher

INTRINSIC = "amx_int8"
BF16_INTRINSIC = "amx_bf16"

ROWS = MAX_ROWS
"""A tile's rows (of A and C)."""
K_STEP = MAX_COLSB // GROUP
"""Groups per tile row: 16 (of four bytes; of two bfloat16s, the same 64 bytes)."""
C_TILES, A_TILES, B_TILES = (0, 1, 2, 3), (4, 5), (6, 7)


class AmxMatcher(VnniMatcher):
    """Checks and rewrites the block headed by ``head`` (module docstring): the
    body is ``avx512_vnni``'s (``VnniMatcher._block``), the loops and the moves
    this intrinsic's own."""

    def rewrite(self) -> None:
        """Check the block, then replace its four loops by tile products."""
        i_loop, k_loop, j_loop, r_loop = self._loops()
        block = self._block(r_loop)
        ivs = {"i": iv(i_loop), "k": iv(k_loop), "j": iv(j_loop), "r": iv(r_loop)}
        g = self.group
        self._check_moves_of(block.a, "A", ivs, {"i": (1, 1), "k": (0, g), "r": (0, 1)})
        self._check_moves_of(block.p, "P", ivs, {"k": (2, 1), "j": (1, 1), "r": (0, 1)})
        self._check_moves_of(block.c, "C", ivs, {"i": (1, 1), "j": (0, 1)})
        self._check_layout(block.a, block.p, block.c)
        a_rows = _extent(i_loop) // ROWS
        b_cols = _extent(j_loop) // ROWS
        k4 = _extent(k_loop)
        zeroed = _zeroing_nest(self.head, block.c, ivs, a_rows, b_cols)
        before: Operation = self.head

        def emit(op: Operation) -> Operation:
            block = before.parent_block()
            assert block is not None
            block.insert_op_before(op, before)
            return op

        def const(value: int) -> SSAValue:
            return emit(
                arith.ConstantOp.from_int_and_width(value, IndexType())
            ).results[0]

        def index(
            op: affine.LoadOp | affine.StoreOp, at: dict[str, SSAValue]
        ) -> list[SSAValue]:
            """``op``'s index values with the block's loops at ``at`` (0 elsewhere)."""
            zero = const(0)
            by_iv = {ivs[name]: value for name, value in at.items()}
            operands = [
                by_iv.get(v, zero) if v in ivs.values() else v for v in op.indices
            ]
            amap = op.map.data
            values: list[SSAValue] = []
            for result in amap.results:
                apply = affine.ApplyOp(
                    operands,
                    AffineMapAttr(
                        AffineMap(amap.num_dims, amap.num_symbols, (result,))
                    ),
                )
                values.append(emit(apply).results[0])
            return values

        rows_dim_a = _rank(block.a) - 2
        rows_dim_p = _rank(block.p) - 3
        rows_dim_c = _rank(block.c) - 2
        shapes = [(0, 0)] * TILES
        c_tiles = {
            (ta, tb): C_TILES[ta * 2 + tb]
            for ta in range(a_rows)
            for tb in range(b_cols)
        }
        for t in [*c_tiles.values(), *A_TILES[:a_rows], *B_TILES[:b_cols]]:
            shapes[t] = (ROWS, MAX_COLSB)
        config = TileConfigOp([r for r, _ in shapes], [c for _, c in shapes])
        if not _hoist_config(self.head, config):
            emit(config)
        c_at = {
            key: index(block.c, {"i": const(ROWS * key[0]), "j": const(ROWS * key[1])})
            for key in c_tiles
        }
        for key, tile in c_tiles.items():
            if zeroed is not None:
                emit(TileZeroOp(tile))
            else:
                emit(TileLoadOp(tile, block.c.memref, c_at[key], rows_dim_c))
        if zeroed is not None:
            zeroed.detach()
            zeroed.erase()
        k_name = loop_name(k_loop) or "k"
        loop = emit(make_loop(k_name, constant_map(0), constant_map(k4), step=K_STEP))
        assert isinstance(loop, affine.ForOp)
        body = loop.body.block
        kk = iv(loop)
        before = _terminate(body)
        for ta in range(a_rows):
            at = index(block.a, {"i": const(ROWS * ta), "k": kk})
            emit(TileLoadOp(A_TILES[ta], block.a.memref, at, rows_dim_a))
        for tb in range(b_cols):
            at = index(block.p, {"k": kk, "j": const(ROWS * tb)})
            emit(TileLoadOp(B_TILES[tb], block.p.memref, at, rows_dim_p))
        product = TileMulfOp if self.bf16 else TileMulOp
        for (ta, tb), tile in c_tiles.items():
            emit(product(tile, A_TILES[ta], B_TILES[tb]))
        before = self.head
        for key, tile in c_tiles.items():
            emit(TileStoreOp(tile, block.store.memref, c_at[key], rows_dim_c))
        self.head.detach()
        self.head.erase()

    def _loops(self) -> list[affine.ForOp]:  # type: ignore[override]
        loops = [self.head]
        for _ in range(3):
            ops = body_ops(loops[-1])
            inner = ops[0] if len(ops) == 1 else None
            if not isinstance(inner, affine.ForOp):
                raise self.fail(
                    "tile",
                    f"loop '{loop_name(loops[-1])}' must hold exactly one loop (the "
                    f"block is i, then k over groups of {self.group}, then j, then r)",
                )
            loops.append(inner)
        rules = (
            ("i", (ROWS, 2 * ROWS)),
            ("k", None),
            ("j", (ROWS, 2 * ROWS)),
            ("r", (self.group,)),
        )
        for loop, (what, allowed) in zip(loops, rules, strict=True):
            bounds = constant_bounds(loop)
            ok = bounds is not None and bounds[0] == 0 and step_of(loop) == 1
            ok = ok and not loop.inits
            if ok and bounds is not None:
                extent = bounds[1]
                ok = (
                    extent in allowed
                    if allowed
                    else extent % K_STEP == 0 and extent > 0
                )
            if not ok:
                want = (
                    f"a multiple of {K_STEP}"
                    if allowed is None
                    else " or ".join(str(e) for e in allowed)
                )
                raise self.fail(
                    "extent",
                    f"loop '{loop_name(loop)}' ({what}) must run from 0, step 1, "
                    f"without iter_args, {want} iterations; it runs "
                    f"{'non-constant bounds' if bounds is None else bounds} step "
                    f"{step_of(loop)}",
                )
        return loops

    def _check_moves_of(
        self,
        op: affine.LoadOp,
        what: str,
        ivs: dict[str, SSAValue],
        wanted: dict[str, tuple[int, int]],
    ) -> None:
        """``op``'s index moves with each loop of ``wanted`` only in dimension
        (rank - 1 - position) with that coefficient, and with no other block loop."""
        amap = op.map.data
        operands = list(op.indices)
        rank = len(amap.results)
        for name, value in ivs.items():
            moves = [
                coefficient(expr, operands, amap.num_dims, value)
                for expr in amap.results
            ]
            expected = [0] * rank
            if name in wanted:
                back, coef = wanted[name]
                if back >= rank:
                    raise self.fail(
                        "stride", f"{what} has rank {rank}: too few dimensions"
                    )
                expected[rank - 1 - back] = coef
            if moves != expected:
                raise self.fail(
                    "stride",
                    f"{what}'s index must move with {name} as {expected} per "
                    f"dimension, got {moves}",
                )

    def _check_layout(
        self, a: affine.LoadOp, p: affine.LoadOp, c: affine.LoadOp
    ) -> None:
        for what, op in (("A", a), ("P", p), ("C", c)):
            strides = memref_strides(_type(op))
            if strides[-1] != 1:
                raise self.fail(
                    "stride", f"{what}'s last dimension has stride {strides[-1]}"
                )
        t = _type(p)
        shape, strides = t.get_shape(), memref_strides(t)
        n, g = shape[-2], self.group
        if shape[-1] != g or strides[-2] != g or strides[-3] != g * n:
            raise self.fail(
                "stride",
                f"P's last three dimensions must be [K/{g}, N, {g}] with strides "
                f"[{g} N, {g}, 1] (a tile row is 16 columns' 64 contiguous "
                f"bytes), got {t}",
            )


def _type(op: affine.LoadOp) -> MemRefType[Attribute]:
    t = op.memref.type
    assert isinstance(t, MemRefType)
    return t


def _rank(op: affine.LoadOp | affine.StoreOp) -> int:
    t = op.memref.type
    assert isinstance(t, MemRefType)
    return t.get_num_dims()


def _extent(loop: affine.ForOp) -> int:
    bounds = constant_bounds(loop)
    assert bounds is not None
    return bounds[1] - bounds[0]


def _terminate(body: Block) -> Operation:
    """The new loop's ``affine.yield`` (added), before which its body goes."""
    end = affine.YieldOp.get()
    body.add_op(end)
    return end


def _hoist_config(head: Operation, config: TileConfigOp) -> bool:
    """Put ``config`` where it runs once per thread, not once per block: at the
    top of the innermost parallel loop around ``head`` (each of its iterations
    may run on another thread, whose tile state is its own) or of the function.
    False (the caller puts it before the block) when a different configuration
    is already there."""
    site = head.parent_op()
    while site is not None and not (
        isinstance(site, func.FuncOp)
        or (isinstance(site, affine.ForOp) and PARALLEL_ATTR in site.attributes)
    ):
        site = site.parent_op()
    if site is None:
        return False
    body = site.regions[0].blocks[0]
    for op in body.ops:
        if isinstance(op, TileConfigOp):
            return op.rows == config.rows and op.colsb == config.colsb
    first = body.first_op
    assert first is not None
    body.insert_op_before(config, first)
    return True


def _zeroing_nest(
    head: Operation,
    c: affine.LoadOp,
    ivs: dict[str, SSAValue],
    a_rows: int,
    b_cols: int,
) -> affine.ForOp | None:
    """The nest right before the block that zeroes all of C, when C is a buffer of
    exactly the block (the tile ``cache_write`` made) indexed ``[i, j]``: the C
    tiles then start as ``tilezero`` and the nest goes."""
    shape = (ROWS * a_rows, ROWS * b_cols)
    t = c.memref.type
    if not isinstance(t, MemRefType) or tuple(t.get_shape()) != shape:
        return None
    if not indices_are(c, [ivs["i"], ivs["j"]], list(shape)):
        return None
    nest = head.prev_op
    if not isinstance(nest, affine.ForOp):
        return None
    band = [nest]
    ops = body_ops(nest)
    if len(ops) != 1 or not isinstance(ops[0], affine.ForOp):
        return None
    band.append(ops[0])
    (store, *rest) = body_ops(ops[0])
    if rest or not isinstance(store, affine.StoreOp) or store.memref is not c.memref:
        return None
    for loop, extent in zip(band, shape, strict=True):
        if constant_bounds(loop) != (0, extent) or step_of(loop) != 1 or loop.inits:
            return None
    value = store.value.owner
    if not (
        isinstance(value, arith.ConstantOp)
        and isinstance(value.value, IntegerAttr | FloatAttr)
        and value.value.value.data == 0
    ):
        return None
    return (
        nest if indices_are(store, [iv(loop) for loop in band], list(shape)) else None
    )
