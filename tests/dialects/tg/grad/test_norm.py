"""The vjp rule of ``tg.batch_norm`` (inference form): all five operands against
float64 central differences (``gradcheck.py``) and ``torch.autograd``; the
training-mode batch norm, composed of reduce_mean/sub/mul/sqrt ops, differentiates
through their rules and matches PyTorch's ``batch_norm(training=True)``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.context import Context
from xdsl.parser import Parser

from qidao.compiler.context import make_context
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.autodiff import AutodiffError, AutodiffPass
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {"tg.batch_norm"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(2)
EPS = 2.0**-10  # exact in the op's f32 epsilon, so PyTorch's double eps is the same


def _operands(x_shape: tuple[int, ...]) -> list[np.ndarray]:
    c = x_shape[1]
    return [
        RNG.standard_normal(x_shape),
        RNG.uniform(0.5, 2.0, c),  # scale
        RNG.standard_normal(c),  # bias
        RNG.standard_normal(c) * 0.3,  # mean
        RNG.uniform(0.5, 2.0, c),  # var
    ]


def _inference(
    g: Graph, x: Value, scale: Value, bias: Value, mean: Value, var: Value
) -> Value:
    return g.batch_norm(x, scale, bias, mean, var, epsilon=EPS)


def _channel(v: torch.Tensor, rank: int) -> torch.Tensor:
    return v.reshape(1, -1, *([1] * (rank - 2)))


@pytest.mark.parametrize("x_shape", [(2, 3, 4, 3), (5, 4), (2, 3, 5)])
def test_batch_norm_central_differences(x_shape: tuple[int, ...]) -> None:
    check_vjp(_inference, _operands(x_shape))


@pytest.mark.parametrize("x_shape", [(2, 3, 4, 3), (5, 4)])
def test_batch_norm_matches_torch_eval_mode(x_shape: tuple[int, ...]) -> None:
    """x, scale and bias against ``F.batch_norm(training=False)`` (which refuses
    gradients of its running statistics); all five against the formula."""
    operands = _operands(x_shape)

    def eval_mode(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        scale, bias, mean, var = params
        return F.batch_norm(x, mean, var, scale, bias, training=False, eps=EPS)

    check_against_torch(_inference, eval_mode, operands, x_shape, wrt=[0, 1, 2])

    def formula(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        scale, bias, mean, var = (_channel(p, x.dim()) for p in params)
        return scale * (x - mean) / torch.sqrt(var + EPS) + bias

    check_against_torch(_inference, formula, operands, x_shape)


def _training(g: Graph, x: Value, scale: Value, bias: Value) -> Value:
    """Batch statistics over N, H, W (the biased variance, as PyTorch normalizes)."""
    axes = [0, 2, 3]
    centered = x - g.reduce_mean(x, axes, keepdims=True)
    var = g.reduce_mean(centered * centered, axes, keepdims=True)
    c = x.shape[1]
    normalized = centered / g.sqrt(var + EPS)
    return normalized * g.reshape(scale, (1, c, 1, 1)) + g.reshape(bias, (1, c, 1, 1))


def test_training_mode_composition_differentiates() -> None:
    operands = _operands((3, 2, 3, 3))[:3]
    check_vjp(_training, operands)

    def training(
        x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor
    ) -> torch.Tensor:
        return F.batch_norm(x, None, None, scale, bias, training=True, eps=EPS)

    check_against_torch(_training, training, operands, (3, 2, 3, 3))


NHWC_BATCH_NORM = """
func.func @main(%x: tensor<1x4x4x2xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<1x4x4x2xf32> {
  %y = tg.batch_norm %x, %s, %b, %m, %v epsilon = 1.000000e-05 layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x4x4x2xf32>
  func.return %y : tensor<1x4x4x2xf32>
}
"""


def test_nhwc_batch_norm_is_refused_naming_the_op() -> None:
    module = Parser(make_context(), NHWC_BATCH_NORM).parse_module()
    with pytest.raises(
        AutodiffError, match=r"tg\.batch_norm: no gradient for layout NHWC"
    ):
        AutodiffPass(wrt=("s",)).apply(Context(), module)
