"""The GGUF (llama.cpp) tensor encodings qidao reads, and their reference
dequantizers.

A GGUF tensor is stored row by row; each row (the last, fastest axis) is cut into
blocks of ``block`` elements, each block encoded in ``block_bytes`` bytes: plain
floats (one element a block), or small integers with the float16 scales that turn
them back into floats. qidao keeps the blocks as bytes in memory (a tensor is a
``uint8`` array ``[..., row_bytes]``); the compiler's kernels dequantize them in
registers. :func:`dequantize` here is the NumPy reference those kernels are tested
against, and the float fallback where a float copy is wanted.

=====  =========  =====  ===========  ==============================================
name   ggml_type  block  block_bytes  an element
=====  =========  =====  ===========  ==============================================
F32    0          1      4            float32
F16    1          1      2            float16
BF16   30         1      2            bfloat16
Q8_0   8          32     34           ``d * q``, q int8
Q4_0   2          32     18           ``d * (q - 8)``, q 4 bits
Q4_K   12         256    144          ``d * sc * q - dmin * m``, q 4 bits, sc, m 6
Q6_K   14         256    210          ``d * scale * (q - 32)``, q 6 bits
=====  =========  =====  ===========  ==============================================

All multi-byte fields are little-endian, as in the file. The layouts are
llama.cpp's (``ggml-common.h``, ``ggml-quants.c``); each :class:`Encoding`'s
``layout`` says its block in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Encoding:
    """One GGUF tensor encoding: GGML's ``name`` and type number ``ggml_type``,
    ``block`` elements encoded in ``block_bytes`` bytes; ``layout`` says the
    block's bytes in words."""

    name: str
    ggml_type: int
    block: int
    block_bytes: int
    layout: str = field(repr=False)


ENCODINGS: dict[str, Encoding] = {
    e.name: e
    for e in (
        Encoding("F32", 0, 1, 4, "one little-endian float32 per element."),
        Encoding("F16", 1, 1, 2, "one little-endian float16 per element."),
        Encoding(
            "BF16",
            30,
            1,
            2,
            "one little-endian bfloat16 per element (the high 16 bits of a float32).",
        ),
        Encoding(
            "Q8_0",
            8,
            32,
            34,
            "a float16 scale d, then 32 int8 q, one per element; x = d * q.",
        ),
        Encoding(
            "Q4_0",
            2,
            32,
            18,
            "a float16 scale d, then 16 bytes of 4-bit q: element i < 16 is the low "
            "nibble of byte i, element 16 + i its high nibble; x = d * (q - 8).",
        ),
        Encoding(
            "Q4_K",
            12,
            256,
            144,
            "a super-block of 256 elements = 8 sub-blocks of 32: float16 d, float16 "
            "dmin, 12 bytes packing a 6-bit scale sc and a 6-bit min m per sub-block "
            "(sub-blocks 0-3: the low 6 bits of bytes j and 4 + j; sub-blocks 4-7: "
            "the low and high nibbles of byte 4 + j, topped with the high 2 bits of "
            "bytes j - 4 and j), then 128 bytes of 4-bit q: each 32 bytes hold two "
            "sub-blocks, the first in the low nibbles, the second in the high "
            "nibbles; x = d * sc * q - dmin * m.",
        ),
        Encoding(
            "Q6_K",
            14,
            256,
            210,
            "a super-block of 256 elements = 16 sub-blocks of 16: 128 bytes of the "
            "low 4 bits of q, 64 bytes of its high 2 bits, 16 int8 scales (one per "
            "sub-block), a float16 d. Each half of 128 elements takes 64 low bytes "
            "and 32 high bytes; within a half, element 32 * k + l (k < 4, l < 32) "
            "has its low bits in nibble k // 2 of low byte l + 32 * (k % 2) and its "
            "high bits at bit 2 * k of high byte l; x = d * scale * (q - 32).",
        ),
    )
}

# Each quantized block as a NumPy structured type, field for field llama.cpp's
# C struct (block_q8_0, block_q4_0, block_q4_K, block_q6_K).
_BLOCKS: dict[str, np.dtype[np.void]] = {
    "Q8_0": np.dtype([("d", "<f2"), ("qs", "i1", 32)]),
    "Q4_0": np.dtype([("d", "<f2"), ("qs", "u1", 16)]),
    "Q4_K": np.dtype(
        [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)]
    ),
    "Q6_K": np.dtype(
        [("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")]
    ),
}
_FLOATS: dict[str, str] = {"F32": "<f4", "F16": "<f2"}


def by_ggml_type(t: int) -> Encoding:
    """The encoding with GGML type number ``t``; a ValueError naming it (and its
    GGML name, where the ``gguf`` package knows it) where qidao does not read it."""
    for e in ENCODINGS.values():
        if e.ggml_type == t:
            return e
    name = ""
    try:
        import gguf

        name = f" ({gguf.GGMLQuantizationType(t).name})"
    except (ImportError, ValueError):
        pass
    raise ValueError(
        f"GGML type {t}{name} is not an encoding qidao reads "
        f"(it reads {', '.join(ENCODINGS)})"
    )


def row_bytes(enc: Encoding, n: int) -> int:
    """The bytes of a row of ``n`` elements in ``enc``; a ValueError where ``n`` is
    not a whole number of blocks."""
    if n < 0 or n % enc.block:
        raise ValueError(
            f"a {enc.name} row of {n} elements is not a whole number of "
            f"{enc.block}-element blocks"
        )
    return n // enc.block * enc.block_bytes


def dequantize(
    raw: npt.NDArray[np.uint8], enc: Encoding, n: int
) -> npt.NDArray[np.float32]:
    """Rows of ``n`` elements encoded in ``enc`` (``raw``: ``uint8``
    ``[..., row_bytes(enc, n)]``) as float32 ``[..., n]``: the reference."""
    if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8:
        got = raw.dtype if isinstance(raw, np.ndarray) else type(raw).__name__
        raise ValueError(f"{enc.name} data must be a uint8 array, got {got}")
    width = row_bytes(enc, n)
    if raw.ndim == 0 or raw.shape[-1] != width:
        got_shape = list(raw.shape)
        raise ValueError(
            f"{enc.name} rows of {n} elements are {width} bytes (the last "
            f"dimension), got an array of shape {got_shape}"
        )
    lead = raw.shape[:-1]
    raw = np.ascontiguousarray(raw)
    if enc.name in _FLOATS:
        return raw.view(_FLOATS[enc.name]).astype(np.float32)
    if enc.name == "BF16":
        # a bfloat16 is the high half of a float32: shift its bits up
        bits = raw.view("<u2").astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32)
    # [..., blocks] of the encoding's C struct
    as_bytes = raw.reshape(*lead, n // enc.block, enc.block_bytes)
    blocks = as_bytes.view(_BLOCKS[enc.name])[..., 0]
    x = _DEQUANTIZE[enc.name](blocks)  # [..., blocks, block]
    return x.reshape(*lead, n)


# Each dequantizer takes [..., blocks] structured blocks to float32
# [..., blocks, block]. The float32 operations are llama.cpp's, in its order
# (dequantize_row_* in ggml-quants.c), so the results match it bit for bit.


def _f32(a: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
    return a.astype(np.float32)


def _q8_0(b: npt.NDArray[np.void]) -> npt.NDArray[np.float32]:
    d = _f32(b["d"])[..., None]
    return _f32(b["qs"]) * d


def _q4_0(b: npt.NDArray[np.void]) -> npt.NDArray[np.float32]:
    d = _f32(b["d"])[..., None]
    qs = b["qs"]  # [..., 16]
    # elements 0-15: the low nibbles; 16-31: the high nibbles
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8
    return d * _f32(q)


def _q4_k_scales(
    s: npt.NDArray[np.uint8],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """The 8 sub-blocks' 6-bit scales and mins from Q4_K's 12 packed bytes
    (llama.cpp's get_scale_min_k4): ``[..., 12]`` to two ``[..., 8]``."""
    lo, mid, hi = s[..., 0:4], s[..., 4:8], s[..., 8:12]
    # sub-blocks 0-3: the low 6 bits of bytes 0-3 (scales) and 4-7 (mins)
    # sub-blocks 4-7: the nibbles of bytes 8-11 as low bits, the high 2 bits of
    # bytes 0-3 (scales) and 4-7 (mins) as bits 4-5
    sc = np.concatenate([lo & 0x3F, (hi & 0x0F) | ((lo >> 6) << 4)], axis=-1)
    m = np.concatenate([mid & 0x3F, (hi >> 4) | ((mid >> 6) << 4)], axis=-1)
    return sc, m


def _q4_k(b: npt.NDArray[np.void]) -> npt.NDArray[np.float32]:
    sc, m = _q4_k_scales(b["scales"])
    d = (_f32(b["d"])[..., None] * _f32(sc))[..., None]  # [..., 8, 1]
    dm = (_f32(b["dmin"])[..., None] * _f32(m))[..., None]
    qs = b["qs"].reshape(*b.shape, 4, 32)
    # each 32 bytes: a sub-block in the low nibbles, the next in the high ones
    q = np.stack([qs & 0x0F, qs >> 4], axis=-2).reshape(*b.shape, 8, 32)
    return (d * _f32(q) - dm).reshape(*b.shape, 256)


def _q6_k(b: npt.NDArray[np.void]) -> npt.NDArray[np.float32]:
    ql = b["ql"].reshape(*b.shape, 2, 2, 32)  # [half, low byte 32 * j + l]
    qh = b["qh"].reshape(*b.shape, 2, 1, 32)  # [half, high byte l]
    # within a half, element 32 * k + l: k = 0, 1 the low nibbles of low bytes
    # l, 32 + l; k = 2, 3 their high nibbles; bits 2k, 2k + 1 of high byte l on top
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=-2)  # [..., 2, 4, 32]
    high = (qh >> np.array([0, 2, 4, 6], np.uint8)[:, None]) & 0x03
    q = ((low | (high << 4)).astype(np.int8) - 32).reshape(*b.shape, 16, 16)
    d = (_f32(b["d"])[..., None] * _f32(b["scales"]))[..., None]  # [..., 16, 1]
    return (d * _f32(q)).reshape(*b.shape, 256)


_DEQUANTIZE = {"Q8_0": _q8_0, "Q4_0": _q4_0, "Q4_K": _q4_k, "Q6_K": _q6_k}


QUANTIZABLE = ("Q8_0", "Q4_0")
"""The encodings :func:`quantize` writes (llama.cpp's reference rounding)."""


def quantize(x: npt.NDArray[np.floating], enc: Encoding) -> npt.NDArray[np.uint8]:
    """Float rows ``x`` (``[..., n]``, ``n`` whole blocks) encoded in ``enc``
    (``Q8_0`` or ``Q4_0``) as llama.cpp's reference quantizer does, bit for bit
    (``quantize_row_q8_0_ref``: ``d = max|x| / 127``, ``q = round(x / d)``, halves
    away from zero; ``quantize_row_q4_0_ref``: ``d = m / -8`` for ``m`` the value
    of largest magnitude, ``q = min(15, trunc(x / d + 8.5))``): ``uint8``
    ``[..., row_bytes(enc, n)]``."""
    if enc.name not in QUANTIZABLE:
        raise ValueError(f"quantize writes {', '.join(QUANTIZABLE)}, not {enc.name}")
    x = np.asarray(x, np.float32)
    n = x.shape[-1]
    width = row_bytes(enc, n)
    blocks = x.reshape(-1, enc.block)
    if enc.name == "Q8_0":
        d = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
        with np.errstate(divide="ignore"):
            inverse = np.where(d == 0, np.float32(0), np.float32(1) / d)
        scaled = blocks * inverse
        magnitude = np.abs(scaled)  # roundf: halves away from zero
        whole = np.floor(magnitude)
        q = (np.sign(scaled) * (whole + np.floor(2 * (magnitude - whole)))).astype(
            np.int8
        )
        body = q.view(np.uint8)
    else:
        largest = np.take_along_axis(
            blocks, np.abs(blocks).argmax(axis=-1)[:, None], axis=-1
        )
        d = largest / np.float32(-8)
        with np.errstate(divide="ignore"):
            inverse = np.where(d == 0, np.float32(0), np.float32(1) / d)
        q = np.trunc(blocks * inverse + np.float32(8.5)).astype(np.uint8).clip(0, 15)
        body = q[:, :16] | (q[:, 16:] << np.uint8(4))  # low nibbles, then high
    scale = d.astype("<f2").view(np.uint8)
    out = np.concatenate([scale, body], axis=-1)
    return out.reshape(*x.shape[:-1], width)
