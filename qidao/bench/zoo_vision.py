"""Two classic small CNNs that ``transformers`` does not have, written out as
torchvision lays them out (its PyPI wheel is a CUDA build that does not load with
the CPU torch here): SqueezeNet 1.1 (Iandola et al. 2016) and ShuffleNet V2 1.0x
(Ma et al. 2018). They stress what the larger models do not: SqueezeNet's fire
modules concatenate a 1x1 and a 3x3 expansion along channels and pool with
``ceil_mode``; ShuffleNet's units split the channels in two, run a depthwise
convolution on one half, concatenate and *shuffle* the channels (a reshape, a
transpose of a 2-wide axis, a reshape), 16 times.

Both take ``pixel_values`` ``[N, 3, 224, 224]`` and return the 1000 logits; the
zoo builds them with ``torch.manual_seed`` like every other model.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class Fire(nn.Module):
    """squeeze 1x1 -> ReLU -> (expand 1x1 | expand 3x3) -> ReLU, concatenated."""

    def __init__(self, inplanes: int, squeeze: int, expand1: int, expand3: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, expand1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, expand3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.squeeze(x))
        return torch.cat(
            [torch.relu(self.expand1x1(x)), torch.relu(self.expand3x3(x))], 1
        )


class SqueezeNet(nn.Module):
    """SqueezeNet 1.1: 1.2M parameters, 0.35 GFLOPs at 224x224."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2),
            nn.ReLU(),
            pool,
            Fire(64, 16, 64, 64),
            Fire(128, 16, 64, 64),
            pool,
            Fire(128, 32, 128, 128),
            Fire(256, 32, 128, 128),
            pool,
            Fire(256, 48, 192, 192),
            Fire(384, 48, 192, 192),
            Fire(384, 64, 256, 256),
            Fire(512, 64, 256, 256),
        )
        self.classifier = nn.Sequential(
            nn.Conv2d(512, num_classes, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1)
        )

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.classifier(self.features(pixel_values)), 1)


def _conv_bn(cin: int, cout: int, kernel: int, stride: int, groups: int = 1) -> Any:
    return [
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(n, c, h, w)


class ShuffleUnit(nn.Module):
    """ShuffleNet V2's unit: stride 1 splits the channels (one half passes
    through), stride 2 runs both branches on the whole input; the halves are
    concatenated and shuffled."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        half = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                *_conv_bn(cin, cin, 3, stride, groups=cin),
                *_conv_bn(cin, half, 1, 1),
                nn.ReLU(),
            )
        into = cin if stride > 1 else half
        self.branch2 = nn.Sequential(
            *_conv_bn(into, half, 1, 1),
            nn.ReLU(),
            *_conv_bn(half, half, 3, stride, groups=half),
            *_conv_bn(half, half, 1, 1),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNet V2 1.0x: stages of 4, 8 and 4 units, 116/232/464 channels,
    2.3M parameters, 0.15 GFLOPs at 224x224."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        widths, repeats = [24, 116, 232, 464, 1024], [4, 8, 4]
        self.conv1 = nn.Sequential(*_conv_bn(3, widths[0], 3, 2), nn.ReLU())
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages: list[nn.Module] = []
        cin = widths[0]
        for cout, count in zip(widths[1:4], repeats, strict=True):
            units = [ShuffleUnit(cin, cout, 2)]
            units += [ShuffleUnit(cout, cout, 1) for _ in range(count - 1)]
            stages.append(nn.Sequential(*units))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.conv5 = nn.Sequential(*_conv_bn(cin, widths[4], 1, 1), nn.ReLU())
        self.fc = nn.Linear(widths[4], num_classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.maxpool(self.conv1(pixel_values)))
        pooled: torch.Tensor = self.conv5(x).mean([2, 3])
        logits: torch.Tensor = self.fc(pooled)
        return logits


MODULES = {"SqueezeNet": SqueezeNet, "ShuffleNetV2": ShuffleNetV2}
"""The classes by the name a ``ZooModel``'s ``model_class`` gives
(``qidao/bench/zoo_models.py``)."""
