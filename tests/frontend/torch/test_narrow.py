"""bfloat16 and float16 PyTorch models, compiled by qidao.compile and
torch.compile(backend="qidao"), against PyTorch eager in the same dtype.

Each op computes in float32 and rounds its result once (``narrow.py``), as
PyTorch's CPU kernels do, so qidao's output is PyTorch's up to the order of the
float32 sums: a bfloat16 ulp or two where a sum lands near a rounding boundary.
A bfloat16 model's linear layers become ``tg.matmul_bf16`` where the CPU has
AVX512_BF16 (``bf16-matmul``)."""

from __future__ import annotations

from collections.abc import Iterator

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn

import qidao  # noqa: E402
from qidao.compiler.targets.cpu.target import BF16_FEATURE  # noqa: E402
from qidao.frontend.torch.narrow import from_numpy, to_numpy  # noqa: E402
from qidao.runtime.cpu import host_has  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")

ULP = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
"""The spacing of the narrow type's values at 1 (relative precision)."""


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch.manual_seed(0)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class Block(nn.Module):
    """A transformer feed-forward block with its norm and a softmax head: linear,
    GELU, linear, residual, layer norm, softmax."""

    def __init__(self, width: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.down(nn.functional.gelu(self.up(x)))
        return torch.softmax(self.norm(x + h), dim=-1)


def _close(got: torch.Tensor, want: torch.Tensor, ulps: float = 2) -> None:
    """Within ``ulps`` of the narrow type's spacing at the largest magnitude."""
    assert got.dtype == want.dtype
    scale = float(want.float().abs().max())
    err = float((got.float() - want.float()).abs().max())
    assert err <= ulps * ULP[want.dtype] * scale, (err, scale)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_narrow_model_matches_eager_in_its_dtype(dtype: torch.dtype) -> None:
    model = Block().eval().to(dtype)
    x = torch.randn(32, 64).to(dtype)
    with torch.no_grad():
        want = model(x)
        compiled = qidao.compile(model, example_inputs=(x,))
        got = compiled(x)
    assert compiled.compiled is not None, compiled.fallback_ops  # all of it compiled
    _close(got, want)
    # and the narrow rounding is there: float32 compute of the same weights differs
    wide = Block().eval()
    wide.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    with torch.no_grad():
        exact = wide(x.float())
    assert float((got.float() - exact).abs().max()) > 0


@pytest.mark.skipif(not host_has(BF16_FEATURE), reason="this CPU has no AVX512_BF16")
def test_a_bf16_models_linears_compute_in_bf16() -> None:
    model = Block().eval().to(torch.bfloat16)
    x = torch.randn(32, 64).to(torch.bfloat16)
    with torch.no_grad():
        compiled = qidao.compile(model, example_inputs=(x,))
        text = compiled.ir("tg")
        fallback = qidao.compile(model, example_inputs=(x,), bf16=False)
        _close(compiled(x), fallback(x))
    assert text.count("tg.matmul_bf16") == 2  # up and down
    assert "tg.matmul_bf16" not in fallback.ir("tg")


def test_float16_linears_are_not_bf16_products() -> None:
    """float16 has 11 significant bits: its products are float32 FMAs of widened
    halves (no CPU here has a float16 dot product with float32 sums)."""
    model = Block().eval().to(torch.float16)
    x = torch.randn(32, 64).to(torch.float16)
    with torch.no_grad():
        text = qidao.compile(model, example_inputs=(x,)).ir("tg")
    assert "tg.matmul_bf16" not in text and "tg.matmul" in text


def test_a_cast_inside_the_model_is_a_cast() -> None:
    """``.float()`` and ``.to(torch.bfloat16)`` in the forward: tg.cast both ways,
    the float32 part computed in float32 (no rounding to bf16 there)."""

    class Mixed(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.exp(x.float()) / 3.0  # float32
            return (y.to(torch.bfloat16) * 2).float() + 1

    x = torch.randn(8, 16)
    with torch.no_grad():
        want = Mixed()(x)
        compiled = qidao.compile(Mixed(), example_inputs=(x,))
        got = compiled(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)  # each step exact or one
    assert compiled.ir("tg").count("tg.cast") >= 2  # rounding, at the same place


def test_torch_compile_takes_and_gives_bf16_tensors() -> None:
    model = Block().eval().to(torch.bfloat16)
    x = torch.randn(4, 64).to(torch.bfloat16)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="qidao")(x)
    assert got.dtype == torch.bfloat16
    _close(got, want)


def test_bf16_tensors_cross_to_numpy_as_ml_dtypes_sharing_memory() -> None:
    t = torch.randn(3, 5).to(torch.bfloat16)
    a = to_numpy(t)
    assert a.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(a.astype(np.float32), t.float().numpy())
    back = from_numpy(a)
    assert back.dtype == torch.bfloat16 and torch.equal(back, t)
    a[0, 0] = 7  # the same memory, both ways
    assert float(t[0, 0]) == 7.0 and float(back[0, 0]) == 7.0
    half = torch.randn(4).to(torch.float16)
    np.testing.assert_array_equal(to_numpy(half), half.numpy())
