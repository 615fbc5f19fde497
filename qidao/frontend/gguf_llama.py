"""The llama architecture in GGUF: its hyper-parameters, its tensor names, and the
way llama.cpp's converter writes a ``transformers`` ``LlamaForCausalLM``.

llama.cpp's ``convert_hf_to_gguf.py`` renames each weight
(``model.layers.3.self_attn.q_proj.weight`` -> ``blk.3.attn_q.weight``, table
:data:`NAMES`) and permutes the rows of the query and key projections within each
head, from the halves-rotated order of ``transformers``' rotary embedding to the
interleaved pairs that llama.cpp's rope kernel reads (:func:`permute_rope`).
:func:`write_llama_gguf` does the same, with the ``gguf`` package's writer and its
quantizers (``Q8_0``, ``Q4_0``; ``Q4_K`` with qidao's own fit,
:mod:`qidao.frontend.gguf_q4k`; the 1-D norm weights stay float32, as the
converter keeps them), so a test can make a GGUF file of random weights that
llama.cpp would read. :func:`llama_state_dict` goes back: every tensor
dequantized (a float reference, never what qidao's kernels read), renamed and
unpermuted, ready for ``LlamaForCausalLM.load_state_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from qidao.frontend.gguf_file import GgufError, GgufFile
from qidao.frontend.gguf_q4k import quantize_q4_k

NAMES: dict[str, str] = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
    "model.layers.{i}.input_layernorm.weight": "blk.{i}.attn_norm.weight",
    "model.layers.{i}.self_attn.q_proj.weight": "blk.{i}.attn_q.weight",
    "model.layers.{i}.self_attn.k_proj.weight": "blk.{i}.attn_k.weight",
    "model.layers.{i}.self_attn.v_proj.weight": "blk.{i}.attn_v.weight",
    "model.layers.{i}.self_attn.o_proj.weight": "blk.{i}.attn_output.weight",
    "model.layers.{i}.post_attention_layernorm.weight": "blk.{i}.ffn_norm.weight",
    "model.layers.{i}.mlp.gate_proj.weight": "blk.{i}.ffn_gate.weight",
    "model.layers.{i}.mlp.up_proj.weight": "blk.{i}.ffn_up.weight",
    "model.layers.{i}.mlp.down_proj.weight": "blk.{i}.ffn_down.weight",
}
"""``transformers``' name of each llama weight -> GGUF's (``{i}``: the layer)."""

WRITABLE = ("F32", "F16", "Q8_0", "Q4_0", "Q4_K")
"""The encodings :func:`write_llama_gguf` writes the 2-D weights in."""


@dataclass(frozen=True)
class LlamaHParams:
    """A llama model's hyper-parameters, read from ``llama.*`` keys."""

    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    intermediate_size: int
    context_length: int
    rms_norm_eps: float
    rope_theta: float

    @property
    def head_dim(self) -> int:
        """The width of one attention head."""
        return self.hidden_size // self.heads


def llama_hparams(f: GgufFile) -> LlamaHParams:
    """The hyper-parameters of a ``llama`` GGUF file (the vocabulary's size from
    ``llama.vocab_size``, else the token embedding's rows)."""
    if f.architecture != "llama":
        raise GgufError(
            f"{f.path.name}: architecture '{f.architecture}', expected 'llama'"
        )
    heads = int(f.hparam("attention.head_count"))
    vocab = f.metadata.get("llama.vocab_size")
    if vocab is None:
        vocab = f.tensor("token_embd.weight").shape[0]
    return LlamaHParams(
        vocab_size=int(vocab),
        hidden_size=int(f.hparam("embedding_length")),
        layers=int(f.hparam("block_count")),
        heads=heads,
        kv_heads=int(f.metadata.get("llama.attention.head_count_kv", heads)),
        intermediate_size=int(f.hparam("feed_forward_length")),
        context_length=int(f.hparam("context_length")),
        rms_norm_eps=float(f.hparam("attention.layer_norm_rms_epsilon")),
        rope_theta=float(f.metadata.get("llama.rope.freq_base", 10000.0)),
    )


def llama_config(h: LlamaHParams) -> Any:
    """A ``transformers.LlamaConfig`` of ``h`` (no bias, SiLU, untied head)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=h.vocab_size,
        hidden_size=h.hidden_size,
        intermediate_size=h.intermediate_size,
        num_hidden_layers=h.layers,
        num_attention_heads=h.heads,
        num_key_value_heads=h.kv_heads,
        max_position_embeddings=h.context_length,
        rms_norm_eps=h.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": h.rope_theta},
        tie_word_embeddings=False,
    )


def permute_rope(w: npt.NDArray[Any], heads: int) -> npt.NDArray[Any]:
    """The rows of a query or key projection (``heads`` heads) from
    ``transformers``' order (each head's first half, then its second) to
    llama.cpp's (the two halves interleaved in pairs), as its converter does."""
    rows = w.shape[0]
    return (
        w.reshape(heads, 2, rows // heads // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def unpermute_rope(w: npt.NDArray[Any], heads: int) -> npt.NDArray[Any]:
    """The inverse of :func:`permute_rope`."""
    rows = w.shape[0]
    return (
        w.reshape(heads, rows // heads // 2, 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def gguf_names(layers: int) -> dict[str, str]:
    """:data:`NAMES` for a model of ``layers`` layers, one entry per weight."""
    out: dict[str, str] = {}
    for hf, gg in NAMES.items():
        if "{i}" in hf:
            out |= {hf.format(i=i): gg.format(i=i) for i in range(layers)}
        else:
            out[hf] = gg
    return out


def llama_state_dict(f: GgufFile) -> dict[str, npt.NDArray[np.float32]]:
    """Every weight of a ``llama`` GGUF file, dequantized to float32, under its
    ``transformers`` name and in its order (query and key rows unpermuted); the
    head is the token embedding where the file has no ``output.weight`` (tied)."""
    h = llama_hparams(f)
    out: dict[str, npt.NDArray[np.float32]] = {}
    for hf, gg in gguf_names(h.layers).items():
        if gg == "output.weight" and gg not in f.tensors:
            gg = "token_embd.weight"
        w = f.tensor(gg).dequantize()
        if gg.endswith("attn_q.weight"):
            w = unpermute_rope(w, h.heads)
        elif gg.endswith("attn_k.weight"):
            w = unpermute_rope(w, h.kv_heads)
        out[hf] = w
    return out


def write_llama_gguf(
    model: Any,
    path: str | Path,
    encoding: str = "F32",
    tokens: list[str] | None = None,
) -> Path:
    """Write ``model`` (a ``transformers`` ``LlamaForCausalLM``) to ``path`` as
    llama.cpp's converter would: its config as ``llama.*`` keys, every 2-D weight
    renamed, the query and key rows permuted, encoded as ``encoding``
    (:data:`WRITABLE`; the norms float32, and a weight whose rows are not whole
    blocks float16, as the converter falls back), and a vocabulary (``tokens``, else
    ``<t0>``, ``<t1>``, ...; id 1 the BOS, 2 the EOS, as SentencePiece's llama)."""
    import gguf

    if encoding not in WRITABLE:
        raise ValueError(
            f"encoding '{encoding}': write_llama_gguf writes {', '.join(WRITABLE)}"
        )
    cfg = model.config
    rope = dict(getattr(cfg, "rope_parameters", None) or {})
    if rope.get("rope_type", "default") != "default":
        raise ValueError(
            f"rope_type '{rope['rope_type']}': write_llama_gguf writes the default "
            "rotary embedding only"
        )
    head_dim = getattr(cfg, "head_dim", None)
    if head_dim not in (None, cfg.hidden_size // cfg.num_attention_heads):
        raise ValueError(
            f"head_dim {head_dim} is not hidden_size / heads "
            f"({cfg.hidden_size} / {cfg.num_attention_heads})"
        )
    h = LlamaHParams(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden_size,
        layers=cfg.num_hidden_layers,
        heads=cfg.num_attention_heads,
        kv_heads=cfg.num_key_value_heads,
        intermediate_size=cfg.intermediate_size,
        context_length=cfg.max_position_embeddings,
        rms_norm_eps=cfg.rms_norm_eps,
        rope_theta=float(rope.get("rope_theta", 10000.0)),
    )
    if tokens is None:
        tokens = [f"<t{i}>" for i in range(h.vocab_size)]
    if len(tokens) != h.vocab_size:
        raise ValueError(f"{len(tokens)} tokens for a vocabulary of {h.vocab_size}")
    path = Path(path)
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(h.context_length)
    w.add_embedding_length(h.hidden_size)
    w.add_block_count(h.layers)
    w.add_feed_forward_length(h.intermediate_size)
    w.add_rope_dimension_count(h.head_dim)
    w.add_head_count(h.heads)
    w.add_head_count_kv(h.kv_heads)
    w.add_layer_norm_rms_eps(h.rms_norm_eps)
    w.add_rope_freq_base(h.rope_theta)
    w.add_vocab_size(h.vocab_size)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * h.vocab_size)
    w.add_token_types([1] * h.vocab_size)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    qtype = gguf.GGMLQuantizationType[encoding]
    for hf, gg in gguf_names(h.layers).items():
        if hf not in state:  # a tied head has no lm_head.weight of its own
            continue
        x = state[hf]
        if gg.endswith("attn_q.weight"):
            x = permute_rope(x, h.heads)
        elif gg.endswith("attn_k.weight"):
            x = permute_rope(x, h.kv_heads)
        if x.ndim == 1 or encoding == "F32":
            w.add_tensor(gg, np.ascontiguousarray(x, np.float32))
        elif encoding == "F16" or x.shape[-1] % gguf.GGML_QUANT_SIZES[qtype][0]:
            w.add_tensor(gg, x.astype(np.float16))  # rows not whole blocks: F16
        elif encoding == "Q4_K":  # gguf quantizes no k-quant: qidao's own fit
            w.add_tensor(gg, quantize_q4_k(x), raw_dtype=qtype)
        else:
            w.add_tensor(gg, gguf.quants.quantize(x, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
