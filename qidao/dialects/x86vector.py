"""``x86vector``: the x86 vector instructions qidao's schedules reach for by name,
as MLIR's dialect of the same name holds them (qidao writes the one it uses).

``x86vector.avx512.vpdpbusd`` is AVX-512 VNNI's 8-bit dot product, with its
first source broadcast (``vpdpbusd zmm, zmm, dword ptr [mem]{1to16}``)::

    %d = x86vector.avx512.vpdpbusd %acc, %a, %b : vector<16xi32>, vector<4xi8>, vector<64xi8> -> vector<16xi32>

    d[l] = acc[l] + sum over r in [0, 4) of  zext(a[r]) * sext(b[4 l + r])

for the 16 int32 lanes ``l``: ``a`` holds four unsigned bytes (one row of A at
four consecutive ``k``), the same in every lane; ``b`` four signed bytes per lane
(rows ``4q .. 4q+3`` of 16 columns of a VNNI-packed B, see ``tg.matmul_integer``).
The sum wraps (no saturation: ``vpdpbusd``, not ``vpdpbusds``), as ``arith.addi``
does. The ``tensorize`` primitive's ``avx512_vnni`` intrinsic makes it;
``convert-to-llvm`` lowers it to ``llvm.x86.avx512.vpdpbusd.512``, which runs only
on a CPU with AVX-512 VNNI (the CPU target's ``vnni`` option checks the host).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, VectorType, i32
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

LANES = 16
"""The int32 lanes of a zmm register."""
GROUP = 4
"""The bytes each lane multiplies and sums."""

_I8 = IntegerType(8)


def _expect_vector(value: SSAValue, shape: int, element: Attribute, what: str) -> None:
    t = value.type
    if (
        not isinstance(t, VectorType)
        or t.get_shape() != (shape,)
        or t.get_element_type() != element
    ):
        raise VerifyException(
            f"x86vector.avx512.vpdpbusd: {what} must be vector<{shape}x{element}>, "
            f"got {t}"
        )


@irdl_op_definition
class Vpdpbusd(IRDLOperation):
    """``acc`` plus, per int32 lane, four products of ``a``'s unsigned bytes and
    the lane's four signed bytes of ``b`` (module docstring)."""

    name = "x86vector.avx512.vpdpbusd"
    acc = operand_def(VectorType)
    a = operand_def(VectorType)
    b = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$acc `,` $a `,` $b attr-dict `:` type($acc) `,` type($a) `,` type($b) "
        "`->` type($result)"
    )

    def __init__(self, acc: SSAValue, a: SSAValue, b: SSAValue) -> None:
        super().__init__(operands=[acc, a, b], result_types=[VectorType(i32, [LANES])])

    def verify_(self) -> None:
        _expect_vector(self.acc, LANES, i32, "the accumulator")
        _expect_vector(self.result, LANES, i32, "the result")
        _expect_vector(self.a, GROUP, _I8, "a (four bytes, broadcast)")
        _expect_vector(self.b, LANES * GROUP, _I8, "b (four bytes per lane)")


X86Vector = Dialect("x86vector", [Vpdpbusd], [])
