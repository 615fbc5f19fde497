"""``tg.top_k_indices`` has no vjp rule (its i64 result carries no gradient), yet
TopK's values differentiate: they are a ``tg.gather_elements`` of the input by
those indices, and the gradient flows through that op's rule. Checked against
``torch.topk``'s backward (the cotangent scattered to the chosen entries), and on
ties against a stable ``torch.sort``, which picks the lower position first as
``tg.top_k_indices`` does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qidao.frontend.builder import Graph, Value
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS: set[str] = set()
"""No rule is checked here: ``tg.top_k_indices`` is in ``test_coverage.NO_RULE``."""

RNG = np.random.default_rng(19)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("axis", [0, 1])
def test_top_k_values_against_torch_topk(axis: int, largest: bool) -> None:
    x = RNG.permutation(20).reshape(4, 5).astype(np.float64) - 7.5

    def build(g: Graph, v: Value) -> Value:
        return g.top_k(v, 3, axis, largest)[0]

    def reference(t: torch.Tensor) -> torch.Tensor:
        return torch.topk(t, 3, axis, largest).values

    out = list(x.shape)
    out[axis] = 3
    check_against_torch(build, reference, [x], out)


def test_top_k_ties_against_stable_sort() -> None:
    x = np.array([[1.0, 3.0, 3.0, 0.0, 3.0], [2.0, 2.0, 2.0, 2.0, -1.0]])

    def build(g: Graph, v: Value) -> Value:
        return g.top_k(v, 2, 1, True)[0]

    def reference(t: torch.Tensor) -> torch.Tensor:
        return torch.sort(t, dim=1, descending=True, stable=True).values[:, :2]

    check_against_torch(build, reference, [x], [2, 2])
