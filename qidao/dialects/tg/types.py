"""The tensor type of the tg dialect: builtin ``tensor`` with an optional layout.

A tg value is a ``tensor<2x3xf32>``. When the value is a *view* with a layout other
than row-major storage, the layout rides in the tensor's encoding as a builtin
``strided`` attribute, exactly as a memref spells it::

    tensor<3x2xf32, strided<[1, 3]>>       // the transpose of a 2x3 tensor
    tensor<4x3xf32, strided<[0, 1]>>       // a 3-vector broadcast to 4 rows

A row-major layout is never spelled out, so every tensor type has one canonical form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    NoneAttr,
    Signedness,
    StridedLayoutAttr,
    TensorType,
    f32,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.layout import Shape, contiguous_strides, is_contiguous

_DTYPE_NAMES: dict[Attribute, str] = {
    Float32Type(): "float32",
    Float64Type(): "float64",
    Float16Type(): "float16",
    IntegerType(8): "int8",
    IntegerType(16): "int16",
    IntegerType(32): "int32",
    IntegerType(64): "int64",
    IntegerType(8, Signedness.UNSIGNED): "uint8",
    IntegerType(16, Signedness.UNSIGNED): "uint16",
    IntegerType(32, Signedness.UNSIGNED): "uint32",
    IntegerType(64, Signedness.UNSIGNED): "uint64",
    IntegerType(1): "bool",
    BFloat16Type(): "bfloat16",
    Float8E4M3FNType(): "float8_e4m3fn",
    Float8E4M3FNUZType(): "float8_e4m3fnuz",
    Float8E5M2Type(): "float8_e5m2",
    Float8E5M2FNUZType(): "float8_e5m2fnuz",
    Float4E2M1FNType(): "float4_e2m1fn",
    IntegerType(4): "int4",
    IntegerType(4, Signedness.UNSIGNED): "uint4",
    IntegerType(2): "int2",
    IntegerType(2, Signedness.UNSIGNED): "uint2",
}
"""Every element type tg has and its NumPy dtype name. Signed integers are the
signless ``i8 .. i64`` (as in ``arith``, where the op says how to read them); the
unsigned ones are ``ui8 .. ui64``, so a tg value says how its bits are read and the
lowering can pick ``divui``, ``cmpi ult``, ``uitofp``... (see
``qidao/passes/kernels/lowering/scalar.py``). Below tg, in memrefs, every integer is
signless (``ui8`` is stored as ``i8``: :func:`storage_type`). The last ten are
*storage-only* (:data:`STORAGE_ONLY`); their NumPy dtypes are ``ml_dtypes``'."""


def register_low_precision_dtypes() -> None:
    """Make NumPy know the storage-only dtypes' names (``np.dtype("bfloat16")``):
    import ``ml_dtypes``, which registers them. It takes about 0.6 s, so it is
    imported on first use (a storage-only type named here), not with tg."""
    import ml_dtypes  # noqa: F401


def dtype_name(element_type: Attribute) -> str:
    """The NumPy dtype name of an element type (``f32 -> "float32"``)."""
    if element_type not in _DTYPE_NAMES:
        raise VerifyException(f"element type {element_type} is not supported by qidao")
    if element_type in STORAGE_ONLY:
        register_low_precision_dtypes()
    return _DTYPE_NAMES[element_type]


def element_type_of(dtype: str) -> Attribute:
    """The element type for a NumPy dtype name (``"float32" -> f32``)."""
    for attr, name in _DTYPE_NAMES.items():
        if name == dtype:
            if attr in STORAGE_ONLY:
                register_low_precision_dtypes()
            return attr
    known = ", ".join(_DTYPE_NAMES.values())
    raise ValueError(f"dtype '{dtype}' is not supported (supported: {known})")


def tensor_type(
    shape: Sequence[int],
    element_type: Attribute = f32,
    strides: Sequence[int] | None = None,
    offset: int = 0,
) -> TensorType[Attribute]:
    """A tg tensor type in canonical form (row-major layouts carry no encoding)."""
    shape = tuple(shape)
    if strides is None or is_contiguous(shape, strides, offset):
        return TensorType(element_type, shape)
    return TensorType(element_type, shape, StridedLayoutAttr(strides, offset))


def shape_of(t: Attribute) -> Shape:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def numel(t: Attribute) -> int:
    """Elements of a tensor type (1 for a scalar, 0 for anything else)."""
    if not isinstance(t, TensorType):
        return 0
    return math.prod(shape_of(t))


def element_of(t: Attribute) -> Attribute:
    """The element type of a tensor type."""
    assert isinstance(t, TensorType)
    element: Attribute = t.get_element_type()
    return element


def strides_of(t: Attribute) -> Shape:
    """The strides of a tensor type, in elements (row-major when none are spelled)."""
    assert isinstance(t, TensorType)
    enc = t.encoding
    if isinstance(enc, StridedLayoutAttr):
        return tuple(int(s) for s in enc.get_strides() if s is not None)
    return contiguous_strides(t.get_shape())


def offset_of(t: Attribute) -> int:
    assert isinstance(t, TensorType)
    enc = t.encoding
    if isinstance(enc, StridedLayoutAttr):
        return enc.get_offset() or 0
    return 0


def is_row_major(t: Attribute) -> bool:
    assert isinstance(t, TensorType)
    return is_contiguous(t.get_shape(), strides_of(t), offset_of(t))


def verify_tensor_type(t: Attribute, what: str) -> TensorType[Attribute]:
    """Check a tg tensor type: static shape, supported dtype, canonical layout."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {t}")
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        raise VerifyException(f"{what} must have a static shape, got {t}")
    if t.get_element_type() not in _DTYPE_NAMES:
        known = ", ".join(str(a) for a in _DTYPE_NAMES)
        raise VerifyException(
            f"{what} has element type {t.get_element_type()}, which qidao does not "
            f"support (supported: {known})"
        )
    enc = t.encoding
    if isinstance(enc, NoneAttr):
        return t
    if not isinstance(enc, StridedLayoutAttr):
        raise VerifyException(
            f"{what} has encoding {enc}; tg tensors take only a strided<...> layout"
        )
    strides = enc.get_strides()
    if len(strides) != len(shape) or any(s is None for s in strides):
        raise VerifyException(
            f"{what} layout {enc} needs one static stride per dimension of {t}"
        )
    if enc.get_offset() is None:
        raise VerifyException(f"{what} layout {enc} needs a static offset")
    if is_row_major(t):
        raise VerifyException(
            f"{what} spells out the row-major layout {enc}; write {TensorType(t.element_type, shape)}"
        )
    return t


def is_float(t: Attribute) -> bool:
    assert isinstance(t, TensorType)
    return isinstance(t.get_element_type(), AnyFloat)


def is_unsigned(element_type: Attribute) -> bool:
    """``ui8``, ``ui16``, ``ui32`` or ``ui64``."""
    return (
        isinstance(element_type, IntegerType)
        and element_type.signedness.data == Signedness.UNSIGNED
    )


STORAGE_ONLY: dict[Attribute, IntegerType] = {
    BFloat16Type(): IntegerType(16),
    Float8E4M3FNType(): IntegerType(8),
    Float8E4M3FNUZType(): IntegerType(8),
    Float8E5M2Type(): IntegerType(8),
    Float8E5M2FNUZType(): IntegerType(8),
    Float4E2M1FNType(): IntegerType(8),
    IntegerType(4): IntegerType(8),
    IntegerType(4, Signedness.UNSIGNED): IntegerType(8),
    IntegerType(2): IntegerType(8),
    IntegerType(2, Signedness.UNSIGNED): IntegerType(8),
}
"""The storage-only element types and the integer that holds one element in memory
(the bytes of an ``ml_dtypes`` array: bf16 in two bytes, the others in one, a 4- or
2-bit integer in the low bits of its byte, the others zero). Only ``tg.cast``,
``tg.constant``, the views and the fused groups of those take them
(``TgOp.STORAGE``); everything else computes in the type
:func:`compute_dtype` names, after a cast. Below tg a kernel holds their bits in
that integer and converts with integer code
(``qidao/passes/kernels/lowering/low_precision.py``)."""


def is_storage_only(element_type: Attribute) -> bool:
    """bf16, the float8s, f4E2M1FN, i4, ui4, i2 or ui2."""
    return element_type in STORAGE_ONLY


STORAGE_ONLY_DTYPES = frozenset(_DTYPE_NAMES[t] for t in STORAGE_ONLY)
"""The NumPy dtype names of the storage-only types (``"bfloat16"``, ``"int4"``...)."""


def compute_dtype(dtype: str) -> str:
    """The dtype an op on a storage-only ``dtype`` computes in, exactly: float32 for
    the floats, int8/uint8 for the small integers; any other dtype is its own."""
    if dtype in ("int4", "int2"):
        return "int8"
    if dtype in ("uint4", "uint2"):
        return "uint8"
    if dtype in STORAGE_ONLY_DTYPES:
        return "float32"
    return dtype


def storage_type(element_type: Attribute) -> Attribute:
    """The element type in memory and in ``arith``: signless (``ui8 -> i8``), an
    integer for a storage-only type (``bf16 -> i16``, ``f8E4M3FN -> i8``); other
    element types are their own."""
    if element_type in STORAGE_ONLY:
        return STORAGE_ONLY[element_type]
    if is_unsigned(element_type):
        assert isinstance(element_type, IntegerType)
        return IntegerType(element_type.width.data)
    return element_type


FLOAT = frozenset({"float"})
"""Element kinds an op takes: f16, f32 and f64. Elementwise ops compute f16 in f32
and round each result back to f16, as NumPy's float16 ufuncs do; the ops that
accumulate (matmul, conv2d, reductions, softmax, pools, norms) take f32 and f64 only
(:meth:`qidao.dialects.tg.base.TgOp.expect_float`)."""
NUMERIC = frozenset({"float", "int"})
"""Floats and every integer type (i8 .. i64, ui8 .. ui64)."""
BOOL = frozenset({"bool"})
"""i1 (NumPy's bool)."""
INTEGER = frozenset({"int"})
"""Every integer type, signed and unsigned (not bool)."""
INTEGER_OR_BOOL = frozenset({"int", "bool"})
"""Integers and bools: the element kinds of the bitwise ops."""
ANY_KIND = frozenset({"float", "int", "bool"})
"""Every element type tg has."""

_KIND_TEXT = {
    FLOAT: "float",
    NUMERIC: "float or integer",
    BOOL: "bool (i1)",
    INTEGER: "integer",
    INTEGER_OR_BOOL: "integer or bool",
    ANY_KIND: "float, integer or bool",
}


def kind_of(element_type: Attribute) -> str:
    """``"float"`` (f16, f32, f64), ``"bool"`` (i1) or ``"int"`` (signed and unsigned
    integers)."""
    if isinstance(element_type, AnyFloat):
        return "float"
    if isinstance(element_type, IntegerType) and element_type.width.data == 1:
        return "bool"
    return "int"


def kinds_text(kinds: frozenset[str]) -> str:
    """How a verifier message names a set of element kinds (``"float or integer"``)."""
    return _KIND_TEXT.get(kinds, " or ".join(sorted(kinds)))


def fmt_shape(shape: Sequence[int]) -> str:
    """PyTorch-style shape text: ``[2, 3]``."""
    return "[" + ", ".join(str(d) for d in shape) + "]"
