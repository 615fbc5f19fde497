"""``dedupe-kernels``: kernels with the same body compiled once.

    func.func private @main_k5_fused(%a: memref<1x58x58x64xf32>, ...) {qd.kernel = ..} {B}
    func.func private @main_k10_fused(%b: memref<1x58x58x64xf32>, ...) {qd.kernel = ..} {B}
    func.call @main_k5_fused(...)   func.call @main_k10_fused(...)
        ==>  func.call @main_k5_fused(...)   func.call @main_k5_fused(...)

A ResNet-50 repeats its blocks: of its 73 kernels, most are the same convolution on
the same shapes with the same schedule, and every later stage (loops to LLVM, LLVM to
machine code) paid for each copy. This pass keeps the first of each set of identical
kernels, points every call at it and erases the others.

Rules:
- Only kernels (``func.func`` with a ``qd.kernel`` label) are merged, never a host
  function.
- Identical means equal up to SSA names and the function's own name: the same
  function type, argument attributes (``llvm.noalias`` included, which
  ``plan-memory`` drops from a kernel that writes in place), label and other
  attributes, and the same ops in the same order with the same attributes, result
  types, operands (by position of definition) and regions. A kernel that differs in
  anything else, even a constant, stays.
- The compiler runs it last in the ``affine`` stage, after ``plan-memory``: the
  schedule stage sees (and a schedule names) only the kernels that remain, and
  schedules each once; ``stats["kernels"]`` still counts every call. A kernel that
  ``plan-memory`` made write in place has lost ``llvm.noalias`` and stays apart from
  its twins.

Before:
```mlir
func.func private @m_k0(%x: memref<4xf32>) attributes {qd.kernel = "tg.relu"} {B}
func.func private @m_k1(%y: memref<4xf32>) attributes {qd.kernel = "tg.relu"} {B}
func.func @m(..) { func.call @m_k0(%a)  func.call @m_k1(%b) }
```
After:
```mlir
func.func private @m_k0(%x: memref<4xf32>) attributes {qd.kernel = "tg.relu"} {B}
func.func @m(..) { func.call @m_k0(%a)  func.call @m_k0(%b) }
```
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import KERNEL_ATTR


def kernel_key(fn: func.FuncOp) -> Hashable | None:
    """A value equal for two kernels exactly when they are identical up to SSA names
    and their own names; None when ``fn`` uses a value from outside itself."""
    values: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    items: list[Hashable] = [
        tuple(sorted(fn.attributes.items())),
        tuple(sorted((k, v) for k, v in fn.properties.items() if k != "sym_name")),
    ]

    def region(r: Region) -> bool:
        for block in r.blocks:
            blocks[block] = len(blocks)
        for block in r.blocks:
            items.append(tuple(arg.type for arg in block.args))
            for arg in block.args:
                values[arg] = len(values)
            for op in block.ops:
                if not operation(op):
                    return False
        return True

    def operation(op: Operation) -> bool:
        operands = tuple(values.get(v, -1) for v in op.operands)
        if -1 in operands:
            return False
        items.append(
            (
                op.name,
                operands,
                tuple(r.type for r in op.results),
                tuple(sorted(op.attributes.items())),
                tuple(sorted(op.properties.items())),
                tuple(blocks.get(s, -1) for s in op.successors),
                len(op.regions),
            )
        )
        for result in op.results:
            values[result] = len(values)
        return all(region(r) for r in op.regions)

    if not region(fn.body):
        return None
    return tuple(items)


@dataclass(frozen=True)
class DedupeKernelsPass(ModulePass):
    """Identical kernels merged into the first of them; calls redirected."""

    name = "dedupe-kernels"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        first: dict[Hashable, str] = {}
        replaced: dict[str, str] = {}
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or KERNEL_ATTR not in fn.attributes:
                continue
            key = kernel_key(fn)
            if key is None:
                continue
            name = fn.sym_name.data
            if key in first:
                replaced[name] = first[key]
                op.body.block.erase_op(fn)
            else:
                first[key] = name
        if not replaced:
            return
        for call in op.walk():
            if isinstance(call, func.CallOp):
                target = replaced.get(call.callee.string_value())
                if target is not None:
                    call.callee = SymbolRefAttr(target)
