"""1-D and 3-D convolutions and pools through the PyTorch frontend
(``qidao/frontend/torch/ops.py``: ``conv1d``/``conv3d``/``convolution``,
``max_pool1d/3d``, ``avg_pool1d/3d``, ``adaptive_avg_pool1d/3d``), in
``qidao.compile`` and ``torch.compile(backend="qidao")``, both strict (nothing
falls back to PyTorch), against eager PyTorch; and a Conv1d model training through
``torch.compile`` (``convolution_backward`` of a 1-D convolution).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn
F = torch.nn.functional

import qidao  # noqa: E402
from qidao.dialects.tg.numpy_eval import evaluate_function  # noqa: E402
from qidao.frontend.torch.importer import capture, to_tg, unsupported_ops  # noqa: E402

RTOL = 1e-4


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch.manual_seed(0)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def assert_close(got: Any, want: Any, what: str) -> None:
    """Equal to RTOL, relative to the tensor's scale (at least 1)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, not {want.shape}"
    scale = max(float(want.abs().max()), 1.0)
    np.testing.assert_allclose(
        got.detach().numpy(),
        want.detach().numpy(),
        rtol=RTOL,
        atol=RTOL * scale,
        err_msg=what,
    )


def compiled_matches_eager(model: Any, x: Any) -> None:
    """torch.compile(backend="qidao"), strict, matches eager PyTorch."""
    model = model.eval()
    with torch.no_grad():
        want = model(x)
    fast = torch.compile(
        model, backend="qidao", dynamic=False, options={"strict": True}
    )
    with torch.no_grad():
        assert_close(fast(x), want, "torch.compile")


class Speech(nn.Module):  # type: ignore[name-defined,misc]
    """Whisper's encoder stem: two Conv1d + GELU (the second strided), then 1-D
    pools and an adaptive average pool that tiles the frames."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(8, 12, 3, padding=1)
        self.conv2 = nn.Conv1d(12, 12, 3, stride=2, padding=1)
        self.depthwise = nn.Conv1d(12, 12, 5, padding="same", groups=12, dilation=2)

    def forward(self, x: Any) -> Any:
        h = F.gelu(self.conv2(F.gelu(self.conv1(x))))
        h = self.depthwise(h)
        pooled = F.max_pool1d(h, 3, 2, 1) + F.avg_pool1d(h, 3, 2, 1)
        return torch.cat([pooled, F.adaptive_avg_pool1d(h, 8)], dim=-1)


class Video(nn.Module):  # type: ignore[name-defined,misc]
    """Conv3d (grouped, strided, dilated), MaxPool3d, AvgPool3d and a global
    adaptive average pool."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(4, 6, (3, 3, 2), stride=(1, 2, 1), padding=1, groups=2)
        self.dilated = nn.Conv3d(6, 6, 3, padding=2, dilation=2, bias=False)
        self.max = nn.MaxPool3d(2, stride=(1, 2, 2), padding=1)
        self.avg = nn.AvgPool3d((2, 1, 2), count_include_pad=False, padding=(1, 0, 1))

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.dilated(torch.relu(self.conv(x))))
        return self.avg(self.max(h)) + F.adaptive_avg_pool3d(h, 1).mean()


def test_conv1d_and_1d_pools() -> None:
    compiled_matches_eager(Speech(), torch.randn(2, 8, 16))


def test_conv3d_and_3d_pools() -> None:
    compiled_matches_eager(Video(), torch.randn(1, 4, 5, 8, 6))


def test_unbatched_conv1d_and_pool() -> None:
    """``[C, L]`` input, as PyTorch allows: a batch of one."""

    def fn(x: Any, w: Any) -> Any:
        return F.max_pool1d(F.conv1d(x, w, padding=1), 2)

    x, w = torch.randn(3, 10), torch.randn(4, 3, 3)
    compiled = qidao.compile(fn, example_inputs=(x, w), strict=True)
    assert_close(compiled(x, w), fn(x, w), "unbatched")


@pytest.mark.parametrize(
    ("model", "shape"), [(Speech, (2, 8, 16)), (Video, (1, 4, 5, 8, 6))]
)
def test_core_aten_form(model: Any, shape: tuple[int, ...]) -> None:
    """The decomposed graphs (``aten.convolution`` with 1 and 3 spatial axes,
    ``max_pool3d_with_indices``, ``avg_pool3d``, ...) convert, and the tg module,
    run by the NumPy evaluator (no JIT), matches eager PyTorch."""
    net, x = model().eval(), torch.randn(shape)
    captured = capture(net, (x,), decompose=True)
    assert unsupported_ops(captured.graph_module) == {}
    main = to_tg(captured).body.block.first_op
    assert isinstance(main, FuncOp)
    (got,) = evaluate_function(main, [x.numpy()])
    with torch.no_grad():
        assert_close(torch.from_numpy(np.asarray(got)), net(x), "core ATen")


def test_adaptive_pool_to_a_size_that_does_not_divide_is_refused() -> None:
    """Overlapping windows of two sizes are left to PyTorch, with the reason."""
    captured = capture(lambda x: F.adaptive_avg_pool1d(x, 3), (torch.randn(1, 2, 10),))
    (reason,) = unsupported_ops(captured.graph_module)
    assert reason.startswith("aten.adaptive_avg_pool1d.default")
    assert "spatial size [10] to [3]" in reason


def test_conv1d_trains_like_eager() -> None:
    """Conv1d-GELU-Conv1d under torch.compile (strict: the backward's
    ``convolution_backward`` of a 1-D convolution is qidao's too): the gradients of
    the first step and the loss of each SGD step match eager PyTorch."""
    model = nn.Sequential(
        nn.Conv1d(3, 6, 3, stride=2, padding=1),
        nn.GELU(),
        nn.Conv1d(6, 4, 3, padding=2, dilation=2, groups=2),
    )
    eager = copy.deepcopy(model)
    fast = torch.compile(
        model, backend="qidao", dynamic=False, options={"strict": True}
    )
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for step in range(3):
        x = torch.randn(2, 3, 11)
        losses = []
        for net, opt in zip((fast, eager), opts, strict=True):
            opt.zero_grad()
            loss = net(x).square().mean()
            loss.backward()
            losses.append(float(loss.detach()))
        if step == 0:
            for (name, p), q in zip(
                model.named_parameters(), eager.parameters(), strict=True
            ):
                assert p.grad is not None, f"{name} got no gradient"
                assert_close(p.grad, q.grad, f"gradient of {name}")
        assert abs(losses[0] - losses[1]) <= 1e-3 * abs(losses[1]), (step, losses)
        for opt in opts:
            opt.step()


def test_conv3d_backward_is_named_in_strict_mode() -> None:
    """A 3-D convolution's backward is not converted: strict names it."""
    model = nn.Conv3d(2, 3, 2)
    fast = torch.compile(
        model, backend="qidao", dynamic=False, options={"strict": True}
    )
    with pytest.raises(qidao.QidaoError) as info:
        fast(torch.randn(1, 2, 3, 3, 3)).sum().backward()
    message = str(info.value)
    assert "aten.convolution_backward.default" in message
    assert "only the backward of 1-D and 2-D convolutions is supported" in message
