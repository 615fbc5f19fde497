"""``tensorize``: a 16 x 16 matmul tile becomes one warp's tensor-core operation
(GPU), or a 16 x 4 block of byte products one ``vpdpbusd`` (CPU), a 16 x 2 block
of bfloat16 products one ``vdpbf16ps`` (CPU), or a block of an int8 matmul AMX
tile products (CPU).

The CPU's intrinsic, ``avx512_vnni`` (``tensorize{kernel="k" loop="j_i_i"
intrinsic="avx512_vnni"}``), replaces the two loops of an int8 matmul's block
(16 int32 columns, 4 bytes of K) by vector loads and one
``x86vector.avx512.vpdpbusd``: its rules and its errors are
``qidao/passes/schedule/loops/vnni.py``'s; ``avx512_bf16`` does the same for a
bfloat16 matmul's block (16 float32 columns, 2 bfloat16s of K, one
``x86vector.avx512.dot``). ``amx_int8`` (``amx_bf16``) replaces the four loops
of a 16-32 x K x 16-32 block (rows, groups of four bytes, columns, bytes) by AMX
tile loads, ``tdpbusd`` products and stores, the sums in tiles for the whole K:
``qidao/passes/schedule/loops/amx.py``. The rest of this page is the GPU's.

    for i in [0, 16), for j in [0, 16), for k in [0, 8)   ==>   the same loops, marked
      C[.., i, j] += A[.., i, k] * B[.., k, j]                {qd.tensorize = "wmma_tf32"}:
                                                              C += A x B by one WMMA
                                                              mma_sync of the warp

Options: ``kernel``, ``loop`` (the tile's outermost loop, its ``qd.loop`` name) and
``intrinsic``, e.g. ``tensorize{kernel="main_k0_matmul" loop="i_i_i"
intrinsic="wmma_tf32"}``. The pass checks the tile and marks its head
``qd.tensorize = "<intrinsic>"``; the loops stay, so every other check (``bind``'s,
``block_stride``'s, the footprints of ``cache_read``) still reads the loop nest it
is. The CUDA emitter (``qidao/compiler/targets/cuda/emit/wmma.py``) writes a marked
tile as ``nvcuda::wmma`` code: fragments loaded with ``load_matrix_sync``, one
``mma_sync``, an accumulator kept in fragments.

==============  ============  =================================================
intrinsic       m x n x k     inputs (the accumulator is f32 either way)
==============  ============  =================================================
``wmma_tf32``   16 x 16 x 8   f32, rounded to TF32 (10 mantissa bits,
                              ``__float_to_tf32``) by the copy that stages them
                              in ``__shared__``, or in the fragment when read
                              from global memory
``wmma_f16``    16 x 16 x 16  f32 rounded to half by the copy that stages A and
                              B in ``__shared__`` (so both must be staged: an
                              operand read straight from global memory is
                              refused)
==============  ============  =================================================

The tile (a ``TileError`` subclass names kernel, loop and reason otherwise):

1. ``loop`` heads a perfect nest of three loops, in any order, each from 0 with
   step 1, constant bounds and no ``iter_args``; the innermost body is exactly
   ``c = load C[..]; p = mulf(load A[..], load B[..]); store addf(c, p), C[..]``
   (the operands of ``mulf``/``addf`` in either order), C's load and store at
   the same index (``NotMatmulTileError``).
2. The roles come from the indices: ``k`` is the loop C does not use, ``i`` the
   one C and A use, ``j`` the one C and B use; each index of an operand moves with
   at most one of its two loops, with coefficient 1, and the rest of it does not
   move inside the tile (``NotMatmulTileError``). Their extents are the
   intrinsic's ``m x n x k`` (``TileExtentError``).
3. A, B and C are f32 memrefs and the arithmetic is f32 (``TileDtypeError``);
   with ``wmma_f16``, A and B are staging buffers (``cache_read``).
4. Each operand is a matrix with unit stride in one of its two dimensions
   (row- or column-major: WMMA loads either) and a leading dimension (the other
   stride, ``ldm``) of a multiple of 16 bytes (4 floats); C is another buffer
   than A and B (``TileStrideError``). A staging buffer's layout in
   ``__shared__`` and the 32-byte alignment of each tile are the emitter's to
   check, where they are known.

The warp (``WarpMappingError``). WMMA is a warp's collective operation: the 32
lanes of a warp load the fragments and multiply them together, each holding a
part of each matrix. A tensorized tile is therefore run by exactly one warp, and
the lanes are the launch's ``threadIdx.x``, given by ``block_stride`` loops of 32
threads (``qd.threads = 32``, ``loops/block.py``): the code around block-stride
loops is run by every thread of a row of threads, that is by every lane of one
warp, and the rows (``threadIdx.y``/``z``) are the warps. (A loop bound to
``threadIdx.x`` that the tile does not index cannot be the lanes: ``bind``
refuses a loop whose iterations all write the same C, and no primitive makes
such a loop.) So:

5. The tile is inside GPU-bound loops, inside every loop of its nest's chain of
   bound loops (blocks, and ``threadIdx.y``/``z``: each warp its own tile);
   nothing in the chain is on ``threadIdx.x``, and the tile holds no bound loop.
6. Either the tile is run by every lane (it is inside no block-stride loop) and
   the nest's block-stride loops have 32 threads, one warp a row: then C is an
   accumulator allocated in the nest (``cache_write`` of the warp's tile of C),
   whose copy-in and write-back loops are the block-stride loops (the lanes
   share the copies; the emitter keeps the accumulator in WMMA fragments across
   the k loop, loaded and stored once). Or the tile's head is itself a
   block-stride loop of 32 threads (the lanes share the tile: IR-wise each lane
   computes some of its rows, straight into C): then C is not a per-thread
   buffer of the nest.
7. The nest passes ``bind``'s and ``block_stride``'s checks (``check_gpu_nest``).

Both ways, the loop nest is a correct GPU program as written (every lane
computes the tile, or its share of the rows), and WMMA computes the same tile
together. With ``wmma_tf32``/``wmma_f16`` the products are of rounded inputs:
tensorize changes the precision, as the intrinsic's name says. Errors leave the
module as it was.

Before (``tensorize{kernel="k" loop="i_t" intrinsic="wmma_tf32"}``; the first
case of ``tests/filecheck/passes/schedule/tensorize.mlir``): two warps
(``threadIdx.y``), each a 16 x 32 tile of C accumulated in ``%acc``
(``cache_write`` at ``w``), whose copy-in and write-back the 32 lanes share
(``block_stride``), and two 16 x 16 x 8 tiles ``i_t`` multiplying A and B (read
from global memory: TF32 allows it) into it:
```mlir
func.func private @k(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}
```
After: the same, the head marked ``} {qd.loop = "i_t", qd.tensorize =
"wmma_tf32"}``. The CUDA C (``emit/wmma.py``)::

    // grid (1, 1, 1), block (32, 2, 1): w -> threadIdx.y (2), w_cw_i0 ->
    //   threadIdx.x (32, block-stride), w_wb_i0 -> threadIdx.x (32, block-stride)
    const long long w = (long long)threadIdx.y;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2];  // 16 x 32 ...
    const auto qd_out = out + (w * 512);
    wmma::load_matrix_sync(acc[0], qd_out, 32, wmma::mem_row_major);
    wmma::load_matrix_sync(acc[1], qd_out + 16, 32, wmma::mem_row_major);
    for (long long tj = 0; tj < 2; ++tj) {
      // loop 'i_t' tensorized: acc += a x b, wmma_tf32 (16 x 16 x 8), ...
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32,
                     wmma::row_major> qd_a;
      wmma::load_matrix_sync(qd_a, a + (w * 128), 8);
      qd_to_tf32(qd_a);
      ...  (qd_b from b + (tj * 16), ldm 32)
      wmma::mma_sync(acc[tj], qd_a, qd_b, acc[tj]);
    }
    ...  (acc stored to out: two store_matrix_sync)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float32Type,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import TENSORIZE_ATTR
from qidao.passes.schedule.bind import (
    bound_axis,
    check_gpu_nest,
    gpu_loops,
    stride_threads,
    top_level_nest,
)
from qidao.passes.schedule.loops.amx import BF16_INTRINSIC as AMX_BF16_INTRINSIC
from qidao.passes.schedule.loops.amx import INTRINSIC as AMX_INTRINSIC
from qidao.passes.schedule.loops.amx import AmxMatcher
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
    ScheduleError,
)
from qidao.passes.schedule.loops.linear import linear_form
from qidao.passes.schedule.loops.nest import (
    body_ops,
    constant_bounds,
    find_loop,
    iv,
    loop_name,
    root_buffer,
    step_of,
)
from qidao.passes.schedule.loops.vnni import BF16_INTRINSIC, VnniMatcher
from qidao.passes.schedule.loops.vnni import INTRINSIC as VNNI_INTRINSIC

PRIMITIVE = "tensorize"
WARP = 32
"""The lanes of a warp: the threads of ``threadIdx.x`` that run one tile."""
LDM_FLOATS = 4
"""A matrix's leading dimension must be a multiple of 16 bytes: 4 floats (8 halves
for a staged f16 tile, which the emitter checks in its ``__shared__`` layout)."""


@dataclass(frozen=True)
class Intrinsic:
    """A tensor-core operation: ``C (m x n, f32) += A (m x k) x B (k x n)``, the
    inputs rounded to ``precision`` (``"tf32"`` or ``"f16"``)."""

    name: str
    m: int
    n: int
    k: int
    precision: str

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k


INTRINSICS: dict[str, Intrinsic] = {
    "wmma_tf32": Intrinsic("wmma_tf32", 16, 16, 8, "tf32"),
    "wmma_f16": Intrinsic("wmma_f16", 16, 16, 16, "f16"),
}
"""The intrinsics by name: WMMA's m16n16k8 TF32 (sm_80 and later) and m16n16k16
FP16 shapes, both accumulating in f32."""


class TileError(IllegalScheduleError):
    """``tensorize`` refused a tile; the subclass says which rule it broke."""


class NotMatmulTileError(TileError):
    """Not a perfect nest of three loops computing ``C[i, j] += A[i, k] * B[k, j]``."""


class TileExtentError(TileError):
    """The tile's loops do not run the intrinsic's ``m x n x k`` from 0, step 1."""


class TileDtypeError(TileError):
    """An operand is not f32, or an f16 input is not a staging buffer."""


class TileStrideError(TileError):
    """An operand is not a matrix WMMA can load: no unit stride, a leading dimension
    that is not a multiple of 16 bytes, an index that moves with two loops, or C
    overlapping an input."""


class WarpMappingError(TileError):
    """The tile would not be run by exactly one warp (rules 5-7)."""


@dataclass(frozen=True)
class Operand:
    """One matrix of a tile: its access, and the results of the access's map that
    move with its row loop and with its column loop (A: i and k; B: k and j; C: i
    and j)."""

    op: affine.LoadOp | affine.StoreOp
    rows: int
    cols: int

    @property
    def memref(self) -> SSAValue:
        return self.op.memref


@dataclass(frozen=True)
class Tile:
    """A matched tile: its loops (outer to inner), their roles, its operands (``c``
    is C's load) and C's store."""

    loops: tuple[affine.ForOp, affine.ForOp, affine.ForOp]
    i: affine.ForOp
    j: affine.ForOp
    k: affine.ForOp
    a: Operand
    b: Operand
    c: Operand
    store: affine.StoreOp

    @property
    def head(self) -> affine.ForOp:
        return self.loops[0]


def tensorized(op: Operation) -> str | None:
    """The intrinsic a loop is tensorized with (``qd.tensorize``), or None."""
    attr = op.attributes.get(TENSORIZE_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a buffer"


# --- the tile (rules 1-4) -------------------------------------------------------------


@dataclass
class _Matcher:
    fn: func.FuncOp
    head: affine.ForOp
    kernel: str
    intrinsic: Intrinsic

    def fail(self, kind: type[TileError], reason: str) -> TileError:
        return kind(PRIMITIVE, self.kernel, str(loop_name(self.head)), reason)

    def match(self) -> Tile:
        loops = self.nest()
        ivs = [iv(lp) for lp in loops]
        names = [str(loop_name(lp)) for lp in loops]
        a, b, c, store = self.multiply_accumulate(body_ops(loops[2]))
        moves = {op: self.moves(op, ivs) for op in (a, b, c, store)}
        if moves[c] != moves[store] or _index(c) != _index(store):
            raise self.fail(
                NotMatmulTileError,
                "C's load and store must be the same element (C[i, j] += ...)",
            )
        c_loops = set(moves[c])
        if len(c_loops) != 2:
            raise self.fail(
                NotMatmulTileError,
                "C must be indexed by two loops of the tile and not by the third "
                f"(the reduction k); it moves with {_listed(moves[c], names)}",
            )
        (k,) = {0, 1, 2} - c_loops
        role: dict[str, int] = {}
        for label, load in (("A", a), ("B", b)):
            moved = set(moves[load])
            if len(moved) != 2 or k not in moved:
                raise self.fail(
                    NotMatmulTileError,
                    f"{label} must be indexed by k ('{names[k]}') and one loop of "
                    f"C; it moves with {_listed(moves[load], names)}",
                )
            role[label] = (moved - {k}).pop()
        if role["A"] == role["B"]:
            raise self.fail(
                NotMatmulTileError,
                f"A and B both move with '{names[role['A']]}'; a matmul tile reads "
                "A[i, k] and B[k, j]",
            )
        i, j = role["A"], role["B"]
        extents = tuple(_extent(loops[n]) for n in (i, j, k))
        if extents != self.intrinsic.shape:
            m, n, kk = self.intrinsic.shape
            raise self.fail(
                TileExtentError,
                f"{self.intrinsic.name} computes a {m} x {n} x {kk} tile (i x j x "
                f"k); the loops i='{names[i]}', j='{names[j]}', k='{names[k]}' run "
                f"{extents[0]} x {extents[1]} x {extents[2]}",
            )
        tile = Tile(
            (loops[0], loops[1], loops[2]),
            loops[i],
            loops[j],
            loops[k],
            Operand(a, moves[a][i], moves[a][k]),
            Operand(b, moves[b][k], moves[b][j]),
            Operand(c, moves[c][i], moves[c][j]),
            store,
        )
        self.check_types(tile)
        self.check_strides(tile)
        return tile

    def nest(self) -> list[affine.ForOp]:
        """Rule 1's perfect nest of three loops from 0, step 1."""
        loops = [self.head]
        while len(loops) < 3:
            ops = body_ops(loops[-1])
            if len(ops) != 1 or not isinstance(ops[0], affine.ForOp):
                held = ", ".join(op.name for op in ops) or "nothing"
                raise self.fail(
                    NotMatmulTileError,
                    "it must head a perfect nest of three loops (the tile's i, j "
                    f"and k); the body of '{loop_name(loops[-1])}' holds {held}",
                )
            loops.append(ops[0])
        for loop in loops:
            bounds = constant_bounds(loop)
            if bounds is None or bounds[0] != 0 or step_of(loop) != 1 or loop.inits:
                raise self.fail(
                    TileExtentError,
                    f"loop '{loop_name(loop)}' must run from 0 to a constant, step "
                    f"1, without iter_args (it runs from {loop.lowerBoundMap.data} "
                    f"to {loop.upperBoundMap.data}, step {step_of(loop)})",
                )
            if loop is not self.head and (bound_axis(loop) or tensorized(loop)):
                raise self.fail(
                    NotMatmulTileError,
                    f"loop '{loop_name(loop)}' inside the tile is bound to "
                    f"{bound_axis(loop) or tensorized(loop)}",
                )
        return loops

    def multiply_accumulate(
        self, ops: list[Operation]
    ) -> tuple[affine.LoadOp, affine.LoadOp, affine.LoadOp, affine.StoreOp]:
        """The loads of A, B and C and the store of C in ``store c + a * b``."""
        wrong = self.fail(
            NotMatmulTileError,
            "the innermost body must be a multiply-accumulate: three affine.load, "
            "an arith.mulf, an arith.addf and an affine.store of C[i, j] + A[i, k] "
            f"* B[k, j]; it is: {', '.join(op.name for op in ops)}",
        )
        stores = [op for op in ops if isinstance(op, affine.StoreOp)]
        if len(ops) != 6 or len(stores) != 1:
            raise wrong
        store = stores[0]
        add = store.value.owner
        if not isinstance(add, arith.AddfOp):
            raise wrong
        products = [v for v in add.operands if isinstance(v.owner, arith.MulfOp)]
        if not products:
            raise wrong
        product = products[0]
        mul = product.owner
        assert isinstance(mul, arith.MulfOp)
        accumulated = add.rhs if add.lhs is product else add.lhs
        c, a, b = accumulated.owner, mul.lhs.owner, mul.rhs.owner
        if not (
            isinstance(c, affine.LoadOp)
            and isinstance(a, affine.LoadOp)
            and isinstance(b, affine.LoadOp)
            and {id(op) for op in ops} == {id(op) for op in (a, b, c, mul, add, store)}
        ):
            raise wrong
        for value in (a.result, b.result, c.result, product, add.result):
            if value.get_user_of_unique_use() is None:
                raise self.fail(
                    NotMatmulTileError,
                    "a value of the multiply-accumulate is used twice: the tile "
                    "must compute C[i, j] += A[i, k] * B[k, j] and nothing else",
                )
        if c.memref is not store.memref:
            raise self.fail(
                NotMatmulTileError,
                "the accumulated value must be loaded from the memref it is stored "
                f"to; it is loaded from {_name(c.memref)} and stored to "
                f"{_name(store.memref)}",
            )
        return a, b, c, store

    def moves(
        self, op: affine.LoadOp | affine.StoreOp, ivs: list[SSAValue]
    ) -> dict[int, int]:
        """Tile loop (0, 1, 2: outer to inner) -> the result of ``op``'s map that
        moves with it, by exactly 1; any other part of an index must not move in
        the tile (rule 2)."""
        affine_map = op.map.data
        operands = list(op.indices)
        found: dict[int, int] = {}
        for r, expr in enumerate(affine_map.results):
            form = linear_form(expr, operands, affine_map.num_dims)
            if any(v not in ivs and _defined_in(v, self.head) for v in operands):
                raise self.fail(
                    NotMatmulTileError,
                    f"an index of {_name(op.memref)} is computed inside the tile",
                )
            if form is None:
                if any(v in operands for v in ivs):
                    raise self.fail(
                        TileStrideError,
                        f"index {r} of {_name(op.memref)} ({expr}) is not linear",
                    )
                continue
            moving = [n for n, v in enumerate(ivs) if form.get(v, 0)]
            if len(moving) > 1 or any(form[ivs[n]] != 1 for n in moving):
                raise self.fail(
                    TileStrideError,
                    f"index {r} of {_name(op.memref)} ({expr}) must move by 1 with "
                    "at most one loop of the tile (a matrix, element by element)",
                )
            for n in moving:
                if n in found:
                    raise self.fail(
                        TileStrideError,
                        f"two indices of {_name(op.memref)} move with loop "
                        f"'{loop_name(self.head)}': a diagonal, not a matrix",
                    )
                found[n] = r
        return found

    def check_types(self, tile: Tile) -> None:
        """Rule 3: f32 operands; f16 inputs staged."""
        for label, operand in (("A", tile.a), ("B", tile.b), ("C", tile.c)):
            t = operand.memref.type
            assert isinstance(t, MemRefType)
            if not isinstance(t.get_element_type(), Float32Type):
                raise self.fail(
                    TileDtypeError,
                    f"{label} ({_name(operand.memref)}) holds "
                    f"{t.get_element_type()}; {self.intrinsic.name} multiplies f32 "
                    "inputs (rounded to its precision) into an f32 accumulator",
                )
            staged = _allocated_in(operand.memref, self.fn)
            if label != "C" and self.intrinsic.precision == "f16" and not staged:
                raise self.fail(
                    TileDtypeError,
                    f"{self.intrinsic.name} multiplies half tiles, and {label} "
                    f"({_name(operand.memref)}) is f32 in memory: cache_read it "
                    "around the tile, so that the copy staging it in __shared__ "
                    "rounds it to half",
                )

    def check_strides(self, tile: Tile) -> None:
        """Rule 4: unit stride in one dimension, a leading dimension of a multiple
        of 16 bytes; C another buffer than A and B."""
        for label, operand in (("A", tile.a), ("B", tile.b), ("C", tile.c)):
            t = operand.memref.type
            assert isinstance(t, MemRefType)
            strides = t.get_strides()
            if strides is None or any(s is None for s in strides):
                raise self.fail(TileStrideError, f"{label} has a dynamic layout ({t})")
            row, col = strides[operand.rows], strides[operand.cols]
            if 1 not in (row, col):
                raise self.fail(
                    TileStrideError,
                    f"{label} ({_name(operand.memref)}: {t}) moves by {row} and "
                    f"{col} elements along the tile's two dimensions; WMMA loads a "
                    "matrix with unit stride along its rows or its columns",
                )
            ldm = col if row == 1 else row
            if ldm is None or ldm <= 0 or ldm % LDM_FLOATS:
                raise self.fail(
                    TileStrideError,
                    f"{label} ({_name(operand.memref)}: {t}) has a leading "
                    f"dimension of {ldm} elements; WMMA needs a positive multiple "
                    f"of 16 bytes ({LDM_FLOATS} floats)",
                )
        c = root_buffer(tile.c.memref)
        for label, operand in (("A", tile.a), ("B", tile.b)):
            root = root_buffer(operand.memref)
            if root is c or not (_noalias(self.fn, root) or _noalias(self.fn, c)):
                raise self.fail(
                    TileStrideError,
                    f"{label} ({_name(operand.memref)}) may be the buffer C "
                    f"({_name(tile.c.memref)}) writes: WMMA reads all of its tile "
                    "before it writes C's",
                )


def match_tile(
    fn: func.FuncOp, loop: affine.ForOp, kernel: str, intrinsic: Intrinsic
) -> Tile:
    """The tile headed by ``loop`` (rules 1-4), or a ``TileError`` naming the rule
    it breaks. The CUDA emitter matches a tensorized loop again: a primitive
    applied after ``tensorize`` may have changed it."""
    return _Matcher(fn, loop, kernel, intrinsic).match()


def _index(op: affine.LoadOp | affine.StoreOp) -> tuple[object, ...]:
    return (op.map.data, tuple(id(v) for v in op.indices))


def _listed(moves: dict[int, int], names: list[str]) -> str:
    return ", ".join(f"'{names[n]}'" for n in sorted(moves)) or "none of them"


def _extent(loop: affine.ForOp) -> int:
    bounds = constant_bounds(loop)
    assert bounds is not None
    return bounds[1] - bounds[0]


def _defined_in(value: SSAValue, scope: Operation) -> bool:
    """True when ``value`` is computed (or is a block argument) inside ``scope``."""
    owner = value.owner.parent_op() if isinstance(value, BlockArgument) else value.owner
    return isinstance(owner, Operation) and scope.is_ancestor(owner)


def _allocated_in(value: SSAValue, scope: Operation) -> bool:
    root = root_buffer(value)
    return (
        isinstance(root, OpResult)
        and isinstance(root.owner, memref.AllocaOp | memref.AllocOp)
        and scope.is_ancestor(root.owner)
    )


def _noalias(fn: func.FuncOp, root: SSAValue) -> bool:
    """False for a kernel argument without ``llvm.noalias`` (another argument may
    be the same memory)."""
    if not (isinstance(root, BlockArgument) and root.owner is fn.body.block):
        return True
    attrs = fn.arg_attrs
    entry = attrs.data[root.index] if attrs is not None else None
    return isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data


# --- the warp (rules 5-7) -------------------------------------------------------------


def _check_warp(fn: func.FuncOp, tile: Tile, kernel: str, name: str) -> Operation:
    """Rules 5 and 6; the tile's top-level nest."""

    def fail(reason: str) -> WarpMappingError:
        return WarpMappingError(PRIMITIVE, kernel, name, reason)

    head = tile.head
    top = top_level_nest(fn, head)
    bound = gpu_loops(top)
    if not bound:
        raise fail(
            "WMMA runs on a warp of a GPU, and no loop of the tile's nest is bound "
            "to the GPU: bind the loops around it first (blocks, and threadIdx.y/z "
            "for the warps)"
        )
    chain = [lp for lp in bound if stride_threads(lp) is None]
    strided = [lp for lp in bound if stride_threads(lp) is not None]
    for lp in chain:
        if bound_axis(lp) == "threadIdx.x":
            raise fail(
                f"loop '{loop_name(lp)}' is bound to threadIdx.x, which is the "
                f"warp's {WARP} lanes (block_stride loops of {WARP} threads); bind "
                "the warps to threadIdx.y and threadIdx.z"
            )
        if not lp.is_ancestor(head):
            raise fail(
                f"the bound loop '{loop_name(lp)}' is not around the tile: each warp "
                "runs its own tile, inside every bound loop of the nest"
            )
    c_private = _allocated_in(tile.c.memref, top)
    own = stride_threads(head)
    if own is not None:  # the lanes share the tile's rows
        if own != WARP:
            raise fail(
                f"the tile is a block-stride loop of {own} threads; a WMMA tile is "
                f"one warp's, {WARP} threads"
            )
        if c_private:
            raise fail(
                f"C ({_name(tile.c.memref)}) is each thread's own buffer, and the "
                "lanes share the tile's rows: no lane would hold all of it. Leave "
                "the tile to every lane (not block-stride) and block_stride the "
                "accumulator's copy-in and write-back loops instead"
            )
        return top
    around = [lp for lp in strided if lp.is_ancestor(head)]
    if around:
        raise fail(
            f"the tile is inside the block-stride loop '{loop_name(around[0])}', "
            "whose iterations the lanes share: a WMMA tile takes all 32 lanes"
        )
    if not strided:
        raise fail(
            "WMMA is a warp's operation and the nest has no lanes: threadIdx.x "
            f"must be {WARP} threads of block_stride loops. With C accumulated in a "
            "cache_write buffer at loop L: block_stride(kernel, 32, '<L>_cw_i0', "
            "'<L>_wb_i0') (the lanes share its copy-in and write-back); or "
            "block_stride the tile's head itself"
        )
    threads = stride_threads(strided[0]) or 0
    if threads != WARP:
        raise fail(
            f"the nest's block-stride loops have {threads} threads, {threads // WARP} "
            f"warps a row of threads, which would each run the tile: a row must be "
            f"one warp ({WARP} threads)"
        )
    if not c_private:
        raise fail(
            f"C ({_name(tile.c.memref)}) is not allocated in the nest, and every "
            "lane runs the tile: accumulate the warp's tile of C in a cache_write "
            "buffer (its copy loops block-stride), or make the tile's head a "
            "block-stride loop of 32 threads"
        )
    return top


def check_tile(
    fn: func.FuncOp, loop: affine.ForOp, kernel: str, intrinsic: Intrinsic
) -> Tile:
    """The tile headed by ``loop`` checked by rules 1-6 (``match_tile`` and the
    warp), or the ``TileError`` of the first rule it breaks. The CUDA emitter
    checks a tensorized loop again: a primitive applied after ``tensorize`` may
    have changed its tile or its nest."""
    tile = match_tile(fn, loop, kernel, intrinsic)
    _check_warp(fn, tile, kernel, str(loop_name(loop)))
    return tile


# --- the primitive --------------------------------------------------------------------


def tensorize(module: ModuleOp, kernel: str, loop: str, intrinsic: str) -> None:
    """Check the tile headed by ``loop`` of ``kernel`` (rules 1-7) and mark it with
    ``intrinsic`` (one of ``INTRINSICS``)."""
    fn, head = find_loop(module, PRIMITIVE, kernel, loop)
    cpu = (VNNI_INTRINSIC, BF16_INTRINSIC, AMX_INTRINSIC, AMX_BF16_INTRINSIC)
    if intrinsic in cpu:  # the CPU's: the loops replaced
        errors: dict[str, type[IllegalScheduleError]] = {
            "tile": NotMatmulTileError,
            "extent": TileExtentError,
            "dtype": TileDtypeError,
            "stride": TileStrideError,
        }
        bf16 = intrinsic in (BF16_INTRINSIC, AMX_BF16_INTRINSIC)
        amx = intrinsic in (AMX_INTRINSIC, AMX_BF16_INTRINSIC)
        matcher = AmxMatcher if amx else VnniMatcher
        matcher(fn, head, kernel, loop, errors, bf16).rewrite()
        return
    if intrinsic not in INTRINSICS:
        known = ", ".join(f"{n} ({i.m}x{i.n}x{i.k})" for n, i in INTRINSICS.items())
        known += f", {VNNI_INTRINSIC} (CPU: 16 x 4 bytes, loops/vnni.py)"
        known += f", {BF16_INTRINSIC} (CPU: 16 x 2 bfloat16s, loops/vnni.py)"
        known += f", {AMX_INTRINSIC} (CPU: 16-32 x K x 16-32 bytes, loops/amx.py)"
        known += f", {AMX_BF16_INTRINSIC} (CPU: the same of bfloat16s, loops/amx.py)"
        raise InvalidArgumentError(
            PRIMITIVE,
            kernel,
            loop,
            f"unknown intrinsic '{intrinsic}'; the intrinsics are: {known}",
        )
    if tensorized(head) is not None:
        raise NotMatmulTileError(
            PRIMITIVE, kernel, loop, f"it is tensorized already ({tensorized(head)})"
        )
    outer = head.parent_op()
    while outer is not None and outer is not fn:
        if tensorized(outer) is not None:
            raise NotMatmulTileError(
                PRIMITIVE,
                kernel,
                loop,
                f"it is inside the tensorized tile of loop '{loop_name(outer)}'",
            )
        outer = outer.parent_op()
    tile = check_tile(fn, head, kernel, INTRINSICS[intrinsic])
    top = top_level_nest(fn, tile.head)
    head.attributes[TENSORIZE_ATTR] = StringAttr(intrinsic)
    try:
        check_gpu_nest(fn, top, kernel, loop)
    except ScheduleError as err:
        del head.attributes[TENSORIZE_ATTR]
        raise WarpMappingError(
            PRIMITIVE,
            kernel,
            loop,
            f"the tile's nest does not pass the GPU checks ({err.primitive}): "
            f"{err.reason}",
        ) from err


@dataclass(frozen=True)
class TensorizePass(ModulePass):
    """Mark a 16 x 16 matmul tile as one warp's tensor-core operation (WMMA)."""

    name = "tensorize"

    kernel: str
    loop: str
    intrinsic: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tensorize(op, self.kernel, self.loop, self.intrinsic)


__all__ = [
    "INTRINSICS",
    "WARP",
    "Intrinsic",
    "NotMatmulTileError",
    "Operand",
    "TensorizePass",
    "Tile",
    "TileDtypeError",
    "TileError",
    "TileExtentError",
    "TileStrideError",
    "WarpMappingError",
    "check_tile",
    "match_tile",
    "tensorize",
    "tensorized",
]
