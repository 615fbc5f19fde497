"""``layout`` on small CNNs with global pooling (issue 11), end to end against PyTorch.

A DenseNet-style net (conv-BN-ReLU layers, ``torch.cat``, a global average pool and a
1x1 conv as the classifier, with the usual squeeze/flatten endings) and a
squeeze-and-excitation block (pool -> 1x1 conv -> ReLU -> 1x1 conv -> sigmoid -> mul
with the feature map, as in RegNet-Y) at batch 1: the pooled ``[1, C, 1, 1]`` feature
map used to be taken for a per-channel bias and viewed to ``[C]``, and ``layout``
crashed building an NHWC conv on it. Each model is compiled from PyTorch directly
and from its ONNX export; the pooled convs must run NHWC and the result match.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn = torch.nn

POOLED_NHWC_CONV = re.compile(
    r'tg\.conv2d .*layout = "NHWC" (\{qd\.algo = "[^"]*"\} )?: \(tensor<1x1x1x\d+xf32'
)
"""An NHWC conv whose input is a pooled [1, 1, 1, C] feature map."""


class ConvBnRelu(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int = 3) -> None:
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(),
        )


class DenseNetLike(nn.Module):
    """Two dense layers (each concatenated to its input), a transition, a global
    average pool and a 1x1 conv classifier; ``ending`` is how the logits come out."""

    def __init__(self, ending: str) -> None:
        super().__init__()
        self.ending = ending
        self.stem = ConvBnRelu(3, 8)
        self.dense1 = ConvBnRelu(8, 4)
        self.dense2 = ConvBnRelu(12, 4)
        self.transition = ConvBnRelu(16, 16, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Conv2d(16, 10, 1)

    def forward(self, x: Any) -> Any:
        x = self.stem(x)
        x = torch.cat([x, self.dense1(x)], 1)
        x = torch.cat([x, self.dense2(x)], 1)
        x = self.pool(self.transition(x))
        if self.ending == "flatten_first":  # [1, C] and back to [1, C, 1, 1]
            x = x.flatten(1)[:, :, None, None]
        y = self.classifier(x)
        if self.ending == "squeeze":
            return y.squeeze(-1).squeeze(-1)
        if self.ending == "flatten":
            return torch.flatten(y, 1)
        return y


class SqueezeExcitation(nn.Module):
    """A conv, then its feature map scaled by a squeeze-and-excitation gate."""

    def __init__(self, c: int = 16, squeezed: int = 4) -> None:
        super().__init__()
        self.stem = ConvBnRelu(3, c)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(c, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, c, 1)
        self.head = nn.Conv2d(c, 8, 3, padding=1)

    def forward(self, x: Any) -> Any:
        x = self.stem(x)
        gate = torch.sigmoid(self.expand(torch.relu(self.reduce(self.pool(x)))))
        return self.head(x * gate)


MODELS = {
    "densenet": lambda: DenseNetLike("conv"),
    "densenet-squeeze": lambda: DenseNetLike("squeeze"),
    "densenet-flatten": lambda: DenseNetLike("flatten"),
    "densenet-flatten-first": lambda: DenseNetLike("flatten_first"),
    "squeeze-excitation": SqueezeExcitation,
}


def build(name: str) -> Any:
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    with torch.no_grad():  # batch norms that do something
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


def export_onnx(model: Any, x: Any, path: Path) -> Path:
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (x,),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["x"],
            output_names=["y"],
        )
    return path


CASES = [(name, "onnx") for name in MODELS] + [
    ("densenet-flatten", "torch"),
    ("squeeze-excitation", "torch"),
]
"""Every model from its ONNX export (how the issue was met); two through the torch
frontend, which makes the same ``tg.reduce_mean`` of ``AdaptiveAvgPool2d(1)``."""


@pytest.mark.parametrize(("name", "frontend"), CASES)
def test_pooled_convs_run_nhwc_and_match_pytorch(
    name: str, frontend: str, tmp_path: Path
) -> None:
    model = build(name)
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x).numpy()
    if frontend == "torch":
        compiled = qidao.compile(model, example_inputs=(x,), threads=1)
        result = compiled(x)
    else:
        compiled = qidao.compile(export_onnx(model, x, tmp_path / "m.onnx"), threads=1)
        result = compiled(x.numpy())
    got = np.asarray(result[0] if isinstance(result, list | tuple) else result)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)
    assert POOLED_NHWC_CONV.search(compiled.ir("tg")), "the pooled conv is not NHWC"
