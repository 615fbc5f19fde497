"""PyTorch's scatters through ``qidao.compile(nn.Module)`` and ``torch.compile``
against PyTorch itself: ``scatter`` (a tensor and a value), ``scatter_add``,
``scatter_reduce`` (every supported ``reduce``, with and without ``include_self``)
and ``index_put`` with one index tensor; ``checks=True`` rejects a negative scatter
index as PyTorch does, and ``mean`` is refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qidao
from qidao.frontend.torch.importer import UnsupportedTorchOpsError


def _same(model: torch.nn.Module, *args: torch.Tensor) -> None:
    want = model(*args)
    got = qidao.compile(model, example_inputs=args, strict=True)(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-6, atol=1e-6)


class Scatters(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, i: torch.Tensor, src: torch.Tensor, rows: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return (
            x.scatter(1, i, src),
            x.scatter_add(1, i, src),
            x.scatter(0, rows, 2.5),
        )


def test_scatter_and_scatter_add() -> None:
    x = torch.randn(3, 5)
    i = torch.tensor([[0, 1, 4], [4, 4, 2], [3, 0, 1]])  # repeats for the add
    src = torch.randn(3, 4)  # larger than the index: its corner is read
    rows = torch.tensor([[2, 0, 1, 1, 0]])
    _same(Scatters(), x, i, src, rows)


class Reduce(torch.nn.Module):
    def __init__(self, reduce: str, include_self: bool) -> None:
        super().__init__()
        self.reduce, self.include_self = reduce, include_self

    def forward(
        self, x: torch.Tensor, i: torch.Tensor, src: torch.Tensor
    ) -> tuple[torch.Tensor]:
        return (
            x.scatter_reduce(0, i, src, self.reduce, include_self=self.include_self),
        )


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce(reduce: str, include_self: bool) -> None:
    x = torch.randn(4, 3)
    i = torch.tensor([[0, 1, 1], [0, 3, 1], [2, 1, 1]])
    _same(Reduce(reduce, include_self), x, i, torch.randn(3, 3))


def test_scatter_reduce_mean_is_refused_by_name() -> None:
    args = (torch.randn(4, 3), torch.tensor([[0, 1, 1]]), torch.randn(1, 3))
    with pytest.raises(
        UnsupportedTorchOpsError, match=r"reduce 'mean' is not supported"
    ):
        qidao.compile(Reduce("mean", True), example_inputs=args, strict=True)


class IndexPut(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, j: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return x.index_put((j,), v), x.index_put((j,), v[:1], accumulate=True)


def test_index_put_with_one_index_tensor() -> None:
    x, v = torch.randn(5, 3), torch.randn(4, 3)
    _same(IndexPut(), x, torch.tensor([1, -1, 3, 0]), v)


def test_checks_reject_a_negative_scatter_index_as_torch_does() -> None:
    x, src = torch.randn(5, 3), torch.randn(3, 3)
    args = (x, torch.tensor([[0, 1, 4], [4, 4, 2], [3, 0, 1]]), src)
    compiled = qidao.compile(
        Reduce("sum", True).eval(), example_inputs=args, strict=True, checks=True
    )
    compiled(*args)
    with pytest.raises(
        qidao.CheckError,
        match=r"index -1 is out of bounds for an axis of size 5 \(valid indices are 0 to 4\)",
    ):
        compiled(x, torch.tensor([[0, 1, 2], [-1, 0, 2], [2, 0, 1]]), src)


def test_torch_compile_runs_a_scatter_add() -> None:
    x, i, src = torch.randn(3, 5), torch.tensor([[0, 1, 1]]), torch.randn(1, 3)
    fast = torch.compile(lambda a, b, c: a.scatter_add(1, b, c), backend="qidao")
    torch.testing.assert_close(fast(x, i, src), x.scatter_add(1, i, src))
