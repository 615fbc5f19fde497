"""Tensorized tiles as ``nvcuda::wmma`` code: fragments, ``load_matrix_sync``,
``mma_sync``, ``store_matrix_sync``.

``tensorize`` (``qidao/passes/schedule/tensorize.py``) marks a 16 x 16 matmul tile
``qd.tensorize = "wmma_tf32"`` (16 x 16 x 8) or ``"wmma_f16"`` (16 x 16 x 16) and
proves that one warp runs it: the launch's ``threadIdx.x`` is the warp's 32 lanes
(block-stride loops of 32 threads), and every lane reaches the tile with the same
indices. :func:`write_wmma` (one dispatch line at the top of
``StatementWriter.op``) writes such a tile and what WMMA holds in its own form:

- **A tile**: A's 16 x k and B's k x 16 matrices in ``matrix_a``/``matrix_b``
  fragments (``load_matrix_sync`` from the matrix's first element with its leading
  dimension ``ldm``: ``row_major`` when the matrix is contiguous along its rows,
  ``col_major`` along its columns, as the ``__shared__`` staging layout or the
  memref's strides say), one ``mma_sync`` into C's accumulator fragment. Tiles
  written one after the other share fragments: a tile whose A (or B) is the
  matrix the tile before it loaded uses that fragment (the 4 x 4 tiles of a warp
  load 4 A and 4 B fragments a k step, not 16 of each), until any other op.
- **Rounding**: a TF32 input is rounded with ``__float_to_tf32`` (to nearest,
  ties away, 10 mantissa bits; the CUDA guide asks it before ``mma_sync``), and
  an FP16 input is a half. When the input is a ``cache_read`` buffer staged in
  ``__shared__``, its staging copy rounds each element as it stores it: TF32 into
  the f32 array, FP16 with ``__float2half_rn`` into the same array read as
  ``__half`` (declared as the f32 tile, so the halves use half of it; the staging
  code is every kernel's). Once per element per block, instead of once per
  fragment load of each warp; and the FP16 fragments can only load halves, so an
  FP16 input must be staged (``tensorize`` refuses global ones). A TF32 input
  read from global memory is rounded in the fragment (``qd_to_tf32``). A buffer
  so rounded is read by the tiles of its intrinsic only (refused otherwise).
- **Accumulators**: C in a buffer allocated in the nest (``cache_write`` of the
  warp's tile of C) is an array of ``accumulator`` fragments, one per 16 x 16
  block (a 64 x 64 ``%acc``: 16 fragments, 128 floats a lane in registers), so it
  stays in registers across the k loop. Its copy-in loops (``acc = C``) become a
  ``load_matrix_sync`` per fragment, its write-back a ``store_matrix_sync``, a
  fill with a constant ``fill_fragment``; a tile multiplies into the fragment at
  its origin (a multiple of 16 in both dimensions). Any other use of such a
  buffer is refused: a fragment's elements are not addressable. C in memory (a
  tile whose lanes share its rows) is loaded into a fragment, multiplied into and
  stored back by the tile.

WMMA's rules, checked with a ``CudaEmitError`` naming the kernel, the loop and the
reason: ``ldm`` a multiple of 16 bytes (4 floats, 8 halves); every matrix's
first element 32 bytes (256 bits) aligned, proved from its offset's linear form
(each coefficient and the constant a multiple of 8 floats or 16 halves) over a
base that is: a kernel argument (``cudaMalloc``: 256 bytes) or a ``__shared__``
staging array, which ``shared_memory.py`` declares ``__align__(32)``; the first
fragment load of each such array still checks its address and stops the kernel
(``__trap()``) rather than compute garbage, should a declaration ever lose that
alignment; an operand in a per-thread array refused (the lanes must read one
matrix).

Each program with a tensorized tile starts with :data:`WMMA_PREAMBLE`
(``program.py``): ``<mma.h>`` under ``__CUDACC__`` (the emulator brings its own
``nvcuda::wmma``, ``qidao/runtime/cuda_emulate_wmma.py``), ``namespace wmma =
nvcuda::wmma`` and ``qd_to_tf32``.

Before: ``tensorize.py``'s example, which it shows as CUDA C. The default
tensor-core schedule (``tensor_cores.py``), matmul 128 x 64 x 128, a warp's step
of 8 in k (its 4 x 4 tiles)::

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[16];  // 64 x 64 ...
    const auto qd_out = out + (i_o_o * 16384 + i_o_i * 8192 + j_o_o * 128 + ...);
    wmma::load_matrix_sync(acc[0], qd_out, 128, wmma::mem_row_major);
    ...
      a_pack[...] = wmma::__float_to_tf32(v0);           // the staging copies
      ...
      // loop 'i_i_i' tensorized: acc += a_pack x b_pack, wmma_tf32 (16 x 16 x 8)
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32,
                     wmma::col_major> qd_a;              // A staged k-major
      wmma::load_matrix_sync(qd_a, a_pack + (i_o_i * 64 + ... + k_i_o * 1024), 128);
      wmma::fragment<...matrix_b..., wmma::row_major> qd_b;
      wmma::load_matrix_sync(qd_b, b_pack + (j_o_i * 64 + k_i_o * 1024), 128);
      wmma::mma_sync(acc[0], qd_a, qd_b, acc[0]);
      // loop 'i_i_i_u1' tensorized: ...
      wmma::fragment<...matrix_b...> qd_b_1;             // qd_a again
      wmma::load_matrix_sync(qd_b_1, b_pack + (j_o_i * 64 + k_i_o * 1024 + 16), 128);
      wmma::mma_sync(acc[1], qd_a, qd_b_1, acc[1]);
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import FloatAttr, MemRefType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineMap

from qidao.compiler.targets.cuda.emit.c_types import float_literal, layout_of
from qidao.compiler.targets.cuda.emit.errors import CudaEmitError
from qidao.compiler.targets.cuda.emit.writer import CWriter, Pointer
from qidao.passes.schedule.loops.errors import ScheduleError
from qidao.passes.schedule.loops.linear import Linear, linear_form
from qidao.passes.schedule.loops.nest import (
    body_ops,
    constant_bounds,
    iv,
    loop_name,
    root_buffer,
    step_of,
)
from qidao.passes.schedule.tensorize import (
    INTRINSICS,
    Intrinsic,
    Tile,
    check_tile,
    tensorized,
)

FRAGMENT = 16
"""The rows and columns of an accumulator fragment (m = n = 16 for both
intrinsics)."""
ALIGN_BYTES = 32
"""WMMA's load and store pointers are 256-bit aligned."""
LDM_BYTES = 16
"""WMMA's leading dimensions are multiples of 16 bytes."""

WMMA_PREAMBLE = """\
// Tensor cores (tensorize): nvcuda::wmma from <mma.h>; the emulator brings its own.
#ifdef __CUDACC__
#include <mma.h>
#endif
namespace wmma = nvcuda::wmma;
// TF32: each element rounded to 10 mantissa bits (cvt.rna.tf32.f32) before mma_sync.
template <typename Fragment>
__device__ __forceinline__ void qd_to_tf32(Fragment& f) {
  for (int t = 0; t < f.num_elements; ++t) f.x[t] = wmma::__float_to_tf32(f.x[t]);
}
"""


def wmma_preamble(source: str) -> str:
    """What a program whose kernels are ``source`` starts with for WMMA: the
    include and the helpers when a kernel uses ``wmma::``, else nothing."""
    return WMMA_PREAMBLE if "wmma::" in source else ""


# --- what a kernel holds --------------------------------------------------------------


@dataclass
class Accumulator:
    """A buffer of C held as ``accumulator`` fragments: ``rows x cols`` fragments of
    16 x 16, for tiles of ``intrinsic``; ``name`` once declared."""

    alloca: memref.AllocaOp | memref.AllocOp
    rows: int
    cols: int
    intrinsic: Intrinsic
    rank: int = 2
    """The buffer's rank: the matrix is its last two dimensions (a batched matmul's
    tile has a leading dimension of 1)."""
    name: str = ""

    def fragment_type(self) -> str:
        return (
            f"wmma::fragment<wmma::accumulator, {FRAGMENT}, {FRAGMENT}, "
            f"{self.intrinsic.k}, float>"
        )


@dataclass
class Copy:
    """A loop nest that copies an accumulator in (``"load"``: ``acc[r, c] =
    X[..]``), out (``"store"``: ``X[..] = acc[r, c]``) or fills it with a constant
    (``"fill"``)."""

    kind: str
    accumulator: Accumulator
    loops: list[affine.ForOp]
    other: affine.LoadOp | affine.StoreOp | None
    value: SSAValue | None = None


@dataclass
class Plan:
    """The tensorized tiles of one kernel and the buffers WMMA holds in its form."""

    tiles: dict[affine.ForOp, tuple[Tile, Intrinsic]] = field(default_factory=dict)
    accumulators: dict[SSAValue, Accumulator] = field(default_factory=dict)
    copies: dict[affine.ForOp, Copy] = field(default_factory=dict)
    rounded: dict[SSAValue, Intrinsic] = field(default_factory=dict)
    """Staging buffers of tiles' A and B, rounded to the intrinsic's precision by
    their copy (half: stored as ``__half``)."""
    checked: set[str] = field(default_factory=set)
    """``__shared__`` arrays whose alignment this launch has checked."""
    fragments: dict[tuple[str, ...], str] = field(default_factory=dict)
    """The ``matrix_a``/``matrix_b`` fragments loaded by the tiles written one
    after the other so far (by type and source): the next tile reuses them; any
    other op forgets them."""


_PLANS: weakref.WeakKeyDictionary[CWriter, Plan] = weakref.WeakKeyDictionary()


def _plan(w: CWriter) -> Plan:
    plan = _PLANS.get(w)
    if plan is None:
        plan = _make_plan(w.fn, w.kernel)
        _PLANS[w] = plan
    return plan


def _make_plan(fn: func.FuncOp, kernel: str) -> Plan:
    plan = Plan()
    for op in fn.walk():
        name = tensorized(op)
        if name is None or not isinstance(op, affine.ForOp):
            continue
        where = f"kernel '{kernel}': loop '{loop_name(op)}' (tensorized {name})"
        intrinsic = INTRINSICS.get(name)
        if intrinsic is None:
            raise CudaEmitError(f"{where}: unknown intrinsic")
        try:
            tile = check_tile(fn, op, kernel, intrinsic)
        except ScheduleError as err:
            raise CudaEmitError(
                f"{where}: the tile no longer passes tensorize's checks after the "
                f"rest of the schedule: {err.reason}"
            ) from err
        plan.tiles[op] = (tile, intrinsic)
        c = root_buffer(tile.c.memref)
        if isinstance(c, OpResult) and _is_local(c):
            assert isinstance(c.owner, memref.AllocaOp | memref.AllocOp)
            _add_accumulator(plan, c.owner, intrinsic, where)
        for operand in (tile.a, tile.b):
            root = root_buffer(operand.memref)
            if _is_local(root):
                known = plan.rounded.setdefault(root, intrinsic)
                if known is not intrinsic:
                    raise CudaEmitError(
                        f"{where}: %{root.name_hint} is read by tiles of "
                        f"{known.name} and {intrinsic.name}, which round it "
                        "differently; cache_read a copy for each"
                    )
    for acc in plan.accumulators.values():
        _find_uses(plan, acc, kernel)
    for buffer, intrinsic in plan.rounded.items():
        _check_rounded_uses(plan, buffer, intrinsic, kernel)
    return plan


def _is_local(value: SSAValue) -> bool:
    """True for a buffer allocated in the kernel (a staging buffer, an
    accumulator), as opposed to an argument."""
    return isinstance(value, OpResult) and isinstance(
        value.owner, memref.AllocaOp | memref.AllocOp
    )


def _add_accumulator(
    plan: Plan,
    alloca: memref.AllocaOp | memref.AllocOp,
    intrinsic: Intrinsic,
    where: str,
) -> None:
    buffer = alloca.memref
    known = plan.accumulators.get(buffer)
    if known is not None:
        if known.intrinsic is not intrinsic:
            raise CudaEmitError(
                f"{where}: %{buffer.name_hint} accumulates tiles of "
                f"{known.intrinsic.name} and {intrinsic.name}, whose accumulator "
                "fragments differ; tensorize its tiles with one intrinsic"
            )
        return
    t = buffer.type
    assert isinstance(t, MemRefType)
    shape = t.get_shape()
    if (
        len(shape) < 2
        or any(n != 1 for n in shape[:-2])
        or any(n % FRAGMENT for n in shape[-2:])
    ):
        raise CudaEmitError(
            f"{where}: the accumulator %{buffer.name_hint} ({t}) must be a matrix "
            f"of whole {FRAGMENT} x {FRAGMENT} fragments (its other dimensions of "
            "extent 1: a batch's)"
        )
    plan.accumulators[buffer] = Accumulator(
        alloca, shape[-2] // FRAGMENT, shape[-1] // FRAGMENT, intrinsic, len(shape)
    )


def _find_uses(plan: Plan, acc: Accumulator, kernel: str) -> None:
    """Each use of an accumulator is a tile's C or in a copy nest (``Copy``)."""
    buffer = acc.alloca.memref
    block = acc.alloca.parent_block()
    tile_ops = {
        id(op)
        for tile, _ in plan.tiles.values()
        if tile.c.memref is buffer
        for op in (tile.c.op, tile.store)
    }
    for use in buffer.uses:
        user = use.operation
        if id(user) in tile_ops:
            continue
        head: Operation | None = user
        while head is not None and head.parent_block() is not block:
            head = head.parent_op()
        copy = (plan.copies.get(head) if isinstance(head, affine.ForOp) else None) or (
            _copy_nest(head, acc) if isinstance(head, affine.ForOp) else None
        )
        if copy is None:
            raise CudaEmitError(
                f"kernel '{kernel}': %{buffer.name_hint} holds a tensorized tile's "
                f"accumulator (WMMA fragments), and '{user.name}' uses it outside "
                "the tiles and the copy loops of cache_write: a fragment's elements "
                "are not addressable"
            )
        assert isinstance(head, affine.ForOp)
        plan.copies[head] = copy


def _copy_nest(head: affine.ForOp, acc: Accumulator) -> Copy | None:
    """``head`` as a copy of the whole accumulator: a perfect nest of a loop per
    dimension (those before the rows and columns of one iteration) whose body
    copies ``acc[.., r, c]`` from or to another buffer, or stores a constant into
    it; else None."""
    loops = [head]
    ops = body_ops(head)
    while len(ops) == 1 and isinstance(ops[0], affine.ForOp) and len(loops) < acc.rank:
        loops.append(ops[0])
        ops = body_ops(ops[0])
    extents = [1] * (acc.rank - 2) + [acc.rows * FRAGMENT, acc.cols * FRAGMENT]
    if len(loops) != acc.rank:
        return None
    for loop, extent in zip(loops, extents, strict=True):
        if constant_bounds(loop) != (0, extent) or step_of(loop) != 1 or loop.inits:
            return None
    buffer = acc.alloca.memref
    ivs = [iv(lp) for lp in loops]
    if len(ops) == 1 and isinstance(ops[0], affine.StoreOp):
        store = ops[0]
        value = store.value.owner
        if (
            store.memref is buffer
            and _is_point(store, ivs)
            and isinstance(value, arith.ConstantOp)
            and isinstance(value.value, FloatAttr)
        ):
            return Copy("fill", acc, loops, None, store.value)
        return None
    if len(ops) != 2:
        return None
    load, copy = ops
    if not (
        isinstance(load, affine.LoadOp)
        and isinstance(copy, affine.StoreOp)
        and copy.value is load.result
    ):
        return None
    if copy.memref is buffer and _is_point(copy, ivs) and load.memref is not buffer:
        return Copy("load", acc, loops, load)
    if load.memref is buffer and _is_point(load, ivs) and copy.memref is not buffer:
        return Copy("store", acc, loops, copy)
    return None


def _is_point(op: affine.LoadOp | affine.StoreOp, ivs: list[SSAValue]) -> bool:
    """``op`` accesses ``[ivs[0], ivs[1], ...]`` exactly."""
    affine_map = op.map.data
    operands = list(op.indices)
    forms = [linear_form(r, operands, affine_map.num_dims) for r in affine_map.results]
    return len(forms) == len(ivs) and all(
        form == {v: 1} for form, v in zip(forms, ivs, strict=True)
    )


def _check_rounded_uses(
    plan: Plan, buffer: SSAValue, intrinsic: Intrinsic, kernel: str
) -> None:
    """A buffer its copy rounds is stored only by that copy and loaded only as an
    operand of the tiles that round it so."""
    operands = {
        id(operand.op)
        for tile, other in plan.tiles.values()
        if other is intrinsic
        for operand in (tile.a, tile.b)
    }
    for use in buffer.uses:
        user = use.operation
        if isinstance(user, affine.StoreOp) or id(user) in operands:
            continue
        raise CudaEmitError(
            f"kernel '{kernel}': %{buffer.name_hint} holds a {intrinsic.name} "
            f"tile's input, rounded to {intrinsic.precision} by its staging copy, "
            f"and '{user.name}' reads it elsewhere; cache_read a copy for each"
        )


# --- writing --------------------------------------------------------------------------


def write_wmma(w: CWriter, op: Operation) -> bool:
    """Write ``op`` when it is WMMA's (a tensorized tile, an accumulator, its copy
    loops, a staging copy's store that rounds); False for any other op."""
    plan = _plan(w)
    if not plan.tiles:
        return False
    if not (isinstance(op, affine.ForOp) and op in plan.tiles):
        plan.fragments.clear()  # another op: the next tile loads its own
    if isinstance(op, affine.ForOp):
        if op in plan.tiles:
            _write_tile(w, plan, op)
            return True
        if op in plan.copies:
            _write_copy(w, plan.copies[op])
            return True
        return False
    if isinstance(op, memref.AllocaOp | memref.AllocOp):
        acc = plan.accumulators.get(op.memref)
        if acc is None:
            return False
        _declare(w, acc)
        return True
    if isinstance(op, affine.StoreOp) and root_buffer(op.memref) in plan.rounded:
        _write_rounding_store(w, op, plan.rounded[root_buffer(op.memref)])
        return True
    return False


def _declare(w: CWriter, acc: Accumulator) -> None:
    acc.name = w.fresh(acc.alloca.memref.name_hint, "acc")
    w.line(
        f"{acc.fragment_type()} {acc.name}[{acc.rows * acc.cols}];  // "
        f"{acc.rows * FRAGMENT} x {acc.cols * FRAGMENT} f32 of the warp: {acc.rows} "
        f"x {acc.cols} accumulator fragments, in registers"
    )


def _write_copy(w: CWriter, copy: Copy) -> None:
    """An accumulator's copy loops: a ``load_matrix_sync``/``store_matrix_sync`` or
    a ``fill_fragment`` per fragment."""
    acc = copy.accumulator
    head = str(loop_name(copy.loops[0]))
    count = acc.rows * acc.cols
    if copy.kind == "fill":
        assert copy.value is not None
        owner = copy.value.owner
        assert isinstance(owner, arith.ConstantOp)
        attr = owner.value
        assert isinstance(attr, FloatAttr)
        value = float_literal(attr.value.data, attr.type)
        w.line(f"// loop '{head}': the {count} fragments of {acc.name} = {value}")
        for q in range(count):
            w.line(f"wmma::fill_fragment({acc.name}[{q}], {value});")
        return
    assert copy.other is not None
    ivs = [iv(lp) for lp in copy.loops]
    rows, cols = ivs[-2:]  # (the loops before them run once: 0)
    moving = _moving(copy.other, [rows, cols])
    matrix = _matrix(w, copy.other, [rows, cols], moving, 4, head, ivs[:-2])
    verb = "loaded from" if copy.kind == "load" else "stored to"
    w.line(
        f"// loop '{head}': the {count} fragments of {acc.name} {verb} "
        f"{matrix.buffer}, by the warp's lanes together"
    )
    base = w.fresh(f"qd_{matrix.buffer}")
    w.line(f"const auto {base} = {matrix.pointer};")
    layout = "wmma::mem_row_major" if matrix.row_major else "wmma::mem_col_major"
    for r in range(acc.rows):
        for c in range(acc.cols):
            offset = FRAGMENT * (r * matrix.row_stride + c * matrix.col_stride)
            pointer = base if offset == 0 else f"{base} + {offset}"
            fragment = f"{acc.name}[{r * acc.cols + c}]"
            if copy.kind == "load":
                call = f"load_matrix_sync({fragment}, {pointer}, "
            else:
                call = f"store_matrix_sync({pointer}, {fragment}, "
            w.line(f"wmma::{call}{matrix.ldm}, {layout});")


def _moving(op: affine.LoadOp | affine.StoreOp, ivs: list[SSAValue]) -> tuple[int, int]:
    """The results of ``op``'s map that move with ``ivs[0]`` and ``ivs[1]`` (the
    copy's row and column counters); ``(0, 1)`` when none does (refused later)."""
    affine_map = op.map.data
    operands = list(op.indices)
    found = [0, 1]
    for r, expr in enumerate(affine_map.results):
        form = linear_form(expr, operands, affine_map.num_dims) or {}
        for n, v in enumerate(ivs):
            if form.get(v, 0):
                found[n] = r
    return found[0], found[1]


def _write_rounding_store(w: CWriter, op: affine.StoreOp, intrinsic: Intrinsic) -> None:
    """A staging copy's store into a tile's input: rounded to the intrinsic's
    precision (TF32 in the f32 array; half into the same array read as
    ``__half``)."""
    pointer = w.pointers.get(op.memref)
    if pointer is None or pointer.staging is None:
        raise w.fail(
            op,
            f"%{op.memref.name_hint} holds an input of a {intrinsic.name} tile and "
            "is not staged in __shared__ (each thread's own array: see the staging "
            "rules of cache_read); the warp's lanes must read one copy",
        )
    ref = w.access(op.memref, w.map_indices(op.map.data, op.indices), op)
    value = w.name(op.value)
    if intrinsic.precision == "f16":
        index = ref[len(pointer.name) + 1 : -1]
        ref = f"reinterpret_cast<__half*>({pointer.name})[{index}]"
        w.line(f"{ref} = __float2half_rn({value});")
    else:
        w.line(f"{ref} = wmma::__float_to_tf32({value});")


@dataclass(frozen=True)
class Matrix:
    """A matrix in memory as WMMA reads it: the C pointer to its first element,
    where it is, whether its rows are contiguous, its leading dimension and its
    two strides (in elements)."""

    buffer: str
    pointer: str
    shared: bool
    row_major: bool
    ldm: int
    row_stride: int
    col_stride: int


def _matrix(
    w: CWriter,
    op: affine.LoadOp | affine.StoreOp,
    ivs: list[SSAValue],
    dims: tuple[int, int],
    itemsize: int,
    loop: str,
    once: Sequence[SSAValue] = (),
) -> Matrix:
    """The matrix that ``op`` walks as ``ivs`` (its row and column counters,
    moving the results ``dims`` of its map) run: its first element (``ivs``, and
    the counters ``once`` of loops that run once, at 0), its layout, and the
    checks of ``ldm`` and of its 32-byte alignment."""
    where = f"kernel '{w.kernel}': loop '{loop}'"
    pointer = w.pointers.get(op.memref)
    if pointer is None:
        raise w.fail(op, "accesses a memref the emitter cannot trace to a buffer")
    root = root_buffer(op.memref)
    name = f"%{root.name_hint or pointer.name}"
    if _is_local(root) and pointer.staging is None:
        raise CudaEmitError(
            f"{where}: {name} is each thread's own array (not staged in __shared__: "
            "see the staging rules of cache_read); the warp's lanes must load one "
            "matrix"
        )
    strides = _strides(w, pointer)
    affine_map = op.map.data
    operands = list(op.indices)
    row = strides[dims[0]] * _coefficient(affine_map, operands, dims[0], ivs[0])
    col = strides[dims[1]] * _coefficient(affine_map, operands, dims[1], ivs[1])
    if 1 not in (row, col):
        raise CudaEmitError(
            f"{where}: {name} moves by {row} and {col} elements along the matrix's "
            "rows and columns in its final layout; WMMA needs unit stride along one "
            "of them"
        )
    row_major = col == 1
    ldm = row if row_major else col
    unit = LDM_BYTES // itemsize
    if ldm <= 0 or ldm % unit:
        raise CudaEmitError(
            f"{where}: {name} has a leading dimension of {ldm} elements; WMMA needs "
            f"a positive multiple of {LDM_BYTES} bytes ({unit} elements)"
        )
    first = _first_element(w, pointer, op, [*ivs, *once], strides)
    if first is None:
        raise CudaEmitError(
            f"{where}: an index of {name} is not linear (mod, floordiv): the "
            f"matrix's {ALIGN_BYTES}-byte alignment cannot be proved"
        )
    align = ALIGN_BYTES // itemsize
    for key, c in first.items():
        if c % align:
            what = "its constant part" if key is None else f"{w.name(key)}"
            raise CudaEmitError(
                f"{where}: the first element of {name}'s matrix may not be "
                f"{ALIGN_BYTES}-byte aligned: {what} moves it by {c} elements, not a "
                f"multiple of {align}; WMMA loads and stores aligned matrices"
            )
    base = pointer.name
    if itemsize == 2:
        const = "const " if isinstance(op, affine.LoadOp) else ""
        base = f"reinterpret_cast<{const}__half*>({pointer.name})"
    offset = _linear_c(w, first)
    text = base if offset == "0" else f"{base} + {_parenthesized(offset)}"
    shared = pointer.staging is not None
    return Matrix(pointer.name, text, shared, row_major, ldm, row, col)


def _parenthesized(expr: str) -> str:
    return expr if expr.replace("_", "").isalnum() else f"({expr})"


def _strides(w: CWriter, pointer: Pointer) -> list[int]:
    if pointer.staging is not None:
        return pointer.staging.strides
    return layout_of(pointer.type, w.kernel)[1]


def _coefficient(
    affine_map: AffineMap, operands: list[SSAValue], result: int, value: SSAValue
) -> int:
    form = linear_form(affine_map.results[result], operands, affine_map.num_dims)
    return 0 if form is None else form.get(value, 0)


def _first_element(
    w: CWriter,
    pointer: Pointer,
    op: affine.LoadOp | affine.StoreOp,
    ivs: list[SSAValue],
    strides: list[int],
) -> Linear | None:
    """The offset of the matrix's first element from the buffer's base, in
    elements, as a linear form over the writer's values (None when an index is not
    linear)."""
    affine_map = op.map.data
    operands = list(op.indices)
    total: Linear = {}
    if pointer.staging is None:
        total[None] = layout_of(pointer.type, w.kernel)[0]
    else:  # a thread's slice of a staged buffer
        for d, (counter, _) in pointer.staging.slices.items():
            start = pointer.staging.extents[d] * strides[d]
            total[counter] = total.get(counter, 0) + start
    for result, stride in zip(affine_map.results, strides, strict=True):
        form = linear_form(result, operands, affine_map.num_dims)
        if form is None:
            return None
        for key, c in form.items():
            if key not in ivs:
                total[key] = total.get(key, 0) + c * stride
    return {k: c for k, c in total.items() if c}


def _linear_c(w: CWriter, form: Linear) -> str:
    """A linear form as a C expression over the writer's names."""
    terms = []
    for key, c in form.items():
        if key is None or c == 0:
            continue
        name = w.name(key)
        terms.append(name if c == 1 else f"{name} * {c}")
    constant = form.get(None, 0)
    if constant or not terms:
        terms.append(str(constant))
    return " + ".join(terms)


def _write_tile(w: CWriter, plan: Plan, loop: affine.ForOp) -> None:
    """A tile: its A and B fragments (loaded, or those of the tile before it), one
    ``mma_sync`` into its accumulator fragment, or into C loaded and stored."""
    tile, intrinsic = plan.tiles[loop]
    name = str(loop_name(loop))
    i, j, k = iv(tile.i), iv(tile.j), iv(tile.k)
    itemsize = 2 if intrinsic.precision == "f16" else 4
    a = _matrix(w, tile.a.op, [i, k], (tile.a.rows, tile.a.cols), itemsize, name)
    b = _matrix(w, tile.b.op, [k, j], (tile.b.rows, tile.b.cols), itemsize, name)
    acc = plan.accumulators.get(tile.c.memref)
    m, n, kk = intrinsic.shape
    into = acc.name if acc is not None else f"%{tile.c.memref.name_hint}"
    w.line(
        f"// loop '{name}' tensorized: {into} += {a.buffer} x {b.buffer}, "
        f"{intrinsic.name} ({m} x {n} x {kk}), by the warp's lanes together"
    )
    frag_a = _fragment(w, plan, "matrix_a", a, tile.a.memref, intrinsic)
    frag_b = _fragment(w, plan, "matrix_b", b, tile.b.memref, intrinsic)
    if acc is not None:
        target = f"{acc.name}[{_fragment_index(w, tile, acc, name)}]"
        w.line(f"wmma::mma_sync({target}, {frag_a}, {frag_b}, {target});")
        return
    c = _matrix(w, tile.c.op, [i, j], (tile.c.rows, tile.c.cols), 4, name)
    layout = "wmma::mem_row_major" if c.row_major else "wmma::mem_col_major"
    frag_c = w.fresh("qd_c")
    w.line(f"wmma::fragment<wmma::accumulator, {m}, {n}, {kk}, float> {frag_c};")
    w.line(f"wmma::load_matrix_sync({frag_c}, {c.pointer}, {c.ldm}, {layout});")
    w.line(f"wmma::mma_sync({frag_c}, {frag_a}, {frag_b}, {frag_c});")
    w.line(f"wmma::store_matrix_sync({c.pointer}, {frag_c}, {c.ldm}, {layout});")


def _fragment(
    w: CWriter,
    plan: Plan,
    use: str,
    matrix: Matrix,
    buffer: SSAValue,
    intrinsic: Intrinsic,
) -> str:
    """The name of a ``matrix_a``/``matrix_b`` fragment holding ``matrix``: loaded
    (and rounded to TF32, unless its staging copy did) or, when a tile just before
    loaded the same one, that fragment."""
    m, n, k = intrinsic.shape
    element = "__half" if intrinsic.precision == "f16" else "wmma::precision::tf32"
    layout = "wmma::row_major" if matrix.row_major else "wmma::col_major"
    kind = f"wmma::fragment<wmma::{use}, {m}, {n}, {k}, {element}, {layout}>"
    key = (kind, matrix.pointer, str(matrix.ldm))
    known = plan.fragments.get(key)
    if known is not None:
        return known
    if matrix.shared and matrix.buffer not in plan.checked:
        plan.checked.add(matrix.buffer)
        w.line(
            f"if (reinterpret_cast<unsigned long long>({matrix.buffer}) % "
            f"{ALIGN_BYTES} != 0) __trap();  // WMMA: {ALIGN_BYTES}-byte aligned "
            "matrices (__shared__ is __align__(32))"
        )
    name = w.fresh(f"qd_{use[-1]}")
    w.line(f"{kind} {name};")
    w.line(f"wmma::load_matrix_sync({name}, {matrix.pointer}, {matrix.ldm});")
    rounded = root_buffer(buffer) in plan.rounded
    if intrinsic.precision == "tf32" and not rounded:
        w.line(f"qd_to_tf32({name});")
    plan.fragments[key] = name
    return name


def _fragment_index(w: CWriter, tile: Tile, acc: Accumulator, loop: str) -> str:
    """The C index of the accumulator fragment a tile multiplies into: its origin in
    the accumulator, over 16 in each dimension."""
    if (tile.c.rows, tile.c.cols) != (acc.rank - 2, acc.rank - 1):
        raise CudaEmitError(
            f"kernel '{w.kernel}': loop '{loop}': the tile writes the accumulator "
            f"%{acc.alloca.memref.name_hint} along dimensions {tile.c.rows} (rows) "
            f"and {tile.c.cols} (columns); its fragments hold its last two "
            "dimensions, rows first"
        )
    op = tile.c.op
    affine_map = op.map.data
    operands = list(op.indices)
    tile_ivs = {iv(tile.i), iv(tile.j), iv(tile.k)}
    parts: list[Linear] = []
    for result in affine_map.results:
        form = linear_form(result, operands, affine_map.num_dims)
        origin = (
            {} if form is None else {k: c for k, c in form.items() if k not in tile_ivs}
        )
        if form is None or any(c % FRAGMENT for c in origin.values()):
            raise CudaEmitError(
                f"kernel '{w.kernel}': loop '{loop}': the tile's origin in the "
                f"accumulator %{acc.alloca.memref.name_hint} ({result}) is not a "
                f"multiple of {FRAGMENT}: it must start a fragment"
            )
        parts.append({k: c // FRAGMENT for k, c in origin.items()})
    if any(c for part in parts[:-2] for c in part.values()):
        raise CudaEmitError(
            f"kernel '{w.kernel}': loop '{loop}': the tile's origin in the "
            f"accumulator %{acc.alloca.memref.name_hint} is not 0 in its dimensions "
            "of extent 1"
        )
    row, col = parts[-2:]
    index: Linear = dict(col)
    for key, c in row.items():
        index[key] = index.get(key, 0) + c * acc.cols
    return _linear_c(w, {k: c for k, c in index.items() if c})


__all__ = ["WMMA_PREAMBLE", "wmma_preamble", "write_wmma"]
