"""``plan-memory``: intermediate buffers whose lifetimes do not overlap share memory.

    %a = alloc; call k0(.., %a); call k1(%a, ..); dealloc %a
    %b = alloc; call k2(.., %b); ...; dealloc %b
        ==>  %slot = alloc; call k0(.., %slot); call k1(%slot, ..); call k2(.., %slot)

    call @k(%a, %b) with %b = f(%a) elementwise and %a dead after  ==>  call @k(%a, %a)

Runs on the host functions that ``convert-tg-to-affine`` makes (any ``func.func``
without ``qd.kernel``). Each ``memref.alloc`` lives from its alloc to its
``memref.dealloc``; the pass gives every buffer a *slot*, and a slot that several
buffers share is allocated where its first buffer was and freed where its last
buffer was. Results never change; the rules say why.

Rules:
- Only *plannable* buffers take part: static row-major allocs of the host block
  whose value and views (``memref.reinterpret_cast``) are only passed to
  ``func.call``s and freed by one ``memref.dealloc`` after their last use. Graph
  inputs and outputs are function arguments, not allocs: never reused. Any other
  use (a store, a return, a nested region) leaves that buffer alone.
- A view keeps its buffer alive: a buffer's last use is the last call that gets the
  buffer or any view of it.
- Reuse across time: a buffer takes a slot only when the slot's previous buffer was
  freed before this one is allocated, and only a slot of the same element type.
  Best fit: the smallest free slot that is large enough; when none is, the largest
  free slot grows (the slot is allocated once, at its final size). A slot shared by
  buffers of different shapes is a 1-D ``memref<N x T>``; each buffer becomes a
  ``memref.reinterpret_cast`` of it (a pointer pass-through in the back end).
- The peak never grows: the planner also tries best fit without growing and no
  sharing at all, and keeps the plan with the lowest peak bytes (then the fewest
  buffers).
- In place: a call may write its output into one of its inputs' buffer when
  - the kernel's ``qd.kernel`` is made of elementwise ops only (``tg.add``, ...,
    ``tg.relu``, joined by ``+``), so it reads a same-shaped input at exactly the
    index it writes, before writing it;
  - the kernel stores to exactly one argument, the output, and only loads the rest;
  - the input has exactly the output's type, row-major (not a broadcast, strided or
    offset view);
  - the input's buffer is plannable, its last use is this call, and no other
    argument of the call reaches that buffer; the output is a plannable buffer
    first used by this call;
  - the kernel is called once in the module, because the pass then rewrites it:
    it drops ``llvm.noalias`` from the kernel's input and output arguments (two
    noalias pointers to the same memory would be undefined behaviour in LLVM), and
    the kernel stores through its input argument, which it loads at the same
    index. Through two arguments, LLVM's vectorizer cannot tell that they are the
    same memory read and written at one index: it guards the vector loop with a
    check that the pointers are at least a vector apart, which an in-place call
    fails, so the kernel ran its scalar loop. GPT-2's tanh GELU (4 x 128 x 1024
    floats, in place) took ~1.5 ms a call instead of ~0.1 whenever LLVM did not
    inline it into the host program (where it sees both pointers).

The buffers that must share one slot (an in-place chain) are the
``nx.connected_components`` of the graph whose edges join an input's buffer to the
output written over it, which is exactly what chaining them means. The slots
themselves are not an ``nx.greedy_color`` of an interference graph: lifetimes are
intervals of one block (two buffers interfere unless one is freed before the other
is allocated), and best fit needs the buffer sizes that a colouring ignores.

Before:
```mlir
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @main_k0_exp(%x, %0) : (memref<8xf32>, memref<8xf32>) -> ()
  %1 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @main_k1_neg(%0, %1) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %0 : memref<8xf32>
  func.call @main_k2_relu(%1, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %1 : memref<8xf32>
  func.return
}
```
After (``@main_k1_neg`` has lost ``llvm.noalias`` on both arguments and stores
through ``%in0``, which the call passes as ``%out`` too):
```mlir
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %slot0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @main_k0_exp(%x, %slot0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @main_k1_neg(%slot0, %slot0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @main_k2_relu(%slot0, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %slot0 : memref<8xf32>
  func.return
}
```
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    i64,
)
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.passes import ModulePass

from qidao.passes.kernels._plan_memory_liveness import (
    Access,
    Buffer,
    HostBuffers,
    argument_access,
    call_counts,
    element_bytes,
    functions,
    is_elementwise_label,
    kernel_label,
    memory_stats,
    numel,
)

__all__ = ["PlanMemoryPass", "memory_stats", "write_in_place"]


@dataclass
class _Group:
    """Buffers that must share memory (an in-place chain), or one buffer."""

    members: list[Buffer]

    @property
    def start(self) -> int:
        return min(b.start for b in self.members)

    @property
    def end(self) -> int:
        return max(b.end for b in self.members)

    @property
    def element_type(self) -> Attribute:
        return self.members[0].type.element_type

    @property
    def size(self) -> int:
        """Elements."""
        return max(numel(b.type) for b in self.members)


@dataclass
class _Slot:
    element_type: Attribute
    size: int  # elements
    groups: list[_Group] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.groups[0].start

    @property
    def end(self) -> int:
        return self.groups[-1].end

    @property
    def bytes(self) -> int:
        return self.size * element_bytes(self.element_type)


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Share intermediate buffers across time, and write elementwise results in place."""

    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = functions(op)
        counts = call_counts(op)
        for f in funcs.values():
            if kernel_label(f) is None and len(f.body.blocks) == 1:
                _plan_host(f.body.block, funcs, counts)


def _plan_host(
    block: Block, funcs: dict[str, func.FuncOp], counts: dict[str, int]
) -> None:
    host = HostBuffers(block)
    plannable = [b for b in host.buffers.values() if b.plannable]
    if not plannable:
        return
    in_place = nx.Graph()  # an edge: a call writes one buffer over the other
    in_place.add_nodes_from(plannable)
    noalias_drops: list[tuple[func.FuncOp, int, int]] = []
    for call in (op for op in host.ops if isinstance(op, func.CallOp)):
        found = _in_place(call, host, funcs, counts)
        if found is None:
            continue
        kernel, i, w, into = found
        in_place.add_edge(into, host.buffers[call.arguments[w]])
        noalias_drops.append((kernel, i, w))
    chains = nx.connected_components(in_place)
    groups = sorted((_Group(sorted(c, key=_buffer_start)) for c in chains), key=_start)
    fixed = [
        (b.start, b.end if b.dealloc else len(host.ops), _bytes(b))
        for b in host.buffers.values()
        if not b.plannable
    ]
    plans = [_assign(groups, grow=True), _assign(groups, grow=False)]
    plans.append([_Slot(g.element_type, g.size, [g]) for g in groups])
    best = min(plans, key=lambda slots: (_peak(slots, fixed), len(slots)))
    # a buffer alone in its slot stays as it was: its own alloc and dealloc
    shared = [s for s in best if sum(len(g.members) for g in s.groups) > 1]
    for k, slot in enumerate(shared):
        _rewrite(block, slot, f"slot{k}")
    for kernel, i, w in noalias_drops:
        write_in_place(kernel, i, w)


def _start(g: _Group) -> int:
    return g.start


def _bytes(b: Buffer) -> int:
    return numel(b.type) * element_bytes(b.type.element_type)


def _in_place(
    call: func.CallOp,
    host: HostBuffers,
    funcs: dict[str, func.FuncOp],
    counts: dict[str, int],
) -> tuple[func.FuncOp, int, int, Buffer] | None:
    """(kernel, input index, output index, input's buffer) when ``call`` may write
    its output over an input (the rules in the module docstring), else None."""
    name = call.callee.string_value()
    kernel = funcs.get(name)
    label = kernel_label(kernel)
    if kernel is None or label is None or not is_elementwise_label(label):
        return None
    if counts.get(name, 0) != 1:
        return None
    access = argument_access(kernel)
    if len(access) != len(call.arguments) or Access.UNKNOWN in access:
        return None
    writes = [k for k, a in enumerate(access) if a is not Access.READ]
    if len(writes) != 1 or access[writes[0]] is not Access.WRITE:
        return None
    w = writes[0]
    at = host.position[call]
    out_value = call.arguments[w]
    out = host.buffers.get(out_value)  # the alloc itself, not a view
    if out is None or not out.plannable or out.first_use != at:
        return None
    for i, value in enumerate(call.arguments):
        if i == w or value.type != out_value.type:
            continue
        into = host.buffer_of(value)
        if into is None or into is out or not into.plannable or into.last_use != at:
            continue
        others = [v for k, v in enumerate(call.arguments) if k != i]
        if any(host.buffer_of(v) is into for v in others):
            continue
        return kernel, i, w, into
    return None


def _assign(groups: list[_Group], grow: bool) -> list[_Slot]:
    """Best fit in allocation order; with ``grow``, a too-small free slot grows."""
    slots: list[_Slot] = []
    for g in groups:
        free = [
            s for s in slots if s.element_type == g.element_type and s.end < g.start
        ]
        fits = [s for s in free if s.size >= g.size]
        if fits:
            slot = min(fits, key=_size)
        elif grow and free:
            slot = max(free, key=_size)
            slot.size = g.size
        else:
            slot = _Slot(g.element_type, g.size)
            slots.append(slot)
        slot.groups.append(g)
    return slots


def _size(s: _Slot) -> int:
    return s.size


def _peak(slots: list[_Slot], fixed: list[tuple[int, int, int]]) -> int:
    """The most bytes alive at any op: each slot from its start to its end."""
    spans = [(s.start, s.end, s.bytes) for s in slots] + fixed
    points = {start for start, _, _ in spans}
    return max(
        (sum(n for s, e, n in spans if s <= p <= e) for p in points),
        default=0,
    )


def _rewrite(block: Block, slot: _Slot, name: str) -> None:
    """One alloc for the slot where its first buffer was allocated, one dealloc where
    its last buffer was freed; each buffer becomes the slot or a view of it."""
    members = sorted((b for g in slot.groups for b in g.members), key=_buffer_start)
    types = {b.type for b in members}
    slot_type: MemRefType = (
        members[0].type
        if len(types) == 1
        else MemRefType(slot.element_type, [slot.size])
    )
    alloc = memref.AllocOp([], [], slot_type, IntegerAttr(64, i64))
    alloc.memref.name_hint = name
    block.insert_op_before(alloc, members[0].alloc)
    last = max(members, key=_buffer_end)
    assert last.dealloc is not None
    block.insert_op_before(memref.DeallocOp.get(alloc.memref), last.dealloc)
    views: dict[MemRefType, SSAValue] = {slot_type: alloc.memref}
    for b in members:  # in order, so the first view of a type dominates the rest
        assert b.dealloc is not None
        b.dealloc.detach()
        b.dealloc.erase()
        if b.type not in views:
            cast = memref.ReinterpretCastOp(
                alloc.memref,
                [],
                [],
                [],
                [0],
                list(b.type.get_shape()),
                _row_major_strides(b.type.get_shape()),
                b.type,
            )
            cast.result.name_hint = b.alloc.memref.name_hint
            block.insert_op_before(cast, b.alloc)
            views[b.type] = cast.result
        b.alloc.memref.replace_all_uses_with(views[b.type])
        b.alloc.detach()
        b.alloc.erase()


def _buffer_start(b: Buffer) -> int:
    return b.start


def _buffer_end(b: Buffer) -> int:
    return b.end


def _row_major_strides(shape: tuple[int, ...]) -> list[int]:
    strides: list[int] = []
    step = 1
    for d in reversed(shape):
        strides.insert(0, step)
        step *= d
    return strides


def write_in_place(kernel: func.FuncOp, i: int, w: int) -> None:
    """The kernel, now called with argument ``w`` over argument ``i``'s memory:
    its stores to ``w`` go to ``i`` (the same memory, the same type) and both lose
    ``llvm.noalias``."""
    block = kernel.body.block
    block.args[w].replace_all_uses_with(block.args[i])
    _drop_noalias(kernel, (i, w))


def _drop_noalias(kernel: func.FuncOp, indices: tuple[int, ...]) -> None:
    """Remove ``llvm.noalias`` from the kernel's arguments at ``indices``."""
    if kernel.arg_attrs is None:
        return
    attrs = list(kernel.arg_attrs.data)
    for k in indices:
        kept = {n: a for n, a in attrs[k].data.items() if n != "llvm.noalias"}
        attrs[k] = DictionaryAttr(kept)
    kernel.arg_attrs = ArrayAttr(attrs)
