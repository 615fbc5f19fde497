"""The activation-checkpointing workloads and their PyTorch half: deep chains of
layers whose backward would keep every activation, as builder graphs ending in
their loss and as the same models in PyTorch (``qidao bench checkpoint``).

``checkpoint_model(name, tiny, batch=None)`` is a :class:`CheckpointModel`, the
``TrainModel`` pattern of :mod:`qidao.bench.train_models`: ``graph()`` builds the
tg graph whose inputs are the data (``x``, ``labels``: one-hot rows), then every
weight by its PyTorch name (in ``named_parameters()`` order), and whose output is
the mean cross-entropy; ``torch_model()`` is the PyTorch module (seeded);
``weights(module)`` reads its parameters as the graph's weight inputs; ``data(rng)``
draws a batch; ``segments`` is N, the number of segments the forward is cut into
(the same cut as qidao's ``checkpoint`` pass: one per linear layer with the ReLU
after it, or a whole residual block), and ``torch_segments(module)`` the module's
N segments as callables, in order.

- ``mlp``: 20 linear layers, 19 × (Linear(w, w) + ReLU) and a Linear(w, 10) head;
  w = 256, batch 1024 (tiny: w = 32, batch 8). The module is an ``nn.Sequential``
  of the 20 segments (``nn.Sequential(Linear, ReLU)``, the last the bare head), so
  segment i is linear layer i and its parameters are ``i.0.weight`` (``19.weight``).
- ``resnet``: a residual MLP: a stem Linear(784, w) + ReLU, 12 blocks
  ``h + fc2(relu(fc1(h)))`` (Linear(w, w) each), a Linear(w, 10) head; w = 256,
  batch 1024 (tiny: input 12, w = 16, batch 4, still 12 blocks). Segments: the
  stem, each block, the head (N = 14); parameters ``stem.weight``,
  ``blocks.3.fc1.weight``, ``head.bias``.

``batch=`` replaces a workload's batch size. The defaults make the activations
outweigh the weights (a 1024 × 256 activation is 4 weights of 256 × 256), as in
the book's setting: with 256 rows of width 512 the weight gradients outweigh the
activations, and PyTorch's peak is at the end of the backward, when every
gradient is alive: checkpointing cannot lower it (measured on that mlp: 20.5 MB
plain, 21.0 MB with k = 4; with batch 1024, 44.1 MB and 30.5 MB).

:func:`torch_step` is one SGD step of the PyTorch model, plain or with
``torch.utils.checkpoint`` on the same segments; :func:`torch_peak_bytes` measures
PyTorch's peak CPU memory of one step with the profiler's memory events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.bench.train_models import CLASSES, Array, cross_entropy, linear
from qidao.frontend.builder import Graph

MLP_LAYERS = 20
"""Linear layers of ``mlp`` (its segments), tiny or not."""

RESNET_BLOCKS = 12
"""Residual blocks of ``resnet``; its segments are these, the stem and the head."""


@dataclass(frozen=True)
class CheckpointModel:
    """One checkpointing workload (see the module docstring)."""

    name: str
    graph: Callable[[], Graph]
    torch_model: Callable[[], Any]
    data: Callable[[np.random.Generator], tuple[Array, Array]]
    segments: int
    summary: str
    split: Callable[[Any], list[Callable[[Any], Any]]]

    def weights(self, module: Any) -> dict[str, Array]:
        """``module``'s parameters by name, as the graph's weight inputs (in the
        graph's order: ``named_parameters()``'s)."""
        return {
            name: p.detach().numpy().copy() for name, p in module.named_parameters()
        }

    def torch_segments(self, module: Any) -> list[Callable[[Any], Any]]:
        """``module``'s forward as its ``segments`` callables, applied in order."""
        parts = self.split(module)
        assert len(parts) == self.segments
        return parts

    def torch_loss(self, module: Any, x: Any, labels: Any) -> Any:
        """The mean cross-entropy of ``module`` on a batch (labels one-hot)."""
        import torch

        return torch.nn.functional.cross_entropy(module(x), labels.argmax(1))


def _data(
    batch: int, width: int
) -> Callable[[np.random.Generator], tuple[Array, Array]]:
    def data(rng: np.random.Generator) -> tuple[Array, Array]:
        x = rng.standard_normal((batch, width)).astype(np.float32)
        return x, np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]

    return data


# --- mlp ---------------------------------------------------------------------------


def _mlp(width: int, batch: int) -> CheckpointModel:
    def graph() -> Graph:
        g = Graph("main")
        h = g.input("x", (batch, width))
        labels = g.input("labels", (batch, CLASSES))
        for i in range(MLP_LAYERS - 1):
            h = g.relu(linear(g, h, f"{i}.0", width, width))
        h = linear(g, h, f"{MLP_LAYERS - 1}", width, CLASSES)
        g.output(cross_entropy(g, h, labels))
        return g

    def torch_model() -> Any:
        import torch

        torch.manual_seed(0)
        nn = torch.nn
        body = [
            nn.Sequential(nn.Linear(width, width), nn.ReLU())
            for _ in range(MLP_LAYERS - 1)
        ]
        return nn.Sequential(*body, nn.Linear(width, CLASSES))

    def split(module: Any) -> list[Callable[[Any], Any]]:
        return list(module)

    summary = (
        f"MLP: {MLP_LAYERS - 1} × (Linear({width}, {width}) + ReLU), "
        f"Linear({width}, {CLASSES}), batch {batch}"
    )
    return CheckpointModel(
        "mlp", graph, torch_model, _data(batch, width), MLP_LAYERS, summary, split
    )


# --- resnet ------------------------------------------------------------------------


def _resnet(inputs: int, width: int, batch: int) -> CheckpointModel:
    def graph() -> Graph:
        g = Graph("main")
        h = g.input("x", (batch, inputs))
        labels = g.input("labels", (batch, CLASSES))
        h = g.relu(linear(g, h, "stem", inputs, width))
        for b in range(RESNET_BLOCKS):
            inner = g.relu(linear(g, h, f"blocks.{b}.fc1", width, width))
            h = h + linear(g, inner, f"blocks.{b}.fc2", width, width)
        g.output(cross_entropy(g, linear(g, h, "head", width, CLASSES), labels))
        return g

    def torch_model() -> Any:
        import torch

        nn = torch.nn
        relu = torch.nn.functional.relu

        class Block(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.fc1 = nn.Linear(width, width)
                self.fc2 = nn.Linear(width, width)

            def forward(self, h: Any) -> Any:
                return h + self.fc2(relu(self.fc1(h)))

        class ResidualMLP(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.stem = nn.Linear(inputs, width)
                self.blocks = nn.ModuleList(Block() for _ in range(RESNET_BLOCKS))
                self.head = nn.Linear(width, CLASSES)

            def forward(self, x: Any) -> Any:
                h = relu(self.stem(x))
                for block in self.blocks:
                    h = block(h)
                return self.head(h)

        torch.manual_seed(0)
        return ResidualMLP()

    def split(module: Any) -> list[Callable[[Any], Any]]:
        import torch

        def stem(x: Any) -> Any:
            return torch.nn.functional.relu(module.stem(x))

        return [stem, *module.blocks, module.head]

    summary = (
        f"residual MLP: Linear({inputs}, {width}) + ReLU, {RESNET_BLOCKS} × "
        f"(h + fc2(relu(fc1(h)))), Linear({width}, {CLASSES}), batch {batch}"
    )
    return CheckpointModel(
        "resnet",
        graph,
        torch_model,
        _data(batch, inputs),
        RESNET_BLOCKS + 2,
        summary,
        split,
    )


CHECKPOINT_MODELS: tuple[str, ...] = ("mlp", "resnet")
"""The workloads' names, for :func:`checkpoint_model`."""


def checkpoint_model(
    name: str, tiny: bool = False, batch: int | None = None
) -> CheckpointModel:
    """The workload ``name`` (``mlp``, ``resnet``), full size or tiny; ``batch``
    replaces its batch size (the activations grow with it, the weights do not)."""
    if name == "mlp":
        width, rows = (32, 8) if tiny else (256, 1024)
        return _mlp(width, batch or rows)
    if name == "resnet":
        inputs, width, rows = (12, 16, 4) if tiny else (784, 256, 1024)
        return _resnet(inputs, width, batch or rows)
    raise ValueError(
        f"unknown checkpointing workload '{name}'; "
        f"choose from {', '.join(CHECKPOINT_MODELS)}"
    )


# --- PyTorch -----------------------------------------------------------------------


def torch_step(
    model: CheckpointModel, module: Any, k: int | None, lr: float
) -> Callable[[Any, Any], float]:
    """One SGD training step of ``module`` (``model``'s PyTorch module), a function
    of a batch (``x``, one-hot ``labels``: tensors or NumPy arrays) returning the
    loss: ``zero_grad``, forward, ``F.cross_entropy(logits, labels.argmax(1))``,
    ``backward``, ``torch.optim.SGD(lr)`` step, ``loss.item()``.

    ``k=None``: the plain step, every activation kept for the backward. ``k`` an
    int: the forward's ``model.segments`` segments are cut into groups of ``k``
    consecutive ones (segments 0..k-1, k..2k-1, ...; the last group holds the
    remaining N - k·⌊(N-1)/k⌋); every group but the last runs as
    ``torch.utils.checkpoint.checkpoint(group, h, use_reentrant=False)``, which
    keeps only its input ``h`` (the activation after every k-th segment) and
    recomputes the group's inner activations in the backward; the last group
    runs plainly, as its activations are needed as soon as the backward starts.
    This is qidao's ``checkpoint{every=k}``, which never recomputes the last group.
    (PyTorch stops a recomputation once it has what the backward asked for, so a
    group's last ReLU, whose output is the next group's kept input, is not rerun.)
    """
    import torch
    from torch.utils.checkpoint import checkpoint

    if k is not None and k < 1:
        raise ValueError(f"k must be a positive number of segments, got {k}")
    segments = model.torch_segments(module)
    size = len(segments) if k is None else k
    groups = [segments[i : i + size] for i in range(0, len(segments), size)]

    def run(group: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
        def forward(h: Any) -> Any:
            for segment in group:
                h = segment(h)
            return h

        return forward

    runs = [run(group) for group in groups]
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)

    def step(x: Any, labels: Any) -> float:
        optimizer.zero_grad()
        h = torch.as_tensor(x)
        for fn in runs[:-1]:
            h = checkpoint(fn, h, use_reentrant=False)
        logits = runs[-1](h)
        target = torch.as_tensor(labels).argmax(1)
        loss = torch.nn.functional.cross_entropy(logits, target)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step


def torch_peak_bytes(step: Callable[[], object]) -> int:
    """PyTorch's peak CPU memory during one call of ``step``: the most bytes of the
    tensors ``step`` allocates alive at once (those it keeps past its end count).

    Run under ``torch.profiler.profile(activities=[CPU], profile_memory=True)``,
    every allocation and free of PyTorch's CPU allocator is an ``Allocation``
    event of ``prof.profiler.kineto_results.experimental_event_tree()`` with its
    start time, ``ptr`` and signed ``alloc_size``; the peak is the maximum running
    sum of those, in time order. A free of a block allocated before the step (the
    previous step's gradients, which ``zero_grad`` drops) is not counted: the
    profiler knows the size only of blocks allocated while it ran, so counting it
    would make the figure depend on whether a profiler ran then. (Summing op
    events' ``cpu_memory_usage`` from ``prof.events()`` over-counts: an op's
    figure includes its children's allocations, counted again under them.)
    """
    from torch._C._profiler import _ExtraFields_Allocation, _ProfilerEvent
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    if prof.profiler is None or prof.profiler.kineto_results is None:
        raise RuntimeError("the PyTorch profiler recorded no events")

    def walk(events: list[_ProfilerEvent]) -> Iterator[tuple[int, int, int]]:
        """(time, ptr, signed bytes) of every CPU allocation event, depth first."""
        for event in events:
            fields = event.extra_fields
            if (
                isinstance(fields, _ExtraFields_Allocation)
                and fields.device.type == "cpu"
            ):
                yield event.start_time_ns, fields.ptr, fields.alloc_size
            yield from walk(event.children)

    tree = prof.profiler.kineto_results.experimental_event_tree()
    alive: dict[int, int] = {}  # ptr -> bytes, of the blocks the step allocated
    peak = running = 0
    # sorted is stable: events of one nanosecond stay in recorded order
    for _, ptr, nbytes in sorted(walk(tree), key=lambda change: change[0]):
        if nbytes > 0:
            alive[ptr] = nbytes
            running += nbytes
            peak = max(peak, running)
        else:
            running -= alive.pop(ptr, 0)
    return peak
