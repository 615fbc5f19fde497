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
}
"""Every element type tg has and its NumPy dtype name. Signed integers are the
signless ``i8 .. i64`` (as in ``arith``, where the op says how to read them); the
unsigned ones are ``ui8 .. ui64``, so a tg value says how its bits are read and the
lowering can pick ``divui``, ``cmpi ult``, ``uitofp``... (see
``qidao/passes/kernels/lowering/scalar.py``). Below tg, in memrefs, every integer is
signless (``ui8`` is stored as ``i8``: :func:`storage_type`)."""


def dtype_name(element_type: Attribute) -> str:
    """The NumPy dtype name of an element type (``f32 -> "float32"``)."""
    if element_type not in _DTYPE_NAMES:
        raise VerifyException(f"element type {element_type} is not supported by qidao")
    return _DTYPE_NAMES[element_type]


def element_type_of(dtype: str) -> Attribute:
    """The element type for a NumPy dtype name (``"float32" -> f32``)."""
    for attr, name in _DTYPE_NAMES.items():
        if name == dtype:
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


def storage_type(element_type: Attribute) -> Attribute:
    """The element type in memory and in ``arith``: signless (``ui8 -> i8``); other
    element types are their own."""
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
ANY_KIND = frozenset({"float", "int", "bool"})
"""Every element type tg has."""

_KIND_TEXT = {
    FLOAT: "float",
    NUMERIC: "float or integer",
    BOOL: "bool (i1)",
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
