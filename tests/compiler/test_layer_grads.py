"""Compiled gradients of the zoo's layers against ``torch.autograd``, layer by layer.

Each case builds one layer as a builder graph (the training models' own helpers from
``qidao/bench/train_models.py`` where they have one), compiles ``sum(w * layer(...))``
with a fixed random ``w`` (so a transposed or mirrored gradient cannot pass) with
``grad=`` every float input, and compares each gradient with autograd's on the same
float32 layer in PyTorch. The tolerance is ``rtol=1e-4`` plus an ``atol`` of
``1e-5 * max|reference|``: float32 sums of a few hundred terms, some of which cancel
(batch norm's ``dx``), lose a few ulps of the largest term, not of the smallest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.dialects.func import FuncOp

import qidao
from qidao.bench.train_models import (
    _batch_norm_train,
    _encoder_layer,
    _gelu,
    _layer_norm,
)
from qidao.dialects.tg.types import shape_of
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]
Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class LayerCase:
    """One layer: ``build`` adds its inputs to the graph and returns its result;
    ``reference`` computes it in PyTorch from the same inputs, by name. Float inputs
    are drawn from N(0, 1) (times ``scale``); ``fixed`` gives the others (indices)."""

    build: Callable[[Graph], Value]
    reference: Callable[[Tensors], torch.Tensor]
    fixed: dict[str, Array] = field(default_factory=dict)
    scale: float = 1.0


def _linear() -> LayerCase:
    def build(g: Graph) -> Value:
        x, w, b = g.input("x", (3, 5)), g.input("w", (4, 5)), g.input("b", (4,))
        return x @ g.transpose(w) + b

    return LayerCase(build, lambda t: F.linear(t["x"], t["w"], t["b"]))


def _conv2d() -> LayerCase:
    """Padding 1, stride 2 and two groups: each of ``dx``'s and ``dw``'s index
    shuffles (dilated gradient, flipped kernel, per-group channel swap) is live;
    odd 7x7 inputs leave a row the last window does not reach."""

    def build(g: Graph) -> Value:
        x = g.input("x", (2, 4, 7, 7))
        w, b = g.input("w", (6, 2, 3, 3)), g.input("b", (6,))
        return g.conv2d(x, w, b, strides=2, padding=1, groups=2)

    return LayerCase(
        build,
        lambda t: F.conv2d(t["x"], t["w"], t["b"], stride=2, padding=1, groups=2),
    )


def _batch_norm() -> LayerCase:
    def build(g: Graph) -> Value:
        return _batch_norm_train(g, g.input("x", (3, 4, 5, 5)), "bn", 4)

    return LayerCase(
        build,
        lambda t: F.batch_norm(
            t["x"], None, None, t["bn.weight"], t["bn.bias"], training=True, eps=1e-5
        ),
    )


def _layer_norm_case() -> LayerCase:
    def build(g: Graph) -> Value:
        return _layer_norm(g, g.input("x", (2, 3, 8)), "ln", 8)

    return LayerCase(
        build,
        lambda t: F.layer_norm(t["x"], (8,), t["ln.weight"], t["ln.bias"], eps=1e-5),
    )


def _softmax() -> LayerCase:
    def build(g: Graph) -> Value:
        return g.softmax(g.input("x", (3, 4, 6)), -1)

    return LayerCase(build, lambda t: torch.softmax(t["x"], -1), scale=2.0)


BATCH, SEQ, HIDDEN, HEADS, FFN = 2, 4, 8, 2, 16


def _attention() -> LayerCase:
    """One post-norm encoder layer (multi-head self-attention, then the GELU
    feed-forward, each with its layer norm) as the encoder workload builds it,
    against ``torch.nn.TransformerEncoderLayer`` called on the same weights."""
    layer = torch.nn.TransformerEncoderLayer(
        HIDDEN, HEADS, FFN, dropout=0.0, activation="gelu", batch_first=True
    ).train()
    prefix = "layer."

    def build(g: Graph) -> Value:
        x = g.input("x", (BATCH, SEQ, HIDDEN))
        return _encoder_layer(g, x, "layer", BATCH, SEQ, HIDDEN, HEADS, FFN)

    def reference(t: Tensors) -> torch.Tensor:
        weights = {k[len(prefix) :]: v for k, v in t.items() if k.startswith(prefix)}
        out: torch.Tensor = torch.func.functional_call(layer, weights, (t["x"],))
        return out

    return LayerCase(build, reference, scale=0.5)


def _gelu_erf() -> LayerCase:
    def build(g: Graph) -> Value:
        return _gelu(g, g.input("x", (4, 6)))

    return LayerCase(build, lambda t: F.gelu(t["x"]), scale=2.0)


def _gelu_tanh() -> LayerCase:
    """PyTorch's ``approximate="tanh"``: x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2."""

    def build(g: Graph) -> Value:
        x = g.input("x", (4, 6))
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * (g.tanh(inner) + 1.0) * 0.5

    return LayerCase(build, lambda t: F.gelu(t["x"], approximate="tanh"), scale=2.0)


VOCAB, DIM = 7, 5
TOKENS = np.array([[1, 3, 3, 0], [6, 1, 3, 5]], np.int64)
"""Repeated tokens (3 three times, 1 twice) must accumulate; 2 and 4 get zeros."""


def _embedding() -> LayerCase:
    def build(g: Graph) -> Value:
        table = g.input("table", (VOCAB, DIM))
        return g.take(table, g.input("tokens", TOKENS.shape, "int64"))

    return LayerCase(
        build, lambda t: F.embedding(t["tokens"], t["table"]), {"tokens": TOKENS}
    )


LAYERS: dict[str, Callable[[], LayerCase]] = {
    "linear": _linear,
    "conv2d": _conv2d,
    "batch_norm_train": _batch_norm,
    "layer_norm": _layer_norm_case,
    "softmax": _softmax,
    "attention": _attention,
    "gelu_erf": _gelu_erf,
    "gelu_tanh": _gelu_tanh,
    "embedding": _embedding,
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_gradients_match_autograd(name: str) -> None:
    torch.manual_seed(0)  # the encoder layer's module (its weights are replaced)
    case = LAYERS[name]()
    rng = np.random.default_rng(sorted(LAYERS).index(name))
    g = Graph("main")
    y = case.build(g)
    weight = rng.standard_normal(y.shape).astype(np.float32)
    g.output(g.reduce_sum(y * g.constant(weight)))
    arrays = {
        k: case.fixed[k]
        if k in case.fixed
        else (rng.standard_normal(dims) * case.scale).astype(np.float32)
        for k, dims in _input_shapes(g).items()
    }
    floats = [k for k in arrays if k not in case.fixed]
    loss, *grads = qidao.compile(g, grad=floats)(*arrays.values())

    tensors = {
        k: torch.tensor(v, requires_grad=k not in case.fixed) for k, v in arrays.items()
    }
    ref = (case.reference(tensors) * torch.from_numpy(weight)).sum()
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5, atol=1e-5)
    for k, got in zip(floats, grads, strict=True):
        want = tensors[k].grad
        assert want is not None
        expected = want.numpy()
        np.testing.assert_allclose(
            got,
            expected,
            rtol=1e-4,
            atol=1e-5 * float(np.abs(expected).max()),
            err_msg=f"{name}: d loss / d {k}",
        )


def _input_shapes(g: Graph) -> dict[str, tuple[int, ...]]:
    """The graph's inputs in argument order: name (``qd.input_names``) -> shape."""
    fn = g.module().ops.first
    assert isinstance(fn, FuncOp)
    names = fn.attributes["qd.input_names"]
    assert isinstance(names, ArrayAttr)
    return {
        n.data: shape_of(a.type)
        for n, a in zip(names.data, fn.args, strict=True)
        if isinstance(n, StringAttr)
    }
