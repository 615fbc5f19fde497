"""Run ``qd.parallel`` loops on libgomp's threads: outline the loop, call GOMP_parallel.

    scf.for %i = %lb to %ub step %s { body } {qd.parallel}
        ==>  ctx = [captured values]; GOMP_parallel(@k_i_par, ctx, threads, 0)

For each ``scf.for`` marked ``qd.parallel`` (by the ``parallel`` pass, kept by
``lower-affine``) in function ``@k``, named ``i`` (``qd.loop``):

- ``@k_i_par_body(captured..., %i_lo, %i_hi)`` holds the loop, now over
  ``[%i_lo, %i_hi)``. Its parameters are the values the loop uses from ``@k``
  (memrefs, index values, scalars); constants are cloned in instead, so LLVM still
  sees them. A memref parameter keeps ``llvm.noalias`` when it is a ``llvm.noalias``
  argument of ``@k`` and no other captured memref views the same buffer; the
  parallel loop's iterations touch disjoint elements of what they write, so the
  claim holds on every thread. LLVM vectorizes this function as it did the kernel.
- ``@k_i_par(%ctx: !llvm.ptr)`` is what every thread runs: it reads the captured
  values from the context (one 8-byte slot each: a pointer for a memref, an i64 for
  an index, the value itself for a scalar), takes its static chunk of the
  ``N = ceildiv(ub - lb, s)`` iterations from ``omp_get_thread_num()`` and
  ``omp_get_num_threads()`` (thread ``t`` of ``T`` gets ``N / T`` iterations, one
  more when ``t < N mod T``), and calls ``@k_i_par_body`` on it.
- In ``@k`` the loop becomes: one ``llvm.alloca`` of the slots (in the entry block,
  so a loop around it does not grow the stack), a store per slot, and
  ``llvm.call @GOMP_parallel(@k_i_par, %ctx, threads, 0)``, which runs
  ``@k_i_par`` on ``threads`` threads (the caller is one of them) and returns when
  all are done.

Option ``threads`` (default 0: libgomp's choice, ``OMP_NUM_THREADS`` or every core)
is baked in as a constant; ``qidao.compile(..., threads=N)`` sets it. Memref values
cross into the context as ``builtin.unrealized_conversion_cast`` to ``!llvm.ptr``
and back, which ``convert-to-llvm`` lowers to nothing (bare pointers on both sides).
The JIT loads ``libgomp.so.1`` (``qidao.runtime.cpu``) when the IR calls it.

Preconditions: runs after ``lower-affine`` and before ``lower-scf-to-cf``; a
marked loop has no iter_args and no marked loop inside it (the ``parallel`` pass
guarantees both; this pass checks again). Captured values are memrefs, index,
integers, floats or ``!llvm.ptr``; a captured ``vector.broadcast`` is made again
inside the loop from its scalar.

Cost, measured on this project's machine (AMD EPYC znver5, 2 vCPUs under KVM, the
system's libgomp from GCC 12). A 1024-float32 add ``x + y`` whose loop is parallel,
its native entry called through ctypes on preallocated arrays; "warm" is the median
of 20,000 back-to-back calls, "idle T" the median of 8-20 single calls each made
after ``time.sleep(T)``; every libgomp setting in its own process; ranges are over
two runs (µs):

| kernel, libgomp setting                   | warm     | idle 10 ms | idle 100 ms | idle 1 s  |
|-------------------------------------------|----------|------------|-------------|-----------|
| serial (loop not parallel)                | 0.32     | 3-16       | 16-31       | 30-33     |
| ``threads=1``, default                    | 0.8      | 6-24       | 28-45       | 37-49     |
| ``threads=2``, default (throttled spin)   | 0.9      | 25-42      | 7,200-7,800 | 7,800     |
| ``threads=2``, ``OMP_WAIT_POLICY=active`` | 1.0-1.1  | 2-19       | 14-30       | 38-41     |
| ``threads=2``, ``OMP_WAIT_POLICY=passive``| 7-46     | 38-62      | 52          | 57-63     |
| ``threads=2``, ``GOMP_SPINCOUNT=0``       | 7-44     | 9-17       | 47-48       | 52-54     |
| ``threads=2``, ``GOMP_SPINCOUNT=10000000``| 1.0-1.1  | 2-17       | 8-24        | 102-3,900 |

Even a serial kernel costs 15-30 µs after the process idles (cold caches, TLB,
clock); a parallel one adds the worker's wake-up. Under libgomp's default policy the
worker spins for a while, then sleeps; after ~100 ms idle, waking it cost 7-8 ms per
call here: the caller spins at the closing barrier on one vCPU while the woken
worker waits for a CPU (two vCPUs, both busy). ``OMP_WAIT_POLICY=active`` avoids
that but keeps a core spinning; ``passive`` pays ~40-60 µs on every call. qidao
leaves the policy to the user's environment (libgomp reads it when it loads).

Speedup of ``threads=2`` over ``threads=1`` (same code otherwise, medians of 15-30
calls, three runs): ``relu(x * 3 + 1)`` over 2^24 float32, outer loop parallel:
2.80 -> 2.50 ms, 1.12x (memory bound: one core nearly saturates this machine's
bandwidth); matmul 512x512x512 (default ``i, k, j`` order, ``i`` parallel): 4.15 ->
2.10 ms, 1.98x (serial, without the pass: 4.15 ms, so outlining costs nothing).
Threshold: warm, two threads pay off from ~2 µs of serial work; after the process
idles, a parallel call costs up to ~8 ms extra under the default policy. So make
parallel the outer loop of compute-bound kernels (matmul, convolution) worth about
a millisecond or more per call, and keep small and memory-bound kernels serial.

Before (``convert-parallel-to-gomp{threads=2}``):
```mlir
func.func @k(%x: memref<64xf32> {llvm.noalias}, %y: memref<64xf32> {llvm.noalias}) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %s = arith.constant 1 : index
  scf.for %i = %lb to %ub step %s {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  } {qd.loop = "i", qd.parallel}
  func.return
}
```
After:
```mlir
func.func @k(%x: memref<64xf32> {llvm.noalias}, %y: memref<64xf32> {llvm.noalias}) {
  %0 = llvm.mlir.constant(2 : i64) : i64
  %ctx = llvm.alloca %0 x i64 : (i64) -> !llvm.ptr
  ...
  %1 = builtin.unrealized_conversion_cast %x : memref<64xf32> to !llvm.ptr
  %2 = llvm.getelementptr %ctx[0] : (!llvm.ptr) -> !llvm.ptr, i64
  llvm.store %1, %2 : !llvm.ptr, !llvm.ptr
  ... (the same for %y in slot 1)
  %fn = llvm.mlir.addressof @k_i_par : !llvm.ptr
  %threads = llvm.mlir.constant(2 : i32) : i32
  %flags = llvm.mlir.constant(0 : i32) : i32
  llvm.call @GOMP_parallel(%fn, %ctx, %threads, %flags) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
  func.return
}
func.func private @k_i_par_body(%x: memref<64xf32> {llvm.noalias}, %y: memref<64xf32> {llvm.noalias}, %i_lo: index, %i_hi: index) {
  %s = arith.constant 1 : index
  scf.for %i = %i_lo to %i_hi step %s {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  } {qd.loop = "i"}
  func.return
}
func.func private @k_i_par(%ctx: !llvm.ptr) {
  (loads of %x and %y from the slots, the chunk [%i_lo, %i_hi) of this thread)
  func.call @k_i_par_body(%x, %y, %i_lo, %i_hi) : (...) -> ()
  func.return
}
llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
llvm.func @omp_get_num_threads() -> i32
llvm.func @omp_get_thread_num() -> i32
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    Region,
    SSAValue,
)
from xdsl.passes import ModulePass

from qidao.dialects.attributes import LOOP_ATTR, PARALLEL_ATTR
from qidao.errors import UnsupportedError
from qidao.passes.schedule.loops.nest import root_buffer

_EXTERNS: dict[str, llvm.LLVMFunctionType] = {
    "GOMP_parallel": llvm.LLVMFunctionType(
        [llvm.LLVMPointerType(), llvm.LLVMPointerType(), i32, i32], None
    ),
    "omp_get_num_threads": llvm.LLVMFunctionType([], i32),
    "omp_get_thread_num": llvm.LLVMFunctionType([], i32),
}


class ParallelLoweringError(UnsupportedError):
    """A ``qd.parallel`` loop this pass cannot outline; the message names it."""


def _is_constant(value: SSAValue) -> bool:
    """True for a value cloned into the outlined functions instead of passed."""
    owner = value.owner
    return (
        isinstance(owner, arith.ConstantOp | memref.GetGlobalOp | llvm.ConstantOp)
        and not owner.operands
    )


def _slot_type(value: SSAValue, where: str) -> Attribute:
    """The type stored in the context slot of ``value``."""
    t = value.type
    if isinstance(t, MemRefType | llvm.LLVMPointerType):
        return llvm.LLVMPointerType()
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, IntegerType) and t.width.data <= 64:
        return t
    if isinstance(t, AnyFloat) and t.bitwidth <= 64:
        return t
    raise ParallelLoweringError(
        f"convert-parallel-to-gomp: {where} uses {value.name_hint or 'a value'} of "
        f"type {t}, which cannot be passed to the threads"
    )


def _slot_address(ctx: SSAValue, k: int, slot_type: Attribute) -> llvm.GEPOp:
    """The address of slot ``k`` (8 bytes each), as a GEP on the slot's own type:
    ``ctx[2 * k]`` on f32 is byte ``8 * k`` (a GEP whose result type is the stored
    value's, as LLVM IR from llvmlite's typed builder needs)."""
    if isinstance(slot_type, IntegerType):
        size = max(1, (slot_type.width.data + 7) // 8)
    elif isinstance(slot_type, AnyFloat):
        size = slot_type.bitwidth // 8
    else:
        size = 8  # a pointer on the 64-bit hosts qidao targets
    return llvm.GEPOp(ctx, [k * (8 // size)], slot_type)


def _defined_inside(value: SSAValue, loop: scf.ForOp) -> bool:
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        return parent is not None and loop.is_ancestor(parent)
    return loop.is_ancestor(value.owner)


def _captured(loop: scf.ForOp) -> list[SSAValue]:
    """Values the loop (bounds included) uses from outside it, in first-use order."""
    seen: list[SSAValue] = []
    for value in (loop.lb, loop.ub, loop.step):
        if value not in seen:
            seen.append(value)
    for op in loop.body.walk():
        for value in op.operands:
            if value not in seen and not _defined_inside(value, loop):
                seen.append(value)
    return seen


def _sink_broadcasts(loop: scf.ForOp) -> None:
    """Make each ``vector.broadcast`` the loop uses from outside again at the top of
    its body (a vector cannot be passed to the threads; its scalar can). The
    ``vectorize`` primitive hoists the splats of a kernel's constants out of its
    loops, so a loop outside the vectorized one that is made parallel afterwards
    meets them (``qidao fuzz --kinds schedule --seed 40006``); LLVM hoists the copy
    out of the body's loop again."""
    block = loop.body.block
    first = block.first_op
    assert first is not None
    copies: dict[SSAValue, SSAValue] = {}
    for op in list(loop.body.walk()):
        for k, value in enumerate(op.operands):
            owner = value.owner
            if not isinstance(owner, vector.BroadcastOp) or _defined_inside(
                value, loop
            ):
                continue
            if value not in copies:
                copy = owner.clone()
                block.insert_op_before(copy, first)
                copies[value] = copy.results[0]
            op.operands[k] = copies[value]


def _used_in_body(loop: scf.ForOp) -> set[SSAValue]:
    return {value for op in loop.body.walk() for value in op.operands}


class _Builder:
    """Appends ops to a block (or before an op) and returns their first result."""

    def __init__(self, block: Block, before: Operation | None = None) -> None:
        self.block = block
        self.before = before

    def add(self, op: Operation) -> None:
        if self.before is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.before)

    def value(self, op: Operation, name: str | None = None) -> SSAValue:
        self.add(op)
        result = op.results[0]
        if name is not None:
            result.name_hint = name
        return result

    def index(self, value: int) -> SSAValue:
        return self.value(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def llvm_const(
        self, value: int, t: IntegerType, name: str | None = None
    ) -> SSAValue:
        return self.value(llvm.ConstantOp(IntegerAttr(value, t), t), name)


def _unique_name(module: ModuleOp, wanted: str) -> str:
    taken = {
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp | llvm.FuncOp)
    }
    name, n = wanted, 1
    while name in taken or f"{name}_body" in taken:
        n += 1
        name = f"{wanted}{n}"
    return name


class _Outliner:
    """Outlines one parallel loop of one function."""

    def __init__(
        self, module: ModuleOp, fn: func.FuncOp, loop: scf.ForOp, threads: int
    ) -> None:
        self.module = module
        self.fn = fn
        self.loop = loop
        self.threads = threads
        loop_attr = loop.attributes.get(LOOP_ATTR)
        self.loop_name = loop_attr.data if isinstance(loop_attr, StringAttr) else "loop"
        self.where = f"parallel loop '{self.loop_name}' of @{fn.sym_name.data}"
        if loop.iter_args:
            raise ParallelLoweringError(
                f"convert-parallel-to-gomp: {self.where} has iter_args (a "
                "reduction); it cannot run in parallel"
            )
        for inner in loop.body.walk():
            if inner is not loop and PARALLEL_ATTR in inner.attributes:
                raise ParallelLoweringError(
                    f"convert-parallel-to-gomp: {self.where} contains another "
                    "parallel loop; nested parallel loops are not supported"
                )
        self.name = ""
        _sink_broadcasts(loop)
        captured = _captured(loop)
        self.constants = [v for v in captured if _is_constant(v)]
        self.slots = [v for v in captured if not _is_constant(v)]
        self.slot_types = [_slot_type(v, self.where) for v in self.slots]
        self.used = _used_in_body(loop)
        self.params = [v for v in self.slots if v in self.used or v is loop.step]
        """The slots the body function takes (the bounds only when it uses them)."""

    def run(self) -> None:
        self.name = _unique_name(
            self.module, f"{self.fn.sym_name.data}_{self.loop_name}_par"
        )
        body_fn = self.body_function()
        thread_fn = self.thread_function(body_fn)
        self.module.body.block.insert_ops_after([body_fn, thread_fn], self.fn)
        self.launch()

    # --- @k_i_par_body ---------------------------------------------------------------

    def noalias(self, value: SSAValue) -> bool:
        """True when the parameter for ``value`` may be ``llvm.noalias``."""
        if not isinstance(value.type, MemRefType):
            return False
        if not (isinstance(value, BlockArgument) and value.owner is self.fn.body.block):
            return False
        attrs = self.fn.arg_attrs
        entry = attrs.data[value.index] if attrs is not None else None
        if not (isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data):
            return False
        same_buffer = [
            v
            for v in self.slots
            if isinstance(v.type, MemRefType) and root_buffer(v) is root_buffer(value)
        ]
        return len(same_buffer) == 1

    def clone_constants(
        self, b: _Builder, into: dict[SSAValue, SSAValue], wanted: set[SSAValue]
    ) -> None:
        for value in self.constants:
            if value not in wanted:
                continue
            owner = value.owner
            assert isinstance(owner, Operation)
            into[value] = b.value(owner.clone(), value.name_hint)

    def body_function(self) -> func.FuncOp:
        types = [v.type for v in self.params] + [IndexType(), IndexType()]
        block = Block(arg_types=types)
        mapping: dict[SSAValue, SSAValue] = {}
        for value, arg in zip(self.params, block.args, strict=False):
            arg.name_hint = value.name_hint
            mapping[value] = arg
        lo, hi = block.args[-2], block.args[-1]
        lo.name_hint = f"{self.loop_name}_lo"
        hi.name_hint = f"{self.loop_name}_hi"
        b = _Builder(block)
        self.clone_constants(b, mapping, self.used | {self.loop.step})
        region = Region()
        self.loop.body.move_blocks(region)
        new_loop = scf.ForOp(lo, hi, mapping[self.loop.step], [], region)
        for key, attr in self.loop.attributes.items():
            if key != PARALLEL_ATTR:
                new_loop.attributes[key] = attr
        b.add(new_loop)
        b.add(func.ReturnOp())
        for old, new in mapping.items():
            old.replace_uses_with_if(
                new, lambda use: new_loop.is_ancestor(use.operation)
            )
        noalias = DictionaryAttr({"llvm.noalias": UnitAttr()})
        none = DictionaryAttr({})
        arg_attrs = [noalias if self.noalias(v) else none for v in self.params]
        return func.FuncOp(
            f"{self.name}_body",
            (types, []),
            Region(block),
            "private",
            arg_attrs=ArrayAttr([*arg_attrs, none, none]),
        )

    # --- @k_i_par --------------------------------------------------------------------

    def thread_function(self, body_fn: func.FuncOp) -> func.FuncOp:
        block = Block(arg_types=[llvm.LLVMPointerType()])
        ctx = block.args[0]
        ctx.name_hint = "ctx"
        b = _Builder(block)
        values: dict[SSAValue, SSAValue] = {}
        bounds = {self.loop.lb, self.loop.ub, self.loop.step}
        self.clone_constants(b, values, bounds)
        for k, (value, slot_type) in enumerate(
            zip(self.slots, self.slot_types, strict=True)
        ):
            slot = b.value(_slot_address(ctx, k, slot_type))
            loaded = b.value(llvm.LoadOp(slot, slot_type))
            if isinstance(value.type, MemRefType):
                cast = UnrealizedConversionCastOp.get([loaded], [value.type])
                loaded = b.value(cast)
            elif isinstance(value.type, IndexType):
                loaded = b.value(arith.IndexCastOp(loaded, IndexType()))
            loaded.name_hint = value.name_hint
            values[value] = loaded
        lo, hi = self.chunk(b, values)
        args = [values[v] for v in self.params] + [lo, hi]
        b.add(func.CallOp(body_fn.sym_name.data, args, []))
        b.add(func.ReturnOp())
        return func.FuncOp(
            self.name, ([llvm.LLVMPointerType()], []), Region(block), "private"
        )

    def chunk(
        self, b: _Builder, values: dict[SSAValue, SSAValue]
    ) -> tuple[SSAValue, SSAValue]:
        """This thread's ``[lo, hi)``: a static, even split of the iterations."""
        lb = values[self.loop.lb]
        ub = values[self.loop.ub]
        step = values[self.loop.step]
        tid32 = b.value(llvm.CallOp("omp_get_thread_num", return_type=i32))
        nth32 = b.value(llvm.CallOp("omp_get_num_threads", return_type=i32))
        tid = b.value(arith.IndexCastOp(tid32, IndexType()), "thread")
        nth = b.value(arith.IndexCastOp(nth32, IndexType()), "threads")
        span = b.value(arith.SubiOp(ub, lb))
        count = b.value(arith.CeilDivSIOp(span, step))
        count = b.value(arith.MaxSIOp(count, b.index(0)), "iterations")
        share = b.value(arith.DivSIOp(count, nth), "share")
        extra = b.value(arith.RemSIOp(count, nth), "extra")
        # thread t starts after t shares and min(t, extra) extra iterations, and
        # runs one extra iteration itself when t < extra
        before = b.value(arith.MuliOp(tid, share))
        first = b.value(arith.AddiOp(before, b.value(arith.MinSIOp(tid, extra))))
        gets_extra = b.value(arith.CmpiOp(tid, extra, "slt"))
        one_more = b.value(arith.SelectOp(gets_extra, b.index(1), b.index(0)))
        last = b.value(arith.AddiOp(first, b.value(arith.AddiOp(share, one_more))))
        lo_offset = b.value(arith.MuliOp(first, step))
        hi_offset = b.value(arith.MuliOp(last, step))
        lo = b.value(arith.AddiOp(lb, lo_offset), f"{self.loop_name}_lo")
        hi = b.value(arith.AddiOp(lb, hi_offset), f"{self.loop_name}_hi")
        return lo, hi

    # --- in @k: fill the context and start the threads --------------------------------

    def launch(self) -> None:
        entry = self.fn.body.blocks[0]
        at_entry = _Builder(entry, entry.first_op)
        count = at_entry.llvm_const(max(len(self.slots), 1), i64)
        # pointer-typed slots: 8 bytes each, and llvmlite's typed builder then
        # stores a pointer into a slot without a bitcast
        alloca = llvm.AllocaOp(count, llvm.LLVMPointerType(), alignment=8)
        ctx = at_entry.value(alloca, "ctx")
        parent = self.loop.parent_block()
        assert parent is not None
        b = _Builder(parent, self.loop)
        for k, value in enumerate(self.slots):
            stored = value
            if isinstance(value.type, MemRefType):
                cast = UnrealizedConversionCastOp.get([value], [llvm.LLVMPointerType()])
                stored = b.value(cast)
            elif isinstance(value.type, IndexType):
                stored = b.value(arith.IndexCastOp(value, i64))
            slot = b.value(_slot_address(ctx, k, self.slot_types[k]))
            b.add(llvm.StoreOp(stored, slot))
        fn_ptr = b.value(llvm.AddressOfOp(self.name, llvm.LLVMPointerType()), "fn")
        threads = b.llvm_const(self.threads, i32, "threads")
        flags = b.llvm_const(0, i32, "flags")
        b.add(llvm.CallOp("GOMP_parallel", fn_ptr, ctx, threads, flags))
        self.loop.detach()
        self.loop.erase()


def _declare_externs(module: ModuleOp) -> None:
    declared = {op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)}
    for name, fn_type in _EXTERNS.items():
        if name not in declared:
            module.body.block.add_op(
                llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
            )


@dataclass(frozen=True)
class ConvertParallelToGompPass(ModulePass):
    """scf.for {qd.parallel} -> an outlined function run by GOMP_parallel."""

    name = "convert-parallel-to-gomp"

    threads: int = 0
    """Threads per parallel loop; 0 lets libgomp choose (OMP_NUM_THREADS, cores)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.threads < 0:
            raise ValueError(
                f"convert-parallel-to-gomp: threads must be 0 (libgomp's default) "
                f"or positive, got {self.threads}"
            )
        work: list[tuple[func.FuncOp, scf.ForOp]] = []
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp):
                continue
            for inner in fn.walk():
                if isinstance(inner, scf.ForOp) and PARALLEL_ATTR in inner.attributes:
                    work.append((fn, inner))
        if not work:
            return
        outliners = [_Outliner(op, fn, loop, self.threads) for fn, loop in work]
        for outliner in outliners:
            outliner.run()
        _declare_externs(op)


__all__ = ["ConvertParallelToGompPass", "ParallelLoweringError"]
