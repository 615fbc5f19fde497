"""``qidao.generate.LlamaGenerator``: a llama GGUF file (written as llama.cpp's
converter writes it, random weights) generates the tokens ``transformers``'
``generate`` does with the same weights, greedy, from two compiled programs and a
cache written in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF needs the gguf package")
torch = pytest.importorskip("torch", reason="the reference is transformers'")
transformers = pytest.importorskip("transformers", reason="LlamaForCausalLM")

from qidao.frontend.gguf_file import read_gguf  # noqa: E402
from qidao.frontend.gguf_llama import (  # noqa: E402
    llama_config,
    llama_hparams,
    llama_state_dict,
    write_llama_gguf,
)
from qidao.generate import GenerationError, LlamaGenerator, Sampling  # noqa: E402

TINY = transformers.LlamaConfig(
    vocab_size=96,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)
PROMPTS = ([1, 5, 9], [1, 40, 41, 42, 43, 44, 45], [3])
NEW = 16


@pytest.fixture(scope="module")
def model() -> Any:
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(TINY).eval()


def _greedy(net: Any, prompt: list[int], new: int) -> list[int]:
    """transformers' generate, greedy, not stopping at the end-of-text id."""
    net.generation_config.eos_token_id = None
    net.generation_config.pad_token_id = 0
    with torch.no_grad():
        out = net.generate(torch.tensor([prompt]), max_new_tokens=new, do_sample=False)
    return [int(t) for t in out[0, len(prompt) :]]


def _dequantized(path: Path) -> Any:
    """The transformers model of a GGUF file's weights, dequantized."""
    f = read_gguf(path)
    net = transformers.LlamaForCausalLM(llama_config(llama_hparams(f))).eval()
    state = {k: torch.from_numpy(v) for k, v in llama_state_dict(f).items()}
    net.load_state_dict(state)
    return net


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["F32", "Q8_0", "Q4_0"])
def test_the_tokens_are_transformers_and_two_programs_make_them(
    model: Any, tmp_path: Path, encoding: str
) -> None:
    path = write_llama_gguf(model, tmp_path / f"{encoding}.gguf", encoding)
    reference = model if encoding == "F32" else _dequantized(path)
    gen = LlamaGenerator(path, capacity=48, prompt_tokens=8)
    for prompt in PROMPTS:
        assert gen.generate(prompt, NEW) == _greedy(reference, prompt, NEW), prompt
    assert gen.compiles == 2
    if encoding != "F32":  # the blocks are the file's memory, not a float copy
        q = gen.weights[1]  # blk.0.attn_q.weight
        assert q.dtype == np.int8 and q.base is not None


@pytest.mark.slow
def test_a_k_quant_file_generates_from_its_blocks(tmp_path: Path) -> None:
    """Q4_K (rows of whole 256-element super-blocks: hidden 256): every matrix is
    multiplied on its blocks, and the tokens are those of the dequantized model."""
    torch.manual_seed(3)
    wide = transformers.LlamaConfig(
        vocab_size=96,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=1,  # one layer: the suite's time
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
    )
    net = transformers.LlamaForCausalLM(wide).eval()
    path = write_llama_gguf(net, tmp_path / "k.gguf", "Q4_K")
    gen = LlamaGenerator(path, capacity=32, prompt_tokens=8)
    prompt = PROMPTS[1]
    assert gen.generate(prompt, 8) == _greedy(_dequantized(path), prompt, 8)
    q = gen.weights[1]  # blk.0.attn_q.weight: the file's super-blocks, not floats
    assert q.dtype == np.int8 and q.shape == (256, 1, 144) and q.base is not None


@pytest.mark.slow
def test_the_cache_is_written_in_place_and_sampling_is_seeded(
    model: Any, tmp_path: Path
) -> None:
    gen = LlamaGenerator(write_llama_gguf(model, tmp_path / "m.gguf"), capacity=32)
    keys = gen.keys[0]
    greedy = gen.generate([1, 2, 3], 6)
    assert gen.keys[0] is keys
    assert np.any(keys[:, :8] != 0) and np.all(keys[:, 8:] == 0)  # 3 + 5 slots
    seeded = Sampling(sample=True, temperature=0.8, top_k=20, top_p=0.9)
    first = gen.generate([1, 2, 3], 6, seeded, seed=7)
    assert gen.generate([1, 2, 3], 6, seeded, seed=7) == first
    assert all(0 <= t < 96 for t in first)
    assert gen.generate([1, 2, 3], 6, Sampling(sample=True, top_k=1), seed=3) == greedy
    narrow = Sampling(sample=True, top_p=1e-9)  # only the likeliest token is kept
    assert gen.generate([1, 2, 3], 6, narrow, seed=5) == greedy
    # the programs let go of their IR once compiled; asked for, it is made again
    assert "tg.matmul" in gen.decode.ir("tg")

    with pytest.raises(GenerationError, match="a prompt of 0 tokens"):
        gen.generate([], 4)
    with pytest.raises(GenerationError, match="prompt of 33 tokens"):
        gen.generate([1] * 33, 4)
    with pytest.raises(GenerationError, match="exceed the cache's 32 slots"):
        gen.generate([1] * 30, 4)
    with pytest.raises(GenerationError, match=r"token ids \[96\] are outside"):
        gen.generate([1, 96], 4)
