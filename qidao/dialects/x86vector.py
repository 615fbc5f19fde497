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

``x86vector.avx512.dot`` is AVX512_BF16's bfloat16 dot product (MLIR's op of the
name), its first source a broadcast pair (``vdpbf16ps zmm, zmm, dword ptr
[mem]{1to16}``); the bfloat16s are their ``i16`` bits, as qidao stores them::

    %d = x86vector.avx512.dot %acc, %a, %b : vector<16xf32>, vector<2xi16>, vector<32xi16> -> vector<16xf32>

    d[l] = acc[l] + a[1] * b[2 l + 1] + a[0] * b[2 l]

in float32, for the 16 lanes ``l`` (products exact; inputs and sums below 2**-126
flushed to zero, round to nearest even): ``a`` holds two bfloat16s (one row of A
at two consecutive ``k``), ``b`` two per lane (rows ``2q, 2q+1`` of 16 columns of
a B packed in pairs, see ``tg.matmul_bf16``). The ``tensorize`` primitive's
``avx512_bf16`` intrinsic makes it; ``convert-to-llvm`` lowers it to
``llvm.x86.avx512bf16.dpbf16ps.512`` (the CPU target's ``bf16`` option checks
the host).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntegerType, VectorType, f32, i16, i32
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
PAIR = 2
"""The bfloat16s each lane of ``x86vector.avx512.dot`` multiplies and sums."""

_I8 = IntegerType(8)


def _expect_vector(
    op: str, value: SSAValue, shape: int, element: Attribute, what: str
) -> None:
    t = value.type
    if (
        not isinstance(t, VectorType)
        or t.get_shape() != (shape,)
        or t.get_element_type() != element
    ):
        raise VerifyException(
            f"{op}: {what} must be vector<{shape}x{element}>, got {t}"
        )


class _Dot(IRDLOperation):
    """``acc`` plus, per 32-bit lane, the products of ``a``'s ``GROUP`` elements
    (broadcast) and the lane's ``GROUP`` of ``b``: the lane type ``ACC``, the
    elements ``ELEMENT``."""

    ACC: ClassVar[Attribute]
    ELEMENT: ClassVar[Attribute]
    GROUP: ClassVar[int]
    WHAT: ClassVar[str]
    """The elements, named in the verifier's messages."""

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
        lanes = VectorType(self.ACC, [LANES])
        super().__init__(operands=[acc, a, b], result_types=[lanes])

    def verify_(self) -> None:
        g, element, what = self.GROUP, self.ELEMENT, self.WHAT
        _expect_vector(self.name, self.acc, LANES, self.ACC, "the accumulator")
        _expect_vector(self.name, self.result, LANES, self.ACC, "the result")
        _expect_vector(self.name, self.a, g, element, f"a ({what}, broadcast)")
        _expect_vector(self.name, self.b, LANES * g, element, f"b ({what} per lane)")


@irdl_op_definition
class Vpdpbusd(_Dot):
    """``acc`` plus, per int32 lane, four products of ``a``'s unsigned bytes and
    the lane's four signed bytes of ``b`` (module docstring)."""

    name = "x86vector.avx512.vpdpbusd"
    ACC: ClassVar[Attribute] = i32
    ELEMENT: ClassVar[Attribute] = _I8
    GROUP: ClassVar[int] = GROUP
    WHAT: ClassVar[str] = "four bytes"


@irdl_op_definition
class DotBf16(_Dot):
    """``acc`` plus, per float32 lane, the products of ``a``'s two bfloat16s and
    the lane's two of ``b`` (module docstring)."""

    name = "x86vector.avx512.dot"
    ACC: ClassVar[Attribute] = f32
    ELEMENT: ClassVar[Attribute] = i16
    GROUP: ClassVar[int] = PAIR
    WHAT: ClassVar[str] = "two bfloat16s"


X86Vector = Dialect("x86vector", [DotBf16, Vpdpbusd], [])
