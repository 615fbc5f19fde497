"""Scalars and memrefs as C sees them: C types, exact C literals, NumPy dtypes and
the static offset, strides and span of a memref type."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute

from qidao.compiler.targets.cuda.emit.errors import CudaEmitError


def c_type(t: Attribute, unsigned: bool = False) -> str:
    """The C type of a scalar type (``f32`` -> ``float``, ``index`` -> ``long long``)."""
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "unsigned long long" if unsigned else "long long"
    if isinstance(t, IntegerType):
        width = t.width.data
        names = {1: "bool", 8: "char", 16: "short", 32: "int", 64: "long long"}
        if width not in names:
            raise CudaEmitError(f"no C type for {t}")
        if width == 1:
            return "bool"
        base = names[width]
        if width == 8:
            return "unsigned char" if unsigned else "signed char"
        return f"unsigned {base}" if unsigned else base
    raise CudaEmitError(f"no C type for {t}")


def float_literal(value: float, t: Attribute) -> str:
    """An exact C literal for a float of type ``t``."""
    if isinstance(t, Float32Type):
        if math.isnan(value) or math.isinf(value):
            bits = int(np.array(value, np.float32).view(np.uint32))
            return f"__int_as_float({bits:#010x})"
        text = repr(float(np.float32(value)))
        short = str(np.float32(value))
        if float(np.float32(float(short))) == float(np.float32(value)):
            text = short
        if "e" not in text and "." not in text and "inf" not in text:
            text += ".0"
        return f"{text}f"
    if math.isnan(value) or math.isinf(value):
        bits = int(np.array(value, np.float64).view(np.uint64))
        return f"__longlong_as_double({bits:#018x}ULL)"
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


def int_literal(value: int, t: Attribute) -> str:
    """A C literal for an integer of type ``t`` (``true``/``false`` for ``i1``)."""
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "true" if value else "false"
    return f"{value}LL" if abs(value) > 2**31 - 1 else str(value)


def np_dtype(t: Attribute) -> str:
    """The NumPy dtype of a scalar type, by name (``index`` -> ``int64``)."""
    if isinstance(t, Float32Type):
        return "float32"
    if isinstance(t, Float64Type):
        return "float64"
    if isinstance(t, IndexType):
        return "int64"
    if isinstance(t, IntegerType):
        return {1: "bool", 8: "int8", 16: "int16", 32: "int32", 64: "int64"}[
            t.width.data
        ]
    raise CudaEmitError(f"no NumPy dtype for {t}")


def layout_of(t: MemRefType[Attribute], kernel: str) -> tuple[int, list[int]]:
    """The static offset and strides of a memref type."""
    strides = t.get_strides()
    offset = t.get_offset()
    if strides is None or offset is None or any(s is None for s in strides):
        raise CudaEmitError(f"kernel '{kernel}': {t} has a dynamic layout")
    if any(d < 0 for d in t.get_shape()):
        raise CudaEmitError(f"kernel '{kernel}': {t} has a dynamic shape")
    return offset, [int(s) for s in strides if s is not None]


def span_of(t: MemRefType[Attribute], kernel: str) -> int:
    """Elements from the base pointer to one past the last element of ``t``."""
    offset, strides = layout_of(t, kernel)
    shape = t.get_shape()
    if any(n == 0 for n in shape):
        return offset
    return offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1
