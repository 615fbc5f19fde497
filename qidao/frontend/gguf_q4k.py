"""Float32 rows encoded as GGUF's ``Q4_K`` (the k-quant of ``Q4_K_M`` files), for
writing test files: the ``gguf`` package quantizes ``Q8_0`` and ``Q4_0`` but no
k-quant.

A ``Q4_K`` super-block of 256 elements holds 8 sub-blocks of 32, each element
``d * sc_j * q - dmin * m_j`` with ``q`` in 0..15 and the sub-block's scale
``sc_j`` and min ``m_j`` in 0..63 (layout: :mod:`qidao.dialects.tg.block_quant`).
This is a plain min/max fit, not llama.cpp's searched one: per sub-block the
offset ``-min(x, 0)`` and step ``(max - min) / 15``; ``d`` and ``dmin`` rounded up
to float16 so that the largest step and offset still fit 6 bits; each ``m_j``
rounded up (the offset covers the sub-block's most negative value) and each
``sc_j`` rounded up (its range still covers the largest value), so no element is
clipped and each is within half a step of its value (plus float32 rounding).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from qidao.dialects.tg.block_quant import ENCODINGS, row_bytes


def quantize_q4_k(x: npt.NDArray[np.floating]) -> npt.NDArray[np.uint8]:
    """Rows ``x`` (``[..., n]``, ``n`` a multiple of 256) as ``Q4_K`` bytes
    ``[..., n / 256 * 144]``."""
    x = np.asarray(x, np.float32)
    n = x.shape[-1]
    width = row_bytes(ENCODINGS["Q4_K"], n)  # a ValueError unless whole blocks
    if not np.all(np.isfinite(x)):
        raise ValueError("Q4_K takes finite values only")
    lead = x.shape[:-1]
    sub = x.reshape(-1, 8, 32).astype(np.float64)  # [blocks, sub-block, element]
    low = np.minimum(sub.min(axis=-1), 0.0)
    offset = -low  # >= 0: dmin * m must reach it
    dmin = _f16_up(offset.max(axis=-1) / 63)
    m = _ceil_div(offset, dmin[:, None])
    # the step must cover max + dmin * m over 15 levels
    need = (sub.max(axis=-1) + dmin[:, None] * m) / 15
    d = _f16_up(np.maximum(need, 0).max(axis=-1) / 63)
    sc = _ceil_div(need, d[:, None])
    step = d[:, None] * sc
    level = (sub + (dmin[:, None] * m)[..., None]) / np.where(step > 0, step, 1)[
        ..., None
    ]
    q = np.clip(np.rint(level), 0, 15).astype(np.uint8)  # [blocks, 8, 32]
    out = np.zeros((sub.shape[0], 144), np.uint8)
    out[:, 0:2] = d.astype("<f2").reshape(-1, 1).view(np.uint8)
    out[:, 2:4] = dmin.astype("<f2").reshape(-1, 1).view(np.uint8)
    out[:, 4:16] = _pack_scales(sc.astype(np.uint8), m.astype(np.uint8))
    pairs = q.reshape(-1, 4, 2, 32)  # two sub-blocks per 32 bytes: low, high nibble
    out[:, 16:] = (pairs[:, :, 0] | (pairs[:, :, 1] << 4)).reshape(-1, 128)
    return out.reshape(*lead, width)


def _f16_up(v: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``v`` as float16 values no smaller than ``v``."""
    h = v.astype(np.float16)
    low = h.astype(np.float64) < v
    h[low] = np.nextafter(h[low], np.float16(np.inf))
    return h.astype(np.float64)


def _ceil_div(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``ceil(a / b)`` in 0..63, 0 where ``b`` is 0."""
    safe = np.where(b > 0, b, 1.0)
    return np.clip(np.ceil(a / safe - 1e-9), 0, 63) * (b > 0)


def _pack_scales(
    sc: npt.NDArray[np.uint8], m: npt.NDArray[np.uint8]
) -> npt.NDArray[np.uint8]:
    """The 8 sub-blocks' 6-bit scales and mins as Q4_K's 12 bytes (the inverse of
    llama.cpp's get_scale_min_k4)."""
    out = np.zeros((sc.shape[0], 12), np.uint8)
    out[:, 0:4] = (sc[:, :4] & 0x3F) | ((sc[:, 4:] >> 4) << 6)
    out[:, 4:8] = (m[:, :4] & 0x3F) | ((m[:, 4:] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:] & 0x0F) | ((m[:, 4:] & 0x0F) << 4)
    return out
