"""The models of ``qidao bench bf16`` (``qidao/bench/bf16.py``), the bfloat16
tolerance qidao's bfloat16 outputs are checked within, and which bfloat16
hardware a compiled model used.

The models (:data:`MODELS`, random weights from seed 0, no download; each a
float32 ``torch.nn.Module`` in eval mode that the jobs convert with
``.to(torch.bfloat16)``):

- ``mlp``: ``Sequential(Linear(768, 3072), GELU(), Linear(3072, 768))`` on a
  float input [128, 768] (a transformer's feed-forward block on 128 tokens);
- ``bert``: ``transformers.BertModel`` (hidden 768, 2 layers, 12 heads,
  intermediate 3072, BERT-base's vocabulary of 30522, eager attention) on input
  ids [1, 128], its ``last_hidden_state``;
- ``gpt2``: ``transformers.GPT2Model`` (hidden 768, 2 layers, 12 heads, GPT-2's
  vocabulary and positions, eager attention) on input ids [1, 128], its
  ``last_hidden_state``;
- ``mlp-tiny`` and ``bert-tiny``: the same at tiny sizes, for the tests and a
  quick check (not in the default list).

The transformers models are built as the zoo builds its models
(``qidao/bench/zoo_models.py``'s :class:`~qidao.bench.zoo_models.ZooModel`: the
config, the seed, :class:`MainOutput`'s one output tensor, the token ids); they
are not zoo entries (``qidao zoo``'s BERT and GPT-2 are 4 layers at hidden 256).
A bfloat16 model's inputs are the float32 ones rounded to bfloat16 (token ids
stay int64).

The bfloat16 tolerance (:func:`bf16_tolerance`): ``qidao-bf16`` and
``qidao-bf16-f32`` are checked against PyTorch eager on the same bfloat16 model
within :data:`BF16_ULPS` (4) units in the last place of a bfloat16 at the
reference's largest magnitude ``L``: ``4 * 2**(floor(log2 L) - 7)``, between
2**-6 and 2**-5 of ``L``. Both compute what PyTorch's CPU kernels compute (each
op widened to float32, its result rounded to bfloat16 once: ``qidao/frontend/
torch/narrow.py``), with the float32 sums in another order (qidao's tiles, or
float32 FMAs, against oneDNN's), so a sum within rounding of a bfloat16 tie
rounds the other way: on a single MLP that is one rounding of one element, but
through attention and LayerNorm a flipped activation moves its row's mean and
variance and spreads. Measured (one and two threads, an Intel Xeon with AMX,
2026-12-07; errors as fractions of ``L``, in brackets in bfloat16 ulps of
``L``), the same for the native and the conversion path: ``mlp``
2.4e-3 (0.5: one flip at half the largest value); ``bert`` 7.9e-3 (1.25);
``gpt2`` 6.7e-3 (1.0); on 8 other random inputs each, ``bert`` and ``gpt2`` 1 to
2 ulps; the tiny models 0 (bit for bit). 4 ulps is twice the worst seen. The
check cannot tell a bfloat16 path from one that computed the float32 model
instead: PyTorch's own bfloat16 output is as far from its float32 one (``bert``
1.0e-2, ``gpt2`` 8.3e-3: 1.2 to 1.8 ulps), which is why the table says what ran
the matmuls (``bf16 hw``); but a wrong product (a misplaced pair, a bad panel, a
lost tile) is off by the size of the output and fails it. The float32 paths are
checked as the zoo checks them (``rtol`` 1e-3, ``atol`` 1e-3 of the largest
magnitude).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.bench.zoo_models import SEED, TEXT_ATTENTION, ZooModel, _config

BF16_ULPS = 4
"""The bfloat16 tolerance in units in the last place of a bfloat16 at the
reference's largest magnitude (module docstring)."""

BF16_MANTISSA = 7
"""bfloat16's stored significand bits: its ulp at ``2**e`` is ``2**(e - 7)``."""


@dataclass(frozen=True)
class Bf16Model:
    """A model of the benchmark: a float32 module and its example inputs."""

    name: str
    summary: str
    make: Callable[[], tuple[Any, list[Any]]]
    """A fresh float32 ``torch.nn.Module`` in eval mode and its inputs (tensors)."""
    default: bool = True
    """Whether ``qidao bench bf16`` with no names runs it."""

    def float32(self) -> tuple[Any, list[Any]]:
        """The float32 module and inputs."""
        return self.make()

    def bfloat16(self) -> tuple[Any, list[Any]]:
        """The module in bfloat16 and its float inputs rounded to bfloat16."""
        import torch

        module, inputs = self.make()
        return module.to(torch.bfloat16), [
            x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs
        ]


def _mlp(rows: int, width: int, hidden: int) -> Callable[[], tuple[Any, list[Any]]]:
    def make() -> tuple[Any, list[Any]]:
        import torch

        torch.manual_seed(SEED)
        net = torch.nn.Sequential(
            torch.nn.Linear(width, hidden),
            torch.nn.GELU(),
            torch.nn.Linear(hidden, width),
        )
        rng = np.random.default_rng(SEED)
        x = rng.standard_normal((rows, width), dtype=np.float32)
        return net.eval(), [torch.from_numpy(x)]

    return make


def _transformer(zoo: ZooModel) -> Callable[[], tuple[Any, list[Any]]]:
    """The zoo's way to build ``zoo`` (a copy: the zoo caches its modules, and a
    job converts its own to bfloat16) and its token ids."""

    def make() -> tuple[Any, list[Any]]:
        import torch

        return copy.deepcopy(zoo.build()), [torch.from_numpy(a) for a in zoo.inputs()]

    return make


def _text(
    name: str, summary: str, kind: str, cls: str, seq: int, **config: Any
) -> ZooModel:
    return ZooModel(
        name,
        summary,
        _config(kind, attn_implementation=TEXT_ATTENTION, **config),
        cls,
        (1, seq),
        output="last_hidden_state",
        default=False,
    )


_BERT = _text(
    "bf16-bert",
    "BERT encoder, 2 layers, hidden 768, 12 heads, sequence 128",
    "BertConfig",
    "BertModel",
    128,
    hidden_size=768,
    num_hidden_layers=2,
    num_attention_heads=12,
    intermediate_size=3072,
    vocab_size=30522,
)
_GPT2 = _text(
    "bf16-gpt2",
    "GPT-2 decoder, 2 layers, hidden 768, 12 heads, sequence 128",
    "GPT2Config",
    "GPT2Model",
    128,
    n_embd=768,
    n_layer=2,
    n_head=12,
)
_BERT_TINY = _text(
    "bf16-bert-tiny",
    "BERT encoder, 1 layer, hidden 64, 2 heads, sequence 16",
    "BertConfig",
    "BertModel",
    16,
    hidden_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=256,
    vocab_size=512,
    max_position_embeddings=32,
)

MODELS: dict[str, Bf16Model] = {
    m.name: m
    for m in (
        Bf16Model(
            "mlp",
            "Linear(768, 3072), GELU, Linear(3072, 768) on [128, 768]",
            _mlp(128, 768, 3072),
        ),
        Bf16Model("bert", f"{_BERT.summary} (BertModel)", _transformer(_BERT)),
        Bf16Model("gpt2", f"{_GPT2.summary} (GPT2Model)", _transformer(_GPT2)),
        Bf16Model(
            "mlp-tiny",
            "Linear(64, 256), GELU, Linear(256, 64) on [16, 64] (tests)",
            _mlp(16, 64, 256),
            default=False,
        ),
        Bf16Model(
            "bert-tiny",
            f"{_BERT_TINY.summary} (tests)",
            _transformer(_BERT_TINY),
            default=False,
        ),
    )
}
"""Every model by name."""

DEFAULT_MODELS = tuple(name for name, m in MODELS.items() if m.default)
"""What ``qidao bench bf16`` runs with no names."""


def get_bf16_model(name: str) -> Bf16Model:
    """Model ``name``, or a ValueError listing the names."""
    if name not in MODELS:
        raise ValueError(
            f"unknown bf16 model '{name}'; the models are: {', '.join(MODELS)}"
        )
    return MODELS[name]


def bf16_ulp(value: float) -> float:
    """The spacing of bfloat16s at ``|value|`` (0 for 0)."""
    if value == 0 or not math.isfinite(value):
        return 0.0
    return math.ldexp(1.0, math.frexp(abs(value))[1] - 1 - BF16_MANTISSA)


def bf16_tolerance(want: np.ndarray[Any, Any]) -> float:
    """The absolute tolerance of a bfloat16 output against PyTorch eager's bfloat16
    ``want``: :data:`BF16_ULPS` bfloat16 ulps at its largest magnitude."""
    return BF16_ULPS * bf16_ulp(float(np.max(np.abs(want), initial=0.0)))


# -- what computed a compiled model's bfloat16 matmuls ------------------------

AMX = "tdpbf16ps"
AVX512_BF16 = "vdpbf16ps"


def parts(compiled: Any) -> list[Any]:
    """The qidao ``Compiled`` programs of a ``qidao.compile``'d PyTorch module (a
    ``TorchCompiled``): the whole graph's, or each part's when parts run in
    PyTorch; a ``Compiled`` is its own one part."""
    if not hasattr(compiled, "parts"):
        return [compiled]
    whole = compiled.compiled
    return [whole] if whole is not None else list(compiled.parts)


def schedules(compiled: Any) -> list[str]:
    """The default schedule's line for each kernel of :func:`parts`
    (``stats["default_schedule"]``)."""
    lines: list[str] = []
    for part in parts(compiled):
        lines += [str(v) for v in part.stats.get("default_schedule", {}).values()]
    return lines


def bf16_counts(compiled: Any) -> tuple[int, int]:
    """The distinct kernels of ``compiled`` (the default schedule's entries: a
    kernel called again counts once) on AMX tiles (``tdpbf16ps``) and on
    AVX512_BF16 registers (``vdpbf16ps``), by their default schedule's text."""
    lines = schedules(compiled)
    amx = sum(AMX in line for line in lines)
    avx = sum(AVX512_BF16 in line and AMX not in line for line in lines)
    return amx, avx


def hardware(amx: int, avx512: int) -> str:
    """What the bfloat16 matmuls ran on: ``AMX``, ``AVX512_BF16``, both, or
    ``float32`` (no bfloat16 product: float32 FMAs)."""
    names = [n for n, k in (("AMX", amx), ("AVX512_BF16", avx512)) if k]
    return "+".join(names) or "float32"


def cpu_flags() -> str:
    """One line: the CPU, and whether it has AVX-512, AVX512_BF16, AMX-BF16 and
    this process the AMX tiles."""
    from qidao.compiler.tune.records import cpu_model
    from qidao.runtime.amx import AMX_BF16_FEATURE, tiles_granted
    from qidao.runtime.cpu import host_cpu, host_has

    def yes(flag: bool) -> str:
        return "yes" if flag else "no"

    llvm_name = host_cpu()[0]
    amx = host_has("amx-tile") and host_has(AMX_BF16_FEATURE)
    return (
        f"CPU: {cpu_model()} (LLVM: {llvm_name}); avx512f {yes(host_has('avx512f'))}, "
        f"avx512_bf16 {yes(host_has('avx512bf16'))}, amx_bf16 {yes(amx)}, "
        f"AMX tiles granted {yes(amx and tiles_granted())}"
    )
