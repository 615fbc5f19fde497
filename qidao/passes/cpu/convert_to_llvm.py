"""Lower func, cf, arith, math, memref (static layouts) to the llvm dialect.

``func.func @f(memref<...>, index) -> T  ->  llvm.func @f(!llvm.ptr, i64) -> T``

Calling convention (bare pointers): every memref is one ``!llvm.ptr`` pointing at
element 0 of its underlying allocation (what ``aligned_alloc`` returned, or what the
caller passed), NOT at the first element of the view. The memref type's static layout
gives the element address: ``ptr + offset + sum(index_k * stride_k)`` elements, one
inbounds GEP on the element type (i64 index math). Hence ``reinterpret_cast`` and
``subview`` (whose result types state their offset relative to that allocation) are
pointer pass-throughs. ``index`` is ``i64``. ``memref.alloc`` -> ``aligned_alloc(64,
bytes)``, ``memref.dealloc`` -> ``free``; ``memref.global`` -> ``llvm.mlir.global``. Float ops keep their fastmath flags; ``llvm.*``
argument attributes (``llvm.noalias``) move to the ``llvm.func``. The pass rebuilds each
function directly, so it leaves no ``unrealized_conversion_cast``; ops already in the
llvm dialect (and top-level ``llvm.func``/``llvm.mlir.global`` ops) are kept as they are.

Preconditions: no affine or scf ops left (run ``lower-affine`` and
``lower-scf-to-cf`` first); memref shapes, strides and offsets are static. An op
without a lowering raises an error naming it.

Before:
    func.func @k(%a: memref<4xf32> {llvm.noalias}, %i: index) -> f32 {
      %v = memref.load %a[%i] : memref<4xf32>
      func.return %v : f32
    }

After:
    llvm.func @k(%a: !llvm.ptr {llvm.noalias}, %i: i64) -> f32 {
      %0 = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %0 : !llvm.ptr -> f32
      llvm.return %v : f32
    }
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import builtin, func, llvm, memref
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from qidao.passes.cpu.llvm import arith as arith_patterns
from qidao.passes.cpu.llvm import func as func_patterns
from qidao.passes.cpu.llvm import memref as memref_patterns
from qidao.passes.cpu.llvm import parallel as parallel_patterns
from qidao.passes.cpu.llvm.amx import HANDLERS as AMX_HANDLERS
from qidao.passes.cpu.llvm.lanes import HANDLERS as LANES_HANDLERS
from qidao.passes.cpu.llvm.lowering import Handler, LoweringError
from qidao.passes.cpu.llvm.vector import HANDLERS as VECTOR_HANDLERS
from qidao.passes.cpu.llvm.x86 import HANDLERS as X86_HANDLERS

HANDLERS: dict[type[Operation], Handler] = {
    **arith_patterns.HANDLERS,
    **memref_patterns.HANDLERS,
    **func_patterns.HANDLERS,
    **parallel_patterns.HANDLERS,
    **VECTOR_HANDLERS,
    **X86_HANDLERS,
    **AMX_HANDLERS,
    **LANES_HANDLERS,
}


class ConvertToLLVMPass(ModulePass):
    """func/cf/arith/math/memref -> llvm, bare-pointer memrefs."""

    name = "convert-to-llvm"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        externs: dict[str, llvm.LLVMFunctionType] = {}
        defined: set[str] = set()
        for top in list(op.ops):
            if isinstance(top, memref.GlobalOp):
                op.body.block.insert_op_before(memref_patterns.lower_global(top), top)
                op.body.block.erase_op(top)
            elif isinstance(top, func.FuncOp):
                new = func_patterns.lower_function(top, HANDLERS, externs)
                op.body.block.insert_op_before(new, top)
                op.body.block.erase_op(top)
                defined.add(new.sym_name.data)
            elif isinstance(top, llvm.FuncOp):
                defined.add(top.sym_name.data)
        for name, fn_type in sorted(externs.items()):
            if name in defined:
                continue
            op.body.block.add_op(
                llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
            )


__all__ = ["ConvertToLLVMPass", "LoweringError"]
