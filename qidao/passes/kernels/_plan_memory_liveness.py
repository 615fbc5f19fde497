"""What ``plan-memory`` and ``compiled.stats`` need to know about a host function.

- :func:`argument_access`: which arguments a kernel reads and which it writes, from
  its loads and stores.
- :class:`HostBuffers`: the host's intermediate buffers (``memref.alloc``), the views
  of each (``memref.reinterpret_cast``), where each is allocated, used and freed.
- :func:`buffer_bytes`: the bytes of a static memref.

The host conventions are those of ``convert-tg-to-affine``: one block, buffers
``memref.alloc``'ed, handed to kernels with ``func.call``, viewed with
``memref.reinterpret_cast`` and ``memref.dealloc``'ed after their last use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, NoneAttr, StringAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from qidao.dialects import tg
from qidao.dialects.attributes import KERNEL_ATTR

ELEMENTWISE_OPS = frozenset(op.name for op in tg.ELEMENTWISE_OPS)
"""The tg ops whose kernels read every same-shaped input at the output's index."""


def is_elementwise_label(label: str) -> bool:
    """``"tg.mul+tg.add+tg.relu"`` is; ``"tg.matmul+tg.add"`` and ``"copy"`` are not."""
    return all(part in ELEMENTWISE_OPS for part in label.split("+"))


def element_bytes(element_type: Attribute) -> int:
    width = getattr(element_type, "bitwidth", None)
    if not isinstance(width, int):
        raise ValueError(f"plan-memory: element type {element_type} has no bit width")
    return max(1, (width + 7) // 8)


def numel(t: MemRefType) -> int:
    count = 1
    for d in t.get_shape():
        count *= d
    return count


def buffer_bytes(t: MemRefType) -> int:
    """Bytes of a static memref (its elements, not counting any view's strides)."""
    return numel(t) * element_bytes(t.element_type)


def is_plain(t: Attribute) -> bool:
    """A static, row-major memref at offset 0 (no layout attribute)."""
    return (
        isinstance(t, MemRefType)
        and isinstance(t.layout, NoneAttr)
        and all(d >= 0 for d in t.get_shape())
    )


class Access(Enum):
    READ = "read"
    WRITE = "write"
    READ_WRITE = "read-write"
    UNKNOWN = "unknown"  # handed to an op that is not a load or a store


_LOADS = (affine.LoadOp, memref.LoadOp)
_STORES = (affine.StoreOp, memref.StoreOp)


def argument_access(kernel: func.FuncOp) -> list[Access]:
    """How ``kernel`` touches each argument: loads only, stores only, both, or
    something else (then nothing is assumed). An unused argument counts as read."""
    if not kernel.body.blocks:
        return [Access.UNKNOWN] * len(kernel.function_type.inputs.data)
    result: list[Access] = []
    for arg in kernel.body.block.args:
        reads = writes = unknown = False
        for use in arg.uses:
            user = use.operation
            if isinstance(user, _LOADS) and use.index == 0:
                reads = True
            elif isinstance(user, _STORES) and use.index == 1:
                writes = True
            else:
                unknown = True
        if unknown:
            result.append(Access.UNKNOWN)
        elif reads and writes:
            result.append(Access.READ_WRITE)
        elif writes:
            result.append(Access.WRITE)
        else:
            result.append(Access.READ)
    return result


def functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    """The module's top-level functions by name."""
    return {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}


def call_counts(module: ModuleOp) -> dict[str, int]:
    """How many ``func.call`` ops name each callee, anywhere in the module."""
    counts: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, func.CallOp):
            name = op.callee.string_value()
            counts[name] = counts.get(name, 0) + 1
    return counts


def kernel_label(f: func.FuncOp | None) -> str | None:
    label = None if f is None else f.attributes.get(KERNEL_ATTR)
    return label.data if isinstance(label, StringAttr) else None


@dataclass(eq=False)
class Buffer:
    """One ``memref.alloc`` of the host block and what happens to it (compared and
    hashed as itself, so it can be a graph node)."""

    alloc: memref.AllocOp
    start: int  # position of the alloc in the block
    end: int = -1  # position of its dealloc
    dealloc: memref.DeallocOp | None = None
    uses: list[int] = field(default_factory=list)  # positions of calls using it
    plannable: bool = True  # every use understood: calls, views, one dealloc

    @property
    def type(self) -> MemRefType:
        t = self.alloc.memref.type
        assert isinstance(t, MemRefType)
        return t

    @property
    def first_use(self) -> int:
        return min(self.uses, default=self.start)

    @property
    def last_use(self) -> int:
        return max(self.uses, default=self.start)


class HostBuffers:
    """The intermediate buffers of one host block, with their lifetimes.

    A buffer is *plannable* when it is a static row-major ``memref.alloc`` in this
    block whose value and views (``memref.reinterpret_cast``, any depth) are only
    passed to ``func.call``s of this block and freed by exactly one
    ``memref.dealloc`` after its last use. Anything else (a store, a return, a use
    in a nested region, a second dealloc) makes it unplannable: it is left alone.
    """

    def __init__(self, block: Block) -> None:
        self.block = block
        self.ops: list[Operation] = list(block.ops)
        self.position: dict[Operation, int] = {op: i for i, op in enumerate(self.ops)}
        self.buffers: dict[SSAValue, Buffer] = {}
        self.root: dict[SSAValue, SSAValue] = {}  # a value or view -> its alloc
        for op in self.ops:
            if isinstance(op, memref.AllocOp):
                buf = Buffer(op, self.position[op])
                self.buffers[op.memref] = buf
                self.root[op.memref] = op.memref
                buf.plannable = (
                    is_plain(op.memref.type)
                    and not op.dynamic_sizes
                    and not op.symbol_operands
                )
                self._visit(buf, op.memref)
                if buf.dealloc is None or buf.end < buf.last_use:
                    buf.plannable = False

    def _visit(self, buf: Buffer, value: SSAValue) -> None:
        for use in list(value.uses):
            user = use.operation
            if user.parent_block() is not self.block:
                buf.plannable = False
                continue
            at = self.position[user]
            if isinstance(user, func.CallOp):
                buf.uses.append(at)
            elif isinstance(user, memref.ReinterpretCastOp) and use.index == 0:
                self.root[user.result] = buf.alloc.memref
                self._visit(buf, user.result)
            elif isinstance(user, memref.DeallocOp) and value is buf.alloc.memref:
                if buf.dealloc is not None:
                    buf.plannable = False
                buf.dealloc, buf.end = user, at
            else:
                buf.plannable = False

    def buffer_of(self, value: SSAValue) -> Buffer | None:
        """The buffer a value (or a view of it) lives in, if it is an alloc here."""
        root = self.root.get(value)
        return None if root is None else self.buffers[root]


def memory_stats(module: ModuleOp, host: func.FuncOp) -> dict[str, int]:
    """Per call of ``host``: kernel launches, intermediate buffers allocated, the peak
    bytes of intermediates alive at once, and the intermediate traffic.

    Traffic counts, for every kernel call, the bytes it writes into intermediate
    buffers plus the bytes of each intermediate tensor it reads (once per call, through
    any number of views): so each intermediate tensor costs its size times (1 write +
    the number of calls that read it). Graph inputs, outputs and constants are not
    intermediates. Shared or in-place buffers count the tensor they hold at the time.
    """
    funcs = functions(module)
    kernels = buffers = live = peak = traffic = 0
    root: dict[SSAValue, SSAValue] = {}
    allocated: dict[SSAValue, int] = {}  # alloc -> its bytes
    holds: dict[SSAValue, int] = {}  # alloc -> bytes of the tensor it holds now
    for op in host.body.walk():
        if isinstance(op, memref.AllocOp):
            t = op.memref.type
            assert isinstance(t, MemRefType)
            root[op.memref] = op.memref
            allocated[op.memref] = buffer_bytes(t)
            buffers += 1
            live += allocated[op.memref]
            peak = max(peak, live)
        elif isinstance(op, memref.ReinterpretCastOp) and op.source in root:
            root[op.result] = root[op.source]
        elif isinstance(op, memref.DeallocOp) and op.memref in allocated:
            live -= allocated[op.memref]
        elif isinstance(op, func.CallOp):
            kernels += 1
            callee = funcs.get(op.callee.string_value())
            access = (
                argument_access(callee)
                if callee is not None
                else [Access.UNKNOWN] * len(op.arguments)
            )
            if len(access) != len(op.arguments):
                access = [Access.UNKNOWN] * len(op.arguments)
            written = (Access.WRITE, Access.READ_WRITE)
            read = {
                root[v]
                for v, a in zip(op.arguments, access, strict=True)
                if v in root and a not in written
            }
            traffic += sum(holds.get(r, allocated[r]) for r in read)
            for v, a in zip(op.arguments, access, strict=True):
                if v in root and a in written:
                    out = v.type
                    assert isinstance(out, MemRefType)
                    holds[root[v]] = buffer_bytes(out)
                    traffic += buffer_bytes(out)
    return {
        "kernels": kernels,
        "buffers": buffers,
        "peak_bytes": peak,
        "traffic_bytes": traffic,
    }
