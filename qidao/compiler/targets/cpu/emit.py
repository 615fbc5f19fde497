"""The CPU target's emitter: an llvm-dialect module -> LLVM IR text.

``llvm_ir_text`` translates the module (the ``llvm-dialect`` stage) to LLVM IR text
for the host triple with xDSL's llvmlite translator (``xdsl.backend.llvm``); the
stages before it are ``qidao.compiler.pipeline.PIPELINES["cpu"]``.

A model's weights do not go through the text: ``emit_program`` takes every global
larger than ``INLINE_BYTES`` out of the module, declares it
(``@main_cst3 = external constant [9408 x float], align 64``) and returns its bytes
in a 64-byte aligned array, which the JIT binds to the declaration
(``qidao.runtime.cpu.jit_compile(..., symbols=...)``). Printing ResNet-50's 25
million weights as LLVM constants, and LLVM parsing them back, took minutes; the
small globals (scalars, index tables) stay inline, where LLVM can fold them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import binding, ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, i1

from qidao.compiler.host import ENTRY
from qidao.dialects.attributes import ROLLED_ATTR
from qidao.passes.cpu.llvm.memref import ALIGNMENT

INLINE_BYTES = 1024
"""Globals up to this size are printed as LLVM constants; larger ones are weights."""


def host_triple() -> str:
    return str(binding.get_process_triple())


@dataclass
class LlvmProgram:
    """LLVM IR text and the weights its ``external`` globals name."""

    text: str
    weights: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)


def weight_symbols(weights: dict[str, np.ndarray[Any, Any]]) -> dict[str, int]:
    """Each weight's name and the address of its bytes (valid while the arrays
    live): what ``jit_compile(..., symbols=)`` binds the declarations to."""
    return {name: int(a.ctypes.data) for name, a in weights.items()}


def llvm_ir_text(module: ModuleOp) -> str:
    """LLVM IR text of an llvm-dialect module, for the host triple, every global
    defined in it (self-contained: the tests JIT it alone).

    Values keep the names they had in the IR (``%x``, loop counters ``%i``) and
    blocks are numbered ``bb0, bb1, ...`` as in the llvm dialect, so the text reads
    side by side with the stage before it.
    """
    return _translate(module, set())


def emit_program(
    module: ModuleOp, inline_bytes: int = INLINE_BYTES, copy_weights: bool = True
) -> LlvmProgram:
    """LLVM IR text of ``module`` with its weights (globals over ``inline_bytes``)
    declared ``external`` and returned beside it (``copy_weights=False``: their
    names only, each with an empty array). Changes ``module``: the weights'
    ``llvm.mlir.global`` ops lose their values."""
    weights: dict[str, np.ndarray[Any, Any]] = {}
    for op in list(module.ops):
        if not isinstance(op, llvm.GlobalOp):
            continue
        value = op.value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            continue
        if len(value.data.data) <= inline_bytes:
            continue
        data = aligned_bytes(value) if copy_weights else np.empty(0, np.uint8)
        declaration = llvm.GlobalOp(
            op.global_type,
            op.sym_name.data,
            "external",
            constant=op.constant is not None,
        )
        module.body.block.insert_op_before(declaration, op)
        module.body.block.erase_op(op)
        weights[op.sym_name.data] = data
    return LlvmProgram(_translate(module, set(weights)), weights)


def aligned_bytes(value: DenseIntOrFPElementsAttr) -> np.ndarray[Any, Any]:
    """The bytes of a dense constant as the kernels read them (a bool as 0 or 1),
    in a 64-byte aligned array."""
    flat = np.frombuffer(value.data.data, dtype=np.uint8)
    if value.get_element_type() == i1:  # bytes 0, 1 (a parsed `true` is 0xff)
        flat = (flat != 0).astype(np.uint8)
    buffer = np.empty(flat.size + ALIGNMENT, dtype=np.uint8)
    start = -buffer.ctypes.data % ALIGNMENT
    aligned = buffer[start : start + flat.size]
    aligned[:] = flat
    return aligned


def _translate(module: ModuleOp, external: set[str]) -> str:
    ir_module = convert_module(module, fallback_target_triple=host_triple())
    defined = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, llvm.FuncOp) and op.body.blocks
    }
    for name, op in defined.items():
        fn = ir_module.get_global(name)
        _name_values(op, fn)
        _keep_rolled(op, fn)
    for kernel in _kernels_of_host(defined):
        ir_module.get_global(kernel).attributes.add("noinline")
    for name in external:
        variable = ir_module.get_global(name)
        assert isinstance(variable, ir.GlobalVariable)
        variable.align = ALIGNMENT  # emit_program's arrays are aligned to it
    return str(ir_module)


def _kernels_of_host(defined: dict[str, llvm.FuncOp]) -> set[str]:
    """The functions the host program ``@main`` calls (its kernels): they stay
    calls, never inlined. Inlined, a host of N kernel calls became one function of N
    loop nests, and LLVM's -O3 time grows with its square: 500 calls of 8 distinct
    kernels took 11.5 s to optimize and compile, 0.12 s not inlined (a call costs
    a few nanoseconds; a kernel runs for microseconds at least)."""
    host = defined.get(ENTRY)
    if host is None:
        return set()
    called = {
        op.callee.string_value()
        for op in host.walk()
        if isinstance(op, llvm.CallOp) and op.callee is not None
    }
    return called & set(defined)


def _keep_rolled(op: llvm.FuncOp, fn: ir.Function) -> None:
    """Loop metadata on the back edge of every loop the schedule keeps rolled (an
    ``llvm.br`` marked ``qd.rolled``, see ``qidao/passes/cpu/lower_scf_to_cf.py``):
    ``br label %bb1, !llvm.loop !3`` with ``!3 = !{ !3, !4 }`` and
    ``!4 = !{ !"llvm.loop.unroll.disable" }``. A loop ID names itself (its first
    operand), so each loop gets its own."""
    module = fn.module
    disable: ir.MDValue | None = None
    for block, ir_block in zip(op.body.blocks, fn.blocks, strict=True):
        branch = block.last_op
        if not isinstance(branch, llvm.BrOp) or ROLLED_ATTR not in branch.attributes:
            continue
        if disable is None:
            disable = module.add_metadata(
                [ir.MetaDataString(module, "llvm.loop.unroll.disable")]
            )
        loop_id = ir.MDValue(module, [disable], name=str(len(module.metadata)))
        loop_id.operands = (loop_id, disable)
        terminator = ir_block.terminator
        assert terminator is not None
        terminator.set_metadata("llvm.loop", loop_id)


def _name_values(op: llvm.FuncOp, fn: ir.Function) -> None:
    """Copy SSA name hints onto the llvmlite function: arguments, block-argument phis
    (xDSL's translator makes one phi per block argument, first in its block)."""
    for arg, value in zip(op.body.blocks[0].args, fn.args, strict=True):
        if arg.name_hint:
            value.name = arg.name_hint
    for index, (block, ir_block) in enumerate(
        zip(op.body.blocks, fn.blocks, strict=True)
    ):
        ir_block.name = f"bb{index}"
        if index == 0:
            continue
        for arg, phi in zip(block.args, ir_block.instructions, strict=False):
            if arg.name_hint and isinstance(phi, ir.PhiInstr):
                phi.name = arg.name_hint
