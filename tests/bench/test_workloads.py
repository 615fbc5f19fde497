"""The benchmark harness: runs in subprocesses, checks outputs, computes ratios.

Timings are never asserted; only that the harness measures what it claims.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qidao
from qidao.bench.workloads import (
    Result,
    _check,
    copy_bandwidth,
    format_table,
    plot_speedups,
    run_bench,
    runs_on,
    speedups,
)
from qidao.examples import get_example


def test_bench_runs_each_backend_in_its_own_process(tmp_path: Path) -> None:
    csv = tmp_path / "bench.csv"
    results = run_bench(
        ["call16"],
        ("torch", "qidao", "qidao-raw", "numpy"),
        min_time=0.01,
        max_runs=50,
        csv_path=csv,
        progress=False,
    )
    assert [r.backend for r in results] == ["torch", "qidao", "qidao-raw"]
    assert all(not r.error and r.runs >= 5 and r.median_us > 0 for r in results)
    header = csv.read_text().splitlines()[0]
    assert header.startswith("workload,backend,threads,median_us")
    assert len(csv.read_text().splitlines()) == 4


def test_a_wrong_output_records_no_time() -> None:
    want = [np.arange(4, dtype=np.float32)]
    with pytest.raises(
        AssertionError, match=r"differs from the NumPy reference at index \(2,\)"
    ):
        _check("w", "b", [np.array([0, 1, 7, 3], np.float32)], want)


def test_speedup_is_torch_over_backend() -> None:
    rows = [Result("w", "torch", 1, 10.0, 5, 0.0), Result("w", "qidao", 1, 2.5, 5, 0.1)]
    assert speedups(rows)[("w", "qidao")] == pytest.approx(4.0)


def test_gb_per_s_is_bytes_over_the_median() -> None:
    row = Result("w", "qidao", 1, 1000.0, 5, 0.1, bytes_per_call=8_000_000)
    assert row.gb_per_s == pytest.approx(8.0)
    assert Result("w", "qidao", 1, 1000.0, 5, 0.1).gb_per_s is None


def test_copy_bandwidth_is_the_fastest_preallocated_copy() -> None:
    rows = [
        Result("copy24", "numpy", 1, 2000.0, 5, 0.0, bytes_per_call=8_000_000),
        Result("copy24", "qidao-raw", 1, 1000.0, 5, 0.0, bytes_per_call=8_000_000),
        Result("copy24", "qidao", 1, 500.0, 5, 0.0, bytes_per_call=8_000_000),
    ]
    assert copy_bandwidth(rows) == pytest.approx(8.0)
    assert "copy bandwidth (copy24, best preallocated copy): 8.0 GB/s" in (
        format_table(rows)
    )


def test_numpy_backend_runs_only_where_a_workload_has_a_numpy_version() -> None:
    assert runs_on("copy24", "numpy")
    assert not runs_on("chain", "numpy")
    assert runs_on("chain", "torch")
    results = run_bench(
        ["call16", "copy24"], ("numpy",), min_time=0.01, max_runs=5, progress=False
    )
    assert [(r.workload, r.backend) for r in results] == [("copy24", "numpy")]
    assert not results[0].error and results[0].gb_per_s is not None


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    rows = [
        Result("a", "torch", 1, 10.0, 5, 0.0),
        Result("a", "qidao", 1, 2.0, 5, 0.1),
        Result("b", "torch", 1, 10.0, 5, 0.0),
        Result("b", "qidao", 1, 20.0, 5, 0.1),
    ]
    path = tmp_path / "plot" / "speedup.png"
    plot_speedups(rows, path)
    assert path.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("name", ["chain24", "copy24", "softmax", "layernorm"])
def test_memory_bound_workloads_state_their_bytes(name: str) -> None:
    example = get_example(name)
    inputs = example.inputs(np.random.default_rng(0))
    outputs = example.reference(*inputs)
    weights = 2 * 4 * 1024 if name == "layernorm" else 0  # its weight and bias
    moved = sum(a.nbytes for a in (*inputs, *outputs)) + weights
    assert example.bytes_per_call == moved


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_row_workloads_agree_with_torch_and_qidao(name: str) -> None:
    torch = pytest.importorskip("torch", reason="the torch version needs PyTorch")
    import qidao

    example = get_example(name)
    (x,) = example.inputs(np.random.default_rng(0))
    (want,) = example.reference(x)
    with torch.inference_mode():
        got_torch = example.torch_fn(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got_torch, want, rtol=1e-4, atol=1e-5)
    (got,) = qidao.compile(example.build())(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_matmul_of_any_shape_is_a_workload(tmp_path: Path) -> None:
    """``matmulMxKxN``: qidao, NumPy and ONNX Runtime (from an ONNX file written for
    the shape) each checked against the float64 product, GFLOP/s from 2*M*K*N."""
    pytest.importorskip("onnxruntime")
    example = get_example("matmul3x20x7")
    assert example.flops_per_call == 2 * 3 * 20 * 7
    x, w = example.inputs(np.random.default_rng(0))
    assert (x.shape, w.shape) == ((3, 20), (20, 7))
    np.testing.assert_allclose(example.reference(x, w)[0], x @ w, rtol=1e-5, atol=1e-5)
    results = run_bench(
        ["matmul3x20x7"],
        ("qidao", "numpy", "onnxruntime"),
        min_time=0.01,
        max_runs=20,
        csv_path=tmp_path / "bench.csv",
        progress=False,
    )
    assert [r.backend for r in results] == ["qidao", "numpy", "onnxruntime"]
    assert all(not r.error and r.gflop_per_s is not None for r in results), results


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("matmul0x4x4", "M, K and N must be at least 1"),
        ("matmul70000x70000x1", "at most 268435456 elements"),
        ("matmul4x4", "unknown built-in model 'matmul4x4'"),
    ],
)
def test_a_bad_matmul_workload_says_why(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_example(name)


def test_a_weight_in_gguf_blocks_is_a_workload(tmp_path: Path) -> None:
    """``q8_0_MxKxN`` / ``q4_0_MxKxN``: qidao on the blocks, PyTorch and NumPy on
    the weight decoded ahead, each checked against the float64 product of the
    decoded weight; GB/s from the blocks' bytes."""
    gguf = pytest.importorskip("gguf", reason="gguf decodes the reference")
    example = get_example("q4_0_2x64x8")
    x, w = example.inputs(np.random.default_rng(0))
    assert (x.shape, w.shape, w.dtype) == ((2, 64), (8, 2, 18), np.int8)
    assert example.bytes_per_call == 8 * 2 * 18 + 4 * (2 * 64 + 2 * 8)
    decoded = gguf.quants.dequantize(
        w.view(np.uint8).reshape(8, -1), gguf.GGMLQuantizationType.Q4_0
    )
    np.testing.assert_allclose(example.reference(x, w)[0], x @ decoded.T, atol=1e-5)
    results = run_bench(
        ["q4_0_2x64x8"],
        ("torch", "qidao", "numpy"),
        min_time=0.01,
        max_runs=20,
        csv_path=tmp_path / "bench.csv",
        progress=False,
    )
    assert len(results) == 3
    assert all(not r.error and r.gb_per_s is not None for r in results), results


def test_a_q4_k_workload_is_super_blocks_checked_against_gguf() -> None:
    gguf = pytest.importorskip("gguf", reason="gguf decodes the reference")
    example = get_example("q4_k_2x512x8")
    x, w = example.inputs(np.random.default_rng(0))
    assert (x.shape, w.shape, w.dtype) == ((2, 512), (8, 2, 144), np.int8)
    assert example.bytes_per_call == 8 * 2 * 144 + 4 * (2 * 512 + 2 * 8)
    decoded = gguf.quants.dequantize(
        w.view(np.uint8).reshape(8, -1), gguf.GGMLQuantizationType.Q4_K
    )
    np.testing.assert_allclose(example.reference(x, w)[0], x @ decoded.T, atol=1e-4)
    (got,) = qidao.compile(example.build())(x, w)
    np.testing.assert_allclose(got, x @ decoded.T, atol=1e-4)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("q8_0_1x40x4", "K a multiple of 32"),
        ("q4_k_1x64x4", "K a multiple of 256"),
        ("q4_0_0x64x4", "M, N at least 1"),
        ("q5_0_1x64x4", "unknown built-in model 'q5_0_1x64x4'"),
    ],
)
def test_a_gguf_workload_of_a_bad_shape_is_named(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_example(name)
