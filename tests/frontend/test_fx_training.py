"""Training through torch.compile(backend="qidao"): AOTAutograd's forward and
backward graphs compiled by qidao, gradients and SGD steps compared with eager
PyTorch (``torch.autograd``) as the oracle."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn
F = torch.nn.functional

import qidao  # noqa: E402
from qidao.dialects.tg.numpy_eval import evaluate_function  # noqa: E402
from qidao.dynamo_backend import FrozenGraph, qidao_backend  # noqa: E402
from qidao.frontend.fx import (  # noqa: E402
    UnsupportedTorchOpsError,
    capture,
    to_tg,
)
from qidao.frontend.fx_training import aot_compile, max_pool2d_backward  # noqa: E402

RTOL = 1e-4


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch.manual_seed(0)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def assert_close(got: Any, want: Any, what: str) -> None:
    """Equal to RTOL, relative to the tensor's scale (at least 1), so values near
    zero do not fail on rounding."""
    scale = max(float(want.abs().max()), 1.0)
    np.testing.assert_allclose(
        got.detach().numpy(),
        want.detach().numpy(),
        rtol=RTOL,
        atol=RTOL * scale,
        err_msg=what,
    )


def recording(programs: list[Any]) -> Callable[..., Any]:
    """A dynamo backend that trains through ``aot_compile`` in strict mode (no
    fallback), keeping every qidao program it compiles."""

    def compile_graph(module: Any) -> Any:
        programs.append(qidao.compile(module))
        return programs[-1]

    def backend(gm: Any, example_inputs: Any) -> Any:
        return aot_compile(gm, example_inputs, compile_graph, strict=True)

    return backend


def train_like_eager(
    model: Any,
    make_inputs: Callable[[], tuple[Any, ...]],
    steps: int,
    optimizer: Callable[[Any], Any],
) -> tuple[Any, Any]:
    """Train ``model`` through torch.compile(backend="qidao", strict) and a copy
    eagerly, side by side: the first step's gradients must match, then the losses
    of every step (relative 1e-3). Returns (compiled model, eager model)."""
    eager = copy.deepcopy(model)
    fast = torch.compile(
        model, backend="qidao", dynamic=False, options={"strict": True}
    )
    opt_fast, opt_eager = optimizer(model.parameters()), optimizer(eager.parameters())
    for step in range(steps):
        inputs = make_inputs()
        losses = []
        for net, opt in ((fast, opt_fast), (eager, opt_eager)):
            opt.zero_grad()
            loss = net(*inputs).square().mean()
            loss.backward()
            losses.append(float(loss.detach()))
        if step == 0:
            for (name, p), q in zip(
                model.named_parameters(), eager.parameters(), strict=True
            ):
                assert p.grad is not None, f"{name} got no gradient"
                assert_close(p.grad, q.grad, f"gradient of {name}")
        assert abs(losses[0] - losses[1]) <= 1e-3 * abs(losses[1]), (step, losses)
        opt_fast.step()
        opt_eager.step()
    return model, eager


# ---- the book's example, an MLP ---------------------------------------------


def test_book_example_relu_xw_plus_b() -> None:
    """y = relu(x·w + b) at x=2, w=3, b=1: dy/dx = 3, dy/dw = 2, dy/db = 1."""

    def f(x: Any, w: Any, b: Any) -> Any:
        return torch.relu(x * w + b)

    x, w, b = (torch.tensor(v, requires_grad=True) for v in (2.0, 3.0, 1.0))
    fast = torch.compile(f, backend="qidao", dynamic=False, options={"strict": True})
    y = fast(x, w, b)
    y.backward()
    assert float(y.detach()) == 7.0
    assert (float(x.grad), float(w.grad), float(b.grad)) == (3.0, 2.0, 1.0)


def mlp() -> Any:
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))


@pytest.mark.parametrize(
    "optimizer",
    [
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: torch.optim.Adam(ps, lr=0.01),
    ],
    ids=["sgd", "adam"],
)
def test_mlp_trains_like_eager(optimizer: Any) -> None:
    batches = lambda: (torch.randn(8, 12),)  # noqa: E731  (a new batch each step)
    train_like_eager(mlp(), batches, steps=5, optimizer=optimizer)


def test_forward_and_backward_are_each_one_qidao_program() -> None:
    programs: list[Any] = []
    fast = torch.compile(mlp(), backend=recording(programs), dynamic=False)
    fast(torch.randn(8, 12)).sum().backward()
    forward, backward = programs
    assert "tg.matmul" in forward.ir("tg")
    assert "tg.select" in backward.ir("tg")  # relu's threshold_backward, decomposed


def test_no_grad_keeps_the_frozen_inference_graph() -> None:
    """Without gradients the backend freezes the parameters, as before."""
    kept: list[Any] = []

    def backend(gm: Any, example_inputs: Any) -> Any:
        kept.append(qidao_backend(gm, example_inputs))
        return kept[-1]

    model = mlp()
    x = torch.randn(8, 12)
    fast = torch.compile(model, backend=backend, dynamic=False)
    with torch.no_grad():
        assert_close(fast(x), model(x), "inference output")
    assert isinstance(kept[0], FrozenGraph)
    out = fast(x)  # grad mode on: the training graph
    assert out.requires_grad and not isinstance(kept[-1], FrozenGraph)


# ---- a small CNN, a transformer block ---------------------------------------


class SmallCNN(nn.Module):  # type: ignore[name-defined,misc]
    """conv-BN-ReLU (BN in training mode), max pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x: Any) -> Any:
        y = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.flatten(1))


def test_small_cnn_trains_like_eager() -> None:
    images = torch.randn(2, 3, 8, 8)
    model, eager = train_like_eager(
        SmallCNN(),
        lambda: (images,),
        steps=3,
        optimizer=lambda ps: torch.optim.SGD(ps, lr=0.05),
    )
    for name, got, want in zip(
        ["running_mean", "running_var"],
        [model.bn.running_mean, model.bn.running_var],
        [eager.bn.running_mean, eager.bn.running_var],
        strict=True,
    ):
        assert_close(got, want, name)
    assert int(model.bn.num_batches_tracked) == 3


class TinyBlock(nn.Module):  # type: ignore[name-defined,misc]
    """Embedding, layer norm, one softmax attention head, a GELU feed-forward."""

    def __init__(self, vocab: int = 11, width: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width, padding_idx=0)
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.ff = nn.Linear(width, width)

    def forward(self, ids: Any) -> Any:
        h = self.embed(ids)
        q, k, v = self.qkv(self.norm(h)).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        h = h + torch.softmax(scores, dim=-1) @ v
        return h + F.gelu(self.ff(h))


def test_transformer_block_trains_like_eager() -> None:
    ids = torch.tensor([[1, 4, 0, 4, 9], [10, 2, 2, 7, 0]])  # repeats, padding 0
    train_like_eager(
        TinyBlock(),
        lambda: (ids,),
        steps=3,
        optimizer=lambda ps: torch.optim.SGD(ps, lr=0.1),
    )


# ---- the converters backward graphs need (NumPy evaluator, no JIT) ----------


def evaluates_like_torch(fn: Any, *inputs: Any) -> None:
    """``fn`` captured and converted to tg, run by the NumPy evaluator: the same
    results as ``fn`` in PyTorch."""
    main = to_tg(capture(fn, inputs)).body.block.first_op
    assert isinstance(main, FuncOp)
    got = evaluate_function(main, [t.numpy() for t in inputs])
    want = fn(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(torch.from_numpy(np.asarray(g)), w, f"result {k}")


def test_masks_where_full_and_pad_convert() -> None:
    def masks(x: Any, ids: Any) -> Any:
        keep = (x > 0.25) & ~(ids == 3)  # float and int64 comparisons, bool logic
        return torch.where(keep, F.pad(x, (1, -1, 0, 1))[1:], torch.full((4, 5), 2.0))

    evaluates_like_torch(masks, torch.randn(4, 5).round(), torch.randint(0, 5, (4, 1)))


def test_var_mean_converts() -> None:
    x = torch.randn(3, 4, 5)
    evaluates_like_torch(lambda x: torch.var_mean(x, dim=(0, 2), correction=0), x)
    evaluates_like_torch(lambda x: torch.var_mean(x, dim=1, keepdim=True), x)


def test_embedding_dense_backward_converts() -> None:
    """Repeated indices sum their rows; the padding row gets no gradient."""
    ids = torch.tensor([[1, 2, 2, 6, 1], [0, 2, 5, 5, 5]])

    def backward(g: Any, ids: Any) -> Any:
        return torch.ops.aten.embedding_dense_backward(g, ids, 7, 2, False)

    evaluates_like_torch(backward, torch.randn(2, 5, 3), ids)


def test_convolution_backward_converts() -> None:
    """Strided, padded, dilated, grouped: dx, dw and the bias gradient."""
    x, w = torch.randn(2, 4, 7, 6), torch.randn(6, 2, 3, 3)
    window = ([2, 1], [1, 0], [1, 2])  # stride, padding, dilation

    def backward(g: Any, x: Any, w: Any) -> Any:
        return torch.ops.aten.convolution_backward(
            g, x, w, [6], *window, False, [0, 0], 2, [True, True, True]
        )

    g = torch.randn_like(F.conv2d(x, w, None, *window, groups=2))
    evaluates_like_torch(backward, g, x, w)


# ---- max pooling's backward -------------------------------------------------


@pytest.mark.parametrize(
    ("kernel", "stride", "padding", "dilation"),
    [
        (2, 2, 0, 1),
        (3, 2, 1, 1),
        (3, 1, 1, 1),
        (2, 1, 0, 2),
        ((2, 3), (1, 2), (1, 0), 1),
    ],
)
def test_max_pool2d_backward_matches_pytorch(
    kernel: Any, stride: Any, padding: Any, dilation: Any
) -> None:
    """The decomposition without indices routes each gradient where PyTorch's
    indices do, ties (a ReLU's zeros) to the first maximum of the window."""
    x = torch.relu(torch.randn(2, 3, 7, 8)).round()  # many ties
    pair = torch.nn.modules.utils._pair
    k, s, p, d = (list(pair(v)) for v in (kernel, stride, padding, dilation))
    y, indices = torch.ops.aten.max_pool2d_with_indices(x, k, s, p, d)
    g = torch.randn_like(y)
    want = torch.ops.aten.max_pool2d_with_indices_backward(
        g, x, k, s, p, d, False, indices
    )
    got = max_pool2d_backward(g, x, k, s, p, d, False, indices)
    torch.testing.assert_close(got, want)


def test_overlapping_max_pool_gradient_through_qidao() -> None:
    """Padded, overlapping windows over a ReLU (ties): compiled in strict mode."""

    def f(x: Any, w: Any) -> Any:
        return F.max_pool2d(torch.relu(x * w), 3, stride=2, padding=1)

    x = torch.randn(1, 2, 6, 6).round()
    w = torch.randn(1, 2, 1, 1, requires_grad=True)
    fast = torch.compile(f, backend="qidao", dynamic=False, options={"strict": True})
    g = torch.randn(1, 2, 3, 3)
    (fast(x, w) * g).sum().backward()
    got = w.grad.clone()
    w.grad = None
    (f(x, w) * g).sum().backward()
    assert_close(got, w.grad, "gradient of w")


# ---- unsupported ops: strict error, fallback --------------------------------


def abs_and_atan(x: Any, w: Any) -> Any:
    """abs's gradient is sign(x) (aten.sign, which qidao lacks, in the backward
    graph only); atan is unsupported in the forward graph."""
    return (x.abs() * w).sum(1) + torch.atan(w).sum()


def test_strict_names_every_unsupported_op_of_both_graphs() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    fast = torch.compile(
        abs_and_atan, backend="qidao", dynamic=False, options={"strict": True}
    )
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as info:
        fast(x, w)
    error = info.value.inner_exception
    assert isinstance(error, UnsupportedTorchOpsError)
    assert set(error.ops) == {"aten.sign.default", "aten.atan.default"}
    assert error.ops["aten.sign.default"] == ["sign (backward)"]
    assert error.ops["aten.atan.default"] == ["atan (forward)"]
    assert "strict=True" in str(error)


def test_without_strict_unsupported_ops_run_in_pytorch_with_a_warning() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    fast = torch.compile(abs_and_atan, backend="qidao", dynamic=False)
    with pytest.warns(UserWarning) as record:
        fast(x, w).sum().backward()
    messages = [str(r.message) for r in record if "qidao" in str(r.message)]
    assert any("forward graph" in m and "aten.atan" in m for m in messages)
    assert any("backward graph" in m and "aten.sign" in m for m in messages)
    got = [x.grad.clone(), w.grad.clone()]
    x.grad = w.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        abs_and_atan(x, w).sum().backward()
    assert_close(got[0], x.grad, "gradient of x")
    assert_close(got[1], w.grad, "gradient of w")
