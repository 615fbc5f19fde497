"""The DataLoader example of docs/training.md: an MLP classifier trained by a compiled
qidao step on a synthetic data set fed by ``torch.utils.data.DataLoader``, with and
without worker prefetching, and the share of each step spent waiting for data.

```
python -m qidao.bench.train_classifier               # 1 worker, prefetch 4, vs none
python -m qidao.bench.train_classifier --steps 50 --workers 0
```

The data set draws each sample on demand: a class, then a point of that class's
Gaussian blob in ``FEATURES`` dimensions, then a few rounds of a rotation and its
inverse (the "decoding" a real loader does, costing CPU time per sample without
changing it). The training step is ``qidao.compile(graph, grad=[weights],
optimizer=qidao.optim.SGD(lr, momentum=0.9))``: forward, backward and update in one
native call. For each loader configuration the script trains a fresh model for
``--steps`` steps and reports the time spent waiting for the next batch (``next()``
on the loader's iterator) against the time in the step, and the accuracy on a held
out batch. Without workers the main process makes every batch itself between steps
(no overlap); with workers and ``prefetch_factor`` batches are made ahead in other
processes while the step runs.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.bench.train_models import CLASSES, cross_entropy, linear
from qidao.frontend.builder import Graph

FEATURES = 256
HIDDEN = 2048
DECODE_ROUNDS = 1
"""Rounds of the per-sample "decoding" (a rotation and its inverse: the sample is
unchanged, the CPU time spent): the loader's cost per sample, chosen near the
step's, so that prefetching can hide it."""


class Blobs:
    """A map-style data set of ``size`` samples drawn on demand (deterministic per
    index): ``(features, one-hot label)`` as float32 arrays."""

    def __init__(self, size: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.size = size
        self.centers = (
            rng.standard_normal((CLASSES, FEATURES)).astype(np.float32) * 0.25
        )
        q, _ = np.linalg.qr(rng.standard_normal((FEATURES, FEATURES)))
        self.rotation = q.astype(np.float32)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(index)
        label = int(rng.integers(0, CLASSES))
        x = self.centers[label] + rng.standard_normal(FEATURES).astype(np.float32) * 2
        for _ in range(DECODE_ROUNDS):  # the "decoding": CPU work per sample
            x = self.rotation.T @ (self.rotation @ x)
        return x.astype(np.float32), np.eye(CLASSES, dtype=np.float32)[label]


def classifier(batch: int) -> Graph:
    """The MLP ``FEATURES -> HIDDEN -> CLASSES`` ending in its cross-entropy."""
    g = Graph("main")
    x = g.input("x", (batch, FEATURES))
    labels = g.input("labels", (batch, CLASSES))
    h = g.relu(linear(g, x, "fc1", FEATURES, HIDDEN))
    g.output(cross_entropy(g, linear(g, h, "fc2", HIDDEN, CLASSES), labels))
    return g


def initial_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def uniform(fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {
        "fc1.weight": uniform(FEATURES, (HIDDEN, FEATURES)),
        "fc1.bias": uniform(FEATURES, (HIDDEN,)),
        "fc2.weight": uniform(HIDDEN, (CLASSES, HIDDEN)),
        "fc2.bias": uniform(HIDDEN, (CLASSES,)),
    }


@dataclass(frozen=True)
class Run:
    workers: int
    prefetch: int | None
    steps: int
    first_wait_s: float
    """Waiting for the first batch (worker start-up included)."""
    wait_s: float
    """Waiting for the other batches."""
    step_s: float
    first_loss: float
    last_loss: float
    accuracy: float

    @property
    def wait_share(self) -> float:
        """The share of the training loop after the first batch spent waiting for
        data."""
        return self.wait_s / (self.wait_s + self.step_s)


def train(
    steps: int, batch: int, workers: int, prefetch: int | None, lr: float = 0.01
) -> Run:
    """Train a fresh classifier for ``steps`` steps from a ``DataLoader`` with
    ``workers`` worker processes (and ``prefetch`` batches each ahead)."""
    import torch.utils.data

    import qidao

    weights = initial_weights()
    step = qidao.compile(
        classifier(batch),
        grad=list(weights),
        optimizer=qidao.optim.SGD(lr=lr, momentum=0.9),
        weights=weights,
        threads=1,
    )
    options: dict[str, Any] = {"num_workers": workers}
    if workers:
        options.update(prefetch_factor=prefetch, persistent_workers=False)
    dataset: Any = Blobs(steps * batch)  # map-style: __len__ and __getitem__
    loader: Any = torch.utils.data.DataLoader(
        dataset, batch_size=batch, shuffle=False, drop_last=True, **options
    )
    waits: list[float] = []
    compute = 0.0
    losses: list[float] = []
    batches = iter(loader)
    for _ in range(steps):
        start = time.perf_counter()
        x, labels = next(batches)
        mid = time.perf_counter()
        (loss,) = step(x.numpy(), labels.numpy())
        waits.append(mid - start)
        compute += time.perf_counter() - mid
        losses.append(float(loss))
    del batches
    test = Blobs(batch, seed=0)
    held_out = [test[10**6 + i] for i in range(batch)]
    xs = np.stack([s[0] for s in held_out])
    ys = np.stack([s[1] for s in held_out])
    w = step.parameters  # type: ignore[attr-defined]
    hidden = np.maximum(xs @ w["fc1.weight"].T + w["fc1.bias"], 0)
    logits = hidden @ w["fc2.weight"].T + w["fc2.bias"]
    accuracy = float(np.mean(logits.argmax(1) == ys.argmax(1)))
    return Run(
        workers,
        prefetch,
        steps,
        waits[0],
        sum(waits[1:]),
        compute,
        losses[0],
        losses[-1],
        accuracy,
    )


def report(runs: list[Run]) -> str:
    lines = [
        "| loader | steps | first batch | waiting for the others | in the steps | share waiting | loss first → last | held-out accuracy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        loader = (
            "main process, no prefetch"
            if not r.workers
            else f"{r.workers} worker(s), prefetch {r.prefetch}"
        )
        lines.append(
            f"| {loader} | {r.steps} | {r.first_wait_s * 1e3:.0f} ms | "
            f"{r.wait_s * 1e3:.0f} ms | {r.step_s * 1e3:.0f} ms | "
            f"{r.wait_share:.0%} | {r.first_loss:.3f} → {r.last_loss:.3f} | {r.accuracy:.0%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--workers", type=int, default=1, help="0: only the run without"
    )
    parser.add_argument("--prefetch", type=int, default=4)
    args = parser.parse_args(argv)
    runs = [train(args.steps, args.batch, 0, None)]
    if args.workers:
        runs.append(train(args.steps, args.batch, args.workers, args.prefetch))
    print(report(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
