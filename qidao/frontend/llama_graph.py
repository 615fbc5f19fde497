"""One step of a llama decoder as a tg graph: ``T`` new tokens attend to a
key/value cache of static capacity ``C`` and to each other.

The same graph serves the prefill (``T`` = the longest prompt, a shorter one
padded and masked) and each decoded token (``T = 1``), so a generation compiles
two programs whatever its prompt and output lengths. Shapes are all static; what
changes from call to call is data the host passes:

- ``x`` ``[T, hidden]``: the new tokens' embeddings (the host looks the rows up
  in the token embedding, decoding just those rows of a quantized one);
- ``cos``, ``sin`` ``[T, head_dim / 2]``: the rotary angles of their positions;
- ``mask`` ``[1, 1, T, C + T]``: 0 where a new token may attend (a cache slot
  already filled, a new token not after it), a large negative number elsewhere;
- per layer ``l``: ``k_cache_l``, ``v_cache_l`` ``[kv_heads, C, head_dim]``,
  read only: the host writes each step's new keys and values (outputs
  ``k_new_l``, ``v_new_l``, ``[kv_heads, T, head_dim]``) into its slots, in place;
- the weights, also inputs, never copied into the program: a 2-D weight in
  ``Q8_0``/``Q4_0``/``Q4_K`` is its blocks' bytes (``tg.matmul_blockq``), in ``F32`` a
  float32 ``[N, K]`` matrix; the norms float32 vectors.

The query and key rows are in llama.cpp's order (GGUF's: each head's rotary pairs
adjacent, ``gguf_llama.permute_rope``), so the rotary embedding turns adjacent
pairs; the attention scores are the same as ``transformers``' (both sides of a
dot product permuted alike). The output is the logits ``[T, vocab]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from qidao.dialects.tg.block_quant import ENCODINGS
from qidao.frontend.builder import Graph, Value
from qidao.frontend.gguf_llama import LlamaHParams

MASKED = -1e30
"""The additive mask of a slot a token may not attend to."""

LAYER_WEIGHTS = (
    "attn_norm",
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_output",
    "ffn_norm",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
)
"""Each layer's weights, by their GGUF names (``blk.N.<name>.weight``)."""


@dataclass(frozen=True)
class WeightSpec:
    """A 2-D weight as the step graph takes it: ``encoding`` ``F32`` (a float32
    ``[rows, cols]`` input) or ``Q8_0``/``Q4_0``/``Q4_K`` (its bytes
    ``[rows, cols/block, B]``
    ``int8``)."""

    rows: int
    cols: int
    encoding: str


def weight_names(layers: int) -> list[str]:
    """Every weight input of the step graph, in order (GGUF names)."""
    names = [f"blk.{i}.{w}.weight" for i in range(layers) for w in LAYER_WEIGHTS]
    return [*names, "output_norm.weight", "output.weight"]


def step_graph(
    h: LlamaHParams,
    tokens: int,
    capacity: int,
    specs: Mapping[str, WeightSpec],
) -> Graph:
    """The step of ``tokens`` new tokens over a cache of ``capacity`` (module
    docstring); ``specs``: each 2-D weight's encoding (``weight_names``)."""
    g = Graph("main")
    t, hd, half = tokens, h.head_dim, h.head_dim // 2
    x = g.input("x", (t, h.hidden_size))
    cos = g.input("cos", (t, half))
    sin = g.input("sin", (t, half))
    mask = g.input("mask", (1, 1, t, capacity + t))
    caches = [
        (
            g.input(f"k_cache_{i}", (h.kv_heads, capacity, hd)),
            g.input(f"v_cache_{i}", (h.kv_heads, capacity, hd)),
        )
        for i in range(h.layers)
    ]
    weights: dict[str, Value] = {}
    for w in weight_names(h.layers):
        if w in specs:
            spec = specs[w]
            if spec.encoding == "F32":
                weights[w] = g.input(w, (spec.rows, spec.cols))
            else:
                enc = ENCODINGS[spec.encoding]
                shape = (spec.rows, spec.cols // enc.block, enc.block_bytes)
                weights[w] = g.input(w, shape, "int8")
        else:  # a norm
            weights[w] = g.input(w, (h.hidden_size,))

    def linear(v: Value, w: str) -> Value:
        spec = specs[w]
        if spec.encoding != "F32":
            return g.matmul_blockq(v, weights[w], spec.encoding)
        if t == 1:  # a row times W.T: each output a dot product along W's rows
            row = g.reshape(v, (1, spec.cols))
            return g.reshape(g.reduce_sum(weights[w] * row, -1), (1, spec.rows))
        return g.matmul(v, g.transpose(weights[w]))

    def rms_norm(v: Value, w: str) -> Value:
        mean = g.reduce_mean(v * v, -1, keepdims=True)
        return v * (1.0 / g.sqrt(mean + h.rms_norm_eps)) * weights[w]

    def rotate(v: Value, heads: int) -> Value:
        """``v`` ``[heads, t, hd]`` with each adjacent pair turned by its angle."""
        pairs = g.reshape(v, (heads, t, half, 2))
        even = g.reshape(
            g.slice(pairs, [0, 0, 0, 0], [None, None, None, 1]), (heads, t, half)
        )
        odd = g.reshape(
            g.slice(pairs, [0, 0, 0, 1], [None, None, None, 2]), (heads, t, half)
        )
        c, s = g.reshape(cos, (1, t, half)), g.reshape(sin, (1, t, half))
        first = g.reshape(even * c - odd * s, (heads, t, half, 1))
        second = g.reshape(odd * c + even * s, (heads, t, half, 1))
        return g.reshape(g.concat([first, second], axis=3), (heads, t, hd))

    def split_heads(v: Value, heads: int) -> Value:
        return g.transpose(g.reshape(v, (t, heads, hd)), (1, 0, 2))

    group = h.heads // h.kv_heads
    outputs: list[Value] = []
    for i, (k_cache, v_cache) in enumerate(caches):
        p = f"blk.{i}."
        a = rms_norm(x, p + "attn_norm.weight")
        q = rotate(split_heads(linear(a, p + "attn_q.weight"), h.heads), h.heads)
        k = rotate(split_heads(linear(a, p + "attn_k.weight"), h.kv_heads), h.kv_heads)
        v = split_heads(linear(a, p + "attn_v.weight"), h.kv_heads)
        outputs += [k, v]
        keys = g.concat([k_cache, k], axis=1)  # [kv, C + t, hd]
        values = g.concat([v_cache, v], axis=1)
        queries = g.reshape(q, (h.kv_heads, group * t, hd))  # heads of a group
        scores = g.matmul(queries, g.transpose(keys, (0, 2, 1))) * (1.0 / hd**0.5)
        scores = g.reshape(scores, (h.kv_heads, group, t, capacity + t)) + mask
        probs = g.reshape(g.softmax(scores, -1), (h.kv_heads, group * t, capacity + t))
        attended = g.reshape(g.matmul(probs, values), (h.heads, t, hd))
        merged = g.reshape(g.transpose(attended, (1, 0, 2)), (t, h.heads * hd))
        x = x + linear(merged, p + "attn_output.weight")
        f = rms_norm(x, p + "ffn_norm.weight")
        gate = linear(f, p + "ffn_gate.weight")
        up = linear(f, p + "ffn_up.weight")
        x = x + linear(gate * g.sigmoid(gate) * up, p + "ffn_down.weight")
    logits = linear(rms_norm(x, "output_norm.weight"), "output.weight")
    names = ["logits"]
    for i in range(h.layers):
        names += [f"k_new_{i}", f"v_new_{i}"]
    g.output(logits, *outputs, names=names)
    return g
