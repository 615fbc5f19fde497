"""qidao's GGUF dequantizers against the ``gguf`` package's (llama.cpp's own):
bit for bit on real and random blocks, and the errors on what they do not read."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from qidao.dialects.tg.block_quant import (
    ENCODINGS,
    Encoding,
    by_ggml_type,
    dequantize,
    row_bytes,
)

gguf = pytest.importorskip("gguf", reason="the gguf package is the reference")

ROWS, N = 3, 512
QUANTS = ("Q8_0", "Q4_0", "Q4_K", "Q6_K")
# where each block's float16 scales lie (byte offsets)
SCALE_OFFSETS = {"Q8_0": (0,), "Q4_0": (0,), "Q4_K": (0, 2), "Q6_K": (208,)}


def _qtype(enc: Encoding) -> object:
    return gguf.GGMLQuantizationType[enc.name]


def _random_blocks(enc: Encoding, rng: np.random.Generator) -> np.ndarray:
    """Random bytes, each block's float16 scales overwritten by 0.01-0.1."""
    nb = N // enc.block
    raw = rng.integers(0, 256, (ROWS, nb, enc.block_bytes), dtype=np.uint8)
    for off in SCALE_OFFSETS[enc.name]:
        scale = rng.uniform(0.01, 0.1, (ROWS, nb)).astype("<f2")
        raw[..., off : off + 2] = scale[..., None].view(np.uint8)
    return raw.reshape(ROWS, nb * enc.block_bytes)


def test_table_matches_gguf() -> None:
    for name, enc in ENCODINGS.items():
        qtype = gguf.GGMLQuantizationType[name]
        assert enc.name == name
        assert enc.ggml_type == int(qtype)
        assert (enc.block, enc.block_bytes) == gguf.GGML_QUANT_SIZES[qtype]
        assert by_ggml_type(enc.ggml_type) is enc
        assert enc.layout


@pytest.mark.parametrize("name", QUANTS)
def test_random_blocks_match_gguf(name: str) -> None:
    enc = ENCODINGS[name]
    raw = _random_blocks(enc, np.random.default_rng(0))
    x = dequantize(raw, enc, N)
    assert x.dtype == np.float32 and x.shape == (ROWS, N)
    assert np.isfinite(x).all()
    np.testing.assert_array_equal(x, gguf.quants.dequantize(raw, _qtype(enc)))


@pytest.mark.parametrize("name", ["Q8_0", "Q4_0"])
def test_quantized_blocks_match_gguf(name: str) -> None:
    enc = ENCODINGS[name]
    data = np.random.default_rng(1).standard_normal((ROWS, N)).astype(np.float32)
    raw = gguf.quants.quantize(data, _qtype(enc))
    assert raw.shape == (ROWS, row_bytes(enc, N))
    x = dequantize(raw, enc, N)
    np.testing.assert_array_equal(x, gguf.quants.dequantize(raw, _qtype(enc)))
    # a 4- or 8-bit approximation of the data
    np.testing.assert_allclose(x, data, atol=0.5 if name == "Q4_0" else 0.05)


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("F32", np.float32), ("F16", np.float16), ("BF16", ml_dtypes.bfloat16)],
)
def test_floats(name: str, dtype: type) -> None:
    enc = ENCODINGS[name]
    rng = np.random.default_rng(2)
    raw = rng.integers(0, 256, (ROWS, row_bytes(enc, N)), dtype=np.uint8)
    x = dequantize(raw, enc, N)
    assert x.dtype == np.float32 and x.shape == (ROWS, N)
    np.testing.assert_array_equal(x, raw.view(dtype).astype(np.float32))


def test_leading_dims_and_views() -> None:
    enc = ENCODINGS["Q4_K"]
    raw = _random_blocks(enc, np.random.default_rng(3))
    stacked = np.stack([raw, raw[::-1]])  # [2, 3, row_bytes]
    x = dequantize(stacked, enc, N)
    assert x.shape == (2, ROWS, N)
    np.testing.assert_array_equal(x[1], dequantize(raw[::-1], enc, N))
    # a non-contiguous view of the rows
    np.testing.assert_array_equal(dequantize(raw[::2], enc, N), x[0, ::2])


def test_q8_0_exact_values_round_trip() -> None:
    enc = ENCODINGS["Q8_0"]
    # integers up to 127 times a power of two: scale 2^-3, q exact in int8
    q = np.random.default_rng(4).integers(-127, 128, (ROWS, N))
    q[:, :: enc.block] = 127  # every block's largest magnitude, so d = 2^-3
    data = (q * 0.125).astype(np.float32)
    raw = gguf.quants.quantize(data, _qtype(enc))
    np.testing.assert_array_equal(dequantize(raw, enc, N), data)


def test_row_bytes() -> None:
    assert row_bytes(ENCODINGS["Q4_K"], 512) == 288
    assert row_bytes(ENCODINGS["F16"], 7) == 14
    with pytest.raises(ValueError, match=r"row of 100 elements .* 32-element blocks"):
        row_bytes(ENCODINGS["Q8_0"], 100)


def test_wrong_last_dimension() -> None:
    enc = ENCODINGS["Q8_0"]
    raw = np.zeros((ROWS, 540), np.uint8)
    with pytest.raises(ValueError, match=r"544 bytes.*shape \[3, 540\]"):
        dequantize(raw, enc, N)


def test_n_not_a_multiple_of_the_block() -> None:
    with pytest.raises(ValueError, match=r"Q6_K row of 300 elements .* 256-element"):
        dequantize(np.zeros((1, 210), np.uint8), ENCODINGS["Q6_K"], 300)


def test_not_uint8() -> None:
    with pytest.raises(ValueError, match=r"uint8 array, got float32"):
        dequantize(np.zeros((1, 34), np.float32), ENCODINGS["Q8_0"], 32)  # type: ignore[arg-type]


def test_unknown_type_number() -> None:
    with pytest.raises(ValueError, match=r"GGML type 99 is not .*F32, F16, BF16"):
        by_ggml_type(99)


def test_unsupported_known_type() -> None:
    t = int(gguf.GGMLQuantizationType.IQ2_XS)
    with pytest.raises(ValueError, match=rf"GGML type {t} \(IQ2_XS\) .*Q4_K, Q6_K"):
        by_ggml_type(t)


# -- Q4_K written by qidao (gguf has no k-quant quantizer) -----------------------


@pytest.mark.parametrize("kind", ["normal", "positive", "negative", "zero", "tiny"])
def test_q4_k_quantization_is_read_by_gguf_within_half_a_step(kind: str) -> None:
    from qidao.frontend.gguf_q4k import quantize_q4_k

    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 512)).astype(np.float32)
    x = {
        "normal": x,
        "positive": np.abs(x),
        "negative": -np.abs(x),
        "zero": np.zeros_like(x),
        "tiny": x * 1e-4,
    }[kind]
    raw = quantize_q4_k(x)
    assert raw.shape == (3, 2 * 144) and raw.dtype == np.uint8
    y = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q4_K)
    np.testing.assert_array_equal(dequantize(raw, ENCODINGS["Q4_K"], 512), y)
    sub = x.reshape(3, 2, 8, 32).astype(np.float64)
    span = sub.max(axis=-1) - np.minimum(sub.min(axis=-1), 0)
    err = np.abs(y - x).reshape(sub.shape).max(axis=-1)
    # half a step; the steps are 6-bit multiples of one float16 d per 256
    widest = span.max(axis=-1, keepdims=True)
    assert np.all(err <= 0.5 * (span / 15 + 2 * widest / 15 / 63) + 1e-12)


def test_q4_k_quantization_refuses_what_it_cannot_encode() -> None:
    from qidao.frontend.gguf_q4k import quantize_q4_k

    with pytest.raises(ValueError, match="not a whole number of 256-element"):
        quantize_q4_k(np.zeros((2, 100), np.float32))
    with pytest.raises(ValueError, match="finite"):
        quantize_q4_k(np.full((1, 256), np.inf, np.float32))


# -- Q8_0 and Q4_0 written by qidao, as llama.cpp's reference quantizer ---------


@pytest.mark.parametrize("name", ["Q8_0", "Q4_0"])
@pytest.mark.parametrize("kind", ["normal", "zero", "halves", "one_sign"])
def test_quantize_is_llama_cpps_reference_bit_for_bit(name: str, kind: str) -> None:
    from qidao.dialects.tg.block_quant import quantize

    rng = np.random.default_rng(3)
    x = {
        "normal": rng.standard_normal((4, 256)),
        "zero": np.zeros((2, 64)),
        "halves": rng.integers(-8, 8, (3, 64)) * 0.5,  # ties in the rounding
        "one_sign": np.abs(rng.standard_normal((2, 96))),
    }[kind].astype(np.float32)
    got = quantize(x, ENCODINGS[name])
    want = gguf.quants.quantize(x, gguf.GGMLQuantizationType[name])
    np.testing.assert_array_equal(got, want)


def test_quantize_refuses_what_it_does_not_write() -> None:
    from qidao.dialects.tg.block_quant import quantize

    with pytest.raises(ValueError, match="quantize writes Q8_0, Q4_0, not Q6_K"):
        quantize(np.zeros((1, 256), np.float32), ENCODINGS["Q6_K"])
    with pytest.raises(ValueError, match="not a whole number of 32-element"):
        quantize(np.zeros((1, 40), np.float32), ENCODINGS["Q8_0"])
