"""Optimizers for a compiled training step (``qidao.optim``): ``qidao.compile(model, grad=[...],
optimizer=qidao.optim.SGD(lr=0.1, momentum=0.9))``.

An optimizer here is data: its hyper-parameters. The ``apply-optimizer`` pass
(``qidao/passes/graph/apply_optimizer.py``) writes its update into the graph after
the gradients, so forward, backward and update are one compiled program; the
compiled step (``qidao.compiler.trainable.TrainingStep``) holds the weights and the
optimizer's state and passes the learning rate (and Adam's bias corrections) as
scalar inputs on each call, so ``step.optimizer.lr = ...`` takes effect without a
recompile. The updates are PyTorch's (``torch.optim.SGD``/``Adam`` with the same
arguments, ``maximize=False``, no ``amsgrad``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass
class SGD:
    """``torch.optim.SGD``: g += weight_decay * w; buf = momentum * buf + (1 -
    dampening) * g (buf = g on the first step); w -= lr * buf (or g without
    momentum; nesterov: w -= lr * (g + momentum * buf))."""

    lr: float
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    kind = "sgd"

    def __post_init__(self) -> None:
        _check_nonnegative(self, "lr", "momentum", "dampening", "weight_decay")
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError(
                "SGD: nesterov momentum needs momentum > 0 and dampening 0"
            )

    def state_names(self) -> tuple[str, ...]:
        """The state tensors per weight (each its shape), in order."""
        return ("momentum",) if self.momentum else ()

    def scalars(self, step: int) -> dict[str, float]:
        """The scalar inputs of update number ``step`` (1, 2, ...)."""
        # dampening applies from the second step on: buf = g on the first
        return {"lr": self.lr, "damp": 1.0 if step == 1 else 1.0 - self.dampening}

    def pass_options(self) -> dict[str, Any]:
        return {
            "optimizer": self.kind,
            "momentum": float(self.momentum),
            "weight_decay": float(self.weight_decay),
            "nesterov": bool(self.nesterov),
        }


@dataclass
class Adam:
    """``torch.optim.Adam``: g += weight_decay * w; m = b1 m + (1 - b1) g;
    v = b2 v + (1 - b2) g²; w -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) +
    eps)."""

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    kind = "adam"

    def __post_init__(self) -> None:
        _check_nonnegative(self, "lr", "eps", "weight_decay")
        if not all(0.0 <= b < 1.0 for b in self.betas) or len(self.betas) != 2:
            raise ValueError(
                f"Adam: betas must be two values in [0, 1), got {self.betas}"
            )

    def state_names(self) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    def scalars(self, step: int) -> dict[str, float]:
        b1, b2 = self.betas
        return {
            "step_size": self.lr / (1.0 - b1**step),
            "bias_correction2_sqrt": math.sqrt(1.0 - b2**step),
        }

    def pass_options(self) -> dict[str, Any]:
        return {
            "optimizer": self.kind,
            "beta1": float(self.betas[0]),
            "beta2": float(self.betas[1]),
            "eps": float(self.eps),
            "weight_decay": float(self.weight_decay),
        }


Optimizer = SGD | Adam


def _check_nonnegative(owner: object, *names: str) -> None:
    for name in names:
        value = getattr(owner, name)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"{type(owner).__name__}: {name} must be a number >= 0, got {value!r}"
            )
