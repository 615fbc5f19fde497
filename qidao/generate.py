"""Text generation from a llama GGUF file: two compiled programs, a key/value
cache held between calls, greedy or sampled tokens.

    gen = qidao.generate.LlamaGenerator("model.gguf", capacity=512, prompt_tokens=64)
    tokens = gen.generate([1, 15043, 29892], max_new_tokens=32)
    gen.compiles   # 2: the prefill and the decode step, whatever the lengths

The prefill program runs a whole prompt (padded to ``prompt_tokens`` and masked),
the decode program one token; both are ``qidao.frontend.llama_graph``'s step over
a cache of ``capacity`` slots. The cache is this object's NumPy arrays, one key
and one value array a layer; each call reads them whole and returns the new
tokens' keys and values, which are written into their slots in place (no copy of
the cache per token). The weights are the file's memory map, passed to both
programs as inputs: ``Q8_0``/``Q4_0``/``Q4_K`` matrices as their blocks
(decoded in registers, never expanded), ``F32`` as they are; any other encoding
(``F16``, ``BF16``, ``Q6_K``) is decoded to float32 once at load, a copy the size
of that matrix in float32. The token embedding's rows are looked up, and decoded,
one prompt or token at a time. Once compiled, the two programs let go of their
IR (``CompiledProgram.release_ir``: ``ir()`` compiles again when asked) and the
memory the compiles freed goes back to the system, so that what the generator
holds is the file's pages, the code and the cache: a ``Q8_0`` file of 491 MiB
(``qidao bench generate llama-2048``) peaks at 1.14x its size, where PyTorch
holds its float32 decoding (8.9x).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from qidao.compiler.compiled import CompiledProgram
from qidao.errors import QidaoError
from qidao.frontend.gguf_file import GgufFile, GgufTensor, read_gguf
from qidao.frontend.gguf_llama import LlamaHParams, llama_hparams
from qidao.frontend.llama_graph import MASKED, WeightSpec, step_graph, weight_names
from qidao.runtime.cpu import return_freed_memory

KERNEL_ENCODINGS = ("Q8_0", "Q4_0", "Q4_K")
"""Matrices multiplied on their blocks; ``F32`` as floats; the rest decoded."""


class GenerationError(QidaoError, ValueError):
    """A prompt or a length the generator cannot take."""


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen: greedy (``sample=False``), or drawn from the
    softmax of the logits over ``temperature``, keeping the ``top_k`` most likely
    and the smallest set whose probability reaches ``top_p``."""

    sample: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None


class LlamaGenerator:
    """A llama GGUF file compiled for generation (module docstring)."""

    def __init__(
        self,
        model: str | Path | GgufFile,
        *,
        capacity: int = 256,
        prompt_tokens: int = 32,
        threads: int = 1,
    ) -> None:
        import qidao

        self.file = model if isinstance(model, GgufFile) else read_gguf(model)
        self.hparams = h = llama_hparams(self.file)
        if not 1 <= prompt_tokens <= capacity:
            raise GenerationError(
                f"prompt_tokens must be 1..capacity ({capacity}), got {prompt_tokens}"
            )
        self.capacity, self.prompt_tokens = capacity, prompt_tokens
        self.embedding = self.file.tensor("token_embd.weight")
        specs, self.weights = _weights(self.file, h)

        def program(tokens: int) -> CompiledProgram:
            step = step_graph(h, tokens, capacity, specs)
            compiled = qidao.compile(step, threads=threads)
            assert isinstance(compiled, CompiledProgram)  # a builder graph's
            return compiled

        self.prefill = program(prompt_tokens)
        self.decode = program(1)
        # held while the generator lives: their code, not the IR of every stage
        self.prefill.release_ir(lambda: program(prompt_tokens))
        self.decode.release_ir(lambda: program(1))
        gc.collect()
        return_freed_memory()
        self.compiles = 2
        shape = (h.kv_heads, capacity, h.head_dim)
        self.keys = [np.zeros(shape, np.float32) for _ in range(h.layers)]
        self.values = [np.zeros(shape, np.float32) for _ in range(h.layers)]
        exponents = np.arange(0, h.head_dim, 2, dtype=np.float32) / np.float32(
            h.head_dim
        )
        self.inv_freq = (
            np.float32(1.0) / np.power(np.float32(h.rope_theta), exponents)
        ).astype(np.float32)

    def generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        sampling: Sampling | None = None,
        seed: int | None = None,
    ) -> list[int]:
        """The ``max_new_tokens`` tokens after ``prompt`` (token ids)."""
        sampling = sampling or Sampling()
        h = self.hparams
        if not prompt or len(prompt) > self.prompt_tokens:
            raise GenerationError(
                f"a prompt of {len(prompt)} tokens: the prefill takes 1 to "
                f"{self.prompt_tokens} (prompt_tokens=)"
            )
        if len(prompt) + max_new_tokens > self.capacity:
            raise GenerationError(
                f"{len(prompt)} prompt tokens and {max_new_tokens} new ones exceed "
                f"the cache's {self.capacity} slots (capacity=)"
            )
        bad = [t for t in prompt if not 0 <= t < h.vocab_size]
        if bad:
            raise GenerationError(
                f"token ids {bad[:5]} are outside the vocabulary (0..{h.vocab_size - 1})"
            )
        rng = np.random.default_rng(seed)
        logits = self._step(self.prefill, prompt, 0, self.prompt_tokens)
        out: list[int] = []
        position = len(prompt)
        while len(out) < max_new_tokens:
            token = _choose(logits, sampling, rng)
            out.append(token)
            if len(out) == max_new_tokens:
                break
            logits = self._step(self.decode, [token], position, 1)
            position += 1
        return out

    def _step(self, program: Any, ids: list[int], position: int, width: int) -> Any:
        """Run ``program`` on ``ids`` at ``position`` (padded to ``width``), write
        their keys and values into the cache, return the last one's logits."""
        h, real = self.hparams, len(ids)
        padded = [*ids, *[ids[-1]] * (width - real)]
        x = self.embedding.rows(padded)
        angles = np.outer(
            np.arange(position, position + width, dtype=np.float32), self.inv_freq
        ).astype(np.float32)
        mask = np.full((1, 1, width, self.capacity + width), MASKED, np.float32)
        mask[0, 0, :, :position] = 0.0
        for r in range(width):
            mask[0, 0, r, self.capacity : self.capacity + min(r, real - 1) + 1] = 0.0
        caches = [a for pair in zip(self.keys, self.values, strict=True) for a in pair]
        results = program(
            x, np.cos(angles), np.sin(angles), mask, *caches, *self.weights
        )
        for i in range(h.layers):
            self.keys[i][:, position : position + real] = results[1 + 2 * i][:, :real]
            self.values[i][:, position : position + real] = results[2 + 2 * i][:, :real]
        return results[0][real - 1]


def _weights(
    f: GgufFile, h: LlamaHParams
) -> tuple[dict[str, WeightSpec], list[npt.NDArray[Any]]]:
    """Each weight input of the step graph: its spec (2-D) and its array, a view of
    the file where its encoding allows."""
    specs: dict[str, WeightSpec] = {}
    arrays: list[npt.NDArray[Any]] = []
    for name in weight_names(h.layers):
        t = f.tensors.get(name)
        if t is None and name == "output.weight":  # tied to the embedding
            t = f.tensor("token_embd.weight")
        if t is None:
            t = f.tensor(name)  # the error names it
        if len(t.shape) == 1:
            arrays.append(t.dequantize())
            continue
        rows, cols = t.shape
        encoding = t.encoding.name
        if encoding in KERNEL_ENCODINGS:
            enc = t.encoding
            blocks = cols // enc.block
            arrays.append(t.raw.view(np.int8).reshape(rows, blocks, enc.block_bytes))
        else:
            arrays.append(_floats(t))
            encoding = "F32"
        specs[name] = WeightSpec(rows, cols, encoding)
    return specs, arrays


def _floats(t: GgufTensor) -> npt.NDArray[np.float32]:
    """A float32 matrix: the file's own bytes where it is ``F32``, else decoded."""
    if t.encoding.name == "F32":
        return t.raw.view(np.float32).reshape(t.shape)
    return t.dequantize()


def _choose(logits: Any, sampling: Sampling, rng: np.random.Generator) -> int:
    """The next token from ``logits`` (``[vocab]``) as ``sampling`` says."""
    if not sampling.sample:
        return int(np.argmax(logits))
    scores = np.asarray(logits, np.float64) / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < scores.size:
        kth = np.sort(scores)[-sampling.top_k]
        scores = np.where(scores < kth, -np.inf, scores)
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    if sampling.top_p is not None and sampling.top_p < 1.0:
        order = np.argsort(-probs, kind="stable")
        cumulative = np.cumsum(probs[order])
        keep = order[: int(np.searchsorted(cumulative, sampling.top_p) + 1)]
        kept = np.zeros_like(probs)
        kept[keep] = probs[keep]
        probs = kept / kept.sum()
    return int(rng.choice(probs.size, p=probs))
