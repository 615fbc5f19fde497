"""Whole models as GPU workloads: the zoo's ResNet-50 and BERT on the device.

The models are ``qidao/bench/zoo_models.py``'s (``transformers`` classes from
configs, random weights from a fixed seed, BatchNorms calibrated), at the sizes of
the speed targets (``--suite targets``) and at tiny sizes for the tests:

- ``resnet50``: ``ResNetForImageClassification`` from the zoo's ResNet-50 config
  (bottleneck blocks 3-4-6-3), batch 32, 224x224, the logits;
- ``bert``: ``BertModel`` from ``BertConfig()``'s defaults, which are BERT-base
  (12 layers, hidden 768, 12 heads, intermediate 3072, vocabulary 30522), sequence
  128, batch 8, the last hidden state.

Each becomes a :class:`GpuWorkload` whose ``build`` is the model's ONNX file (the
zoo's export, ``onnx_path``), so the bench compiles it with
``qidao.compile(path, target="cuda")`` and the default GPU schedules, and times
``launch`` alone on inputs already on the device, as for the other workloads. The
references: PyTorch eager on the CPU (``zoo_models.reference``, the NumPy side, for
the emulator) and PyTorch eager on the GPU in float32 (``torch_reference``, a copy
of the same module moved to the device); the tolerance is the zoo's (rtol 1e-3,
atol 1e-3 times the largest magnitude of the reference)::

    w = RESNET50_SMALL                 # resnet-tiny, batch 2, 32x32
    compiled = qidao.compile(w.build(), target="cuda", device="emulate")
    inputs = w.inputs(np.random.default_rng(0))
    w.check(compiled(*inputs), w.reference(*inputs))
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any

import numpy as np

from qidao.bench.cuda.workloads import Arrays, GpuWorkload, Target
from qidao.bench.zoo import RTOL
from qidao.bench.zoo_models import (
    TEXT_ATTENTION,
    ZOO,
    ZooModel,
    onnx_path,
    reference,
)


def _bert_config_class() -> Any:
    """``transformers.BertConfig`` (typed Any: its keyword arguments reach the
    ``PretrainedConfig`` base through ``**kwargs``)."""
    import transformers

    return transformers.BertConfig


def _bert_base_config() -> Any:
    """``BertConfig()``'s defaults are BERT-base."""
    return _bert_config_class()(attn_implementation=TEXT_ATTENTION)


def _bert_tiny_config() -> Any:
    return _bert_config_class()(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        attn_implementation=TEXT_ATTENTION,
    )


RESNET50_B32 = dataclasses.replace(
    ZOO["resnet50"],
    name="resnet50-b32",
    summary="ResNet-50 (bottleneck blocks 3-4-6-3, 25.6M parameters), batch 32, "
    "224x224",
    input_shape=(32, 3, 224, 224),
)
BERT_BASE_B8 = dataclasses.replace(
    ZOO["bert"],
    name="bert-base-b8",
    summary="BERT-base (12 layers, hidden 768, 12 heads, 110M parameters), "
    "sequence 128, batch 8",
    config=_bert_base_config,
    input_shape=(8, 128),
)
RESNET_TINY_B2 = dataclasses.replace(
    ZOO["resnet-tiny"], name="resnet-tiny-b2", input_shape=(2, 3, 32, 32)
)
BERT_TINY_B2 = dataclasses.replace(
    ZOO["bert"],
    name="bert-tiny-b2",
    summary="BERT, 2 layers, hidden 32, 2 heads, sequence 8, batch 2 (tests)",
    config=_bert_tiny_config,
    input_shape=(2, 8),
)


@functools.cache
def _on_gpu(model: ZooModel) -> Any:
    """A copy of the model's module on the GPU (the zoo's stays on the CPU, where
    its ONNX export and its CPU reference run)."""
    return copy.deepcopy(model.build()).cuda().eval()


def zoo_workload(
    name: str, model: ZooModel, target: Target | None, timeout_s: float | None
) -> GpuWorkload:
    """``model`` as a GPU workload called ``name`` (see the module doc)."""

    def build() -> str:
        return str(onnx_path(model))

    def inputs(rng: np.random.Generator) -> Arrays:
        del rng  # the zoo's inputs come from its own seed
        return model.inputs()

    def numpy_reference(*arrays: Any) -> Arrays:
        return [reference(model, list(arrays))]

    def torch_fn(x: Any) -> Any:
        return _on_gpu(model)(x) if x.is_cuda else model.build()(x)

    return GpuWorkload(
        name,
        f"{model.summary}: ONNX, qidao.compile(target='cuda'), the default GPU "
        "schedules",
        build,
        "default",
        inputs,
        numpy_reference,
        torch_fn,
        tolerance=(RTOL, RTOL),
        scale_atol=True,
        target=target,
        timeout_s=timeout_s,
        torch_reference=torch_fn,
    )


__all__ = [
    "BERT_BASE_B8",
    "BERT_TINY_B2",
    "RESNET50_B32",
    "RESNET_TINY_B2",
    "zoo_workload",
]
