"""``lift-conv1d`` end to end: a wav2vec2-style feature extractor (1-D
convolutions, a group norm with one group per channel written out, GELU, the
last output turned to ``[N, L, C]`` for a layer norm, a padded grouped positional
convolution whose trailing step is dropped, and SqueezeBERT's residual: a grouped
1x1 convolution plus its input, a layer norm's output seen as ``[N, C, L]``)
compiled from PyTorch and from its ONNX
export, against PyTorch; its convolutions and the ops between them must form one
NHWC chain (no copy back to NCL between two convolutions), and the model gives the
same answer with the pass disabled.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn = torch.nn


class FeatureExtractor(nn.Module):
    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.conv0 = nn.Conv1d(1, c, 10, stride=5, bias=False)
        self.scale = nn.Parameter(torch.rand(c) + 0.5)
        self.shift = nn.Parameter(torch.rand(c) - 0.5)
        self.convs = nn.ModuleList(
            nn.Conv1d(c, c, 3, stride=2, bias=False) for _ in range(2)
        )
        self.norm = nn.LayerNorm(c)
        self.pos = nn.Conv1d(c, c, 4, padding=2, groups=2)
        self.post = nn.Conv1d(c, c, 1, groups=4)
        self.norm2 = nn.LayerNorm(c)

    def forward(self, audio: Any) -> Any:
        x = self.conv0(audio[:, None])  # nn.GroupNorm(c, c) written out: the torch
        mean = x.mean(-1, keepdim=True)  # frontend lacks group_norm (issue 35)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        x = (x - mean) / torch.sqrt(var + 1e-5)
        x = nn.functional.gelu(x * self.scale[:, None] + self.shift[:, None])
        for conv in self.convs:
            x = nn.functional.gelu(conv(x))
        h = self.norm(x.transpose(1, 2))
        p = nn.functional.gelu(self.pos(h.transpose(1, 2))[:, :, :-1])
        t = h.transpose(1, 2)
        r = self.post(t) + t  # SqueezeBERT's residual: a layer norm's output as NCL
        return self.norm2(r.transpose(1, 2)) + p.transpose(1, 2)


def _model() -> Any:
    torch.manual_seed(0)
    return FeatureExtractor().eval()


def _export(model: Any, x: Any, path: Path) -> Path:
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), str(path), dynamo=False, opset_version=17,
            input_names=["audio"], output_names=["y"],
        )  # fmt: skip
    return path


def _feature_convolutions(tg_ir: str) -> list[str]:
    """The tg op names from the first convolution to the third (the last of the
    feature extractor, before the layer norm and the positional one)."""
    names = [line.split(" = ", 1)[1].split(" ")[0] for line in tg_ir.splitlines()
             if " = tg." in line]  # fmt: skip
    convs = [i for i, name in enumerate(names) if name == "tg.conv2d"]
    return names[convs[0] : convs[2] + 1]


@pytest.mark.parametrize("frontend", ["onnx", "torch"])
def test_the_feature_extractor_is_one_nhwc_chain_and_matches(
    frontend: str, tmp_path: Path
) -> None:
    model = _model()
    audio = torch.randn(1, 400, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(audio).numpy()
    source: Any = model
    options: dict[str, Any] = {"example_inputs": (audio,)}
    if frontend == "onnx":
        source, options = _export(model, audio, tmp_path / "m.onnx"), {}
    # the ONNX model also without the pass: the same answer, and the copies back
    # to NCL between the convolutions that the pass removes
    for disable in ([], ["lift-conv1d"])[: 2 if frontend == "onnx" else 1]:
        compiled = qidao.compile(source, threads=1, disable=disable, **options)
        got = compiled(audio.numpy() if frontend == "onnx" else audio)
        got = np.asarray(got[0] if isinstance(got, list | tuple) else got)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        between = _feature_convolutions(compiled.ir("tg"))
        if disable:
            assert "tg.contiguous" in between, between
        else:
            assert "tg.contiguous" not in between, between
            assert "tg.reshape" not in between, between
