"""``instrument-kernels``: time every kernel call of the host program.

    call @k(args)   ==>   %t = call @qidao_profile_start()
                          call @k(args)
                          call @qidao_profile_stop(<index of k>, %t)

Runs on the host functions that ``convert-tg-to-affine`` makes (any ``func.func``
without ``qd.kernel``), after the schedule, so the kernels it times are the ones
that run. Each kernel called gets an index, in order of first call; the host
function lists the kernels in ``qd.profile_kernels`` (index -> name), and the two
timer functions are declared (``func.func private``, no body). The runtime defines
them (``qidao/runtime/profile.py``): ``start`` reads the monotonic clock in
nanoseconds, ``stop`` adds the time since ``t`` to a per-kernel counter. The timer
calls are opaque to LLVM, so a kernel's work (even inlined into the host) stays
between its two calls. ``qidao.compile(model, profile=True)`` runs this pass;
``compiled.profile(*inputs)`` reads the counters.

Before:
```mlir
func.func private @main_k0_exp(%x: memref<8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "tg.exp"} {
  func.return
}
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) {
  func.call @main_k0_exp(%x, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}
```
After:
```mlir
func.func private @main_k0_exp(%x: memref<8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "tg.exp"} {
  func.return
}
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) attributes {qd.profile_kernels = ["main_k0_exp"]} {
  %0 = func.call @qidao_profile_start() : () -> i64
  func.call @main_k0_exp(%x, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  %1 = arith.constant 0 : i64
  func.call @qidao_profile_stop(%1, %0) : (i64, i64) -> ()
  func.return
}
func.func private @qidao_profile_start() -> i64
func.func private @qidao_profile_stop(i64, i64) -> ()
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i64
from xdsl.passes import ModulePass

from qidao.dialects.attributes import KERNEL_ATTR, PROFILE_KERNELS_ATTR
from qidao.errors import UnsupportedError

START = "qidao_profile_start"
STOP = "qidao_profile_stop"


class InstrumentError(UnsupportedError):
    """The module cannot be instrumented (it already is)."""


@dataclass(frozen=True)
class InstrumentKernelsPass(ModulePass):
    """Bracket each kernel call of the host with the profile timer calls."""

    name = "instrument-kernels"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp)]
        names = {f.sym_name.data for f in functions}
        if START in names or STOP in names:
            raise InstrumentError(
                f"instrument-kernels: @{START} is already declared: the module is "
                "instrumented already"
            )
        kernels = {f.sym_name.data for f in functions if KERNEL_ATTR in f.attributes}
        hosts = [
            f for f in functions if KERNEL_ATTR not in f.attributes and f.body.blocks
        ]
        instrumented = False
        for host in hosts:
            order: list[str] = []
            for call in [c for c in host.walk() if isinstance(c, func.CallOp)]:
                callee = call.callee.string_value()
                if callee not in kernels:
                    continue
                if callee not in order:
                    order.append(callee)
                _bracket(call, order.index(callee))
            if order:
                host.attributes[PROFILE_KERNELS_ATTR] = ArrayAttr(
                    [StringAttr(n) for n in order]
                )
                instrumented = True
        if instrumented:
            op.body.block.add_op(func.FuncOp.external(START, [], [i64]))
            op.body.block.add_op(func.FuncOp.external(STOP, [i64, i64], []))


def _bracket(call: func.CallOp, index: int) -> None:
    block = call.parent_block()
    assert block is not None
    start = func.CallOp(START, [], [i64])
    block.insert_op_before(start, call)
    k = arith.ConstantOp(IntegerAttr(index, i64))
    stop = func.CallOp(STOP, [k.result, start.res[0]], [])
    block.insert_ops_after([k, stop], call)
