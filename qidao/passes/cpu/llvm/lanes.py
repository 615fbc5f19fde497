"""``convert-to-llvm`` handlers for the ``lanes`` ops (not a pass).

- ``lanes.cmpf <p>, %a, %b : vector<WxT>`` -> ``fcmp <p> <W x T> %a, %b``, a
  ``<W x i1>`` (``vcmpps`` into a mask register on AVX-512);
- ``lanes.select %m, %a, %b`` -> ``select <W x i1> %m, <W x T> %a, <W x T> %b`` (a
  masked blend).

xDSL's ``llvm.fcmp`` and ``llvm.select`` (xdsl as pinned in ``pyproject.toml``)
type the comparison and the condition as a scalar ``i1``; the two ops here are the
same ops with a vector mask, and xDSL's llvmlite translator handles them as it does
their bases (llvmlite builds the vector instructions from the operand types).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import I64, IntegerAttr, VectorType, i1
from xdsl.ir import Operation
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def

from qidao.dialects import lanes
from qidao.passes.cpu.llvm.lowering import FunctionLowering, Handler


@irdl_op_definition
class VectorFCmpOp(llvm.FCmpOp):
    """``llvm.fcmp`` on vectors: a ``vector<W x i1>`` mask."""

    name = "llvm.fcmp"
    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    res = result_def(VectorType)  # type: ignore[arg-type]  # the base's is i1
    predicate = prop_def(IntegerAttr[I64])
    fastmathFlags = prop_def(llvm.FastMathAttr, default_value=llvm.FastMathAttr(None))

    def verify_(self) -> None:  # not the base's, which checks the scalar types
        return


@irdl_op_definition
class VectorSelectOp(llvm.SelectOp):
    """``llvm.select`` with a ``vector<W x i1>`` condition, one per lane."""

    name = "llvm.select"
    cond = operand_def(VectorType)  # type: ignore[arg-type]  # the base's is i1
    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    res = result_def(VectorType)
    fastmathFlags = prop_def(llvm.FastMathAttr, default_value=llvm.FastMathAttr(None))
    # printed as the base prints it (never parsed): no format of its own
    assembly_format = None  # type: ignore[assignment]

    def verify_(self) -> None:  # not the base's, which checks the scalar types
        return


def _cmpf(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, lanes.CmpfOp)
    width = op.result.type
    assert isinstance(width, VectorType)
    lhs, rhs = fl.operands(op)
    cmp = VectorFCmpOp.create(
        operands=[lhs, rhs],
        result_types=[VectorType(i1, width.get_shape())],
        properties={"predicate": IntegerAttr(op.predicate.value.data, 64)},
    )
    fl.bind(op.result, fl.emit_value(cmp))


def _select(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, lanes.SelectOp)
    mask, lhs, rhs = fl.operands(op)
    select = VectorSelectOp.create(operands=[mask, lhs, rhs], result_types=[lhs.type])
    fl.bind(op.result, fl.emit_value(select))


HANDLERS: dict[type[Operation], Handler] = {
    lanes.CmpfOp: _cmpf,
    lanes.SelectOp: _select,
}
