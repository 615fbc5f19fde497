"""The training workloads: each a builder graph ending in its loss, the same model in
PyTorch, and the weights of one written as the inputs of the other.

``TRAIN_MODELS[name]`` is a :class:`TrainModel`: ``graph()`` builds the tg graph whose
inputs are the data (``x``, ``labels``: one-hot rows), then every weight by its
PyTorch name, and whose output is the mean cross-entropy; ``torch_model()`` is the
PyTorch module (seeded); ``weights(module)`` reads its parameters as the graph's
weight inputs; ``data(rng)`` draws a batch. ``qidao bench train`` and the tests
compare a compiled training step with PyTorch's on the same weights and data.

- ``mlp``: 784 → 1024 → 1024 → 10 with ReLU, batch 256.
- ``cnn``: three conv3x3-BN-ReLU blocks (16, 32, 64 channels; the second and third
  with stride 2), batch norm in training mode (batch statistics), global average
  pool, a linear classifier; 32×32 RGB inputs, batch 32.
- ``encoder``: two post-norm transformer encoder layers (hidden 256, 4 heads, GELU
  feed-forward 1024, no dropout), seq 128, batch 8, mean-pooled into a 10-way
  classifier: ``torch.nn.TransformerEncoderLayer(..., activation="gelu",
  batch_first=True, dropout=0)``.

``tiny=True`` shrinks each (fewer units, a smaller batch) for the tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]
CLASSES = 10


@dataclass(frozen=True)
class TrainModel:
    """One training workload (see the module docstring)."""

    name: str
    graph: Callable[[], Graph]
    torch_model: Callable[[], Any]
    data: Callable[[np.random.Generator], tuple[Array, Array]]
    summary: str

    def weights(self, module: Any) -> dict[str, Array]:
        """``module``'s parameters by name, as the graph's weight inputs."""
        return {
            name: p.detach().numpy().copy() for name, p in module.named_parameters()
        }

    def torch_loss(self, module: Any, x: Any, labels: Any) -> Any:
        """The mean cross-entropy of ``module`` on a batch (labels one-hot)."""
        import torch

        return torch.nn.functional.cross_entropy(module(x), labels.argmax(1))


def cross_entropy(g: Graph, logits: Value, onehot: Value) -> Value:
    """Mean cross-entropy of ``logits`` [N, C] against one-hot rows: a stable
    log-softmax (the row maximum subtracted) of the builder's ops."""
    z = logits - g.reduce_max(logits, [1], keepdims=True)
    logp = z - g.log(g.reduce_sum(g.exp(z), [1], keepdims=True))
    return g.reduce_mean(-g.reduce_sum(logp * onehot, [1]), [0])


def linear(g: Graph, x: Value, prefix: str, fan_in: int, fan_out: int) -> Value:
    """``x @ W^T + b`` with PyTorch's ``nn.Linear`` weights as inputs."""
    w = g.input(f"{prefix}.weight", (fan_out, fan_in))
    b = g.input(f"{prefix}.bias", (fan_out,))
    return x @ g.transpose(w) + b


# --- mlp ---------------------------------------------------------------------------


def _mlp(sizes: tuple[int, ...], batch: int) -> TrainModel:
    def graph() -> Graph:
        g = Graph("main")
        h = g.input("x", (batch, sizes[0]))
        labels = g.input("labels", (batch, CLASSES))
        for k, (a, b) in enumerate(zip(sizes, (*sizes[1:], CLASSES), strict=True)):
            h = linear(g, h, f"{2 * k}", a, b)
            if k < len(sizes) - 1:
                h = g.relu(h)
        g.output(cross_entropy(g, h, labels))
        return g

    def torch_model() -> Any:
        import torch

        torch.manual_seed(0)
        layers: list[Any] = []
        for a, b in zip(sizes, (*sizes[1:], CLASSES), strict=True):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers[:-1])

    def data(rng: np.random.Generator) -> tuple[Array, Array]:
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        return x, np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]

    shape = " → ".join(str(s) for s in (*sizes, CLASSES))
    return TrainModel("mlp", graph, torch_model, data, f"MLP {shape}, batch {batch}")


# --- cnn ---------------------------------------------------------------------------


def _batch_norm_train(g: Graph, x: Value, prefix: str, channels: int) -> Value:
    """Training-mode batch norm (batch statistics, biased variance, eps 1e-5)."""
    gamma = g.input(f"{prefix}.weight", (channels,))
    beta = g.input(f"{prefix}.bias", (channels,))
    mean = g.reduce_mean(x, [0, 2, 3], keepdims=True)
    centered = x - mean
    var = g.reduce_mean(centered * centered, [0, 2, 3], keepdims=True)
    normalized = centered / g.sqrt(var + 1e-5)
    shape = (1, channels, 1, 1)
    return normalized * g.reshape(gamma, shape) + g.reshape(beta, shape)


def _cnn(widths: tuple[int, ...], batch: int, size: int) -> TrainModel:
    def graph() -> Graph:
        g = Graph("main")
        h = g.input("x", (batch, 3, size, size))
        labels = g.input("labels", (batch, CLASSES))
        channels = 3
        for k, width in enumerate(widths):
            w = g.input(f"{3 * k}.weight", (width, channels, 3, 3))
            h = g.conv2d(h, w, strides=1 if k == 0 else 2, padding=1)
            h = g.relu(_batch_norm_train(g, h, f"{3 * k + 1}", width))
            channels = width
        pooled = g.reduce_mean(h, [2, 3])
        g.output(
            cross_entropy(
                g,
                linear(g, pooled, f"{3 * len(widths) + 2}", channels, CLASSES),
                labels,
            )
        )
        return g

    def torch_model() -> Any:
        import torch

        torch.manual_seed(0)
        layers: list[Any] = []
        channels = 3
        for k, width in enumerate(widths):
            stride = 1 if k == 0 else 2
            layers += [
                torch.nn.Conv2d(channels, width, 3, stride, 1, bias=False),
                torch.nn.BatchNorm2d(width),
                torch.nn.ReLU(),
            ]
            channels = width
        layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()]
        layers += [torch.nn.Linear(channels, CLASSES)]
        return torch.nn.Sequential(*layers).train()

    def data(rng: np.random.Generator) -> tuple[Array, Array]:
        x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        return x, np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]

    summary = (
        f"CNN: 3 × conv3x3-BN-ReLU ({', '.join(map(str, widths))} channels), "
        f"{size}×{size} inputs, batch {batch}"
    )
    return TrainModel("cnn", graph, torch_model, data, summary)


# --- encoder -----------------------------------------------------------------------


def _layer_norm(g: Graph, x: Value, prefix: str, hidden: int) -> Value:
    gamma = g.input(f"{prefix}.weight", (hidden,))
    beta = g.input(f"{prefix}.bias", (hidden,))
    mean = g.reduce_mean(x, [-1], keepdims=True)
    centered = x - mean
    var = g.reduce_mean(centered * centered, [-1], keepdims=True)
    return centered / g.sqrt(var + 1e-5) * gamma + beta


def _gelu(g: Graph, x: Value) -> Value:
    """PyTorch's exact GELU: x Φ(x) = x (1 + erf(x / √2)) / 2."""
    return x * (g.erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5


def _encoder_layer(
    g: Graph,
    x: Value,
    prefix: str,
    batch: int,
    seq: int,
    hidden: int,
    heads: int,
    ffn: int,
) -> Value:
    head = hidden // heads
    w_in = g.input(f"{prefix}.self_attn.in_proj_weight", (3 * hidden, hidden))
    b_in = g.input(f"{prefix}.self_attn.in_proj_bias", (3 * hidden,))
    qkv = x @ g.transpose(w_in) + b_in  # [B, S, 3H]

    def heads_of(k: int) -> Value:
        part = g.slice(qkv, [0, 0, k * hidden], [batch, seq, (k + 1) * hidden])
        return g.transpose(g.reshape(part, (batch, seq, heads, head)), (0, 2, 1, 3))

    q, k, v = heads_of(0), heads_of(1), heads_of(2)
    scores = (q @ g.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(head))
    attended = g.softmax(scores, -1) @ v  # [B, heads, S, head]
    merged = g.reshape(g.transpose(attended, (0, 2, 1, 3)), (batch, seq, hidden))
    out = linear(g, merged, f"{prefix}.self_attn.out_proj", hidden, hidden)
    x = _layer_norm(g, x + out, f"{prefix}.norm1", hidden)
    ff = linear(
        g,
        _gelu(g, linear(g, x, f"{prefix}.linear1", hidden, ffn)),
        f"{prefix}.linear2",
        ffn,
        hidden,
    )
    return _layer_norm(g, x + ff, f"{prefix}.norm2", hidden)


def _encoder(
    batch: int, seq: int, hidden: int, heads: int, ffn: int, layers: int
) -> TrainModel:
    def graph() -> Graph:
        g = Graph("main")
        h = g.input("x", (batch, seq, hidden))
        labels = g.input("labels", (batch, CLASSES))
        for k in range(layers):
            h = _encoder_layer(g, h, f"layers.{k}", batch, seq, hidden, heads, ffn)
        pooled = g.reduce_mean(h, [1])
        g.output(cross_entropy(g, linear(g, pooled, "head", hidden, CLASSES), labels))
        return g

    def torch_model() -> Any:
        import torch

        class Encoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.layers = torch.nn.ModuleList(
                    torch.nn.TransformerEncoderLayer(
                        hidden,
                        heads,
                        ffn,
                        dropout=0.0,
                        activation="gelu",
                        batch_first=True,
                    )
                    for _ in range(layers)
                )
                self.head = torch.nn.Linear(hidden, CLASSES)

            def forward(self, x: Any) -> Any:
                for layer in self.layers:
                    x = layer(x)
                return self.head(x.mean(1))

        torch.manual_seed(0)
        return Encoder().train()

    def data(rng: np.random.Generator) -> tuple[Array, Array]:
        x = rng.standard_normal((batch, seq, hidden)).astype(np.float32)
        return x, np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]

    summary = (
        f"transformer encoder: {layers} layers, hidden {hidden}, {heads} heads, "
        f"ffn {ffn}, seq {seq}, batch {batch}"
    )
    return TrainModel("encoder", graph, torch_model, data, summary)


def train_model(name: str, tiny: bool = False) -> TrainModel:
    """The workload ``name`` (``mlp``, ``cnn``, ``encoder``), full size or tiny."""
    makers: dict[str, Callable[[], TrainModel]] = {
        "mlp": (lambda: _mlp((32, 24), 16))
        if tiny
        else (lambda: _mlp((784, 1024, 1024), 256)),
        "cnn": (lambda: _cnn((4, 8, 8), 4, 8))
        if tiny
        else (lambda: _cnn((16, 32, 64), 32, 32)),
        "encoder": (lambda: _encoder(2, 8, 16, 2, 32, 2))
        if tiny
        else (lambda: _encoder(8, 128, 256, 4, 1024, 2)),
    }
    if name not in makers:
        raise ValueError(
            f"unknown training workload '{name}'; choose from {', '.join(makers)}"
        )
    return makers[name]()


TRAIN_MODELS: tuple[str, ...] = ("mlp", "cnn", "encoder")
