"""Optimizers for a compiled training step (``qidao.optim``): ``qidao.compile(model, grad=[...],
optimizer=qidao.optim.SGD(lr=0.1, momentum=0.9))``.

An optimizer here is data: its hyper-parameters. The ``apply-optimizer`` pass
(``qidao/passes/graph/apply_optimizer.py``) writes its update into the graph after
the gradients, so forward, backward and update are one compiled program; the
compiled step (``qidao.compiler.trainable.TrainingStep``) holds the weights and the
optimizer's state and passes the learning rate (and SGD's dampening, Adam's bias
corrections) as scalar inputs on each call. The updates are PyTorch's
(``torch.optim.SGD``/``Adam`` with the same arguments, ``maximize=False``, no
``amsgrad``).

Settings. Every hyper-parameter is checked when the optimizer is made: a number
(an ``int``, a ``float``, a NumPy scalar or 0-d array; stored as a ``float``),
finite and within float32's range (the program computes in float32), ``>= 0``;
Adam's ``betas`` two numbers in [0, 1) and its ``eps`` at least float32's smallest
normal number (``eps = 0`` divides 0 by 0 where a gradient is 0). A bad one is an
``qidao.ArgumentError`` naming the optimizer, the setting and the value.

Only ``lr`` may change afterwards (``step.optimizer.lr = 0.01``: the next step
uses it, no recompile), and it is checked again on every assignment. The others
are read-only: the step's program has them built in (``momentum``, ``nesterov``,
``betas``, ``eps``, ``weight_decay``: ``pass_options``, also the compile cache's
key of the optimizer), so a changed one would be ignored or half applied
(``dampening``, fed at run time, is fixed with them: one rule). Assigning one is
an ``ArgumentError`` that says to make a new optimizer and compile the step again.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from qidao.errors import ArgumentError

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""The largest setting or scalar input: the program computes in float32."""

FLOAT32_TINY = float(np.finfo(np.float32).tiny)
"""The smallest ``eps``: float32's smallest normal number (a smaller one may be
flushed to 0, and ``0 / 0`` is NaN)."""


class _Settings:
    """The hyper-parameters of an optimizer: checked when it is made (each
    subclass's ``_checked``), then read-only except for those in ``RUNTIME``,
    which are checked again on every assignment."""

    RUNTIME: ClassVar[tuple[str, ...]] = ("lr",)
    """The settings a step reads on every call (fed as scalar inputs)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if not self.__dict__.get("_frozen", False):  # the dataclass's __init__
            object.__setattr__(self, name, value)
        elif name in self.RUNTIME:
            object.__setattr__(self, name, self._checked(name, value))
        else:
            raise ArgumentError(self._read_only(name, value))

    def __delattr__(self, name: str) -> None:
        raise ArgumentError(f"{self._owner}.{name} cannot be deleted")

    def _check_all(self) -> None:
        """Check (and normalise) every setting; the object is read-only after."""
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = self._checked(field.name, getattr(self, field.name))
            object.__setattr__(self, field.name, value)
        object.__setattr__(self, "_frozen", True)

    def _checked(self, name: str, value: object) -> Any:
        raise NotImplementedError

    @property
    def _owner(self) -> str:
        return f"qidao.optim.{type(self).__name__}"

    def _read_only(self, name: str, value: object) -> str:
        settings = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]
        if name not in settings:
            return (
                f"{self._owner} has no setting '{name}'; its settings are "
                f"{', '.join(settings)} (only lr may change after it is made)"
            )
        wanted = ", ".join(
            f"{n}={value if n == name else getattr(self, n)!r}" for n in settings
        )
        return (
            f"{self._owner}.{name} cannot change after the optimizer is made: a "
            "compiled training step has its settings built in, and only lr may "
            "change between steps. Make a new optimizer and compile the step "
            f"again: qidao.compile(model, grad=[...], optimizer={self._owner}"
            f"({wanted}), weights=step.parameters)"
        )


@dataclass
class SGD(_Settings):
    """``torch.optim.SGD``: g += weight_decay * w; buf = momentum * buf + (1 -
    dampening) * g (buf = g on the first step); w -= lr * buf (or g without
    momentum; nesterov: w -= lr * (g + momentum * buf)).

    Every setting is checked here (module docstring); only ``lr`` may change
    afterwards."""

    lr: float
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    kind: ClassVar[str] = "sgd"

    def __post_init__(self) -> None:
        self._check_all()
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ArgumentError(
                f"{self._owner}: nesterov momentum needs momentum > 0 and dampening "
                f"0, got momentum={self.momentum!r}, dampening={self.dampening!r}"
            )

    def _checked(self, name: str, value: object) -> Any:
        if name == "nesterov":
            return _flag(self._owner, name, value)
        return _number(self._owner, name, value)

    def state_names(self) -> tuple[str, ...]:
        """The state tensors per weight (each its shape), in order."""
        return ("momentum",) if self.momentum else ()

    def scalars(self, step: int) -> dict[str, float]:
        """The scalar inputs of update number ``step`` (1, 2, ...), each checked to
        be a finite float32 (``ArgumentError`` otherwise)."""
        lr = _number(self._owner, "lr", self.lr)
        # dampening applies from the second step on: buf = g on the first
        return {"lr": lr, "damp": 1.0 if step == 1 else 1.0 - self.dampening}

    def pass_options(self) -> dict[str, Any]:
        """The settings compiled into the step (``apply-optimizer``'s options)."""
        return {
            "optimizer": self.kind,
            "momentum": float(self.momentum),
            "weight_decay": float(self.weight_decay),
            "nesterov": bool(self.nesterov),
        }


@dataclass
class Adam(_Settings):
    """``torch.optim.Adam``: g += weight_decay * w; m = b1 m + (1 - b1) g;
    v = b2 v + (1 - b2) g²; w -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) +
    eps).

    Every setting is checked here (module docstring: ``betas`` in [0, 1), ``eps >
    0``); only ``lr`` may change afterwards."""

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    kind: ClassVar[str] = "adam"

    def __post_init__(self) -> None:
        self._check_all()

    def _checked(self, name: str, value: object) -> Any:
        if name == "betas":
            bad = ArgumentError(
                f"{self._owner}: betas must be two numbers in [0, 1), got {value!r}"
            )
            if not (isinstance(value, tuple | list) and len(value) == 2):
                raise bad
            try:
                betas = tuple(_number(self._owner, "betas", b) for b in value)
            except ArgumentError:
                raise bad from None
            if not all(b < 1.0 for b in betas):
                raise bad
            return betas
        return _number(self._owner, name, value, positive=name == "eps")

    def state_names(self) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    def scalars(self, step: int) -> dict[str, float]:
        """The scalar inputs of update number ``step`` (1, 2, ...), each checked to
        be a finite float32 (``ArgumentError`` otherwise)."""
        lr = _number(self._owner, "lr", self.lr)
        b1, b2 = self.betas
        step_size = lr / (1.0 - b1**step)
        if step_size > FLOAT32_MAX:
            raise ArgumentError(
                f"{self._owner}: step {step}'s step size lr / (1 - beta1^{step}) = "
                f"{step_size:.4g} does not fit a float32 (lr={lr!r}, "
                f"betas={self.betas!r}); lower lr"
            )
        return {
            "step_size": step_size,
            "bias_correction2_sqrt": math.sqrt(1.0 - b2**step),
        }

    def pass_options(self) -> dict[str, Any]:
        """The settings compiled into the step (``apply-optimizer``'s options)."""
        return {
            "optimizer": self.kind,
            "beta1": float(self.betas[0]),
            "beta2": float(self.betas[1]),
            "eps": float(self.eps),
            "weight_decay": float(self.weight_decay),
        }


Optimizer = SGD | Adam


def _number(owner: str, name: str, value: object, positive: bool = False) -> float:
    """``value`` as a float: an int, a float, a NumPy scalar or 0-d array, finite
    and within float32's range, >= 0 (with ``positive``: a normal float32 > 0)."""
    if (
        isinstance(value, np.ndarray)
        and value.shape == ()
        and value.dtype.kind in "iuf"
    ):
        value = value.item()
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ArgumentError(
            f"{owner}: {name} must be a number (an int, a float or a NumPy "
            f"scalar), got {_shown(value)} of type {type(value).__name__}"
        )
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        number = math.inf
    low = FLOAT32_TINY if positive else 0.0
    if low <= number <= FLOAT32_MAX:
        return number
    expected = "> 0" if positive else ">= 0"
    if math.isfinite(number) and number > FLOAT32_MAX:
        why = f" that fits a float32 (at most {FLOAT32_MAX:.4g})"
    elif positive and 0 <= number < low:
        why = f" (at least {FLOAT32_TINY:.4g}, float32's smallest normal number)"
    else:
        why = ""
    raise ArgumentError(
        f"{owner}: {name} must be a finite number {expected}{why}, got {_shown(value)}"
    )


def _shown(value: object) -> str:
    """``repr(value)``, cut short (an int of 400 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _flag(owner: str, name: str, value: object) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ArgumentError(
            f"{owner}: {name} must be True or False, got {value!r} of type "
            f"{type(value).__name__}"
        )
    return bool(value)
