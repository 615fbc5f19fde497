"""The architecture sweep's models: every ``transformers`` class it can build, small.

``qidao bench sweep`` (``qidao/bench/sweep.py``) takes the architectures from
``transformers``' auto mappings: per ``model_type``, the image-classification class
(vision), else the causal-LM class (decoders), else the base model class.
:func:`shrink` makes a config small by rules over its common fields (widths,
layers, heads, feed-forward sizes, vocabulary, positions, image size, audio
convolutions, experts), its sub-configs included, to a :class:`Sizes` (the
sweep's ``SWEEP``; the model zoo takes larger ones, ``qidao/bench/zoo_archs.py``);
``OVERRIDES`` holds the few per-architecture fields the rules do not get right
(and a backbone's chosen stages are reset). :func:`build` makes the model
from the small config (random weights from a fixed seed, eager attention, eval
mode), its example inputs by the model's main input name, and wraps it so that it
returns one tensor (``logits``, else ``last_hidden_state``, else the first tensor
of its output).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 0
"""The seed of every model's weights and inputs."""

SEQUENCE = 16
"""Tokens of a text input (``input_ids``)."""

DECODER_SEQUENCE = 8
"""Tokens of an encoder-decoder's ``decoder_input_ids``."""

AUDIO_SAMPLES = 3200
"""Samples of a raw-audio input (``input_values``): 10 frames at wav2vec2's
stride of 320."""

FEATURE_FRAMES = 64
"""Frames of a filter-bank input (``input_features``) whose length is free."""


@dataclass(frozen=True)
class Sizes:
    """What :func:`shrink` makes a config's sizes: the sweep's are ``SWEEP`` (as
    small as a model builds), the zoo's larger ones ``qidao/bench/zoo_archs.py``'s."""

    width: int = 32
    """The hidden size (and every other width field)."""
    heads: int = 2
    """Attention heads (head size ``width // heads``)."""
    layers: int = 2
    """Layers of each stack (encoder, decoder)."""
    vocab: int = 512
    positions: int = 128
    """Maximum positions of a text model."""
    source_positions: int = 32
    """Maximum positions of an audio encoder's features (Whisper's)."""
    image: int = 64
    """Image side."""
    patch: int = 8
    stages: tuple[int, int] = (16, 128)
    """A CNN's or hierarchical transformer's stage widths: the first, doubling
    up to the last."""


SWEEP = Sizes()
"""The sweep's sizes: every architecture, as small as it builds."""

WIDTH = SWEEP.width
"""The hidden size of every shrunk model."""

HEADS = SWEEP.heads
"""Attention heads (head size ``WIDTH // HEADS``)."""


def scalars(sizes: Sizes) -> dict[str, int]:
    """Integer fields and their small value: a field holding a larger int gets it."""
    return {
        **dict.fromkeys(
            (
                "hidden_size",
                "d_model",
                "n_embd",
                "embed_dim",
                "dim",
                "output_hidden_size",
                "projection_dim",
                "embedding_size",
                "codevector_dim",
                "proj_codevector_dim",
                "classifier_proj_size",
                "xvector_output_dim",
                "adapter_attn_dim",
                "codebook_dim",
                "word_embed_proj_dim",  # OPT's embeddings, projected to the width
                "conv_channels",  # Speech2Text's subsampling convolutions
            ),
            sizes.width,
        ),
        **dict.fromkeys(
            (
                "num_attention_heads",
                "n_head",
                "n_heads",
                "num_heads",
                "encoder_attention_heads",
                "decoder_attention_heads",
            ),
            sizes.heads,
        ),
        **dict.fromkeys(
            ("num_key_value_heads", "num_kv_heads", "multi_query_group_num"), 1
        ),
        **dict.fromkeys(("head_dim", "rotary_dim"), sizes.width // sizes.heads),
        **dict.fromkeys(("intra_bottleneck_size", "true_hidden_size"), sizes.width),
        **dict.fromkeys(
            (
                "num_hidden_layers",
                "n_layer",
                "n_layers",
                "num_layers",
                "encoder_layers",
                "decoder_layers",
                "num_encoder_layers",
                "num_decoder_layers",
            ),
            sizes.layers,
        ),
        **dict.fromkeys(
            (
                "intermediate_size",
                "ffn_dim",
                "encoder_ffn_dim",
                "decoder_ffn_dim",
                "n_inner",
                "d_ff",
                "hidden_dim",  # DistilBERT's feed-forward
            ),
            2 * sizes.width,
        ),
        **dict.fromkeys(
            (
                "moe_intermediate_size",
                "shared_expert_intermediate_size",
                "expert_intermediate_size",
            ),
            sizes.width,
        ),
        **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts"), 4),
        "num_experts_per_tok": 2,
        "n_shared_experts": 1,
        "vocab_size": sizes.vocab,
        **dict.fromkeys(
            (
                "max_position_embeddings",
                "n_positions",
                "n_ctx",
                "max_target_positions",
            ),
            sizes.positions,
        ),
        "max_source_positions": sizes.source_positions,
        "image_size": sizes.image,
        "patch_size": sizes.patch,
        "num_conv_pos_embeddings": 16,
        "num_conv_pos_embedding_groups": 2,
    }


SCALARS = scalars(SWEEP)
"""The sweep's integer fields and their small value."""

WIDTH_SUFFIX = "_hidden_size"
"""Another config's width named in this one (``audio_hidden_size``): the width
too, as that config's ``hidden_size`` is."""


def lists(sizes: Sizes) -> dict[str, Any]:
    """List fields (one entry per stage or layer) and their small value, by length."""
    first, last = sizes.stages

    def widths(n: int) -> list[int]:
        return [min(first * 2**i, last) for i in range(n)]

    return {
        "hidden_sizes": widths,
        "embed_dims": widths,
        "neck_hidden_sizes": widths,
        "depths": lambda n: [1] * n,
        "num_heads": lambda n: [2**i for i in range(n)],
        "num_attention_heads": lambda n: [2**i for i in range(n)],
        "conv_dim": lambda n: [sizes.width] * n,
        "tdnn_dim": lambda n: [sizes.width] * n,
    }


LAYER_COUNTS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers")

BACKBONE_STAGES = ("out_features", "out_indices")
"""A backbone's chosen stages (BEiT's ``stage12``): reset to its default, the
last stage, as the shrunk model has fewer."""
"""The fields whose count other per-layer lists (``layer_types``) follow."""

SWIN = {"patch_size": 2, "window_size": 4}
"""Swin's stages at 32, 16, 8 and 4 patches a side: the last one window wide."""

OVERRIDES: dict[str, dict[str, Any]] = {
    "swin": SWIN,
    "swinv2": SWIN,
    "bit": {"num_groups": 2},  # group norms over bottlenecks of 4 channels
    "levit": {"patch_size": 16},  # its stem downsamples 16x whatever the field says
    "esm": {"vocab_size": 33, "pad_token_id": 1, "mask_token_id": 32},  # ESM-2's
    "donut-swin": SWIN,
}
"""Per-architecture fields the rules do not get right, applied after them."""


def shrink(
    config: Mapping[str, Any], model_type: str = "", sizes: Sizes = SWEEP
) -> dict[str, Any]:
    """A copy of ``config`` (a config's ``to_dict()``) made small by
    ``scalars(sizes)``, ``WIDTH_SUFFIX``, ``lists(sizes)``, per-layer lists cut to
    the new layer count, its sub-configs (a dict with a ``model_type``) shrunk the
    same way, then ``OVERRIDES[model_type]``."""
    fields, per_stage = scalars(sizes), lists(sizes)
    small: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and "model_type" in value:
            small[key] = shrink(value, str(value["model_type"]), sizes)
        elif _is_int(value) and key in fields and value > fields[key]:
            small[key] = fields[key]
        elif _is_int(value) and key.endswith(WIDTH_SUFFIX) and value > sizes.width:
            small[key] = sizes.width
        elif isinstance(value, list | tuple) and key in per_stage and value:
            small[key] = per_stage[key](len(value))
        else:
            small[key] = value
    for key in BACKBONE_STAGES:  # a backbone's stages named in the old depth
        if small.get(key) is not None:
            small[key] = None
    layers = {k: config[k] for k in LAYER_COUNTS if _is_int(config.get(k))}
    for key, value in small.items():
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            for field, old in layers.items():
                if len(value) == old:
                    small[key] = value[: small[field]]
    for key, value in config.items():  # token ids inside the smaller vocabulary
        if (
            key.endswith("_token_id")
            and _is_int(value)
            and _is_int(small.get("vocab_size"))
        ):
            small[key] = value % small["vocab_size"]
    small.update(OVERRIDES.get(model_type, {}))
    return small


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


AUTO_CLASSES = (
    ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "AutoModelForImageClassification"),
    ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "AutoModelForCausalLM"),
    ("MODEL_MAPPING_NAMES", "AutoModel"),
)
"""The auto mappings the sweep takes classes from, and the auto class of each."""


def auto_class(model_type: str, class_name: str) -> Any:
    """The auto class whose mapping gives ``model_type`` the class ``class_name``:
    its ``from_config`` builds the model as ``transformers`` does (a composite
    config's text part for a causal LM, say)."""
    import transformers
    from transformers.models.auto import modeling_auto as auto

    for mapping, name in AUTO_CLASSES:
        found = getattr(auto, mapping).get(model_type)
        if found == class_name or (isinstance(found, tuple) and class_name in found):
            return getattr(transformers, name)
    raise ValueError(f"no auto mapping gives {model_type} the class {class_name}")


def architectures() -> dict[str, str]:
    """Every architecture the sweep tries: ``model_type`` -> the class it builds,
    sorted. The image-classification class, else the causal-LM class of a decoder
    (an architecture with a masked-LM or sequence-to-sequence class is an encoder
    or an encoder-decoder: its causal-LM class is a part of it), else the base
    model."""
    from transformers.models.auto import modeling_auto as auto

    not_decoders = {
        *auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        *auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        *auto.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
    }
    decoders = {
        t: c
        for t, c in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()
        if t not in not_decoders
    }
    found: dict[str, str] = {}
    for mapping in (
        auto.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
        decoders,
        auto.MODEL_MAPPING_NAMES,
    ):
        for model_type, name in mapping.items():
            found.setdefault(model_type, name if isinstance(name, str) else name[0])
    return dict(sorted(found.items()))


@dataclass
class Built:
    """A sweep model: ``net`` (one tensor out), its inputs, and which field of the
    ``transformers`` output it returns."""

    net: Any
    input_names: list[str]
    inputs: list[np.ndarray[Any, Any]]
    output: str


def small_config(model_type: str, sizes: Sizes = SWEEP) -> Any:
    """``model_type``'s default config, shrunk to ``sizes``, with eager attention."""
    from transformers import AutoConfig

    default = AutoConfig.for_model(model_type)
    config = type(default).from_dict(shrink(default.to_dict(), model_type, sizes))
    config._attn_implementation = "eager"
    return config


def build(model_type: str, class_name: str) -> Built:
    """``class_name`` from ``model_type``'s small config, in eval mode, wrapped to
    return one tensor, and its example inputs (seed ``SEED``).

    A decoder keeps its default ``use_cache``: with no cache and no attention
    mask, ``transformers`` looks for packed sequences in the position ids with
    ``torch.diff``, which the ONNX exporter does not know; the cache it returns
    is dropped with the other outputs."""
    import torch

    config = small_config(model_type)
    torch.manual_seed(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # where the auto mapping lists several classes it picks by this field,
        # which a default config leaves None (and transformers then fails)
        config.architectures = [class_name]
        model = auto_class(model_type, class_name).from_config(config).eval()
    names, inputs = example_inputs(model, config)
    kwargs = {"return_dict": True}  # the cache left on: see ``build``'s docstring
    with torch.no_grad():
        feed = dict(zip(names, map(torch.from_numpy, inputs), strict=True))
        out = model(**feed, **kwargs)
    net = _one_output_class()(model, names, _main_field(out), kwargs).eval()
    return Built(net, names, inputs, net.output)


def example_inputs(model: Any, config: Any) -> tuple[list[str], list[Any]]:
    """The inputs a model takes by its ``main_input_name`` (with
    ``decoder_input_ids`` for an encoder-decoder), as NumPy arrays; a ValueError
    for a main input with no rule here."""
    rng = np.random.default_rng(SEED)
    main = model.main_input_name
    if main == "input_ids":
        inputs = [_tokens(rng, config, SEQUENCE)]
    elif main == "pixel_values":
        channels = int(getattr(config, "num_channels", 3))
        size = getattr(config, "image_size", 64)
        h, w = (size, size) if isinstance(size, int) else tuple(size)
        inputs = [rng.standard_normal((1, channels, h, w), dtype=np.float32)]
    elif main == "input_values":
        inputs = [rng.standard_normal((1, AUDIO_SAMPLES), dtype=np.float32)]
    elif main == "input_features":
        inputs = [rng.standard_normal(_feature_shape(config), dtype=np.float32)]
    else:
        raise ValueError(
            f"{type(model).__name__}: no example input for its main input '{main}' "
            "(the sweep makes input_ids, pixel_values, input_values, input_features)"
        )
    names = [main]
    if getattr(config, "is_encoder_decoder", False):
        names.append("decoder_input_ids")
        inputs.append(_tokens(rng, config, DECODER_SEQUENCE))
    return names, inputs


def _tokens(rng: np.random.Generator, config: Any, length: int) -> Any:
    vocab: Any = getattr(config, "vocab_size", None) or getattr(
        getattr(config, "text_config", None), "vocab_size", 512
    )
    return rng.integers(0, int(vocab), (1, length), dtype=np.int64)


def _feature_shape(config: Any) -> tuple[int, int, int]:
    """``input_features``: Whisper's (1, mel bins, 2 x source positions), else
    (1, frames, features x channels) as Speech2Text's."""
    if hasattr(config, "num_mel_bins"):
        return (1, int(config.num_mel_bins), 2 * int(config.max_source_positions))
    per_channel: Any = getattr(config, "input_feat_per_channel", None)
    if per_channel is None:
        per_channel = getattr(config, "feature_size", 80)
    channels = int(getattr(config, "input_channels", 1))
    return (1, FEATURE_FRAMES, int(per_channel) * channels)


MAIN_FIELDS = ("logits", "last_hidden_state")
"""The output fields a wrapped model returns, in order of preference; else its
first tensor."""


def _main_field(out: Any) -> str:
    import torch

    keys = list(out.keys())
    for key in (*MAIN_FIELDS, *keys):
        if key in keys and isinstance(out[key], torch.Tensor):
            return str(key)
    raise ValueError(f"the model's output has no tensor (fields: {', '.join(keys)})")


def _one_output_class() -> type[Any]:
    """:class:`OneOutput`, defined on first use so importing this module does not
    import torch."""
    import torch

    class OneOutput(torch.nn.Module):
        """``model(**dict(zip(names, inputs)), **kwargs)[output]``."""

        def __init__(
            self,
            model: torch.nn.Module,
            names: list[str],
            output: str,
            kwargs: dict[str, Any],
        ) -> None:
            super().__init__()
            self.model = model
            self.names = names
            self.output = output
            self.kwargs = kwargs

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            out = self.model(
                **dict(zip(self.names, inputs, strict=True)), **self.kwargs
            )
            return out[self.output]  # type: ignore[no-any-return]

    return OneOutput
