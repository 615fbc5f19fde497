"""``qidao gguf FILE``: what a GGUF file holds: its architecture and
hyper-parameters, its vocabulary, its tensors by encoding with their bytes, and
the bytes qidao keeps in memory against the file's size
(``qidao.frontend.gguf_file``)."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any


def cmd_gguf(args: argparse.Namespace) -> int:
    print(gguf_summary(args.file, tensors=args.tensors))
    return 0


def gguf_summary(path: str, tensors: bool = False) -> str:
    """The lines ``qidao gguf`` prints for the file at ``path``."""
    from qidao.frontend.gguf_file import read_gguf
    from qidao.frontend.gguf_llama import llama_hparams

    f = read_gguf(path)
    lines = [f"file:         {f.path} ({_mib(f.file_bytes)}, GGUF v{f.version})"]
    lines.append(f"architecture: {f.architecture}")
    if f.architecture == "llama":
        h = llama_hparams(f)
        lines.append(
            f"llama:        {h.layers} layers, hidden {h.hidden_size}, {h.heads} "
            f"heads ({h.kv_heads} key/value), head {h.head_dim}, feed-forward "
            f"{h.intermediate_size}, vocabulary {h.vocab_size}, context "
            f"{h.context_length}, rope theta {h.rope_theta:g}, rms eps "
            f"{h.rms_norm_eps:g}"
        )
    if f.tokenizer is not None:
        t = f.tokenizer
        lines.append(
            f"tokenizer:    {t.model or '?'}, {len(t.tokens)} tokens, bos "
            f"{t.bos_id}, eos {t.eos_id}"
        )
    count: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for tensor in f.tensors.values():
        count[tensor.encoding.name] += 1
        size[tensor.encoding.name] += tensor.nbytes
    held = sum(size.values())
    lines.append(
        f"tensors:      {len(f.tensors)}, {_mib(held)} encoded, held in memory as "
        f"they are in the file (memory-mapped, {100 * held / f.file_bytes:.1f}% of it)"
    )
    lines += [
        f"  {name:<6} {count[name]:>4} tensor(s) {_mib(size[name]):>12}"
        for name in sorted(count, key=lambda n: -size[n])
    ]
    if tensors:
        lines += [
            f"  {t.name:<32} {t.encoding.name:<5} {'x'.join(map(str, t.shape)):>14} "
            f"{_mib(t.nbytes):>12}"
            for t in f.tensors.values()
        ]
    return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def add_gguf_parser(sub: Any) -> None:
    p = sub.add_parser(
        "gguf",
        help="what a GGUF file holds: hyper-parameters, vocabulary, tensors",
        description="Read a GGUF file (llama.cpp's format) with the gguf package "
        "and print its architecture, hyper-parameters, vocabulary and tensors by "
        "encoding (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K), with the bytes qidao "
        "holds against the file's size. A tensor in another encoding is named "
        "with the encodings qidao reads (exit 2).",
    )
    p.add_argument("file", help="a .gguf file")
    p.add_argument("--tensors", action="store_true", help="list every tensor")
    p.set_defaults(run=cmd_gguf)
