"""The zoo's architectures built from ``transformers``' own default configs.

Beside the hand-written entries of ``qidao/bench/zoo_models.py`` (ResNet-50 as
published, the text models at fixed sizes), the zoo takes these architectures as
``transformers`` defines them, every field at its default but the sizes, which
:func:`qidao.bench.sweep_configs.shrink` sets to :data:`ZOO_SIZES` (the same rules
the architecture sweep uses, at sizes a benchmark can tell apart from call
overhead): hidden 256, 4 heads, 2 layers per stack, sequences of 128 tokens,
128x128 images, one second of 16 kHz audio.

Each entry is ``(name, model type, class, input)``; the input is one of
:data:`INPUTS`.
"""

from __future__ import annotations

from qidao.bench.sweep_configs import Sizes

ZOO_SIZES = Sizes(
    width=256,
    heads=4,
    layers=2,
    vocab=8192,
    positions=512,
    source_positions=128,
    image=128,
    patch=16,
    stages=(32, 256),
)
"""Sizes of the architectures below (``shrink``'s rules, larger than the sweep's)."""

TEXT_SEQ = 128
DECODER_SEQ = 32
AUDIO_SAMPLES = 16_000
"""One second of 16 kHz audio (``input_values``)."""

INPUTS: dict[str, tuple[str, tuple[int, ...], int]] = {
    "text": ("input_ids", (1, TEXT_SEQ), 0),
    "text2text": ("input_ids", (1, TEXT_SEQ), DECODER_SEQ),
    "image": ("pixel_values", (1, 3, ZOO_SIZES.image, ZOO_SIZES.image), 0),
    "audio": ("input_values", (1, AUDIO_SAMPLES), 0),
    "whisper": ("input_features", (1, 80, 2 * ZOO_SIZES.source_positions), DECODER_SEQ),
    "filterbank": ("input_features", (1, 2 * TEXT_SEQ, 80), DECODER_SEQ),
}
"""An input kind: the main input's name and shape, and the length of
``decoder_input_ids`` (0: the model has no decoder input). Whisper's features
are 80 mel bins by twice its source positions; Speech2Text's 256 frames of 80."""

ARCHS: tuple[tuple[str, str, str, str], ...] = (
    # text encoders (output: last_hidden_state)
    ("roberta", "roberta", "RobertaModel", "text"),
    ("xlm-roberta", "xlm-roberta", "XLMRobertaModel", "text"),
    ("electra", "electra", "ElectraModel", "text"),
    ("albert", "albert", "AlbertModel", "text"),
    ("mpnet", "mpnet", "MPNetModel", "text"),
    ("distilbert", "distilbert", "DistilBertModel", "text"),
    ("deberta-v2", "deberta-v2", "DebertaV2Model", "text"),
    ("convbert", "convbert", "ConvBertModel", "text"),
    ("squeezebert", "squeezebert", "SqueezeBertModel", "text"),
    ("roformer", "roformer", "RoFormerModel", "text"),
    # decoders (output: logits)
    ("bloom", "bloom", "BloomForCausalLM", "text"),
    ("opt", "opt", "OPTForCausalLM", "text"),
    ("mistral", "mistral", "MistralForCausalLM", "text"),
    ("qwen2", "qwen2", "Qwen2ForCausalLM", "text"),
    ("qwen3", "qwen3", "Qwen3ForCausalLM", "text"),
    ("gpt-neo", "gpt_neo", "GPTNeoForCausalLM", "text"),
    ("gpt-neox", "gpt_neox", "GPTNeoXForCausalLM", "text"),
    ("phi", "phi", "PhiForCausalLM", "text"),
    ("gemma", "gemma", "GemmaForCausalLM", "text"),
    ("falcon", "falcon", "FalconForCausalLM", "text"),
    ("stablelm", "stablelm", "StableLmForCausalLM", "text"),
    ("starcoder2", "starcoder2", "Starcoder2ForCausalLM", "text"),
    # encoder-decoders (output: the decoder's last_hidden_state)
    ("t5", "t5", "T5Model", "text2text"),
    ("bart", "bart", "BartModel", "text2text"),
    ("marian", "marian", "MarianModel", "text2text"),
    ("whisper", "whisper", "WhisperModel", "whisper"),
    ("speech2text", "speech_to_text", "Speech2TextModel", "filterbank"),
    # audio encoders (output: last_hidden_state)
    ("wav2vec2", "wav2vec2", "Wav2Vec2Model", "audio"),
    ("hubert", "hubert", "HubertModel", "audio"),
    ("wavlm", "wavlm", "WavLMModel", "audio"),
    # vision (output: logits)
    ("mobilevit", "mobilevit", "MobileViTForImageClassification", "image"),
    ("focalnet", "focalnet", "FocalNetForImageClassification", "image"),
    ("poolformer", "poolformer", "PoolFormerForImageClassification", "image"),
    ("segformer", "segformer", "SegformerForImageClassification", "image"),
    ("convnextv2", "convnextv2", "ConvNextV2ForImageClassification", "image"),
    ("mobilenet_v1", "mobilenet_v1", "MobileNetV1ForImageClassification", "image"),
    ("cvt", "cvt", "CvtForImageClassification", "image"),
)
"""The architectures taken at their default configs: name, ``transformers`` model
type, class, input kind (:data:`INPUTS`)."""
