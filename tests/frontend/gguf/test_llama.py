"""GGUF files of a llama model, written as llama.cpp's converter writes them (the
``gguf`` package's writer and quantizers) and read back: the hyper-parameters,
the vocabulary, the tensors encoded in the file's memory, and the float weights
against the ``transformers`` model they came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF needs the gguf package")
torch = pytest.importorskip("torch", reason="the llama model is transformers'")
transformers = pytest.importorskip("transformers", reason="LlamaForCausalLM")

from qidao.frontend.gguf_file import GgufError, read_gguf  # noqa: E402
from qidao.frontend.gguf_llama import (  # noqa: E402
    llama_config,
    llama_hparams,
    llama_state_dict,
    permute_rope,
    unpermute_rope,
    write_llama_gguf,
)

TINY = {
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0},
}


@pytest.fixture(scope="module")
def model() -> Any:
    torch.manual_seed(0)
    net = transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY))
    return net.eval()


def _mapped(a: np.ndarray) -> bool:
    """Whether ``a`` is a view, at some remove, of a memory-mapped file."""
    base: Any = a
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    return base is not None


def _weights(model: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def test_float32_round_trips_exactly_and_runs_the_same(
    model: Any, tmp_path: Path
) -> None:
    path = write_llama_gguf(model, tmp_path / "tiny-f32.gguf", "F32")
    f = read_gguf(path)
    h = llama_hparams(f)
    assert (h.layers, h.heads, h.kv_heads, h.head_dim) == (2, 4, 2, 16)
    assert (h.vocab_size, h.intermediate_size, h.context_length) == (96, 128, 256)
    assert (h.rms_norm_eps, h.rope_theta) == (pytest.approx(1e-5), 5000.0)
    state = llama_state_dict(f)
    want = _weights(model)
    assert sorted(state) == sorted(want)
    for name, w in want.items():
        np.testing.assert_array_equal(state[name], w, err_msg=name)
    # the q/k rows in the file are llama.cpp's order, not transformers'
    q = f.tensor("blk.0.attn_q.weight").dequantize()
    assert not np.array_equal(q, want["model.layers.0.self_attn.q_proj.weight"])
    again = transformers.LlamaForCausalLM(llama_config(h)).eval()
    again.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    ids = torch.tensor([[1, 5, 9, 33, 70]])
    with torch.no_grad():
        np.testing.assert_array_equal(
            again(ids).logits.numpy(), model(ids).logits.numpy()
        )


def test_the_vocabulary_and_metadata_are_read(model: Any, tmp_path: Path) -> None:
    tokens = [f"tok{i}" for i in range(96)]
    f = read_gguf(write_llama_gguf(model, tmp_path / "v.gguf", "F16", tokens))
    assert f.architecture == "llama" and f.version == 3
    assert f.tokenizer is not None
    assert f.tokenizer.tokens == tuple(tokens) and f.tokenizer.model == "llama"
    assert (f.tokenizer.bos_id, f.tokenizer.eos_id) == (1, 2)
    assert f.metadata["llama.attention.head_count_kv"] == 2
    assert f.file_bytes == (tmp_path / "v.gguf").stat().st_size


@pytest.mark.parametrize(
    ("encoding", "block", "block_bytes", "levels"),
    [("F16", 1, 2, None), ("Q8_0", 32, 34, 127), ("Q4_0", 32, 18, 8)],
)
def test_weights_stay_encoded_in_the_files_memory(
    model: Any,
    tmp_path: Path,
    encoding: str,
    block: int,
    block_bytes: int,
    levels: int | None,
) -> None:
    f = read_gguf(write_llama_gguf(model, tmp_path / f"{encoding}.gguf", encoding))
    want = _weights(model)
    down = f.tensor("blk.1.ffn_down.weight")  # [64, 128]
    assert down.shape == (64, 128) and down.encoding.name == encoding
    assert down.raw.shape == (64, 128 // block * block_bytes)
    assert _mapped(down.raw)  # a view of the file's memory map, no copy
    assert f.tensor("blk.1.ffn_norm.weight").encoding.name == "F32"
    encoded = sum(t.nbytes for t in f.tensors.values())
    assert encoded < f.file_bytes < encoded + 64 * 1024  # the tensors are the file
    state = llama_state_dict(f)
    for name, w in want.items():
        got = state[name]
        if w.ndim == 1:
            np.testing.assert_array_equal(got, w, err_msg=name)
        elif levels is None:  # float16
            np.testing.assert_array_equal(got, w.astype(np.float16), err_msg=name)
        else:  # a block's step d is its largest magnitude over `levels`
            blocks = np.abs(w).reshape(w.shape[0], -1, block).max(axis=-1)
            step = np.repeat(blocks / levels, block, axis=-1)
            # half a step, and the float16 rounding of d; Q4_0's -8..7 clips
            # the largest value of one sign: a whole step
            bound = step * (0.6 if encoding == "Q8_0" else 1.1)
            assert np.all(np.abs(got - w) <= bound), name
            assert np.abs(got - w).max() > 0, name  # it is quantized


def test_the_rope_permutation_turns_halves_into_pairs() -> None:
    """transformers rotates (x[i], x[i + d/2]); llama.cpp (x[2i], x[2i + 1]): a
    query permuted then rotated in pairs is the query rotated in halves, permuted."""
    rng = np.random.default_rng(1)
    heads, d, pos = 3, 8, 5
    x = rng.standard_normal((heads * d, 1))
    theta = pos * 10000.0 ** (-np.arange(d // 2) * 2 / d)
    cos, sin = np.cos(theta), np.sin(theta)
    halves = x.reshape(heads, d)
    a, b = halves[:, : d // 2], halves[:, d // 2 :]
    rotated_halves = np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=1)
    pairs = permute_rope(x, heads).reshape(heads, d // 2, 2)
    u, v = pairs[..., 0], pairs[..., 1]
    rotated_pairs = np.stack([u * cos - v * sin, v * cos + u * sin], axis=-1)
    np.testing.assert_allclose(
        rotated_pairs.reshape(-1, 1),
        permute_rope(rotated_halves.reshape(-1, 1), heads),
        rtol=1e-12,
    )
    w = rng.standard_normal((heads * d, 7))
    np.testing.assert_array_equal(unpermute_rope(permute_rope(w, heads), heads), w)


# -- what qidao cannot read is named ---------------------------------------------


def test_a_file_that_is_not_gguf_or_is_cut_short_is_refused(
    model: Any, tmp_path: Path
) -> None:
    with pytest.raises(GgufError, match="no such file"):
        read_gguf(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(GgufError, match=r"junk.gguf: not a readable GGUF file"):
        read_gguf(junk)
    whole = write_llama_gguf(model, tmp_path / "whole.gguf", "Q8_0").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) - 1000])
    with pytest.raises(GgufError, match=r"cut.gguf: "):
        read_gguf(cut)


def _minimal(path: Path, arch: str = "llama", **tensors: Any) -> Path:
    w = gguf.GGUFWriter(path, arch)
    w.add_embedding_length(64)
    for name, (data, kind) in tensors.items():
        w.add_tensor(name, data, raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_missing_key_or_another_architecture_is_named(tmp_path: Path) -> None:
    f = read_gguf(_minimal(tmp_path / "m.gguf"))
    with pytest.raises(GgufError, match=r"m.gguf: the llama model has no 'llama\."):
        llama_hparams(f)
    with pytest.raises(GgufError, match=r"no tensor 'output.weight'"):
        f.tensor("output.weight")
    other = read_gguf(_minimal(tmp_path / "g.gguf", "gpt2"))
    with pytest.raises(GgufError, match=r"architecture 'gpt2', expected 'llama'"):
        llama_hparams(other)


def test_an_encoding_without_a_kernel_is_named(tmp_path: Path) -> None:
    kind = gguf.GGMLQuantizationType.IQ2_XS
    block, size = gguf.GGML_QUANT_SIZES[kind]
    raw = np.zeros((2, 256 // block * size), np.uint8)
    path = _minimal(tmp_path / "iq.gguf", w=(raw, kind))
    with pytest.raises(GgufError, match=r"iq.gguf: tensor 'w': .*IQ2_XS"):
        read_gguf(path)


def test_rows_that_are_not_whole_blocks_fall_back_to_float16(tmp_path: Path) -> None:
    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(**{**TINY, "intermediate_size": 80})
    net = transformers.LlamaForCausalLM(cfg).eval()
    f = read_gguf(write_llama_gguf(net, tmp_path / "r.gguf", "Q4_0"))
    assert f.tensor("blk.0.ffn_down.weight").encoding.name == "F16"  # 80 columns
    assert f.tensor("blk.0.ffn_up.weight").encoding.name == "Q4_0"  # 64 columns
    down = net.state_dict()["model.layers.0.mlp.down_proj.weight"].numpy()
    np.testing.assert_array_equal(
        llama_state_dict(f)["model.layers.0.mlp.down_proj.weight"],
        down.astype(np.float16),
    )


def test_write_refuses_an_encoding_it_cannot_write(model: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="encoding 'Q6_K'"):
        write_llama_gguf(model, tmp_path / "k.gguf", "Q6_K")


def test_a_k_quant_file_reads_back_within_half_a_step(tmp_path: Path) -> None:
    torch.manual_seed(2)
    wide = {**TINY, "hidden_size": 256, "intermediate_size": 512}
    net = transformers.LlamaForCausalLM(transformers.LlamaConfig(**wide)).eval()
    f = read_gguf(write_llama_gguf(net, tmp_path / "k.gguf", "Q4_K"))
    up = f.tensor("blk.0.ffn_up.weight")
    assert (up.encoding.name, up.raw.shape) == ("Q4_K", (512, 144))
    state = llama_state_dict(f)
    for name, w in _weights(net).items():
        if w.ndim == 1:
            continue
        sub = w.reshape(w.shape[0], -1, 8, 32).astype(np.float64)  # super, sub
        offset = -np.minimum(sub.min(axis=-1), 0)
        span = sub.max(axis=-1) + offset
        dmin = offset.max(axis=-1, keepdims=True) / 63 * 1.001
        d = (span.max(axis=-1, keepdims=True) + dmin) / 15 / 63 * 1.001
        bound = 0.5 * ((span + dmin) / 15 + d) + 1e-7  # half the widest step
        err = np.abs(state[name] - w).reshape(sub.shape).max(axis=-1)
        assert np.all(err <= bound), name
        assert err.max() > 0, name


# -- qidao gguf FILE -------------------------------------------------------------


def test_the_command_says_what_the_file_holds(
    model: Any, tmp_path: Path, capsys: Any
) -> None:
    from qidao.tools.cli import main

    path = write_llama_gguf(model, tmp_path / "q.gguf", "Q8_0")
    assert main(["gguf", str(path), "--tensors"]) == 0
    out = capsys.readouterr().out
    assert "architecture: llama" in out
    assert "llama:        2 layers, hidden 64, 4 heads (2 key/value), head 16" in out
    assert "tokenizer:    llama, 96 tokens, bos 1, eos 2" in out
    f = read_gguf(path)
    q8 = [t for t in f.tensors.values() if t.encoding.name == "Q8_0"]
    assert len(q8) == 2 + 2 * 7  # embedding, head, 7 per layer; norms F32
    assert f"  Q8_0     {len(q8)} tensor(s)" in out
    assert "blk.0.attn_k.weight" in out and "32x64" in out
    assert main(["gguf", str(tmp_path / "none.gguf")]) == 2
    assert "qidao gguf: error: " in capsys.readouterr().err
