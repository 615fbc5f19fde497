"""``convert-to-llvm`` for the casts ``convert-parallel-to-gomp`` leaves (not a pass).

``convert-parallel-to-gomp`` passes memrefs to libgomp's threads through a context of
``!llvm.ptr`` slots, crossing with ``builtin.unrealized_conversion_cast`` from
``memref<...>`` to ``!llvm.ptr`` and back. Under the bare-pointer convention (see
``convert_to_llvm``) a memref already is that pointer, so such a cast lowers to
nothing: its result is bound to its converted operand. Any other cast, one whose
operand and result do not lower to the same type, raises a ``LoweringError``.
"""

from __future__ import annotations

from xdsl.dialects.builtin import UnrealizedConversionCastOp
from xdsl.ir import Operation

from qidao.passes.cpu.llvm.lowering import (
    FunctionLowering,
    Handler,
    LoweringError,
    convert_type,
)


def _cast(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, UnrealizedConversionCastOp)
    if len(op.inputs) != 1 or len(op.outputs) != 1:
        raise LoweringError(
            f"convert-to-llvm: unrealized_conversion_cast of {len(op.inputs)} values "
            f"to {len(op.outputs)}; only one-to-one casts are lowered"
        )
    value = fl.get(op.inputs[0])
    wanted = convert_type(op.outputs[0].type)
    if value.type != wanted:
        raise LoweringError(
            f"convert-to-llvm: unrealized_conversion_cast from {op.inputs[0].type} to "
            f"{op.outputs[0].type} changes the lowered type ({value.type} vs {wanted})"
        )
    fl.bind(op.outputs[0], value)


HANDLERS: dict[type[Operation], Handler] = {UnrealizedConversionCastOp: _cast}
