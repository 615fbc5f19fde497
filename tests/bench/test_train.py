"""``qidao bench train`` and the training models: the compiled step agrees with
PyTorch on the same weights and data (no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import qidao
from qidao.bench.train import agrees, format_table, run_train_bench
from qidao.bench.train_classifier import main as train_classifier
from qidao.bench.train_models import train_model


def test_the_mlp_graph_is_pytorchs_mlp() -> None:
    """Loss and every gradient of the tiny MLP as PyTorch's on its own weights."""
    model = train_model("mlp", tiny=True)
    module = model.torch_model()
    weights = model.weights(module)
    x, labels = model.data(np.random.default_rng(1))
    f = qidao.compile(model.graph(), grad=list(weights))
    loss, *grads = f(x, labels, *weights.values())
    ref = model.torch_loss(module, torch.from_numpy(x), torch.from_numpy(labels))
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    for got, (name, p) in zip(grads, module.named_parameters(), strict=True):
        assert p.grad is not None
        np.testing.assert_allclose(
            got, p.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )


def test_bench_train_runs_both_backends_in_their_processes(tmp_path: Path) -> None:
    results = run_train_bench(
        ["mlp"],
        min_time=0.05,
        csv_path=tmp_path / "train.csv",
        tiny=True,
        progress=False,
    )
    assert [r.backend for r in results] == ["torch", "qidao"]
    assert not any(r.error for r in results), [r.error for r in results]
    assert agrees(results, "mlp")  # the same three losses, step by step
    assert "| mlp | 1 |" in format_table(results)
    assert (tmp_path / "train.csv").read_text().startswith("workload,backend")


def test_the_classifier_example_trains(capsys: pytest.CaptureFixture[str]) -> None:
    assert train_classifier(["--steps", "20", "--batch", "16", "--workers", "0"]) == 0
    out = capsys.readouterr().out
    assert "| main process, no prefetch | 20 |" in out


def test_the_peak_is_measured_in_its_own_process() -> None:
    """The yardstick printed above the table: a positive, finite GFLOP/s (the FMA
    chains' rate; its value depends on the machine and is not asserted)."""
    from qidao.bench.train import measure_peak_gflops

    peak = measure_peak_gflops(1)
    assert np.isfinite(peak) and peak > 0
