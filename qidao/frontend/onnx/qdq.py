"""QDQ convolutions fused into ``QLinearConv`` before import, as ONNX Runtime does.

A statically quantized model in QDQ format (``onnxruntime.quantization``'s
default) keeps every operator in float and marks its quantization with
``QuantizeLinear``/``DequantizeLinear`` pairs around it::

    x_q --DequantizeLinear(sx, zx)--> x --+
    w_q --DequantizeLinear(sw, 0)---> w --+--> Conv --> y --QuantizeLinear(sy, zy)--> y_q
    b_q --DequantizeLinear(sx*sw, 0)> b --+

Read literally, it is float arithmetic (the dequantized values, a float
convolution, a rounding at the end). ONNX Runtime reads such a node unit as the
int8 operator it stands for, ``QLinearConv(x_q, sx, zx, w_q, sw, 0, sy, zy,
b_q)``, and runs its int8 kernels: that is what the format is for. qidao does the
same, here, on the ONNX graph: the ``Conv`` and its ``QuantizeLinear`` become one
``QLinearConv`` (``quantize.py``'s converter, whose int8 kernel is an im2col and
``tg.matmul_integer``). The ``DequantizeLinear`` nodes stay for any other reader
and are dead code otherwise.

The two readings differ only in rounding: the float one sums float32 products and
rounds once at the quantization, the int8 one sums exactly in int32 and rounds
once after the requantizing multiply, so an output can differ by one quantization
step where a value falls next to a rounding boundary (ONNX Runtime's output
differs from the float reading the same way).

The requantizing multiply is ONNX Runtime's too (the node carries the attribute
``qidao_float32_requantize``): ``float32(acc) * multiplier`` in float32, clipped
to ``[lo - zp, hi - zp]``, rounded half to even, plus the zero point, where an
explicit ``QLinearConv`` node keeps ONNX's reference arithmetic (float64: an
int32 times a float32 array in NumPy). Neither the float reading nor the
reference is what such a unit means to the runtime it was quantized for, and
the float32 product is half the vector work of the float64 one (measured on
ResNet-50 int8, one thread: 22.0 -> 16.3 ms with everything else equal).

A unit is fused only when it is exactly that: a 2-D ``Conv`` whose input, weight
and optional bias are each the output of a ``DequantizeLinear``; the weight's
quantized tensor, scale and zero point and the bias's are initializers, the
input's scale and zero point too (per tensor); the weight's zero point is 0 and
the bias's scale is the input's times the weight's (float32, to a relative 1e-6:
the quantizer's rule); the ``Conv``'s output is read by one ``QuantizeLinear``
alone, with initializer scale and zero point per tensor, and is not a graph
output. Anything else is left as it is (and computed in float, as written).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

_CONV_ATTRIBUTES = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
FLOAT32_REQUANTIZE = "qidao_float32_requantize"
"""The attribute (1) that marks a ``QLinearConv`` made here: requantize as ONNX
Runtime's kernel does (``quantize.py``'s ``_requantize``)."""


def fuse_qdq_convs(proto: Any) -> Any:
    """``proto`` with its QDQ convolution units as ``QLinearConv`` nodes (a copy
    when any is fused; the model itself otherwise)."""
    graph = proto.graph
    inits = {t.name: t for t in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    fused: dict[int, Any] = {}  # index of the Conv -> its QLinearConv
    dropped: set[int] = set()  # indices of the QuantizeLinear nodes fused
    index = {id(node): k for k, node in enumerate(graph.node)}
    for node in graph.node:
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx"):
            continue
        unit = _unit(node, producers, readers, inits, outputs)
        if unit is None:
            continue
        quantize, inputs = unit
        attrs = [a for a in node.attribute if a.name in _CONV_ATTRIBUTES]
        qlinear = helper.make_node(
            "QLinearConv",
            inputs,
            [quantize.output[0]],
            name=f"{node.name or node.output[0]}_qlinear",
        )
        qlinear.attribute.extend(attrs)
        qlinear.attribute.append(helper.make_attribute(FLOAT32_REQUANTIZE, 1))
        fused[index[id(node)]] = qlinear
        dropped.add(index[id(quantize)])
    if not fused:
        return proto
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    nodes = [
        fused.get(k, node)
        for k, node in enumerate(proto.graph.node)
        if k not in dropped
    ]
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    return proto


def _unit(
    conv: Any,
    producers: dict[str, Any],
    readers: dict[str, list[Any]],
    inits: dict[str, Any],
    outputs: set[str],
) -> tuple[Any, list[str]] | None:
    """The ``QuantizeLinear`` after ``conv`` and the inputs of the ``QLinearConv``
    that the unit stands for, or None when ``conv`` is not such a unit."""
    if len(conv.input) < 2 or conv.output[0] in outputs:
        return None
    after = readers.get(conv.output[0], [])
    if len(after) != 1 or after[0].op_type != "QuantizeLinear":
        return None
    quantize = after[0]
    x, w = (_dequantize(producers.get(name)) for name in conv.input[:2])
    if x is None or w is None or len(quantize.input) < 3:
        return None
    sy, zy = quantize.input[1], quantize.input[2]
    if not all(n in inits for n in (*x[1:], *w, sy, zy)):
        return None
    if _size(inits[x[1]]) != 1 or _size(inits[x[2]]) != 1:
        return None
    if _size(inits[sy]) != 1 or _size(inits[zy]) != 1:
        return None
    if numpy_helper.to_array(inits[w[2]]).any():
        return None
    if _size(inits[w[1]]) != 1 and _axis(producers[conv.input[1]]) != 0:
        return None  # QLinearConv's weight scale is per output channel (axis 0)
    inputs = [*x, *w, sy, zy]
    if len(conv.input) > 2 and conv.input[2]:
        b = _dequantize(producers.get(conv.input[2]))
        if b is None or not all(n in inits for n in b):
            return None
        if not _bias_scale_matches(inits, x[1], w[1], b[1], b[2]):
            return None
        inputs.append(b[0])
    return quantize, inputs


def _dequantize(node: Any) -> list[str] | None:
    """The three inputs of a per-tensor-or-axis ``DequantizeLinear`` (no block
    size) with a zero point, or None."""
    if node is None or node.op_type != "DequantizeLinear" or len(node.input) < 3:
        return None
    if any(a.name == "block_size" and a.i for a in node.attribute):
        return None
    return list(node.input[:3])


def _axis(node: Any) -> int:
    """A ``DequantizeLinear``'s ``axis`` (default 1)."""
    return next((int(a.i) for a in node.attribute if a.name == "axis"), 1)


def _size(tensor: Any) -> int:
    return int(np.prod(tensor.dims)) if tensor.dims else 1


def _bias_scale_matches(
    inits: dict[str, Any], sx: str, sw: str, sb: str, zb: str
) -> bool:
    """The bias is int32, its zero point 0, its scale ``sx * sw`` (per channel)."""
    if (
        inits[zb].data_type != onnx.TensorProto.INT32
        and numpy_helper.to_array(inits[zb]).dtype != np.int32
    ):
        return False
    if numpy_helper.to_array(inits[zb]).any():
        return False
    x_scale = numpy_helper.to_array(inits[sx]).astype(np.float64)
    w_scale = numpy_helper.to_array(inits[sw]).astype(np.float64)
    b_scale = numpy_helper.to_array(inits[sb]).astype(np.float64)
    want = np.broadcast_to(x_scale * w_scale, np.shape(b_scale))
    return bool(np.allclose(b_scale, want, rtol=1e-6, atol=0.0))
