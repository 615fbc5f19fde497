"""``qidao bench generate``: a llama GGUF file generating, qidao against PyTorch
eager, prefill and decode tokens per second.

    qidao bench generate [llama-512 llama-2048 llama-tiny] [--threads 1]

Per model (``MODELS``: ``transformers``' ``LlamaForCausalLM`` from a config,
random weights, seed 0) and encoding (``F32``, ``Q8_0``, ``Q4_0``, ``Q4_K``), the parent
writes the GGUF file (``qidao.frontend.gguf_llama.write_llama_gguf``), then two
worker processes, each pinned to the threads:

- ``qidao``: ``LlamaGenerator`` on the file (two compiles), the prompt's prefill
  and ``NEW_TOKENS`` greedy tokens;
- ``torch``: ``transformers``' ``generate`` on the same weights (the float model,
  or the GGUF file's weights dequantized: PyTorch has no Q8_0 kernel), greedy.

Each times a generation of one token (the prefill) and of ``NEW_TOKENS`` tokens,
``REPEATS`` times, medians: prefill tokens/s is the prompt's length over the
first, decode tokens/s the other tokens over the difference. The table has the
compiles, the file's size, what loading, compiling and one generation added to
the worker's resident memory (qidao maps the file: its pages count once read;
PyTorch holds the weights decoded to float32) and to its peak (``+peak``: the
compiler's transient memory included; over the file's size: the issue's bar is
1.5x), and whether both made the same tokens.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qidao.runtime.worker import run_once_data, serve

WORKER = "qidao.bench.generate"
MODELS: dict[str, dict[str, Any]] = {
    "llama-512": {
        "vocab_size": 32000,
        "hidden_size": 512,
        "intermediate_size": 1408,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
    },
    "llama-2048": {
        "vocab_size": 32000,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 8,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
    },
    "llama-tiny": {
        "vocab_size": 96,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    },
}
"""The models: ``transformers.LlamaConfig`` fields (``max_position_embeddings``
512, untied head). ``llama-2048`` has TinyLlama-1.1B's widths (hidden 2048, FFN
5632, 32 heads sharing 4 key/value heads) and 8 of its 22 layers: a file large
enough (513 MiB in ``Q8_0``) that the model's memory, not the compiler's, is what
``peak`` measures."""
DEFAULT_MODELS = ("llama-512",)
ENCODINGS = ("F32", "Q8_0", "Q4_0", "Q4_K")
PROMPT = 32
NEW_TOKENS = 64
REPEATS = 3
TIMEOUT = 900.0


@dataclass(frozen=True)
class GenerateRow:
    """One (model, encoding, job)."""

    model: str
    encoding: str
    job: str
    prefill_tok_s: float = float("nan")
    decode_tok_s: float = float("nan")
    compiles: int | None = None
    file_mib: float = float("nan")
    rss_mib: float = float("nan")
    peak_mib: float = float("nan")
    tokens: tuple[int, ...] = ()
    error: str = ""


def gguf_path(model: str, encoding: str) -> Path:
    """The model's GGUF file in ``encoding`` (written once, in the temp folder)."""
    import torch
    import transformers

    from qidao.frontend.gguf_llama import write_llama_gguf

    path = Path(tempfile.gettempdir()) / "qidao-models" / f"{model}-{encoding}.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            **MODELS[model], max_position_embeddings=512, tie_word_embeddings=False
        )
        net = transformers.LlamaForCausalLM(config).eval()
        partial = path.with_suffix(".part")
        write_llama_gguf(net, partial, encoding)
        partial.replace(path)
    return path


def prompt_ids(vocab: int) -> list[int]:
    """The prompt: ``PROMPT`` token ids spread over the vocabulary."""
    return [1 + (17 * k) % (vocab - 1) for k in range(PROMPT)]


def measure(request: dict[str, Any]) -> dict[str, Any]:
    """One job in this (worker) process: its timings and tokens."""
    path, job, new = Path(request["path"]), request["job"], int(request["new"])
    if job == "qidao":
        from qidao.generate import LlamaGenerator

        before = _rss_mib()  # after the imports: the model's memory, not theirs
        gen = LlamaGenerator(path, capacity=PROMPT + new, prompt_tokens=PROMPT)
        prompt = prompt_ids(gen.hparams.vocab_size)

        def run(n: int) -> list[int]:
            return gen.generate(prompt, n)

        compiles = gen.compiles
    else:
        import torch
        import transformers

        from qidao.frontend.gguf_file import read_gguf
        from qidao.frontend.gguf_llama import (
            llama_config,
            llama_hparams,
            llama_state_dict,
        )

        before = _rss_mib()
        f = read_gguf(path)
        net = transformers.LlamaForCausalLM(llama_config(llama_hparams(f))).eval()
        state = {k: torch.from_numpy(v) for k, v in llama_state_dict(f).items()}
        net.load_state_dict(state)
        net.generation_config.eos_token_id = None
        net.generation_config.pad_token_id = 0
        prompt = prompt_ids(net.config.vocab_size)
        ids = torch.tensor([prompt])

        def run(n: int) -> list[int]:
            with torch.no_grad():
                out = net.generate(ids, max_new_tokens=n, do_sample=False)
            return [int(t) for t in out[0, len(prompt) :]]

        compiles = 0
    tokens = run(new)  # warm-up, and the tokens
    rss = _rss_mib() - before
    peak = _peak_mib() - before
    first, whole = [], []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run(1)
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        run(new)
        whole.append(time.perf_counter() - start)
    prefill, total = statistics.median(first), statistics.median(whole)
    return {
        "prefill_tok_s": PROMPT / prefill,
        "decode_tok_s": (new - 1) / max(total - prefill, 1e-9),
        "compiles": compiles,
        "rss_mib": rss,
        "peak_mib": peak,
        "tokens": tokens,
    }


def _rss_mib() -> float:
    """This process's resident memory now, MiB (Linux's ``VmRSS``; the peak where
    ``/proc`` is not)."""
    return _status_mib("VmRSS")


def _peak_mib() -> float:
    """This process's peak resident memory so far, MiB: Linux's ``VmHWM``, which
    starts again at ``exec`` (``ru_maxrss`` does not: a worker started by a parent
    that had just written a 2 GB file reported the parent's peak)."""
    return _status_mib("VmHWM")


def _status_mib(field: str) -> float:
    """``field`` of ``/proc/self/status`` in MiB; ``ru_maxrss`` where ``/proc`` is
    not."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_generate(
    models: list[str],
    threads: int,
    new: int = NEW_TOKENS,
    encodings: tuple[str, ...] = ENCODINGS,
) -> list[GenerateRow]:
    """Every (model, encoding, job), each job a fresh pinned worker."""
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(
            f"unknown model(s) {', '.join(unknown)}; the models are {', '.join(MODELS)}"
        )
    from tqdm import tqdm

    rows: list[GenerateRow] = []
    plan = [(m, e, j) for m in models for e in encodings for j in ("qidao", "torch")]
    for model, encoding, job in tqdm(plan, desc="generate", unit="job"):
        path = gguf_path(model, encoding)
        request = {"path": str(path), "job": job, "new": new}
        data = run_once_data(WORKER, request, threads=threads, timeout=TIMEOUT)
        mib = path.stat().st_size / 2**20
        if "error" in data:
            rows.append(
                GenerateRow(model, encoding, job, file_mib=mib, error=data["error"])
            )
            continue
        rows.append(
            GenerateRow(
                model,
                encoding,
                job,
                data["prefill_tok_s"],
                data["decode_tok_s"],
                data["compiles"],
                mib,
                data["rss_mib"],
                data["peak_mib"],
                tuple(data["tokens"]),
            )
        )
    return rows


def format_table(rows: list[GenerateRow]) -> str:
    """The table: per model and encoding, qidao's and PyTorch's rates side by side."""
    head = (
        f"{'model':<11} {'enc':<5} {'job':<6} {'prefill tok/s':>13} "
        f"{'decode tok/s':>12} {'vs torch':>8} {'compiles':>8} {'file MiB':>8} "
        f"{'+RSS MiB':>8} {'+peak':>6} {'peak/file':>9} tokens"
    )
    lines = [head, "-" * len(head)]
    by = {(r.model, r.encoding, r.job): r for r in rows}
    for r in rows:
        other = by.get((r.model, r.encoding, "torch"))
        ratio = (
            r.decode_tok_s / other.decode_tok_s
            if other is not None and r.job == "qidao" and not other.error
            else float("nan")
        )
        same = (
            ""
            if other is None or r.job != "qidao"
            else ("same as torch" if r.tokens == other.tokens else "DIFFER from torch")
        )
        if r.error:
            lines.append(f"{r.model:<11} {r.encoding:<5} {r.job:<6} failed: {r.error}")
            continue
        lines.append(
            f"{r.model:<11} {r.encoding:<5} {r.job:<6} {r.prefill_tok_s:>13.1f} "
            f"{r.decode_tok_s:>12.1f} {ratio:>7.2f}x {r.compiles!s:>8} "
            f"{r.file_mib:>8.1f} {r.rss_mib:>8.0f} {r.peak_mib:>6.0f} "
            f"{r.peak_mib / r.file_mib:>8.2f}x {same}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    serve(measure)
