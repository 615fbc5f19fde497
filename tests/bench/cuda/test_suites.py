"""The GPU speed targets' workloads (``qidao/bench/cuda/suites.py``) without a GPU: the
suite's order, sizes, schedules and targets; each small variant run on the CPU
emulator and checked against NumPy (or PyTorch eager, for the whole models); the
torch side that the bench checks against on a GPU, here on the CPU in float64;
the operator workloads at their full sizes compiled to CUDA C. With a GPU, the
small suite on the device against PyTorch there."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import numpy as np
import pytest

import qidao
from qidao.bench.cuda.measure import HostError, measure, not_built_reason
from qidao.bench.cuda.models import BERT_BASE_B8, RESNET50_B32
from qidao.bench.cuda.suites import SUITES, TARGET_WORKLOADS, TARGET_WORKLOADS_SMALL
from qidao.bench.cuda.workloads import TENSOR_CORES
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.runtime.cuda import cuda_unavailable_reason

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None, reason="g++ (the emulator) is not on PATH"
)
NO_GPU = cuda_unavailable_reason()

OPS = [n for n in SUITES["targets-small"] if n not in ("resnet50_small", "bert_small")]
MODELS = ["resnet50_small", "bert_small"]


def one_call(call: Callable[[], object], min_time: float, max_runs: int) -> list[float]:
    call()
    return [1e-3]


def test_the_suite_is_the_speed_targets_in_order() -> None:
    assert SUITES["targets"] == (
        "chain26",
        "copy26",
        "softmax8192",
        "layernorm8192",
        "matmul4096",
        "matmul4096_tf32",
        "matmul4096_fp16",
        "resnet50",
        "bert",
    )
    assert SUITES["targets-small"] == tuple(f"{n}_small" for n in SUITES["targets"])
    targets = {
        n: w.target.describe() if w.target else "" for n, w in TARGET_WORKLOADS.items()
    }
    assert targets == {
        "chain26": "of_copy>=0.85",
        "copy26": "",
        "softmax8192": "vs_torch>=1",
        "layernorm8192": "vs_torch>=1",
        "matmul4096": "vs_torch>=0.9",
        "matmul4096_tf32": "vs_torch>=0.7",
        "matmul4096_fp16": "vs_torch>=0.7",
        "resnet50": "vs_torch>=1",
        "bert": "vs_torch>=1",
    }
    for suite in (TARGET_WORKLOADS, TARGET_WORKLOADS_SMALL):
        for name, w in suite.items():
            assert w.schedule == "default", name
            assert w.timeout_s is not None and w.timeout_s >= 60, name
            tensor_cores = dict(w.options).get(TENSOR_CORES)
            assert tensor_cores == (None if w.precision == "fp32" else w.precision)
    assert [w.precision for w in TARGET_WORKLOADS.values()][4:7] == [
        "fp32",
        "tf32",
        "fp16",
    ]
    assert TARGET_WORKLOADS["copy26"].backends == ("qidao", "memcpy", "torch")


def test_the_full_sizes() -> None:
    assert TARGET_WORKLOADS["chain26"].bytes_per_call == 2 * 4 * 2**26
    assert TARGET_WORKLOADS["copy26"].bytes_per_call == 2 * 4 * 2**26
    assert TARGET_WORKLOADS["softmax8192"].bytes_per_call == 2 * 4 * 8192 * 8192
    assert TARGET_WORKLOADS["matmul4096"].flops_per_call == 2 * 4096**3
    assert RESNET50_B32.input_shape == (32, 3, 224, 224)
    assert BERT_BASE_B8.input_shape == (8, 128)
    bert = BERT_BASE_B8.config()
    assert (bert.hidden_size, bert.num_hidden_layers, bert.num_attention_heads) == (
        768,
        12,
        12,
    )
    assert (bert.intermediate_size, bert.vocab_size) == (3072, 30522)
    resnet = RESNET50_B32.config()
    assert (list(resnet.depths), resnet.layer_type) == ([3, 4, 6, 3], "bottleneck")


@needs_gxx
@pytest.mark.parametrize("name", OPS)
def test_small_workloads_match_numpy_on_the_emulator(name: str) -> None:
    w = TARGET_WORKLOADS_SMALL[name]
    reason = not_built_reason(w)
    if reason is not None:  # the tensor-core matmuls, until tensor_cores is wired
        assert w.precision in ("tf32", "fp16")
        assert reason.startswith("not built: ") and "tensor_cores" in reason
        with pytest.raises(HostError, match=r"not built: .*tensor_cores"):
            measure(name, "qidao", "emulate", one_call)
        return
    row = measure(name, "qidao", "emulate", one_call)  # checked against NumPy
    assert row.error == "" and row.rel_err is not None and row.rel_err < 1e-3
    assert row.precision == w.precision


@needs_gxx
@pytest.mark.parametrize("name", MODELS)
def test_small_models_match_pytorch_on_the_emulator(name: str) -> None:
    row = measure(name, "qidao", "emulate", one_call)  # against PyTorch on the CPU
    assert row.error == "" and row.rel_err is not None and row.rel_err < 1e-4
    assert row.launches > 10 and row.target == "vs_torch>=1"


@pytest.mark.parametrize("name", OPS)
def test_the_torch_side_matches_numpy(name: str) -> None:
    """What the bench checks against on a GPU (``torch_fn`` on float64 copies of
    the inputs) and what its torch row times (``torch_prepare``), here on CPU
    tensors, against the NumPy reference."""
    torch = pytest.importorskip("torch")
    w = TARGET_WORKLOADS_SMALL[name]
    inputs = w.inputs(np.random.default_rng(0))
    want = w.reference(*inputs)
    wide = [torch.from_numpy(a).double() for a in inputs]
    assert w.torch_reference is None
    w.check([w.torch_fn(*wide).numpy()], want)
    if w.torch_prepare is not None:
        call = w.torch_prepare(*[torch.from_numpy(a) for a in inputs])
        w.check([call().numpy()], want)


@pytest.mark.parametrize(
    "name", [n for n in SUITES["targets"] if n not in ("resnet50", "bert")]
)
def test_the_full_sizes_compile_to_cuda(name: str) -> None:
    """At the full sizes (no data made, no device): launches within CUDA's
    limits, nothing serial, the tensor-core matmuls on the tensor cores."""
    w = TARGET_WORKLOADS[name]
    reason = not_built_reason(w)
    if reason is not None:
        pytest.skip(reason)
    compiled = qidao.compile(
        w.build(), target="cuda", schedule=w.schedule, **dict(w.options)
    )
    assert isinstance(compiled, CompiledCuda)
    assert compiled.stats["serial_launches"] == []
    for launch in compiled.program.launches:
        assert np.prod(launch.block) <= 1024, (name, launch.block)
        assert launch.grid[1] <= 65535 and launch.grid[2] <= 65535, (name, launch.grid)
    on_tensor_cores = "wmma::mma_sync" in compiled.ir("cuda")
    assert on_tensor_cores == (w.precision != "fp32"), compiled.stats


@pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA device: {NO_GPU}")
@pytest.mark.parametrize("name", OPS)
def test_small_workloads_on_the_gpu_match_pytorch_there(name: str) -> None:
    w = TARGET_WORKLOADS_SMALL[name]
    for backend in w.backends:
        if backend == "qidao" and not_built_reason(w) is not None:
            continue
        row = measure(name, backend, "cuda", min_time=0.01, max_runs=10)
        assert row.error == "" and row.median_us > 0, (backend, row)
        assert row.rel_err is not None and row.rel_err < 1e-3, (backend, row)
