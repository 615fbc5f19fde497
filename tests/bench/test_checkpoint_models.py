"""The checkpointing workloads: each builder graph is its PyTorch module, the
checkpointed PyTorch step trains as the plain one, and the profiler's peak is the
memory a step holds at once."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import numpy as np
import pytest

import qidao
from qidao.bench.checkpoint_models import (
    CHECKPOINT_MODELS,
    checkpoint_model,
    torch_peak_bytes,
    torch_step,
)
from qidao.dialects.tg.numpy_eval import evaluate_function

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """One intra-op thread: the tiny models' matmuls take microseconds, where a
    busy machine makes every parallel one wait milliseconds for its threads."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", CHECKPOINT_MODELS)
def test_the_graph_is_the_torch_module(name: str) -> None:
    """The graph's loss (NumPy reference and compiled) is the module's on its own
    weights, and the named segments compose to the module's forward."""
    model = checkpoint_model(name, tiny=True)
    module = model.torch_model()
    weights = model.weights(module)
    assert list(weights) == [n for n, _ in module.named_parameters()]
    x, labels = model.data(np.random.default_rng(1))
    tx, tlabels = torch.from_numpy(x), torch.from_numpy(labels)
    with torch.no_grad():
        ref = model.torch_loss(module, tx, tlabels).item()
        h = tx
        for segment in model.torch_segments(module):
            h = segment(h)
        np.testing.assert_allclose(h.numpy(), module(tx).numpy(), rtol=1e-6)

    graph = model.graph()
    fn = graph.module().body.block.first_op
    assert fn is not None
    inputs = fn.attributes["qd.input_names"]
    assert [s.data for s in inputs.data] == ["x", "labels", *weights]  # type: ignore[attr-defined]
    (numpy_loss,) = evaluate_function(fn, [x, labels, *weights.values()])  # type: ignore[arg-type]
    np.testing.assert_allclose(numpy_loss, ref, rtol=1e-5)
    compiled = qidao.compile(model.graph())(x, labels, *weights.values())
    np.testing.assert_allclose(compiled, ref, rtol=1e-5)


@pytest.mark.parametrize("name", CHECKPOINT_MODELS)
def test_checkpointing_trains_as_the_plain_step(name: str) -> None:
    """Three SGD steps with every 4th activation kept: the plain step's losses, and
    the losses fall (the steps do train)."""
    model = checkpoint_model(name, tiny=True)
    x, labels = model.data(np.random.default_rng(2))
    runs = {}
    for k in (None, 4, 3):
        step = torch_step(model, model.torch_model(), k, lr=0.05)
        runs[k] = [step(x, labels) for _ in range(3)]
    np.testing.assert_allclose(runs[4], runs[None], rtol=1e-6)
    np.testing.assert_allclose(runs[3], runs[None], rtol=1e-6)
    assert runs[None][2] < runs[None][0]


def test_checkpointing_runs_only_the_recomputed_groups_twice() -> None:
    """k = 4 on the 20-segment MLP: the linear layers of the first 16 segments run
    twice per step (in the forward, then recomputed in the backward), the last
    group's 4 once. (A recomputed group's last ReLU is not rerun: its output is
    the next group's kept input, and PyTorch stops recomputing early.)"""
    model = checkpoint_model("mlp", tiny=True)
    module = model.torch_model()
    layers = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    calls = [0] * len(layers)
    for i, layer in enumerate(layers):
        layer.register_forward_hook(lambda *_, i=i: calls.__setitem__(i, calls[i] + 1))
    x, labels = model.data(np.random.default_rng(3))
    torch_step(model, module, 4, lr=0.01)(x, labels)
    assert calls == [2] * 16 + [1] * 4
    calls[:] = [0] * len(layers)
    torch_step(model, module, None, lr=0.01)(x, labels)
    assert calls == [1] * 20


def test_the_peak_counts_what_is_alive_at_once() -> None:
    """4 MB then 8 MB while the first is alive, both freed: a 12 MB peak; the
    same bytes never alive together: 8 MB."""

    def step() -> None:
        a = torch.empty(1_000_000)
        b = torch.empty(2_000_000)
        del a, b

    assert 12_000_000 <= torch_peak_bytes(step) < 13_000_000

    def sequential() -> None:
        for n in (1_000_000, 2_000_000):
            a = torch.empty(n)
            del a

    assert 8_000_000 <= torch_peak_bytes(sequential) < 9_000_000


def test_the_peak_ignores_what_was_allocated_before() -> None:
    """Freeing 20 MB allocated before the step does not lower its peak, whether or
    not a profiler ran when they were allocated (they are kept: 4 MB)."""
    old: list[object] = [torch.ones(5_000_000)]

    def step() -> None:
        old.clear()  # frees the 20 MB tensor, then allocates 4 MB
        old.append(torch.ones(1_000_000))

    assert 4_000_000 <= torch_peak_bytes(step) < 5_000_000  # allocated unprofiled
    assert 4_000_000 <= torch_peak_bytes(step) < 5_000_000  # allocated profiled


def test_checkpointing_lowers_the_peak() -> None:
    """With a batch wide enough for the activations to outweigh the weight
    gradients (256 rows of 32 against 32 × 32 weights), keeping every 4th
    activation lowers PyTorch's peak; every step's peak holds at least all the
    gradients it allocates (``zero_grad`` sets them to None)."""
    model = checkpoint_model("mlp", tiny=True, batch=256)
    x, labels = model.data(np.random.default_rng(4))
    peaks: dict[int | None, int] = {}
    for k in (None, 4):
        module = model.torch_model()
        step = torch_step(model, module, k, lr=0.01)
        step(x, labels)
        peaks[k] = torch_peak_bytes(partial(step, x, labels))
        grads = sum(p.numel() * p.element_size() for p in module.parameters())
        assert peaks[k] >= grads
    assert peaks[4] < 0.75 * peaks[None]
