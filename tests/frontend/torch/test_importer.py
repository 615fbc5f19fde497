"""The PyTorch frontend: qidao.compile(module, example_inputs) and
torch.compile(backend="qidao"), compared with PyTorch eager as the oracle."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn
F = torch.nn.functional

import qidao  # noqa: E402
from qidao.compiler.models import load_model  # noqa: E402
from qidao.frontend.torch.backend import TorchCompiled  # noqa: E402
from qidao.frontend.torch.importer import (  # noqa: E402
    SUPPORTED_OPS,
    TorchImportError,
    UnsupportedTorchOpsError,
    capture,
    partition,
    to_tg,
)
from qidao.runtime.errors import ArgumentError  # noqa: E402

RTOL = 1e-4


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch.manual_seed(0)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def assert_matches(got: Any, want: Any) -> None:
    """Same structure; every tensor equal to PyTorch's to RTOL (relative to the
    tensor's scale, so values near zero do not fail on rounding)."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_matches(g, w)
        return
    assert isinstance(got, torch.Tensor), f"expected a tensor, got {type(got)}"
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = max(float(want.detach().abs().max()), 1.0)
    np.testing.assert_allclose(
        got.numpy(), want.detach().numpy(), rtol=RTOL, atol=RTOL * scale
    )


def both_ways(model: Any, *inputs: torch.Tensor) -> TorchCompiled:
    """Compile ``model`` with qidao.compile and with torch.compile; both must match
    eager PyTorch. Returns the qidao.compile result."""
    with torch.no_grad():
        want = model(*inputs)
    compiled = qidao.compile(model, example_inputs=inputs)
    assert isinstance(compiled, TorchCompiled)
    assert_matches(compiled(*inputs), want)
    dynamo = torch.compile(model, backend="qidao", dynamic=False)
    with torch.no_grad():
        assert_matches(dynamo(*inputs), want)
    return compiled


# ---- models -----------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class ResBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class SmallCNN(nn.Module):
    """ResNet-style: stem conv + BN + ReLU + max pool, a residual block, global
    average pool, flatten, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.block = ResBlock(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(F.relu(self.bn(self.stem(x))))
        y = self.block(y)
        y = F.adaptive_avg_pool2d(y, 1)
        return self.head(torch.flatten(y, 1))


def randomize_bn(model: nn.Module) -> nn.Module:
    """Non-trivial running statistics, so eval-mode BatchNorm does something."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model.eval()


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block: multi-head attention written out with
    view/transpose/reshape/matmul/softmax, then a GELU MLP."""

    def __init__(self, d: int = 32, heads: int = 4, approximate: str = "tanh") -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate=approximate)
        self.fc2 = nn.Linear(4 * d, d)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, h, d // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, s, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


# ---- the three models, both ways ----------------------------------------------


def test_mlp_matches_pytorch_both_ways() -> None:
    compiled = both_ways(MLP().eval(), torch.randn(4, 16))
    assert compiled.compiled is not None and not compiled.fallback_ops
    assert "tg.matmul" in compiled.ir("input")


def test_cnn_matches_pytorch_both_ways_and_batch_norm_folds() -> None:
    model = randomize_bn(SmallCNN())
    compiled = both_ways(model, torch.randn(2, 3, 16, 16))
    assert "tg.batch_norm" in compiled.ir("input")
    assert "tg.batch_norm" not in compiled.ir("tg")  # folded into the convolutions


def test_transformer_block_matches_pytorch_both_ways() -> None:
    compiled = both_ways(EncoderBlock().eval(), torch.randn(2, 8, 32))
    assert compiled.compiled is not None
    assert "tg.softmax" in compiled.ir("input")


@pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")  # torch's own
@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_core_aten_form_converts_too(name: str) -> None:
    """The decomposed graph (addmm, convolution, native batch/layer norm, _softmax,
    expand + bmm) converts and matches as well."""
    model, x = {
        "cnn": (randomize_bn(SmallCNN()), torch.randn(2, 3, 16, 16)),
        "transformer": (EncoderBlock().eval(), torch.randn(2, 8, 32)),
    }[name]
    module = to_tg(capture(model, (x,), decompose=True))
    (got,) = qidao.compile(module)(x.numpy())
    assert_matches(torch.from_numpy(got), model(x))


def test_plain_function_compiles() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.tanh(a @ b), (a * 2.0 - 1.0).sum(dim=1)

    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert_matches(qidao.compile(fn, example_inputs=(a, b))(a, b), fn(a, b))


# ---- operator coverage --------------------------------------------------------


def _elementwise(x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    p = x.abs() + 0.5
    return [
        x + y,
        x - 2 * y,
        torch.add(x, y, alpha=0.5),
        x * y,
        x / (y.abs() + 1),
        3.0 - x,
        1.0 / p,
        -x,
        torch.exp(x),
        torch.log(p),
        torch.sqrt(p),
        torch.rsqrt(p),
        torch.tanh(x),
        torch.sigmoid(x),
        F.silu(x),
        F.leaky_relu(x, 0.1),
        F.hardtanh(x, -0.5, 0.5),
        F.relu6(x * 4),
        torch.clamp(x, min=-0.3, max=0.2),
        p**2,
        p**0.5,
        p**-1,
        F.gelu(x, approximate="tanh"),
        F.gelu(x),
        torch.erf(x * 2.0),
        torch.sin(x * 3.0),
        torch.cos(x * 3.0),
    ]


def _reductions(x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    return [
        x.mean(dim=-1),
        x.sum(dim=(0, 2), keepdim=True),
        x.amax(dim=1),
        x.var(dim=-1, unbiased=False, keepdim=True),
        x.var(dim=-1),
        x.sum(),
        x.mean(),
        torch.softmax(x, dim=1),
        torch.log_softmax(x, dim=-1),
        F.layer_norm(x, (x.shape[-1],)),
    ]


def _layout(x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    return [
        x.permute(2, 0, 1).contiguous(),
        x.transpose(0, 2).reshape(-1, 2),
        x.view(2, -1).t(),
        x.flatten(),
        x.unsqueeze(1).squeeze(1),
        x.sum(1, keepdim=True).expand(2, 3, 4),
        torch.matmul(x, y.transpose(1, 2)),
        torch.bmm(x, y.transpose(1, 2)),
        torch.matmul(x.sum(0), y.sum((0, 1))),
        torch.matmul(y.sum((0, 1)), x.sum(0).t()),
    ]


def _pooling(x: torch.Tensor, w: torch.Tensor) -> list[torch.Tensor]:
    return [
        F.conv2d(x, w, stride=2, padding=1),
        F.conv2d(x, w, padding="same", dilation=2),
        F.conv2d(x, w.reshape(12, 1, 3, 3), groups=3),
        F.max_pool2d(x, 3, 2, 1),
        F.avg_pool2d(x, 2),
        F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
        F.adaptive_avg_pool2d(x, 2),
        F.scaled_dot_product_attention(x, x, x),
    ]


OP_CASES: dict[
    str,
    tuple[Callable[..., list[torch.Tensor]], Callable[[], tuple[torch.Tensor, ...]]],
] = {
    "elementwise": (_elementwise, lambda: (torch.randn(3, 4), torch.randn(3, 4))),
    "reductions": (_reductions, lambda: (torch.randn(2, 3, 4), torch.randn(1))),
    "layout": (_layout, lambda: (torch.randn(2, 3, 4), torch.randn(2, 3, 4))),
    "pooling": (_pooling, lambda: (torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3))),
}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_operators_match_pytorch(case: str) -> None:
    fn, make = OP_CASES[case]
    inputs = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every op here must be supported
        compiled = qidao.compile(fn, example_inputs=inputs)
    assert_matches(compiled(*inputs), fn(*inputs))


def test_supported_ops_are_listed() -> None:
    for op in ("aten.linear.default", "aten.conv2d.default", "aten.layer_norm.default"):
        assert op in SUPPORTED_OPS
    assert list(SUPPORTED_OPS) == sorted(SUPPORTED_OPS)


# ---- unsupported operators: strict error, fallback -----------------------------


class Unsupported(nn.Module):
    """cummax, cummin and logcumsumexp (a cat between them is supported)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cummax(self.fc(x), dim=1).values
        z = torch.cat([y, torch.cummin(x, dim=1).values], dim=1)
        return torch.relu(torch.logcumsumexp(z, dim=1)) * 2.0


def test_strict_mode_lists_every_unsupported_op_with_its_nodes() -> None:
    x = torch.randn(2, 8)
    with pytest.raises(UnsupportedTorchOpsError) as info:
        qidao.compile(Unsupported().eval(), example_inputs=(x,), strict=True)
    message = str(info.value)
    assert "3 unsupported operator(s)" in message
    assert "aten.logcumsumexp.default: logcumsumexp" in message
    assert "aten.cummin.default: cummin" in message
    assert "aten.cummax.default: cummax" in message
    assert "strict=True" in message
    assert "aten.cat.default" not in info.value.ops
    assert set(info.value.ops) >= {"aten.logcumsumexp.default", "aten.cummin.default"}


def test_fallback_runs_unsupported_ops_in_pytorch_with_a_notice() -> None:
    model, x = Unsupported().eval(), torch.randn(2, 8)
    with pytest.warns(
        UserWarning, match=r"in PyTorch: .*aten\.logcumsumexp\.default"
    ) as record:
        compiled = qidao.compile(model, example_inputs=(x,))
    assert len(record) == 1 and "\n" not in str(record[0].message)
    # qidao parts: fc; the cat of cummax and cummin; relu * 2 after logcumsumexp
    assert compiled.compiled is None and len(compiled.parts) == 3
    assert "aten.cummin.default" in compiled.fallback_ops
    assert "aten.cat.default" not in compiled.fallback_ops
    assert_matches(compiled(x), model(x))
    with pytest.raises(ValueError, match="runs partly in PyTorch"):
        compiled.ir("tg")


def test_metadata_checks_are_dropped_not_run_in_pytorch() -> None:
    """``x.to(dtype)`` exports an ``aten._assert_tensor_metadata`` beside the cast;
    the check holds by construction (inputs are checked at every call), so it is
    dropped: the model is one qidao part, under strict mode too."""

    class Casts(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x.to(torch.float32) * 2).float() + 1

    model, x = Casts(), torch.randn(2, 3)
    graph = torch.export.export(model, (x,)).graph_module.graph
    assert any(
        n.target is torch.ops.aten._assert_tensor_metadata.default for n in graph.nodes
    )
    captured = capture(model, (x,))
    assert not any(
        n.target is torch.ops.aten._assert_tensor_metadata.default
        for n in captured.graph_module.graph.nodes
    )
    compiled = qidao.compile(model, example_inputs=(x,), strict=True)
    assert_matches(compiled(x), model(x))


def test_a_part_whose_results_nothing_uses_is_removed_not_compiled() -> None:
    """Supported nodes left dead beside a fallback make a part with no outputs: it
    is dropped (a graph with no outputs is no program), the live part stays."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(torch.ops.aten.sin.default, (x,))  # dead
    y = graph.call_function(torch.ops.aten.logcumsumexp.default, (x, 1))
    z = graph.call_function(torch.ops.aten.cos.default, (y,))
    graph.output((z,))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    names = partition(gm)
    assert len(names) == 1
    calls = [n for n in gm.graph.nodes if n.op == "call_module"]
    assert [str(n.target) for n in calls] == names
    assert not any(n.target is torch.ops.aten.sin.default for n in gm.graph.nodes)
    gm.recompile()
    t = torch.randn(2, 5)
    torch.testing.assert_close(gm(t)[0], torch.logcumsumexp(t, 1).cos())


DATA_DEPENDENT: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "mask index": (lambda x: x[x > 0] * 2, "aten.index.Tensor"),
    "mask index, reduced": (lambda x: x[x > 0].sum() * 2, "aten.index.Tensor"),
    "nonzero": (lambda x: torch.nonzero(x).float() * 2, "aten.nonzero.default"),
    "masked_select": (
        lambda x: torch.masked_select(x, x > 0) + 1,
        "aten.masked_select.default",
    ),
    "unique": (lambda x: torch.unique(x) * 2, "aten._unique2.default"),
}
"""Ops whose result's shape depends on the input values (issue 29, F19), and the
op that makes that shape."""


@pytest.mark.parametrize("case", sorted(DATA_DEPENDENT))
def test_data_dependent_shapes_run_in_pytorch_or_are_named(case: str) -> None:
    """Without strict, the op with the data-dependent shape and what reads it run
    in PyTorch (they were compiled by qidao, which raised torch's
    GuardOnDataDependentSymNode); with strict, the error names the op and why,
    and not the size checks torch.export adds after it."""
    fn, op = DATA_DEPENDENT[case]
    x = torch.tensor([1.0, -1.0, 2.0, -3.0, 2.0])
    with pytest.warns(UserWarning, match=f"in PyTorch: .*{op}"):
        compiled = qidao.compile(fn, example_inputs=(x,))
    assert_matches(compiled(x), fn(x))
    with pytest.raises(UnsupportedTorchOpsError) as info:
        qidao.compile(fn, example_inputs=(x,), strict=True)
    reason = next(label for label in info.value.ops if label.startswith(op))
    assert "depends on the input values" in reason
    assert op in str(info.value).splitlines()[0]
    for bookkeeping in ("_assert_scalar", "sym_size", "operator."):
        assert bookkeeping not in str(info.value)


def test_a_number_read_from_a_tensor_runs_in_pytorch() -> None:
    """``Tensor.item()`` is a number known only when the model runs: what reads it
    stays in PyTorch (it reached qidao as a graph input that is not a tensor)."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * x.sum().item()

    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match="in PyTorch"):
        compiled = qidao.compile(fn, example_inputs=(x,))
    assert_matches(compiled(x), fn(x))
    with pytest.raises(UnsupportedTorchOpsError, match="known only when it runs"):
        qidao.compile(fn, example_inputs=(x,), strict=True)


def test_torch_compile_strict_error_reaches_the_user_unwrapped() -> None:
    """Dynamo wraps a backend's exception in its BackendCompilerFailed; qidao's
    refusal is raised by the compiled graph instead, as it is, with the ops named
    on its first line."""
    model, x = Unsupported().eval(), torch.randn(2, 8)
    fast = torch.compile(model, backend="qidao", options={"strict": True})
    with pytest.raises(UnsupportedTorchOpsError) as info, torch.no_grad():
        fast(x)
    first_line = str(info.value).splitlines()[0]
    assert "aten.cummax.default, aten.cummin.default" in first_line
    with pytest.raises(TypeError, match=r"unknown option\(s\) nonsense"):
        torch.compile(model, backend="qidao", options={"nonsense": 1})(x)


def test_exact_gelu_compiles_through_erf() -> None:
    model, x = EncoderBlock(approximate="none").eval(), torch.randn(2, 8, 32)
    compiled = qidao.compile(model, example_inputs=(x,), strict=True)
    assert "tg.erf" in compiled.ir("tg")
    assert_matches(compiled(x), model(x))


@pytest.mark.parametrize("slope", [float("inf"), float("-inf"), float("nan")])
def test_leaky_relu_with_an_infinite_or_nan_slope_matches_pytorch(slope: float) -> None:
    """PyTorch's ``x > 0 ? x : x * slope``: x for x > 0 whatever the slope (the old
    ``relu(x) - slope * relu(-x)`` gave ``0 * inf`` = NaN there)."""
    model = nn.LeakyReLU(slope)
    x = torch.tensor([[3.0, 1e-7, 0.0, -0.0, -1e-7, -2.0, float("inf"), float("nan")]])
    compiled = qidao.compile(model, example_inputs=(x,), strict=True)
    torch.testing.assert_close(compiled(x), model(x), equal_nan=True)


class Rotary(nn.Module):
    """LLaMA's rotary position embedding: cos and sin of position * frequency."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, q: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        half = q.shape[-1] // 2
        rotated = torch.cat([-q[..., half:], q[..., :half]], dim=-1)
        return q * emb.cos() + rotated * emb.sin()


def test_rotary_embedding_compiles_through_sin_and_cos() -> None:
    model = Rotary().eval()
    q = torch.randn(2, 16, 8)
    positions = torch.arange(16, dtype=torch.float32) * 37.0  # angles up to 555
    compiled = qidao.compile(model, example_inputs=(q, positions), strict=True)
    tg_ir = compiled.ir("tg")
    assert "tg.sin" in tg_ir and "tg.cos" in tg_ir
    assert_matches(compiled(q, positions), model(q, positions))


def test_training_mode_batch_norm_and_dropout_are_unsupported() -> None:
    model, x = SmallCNN().train(), torch.randn(2, 3, 16, 16)
    with pytest.raises(UnsupportedTorchOpsError, match="training mode"):
        qidao.compile(model, example_inputs=(x,), strict=True)


# ---- calls, inputs, registration ----------------------------------------------


def test_calls_take_and_return_torch_tensors_and_check_inputs() -> None:
    model = MLP().eval()
    compiled = qidao.compile(model, example_inputs=(torch.randn(4, 16),))
    strided = torch.randn(16, 4).t()  # not contiguous: copied, still right
    assert_matches(compiled(strided), model(strided))
    with pytest.raises(ArgumentError, match="x"):
        compiled(torch.randn(5, 16))
    with pytest.raises(ArgumentError, match="x"):
        compiled(torch.randn(4, 16, dtype=torch.float64))
    with pytest.raises(
        ArgumentError, match=r"input 'x' \(#0\) must be a torch\.Tensor"
    ):
        compiled(np.zeros((4, 16), np.float32))
    with pytest.raises(TypeError, match="takes 1 input"):
        compiled(torch.randn(4, 16), torch.randn(4, 16))
    # issue 12, R13: a sparse tensor, or one of a dtype NumPy lacks, is named, not
    # a raw torch error; a bfloat16 tensor converts, and is refused by the
    # compiled signature (float32) with what it expected
    with pytest.raises(ArgumentError, match=r"torch.sparse_coo tensor.*to_dense"):
        compiled(torch.randn(4, 16).to_sparse())
    with pytest.raises(ArgumentError, match=r"dtype torch.complex64"):
        compiled(torch.randn(4, 16, dtype=torch.complex64))
    with pytest.raises(
        ArgumentError, match=r"input 'x' \(#0\).*dtype float32, got dtype bfloat16"
    ):
        compiled(torch.randn(4, 16).to(torch.bfloat16))


def test_example_inputs_are_required_and_only_for_torch() -> None:
    with pytest.raises(TorchImportError, match="example_inputs"):
        qidao.compile(MLP())
    with pytest.raises(TypeError, match="PyTorch models"):
        qidao.compile("model.onnx", example_inputs=(torch.randn(1),))


def test_load_model_gives_the_tg_module() -> None:
    module = load_model(MLP().eval(), example_inputs=(torch.randn(4, 16),))
    text = str(module)
    assert "tg.matmul" in text and "tensor<4x16xf32>" in text
    assert "%x" in text  # the input keeps its PyTorch name


def test_backend_is_registered_with_dynamo() -> None:
    assert "qidao" in torch._dynamo.list_backends()


def test_torch_compile_options_reach_qidao_compile() -> None:
    """torch.compile(backend="qidao", options={...}) passes them to qidao.compile."""
    from qidao.dynamo_backend import FrozenGraph, qidao_backend

    model = MLP().eval()
    x = torch.randn(4, 16)
    gm = torch.fx.symbolic_trace(model)
    frozen = qidao_backend(gm, [x], options={"threads": 1, "fuse": False})
    assert isinstance(frozen, FrozenGraph)
    assert frozen.options == {"threads": 1, "fuse": False}
    fast = torch.compile(model, backend="qidao", dynamic=False, options={"threads": 1})
    with torch.no_grad():
        assert_matches(fast(x), model(x))
    refused = qidao_backend(gm, [x], options=1)  # raised when called (Refused)
    with pytest.raises(TypeError, match="takes a dict"):
        refused(x)


def test_torch_compile_recompiles_for_a_new_shape() -> None:
    model = MLP().eval()
    fast = torch.compile(model, backend="qidao", dynamic=False)
    with torch.no_grad():
        for batch in (2, 3):
            x = torch.randn(batch, 16)
            assert_matches(fast(x), model(x))


class ConvBN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.bn(self.conv(x)))


def _dynamo_graphs(model: Any) -> tuple[Any, list[Any]]:
    """torch.compile(model) through the qidao backend, keeping what it returns."""
    from qidao.dynamo_backend import qidao_backend

    graphs: list[Any] = []

    def backend(gm: Any, example_inputs: Any, **options: Any) -> Any:
        graphs.append(qidao_backend(gm, example_inputs, **options))
        return graphs[-1]

    return torch.compile(model, backend=backend, dynamic=False), graphs


def test_torch_compile_freezes_parameters_and_folds_batch_norm() -> None:
    from qidao.dynamo_backend import FrozenGraph

    model = ConvBN().eval()
    fast, graphs = _dynamo_graphs(model)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        assert_matches(fast(x), model(x))
    (graph,) = graphs
    assert isinstance(graph, FrozenGraph)
    assert len(graph.frozen) == 6  # conv weight, bias; bn weight, bias, mean, var
    tg_text = graph.compiled.ir("tg")
    signature = next(line for line in tg_text.splitlines() if "func.func @main" in line)
    assert signature.count("tensor<") == 2  # x in, the result out: no weights
    assert "tg.batch_norm" not in tg_text  # folded into the convolution


def test_torch_compile_recompiles_when_a_weight_changes_in_place() -> None:
    model = ConvBN().eval()
    fast, graphs = _dynamo_graphs(model)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        assert_matches(fast(x), model(x))
        model.conv.weight.mul_(2.0)
        with pytest.warns(UserWarning, match="changed since the model was compiled"):
            got = fast(x)
        assert_matches(got, model(x))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # unchanged now: no second recompile
            assert_matches(fast(x), model(x))
    assert graphs[0].compilations == 2
