"""Training through torch.compile(backend="qidao"): AOTAutograd's forward and
backward graphs compiled by qidao, gradients and SGD steps compared with eager
PyTorch (``torch.autograd``) as the oracle."""

from __future__ import annotations

import copy
import functools
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
from qidao.frontend.torch.importer import (  # noqa: E402
    UnsupportedTorchOpsError,
    capture,
    to_tg,
    unsupported_ops,
)
from qidao.frontend.torch.training import aot_compile, max_pool2d_backward  # noqa: E402

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
    with pytest.raises(UnsupportedTorchOpsError) as info:  # not dynamo's wrapper
        fast(x, w)
    error = info.value
    first_line = str(error).splitlines()[0]
    assert "(aten.atan.default, aten.sign.default)" in first_line
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


# ---- qidao's own training options under torch.compile -----------------------


@pytest.mark.parametrize(
    ("option", "value", "instead"),
    [
        ("checkpoint", 2, "torch.utils.checkpoint.checkpoint"),
        ("grad", ["x"], "loss.backward()"),
        ("optimizer", qidao.optim.SGD(lr=0.1), "torch.optim"),
    ],
)
def test_training_options_are_refused_with_what_to_do_instead(
    option: str, value: Any, instead: str
) -> None:
    """grad=, optimizer= and checkpoint= are for qidao.compile: a torch.compile
    user is told what does the job there (issue 29, F22)."""
    model = nn.Linear(8, 8)
    fast = torch.compile(model, backend="qidao", options={option: value})
    with pytest.raises(qidao.ArgumentError) as info:
        fast(torch.randn(4, 8)).sum().backward()
    message = str(info.value)
    assert message.startswith(f"torch.compile(backend='qidao', options={{'{option}'")
    assert instead in message


def test_torch_utils_checkpoint_trains_through_qidao() -> None:
    """What the checkpoint refusal points to: torch.utils.checkpoint's blocks
    are recomputed by the backward graph qidao compiles."""

    class Checkpointed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

        def block(self, x: Any) -> Any:
            return torch.tanh(self.b(torch.tanh(self.a(x))))

        def forward(self, x: Any) -> Any:
            checkpoint = torch.utils.checkpoint.checkpoint
            return checkpoint(self.block, x, use_reentrant=False).sum()

    sgd = functools.partial(torch.optim.SGD, lr=0.1)
    train_like_eager(Checkpointed(), lambda: (torch.randn(4, 8),), 3, sgd)


# ---- cross entropy: nll_loss converted whole ---------------------------------


def test_mlp_classifier_with_cross_entropy_trains_like_eager() -> None:
    """The loss inside the compiled step (int64 labels a graph input): 20 SGD
    steps follow eager, losses and weights to 1e-4."""
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    eager = copy.deepcopy(model)
    step = torch.compile(
        lambda x, y: F.cross_entropy(model(x), y),
        backend="qidao",
        dynamic=False,
        options={"strict": True},
    )
    opt_fast = torch.optim.SGD(model.parameters(), lr=0.5)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.5)
    x = torch.randn(12, 8)
    y = (x @ torch.randn(8, 4)).argmax(1)  # a linear teacher's labels: learnable
    with torch.no_grad():
        first = float(F.cross_entropy(eager(x), y))
    for k in range(20):
        losses = []
        for loss_of, opt in (
            (step, opt_fast),
            (lambda x, y: F.cross_entropy(eager(x), y), opt_eager),
        ):
            opt.zero_grad()
            loss = loss_of(x, y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        assert_close(losses[0], losses[1], f"loss of step {k}")
    for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        assert_close(p.detach(), q.detach(), f"{name} after 20 steps")
    assert float(losses[1]) < 0.7 * first  # it learned


@pytest.mark.parametrize(
    ("reduction", "ignore_index", "weighted"),
    [("mean", 2, True), ("sum", -100, True), ("none", 0, False)],
)
def test_cross_entropy_gradients_match_eager(
    reduction: str, ignore_index: int, weighted: bool
) -> None:
    """Class weights and ignored rows (a class index, or -100 in the labels):
    the loss and the gradients of the logits' weights match eager's."""
    labels = torch.tensor([0, 2, 1, 3, 2, -100 if ignore_index < 0 else 1])
    weight = torch.tensor([0.5, 2.0, 1.5, 0.25]) if weighted else None
    layer = nn.Linear(3, 4)
    x = torch.randn(6, 3)

    def loss(x: Any, y: Any) -> Any:
        return F.cross_entropy(
            layer(x), y, weight=weight, ignore_index=ignore_index, reduction=reduction
        )

    fast = torch.compile(loss, backend="qidao", dynamic=False, options={"strict": True})
    g = torch.randn(6) if reduction == "none" else torch.tensor(1.7)
    got = fast(x, labels)
    (got * g).sum().backward()
    grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    want = loss(x, labels)
    (want * g).sum().backward()
    assert_close(got.detach(), want.detach(), "loss")
    for name, mine, p in zip(
        ["weight", "bias"], grads, layer.parameters(), strict=True
    ):
        assert_close(mine, p.grad, f"gradient of the layer's {name}")


NLL_CASES = [
    # (logits shape, labels, class weight?, reduction (0 none, 1 mean, 2 sum), ignore)
    ((5, 4), [0, 3, 1, 3, 2], False, 1, -100),
    ((5, 4), [0, 3, 1, 3, 2], True, 1, 3),  # a class index ignored
    ((5, 4), [0, -100, 1, 3, -100], True, 2, -100),
    ((5, 4), [0, 3, 1, 3, 2], True, 0, 1),
    ((4,), 2, True, 1, -100),  # one sample, no batch dimension
    ((2, 3, 2, 2), [[[0, 2], [1, 1]], [[2, 0], [0, 1]]], True, 1, 1),  # nll_loss2d
]


@pytest.mark.parametrize(
    ("shape", "labels", "weighted", "reduction", "ignore"), NLL_CASES
)
def test_nll_loss_forward_and_backward_convert(
    shape: tuple[int, ...], labels: Any, weighted: bool, reduction: int, ignore: int
) -> None:
    """(output, total_weight) and the gradient of the logits, as the ATen ops."""
    x, y = torch.randn(*shape), torch.tensor(labels)
    w = torch.rand(shape[1] if len(shape) > 1 else shape[0]) + 0.5
    two_d = len(shape) == 4
    forward = aten_op("nll_loss2d_forward" if two_d else "nll_loss_forward")
    backward = aten_op("nll_loss2d_backward" if two_d else "nll_loss_backward")
    weight = (w,) if weighted else ()

    def loss(x: Any, y: Any, *w: Any) -> Any:
        return forward(x, y, w[0] if w else None, reduction, ignore)

    evaluates_like_torch(loss, x, y, *weight)
    output, total = loss(x, y, *weight)
    g = torch.randn_like(output)

    def grad(g: Any, x: Any, y: Any, total: Any, *w: Any) -> Any:
        return backward(g, x, y, w[0] if w else None, reduction, ignore, total)

    evaluates_like_torch(grad, g, x, y, total, *weight)


def aten_op(name: str) -> Any:
    return getattr(torch.ops.aten, name).default


def test_cross_entropy_loss_converts_for_inference() -> None:
    """torch.export keeps ``cross_entropy_loss`` whole: log_softmax + nll."""
    x, y = torch.randn(5, 4), torch.tensor([0, 3, 1, 3, 2])
    w = torch.tensor([0.5, 2.0, 1.5, 0.25])
    evaluates_like_torch(lambda x, y: F.cross_entropy(x, y), x, y)
    evaluates_like_torch(
        lambda x, y, w: F.cross_entropy(x, y, w, ignore_index=3, reduction="sum"),
        x,
        y,
        w,
    )
    logits, labels = torch.randn(2, 3, 4), torch.randint(0, 3, (2, 4))
    evaluates_like_torch(
        lambda x, y: F.cross_entropy(x, y, reduction="none"), logits, labels
    )


def test_cross_entropy_refusals_name_the_argument() -> None:
    x, y = torch.randn(5, 4), torch.tensor([0, 3, 1, 3, 2])
    smoothed = capture(lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1), (x, y))
    probs = capture(lambda x, p: F.cross_entropy(x, p), (x, torch.rand(5, 4)))
    (smoothing,) = unsupported_ops(smoothed.graph_module)
    (probabilities,) = unsupported_ops(probs.graph_module)
    assert "label_smoothing=0.1 is not supported" in smoothing
    assert "class probabilities as target are not supported" in probabilities


@pytest.mark.parametrize(
    "options",
    [
        {"grad": ["x"]},
        {"grad": ["x"], "optimizer": qidao.optim.SGD(lr=0.1)},
        {"grad": ["x"], "checkpoint": 2},
    ],
    ids=["grad", "optimizer", "checkpoint"],
)
def test_qidao_compile_of_a_module_refuses_training_options(
    options: dict[str, Any],
) -> None:
    """Its gradients are PyTorch's: the error says to train through torch.compile
    (it was torch's own ``treespec.unflatten`` ValueError)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    with pytest.raises(qidao.ArgumentError, match=r"trains through torch\.compile"):
        qidao.compile(model, example_inputs=(torch.randn(2, 4),), **options)


def test_metadata_checks_in_the_training_graphs_are_dropped() -> None:
    """``x.to(dtype)`` leaves ``aten._assert_tensor_metadata`` in AOTAutograd's
    graphs: dropped, so strict mode compiles both halves and the gradient matches
    eager."""

    class Casts(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x.to(torch.float32)).relu().float().sum()

    torch.manual_seed(0)
    model, x = Casts(), torch.randn(4, 3, requires_grad=True)
    compiled = torch.compile(model, backend="qidao", options={"strict": True})
    compiled(x).backward()
    got = x.grad.clone()
    x.grad = None
    model(x).backward()
    torch.testing.assert_close(got, x.grad)
