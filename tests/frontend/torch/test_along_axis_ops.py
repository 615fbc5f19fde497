"""``repeat``, ``cumsum``, ``cumprod``, ``topk``, ``sort`` and ``argsort`` through
``qidao.compile(nn.Module)`` in strict mode (every op converted), against PyTorch.

The values are distinct where PyTorch leaves the order of ties open (``topk``,
``sort`` without ``stable``), so the indices must match exactly too.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import qidao
from qidao.frontend.torch.importer import UnsupportedTorchOpsError


class Ops(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values, indices = torch.topk(x, 3, dim=1)
        smallest, where = torch.topk(x, 2, dim=0, largest=False)
        ordered, order = torch.sort(x, dim=-1, descending=True)
        return (
            values,
            indices,
            smallest,
            where,
            ordered,
            order,
            torch.argsort(x, dim=1),
            torch.cumsum(x, 1),
            torch.cumprod(x, 0),
            x.repeat(2, 1, 3),
        )


def test_the_ops_match_pytorch() -> None:
    x = torch.randperm(24).reshape(4, 6).float() / 7
    x[1, 2] = float("nan")  # sorts above every number, as PyTorch's
    model = Ops()
    got = qidao.compile(model, example_inputs=(x,), strict=True)(x)
    want = model(x)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g = torch.as_tensor(np.asarray(g))
        assert g.dtype == w.dtype, k
        torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-6, atol=0, msg=str(k))


class Positions(nn.Module):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(ids, dim=1)


def test_int64_cumsum() -> None:
    ids = torch.randint(0, 3, (2, 7))
    got = qidao.compile(Positions(), example_inputs=(ids,), strict=True)(ids)
    np.testing.assert_array_equal(np.asarray(got), torch.cumsum(ids, 1).numpy())


class Int32Total(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=0)


def test_an_int32_cumsum_which_pytorch_makes_int64_is_named() -> None:
    x = torch.ones(4, dtype=torch.int32)
    with pytest.raises(UnsupportedTorchOpsError, match=r"aten\.cumsum\.default"):
        qidao.compile(Int32Total(), example_inputs=(x,), strict=True)
