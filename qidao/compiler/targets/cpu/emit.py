"""The CPU target's emitter: an llvm-dialect module -> LLVM IR text.

``llvm_ir_text`` translates the module (the ``llvm-dialect`` stage) to LLVM IR text
for the host triple with xDSL's llvmlite translator (``xdsl.backend.llvm``); the
stages before it are ``qidao.compiler.pipeline.PIPELINES["cpu"]``.
"""

from __future__ import annotations

from llvmlite import binding, ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp


def host_triple() -> str:
    return str(binding.get_process_triple())


def llvm_ir_text(module: ModuleOp) -> str:
    """LLVM IR text of an llvm-dialect module, for the host triple.

    Values keep the names they had in the IR (``%x``, loop counters ``%i``) and
    blocks are numbered ``bb0, bb1, ...`` as in the llvm dialect, so the text reads
    side by side with the stage before it.
    """
    ir_module = convert_module(module, fallback_target_triple=host_triple())
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks:
            _name_values(op, ir_module.get_global(op.sym_name.data))
    return str(ir_module)


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
