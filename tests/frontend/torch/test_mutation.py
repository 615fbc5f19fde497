"""Models that write into tensors in place (``x[:, 1:] = y``, ``x.add_(y)``),
compiled by qidao.compile and torch.compile(backend="qidao"), against PyTorch eager.

torch.export keeps PyTorch's in-place operators and views; ``capture``
functionalizes such a graph, so that what qidao computes (values, never views) and
what runs in PyTorch see the writes (LongformerModel's sliding-window attention
fills a ``new_zeros`` tensor through slices: without this its parts computed copies
the writes never reached, a 7% error)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn

import qidao  # noqa: E402
from qidao.frontend.torch.importer import capture, mutates  # noqa: E402

# functionalizing (ExportedProgram.run_decompositions) warns from torch's own code
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch.manual_seed(0)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _quietly(call: Any) -> Any:
    """``call()``, without qidao's notice of operators run in PyTorch."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "qidao: running unsupported")
        return call()


class SliceWrites(nn.Module):
    """Fills a ``new_zeros`` tensor (run in PyTorch) through slices and a select
    (which qidao computes), then updates it in place, as Longformer's
    ``_sliding_chunks_query_key_matmul`` does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x)
        out = y.new_zeros(2, 5, 6)
        out[:, :4] = y
        out[:, -1] = y[:, 0] * 2
        out = out.transpose(1, 2)
        out += 1
        return out * 3


def test_writes_through_slices_reach_the_tensor_both_ways() -> None:
    model, x = SliceWrites(), torch.randn(2, 4, 6)
    assert mutates(torch.export.export(model, (x,)).graph_module)
    assert not mutates(capture(model, (x,)).graph_module)  # functionalized
    with torch.no_grad():
        want = model(x)
    compiled = _quietly(lambda: qidao.compile(model, example_inputs=(x,)))
    torch.testing.assert_close(compiled(x), want)
    fast = torch.compile(model, backend="qidao", dynamic=False)
    with torch.no_grad():
        torch.testing.assert_close(_quietly(lambda: fast(x)), want)


def _scale_in_place(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2)
    return x + 1


def _scale_in_place_with_fallback(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2)
    return torch.logcumsumexp(x, 1) + 1  # logcumsumexp runs in PyTorch


@pytest.mark.parametrize("fn", [_scale_in_place, _scale_in_place_with_fallback])
def test_an_update_of_an_input_reaches_the_caller(fn: Any) -> None:
    """The functionalized graph returns the input's new value; the compiled model
    writes it back into the caller's tensor, as the in-place op does."""
    x = torch.randn(3, 4)
    want_x = x.clone()
    want = fn(want_x)
    compiled = _quietly(lambda: qidao.compile(fn, example_inputs=(x.clone(),)))
    got_x = x.clone()
    torch.testing.assert_close(compiled(got_x), want)
    torch.testing.assert_close(got_x, want_x)
    fast_x = x.clone()
    with torch.no_grad():
        got = _quietly(
            lambda: torch.compile(fn, backend="qidao", dynamic=False)(fast_x)
        )
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(fast_x, want_x)


class Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x * self.calls


def test_an_update_of_a_buffer_reaches_the_module() -> None:
    model, x = Counter(), torch.randn(3)
    compiled = qidao.compile(model, example_inputs=(x,))
    torch.testing.assert_close(compiled(x), x)
    torch.testing.assert_close(model.calls, torch.tensor(1.0))
