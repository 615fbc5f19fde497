"""The models of ``qidao bench quant`` (``qidao/bench/quant.py``) and their
quantized files: how each model is quantized, where the quantized file is cached,
and the tolerances qidao's int8 output is checked within.

The models (:data:`MODELS`):

- ``cnn``: the zoo's ``resnet50`` (224x224, BatchNorm folded into the convolutions
  by the exporter), quantized with ``quantize_static`` in QDQ format:
  ``QuantizeLinear``/``DequantizeLinear`` around float ``Conv``/``Gemm``, weights
  QInt8 per output channel, activations QUInt8 (U8S8,
  :data:`STATIC_ACTIVATIONS`), calibrated (MinMax) on :data:`CALIBRATION_INPUTS`
  random inputs of seed :data:`CALIBRATION_SEED` (not the timed input's seed).
  ONNX Runtime's quantization guide names S8S8 in QDQ its default, "the first
  choice", and U8S8 the format its x86 kernels are fast in (``VPMADDUBSW``, whose
  16-bit sums can saturate on AVX2 and AVX-512 without VNNI; VNNI's
  ``VPDPBUSD`` sums in 32 bits). x86's int8 dot products take unsigned times
  signed bytes, and it shows: with S8S8 ONNX Runtime 1.32 fused only 33 of
  ResNet-50's 53 convolutions into ``QLinearConv`` (each block's first 1x1 and the
  shortcuts stayed float ``Conv`` between ``DequantizeLinear`` and
  ``QuantizeLinear``) and ran in 47 ms, against 19 ms with U8S8, all 53 fused (one
  thread, an AVX-512 VNNI Xeon; fp32: 56 ms). The benchmark is the bar for qidao's
  int8 kernels, so it takes ONNX Runtime's fast CPU format. Its asymmetric MinMax
  grid is S8S8's shifted by 128: the dequantized values, and qidao's output, are
  the same in both. On a CPU without VNNI, ONNX Runtime's sums may saturate
  where qidao's are exact: the int8 check is where that would show;
- ``bert``: the zoo's ``bert`` (4 layers, hidden 256, sequence 128), quantized with
  ``quantize_dynamic``, weights QInt8 (per tensor): ``DynamicQuantizeLinear`` of
  each activation at run time and ``MatMulInteger`` (the embeddings' ``Gather``
  gets a ``DequantizeLinear``);
- ``resnet-tiny`` (static) and ``gpt2-tiny`` (dynamic): the zoo's tiny models, for
  the tests and a quick check; not in the default list.

No ``quant_pre_process`` (shape inference and ONNX Runtime's optimizations before
quantizing): the exported graphs have shapes and no BatchNorm to fold. The
quantized file is cached next to the zoo's export in the temp dir, named by the
float file and the settings (:func:`quantized_path`), written atomically, and
checked (``onnx.load`` and ``onnx.checker``) before each use: a corrupt one is
quantized again.

The int8 tolerances (:func:`int8_tolerance`): the ``qidao-int8`` job checks
qidao's output against ONNX Runtime's on the same quantized file within

- dynamic: :data:`DYNAMIC_RTOL` (5e-3) of the largest magnitude of ONNX
  Runtime's int8 output. On a small MLP qidao is ONNX Runtime bit for bit
  (``tests/frontend/onnx/test_quantized_models.py``); on BERT the float parts
  (softmax, LayerNorm, erf, the fused scale products) round differently, and an
  activation that lands on a rounding tie of ``DynamicQuantizeLinear`` moves a
  whole step and spreads through LayerNorm to every element. Measured: qidao vs
  ONNX Runtime 2.6e-3 of the largest magnitude, ONNX Runtime's own fused vs
  unfused execution 2.5e-3, the quantization itself (int8 vs the float model)
  9.4e-3; 5e-3 passes the first two and fails an int8 path that computed the
  float model instead;
- static (QDQ): :data:`STATIC_STEPS` (12) quantization steps of the output (the
  scale of the ``DequantizeLinear`` that makes it, :func:`output_step`). A
  one-step flip of an intermediate activation (a float sum within rounding of a
  tie, summed in another order) is passed on and grows at each residual ``Add``:
  on ResNet-50 ONNX Runtime's own fused and unfused executions differ by up to 8
  steps (mean 1.8), qidao and ONNX Runtime by 9 (mean 2.2), and ONNX Runtime's
  int8 and the float model by 20 (mean 4.7), the quantization itself: 12 passes
  the first two and fails an int8 path that computed the float model instead.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.jobs import Mismatch
from qidao.bench.zoo_models import ZooModel, get_model, onnx_path

SCHEMES = ("static", "dynamic")
"""``quantize_static`` (QDQ, calibrated) or ``quantize_dynamic``."""

CALIBRATION_INPUTS = 4
"""Random inputs ``quantize_static`` calibrates on."""

CALIBRATION_SEED = 1
"""Their seed (the timed input's is the zoo's, 0)."""

STATIC_ACTIVATIONS = "QUInt8"
"""``quantize_static``'s activation type (``QuantType`` by name): U8S8 with the
QInt8 weights (module docstring)."""

DYNAMIC_RTOL = 5e-3
"""A dynamic model's int8 tolerance: this fraction of the largest magnitude of
ONNX Runtime's int8 output (module docstring)."""

STATIC_STEPS = 12
"""A static (QDQ) model's int8 tolerance in quantization steps of the output
(module docstring)."""


@dataclass(frozen=True)
class QuantModel:
    """A model of the benchmark: a zoo model and how it is quantized."""

    name: str
    zoo: str
    """The zoo model (``qidao/bench/zoo_models.py``)."""
    scheme: str
    """``static`` or ``dynamic``."""
    default: bool = True
    """Whether ``qidao bench quant`` with no names runs it."""

    @property
    def settings(self) -> str:
        """The quantization settings, as the cached file's name records them."""
        if self.scheme == "static":
            return (
                f"qdq-a:{STATIC_ACTIVATIONS.lower()}-w:qint8-per-channel-minmax-"
                f"cal{CALIBRATION_INPUTS}-seed{CALIBRATION_SEED}"
            )
        return "dynamic-w:qint8"


MODELS: dict[str, QuantModel] = {
    m.name: m
    for m in (
        QuantModel("cnn", "resnet50", "static"),
        QuantModel("bert", "bert", "dynamic"),
        QuantModel("resnet-tiny", "resnet-tiny", "static", default=False),
        QuantModel("gpt2-tiny", "gpt2-tiny", "dynamic", default=False),
    )
}
"""Every model by name."""

DEFAULT_MODELS = tuple(name for name, m in MODELS.items() if m.default)
"""What ``qidao bench quant`` runs with no names."""


def get_quant_model(name: str) -> QuantModel:
    """Model ``name``, or a ValueError listing the names."""
    if name not in MODELS:
        raise ValueError(
            f"unknown quant model '{name}'; the models are: {', '.join(MODELS)}"
        )
    return MODELS[name]


# -- the quantized files ------------------------------------------------------


def quantized_path(model: QuantModel) -> Path:
    """``model``'s quantized ONNX file: next to the zoo's float export, named by
    it and the settings (and ONNX Runtime's version, whose quantizer made it);
    made once, atomically, and made again when the file there does not load or
    does not pass ``onnx.checker``."""
    import onnxruntime

    zoo = get_model(model.zoo)
    source = onnx_path(zoo)
    key = f"{source.name}|{model.scheme}|{model.settings}|{onnxruntime.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    path = source.with_name(f"{source.stem}-{model.scheme}-int8-{digest}.onnx")
    if path.exists() and valid_model(path):
        return path
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        _quantize(model, zoo, source, partial)
        if not valid_model(partial):
            raise RuntimeError(f"the quantizer wrote an invalid model for {path.name}")
        partial.replace(path)  # atomic: a concurrent reader sees all or nothing
    finally:
        partial.unlink(missing_ok=True)
    return path


def valid_model(path: Path) -> bool:
    """Whether ``path`` loads as an ONNX model that ``onnx.checker`` accepts."""
    import onnx

    try:
        onnx.checker.check_model(onnx.load(str(path)))
    except Exception:
        return False
    return True


def _quantize(model: QuantModel, zoo: ZooModel, source: Path, out: Path) -> None:
    from onnxruntime import quantization as q

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer's "consider pre-processing" notes
    try:
        if model.scheme == "static":
            q.quantize_static(
                str(source),
                str(out),
                _calibration_reader(zoo),
                quant_format=q.QuantFormat.QDQ,
                activation_type=getattr(q.QuantType, STATIC_ACTIVATIONS),
                weight_type=q.QuantType.QInt8,
                per_channel=True,
                calibrate_method=q.CalibrationMethod.MinMax,
            )
        else:
            q.quantize_dynamic(str(source), str(out), weight_type=q.QuantType.QInt8)
    finally:
        root.setLevel(level)


def calibration_inputs(zoo: ZooModel) -> list[dict[str, np.ndarray[Any, Any]]]:
    """:data:`CALIBRATION_INPUTS` feeds of ``zoo``'s inputs, drawn as the zoo draws
    them (token ids below the vocabulary, else standard normal) from seed
    :data:`CALIBRATION_SEED`."""
    rng = np.random.default_rng(CALIBRATION_SEED)
    vocab = getattr(zoo.config(), "vocab_size", 0)
    feeds = []
    for _ in range(CALIBRATION_INPUTS):
        feed = {}
        for name, example in zip(zoo.input_names, zoo.inputs(), strict=True):
            if example.dtype.kind in "iu":
                feed[name] = rng.integers(0, vocab, example.shape, dtype=example.dtype)
            else:
                feed[name] = rng.standard_normal(example.shape).astype(example.dtype)
        feeds.append(feed)
    return feeds


def _calibration_reader(zoo: ZooModel) -> Any:
    """A ``CalibrationDataReader`` over :func:`calibration_inputs`."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.feeds = iter(calibration_inputs(zoo))

        def get_next(self) -> dict[str, np.ndarray[Any, Any]] | None:
            return next(self.feeds, None)

    return Reader()


def output_step(path: Path) -> float:
    """The quantization step of ``path``'s first output: the scale of the
    ``DequantizeLinear`` that makes it, when it is one number; else NaN."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path), load_external_data=False).graph
    maker = {o: n for n in graph.node for o in n.output}.get(graph.output[0].name)
    if maker is None or maker.op_type != "DequantizeLinear":
        return math.nan
    constants = {t.name: t for t in graph.initializer}
    constants.update(
        {
            n.output[0]: a.t
            for n in graph.node
            if n.op_type == "Constant"
            for a in n.attribute
            if a.name == "value"
        }
    )
    scale = constants.get(maker.input[1])
    if scale is None:
        return math.nan
    values = numpy_helper.to_array(scale)
    return float(values.reshape(-1)[0]) if values.size == 1 else math.nan


def int8_tolerance(scheme: str, want: np.ndarray[Any, Any], step: float) -> float:
    """The absolute tolerance of qidao's int8 output against ONNX Runtime's
    ``want``: :data:`STATIC_STEPS` steps of a static model's output (its step
    known), else :data:`DYNAMIC_RTOL` of ``want``'s largest magnitude."""
    if scheme == "static" and math.isfinite(step):
        return STATIC_STEPS * step
    return DYNAMIC_RTOL * largest(want)


def largest(a: np.ndarray[Any, Any]) -> float:
    """The largest magnitude of ``a`` (0 for an empty one)."""
    return float(np.max(np.abs(a), initial=0.0))


def max_error(got: Any, want: np.ndarray[Any, Any]) -> float:
    """``max |got - want|`` in float64; a shape mismatch is a :class:`Mismatch`."""
    got = np.asarray(got)
    if got.shape != want.shape:
        raise Mismatch(f"output shape {got.shape}, the reference's is {want.shape}")
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return float(np.max(np.nan_to_num(diff, nan=np.inf), initial=0.0))


def check_close(
    got: Any, want: np.ndarray[Any, Any], atol: float, rtol: float, against: str
) -> float:
    """The largest error of ``got`` against ``want`` (``against`` names it), or a
    :class:`Mismatch` when an element is off by more than ``atol + rtol |want|``."""
    err = max_error(got, want)
    got = np.asarray(got)
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        diff = np.nan_to_num(np.abs(got.astype(np.float64) - want), nan=np.inf)
        worst = np.unravel_index(int(np.argmax(diff)), want.shape)
        raise Mismatch(
            f"differs from {against} at {tuple(int(i) for i in worst)}: got "
            f"{got[worst]:.6g}, expected {want[worst]:.6g} (max error {err:.3g}, "
            f"atol {atol:.3g}, rtol {rtol:g}; {int(bad.sum())} of {want.size} "
            "elements differ)"
        )
    return err
