"""The vjp rule of ``tg.cumsum`` (``grad/cumulative.py``), a running sum of ``g`` the
other way, against float64 central differences and ``torch.autograd`` for every
axis and each of ONNX's ``exclusive``/``reverse`` variants."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {"tg.cumsum"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(17)

VARIANTS = [(e, r) for e in (False, True) for r in (False, True)]


def _torch_cumsum(
    axis: int, exclusive: bool, reverse: bool
) -> Callable[[torch.Tensor], torch.Tensor]:
    """ONNX ``CumSum`` in PyTorch: flips for ``reverse``, a shift for
    ``exclusive``."""

    def reference(t: torch.Tensor) -> torch.Tensor:
        x = t.flip(axis) if reverse else t
        y = x.cumsum(axis)
        if exclusive:
            y = y - x
        return y.flip(axis) if reverse else y

    return reference


@pytest.mark.parametrize(("exclusive", "reverse"), VARIANTS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(axis: int, exclusive: bool, reverse: bool) -> None:
    def build(g: Graph, x: Value) -> Value:
        return g.cumsum(x, axis, exclusive, reverse)

    x = RNG.standard_normal((3, 4))
    check_vjp(build, [x])
    reference = _torch_cumsum(axis, exclusive, reverse)
    check_against_torch(build, reference, [x], x.shape)
