"""``amx``: Intel AMX's tile instructions, on memrefs, with the tiles named.

AMX has eight tile registers ``tmm0..tmm7``, each up to 16 rows of 64 bytes,
shaped by a 64-byte configuration (``ldtilecfg``). ``tdpbusd`` multiplies a tile
of unsigned bytes ``A`` (16 rows x 64) by a tile of signed bytes ``B`` in VNNI
order (16 rows of 16 four-byte groups: ``B[k/4][j][k%4]``, as ``tg.matmul_integer``
packs its rhs) into a tile of int32 ``C`` (16 x 16)::

    C[i, j] += sum over q in [0, 16), r in [0, 4) of zext(A[i, 4q + r]) * sext(B[q, j, r])

16,384 multiply-adds in one instruction, against 64 for AVX-512 VNNI's
``vpdpbusd``. ``tdpbf16ps`` (AMX-BF16) multiplies a tile of bfloat16 pairs ``A``
(16 rows x 32) by a tile of bfloat16 pairs ``B`` (16 rows of 16 pairs:
``B[k/2][j][k%2]``, as ``tg.matmul_bf16`` packs its rhs) into a tile of float32
``C`` (16 x 16)::

    C[i, j] += sum over q in [0, 16), r in [0, 2) of A[i, 2q + r] * B[q, j, r]

(the products exact, the sums float32, inputs and results below 2**-126 flushed
to zero). The ops::

    amx.tile_config rows = [0, 16, ...] colsb = [0, 64, ...]   // ldtilecfg, 8 tiles (0: unused)
    amx.tile_zero 0                                       // tmm0 = 0
    amx.tile_load 4, %A[%i, %k] : memref<64x576xi8> rows_dim 0     // tmm4 = 16 rows of A
    amx.tile_mul 0, 4, 6                                  // tdpbusd tmm0, tmm4, tmm6
    amx.tile_mulf 0, 4, 6                                 // tdpbf16ps tmm0, tmm4, tmm6
    amx.tile_store 0, %C[%i, %j] : memref<64x64xi32> rows_dim 0    // 16 rows of C
    amx.tile_release                                      // tilerelease

A ``tile_load``/``tile_store`` moves the tile's rows starting at the indexed
element: row ``t`` at that element plus ``t`` times the stride of dimension
``rows_dim``, each row the configured number of bytes, contiguous from there (so
the memref's last dimension must have stride 1). MLIR's ``amx`` dialect holds a
tile as an SSA value (``vector<16x64xi8>``) and leaves the choice of registers to
LLVM's tile register allocator, which works on the ``x86_amx`` type that xDSL's
LLVM dialect does not have; here, as in ``_tile_loadd(4, p, stride)`` of the
intrinsics guide, the schedule names the registers, and the ops lower to LLVM's
``llvm.x86.tileloadd64`` and friends (``qidao/passes/cpu/llvm/amx.py``). The ops
have memory effects, so nothing moves them past one another.

``tensorize``'s CPU intrinsics ``amx_int8`` and ``amx_bf16`` make them
(``qidao/passes/schedule/loops/amx.py``). They run only on a CPU with AMX-INT8
(AMX-BF16 for ``tile_mulf``) whose OS granted the process the tile state (the CPU
target's ``amx`` option checks both: ``qidao/runtime/amx.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    f32,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

TILES = 8
"""Tile registers tmm0..tmm7."""
MAX_ROWS = 16
MAX_COLSB = 64
"""A tile's largest shape: 16 rows of 64 bytes."""

_I8 = IntegerType(8)
_ELEMENT_BYTES: dict[Attribute, int] = {_I8: 1, i16: 2, i32: 4, f32: 4}
"""The element types a tile moves (int8 operands, bfloat16 bits; int32 and
float32 sums), and their bytes."""


def _tile(op: Operation, value: IntegerAttr, what: str) -> int:
    t = value.value.data
    if not 0 <= t < TILES:
        raise VerifyException(
            f"{op.name}: {what} must be a tile 0..{TILES - 1}, got {t}"
        )
    return t


def memref_strides(t: MemRefType[Attribute]) -> tuple[int, ...]:
    """The element strides of a memref (row-major when it has no layout)."""
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        return tuple(s if s is not None else -1 for s in layout.get_strides())
    strides, step = [], 1
    for size in reversed(t.get_shape()):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


@irdl_op_definition
class TileConfigOp(IRDLOperation):
    """``ldtilecfg``: palette 1, tile ``t`` of ``rows[t]`` rows of ``colsb[t]``
    bytes (0 and 0: unused). Every other op needs one before it, in the same
    thread."""

    name = "amx.tile_config"
    rows = prop_def(DenseArrayBase.constr(i64))
    colsb = prop_def(DenseArrayBase.constr(i64))
    assembly_format = "`rows` `=` $rows `colsb` `=` $colsb attr-dict"

    def __init__(self, rows: Sequence[int], colsb: Sequence[int]) -> None:
        super().__init__(
            properties={
                "rows": DenseArrayBase.from_list(i64, list(rows)),
                "colsb": DenseArrayBase.from_list(i64, list(colsb)),
            }
        )

    def shapes(self) -> list[tuple[int, int]]:
        rows = [int(x) for x in self.rows.get_values()]
        colsb = [int(x) for x in self.colsb.get_values()]
        return list(zip(rows, colsb, strict=True))

    def verify_(self) -> None:
        rows, colsb = self.rows.get_values(), self.colsb.get_values()
        if len(rows) != TILES or len(colsb) != TILES:
            raise VerifyException(
                f"amx.tile_config: rows and colsb must have {TILES} entries (one per "
                f"tile), got {len(rows)} and {len(colsb)}"
            )
        for t, (r, c) in enumerate(zip(rows, colsb, strict=True)):
            if (r == 0) != (c == 0) or not (0 <= r <= MAX_ROWS and 0 <= c <= MAX_COLSB):
                raise VerifyException(
                    f"amx.tile_config: tile {t} must be 1..{MAX_ROWS} rows of "
                    f"1..{MAX_COLSB} bytes, or 0 and 0 (unused), got {r} x {c}"
                )
            if c % 4:
                raise VerifyException(
                    f"amx.tile_config: tile {t}'s row of {c} bytes is not whole "
                    "int32s (a multiple of 4)"
                )


@irdl_op_definition
class TileZeroOp(IRDLOperation):
    """``tilezero``: every byte of the tile 0."""

    name = "amx.tile_zero"
    tile = prop_def(IntegerAttr[I64])
    assembly_format = "$tile attr-dict"

    def __init__(self, tile: int) -> None:
        super().__init__(properties={"tile": IntegerAttr(tile, i64)})

    def verify_(self) -> None:
        _tile(self, self.tile, "the tile")


class _TileMemoryOp(IRDLOperation):
    """A tile's rows to or from a memref (module docstring)."""

    tile = prop_def(IntegerAttr[I64])
    rows_dim = prop_def(IntegerAttr[I64])
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    assembly_format = (
        "$tile `,` $memref `[` $indices `]` `:` type($memref) `rows_dim` $rows_dim "
        "attr-dict"
    )

    def __init__(
        self, tile: int, memref: SSAValue, indices: Sequence[SSAValue], rows_dim: int
    ) -> None:
        super().__init__(
            operands=[memref, list(indices)],
            properties={
                "tile": IntegerAttr(tile, i64),
                "rows_dim": IntegerAttr(rows_dim, i64),
            },
        )

    def row_stride_bytes(self) -> int:
        """The bytes from one row of the tile to the next."""
        t = self.memref.type
        assert isinstance(t, MemRefType)
        element = _ELEMENT_BYTES[t.get_element_type()]
        return memref_strides(t)[self.rows_dim.value.data] * element

    def verify_(self) -> None:
        _tile(self, self.tile, "the tile")
        t = self.memref.type
        assert isinstance(t, MemRefType)
        rank = t.get_num_dims()
        if t.get_element_type() not in _ELEMENT_BYTES:
            raise VerifyException(
                f"{self.name}: the memref must hold i8, i16 (bfloat16 bits), i32 or "
                f"f32, got {t}"
            )
        if len(self.indices) != rank:
            raise VerifyException(
                f"{self.name}: {len(self.indices)} indices for the rank-{rank} {t}"
            )
        dim = self.rows_dim.value.data
        if not 0 <= dim < rank - 1:
            raise VerifyException(
                f"{self.name}: rows_dim must be a dimension before the last of {t} "
                f"(0..{rank - 2}), got {dim}"
            )
        if memref_strides(t)[-1] != 1:
            raise VerifyException(
                f"{self.name}: the last dimension of {t} must have stride 1 (a row's "
                "bytes are contiguous)"
            )


@irdl_op_definition
class TileLoadOp(_TileMemoryOp):
    """``tileloadd``: the tile's rows from the memref."""

    name = "amx.tile_load"


@irdl_op_definition
class TileStoreOp(_TileMemoryOp):
    """``tilestored``: the tile's rows to the memref."""

    name = "amx.tile_store"


class _TileProduct(IRDLOperation):
    """A tile product ``acc += a x b`` of three named tiles."""

    acc = prop_def(IntegerAttr[I64])
    a = prop_def(IntegerAttr[I64])
    b = prop_def(IntegerAttr[I64])
    assembly_format = "$acc `,` $a `,` $b attr-dict"

    def __init__(self, acc: int, a: int, b: int) -> None:
        super().__init__(
            properties={
                "acc": IntegerAttr(acc, i64),
                "a": IntegerAttr(a, i64),
                "b": IntegerAttr(b, i64),
            }
        )

    def verify_(self) -> None:
        _three_tiles(self, self.acc, self.a, self.b)


@irdl_op_definition
class TileMulOp(_TileProduct):
    """``tdpbusd acc, a, b``: ``acc += a (unsigned bytes) x b (signed bytes, VNNI
    order)`` in wrapping int32 (module docstring)."""

    name = "amx.tile_mul"


@irdl_op_definition
class TileMulfOp(_TileProduct):
    """``tdpbf16ps acc, a, b``: ``acc += a x b`` of bfloat16 pairs in float32
    (module docstring)."""

    name = "amx.tile_mulf"


def _three_tiles(
    op: Operation, acc: IntegerAttr, a: IntegerAttr, b: IntegerAttr
) -> None:
    tiles = [_tile(op, attr, what) for attr, what in ((acc, "acc"), (a, "a"), (b, "b"))]
    if len(set(tiles)) != 3:
        raise VerifyException(
            f"{op.name}: acc, a and b must be three different tiles, got {tiles}"
        )


@irdl_op_definition
class TileReleaseOp(IRDLOperation):
    """``tilerelease``: the tiles and their configuration back to the init state."""

    name = "amx.tile_release"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


AMX = Dialect(
    "amx",
    [
        TileConfigOp,
        TileZeroOp,
        TileLoadOp,
        TileStoreOp,
        TileMulOp,
        TileMulfOp,
        TileReleaseOp,
    ],
    [],
)
