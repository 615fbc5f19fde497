"""``lower-scf-to-cf``: xDSL's ``convert-scf-to-cf``, keeping which loops stay rolled.

    scf.for %i = %lb to %ub step %s {          ^header(%i):
      body(%i)                          ==>      %c = arith.cmpi slt, %i, %ub
    } {qd.rolled}                                cf.cond_br %c, ^body, ^exit
                                               ^body:
                                                 body(%i)
                                                 %next = arith.addi %i, %s
                                                 cf.br ^header(%next) {qd.rolled}

xDSL's pass turns every ``scf.for``/``scf.if``/``scf.index_switch`` into blocks and
branches and drops the loops' attributes. A loop marked ``qd.rolled`` (``unroll`` by 1,
``qidao/passes/schedule/unroll.py``) must not lose the mark: LLVM attaches loop
metadata to a loop's back edge, so this pass puts ``qd.rolled`` on the branch that
goes back to the loop's header (its first operand is the induction variable plus
the step), where ``convert-to-llvm`` keeps it on the ``llvm.br`` and the CPU emitter
writes ``!llvm.loop !{!"llvm.loop.unroll.disable"}``. Every other branch, and every
loop without the mark, comes out exactly as xDSL's pass makes it.

Preconditions: ``lower-affine`` has run (``affine.for`` is ``scf.for``, its
attributes kept).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf

from qidao.dialects.attributes import ROLLED_ATTR


def _is_back_edge(branch: cf.BranchOp, header: Block) -> bool:
    """Whether ``branch`` is the latch of the loop whose header is ``header``: it
    passes the header's induction variable plus the step back to it."""
    if branch.successor is not header or not branch.arguments:
        return False
    stepped = branch.arguments[0].owner
    return isinstance(stepped, arith.AddiOp) and stepped.lhs is header.args[0]


@dataclass(frozen=True)
class LowerScfToCfPass(ModulePass):
    """scf -> cf (xDSL's lowering); a ``qd.rolled`` loop's back edge keeps the mark."""

    name = "lower-scf-to-cf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # the first block of a loop's body becomes its header, arguments and all
        headers = [
            loop.body.block
            for loop in op.walk()
            if isinstance(loop, scf.ForOp) and ROLLED_ATTR in loop.attributes
        ]
        ConvertScfToCf().apply(ctx, op)
        for header in headers:
            for use in header.uses:
                branch = use.operation
                if isinstance(branch, cf.BranchOp) and _is_back_edge(branch, header):
                    branch.attributes[ROLLED_ATTR] = UnitAttr()
