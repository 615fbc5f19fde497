"""``lanes``: a float comparison and a select lane by lane, on 1-D vectors.

MLIR writes these as ``arith.cmpf`` and ``arith.select`` on vector types; the
xDSL that qidao pins types both with a scalar ``i1`` only, so ``vectorize`` writes
the vector forms here (a kernel's ``where``, ``Clip``, ReLU6 and masks)::

    %m = lanes.cmpf oge, %x, %lo : vector<16xf32>
    %y = lanes.select %m, %x, %z : vector<16xi1>, vector<16xf32>

``lanes.cmpf``: ``m[l] = x[l] <predicate> lo[l]`` with ``arith.cmpf``'s
predicates and their numbering (``oeq`` ordered-equal ... ``uno`` unordered;
``false``/``true`` are not written here), so a NaN lane compares as ``arith.cmpf``
does. ``lanes.select``: ``y[l] = m[l] ? x[l] : z[l]``. ``convert-to-llvm`` lowers
them to LLVM's ``fcmp`` and ``select`` on vectors (one ``vcmpps`` into a mask
register and one blend on AVX-512).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import I64, AnyFloat, IntegerAttr, VectorType, i1, i64
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

PREDICATES: dict[str, int] = {
    name: code
    for code, name in enumerate(CMPF_COMPARISON_OPERATIONS)
    if name not in ("false", "true")
}
"""``arith.cmpf``'s predicates, by name, with its (and LLVM's ``fcmp``'s) codes."""


def _lanes(value: SSAValue | Attribute, op: str, what: str) -> tuple[int, Attribute]:
    t = value.type if isinstance(value, SSAValue) else value
    if (
        not isinstance(t, VectorType)
        or len(t.get_shape()) != 1
        or t.get_num_scalable_dims()
    ):
        raise VerifyException(f"{op}: {what} must be a fixed 1-D vector, got {t}")
    return t.get_shape()[0], t.get_element_type()


@irdl_op_definition
class CmpfOp(IRDLOperation):
    """``lhs <predicate> rhs`` lane by lane: a ``vector<W x i1>`` mask."""

    name = "lanes.cmpf"
    predicate = prop_def(IntegerAttr[I64])
    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, predicate: int) -> None:
        width, _ = _lanes(lhs, self.name, "lhs")
        super().__init__(
            operands=[lhs, rhs],
            result_types=[VectorType(i1, [width])],
            properties={"predicate": IntegerAttr(predicate, i64)},
        )

    def verify_(self) -> None:
        code = self.predicate.value.data
        if code not in PREDICATES.values():
            raise VerifyException(
                f"{self.name}: predicate {code} is not one of arith.cmpf's "
                f"{min(PREDICATES.values())}..{max(PREDICATES.values())} "
                "('false' and 'true' are constants, not comparisons)"
            )
        width, element = _lanes(self.lhs, self.name, "lhs")
        if not isinstance(element, AnyFloat) or self.rhs.type != self.lhs.type:
            raise VerifyException(
                f"{self.name}: lhs and rhs must be the same float vector type, got "
                f"{self.lhs.type} and {self.rhs.type}"
            )
        if self.result.type != VectorType(i1, [width]):
            raise VerifyException(
                f"{self.name}: the result must be vector<{width}xi1>, got "
                f"{self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        name = next(k for k, v in PREDICATES.items() if v == self.predicate.value.data)
        printer.print_string(f" {name}, ")
        printer.print_ssa_value(self.lhs)
        printer.print_string(", ")
        printer.print_ssa_value(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    @classmethod
    def parse(cls, parser: Parser) -> CmpfOp:
        at = parser.pos
        name = parser.parse_identifier(" expected an arith.cmpf predicate")
        if name not in PREDICATES:
            parser.raise_error(
                f"lanes.cmpf: unknown predicate '{name}' (expected one of "
                f"{', '.join(PREDICATES)})",
                at,
                parser.pos,
            )
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        lhs_v, rhs_v = parser.resolve_operands([lhs, rhs], [t, t], parser.pos)
        op = cls(lhs_v, rhs_v, PREDICATES[name])
        op.attributes |= attributes
        return op


@irdl_op_definition
class SelectOp(IRDLOperation):
    """``mask ? lhs : rhs`` lane by lane."""

    name = "lanes.select"
    _T: ClassVar = VarConstraint("_T", AnyAttr())
    mask = operand_def(VectorType)
    lhs = operand_def(_T)
    rhs = operand_def(_T)
    result = result_def(_T)
    traits = traits_def(Pure())
    assembly_format = (
        "$mask `,` $lhs `,` $rhs attr-dict `:` type($mask) `,` type($result)"
    )

    def __init__(self, mask: SSAValue, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(operands=[mask, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        width, _ = _lanes(self.result, self.name, "the result")
        if self.mask.type != VectorType(i1, [width]):
            raise VerifyException(
                f"{self.name}: the mask must be vector<{width}xi1> (one lane per "
                f"result lane), got {self.mask.type}"
            )


Lanes = Dialect("lanes", [CmpfOp, SelectOp], [])
