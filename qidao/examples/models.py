"""Built-in real models: a ResNet-style CNN and a transformer encoder block.

Both are plain PyTorch modules with fixed seeds, in eval mode, small enough that
compiling them takes seconds. The tests (``tests/compiler/test_real_models.py``) and
``qidao bench`` share them:

- ``resnet``: a 3x3 stem convolution, BatchNorm and ReLU, a 3x3 max pool, two basic
  residual blocks (the second with stride 2 and a 1x1 projection shortcut), global
  average pooling and a linear classifier, on a 1x3x64x64 image;
- ``encoder``: a pre-LayerNorm transformer encoder block, d_model 128, 4 heads,
  sequence 64: multi-head attention written with view/transpose/reshape, then a
  exact-GELU MLP (hidden 512), each with a residual add.

The bench workloads (``MODEL_EXAMPLES``) build the model as ONNX, exported with
PyTorch's TorchScript-based exporter (``dynamo=False``: the torch.export-based one
needs ``onnxscript``), so ``qidao`` and ``onnxruntime`` run the same file; their
reference is PyTorch eager.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from qidao.examples.base import Arrays, Example

ONNX_OPSET = 17
"""The opset the models are exported at (LayerNormalization exists from 17)."""

RESNET_INPUT = (1, 3, 64, 64)
ENCODER_SEQ, ENCODER_DIM, ENCODER_HEADS, ENCODER_HIDDEN = 64, 128, 4, 512
ENCODER_INPUT = (1, ENCODER_SEQ, ENCODER_DIM)


def _modules() -> tuple[type[Any], type[Any]]:
    """The two model classes, defined on first use so importing this module does
    not import torch."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        """conv3x3-BN-ReLU-conv3x3-BN, plus the shortcut, then ReLU."""

        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut: nn.Module = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self, width: int = 32, classes: int = 10) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, width, 3, 1, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(),
                nn.MaxPool2d(3, 2, 1),
            )
            self.block1 = BasicBlock(width, width, 1)
            self.block2 = BasicBlock(width, 2 * width, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2 * width, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.block2(self.block1(self.stem(x)))
            logits: torch.Tensor = self.fc(torch.flatten(self.pool(y), 1))
            return logits

    class Encoder(nn.Module):
        """x + attention(ln1(x)), then + mlp(ln2(x)), with pre-LayerNorm."""

        def __init__(self, dim: int, heads: int, hidden: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(dim)
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)
            self.v = nn.Linear(dim, dim)
            self.proj = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(
                nn.Linear(dim, hidden),
                nn.GELU(),  # exact: 0.5 x (1 + erf(x / sqrt 2))
                nn.Linear(hidden, dim),
            )

        def attention(self, x: torch.Tensor) -> torch.Tensor:
            batch, seq, dim = x.shape
            head = dim // self.heads

            def split(t: torch.Tensor) -> torch.Tensor:  # (B, S, D) -> (B, H, S, Dh)
                return t.view(batch, seq, self.heads, head).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(head))
            y = torch.softmax(scores, dim=-1) @ v  # (B, H, S, Dh)
            out: torch.Tensor = self.proj(y.transpose(1, 2).reshape(batch, seq, dim))
            return out

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.attention(self.ln1(x))
            out: torch.Tensor = x + self.mlp(self.ln2(x))
            return out

    return ResNet, Encoder


def _randomize_norms(model: Any, seed: int) -> None:
    """Non-trivial BatchNorm statistics and norm affine parameters, so folding them
    is tested (fresh modules have mean 0, variance 1, weight 1, bias 0)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                assert m.running_mean is not None and m.running_var is not None
                m.running_mean.copy_(0.1 * torch.randn(m.num_features, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.num_features, generator=gen))
            if isinstance(m, torch.nn.BatchNorm2d | torch.nn.LayerNorm):
                n = m.weight.shape[0]
                m.weight.copy_(1.0 + 0.1 * torch.randn(n, generator=gen))
                m.bias.copy_(0.1 * torch.randn(n, generator=gen))


@functools.cache
def resnet_model() -> Any:
    """The ResNet-style CNN (``torch.nn.Module``, eval mode, seed 0)."""
    import torch

    resnet, _ = _modules()
    torch.manual_seed(0)
    model = resnet()
    _randomize_norms(model, 1)
    return model.eval()


@functools.cache
def encoder_model() -> Any:
    """The transformer encoder block (``torch.nn.Module``, eval mode, seed 0)."""
    import torch

    _, encoder = _modules()
    torch.manual_seed(0)
    model = encoder(ENCODER_DIM, ENCODER_HEADS, ENCODER_HIDDEN)
    _randomize_norms(model, 1)
    return model.eval()


MODELS = {
    "resnet": (resnet_model, RESNET_INPUT),
    "encoder": (encoder_model, ENCODER_INPUT),
}
"""Model name -> (its constructor, its input shape)."""


def model_inputs(name: str, rng: np.random.Generator) -> Arrays:
    """Random float32 inputs for model ``name``."""
    _, shape = MODELS[name]
    return [rng.standard_normal(shape, dtype=np.float32)]


def export_onnx(model: Any, x: np.ndarray[Any, Any], path: Path) -> None:
    """Write ``model`` on input ``x`` (named ``x``, the output ``y``) to ``path`` as
    ONNX at ``ONNX_OPSET``, with the TorchScript-based exporter
    (``torch.onnx.export(dynamo=False)``): the default torch.export-based one needs
    the ``onnxscript`` package."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's deprecation notice
        torch.onnx.export(
            model,
            (torch.from_numpy(x),),
            str(path),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=["x"],
            output_names=["y"],
        )


def onnx_path(name: str) -> Path:
    """Model ``name`` as an ONNX file, exported once into the temp dir and reused
    while the model (its parameters, structure and input shape) is unchanged."""
    import torch

    build, shape = MODELS[name]
    model = build()
    digest = hashlib.sha256(f"{model}|{shape}|{torch.__version__}".encode())
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    folder = Path(tempfile.gettempdir()) / "qidao-models"
    path = folder / f"{name}-opset{ONNX_OPSET}-{digest.hexdigest()[:16]}.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        (x,) = model_inputs(name, np.random.default_rng(0))
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        export_onnx(model, x, partial)
        partial.replace(path)  # atomic: a concurrent reader sees all or nothing
    return path


def onnx_model(name: str) -> Any:
    """Model ``name`` as an ``onnx.ModelProto`` (see ``onnx_path``)."""
    import onnx

    return onnx.load(str(onnx_path(name)))


def _torch_call(name: str, x: Any) -> Any:
    import torch

    build, _ = MODELS[name]
    with torch.no_grad():
        return build()(x)


def _reference(name: str, *inputs: Any) -> Arrays:
    """PyTorch eager on the NumPy inputs: the models have no NumPy version."""
    import torch

    args = [torch.from_numpy(a) for a in inputs]
    return [_torch_call(name, *args).numpy()]


def _resnet_flops() -> int:
    """Multiply-adds (x2) of the convolutions and the linear layer."""
    n, c, h, w = RESNET_INPUT
    width = 32
    stem = 2 * c * width * 9 * h * w
    h, w = h // 2, w // 2  # max pool
    block1 = 2 * (2 * width * width * 9 * h * w)
    h, w = h // 2, w // 2  # stride 2
    block2 = 2 * width * (2 * width) * 9 * h * w + 2 * (2 * width) ** 2 * 9 * h * w
    shortcut = 2 * width * (2 * width) * h * w
    return n * (stem + block1 + block2 + shortcut) + 2 * (2 * width) * 10


def _encoder_flops() -> int:
    """Multiply-adds (x2) of the linear layers and the two attention matmuls."""
    s, d, f = ENCODER_SEQ, ENCODER_DIM, ENCODER_HIDDEN
    return 2 * (4 * s * d * d + 2 * s * s * d + 2 * s * d * f)


def _example(name: str, summary: str, flops: int) -> Example:
    return Example(
        name,
        summary,
        functools.partial(onnx_model, name),
        functools.partial(model_inputs, name),
        functools.partial(_reference, name),
        functools.partial(_torch_call, name),
        flops_per_call=flops,
        tolerance=(1e-4, 1e-3),
        onnx_path=functools.partial(onnx_path, name),
    )


MODEL_EXAMPLES: tuple[Example, ...] = (
    _example(
        "resnet",
        "ResNet-style CNN from PyTorch via ONNX: stem conv + 2 basic blocks + "
        "pool + fc, 1x3x64x64",
        _resnet_flops(),
    ),
    _example(
        "encoder",
        "transformer encoder block from PyTorch via ONNX: LayerNorm, 4-head "
        "attention, GELU MLP; 64x128",
        _encoder_flops(),
    ),
)
