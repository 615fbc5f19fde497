"""The CPU code-generation stage: affine-level module -> llvm dialect -> LLVM IR text.

``lower_to_llvm_dialect`` runs, in place and verifying after each pass:
``lower-affine``, ``convert-parallel-to-gomp``, ``convert-scf-to-cf`` (xDSL's, it
handles iter_args),
``convert-to-llvm``, ``reconcile-unrealized-casts``, ``dce``.

``llvm_ir_text`` translates the llvm-dialect module to LLVM IR text for the host triple
with xDSL's llvmlite translator (``xdsl.backend.llvm``).
"""

from __future__ import annotations

from llvmlite import binding, ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from qidao.passes.cpu.convert_parallel_to_gomp import ConvertParallelToGompPass
from qidao.passes.cpu.convert_to_llvm import ConvertToLLVMPass
from qidao.passes.cpu.lower_affine import LowerAffinePass


def cpu_lowering_passes() -> list[ModulePass]:
    """The passes from affine loops to the llvm dialect, in order."""
    return [
        LowerAffinePass(),
        ConvertParallelToGompPass(),
        ConvertScfToCf(),
        ConvertToLLVMPass(),
        ReconcileUnrealizedCastsPass(),
        DeadCodeElimination(),
    ]


def lower_to_llvm_dialect(module: ModuleOp, ctx: Context | None = None) -> None:
    """Lower an affine-level module to the llvm dialect in place, verifying each step."""
    ctx = ctx if ctx is not None else Context(allow_unregistered=True)
    module.verify()
    for p in cpu_lowering_passes():
        p.apply(ctx, module)
        try:
            module.verify()
        except Exception as err:
            raise type(err)(f"IR does not verify after pass '{p.name}': {err}") from err


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
