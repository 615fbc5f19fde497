"""``convert-to-llvm`` handlers for the ``x86vector`` ops and ``cache.prefetch``
(not a pass).

- ``cache.prefetch %m[%i..] locality = L`` -> the element's address (as a load's)
  and ``call void @llvm.prefetch.p0(ptr, i32 0, i32 L, i32 1)``: a read, into the
  data cache (``prefetcht0/1/2`` or ``prefetchnta`` by ``L``).
- ``x86vector.avx512.vpdpbusd %acc, %a, %b`` -> ``a``'s four bytes as one ``i32``
  (``bitcast <4 x i8> to i32``), splat to ``<16 x i32>`` (``insertelement`` and a
  zero-mask ``shufflevector``, which the backend folds into the instruction's
  ``{1to16}`` broadcast of a load), ``b`` as ``<16 x i32>`` (a ``bitcast``), then
  ``call <16 x i32> @llvm.x86.avx512.vpdpbusd.512(acc, a, b)``: one ``vpdpbusd``.
- ``x86vector.avx512.dot %acc, %a, %b`` -> the same broadcast of ``a``'s two
  bfloat16s (one ``i32``), ``b`` as ``<16 x i32>``, then ``call <16 x float>
  @llvm.x86.avx512bf16.dpbf16ps.512(acc, a, b)``: one ``vdpbf16ps``. The
  intrinsic's bfloat16 operands are declared ``<16 x i32>``, its signature before
  LLVM 17, which LLVM upgrades to ``<32 x bfloat>`` when it parses the module
  (llvmlite's IR builder has no ``bfloat`` type).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, MemRefType, VectorType, i32
from xdsl.ir import Operation, SSAValue

from qidao.dialects.cache import PrefetchOp
from qidao.dialects.x86vector import LANES, DotBf16, Vpdpbusd
from qidao.passes.cpu.llvm.lowering import FunctionLowering, Handler
from qidao.passes.cpu.llvm.memref import element_address

VPDPBUSD = "llvm.x86.avx512.vpdpbusd.512"
DPBF16PS = "llvm.x86.avx512bf16.dpbf16ps.512"
PREFETCH = "llvm.prefetch.p0"


def _broadcast_word(fl: FunctionLowering, value: SSAValue) -> SSAValue:
    """``value`` (32 bits) as one ``i32`` splat to ``<16 x i32>``."""
    lanes = VectorType(i32, [LANES])
    word = fl.emit_value(llvm.BitcastOp(fl.get(value), i32))
    undef = fl.emit_value(llvm.UndefOp(lanes))
    lane0 = fl.emit_value(llvm.InsertElementOp(undef, word, fl.const(0, i32)))
    mask = DenseArrayBase.from_list(i32, [0] * LANES)
    return fl.emit_value(llvm.ShuffleVectorOp(lane0, lane0, mask, lanes))


def _dot(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, Vpdpbusd | DotBf16)
    lanes = VectorType(i32, [LANES])
    a = _broadcast_word(fl, op.a)
    b = fl.emit_value(llvm.BitcastOp(fl.get(op.b), lanes))
    name = VPDPBUSD if isinstance(op, Vpdpbusd) else DPBF16PS
    call = llvm.CallIntrinsicOp(name, [fl.get(op.acc), a, b], [op.result.type])
    fl.bind(op.result, fl.emit_value(call))


def _prefetch(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, PrefetchOp)
    t = op.memref.type
    assert isinstance(t, MemRefType)
    indices = [fl.get(i) for i in op.indices]
    ptr = element_address(fl, t, fl.get(op.memref), indices)
    read, data = fl.const(0, i32), fl.const(1, i32)
    locality = fl.const(op.locality.value.data, i32)
    fl.emit(llvm.CallIntrinsicOp(PREFETCH, [ptr, read, locality, data], []))


HANDLERS: dict[type[Operation], Handler] = {
    DotBf16: _dot,
    Vpdpbusd: _dot,
    PrefetchOp: _prefetch,
}
