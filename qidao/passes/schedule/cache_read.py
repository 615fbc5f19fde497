"""``cache_read``: the tile of an input memref that a loop's body reads is packed into a
local contiguous buffer (``memref.alloca``) at the top of the body, and the body
reads the packed copy.

    for L ...                                ==>   for L ...
      for k in [0, K), for c in [0, C)               w_pack = alloca : memref<KxC>
        ... = w[k, b + c]                            for L_cr_i0, L_cr_i1:
                                                       w_pack[k, c] = w[k, b + c]
                                                     for k, for c
                                                       ... = w_pack[k, c]

Options: ``kernel``, ``loop`` (L, its ``qd.loop`` name) and ``buffer`` (the name of
the memref, e.g. ``"w"`` for the kernel argument ``%w``), e.g. ``cache-read{
kernel="main_k0_matmul" loop="j_o" buffer="w"}``. This is CPU packing: in a matmul
with ``split`` i by 8 and j by 32, ``reorder(j_o, i_o, k, i_i, j_i)``,
``cache_read(j_o, "w")`` copies the K x 32 panel of B once per j_o, and the register
tile then streams it contiguously (128 bytes a row) instead of with the row stride
of B (4 KiB at N = 1024), which wastes TLB entries and cache sets.

The box packed is the *footprint* of the memref in L's body (``loops/footprint.py``):
each ``affine.load`` index is split into a part affine in the induction variables of
loops inside L (constant lower bound, a constant bound on the trip count) and a part
invariant in L's body (values defined outside L, and L's own induction variable);
the invariant parts must be equal up to a constant in each dimension, and the box
is the bounding box of every load, of at most 262144 elements (1 MiB of f32).
Loads become ``<buffer>_pack[tile-relative index]``; the copy loops are named
``<L>_cr_i<d>`` (so one ``cache_read`` per loop). The pack may hold elements the
body does not read (a strided access); they are copied all the same.

Tails: when a loop inside L has a ``min`` upper bound (``split`` by a factor that
does not divide the extent), the copy loops are clipped to the memref's shape
(``min(C, N - b)``), which must be static; the body reads only the part copied.

The buffer lives on the stack: ``convert-to-llvm`` hoists every static
``memref.alloca`` to the entry block of its function (``passes/cpu/llvm/memref.py``), so the
pack takes constant stack space however often L runs, and inside a loop that
``parallel`` outlines, each thread has its own. The 1 MiB cap keeps it well inside
the 8 MiB of the main thread and of libgomp's workers (glibc's default thread
stack is the ``ulimit -s`` limit, 8 MiB; ``OMP_STACKSIZE`` raises it).

Legality (an ``IllegalScheduleError``/``LoopNotFoundError`` naming kernel, loop and
reason; the module is left as it was): exactly one memref named ``buffer`` is used
in L's body, only by ``affine.load``; the body writes no view of it, and when it
writes another memref that is not a local buffer, one of the two is an
``llvm.noalias`` argument (else the packed copy could go stale); every index is
affine as above; the footprint has at most 262144 elements; the kernel has no loops
named like the new ones.

Before (``cache-read{kernel="k" loop="j_o" buffer="w"}``):
```mlir
affine.for %j_o = 0 to 2 {
  affine.for %k = 0 to 4 {
    affine.for %j_i = 0 to 4 {
      %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<4x8xf32>
      %b = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "k"}
} {qd.loop = "j_o"}
```
After:
```mlir
affine.for %j_o = 0 to 2 {
  %w_pack = memref.alloca() : memref<4x4xf32>
  affine.for %j_o_cr_i0 = 0 to 4 {
    affine.for %j_o_cr_i1 = 0 to 4 {
      %0 = affine.load %w[%j_o_cr_i0, %j_o_cr_i1 + %j_o * 4] : memref<4x8xf32>
      affine.store %0, %w_pack[%j_o_cr_i0, %j_o_cr_i1] : memref<4x4xf32>
    } {qd.loop = "j_o_cr_i1"}
  } {qd.loop = "j_o_cr_i0"}
  affine.for %k = 0 to 4 {
    affine.for %j_i = 0 to 4 {
      %a = affine.load %w_pack[%k, %j_i] : memref<4x4xf32>
      %b = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "k"}
} {qd.loop = "j_o"}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, func, memref, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DictionaryAttr,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.footprint import compact_map, copy_nest, footprint
from qidao.passes.schedule.loops.nest import check_new_names, find_loop

PRIMITIVE = "cache-read"
MAX_ELEMENTS = 1 << 18
"""262144 elements: 1 MiB of f32 on the stack."""

VIEWS = (
    memref.SubviewOp,
    memref.ReinterpretCastOp,
    memref.CastOp,
    memref.ExpandShapeOp,
    memref.CollapseShapeOp,
)
READS = (affine.LoadOp, memref.LoadOp, vector.LoadOp, *VIEWS)
"""Ops that only read the memref operands they take (views count: they access
nothing; what is done through them is checked through their results' users)."""


def _fail(kernel: str, loop: str, reason: str) -> IllegalScheduleError:
    return IllegalScheduleError(PRIMITIVE, kernel, loop, reason)


def _root(value: SSAValue) -> SSAValue:
    """The memref that ``value`` views (itself when it is no view)."""
    while isinstance(value.owner, VIEWS):
        value = value.owner.operands[0]
    return value


def _is_local(value: SSAValue) -> bool:
    return isinstance(value.owner, memref.AllocaOp | memref.AllocOp)


def _is_noalias(fn: func.FuncOp, value: SSAValue) -> bool:
    if not isinstance(value, BlockArgument) or value.owner is not fn.body.block:
        return False
    if fn.arg_attrs is None:
        return False
    attrs = fn.arg_attrs.data[value.index]
    return isinstance(attrs, DictionaryAttr) and "llvm.noalias" in attrs.data


def _memrefs(loop: affine.ForOp) -> list[SSAValue]:
    """The memrefs that ops in ``loop``'s body take, in order of first use."""
    found: list[SSAValue] = []
    for op in loop.body.walk():
        for value in op.operands:
            if isinstance(value.type, MemRefType) and all(
                value is not f for f in found
            ):
                found.append(value)
    return found


def _spell(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "an unnamed memref"


def _target(
    fn: func.FuncOp, kernel: str, name: str, loop: affine.ForOp, buffer: str
) -> SSAValue:
    """The memref named ``buffer`` that the body reads; raises unless packing it
    keeps the body's semantics (see the module docstring)."""
    used = _memrefs(loop)
    matches = [v for v in used if v.name_hint == buffer]
    if not matches:
        known = ", ".join(_spell(v) for v in used) or "none"
        raise _fail(
            kernel,
            name,
            f"no memref named %{buffer} is used in its body; it uses: {known}",
        )
    if len(matches) > 1:
        raise _fail(
            kernel,
            name,
            f"{len(matches)} different memrefs named %{buffer} are used in its "
            "body: which one to pack is ambiguous",
        )
    target = matches[0]
    for use in target.uses:
        user = use.operation
        if not loop.is_ancestor(user):
            continue
        if isinstance(user, affine.StoreOp) and user.memref is target:
            raise _fail(
                kernel,
                name,
                f"its body writes %{buffer} (affine.store): only a memref that the "
                "body only reads can be packed",
            )
        if not isinstance(user, affine.LoadOp):
            raise _fail(
                kernel,
                name,
                f"%{buffer} is used by {user.name} in its body; only its "
                "affine.load reads can be packed",
            )
    _check_writes(fn, kernel, name, loop, target)
    return target


def _check_writes(
    fn: func.FuncOp, kernel: str, name: str, loop: affine.ForOp, target: SSAValue
) -> None:
    """No op in the body may write a memref that could alias ``target``."""
    root = _root(target)
    for op in loop.body.walk():
        if isinstance(op, READS):
            continue
        for value in op.operands:
            if not isinstance(value.type, MemRefType):
                continue
            written = _root(value)
            if written is root:
                raise _fail(
                    kernel,
                    name,
                    f"its body writes {_spell(value)} ({op.name}), a view of "
                    f"{_spell(target)}: only a memref that the body only reads can "
                    "be packed",
                )
            if _is_local(written) or _is_noalias(fn, root) or _is_noalias(fn, written):
                continue
            raise _fail(
                kernel,
                name,
                f"its body writes {_spell(value)} ({op.name}), which may alias "
                f"{_spell(target)} (neither is an llvm.noalias argument): the "
                "packed copy could go stale",
            )


def cache_read(module: ModuleOp, kernel: str, loop: str, buffer: str) -> None:
    """Pack the tile of ``buffer`` that ``loop``'s body reads into an alloca."""
    fn, target_loop = find_loop(module, PRIMITIVE, kernel, loop)
    target = _target(fn, kernel, loop, target_loop, buffer)
    plan = footprint(PRIMITIVE, kernel, loop, target_loop, target, MAX_ELEMENTS)
    rank = len(plan.extents)
    check_new_names(
        fn, [f"{loop}_cr_i{d}" for d in range(rank)], PRIMITIVE, kernel, loop
    )
    # --- rewrite: nothing fails from here on -------------------------------------
    memref_type = target.type
    assert isinstance(memref_type, MemRefType)
    alloca = memref.AllocaOp.get(memref_type.element_type, shape=plan.extents)
    alloca.memref.name_hint = f"{buffer}_pack"
    block = target_loop.body.block
    first = block.first_op
    assert first is not None
    block.insert_op_before(alloca, first)
    copy_nest(f"{loop}_cr_i", plan, alloca.memref, block, first, True)
    for access in plan.accesses:
        op = access.op
        assert isinstance(op, affine.LoadOp)
        new_map, new_operands = compact_map(access.relative, list(op.indices))
        load = affine.LoadOp(alloca.memref, new_operands, AffineMapAttr(new_map))
        load.result.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(load.result)
        _replace(op, load)


def _replace(old: Operation, new: Operation) -> None:
    parent = old.parent_block()
    assert parent is not None
    parent.insert_op_before(new, old)
    old.detach()
    old.erase()


@dataclass(frozen=True)
class CacheReadPass(ModulePass):
    """Pack the tile of a memref a loop's body reads into a local buffer."""

    name = "cache-read"

    kernel: str
    loop: str
    buffer: str

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cache_read(op, self.kernel, self.loop, self.buffer)
