"""A bfloat16 ONNX model (exported from PyTorch) against PyTorch eager in bfloat16.

The importer widens each op's bfloat16 inputs to float32 and rounds its outputs
back once; the initializers fold to float32 constants whose every value is a
bfloat16, so ``bf16-matmul`` makes each ``Gemm`` a ``tg.matmul_bf16`` where the CPU
has AVX512_BF16 (AMX tiles where it has AMX-BF16). ONNX Runtime's CPU provider
has no bfloat16 ``Gemm``: PyTorch is the reference."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the model is exported from PyTorch")

import qidao  # noqa: E402
from qidao.compiler.targets.cpu.target import BF16_FEATURE  # noqa: E402
from qidao.runtime.amx import amx_bf16_available  # noqa: E402
from qidao.runtime.cpu import host_has  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32)
    )
    model = model.eval().to(torch.bfloat16)
    path = tmp_path_factory.mktemp("bf16") / "mlp.onnx"
    x = torch.randn(48, 64).to(torch.bfloat16)
    torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17)
    return path, model


def _eager(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        t = torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        out: np.ndarray = model(t).float().numpy()
    return out


@pytest.mark.parametrize("bf16", [None, False])
def test_a_bf16_mlp_matches_eager(
    mlp: tuple[Path, torch.nn.Module], bf16: bool | None
) -> None:
    path, model = mlp
    x = np.random.default_rng(1).standard_normal((48, 64)).astype(ml_dtypes.bfloat16)
    compiled = qidao.compile(str(path), bf16=bf16)
    (got,) = compiled(x)
    assert got.dtype == ml_dtypes.bfloat16
    want = _eager(model, x)
    scale = np.abs(want).max()
    # a bfloat16 ulp at the largest output: the float32 sums' order differs
    np.testing.assert_allclose(got.astype(np.float32), want, atol=2**-7 * scale)
    native = "tg.matmul_bf16" in compiled.ir("tg")
    assert native == (bf16 is None and host_has(BF16_FEATURE))


@pytest.mark.skipif(not amx_bf16_available(), reason="no AMX-BF16 tiles here")
def test_its_gemms_run_on_amx_tiles(mlp: tuple[Path, torch.nn.Module]) -> None:
    path, _ = mlp
    compiled = qidao.compile(str(path))
    report = " ".join(compiled.stats["default_schedule"].values())
    assert report.count("tdpbf16ps") == 2, report
