"""The model zoo's models: Hugging Face ``transformers`` classes from configs.

Models that no one here wrote: each entry builds a ``transformers`` model from a
config (no download, random weights from a fixed seed), in eval mode, at a size that
compiles on a small machine, and its example inputs. ``qidao zoo``
(``qidao/bench/zoo.py``) runs them through ONNX and through
``torch.compile(backend="qidao")`` and times them against ONNX Runtime and PyTorch.

- vision (``pixel_values``, float32 1x3xHxW, output the logits): ``resnet50`` (the
  headline: ResNet-50 as published, 224x224), ``convnext``, ``mobilenet_v2``,
  ``efficientnet``, ``regnet``, ``vit``, ``swin``;
- text (``input_ids``, int64 1xS, output the last hidden state or the logits):
  ``bert``, ``gpt2``, ``llama``;
- 37 more architectures at ``transformers``' default configs, only the sizes
  shrunk (``qidao/bench/zoo_archs.py``): text encoders, decoders, encoder-decoders
  (with ``decoder_input_ids``), audio (``input_values``, ``input_features``) and
  vision models;
- ``*-tiny``: a tiny ResNet, GPT-2 and T5 that compile in seconds, for the tests
  and a quick check of the command (not in the default list).

Every model is wrapped in :class:`MainOutput`, which returns the one tensor that
matters (``logits`` or ``last_hidden_state``) instead of a ``ModelOutput``, so the
ONNX file has one output and ``torch.compile`` one tensor to compare. The ONNX file
is exported once (``torch.onnx.export(dynamo=False)``, opset 17, as
``qidao/examples/models.py`` does) into the temp dir and reused while the
model is unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.sweep_configs import small_config
from qidao.bench.zoo_archs import ARCHS, INPUTS, ZOO_SIZES
from qidao.examples.models import ONNX_OPSET

SEED = 0
"""The seed of every model's weights and inputs."""


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry: how to build the model and its inputs."""

    name: str
    summary: str
    config: Callable[[], Any]
    """The ``transformers`` config (a fresh one per call)."""
    model_class: str
    """The ``transformers`` class that the config builds, by name; or
    ``qidao:NAME``, a ``torch.nn.Module`` of ``qidao/bench/zoo_vision.py`` (no
    config; it returns its one tensor itself)."""
    input_shape: tuple[int, ...]
    """The main input's shape: ``pixel_values`` (float32) for a vision model,
    ``input_ids`` (int64) for text, else ``main_input``'s."""
    output: str = "logits"
    """The field of the model's output that :class:`MainOutput` returns."""
    default: bool = True
    """Whether ``qidao zoo`` with no names runs it."""
    main_input: str = ""
    """The main input's name where it is neither ``input_ids`` nor
    ``pixel_values``: ``input_values`` (raw audio, float32 1xT) or
    ``input_features`` (a filter bank, float32)."""
    decoder_seq: int = 0
    """An encoder-decoder's ``decoder_input_ids`` length (0: no decoder input)."""

    @property
    def input_name(self) -> str:
        """The main input's name."""
        if self.main_input:
            return self.main_input
        return "input_ids" if len(self.input_shape) == 2 else "pixel_values"

    @property
    def input_names(self) -> list[str]:
        """Every input's name, in the order the model is called with them."""
        return [self.input_name, *(["decoder_input_ids"] if self.decoder_seq else [])]

    @property
    def is_text(self) -> bool:
        return self.input_name == "input_ids"

    def inputs(self) -> list[np.ndarray[Any, Any]]:
        """The example inputs as NumPy arrays (seed ``SEED``): token ids below the
        vocabulary size, else standard normal floats."""
        rng = np.random.default_rng(SEED)
        vocab = getattr(self.config(), "vocab_size", 0)
        inputs: list[np.ndarray[Any, Any]]
        if self.is_text:
            inputs = [rng.integers(0, vocab, self.input_shape, dtype=np.int64)]
        else:
            inputs = [rng.standard_normal(self.input_shape, dtype=np.float32)]
        if self.decoder_seq:
            shape = (self.input_shape[0], self.decoder_seq)
            inputs.append(rng.integers(0, vocab, shape, dtype=np.int64))
        return inputs

    def build(self) -> Any:
        """The model (a ``torch.nn.Module`` returning one tensor), in eval mode."""
        return _build(self)


def _vision(
    name: str,
    summary: str,
    config: Callable[[], Any],
    cls: str,
    size: int,
    default: bool = True,
) -> ZooModel:
    return ZooModel(name, summary, config, cls, (1, 3, size, size), default=default)


OWN_PREFIX = "qidao:"
"""A ``model_class`` naming a module of ``qidao/bench/zoo_vision.py``."""


def _own(name: str, summary: str, module: str) -> ZooModel:
    """A CNN of ``zoo_vision.py`` on a 224x224 image."""
    return ZooModel(name, summary, dict, OWN_PREFIX + module, (1, 3, 224, 224))


def _text(
    name: str,
    summary: str,
    config: Callable[[], Any],
    cls: str,
    seq: int,
    output: str = "logits",
    default: bool = True,
) -> ZooModel:
    return ZooModel(name, summary, config, cls, (1, seq), output, default)


def _config(kind: str, **fields: Any) -> Callable[[], Any]:
    """A function making ``transformers.<kind>(**fields)``."""

    def make() -> Any:
        import transformers

        return getattr(transformers, kind)(**fields)

    return make


def _arch(name: str, model_type: str, model_class: str, kind: str) -> ZooModel:
    """An architecture of ``zoo_archs.ARCHS``: ``transformers``' default config for
    ``model_type`` shrunk to ``ZOO_SIZES``, eager attention."""
    input_name, shape, decoder_seq = INPUTS[kind]
    heads = model_class.endswith(("ForCausalLM", "ForImageClassification"))
    s = ZOO_SIZES
    if kind == "image":
        size = f"stages {s.stages[0]}-{s.stages[1]} (or hidden {s.width}), {s.image}x{s.image}"
    else:
        size = f"hidden {s.width}, {s.heads} heads, {s.layers} layers"
        size += f", input {'x'.join(map(str, shape[1:]))}"
        size += f", decoder {decoder_seq}" if decoder_seq else ""
    return ZooModel(
        name,
        f"{model_class} (transformers' defaults), {size}",
        functools.partial(small_config, model_type, ZOO_SIZES),
        model_class,
        shape,
        "logits" if heads else "last_hidden_state",
        main_input="" if input_name in ("input_ids", "pixel_values") else input_name,
        decoder_seq=decoder_seq,
    )


TEXT_ATTENTION = "eager"
"""The text models' attention: written out as matmul, softmax, matmul (transformers'
``eager``), the same graph through ONNX and through torch.compile."""

ZOO: dict[str, ZooModel] = {
    m.name: m
    for m in (
        _vision(
            "resnet50",
            "ResNet-50 (bottleneck blocks 3-4-6-3, 25.6M parameters), 224x224",
            _config("ResNetConfig", num_labels=1000),
            "ResNetForImageClassification",
            224,
        ),
        _own(
            "squeezenet",
            "SqueezeNet 1.1 (fire modules, 1.2M parameters), 224x224",
            "SqueezeNet",
        ),
        _own(
            "shufflenet",
            "ShuffleNet V2 1.0x (channel split and shuffle, 2.3M parameters), 224x224",
            "ShuffleNetV2",
        ),
        _vision(
            "convnext",
            "ConvNeXt, tiny widths (96..768), depths 1-1-3-1, 112x112",
            _config(
                "ConvNextConfig",
                num_labels=1000,
                depths=[1, 1, 3, 1],
                hidden_sizes=[96, 192, 384, 768],
                layer_scale_init_value=1.0,
                image_size=112,
            ),
            "ConvNextForImageClassification",
            112,
        ),
        _vision(
            "mobilenet_v2",
            "MobileNetV2, depth multiplier 1.0 (3.5M parameters), 224x224",
            _config("MobileNetV2Config", image_size=224, num_labels=1000),
            "MobileNetV2ForImageClassification",
            224,
        ),
        _vision(
            "efficientnet",
            "EfficientNet-B0 widths, depth coefficient 0.5, 128x128",
            _config(
                "EfficientNetConfig",
                num_labels=1000,
                width_coefficient=1.0,
                depth_coefficient=0.5,
                image_size=128,
                hidden_dim=1280,
            ),
            "EfficientNetForImageClassification",
            128,
        ),
        _vision(
            "regnet",
            "RegNetY, widths 32..256, depths 1-1-2-1, groups of 16, 112x112",
            _config(
                "RegNetConfig",
                num_labels=1000,
                depths=[1, 1, 2, 1],
                hidden_sizes=[32, 64, 128, 256],
                groups_width=16,
            ),
            "RegNetForImageClassification",
            112,
        ),
        _vision(
            "vit",
            "ViT, hidden 192, 4 layers, 3 heads, patch 16, 224x224",
            _config(
                "ViTConfig",
                num_labels=1000,
                hidden_size=192,
                num_hidden_layers=4,
                num_attention_heads=3,
                intermediate_size=768,
                image_size=224,
                patch_size=16,
            ),
            "ViTForImageClassification",
            224,
        ),
        _vision(
            "swin",
            "Swin, embed 48, depths 1-1-2, heads 2-4-8, window 7, 112x112",
            _config(
                "SwinConfig",
                num_labels=1000,
                image_size=112,
                embed_dim=48,
                depths=[1, 1, 2],
                num_heads=[2, 4, 8],
                window_size=7,
                drop_path_rate=0.0,
            ),
            "SwinForImageClassification",
            112,
        ),
        _text(
            "bert",
            "BERT encoder, 4 layers, hidden 256, 4 heads, sequence 128",
            _config(
                "BertConfig",
                vocab_size=8192,
                hidden_size=256,
                num_hidden_layers=4,
                num_attention_heads=4,
                intermediate_size=1024,
                attn_implementation=TEXT_ATTENTION,
            ),
            "BertModel",
            128,
            output="last_hidden_state",
        ),
        _text(
            "gpt2",
            "GPT-2 language model, 4 layers, hidden 256, 4 heads, sequence 128",
            _config(
                "GPT2Config",
                vocab_size=8192,
                n_embd=256,
                n_layer=4,
                n_head=4,
                n_positions=256,
                bos_token_id=0,
                eos_token_id=0,
                attn_implementation=TEXT_ATTENTION,
            ),
            "GPT2LMHeadModel",
            128,
        ),
        _text(
            "llama",
            "LLaMA-style decoder (RMSNorm, rotary, SwiGLU, grouped KV heads), 4 "
            "layers, hidden 256, sequence 128",
            _config(
                "LlamaConfig",
                vocab_size=8192,
                hidden_size=256,
                intermediate_size=688,
                num_hidden_layers=4,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=256,
                attn_implementation=TEXT_ATTENTION,
            ),
            "LlamaForCausalLM",
            128,
        ),
        _vision(
            "resnet-tiny",
            "ResNet, basic blocks 1-1, widths 8-16, 32x32 (tests)",
            _config(
                "ResNetConfig",
                embedding_size=8,
                hidden_sizes=[8, 16],
                depths=[1, 1],
                layer_type="basic",
                num_labels=10,
            ),
            "ResNetForImageClassification",
            32,
            default=False,
        ),
        _text(
            "gpt2-tiny",
            "GPT-2 language model, 2 layers, hidden 64, sequence 16 (tests)",
            _config(
                "GPT2Config",
                vocab_size=512,
                n_embd=64,
                n_layer=2,
                n_head=2,
                n_positions=32,
                bos_token_id=0,
                eos_token_id=0,
                attn_implementation=TEXT_ATTENTION,
            ),
            "GPT2LMHeadModel",
            16,
            default=False,
        ),
        ZooModel(
            "t5-tiny",
            "T5 encoder-decoder at the sweep's sizes (hidden 32, 2 layers), "
            "sequence 16, decoder 8 (tests)",
            functools.partial(small_config, "t5"),
            "T5Model",
            (1, 16),
            "last_hidden_state",
            default=False,
            decoder_seq=8,
        ),
    )
}
ZOO = {
    **{k: m for k, m in ZOO.items() if m.default},
    **{name: _arch(name, *spec) for name, *spec in ARCHS},
    **{k: m for k, m in ZOO.items() if not m.default},
}
"""Every zoo model by name: the hand-written models, the architectures at
``transformers``' defaults (``qidao/bench/zoo_archs.py``), then the tiny ones."""

DEFAULT_MODELS = tuple(name for name, m in ZOO.items() if m.default)
"""What ``qidao zoo`` runs with no names: every model but the tiny ones."""


def get_model(name: str, zoo: dict[str, ZooModel] | None = None) -> ZooModel:
    """Zoo model ``name``, or a ValueError listing the names."""
    zoo = ZOO if zoo is None else zoo
    if name not in zoo:
        raise ValueError(
            f"unknown zoo model '{name}'; the models are: {', '.join(zoo)}"
        )
    return zoo[name]


def _main_output_class() -> type[Any]:
    """:class:`MainOutput`, defined on first use so importing this module does not
    import torch."""
    import torch

    class MainOutput(torch.nn.Module):
        """``model(**dict(zip(input_names, inputs)))[output]``: one tensor out."""

        def __init__(
            self, model: torch.nn.Module, input_names: list[str], output: str
        ) -> None:
            super().__init__()
            self.model = model
            self.input_names = input_names
            self.output = output

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            feed = dict(zip(self.input_names, inputs, strict=True))
            out = self.model(**feed, return_dict=True)
            return out[self.output]  # type: ignore[no-any-return]

    return MainOutput


@functools.cache
def _build(model: ZooModel) -> Any:
    import torch
    import transformers

    torch.manual_seed(SEED)
    if model.model_class.startswith(OWN_PREFIX):
        from qidao.bench.zoo_vision import MODULES

        wrapped = MODULES[model.model_class.removeprefix(OWN_PREFIX)]()
        _calibrate_batch_norms(wrapped, model.inputs())
        return wrapped.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = getattr(transformers, model.model_class)(model.config())
    wrapped = _main_output_class()(net, model.input_names, model.output)
    _calibrate_batch_norms(wrapped, model.inputs())
    return wrapped.eval()


def _calibrate_batch_norms(net: Any, inputs: list[np.ndarray[Any, Any]]) -> None:
    """Give every BatchNorm an affine part near 1 and 0 (weight 1 + 0.1 N(0, 1),
    bias 0.1 N(0, 1)) and the statistics of its input on ``inputs``.

    transformers' initialization (weights N(0, 0.02), BatchNorm at mean 0,
    variance 1, some BatchNorm weights N(0, 0.02) too) shrinks the signal through
    a deep CNN to nothing: MobileNetV2's logits come out near 1e-22, EfficientNet's
    exactly 0, and a comparison with them checks nothing. Normalizing with the
    statistics each BatchNorm sees (one training-mode forward with momentum 1)
    keeps every layer's output near unit scale, as in a trained model. A model
    without BatchNorm is left as it is.
    """
    import torch

    norms = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not norms:
        return
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in norms:
            n = m.num_features
            m.weight.copy_(1.0 + 0.1 * torch.randn(n, generator=gen))
            m.bias.copy_(0.1 * torch.randn(n, generator=gen))
            m.momentum = 1.0  # the running statistics become this batch's
        net.train()
        net(*(torch.from_numpy(a) for a in inputs))
        net.eval()
    for m in norms:
        m.momentum = 0.1


def reference(model: ZooModel, inputs: list[np.ndarray[Any, Any]]) -> Any:
    """PyTorch eager's output on ``inputs`` (a NumPy array)."""
    import torch

    with torch.no_grad():  # not inference_mode: its tensors cannot be exported
        out = model.build()(*(torch.from_numpy(a) for a in inputs))
    return out.numpy()


def onnx_path(model: ZooModel) -> Path:
    """``model`` as an ONNX file (inputs ``model.input_names``, output ``y``), exported
    once into the temp dir and reused while the model (its parameters, structure,
    input shape) and torch's version are unchanged."""
    import torch

    net = model.build()
    inputs = model.inputs()
    shapes = [a.shape for a in inputs]
    digest = hashlib.sha256(f"{net}|{shapes}|{torch.__version__}".encode())
    for tensor in net.state_dict().values():
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    folder = Path(tempfile.gettempdir()) / "qidao-zoo"
    path = folder / f"{model.name}-opset{ONNX_OPSET}-{digest.hexdigest()[:16]}.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's deprecation notices
            torch.onnx.export(
                net,
                tuple(torch.from_numpy(a) for a in inputs),
                str(partial),
                dynamo=False,
                opset_version=ONNX_OPSET,
                input_names=model.input_names,
                output_names=["y"],
            )
        partial.replace(path)  # atomic: a concurrent reader sees all or nothing
    return path
