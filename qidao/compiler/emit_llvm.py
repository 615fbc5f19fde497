"""The CPU code-generation stage: affine-level module -> llvm dialect -> LLVM IR text.

``lower_to_llvm_dialect`` runs, in place and verifying after each pass:
``lower-affine``, ``convert-scf-to-cf`` (xDSL's, it handles iter_args),
``convert-to-llvm``, ``reconcile-unrealized-casts``, ``dce``.

``llvm_ir_text`` translates the llvm-dialect module to LLVM IR text for the host triple
with xDSL's llvmlite translator (``xdsl.backend.llvm``).
"""

from __future__ import annotations

from llvmlite import binding
from xdsl.backend.llvm.convert import convert_module
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from qidao.passes.convert_to_llvm import ConvertToLLVMPass
from qidao.passes.lower_affine import LowerAffinePass


def cpu_lowering_passes() -> list[ModulePass]:
    """The passes from affine loops to the llvm dialect, in order."""
    return [
        LowerAffinePass(),
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
    """LLVM IR text of an llvm-dialect module, for the host triple."""
    return str(convert_module(module, fallback_target_triple=host_triple()))
