"""Converters for ONNX's quantization ops: ``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear``, ``MatMulInteger``, ``ConvInteger``, ``QLinearMatMul`` and
``QLinearConv``, on the integer types int8, uint8, int16 and uint16 (and int32 for
``DequantizeLinear``'s input). Each is a composition of tg ops: ``tg.round``
(round half to even) for the quantizations, ``tg.matmul_integer`` for the integer
matrix products.

Quantization: ``y = saturate(round(x / scale) + zero_point)``. ``x / scale`` is one
IEEE division in the type NumPy promotes ``x`` and ``scale`` to (float32 for float32
operands, float64 for an int32 ``x``), rounded half to even (``tg.round``), then
the zero point is added and the sum clipped to the output type's range in float32
(every integer involved is exact there; a rounded value beyond ``2^24`` is clipped
anyway) and cast. That is ONNX's reference bit for bit, and ONNX Runtime's (which
divides too). Dequantization: ``(x - zero_point) * scale`` in float32 (exact
difference, one rounding), cast to the output type: the reference's arithmetic.

Granularity: a scalar (or one-element) scale and zero point are per tensor; a 1-D
one of ``x.shape[axis]`` elements is per axis (viewed as ``[1, .., n, .., 1]``);
with ``block_size = b`` the scale has ``x``'s rank and ``ceil(x.shape[axis] / b)``
entries along ``axis``, each repeated ``b`` times (a broadcast, reshaped, and
sliced when ``b`` does not divide the axis).

Integer matrix products (``MatMulInteger``, ``QLinearMatMul``) run on
``tg.matmul_integer``: the 8-bit operands as they are, every product and sum an
int32 that wraps as ONNX Runtime's accumulators do. The zero points are not
subtracted from the bytes (``a - a_zp`` does not fit a byte); their terms are
added around the product, ``(a - za)(b - zb) = ab - za * colsum(b) - rowsum(a) *
zb + K * za * zb`` in int32 (the sums in float64, exact, then cast), and a term
whose zero point is a constant 0 (a symmetric weight's) is left out. On a CPU with
AVX-512 VNNI a constant ``int8`` weight times a ``uint8`` input is packed at
compile time (``pack-vnni``) and its kernel is ``vpdpbusd`` register tiles
(``qidao/compiler/targets/cpu/defaults/matmul_integer.py``).

Integer convolutions (``ConvInteger``, ``QLinearConv``) still run on tg's float
``conv2d``: an int8 / uint8 operand less its zero point is an integer in
``[-255, 255]``, exact in any float, and every partial sum an integer below ``K *
2^16``, exact in float64 for any ``K`` below ``2^37``, so the float kernel computes
the int32 result exactly, in any order of summation. It takes float64 and is
rounded to the nearest integer before the cast to int32, because the
``select-conv-algo`` pass may give it to Winograd, whose transforms round (float64
keeps that error far below one half). A sum beyond int32's range saturates in the
cast where ONNX Runtime's int32 accumulator wraps.

Requantization (``QLinearMatMul``, ``QLinearConv``): the int32 result times the
multiplier ``a_scale * b_scale / y_scale`` (computed in the scales' type, as the
reference does) in float64, plus the output zero point, rounded half to even and
clipped to the output type: the reference's arithmetic. ONNX Runtime multiplies
in float32, which can differ by one step where a product falls within float32's
rounding of a tie; a ``QLinearConv`` that ``qdq.py`` made of a QDQ unit (it
carries ``qidao_float32_requantize``) requantizes as ONNX Runtime does.

Unsupported (a clear ``node.error``): the float8, 4-bit and 2-bit types and
bfloat16 (tg has no such element types), ``QuantizeLinear``'s ``precision`` other
than float32, float64 or float16.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.conv_integer import nhwc_int8_conv
from qidao.frontend.onnx.importer import Array, Importer, converter, folder
from qidao.frontend.onnx.linalg import numpy_matmul
from qidao.frontend.onnx.load import DTYPES
from qidao.frontend.onnx.nn import _ints, _window_padding
from qidao.frontend.onnx.node import Node
from qidao.frontend.onnx.qdq import FLOAT32_REQUANTIZE

RANGES: dict[str, tuple[int, int]] = {
    "int8": (-128, 127),
    "uint8": (0, 255),
    "int16": (-32768, 32767),
    "uint16": (0, 65535),
}
"""The quantized integer types qidao computes and their ranges."""

_FLOATS = ("float16", "float32", "float64")


def _declared(im: Importer, name: str) -> int:
    """The ONNX element type the model gives tensor ``name`` (0 if none): the
    importer hands converters float8 and 4-bit values widened to float32 or int8,
    so the declared type is what says a tensor is one."""
    if name in im.inferred_dtype:
        return im.inferred_dtype[name]
    graph = im.proto.graph
    for info in graph.input:
        if info.name == name:
            return int(info.type.tensor_type.elem_type)
    for tensor in graph.initializer:
        if tensor.name == name:
            return int(tensor.data_type)
    return 0


def _dtype(im: Importer, node: Node, index: int, what: str) -> str:
    """The dtype of input #``index`` (a runtime value or a constant) as the model
    declares it."""
    names = node.inputs
    if index >= len(names) or not names[index]:
        raise node.error(f"the {what} input (#{index}) is missing")
    entry = im.env.get(names[index])
    if entry is None:
        raise node.error(f"tensor '{names[index]}' is used before it is defined")
    declared = _declared(im, names[index])
    if declared:
        return str(np.dtype(helper.tensor_dtype_to_np_dtype(declared)))
    return entry.dtype if isinstance(entry, Value) else str(entry.dtype)


def _expect(node: Node, what: str, dtype: str, allowed: Sequence[str]) -> None:
    if dtype not in allowed:
        raise node.error(
            f"the {what} has dtype {dtype}; qidao supports {', '.join(allowed)} "
            "here (quantization with float8, 4-bit, 2-bit or bfloat16 types is not "
            "supported)"
        )


def _has(node: Node, index: int) -> bool:
    return index < len(node.inputs) and bool(node.inputs[index])


def _onnx_dtype(node: Node, code: int, what: str) -> str:
    """The NumPy dtype name of ONNX element type ``code`` (an attribute)."""
    if code in DTYPES:
        return DTYPES[code]
    name = onnx.TensorProto.DataType.Name(code) if code else str(code)
    raise node.error(
        f"{what} is {name}; quantization with float8, 4-bit, 2-bit or bfloat16 "
        "types is not supported"
    )


def _granularity(
    node: Node, v_shape: Sequence[int], shape: Sequence[int]
) -> tuple[int, int] | None:
    """None for a per-tensor scale or zero point of shape ``v_shape`` (a scalar or
    one element), else ``(axis, block_size)`` after checking its shape against the
    input's ``shape`` (``block_size`` 0: per axis)."""
    if math.prod(v_shape) == 1:
        return None
    axis, block = int(node.attr("axis", 1)), int(node.attr("block_size", 0))
    if not -len(shape) <= axis < len(shape):
        raise node.error(
            f"axis {axis} is out of range for an input of shape {list(shape)}"
        )
    axis %= len(shape)
    if block == 0:
        if len(v_shape) != 1 or v_shape[0] != shape[axis]:
            raise node.error(
                f"a per-axis scale or zero point must be 1-D with {shape[axis]} "
                f"elements (input axis {axis} of {list(shape)}), got shape "
                f"{list(v_shape)}"
            )
        return axis, 0
    if block < 0:
        raise node.error(f"block_size must be positive, got {block}")
    expected = [*shape[:axis], -(-shape[axis] // block), *shape[axis + 1 :]]
    if list(v_shape) != expected:
        raise node.error(
            f"a blocked scale or zero point for input {list(shape)}, axis {axis}, "
            f"block_size {block} must have shape {expected}, got {list(v_shape)}"
        )
    return axis, block


def per_axis(g: Graph, node: Node, v: Value, shape: Sequence[int]) -> Value:
    """A scale or zero point ``v`` made to broadcast against an input of ``shape``:
    a scalar (or one element) as it is, a 1-D one along the node's ``axis``, a
    blocked one (``block_size > 0``) repeated ``block_size`` times along ``axis``
    (module docstring)."""
    shape = tuple(shape)
    found = _granularity(node, v.shape, shape)
    if found is None:
        return g.reshape(v, ()) if v.rank else v
    axis, block = found
    if block == 0:
        dims = [1] * len(shape)
        dims[axis] = shape[axis]
        return g.reshape(v, dims)
    blocks = v.shape[axis]
    split = [*shape[:axis], blocks, 1, *shape[axis + 1 :]]
    wide = [*shape[:axis], blocks, block, *shape[axis + 1 :]]
    full = [*shape[:axis], blocks * block, *shape[axis + 1 :]]
    repeated = g.reshape(g.broadcast(g.reshape(v, split), wide), full)
    if blocks * block == shape[axis]:
        return repeated
    stop: list[int | None] = [None] * len(shape)
    stop[axis] = shape[axis]
    return g.slice(repeated, [0] * len(shape), stop)


def per_axis_array(node: Node, v: Array, shape: Sequence[int]) -> Array:
    """``per_axis`` of a constant (for the folders)."""
    found = _granularity(node, v.shape, shape)
    if found is None:
        return v.reshape(())
    axis, block = found
    if block == 0:
        dims = [1] * len(shape)
        dims[axis] = shape[axis]
        return v.reshape(dims)
    return np.repeat(v, block, axis=axis).take(range(shape[axis]), axis=axis)


def _as(g: Graph, v: Value, dtype: str) -> Value:
    return v if v.dtype == dtype else g.cast(v, dtype)


def saturate(g: Graph, rounded: Value, zero_point: Value | None, dtype: str) -> Value:
    """``clip(rounded + zero_point, lo, hi)`` cast to ``dtype``: ``rounded`` holds
    integers (floats), the sum is taken in float32 (exact below ``2^24``; beyond,
    it is clipped anyway)."""
    r = _as(g, rounded, "float32")
    if zero_point is not None:
        r = r + _as(g, zero_point, "float32")
    lo, hi = RANGES[dtype]
    return g.cast(g.minimum(g.maximum(r, float(lo)), float(hi)), dtype)


# ---- QuantizeLinear / DequantizeLinear -----------------------------------------------


def _quantized_type(node: Node, zero_point: str | None) -> str:
    """``QuantizeLinear``'s output type: the zero point's dtype (``zero_point``,
    None without one), else ``output_dtype``, else uint8."""
    declared = int(node.attr("output_dtype", 0))
    if zero_point is not None:
        _expect(node, "zero point", zero_point, tuple(RANGES))
        if declared and _onnx_dtype(node, declared, "output_dtype") != zero_point:
            raise node.error(
                f"output_dtype {onnx.TensorProto.DataType.Name(declared)} differs "
                f"from the zero point's dtype {zero_point}"
            )
        return zero_point
    if declared:
        out = _onnx_dtype(node, declared, "output_dtype")
        _expect(node, "output_dtype", out, tuple(RANGES))
        return out
    return "uint8"


def _quantize_types(
    node: Node, x: str, scale: str, zero_point: str | None
) -> tuple[str, str]:
    """``QuantizeLinear``'s (compute type of ``x / scale``, output type) for inputs
    of these dtypes: ``precision``, else NumPy's promotion of the two."""
    _expect(node, "input x", x, ("int32", *_FLOATS))
    _expect(node, "scale", scale, ("int32", *_FLOATS))
    out = _quantized_type(node, zero_point)
    precision = int(node.attr("precision", 0))
    if not precision:
        return str(np.result_type(x, scale)), out
    compute = _onnx_dtype(node, precision, "precision")
    _expect(node, "precision", compute, _FLOATS)
    return compute, out


@converter("QuantizeLinear")
def _quantize_linear(im: Importer, node: Node) -> list[Value | Array]:
    """``saturate(round(x / y_scale) + y_zero_point)`` per tensor, per axis or
    blocked (module docstring); ``saturate`` only concerns float8 outputs."""
    g = im.graph
    zp_type = _dtype(im, node, 2, "zero point") if _has(node, 2) else None
    compute, out = _quantize_types(
        node, _dtype(im, node, 0, "x"), _dtype(im, node, 1, "y_scale"), zp_type
    )
    x, scale = im.input(node, 0), im.input(node, 1)
    s = per_axis(g, node, scale, x.shape)
    rounded = g.round(_as(g, x, compute) / _as(g, s, compute))
    zp = im.optional_input(node, 2)
    if zp is not None:
        zp = per_axis(g, node, zp, x.shape)
    return [saturate(g, rounded, zp, out)]


@folder("QuantizeLinear")
def _fold_quantize_linear(node: Node, args: list[Array | None]) -> list[Array]:
    """The converter's arithmetic on constants (a QDQ model's constants)."""
    x, scale, zp = _args(node, args)
    compute, out = _quantize_types(
        node, str(x.dtype), str(scale.dtype), None if zp is None else str(zp.dtype)
    )
    s = per_axis_array(node, scale, x.shape).astype(compute)
    r = np.round(x.astype(compute) / s).astype(np.float32)
    if zp is not None:
        r = r + per_axis_array(node, zp, x.shape).astype(np.float32)
    lo, hi = RANGES[out]
    return [np.clip(r, lo, hi).astype(out)]


def _dequantize_type(node: Node, x: str, scale: str, zero_point: str | None) -> str:
    """``DequantizeLinear``'s output type (``output_dtype``, else the scale's), for
    inputs of these dtypes."""
    _expect(node, "input x", x, (*RANGES, "int32"))
    _expect(node, "scale", scale, _FLOATS)
    if zero_point is not None and zero_point != x:
        raise node.error(
            f"the zero point has dtype {zero_point}, but x has dtype {x} (they must "
            "be the same)"
        )
    declared = int(node.attr("output_dtype", 0))
    out = _onnx_dtype(node, declared, "output_dtype") if declared else scale
    _expect(node, "output", out, _FLOATS)
    return out


@converter("DequantizeLinear")
def _dequantize_linear(im: Importer, node: Node) -> list[Value | Array]:
    """``(x - x_zero_point) * x_scale`` in float32, cast to ``output_dtype`` (else
    the scale's type); an int32 ``x`` less its zero point in int32 first (ONNX
    Runtime's order; the zero point of int32 is 0 by the spec)."""
    g = im.graph
    kind = _dtype(im, node, 0, "x")
    zp_type = _dtype(im, node, 2, "zero point") if _has(node, 2) else None
    out = _dequantize_type(node, kind, _dtype(im, node, 1, "x_scale"), zp_type)
    x, scale = im.input(node, 0), im.input(node, 1)
    zp = im.optional_input(node, 2)
    if zp is not None:
        zp = per_axis(g, node, zp, x.shape)
    if kind == "int32":
        shifted = g.cast(x if zp is None else x - zp, "float32")
    else:
        shifted = g.cast(x, "float32")
        if zp is not None:
            shifted = shifted - g.cast(zp, "float32")
    y = shifted * _as(g, per_axis(g, node, scale, x.shape), "float32")
    return [_as(g, y, out)]


@folder("DequantizeLinear")
def _fold_dequantize_linear(node: Node, args: list[Array | None]) -> list[Array]:
    """The converter's arithmetic on constants (a QDQ model's int8 weights)."""
    x, scale, zp = _args(node, args)
    zp_type = None if zp is None else str(zp.dtype)
    out = _dequantize_type(node, str(x.dtype), str(scale.dtype), zp_type)
    if zp is not None:
        zp = per_axis_array(node, zp, x.shape)
    if x.dtype == np.int32:
        shifted = (x if zp is None else x - zp).astype(np.float32)
    else:
        shifted = x.astype(np.float32)
        if zp is not None:
            shifted = shifted - zp.astype(np.float32)
    y = shifted * per_axis_array(node, scale, x.shape).astype(np.float32)
    return [y.astype(out)]


def _args(node: Node, args: list[Array | None]) -> tuple[Array, Array, Array | None]:
    """A folder's ``x``, scale and optional zero point."""
    if len(args) < 2 or args[0] is None or args[1] is None:
        raise node.error("needs the inputs x and scale")
    zp = args[2] if len(args) > 2 else None
    return np.asarray(args[0]), np.asarray(args[1]), zp


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(im: Importer, node: Node) -> list[Value | Array]:
    """uint8 quantization with the scale and zero point of ``x``'s range (ONNX's
    reference, in float32): ``lo = min(0, min x)``, ``hi = max(0, max x)``,
    ``scale = (hi - lo) / 255``, zero point ``round(clip(-lo / scale, 0, 255))``,
    ``y = clip(round(x / scale) + zp, 0, 255)``. Outputs ``y``, the scale and the
    zero point (scalars). An all-zero ``x`` (``hi == lo``) has scale 1: ONNX
    Runtime's rule, which the reference's comment states (its code gives
    ``1 / 255``; the spec's formula divides by 0); ``y`` and the zero point are 0
    either way."""
    g = im.graph
    _expect(node, "input x", _dtype(im, node, 0, "x"), ("float32",))
    x = im.input(node, 0)
    hi = g.maximum(g.reduce_max(x), 0.0)
    lo = g.minimum(g.neg(g.reduce_max(g.neg(x))), 0.0)
    scale = g.where(g.equal(hi, lo), 1.0, (hi - lo) / 255.0)
    zero_point = g.round(g.minimum(g.maximum(0.0 - lo / scale, 0.0), 255.0))
    y = saturate(g, g.round(x / scale), zero_point, "uint8")
    return [y, scale, g.cast(zero_point, "uint8")]


# ---- integer contractions --------------------------------------------------------


def _shifted(g: Graph, v: Value, zero_point: Value | None, dtype: str) -> Value:
    """``v - zero_point`` in float ``dtype`` (exact: module docstring)."""
    f = g.cast(v, dtype)
    return f if zero_point is None else f - g.cast(zero_point, dtype)


def _scalar(g: Graph, v: Value) -> Value:
    """A one-element 1-D value as a scalar; any other value as it is."""
    return g.reshape(v, ()) if v.rank == 1 and v.shape[0] == 1 else v


def _per_row(g: Graph, v: Value, a: Value) -> Value:
    """A scale or zero point of ``a`` (``[..., M, K]``): a scalar, per row (``[M]``,
    viewed as ``[M, 1]``), or any shape that broadcasts (``[..., M, 1]``)."""
    v = _scalar(g, v)
    if v.rank == 1 and a.rank >= 2 and v.shape[0] == a.shape[-2]:
        return g.reshape(v, (v.shape[0], 1))
    return v


def integer_matmul(
    im: Importer, node: Node, a: Value, b: Value, zero_points: tuple[int, int]
) -> Value:
    """``(a - a_zp) @ (b - b_zp)`` in int32 (wrapping, as ONNX Runtime's
    accumulators): ``tg.matmul_integer`` of the 8-bit operands, then the zero
    points' terms, each left out where its zero point is a constant 0 (module
    docstring). ``zero_points`` are the node's input indices of ``a_zp`` and
    ``b_zp``."""
    g = im.graph
    a_zp, b_zp = (_nonzero_zero_point(im, node, index) for index in zero_points)

    def product(a: Value, b: Value) -> Value:  # of matrices (numpy_matmul)
        y = g.matmul_integer(a, b)
        za = zb = None
        if a_zp is not None:
            za = g.cast(_per_row(g, a_zp, a), "int32")
            y = y - za * _sum(g, b, -2)
        if b_zp is not None:
            # per column: [N] or [..., 1, N] broadcast as they are
            zb = g.cast(_scalar(g, b_zp), "int32")
            y = y - _sum(g, a, -1) * zb
        if za is not None and zb is not None:
            y = y + za * zb * g.constant(np.array(a.shape[-1], np.int32))
        return y

    return numpy_matmul(g, node, a, b, product)


def _sum(g: Graph, v: Value, axis: int) -> Value:
    """``v``'s int32 sums along ``axis`` (kept): in float64, where every sum of
    8-bit integers is exact (tg's reductions are float)."""
    return g.cast(g.reduce_sum(g.cast(v, "float64"), axes=axis, keepdims=True), "int32")


def _nonzero_zero_point(im: Importer, node: Node, index: int) -> Value | None:
    """Input #``index`` (a zero point), or None when it is absent or a constant
    of zeros (a symmetric quantization's)."""
    if not _has(node, index):
        return None
    entry = im.env.get(node.inputs[index])
    if isinstance(entry, np.ndarray) and not entry.any():
        return None
    return im.input(node, index)


def _expect_int8(im: Importer, node: Node, indices: Sequence[int]) -> None:
    for index in indices:
        if _has(node, index):
            what = f"input #{index}"
            _expect(node, what, _dtype(im, node, index, what), ("int8", "uint8"))


@converter("MatMulInteger")
def _matmul_integer(im: Importer, node: Node) -> list[Value | Array]:
    """``(A - a_zero_point) @ (B - b_zero_point)`` in int32 (NumPy ``matmul``);
    the zero points per tensor, per row of A, per column of B."""
    _expect_int8(im, node, (0, 1, 2, 3))
    a, b = im.input(node, 0), im.input(node, 1)
    return [integer_matmul(im, node, a, b, (2, 3))]


def _requantize(
    g: Graph,
    acc: Value,
    multiplier: Value,
    zero_point: Value,
    dtype: str,
    runtime: bool = False,
) -> Value:
    """``saturate(round(acc * multiplier + zero_point))`` in float64 (the
    reference's: an int32 times a float32 array is float64 in NumPy); with
    ``runtime``, ONNX Runtime's requantization (``MlasRequantizeOutput``, for a
    QDQ unit, ``qdq.py``): ``round(clip(float32(acc) * multiplier, lo - zp,
    hi - zp)) + zp`` in float32."""
    lo, hi = RANGES[dtype]
    if runtime:
        zp = _as(g, zero_point, "float32")
        d = _as(g, acc, "float32") * _as(g, multiplier, "float32")
        d = g.minimum(g.maximum(d, float(lo) - zp), float(hi) - zp)
        return g.cast(g.round(d) + zp, dtype)
    d = _as(g, acc, "float64") * _as(g, multiplier, "float64")
    d = d + _as(g, zero_point, "float64")
    return g.cast(g.round(g.minimum(g.maximum(d, float(lo)), float(hi))), dtype)


@converter("QLinearMatMul")
def _qlinear_matmul(im: Importer, node: Node) -> list[Value | Array]:
    """``saturate(round((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale) +
    y_zp))``: the integer matmul of ``MatMulInteger``, then ``_requantize``. Scales
    and zero points per tensor, per row of ``a``, per column of ``b`` and ``y``."""
    g = im.graph
    _expect_int8(im, node, (0, 2, 3, 5, 7))
    for index in (1, 4, 6):
        what = f"scale (input #{index})"
        _expect(node, what, _dtype(im, node, index, what), _FLOATS)
    out = _dtype(im, node, 7, "y_zero_point")
    a, b = im.input(node, 0), im.input(node, 3)
    a_scale, b_scale = im.input(node, 1), im.input(node, 4)
    y_scale, y_zp = im.input(node, 6), im.input(node, 7)
    acc = integer_matmul(im, node, a, b, (2, 5))
    multiplier = _per_row(g, a_scale, a) * _scalar(g, b_scale) / _scalar(g, y_scale)
    return [_requantize(g, acc, multiplier, _scalar(g, y_zp), out)]


def _per_channel(g: Graph, v: Value, axis: int) -> Value:
    """A per-tensor or per-output-channel (``[F]``) value of a 4-D tensor whose
    channels are ``axis`` (0 for a weight ``[F, C, KH, KW]``, 1 for an output)."""
    v = _scalar(g, v)
    if v.rank == 0:
        return v
    dims = [1, 1, 1, 1]
    dims[axis] = math.prod(v.shape)
    return g.reshape(v, dims)


def integer_conv(
    im: Importer,
    node: Node,
    w: Value,
    x_zp: Value | None,
    w_zp: Value | None,
    bias: Value | None = None,
) -> Value:
    """The 2-D convolution of ``(x - x_zp)`` (``x``: input #0) with ``(w - w_zp)``
    (plus an int32 ``bias``) in float64, rounded to integers (module docstring:
    Winograd)."""
    g = im.graph
    x = im.input(node, 0)
    if x.rank != 4 or w.rank != 4:
        raise node.error(
            f"only 2-D {node.op_type} on NCHW input is supported, got input shape "
            f"{list(x.shape)} and weight shape {list(w.shape)}"
        )
    kernel = w.shape[2:]
    if _ints(node, "kernel_shape", kernel, 2) != kernel:
        raise node.error(
            f"kernel_shape {list(node.attr('kernel_shape'))} does not match the "
            f"weight shape {list(w.shape)}"
        )
    if x_zp is not None and math.prod(x_zp.shape) != 1:
        raise node.error(
            f"the input's zero point must be a scalar, got shape {list(x_zp.shape)}"
        )
    if w_zp is not None and math.prod(w_zp.shape) not in (1, w.shape[0]):
        raise node.error(
            f"the weight's zero point must be a scalar or have one value per output "
            f"channel ({w.shape[0]}), got shape {list(w_zp.shape)}"
        )
    strides = _ints(node, "strides", (1, 1), 2)
    dilations = _ints(node, "dilations", (1, 1), 2)
    begin, end = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    xf = _shifted(g, x, None if x_zp is None else _scalar(g, x_zp), "float64")
    wf = _shifted(g, w, None if w_zp is None else _per_channel(g, w_zp, 0), "float64")
    y = g.conv2d(
        xf,
        wf,
        None if bias is None else g.cast(bias, "float64"),
        strides=strides,
        padding=(*begin, *end),
        dilation=dilations,
        groups=int(node.attr("group", 1)),
    )
    return g.round(y)


@converter("ConvInteger")
def _conv_integer(im: Importer, node: Node) -> list[Value | Array]:
    """``conv(x - x_zero_point, w - w_zero_point)`` in int32 (2-D, NCHW); the
    input's zero point per tensor, the weight's per tensor or per output channel."""
    _expect_int8(im, node, (0, 1, 2, 3))
    int8 = _int8_conv(im, node, (1, 2, 3, None))
    if int8 is not None:
        return [im.graph.transpose(int8, (0, 3, 1, 2))]
    w, x_zp, w_zp = (
        im.input(node, 1),
        im.optional_input(node, 2),
        im.optional_input(node, 3),
    )
    y = integer_conv(im, node, w, x_zp, w_zp)
    return [im.graph.cast(y, "int32")]


@converter("QLinearConv")
def _qlinear_conv(im: Importer, node: Node) -> list[Value | Array]:
    """``saturate(round((conv(x - x_zp, w - w_zp) + B) * (x_scale * w_scale /
    y_scale) + y_zp))`` (2-D, NCHW): ``integer_conv``, then ``_requantize``; the
    weight's scale and zero point per tensor or per output channel."""
    g = im.graph
    _expect_int8(im, node, (0, 2, 3, 5, 7))
    for index in (1, 4, 6):
        what = f"scale (input #{index})"
        _expect(node, what, _dtype(im, node, index, what), ("float32",))
    if _has(node, 8):
        _expect(node, "bias", _dtype(im, node, 8, "B"), ("int32",))
    out = _dtype(im, node, 7, "y_zero_point")
    runtime = bool(node.attr(FLOAT32_REQUANTIZE, 0))  # a QDQ unit (qdq.py)
    w_scale = im.input(node, 4)
    filters = im.input(node, 3).shape[0]
    if math.prod(w_scale.shape) not in (1, filters):
        raise node.error(
            f"w_scale must be a scalar or have one value per output channel "
            f"({filters}), got shape {list(w_scale.shape)}"
        )
    x_scale, y_scale = _scalar(g, im.input(node, 1)), _scalar(g, im.input(node, 6))
    y_zp = _scalar(g, im.input(node, 7))
    int8 = _int8_conv(im, node, (3, 2, 5, 8))
    if int8 is not None:  # channels last: the scale per channel on the last axis
        per_channel = g.reshape(w_scale, (math.prod(w_scale.shape),))
        multiplier = x_scale * per_channel / y_scale
        y = _requantize(g, int8, multiplier, y_zp, out, runtime)
        return [g.transpose(y, (0, 3, 1, 2))]
    bias = im.optional_input(node, 8)
    w, x_zp, w_zp = im.input(node, 3), im.input(node, 2), im.input(node, 5)
    acc = integer_conv(im, node, w, x_zp, w_zp, bias)
    multiplier = x_scale * _per_channel(g, w_scale, 1) / y_scale
    return [_requantize(g, acc, multiplier, y_zp, out, runtime)]


def _constant(im: Importer, node: Node, index: int | None) -> Array | None:
    """Input #``index``'s value when it is a compile-time constant."""
    if index is None or not _has(node, index):
        return None
    entry = im.env.get(node.inputs[index])
    return entry if isinstance(entry, np.ndarray) else None


def _int8_conv(
    im: Importer, node: Node, indices: tuple[int, int, int, int | None]
) -> Value | None:
    """The int8 kernel's channels-last int32 result (``conv_integer.py``) when the
    convolution is one it takes (a uint8 input, an int8 constant weight of a 2-D
    ungrouped convolution with a zero point of 0, a constant input zero point and
    bias), else None. ``indices``: the weight's, the input's zero point's, the
    weight's zero point's and the bias's input numbers."""
    w_index, x_zp_index, w_zp_index, bias_index = indices
    x = im.input(node, 0)
    weight = _constant(im, node, w_index)
    if x.dtype != "uint8" or x.rank != 4 or weight is None or weight.dtype != np.int8:
        return None
    if weight.ndim != 4 or int(node.attr("group", 1)) != 1:
        return None
    w_zp = _constant(im, node, w_zp_index)
    if _has(node, w_zp_index) and (w_zp is None or w_zp.any()):
        return None
    x_zp = _constant(im, node, x_zp_index)
    if _has(node, x_zp_index) and (x_zp is None or x_zp.size != 1):
        return None
    bias = _constant(im, node, bias_index)
    if bias_index is not None and _has(node, bias_index) and bias is None:
        return None
    kernel = tuple(weight.shape[2:])
    if _ints(node, "kernel_shape", kernel, 2) != kernel:
        raise node.error(
            f"kernel_shape {list(node.attr('kernel_shape'))} does not match the "
            f"weight shape {list(weight.shape)}"
        )
    if weight.shape[1] != x.shape[1]:
        raise node.error(
            f"the weight has {weight.shape[1]} input channels, the input "
            f"{list(x.shape)} has {x.shape[1]}"
        )
    strides = _ints(node, "strides", (1, 1), 2)
    dilations = _ints(node, "dilations", (1, 1), 2)
    begin, end = _window_padding(node, x.shape[2:], kernel, strides, dilations)
    zx = 0 if x_zp is None else int(x_zp.reshape(-1)[0])
    return nhwc_int8_conv(im.graph, x, weight, zx, bias, strides, begin, end, dilations)
