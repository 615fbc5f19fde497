"""The signal converters: ``DFT`` (opsets 17 and 20), ``STFT`` and ``MelWeightMatrix``.

A signal is ONNX's real representation of a complex tensor: its last axis has size 1
(a real signal) or 2 (real and imaginary parts). A DFT along an axis of static length
is linear in the signal, so it is one matmul with a constant matrix of cosines and
sines (the twiddle factors), computed at import in float64. The matmul runs in
float64 too and its result is rounded once to the signal's dtype, as ONNX's
reference (NumPy's float64 FFT) rounds it; the error of a length-``m`` sum in float64
is far below a float32 ulp:

1. the transform axis and the complex axis move last (a transpose) and the rest is
   flattened: ``[P, c * m]``, ``c`` parts of ``m`` samples per row;
2. one ``tg.matmul`` with the ``[c * m, parts * n_out]`` matrix (``dft_matrix``);
3. the rows go back to ``[..., parts, n_out]`` and a transpose puts the frequency
   axis in its place and the parts last.

``dft_length`` pads the signal with zeros or truncates it (rows of the matrix), and
``onesided`` keeps the first ``n // 2 + 1`` frequencies (columns). ``inverse`` is the
conjugate transform scaled by ``1 / n``; ``inverse`` with ``onesided`` is NumPy's
``irfft``: the input is the first half of a Hermitian spectrum and the result is
real (last axis 1), as ONNX's reference defines it. ``dft_length`` and opset 20's
``axis`` input must be known at compile time: constants, or integer graph inputs
that the specialization binds (``specialize.py``).

``STFT`` gathers its frames with constant indices (``[batch, frames, frame_length,
c]``), multiplies them by the window (a runtime tensor or ones) and takes the DFT
along the frame axis. ``MelWeightMatrix`` depends only on scalars, so it is computed
at import, as ONNX's reference computes it (``mel_weight_matrix``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnx import helper

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.importer import Array, Importer, converter, folder
from qidao.frontend.onnx.node import Node

FLOATS = ("float16", "float32", "float64")
"""The signal dtypes the DFT takes."""


def dft_matrix(
    m: int, n: int, parts_in: int, inverse: bool, onesided: bool
) -> tuple[Array, int]:
    """The float64 matrix ``W`` with ``row @ W`` the DFT of a row of ``parts_in``
    blocks of ``m`` samples (real parts, then imaginary parts), and the number of
    output parts (2, or 1 for the real result of an inverse one-sided DFT).

    ``n`` is the DFT length: samples at ``t >= n`` are dropped and missing ones are
    zeros. Forward: ``X[k] = sum_t x[t] e^(-2 pi i k t / n)`` for ``k < n`` (``k <
    n // 2 + 1`` when ``onesided``); inverse: ``e^(+...)`` and ``1 / n``. The
    columns are the real parts of the result, then the imaginary parts."""
    if inverse and onesided:
        return _irfft_matrix(m, n, parts_in), 1
    n_out = n // 2 + 1 if onesided else n
    t = np.arange(min(m, n))[:, None]
    k = np.arange(n_out)[None, :]
    angle = 2 * np.pi * ((t * k) % n) / n  # reduced mod n: exact arguments
    cos, sin = np.cos(angle), np.sin(angle)
    sign, scale = (1.0, 1.0 / n) if inverse else (-1.0, 1.0)
    # x = a + ib times cos + i sign sin: real a cos - b sign sin, imag a sign sin + b cos
    blocks = [[cos, sign * sin], [-sign * sin, cos]][:parts_in]
    w = np.zeros((parts_in * m, 2 * n_out))
    for p, (to_real, to_imag) in enumerate(blocks):
        w[p * m : p * m + t.shape[0], :n_out] = to_real
        w[p * m : p * m + t.shape[0], n_out:] = to_imag
    return w * scale, 2


def _irfft_matrix(m: int, n: int, parts_in: int) -> Array:
    """``np.fft.irfft(X, n)`` as a matrix: the ``n // 2 + 1`` first frequencies of a
    Hermitian spectrum (the others are their conjugates) to ``n`` real samples,
    ``x[t] = (1 / n) sum_k c_k (Re X[k] cos - Im X[k] sin)(2 pi k t / n)``, ``c_k``
    2 except for ``k = 0`` and ``k = n / 2``, whose imaginary parts are ignored."""
    k = np.arange(min(m, n // 2 + 1))[:, None]
    t = np.arange(n)[None, :]
    angle = 2 * np.pi * ((k * t) % n) / n
    weight = np.where((k == 0) | (2 * k == n), 1.0, 2.0)
    w = np.zeros((parts_in * m, n))
    w[: k.shape[0]] = weight * np.cos(angle) / n
    if parts_in == 2:
        sin = np.where((k == 0) | (2 * k == n), 0.0, -weight * np.sin(angle) / n)
        w[m : m + k.shape[0]] = sin
    return w


def dft(g: Graph, x: Value, axis: int, n: int, inverse: bool, onesided: bool) -> Value:
    """The DFT of signal ``x`` (``[..., c]``, c = 1 or 2) along ``axis`` (not the
    last), length ``n``: ``[..., n_out, ..., parts]`` (see ``dft_matrix``)."""
    parts_in, m = x.shape[-1], x.shape[axis]
    w, parts_out = dft_matrix(m, n, parts_in, inverse, onesided)
    n_out = w.shape[1] // parts_out
    rest = [d for d in range(x.rank - 1) if d != axis]
    batch = [x.shape[d] for d in rest]
    wide = x if x.dtype == "float64" else g.cast(x, "float64")
    moved = g.transpose(wide, [*rest, x.rank - 1, axis])
    rows = g.reshape(moved, [math.prod(batch), parts_in * m])
    y = g.matmul(rows, g.constant(w, dtype="float64"))
    if x.dtype != "float64":
        y = g.cast(y, x.dtype)
    y = g.reshape(y, [*batch, parts_out, n_out])
    # y's axes: rest..., parts, frequency; put the frequency at axis, the parts last
    perm = list(range(len(rest)))
    perm.insert(axis, len(rest) + 1)
    return g.transpose(y, [*perm, len(rest)])


def _int_input(im: Importer, node: Node, index: int, what: str) -> int | None:
    """The value of optional scalar integer input #``index``, None when omitted."""
    if index >= len(node.inputs) or not node.inputs[index]:
        return None
    value = np.asarray(im.const(node, node.inputs[index], what))
    if value.size != 1 or value.dtype.kind not in "iu":
        raise node.error(
            f"{what} must be one integer, got {value.dtype} of shape {list(value.shape)}"
        )
    return int(value.reshape(-1)[0])


def _flag(node: Node, name: str, default: int) -> bool:
    value = int(node.attr(name, default))
    if value not in (0, 1):
        raise node.error(f"{name}={value} must be 0 or 1")
    return value == 1


def _signal(node: Node, x: Value, what: str) -> None:
    """Check that ``x`` is a float signal with a real/imaginary last axis."""
    if x.dtype not in FLOATS:
        raise node.error(f"{what} is {x.dtype}; supported: {', '.join(FLOATS)}")
    if x.rank < 2 or x.shape[-1] not in (1, 2):
        raise node.error(
            f"{what} has shape {list(x.shape)}; expected rank >= 2 with a last axis "
            "of 1 (real) or 2 (real and imaginary parts)"
        )


@converter("DFT")
def _dft(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    _signal(node, x, "input")
    if node.opset >= 20:
        axis = _int_input(im, node, 2, "axis")
        axis = -2 if axis is None else axis
    else:
        axis = int(node.attr("axis", 1))
    r = x.rank
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        raise node.error(
            f"axis={axis} is out of range for input shape {list(x.shape)}: expected "
            f"[{-r}, -2] or [0, {r - 2}] (the last axis holds the complex parts)"
        )
    axis %= r
    inverse, onesided = _flag(node, "inverse", 0), _flag(node, "onesided", 0)
    m = x.shape[axis]
    n = _int_input(im, node, 1, "dft_length")
    if n is None:
        n = 2 * (m - 1) if inverse and onesided else m
    if n < 1:
        raise node.error(
            f"the DFT length is {n} (dft_length, or 2 * (size - 1) for an inverse "
            f"one-sided DFT of {m} frequencies); expected >= 1"
        )
    return [dft(im.graph, x, axis, n, inverse, onesided)]


@converter("STFT")
def _stft(im: Importer, node: Node) -> list[Value | Array]:
    g, x = im.graph, im.input(node, 0)
    _signal(node, x, "signal")
    if x.rank != 3:
        raise node.error(
            f"signal has shape {list(x.shape)}; expected [batch, length, 1 or 2]"
        )
    step = _int_input(im, node, 1, "frame_step")
    if step is None or step < 1:
        raise node.error(f"frame_step is {step}; expected a positive integer")
    window = im.optional_input(node, 2)
    length = _int_input(im, node, 3, "frame_length")
    if window is not None and (window.rank != 1 or window.dtype != x.dtype):
        raise node.error(
            f"window is {window.dtype} of shape {list(window.shape)}; expected a "
            f"{x.dtype} vector"
        )
    if length is None:
        length = x.shape[1] if window is None else window.shape[0]
    if window is not None and window.shape[0] != length:
        raise node.error(
            f"window has {window.shape[0]} entries but frame_length is {length}"
        )
    if not 1 <= length <= x.shape[1]:
        raise node.error(
            f"frame_length is {length}; expected 1 to the signal length {x.shape[1]}"
        )
    frames = 1 + (x.shape[1] - length) // step
    starts = np.arange(frames)[:, None] * step
    y = g.gather(x, starts + np.arange(length)[None, :], axis=1)
    if window is not None:
        y = g.mul(y, g.reshape(window, [length, 1]))
    return [dft(g, y, 2, length, False, _flag(node, "onesided", 1))]


def mel_weight_matrix(
    num_mel_bins: int,
    dft_length: int,
    sample_rate: int,
    lower_edge_hertz: Any,
    upper_edge_hertz: Any,
) -> Array:
    """The float64 ``[dft_length // 2 + 1, num_mel_bins]`` matrix of triangular mel
    filters, computed as ONNX's reference does (``op_mel_weight_matrix.py``, with
    its NumPy dtypes: the hertz edges keep theirs)."""
    bins = np.arange(0, num_mel_bins + 2)
    low_mel = 2595 * np.log1p(lower_edge_hertz / 700) / np.log(10)
    high_mel = 2595 * np.log1p(upper_edge_hertz / 700) / np.log(10)
    mel_step = (high_mel - low_mel) / bins.shape[0]
    hertz = 700 * np.expm1((bins * mel_step + low_mel) / 2595 * np.log(10))
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(int)
    output = np.zeros((dft_length // 2 + 1, num_mel_bins))
    if edges.min() < 0 or edges.max() >= output.shape[0]:
        raise ValueError(
            f"the filters span bins {edges.min()} to {edges.max()}, outside the "
            f"{output.shape[0]} bins of dft_length={dft_length} (expected 0 <= "
            "lower_edge_hertz <= upper_edge_hertz < sample_rate / 2)"
        )
    for i in range(num_mel_bins):
        low, center, high = (int(e) for e in edges[i : i + 3])
        if center == low:
            output[center, i] = 1
        else:
            for j in range(low, center + 1):
                output[j, i] = (j - low) / (center - low)
        for j in range(center, high):
            output[j, i] = (high - j) / (high - center)
    return output


MEL_INPUTS = (
    "num_mel_bins",
    "dft_length",
    "sample_rate",
    "lower_edge_hertz",
    "upper_edge_hertz",
)
"""The inputs of ``MelWeightMatrix``, in order."""


@folder("MelWeightMatrix")
def _mel_weight_matrix_fold(node: Node, args: list[Array | None]) -> list[Array]:
    counts = []
    for k, name in enumerate(MEL_INPUTS[:3]):
        value = args[k] if k < len(args) else None
        if value is None or value.size != 1 or value.dtype.kind not in "iu":
            raise node.error(f"{name} must be one integer")
        counts.append(int(value.reshape(-1)[0]))
    bins, length, rate = counts
    if bins < 1 or length < 1 or rate < 1:
        raise node.error(
            f"num_mel_bins={bins}, dft_length={length} and sample_rate={rate} must "
            "be positive"
        )
    edges = []
    for k, name in ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
        value = args[k] if k < len(args) else None
        if value is None or value.size != 1 or value.dtype.kind != "f":
            raise node.error(f"{name} must be one float")
        edges.append(value.reshape(-1)[0])
    try:
        output = mel_weight_matrix(bins, length, rate, *edges)
    except ValueError as e:
        raise node.error(str(e)) from None
    dtype = helper.tensor_dtype_to_np_dtype(int(node.attr("output_datatype", 1)))
    return [output.astype(dtype)]


@converter("MelWeightMatrix")
def _mel_weight_matrix(im: Importer, node: Node) -> list[Value | Array]:
    """Its inputs must be known at import; the specialization binds scalar graph
    inputs (integers, and the small float edges: they fix the matrix)."""
    args: list[Array | None] = [
        im.const(node, name, what, shape=True) if name else None
        for name, what in zip(node.inputs, MEL_INPUTS, strict=False)
    ]
    return list(_mel_weight_matrix_fold(node, args))
