"""A compiled model that holds some of its inputs: the initializers a gradient is
asked for.

``qidao.compile(onnx_model, grad=["fc.weight"])`` lifts the initializer
``fc.weight`` into a graph input (``qidao.frontend.onnx.trainable``) so that it is
not folded into the code; this wrapper keeps its value and passes it on every call,
so the call takes the model's own inputs only:

```python
f = qidao.compile(model, grad=["fc.weight"])
loss, d_weight = f(x)                   # the outputs, then one gradient per name
f.parameters["fc.weight"]               # the value the call used
f.save("weights.safetensors")           # every held tensor, by name
```
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from qidao.compiler.compiled import CompiledModel
from qidao.compiler.optim import Optimizer
from qidao.errors import ArgumentError

Array = np.ndarray[Any, Any]


class WithParameters:
    """``inner`` (compiled with the held tensors among its inputs) called with them
    in their places and the caller's arguments in the others."""

    def __init__(self, inner: CompiledModel, parameters: Mapping[str, Array]) -> None:
        self.inner = inner
        self.parameters: dict[str, Array] = dict(parameters)
        """The held tensors by name, in the order the program takes them."""

    @property
    def stats(self) -> dict[str, Any]:
        return self.inner.stats

    def ir(self, stage: str = "tg") -> str:
        return self.inner.ir(stage)

    def __call__(self, *args: Any) -> Any:
        held = len(self.parameters)
        given = len(args)
        expected = _input_count(self.inner) - held
        if expected >= 0 and given != expected:
            raise ArgumentError(
                f"the model takes {expected} input(s) (its parameters "
                f"{', '.join(self.parameters)} are held by the compiled model), got "
                f"{given}"
            )
        return self.inner(*self.arguments(args, len(args) + held))

    def arguments(self, args: tuple[Any, ...], count: int) -> list[Any]:
        """The program's first ``count`` inputs: each held tensor at the place of
        the input of its name (a builder graph's weights may come between its data
        inputs; an ONNX model's lifted initializers come last), the caller's
        arguments in the other places, in order."""
        names = [spec.name for spec in getattr(self.inner, "inputs", ())][:count]
        if len(names) != count or not set(self.parameters) <= set(names):
            return [*args, *self.parameters.values()]
        given = iter(args)
        return [
            self.parameters[n] if n in self.parameters else next(given) for n in names
        ]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the held tensors to a SafeTensors file (read back with
        ``qidao.compile(model, weights=path)``)."""
        save_safetensors(path, self.parameters)


def _input_count(compiled: CompiledModel) -> int:
    inputs = getattr(compiled, "inputs", None)
    return len(inputs) if inputs is not None else -1


def save_safetensors(
    path: str | os.PathLike[str], tensors: Mapping[str, Array]
) -> None:
    """``tensors`` as a SafeTensors file at ``path`` (row-major copies)."""
    try:
        from safetensors.numpy import save_file
    except ImportError:
        raise ImportError(
            "writing SafeTensors files needs the safetensors package: "
            "pip install 'qidao[weights]' (or safetensors==0.8.0)"
        ) from None
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, os.fspath(path))


class TrainingStep(WithParameters):
    """A compiled training step: forward, backward and the optimizer's update in one
    program (the ``apply-optimizer`` pass). It holds the weights named in ``grad``
    and the optimizer's state; each call runs one step on the given inputs, updates
    the weights and returns the model's outputs. On the CPU the updates are written
    over the held arrays (``update-in-place``: ``inner.stats["in_place"]`` lists
    the pairs), so an array taken from ``parameters`` changes with the next step
    (copy it to keep it); where they are not, new arrays are swapped in.

    ``step.optimizer.lr`` may change between steps (checked on every assignment);
    the optimizer's other settings are compiled in and read-only, and
    ``step.optimizer = other`` takes only the same optimizer with another ``lr``
    (``qidao.compiler.optim``). Every scalar the call feeds the program is checked
    before it runs, so a bad setting never reaches the held weights.

    With ``checks=True`` a call that fails a check raises ``qidao.CheckError`` and
    changes nothing: weights, states and ``steps`` stay as they were. (The checks
    are read after the program ran, so a step that updates in place then works on
    copies of its weights and states and keeps them only when every check passed:
    one copy of each per step.)

    ```python
    step = qidao.compile(model, grad=["w", "b"], optimizer=qidao.optim.SGD(lr=0.1))
    for x, y in loader:
        loss, = step(x, y)
    step.parameters["w"]                   # the current weights
    step.save("trained.safetensors")
    ```
    """

    def __init__(
        self,
        inner: CompiledModel,
        parameters: Mapping[str, Array],
        optimizer: Optimizer,
    ) -> None:
        # owned, row-major, writeable copies: the step may update them in place
        owned = {
            name: np.require(np.array(value, copy=True), requirements=["C", "A", "W"])
            for name, value in parameters.items()
        }
        super().__init__(inner, owned)
        self._optimizer = optimizer
        self.state: dict[str, Array] = {
            f"{state}_{name}": np.zeros_like(value)
            for name, value in self.parameters.items()
            for state in optimizer.state_names()
        }
        """The optimizer's state tensors (``momentum_w``, ``exp_avg_w``, ...)."""
        self.steps = 0
        """Steps taken so far."""

    @property
    def optimizer(self) -> Optimizer:
        """The hyper-parameters; ``lr`` may change between steps, the others are
        compiled in (read-only)."""
        return self._optimizer

    @optimizer.setter
    def optimizer(self, other: Optimizer) -> None:
        old = self._optimizer
        if type(other) is not type(old) or _fixed(other) != _fixed(old):
            raise ArgumentError(
                f"this training step was compiled for {old!r}; its settings are "
                f"built into its program, so {other!r} cannot take its place (only "
                "the same optimizer with another lr can; or set "
                "step.optimizer.lr). Compile a new step with it: qidao.compile("
                "model, grad=[...], optimizer=..., weights=step.parameters)"
            )
        self._optimizer = other

    def __call__(self, *args: Any) -> Any:
        # every scalar input checked (ArgumentError) before anything runs
        scalars = self.optimizer.scalars(self.steps + 1)
        expected = _input_count(self.inner) - len(self.parameters) - len(self.state)
        expected -= len(scalars)
        if expected >= 0 and len(args) != expected:
            raise ArgumentError(
                f"the training step takes the model's {expected} input(s); its "
                f"weights ({', '.join(self.parameters)}) and the optimizer's state "
                f"are held by the step; got {len(args)}"
            )
        inputs = [
            *self.arguments(args, len(args) + len(self.parameters)),
            *(np.array(v, np.float32) for v in scalars.values()),
            *self.state.values(),
        ]
        pairs = self.inner.stats.get("in_place") or []
        call_into: Any = getattr(self.inner, "call_into", None)
        if pairs and call_into is None:  # the program writes over its inputs
            raise RuntimeError(
                f"internal error: the step's program writes {len(pairs)} update(s) "
                f"in place, but {type(self.inner).__name__} cannot take its "
                "weights as outputs (update-in-place runs for the CPU target only)"
            )
        if pairs:
            # update-in-place: the new weights and states are written over the
            # old ones, which the call gets as those outputs (no new buffers)
            if _has_checks(self.inner):
                # a failed check raises after the program wrote its updates:
                # it writes over copies, kept only if every check passed
                for _, i in pairs:
                    inputs[i] = np.array(inputs[i], copy=True)
            results = call_into(inputs, {j: inputs[i] for j, i in pairs})
        else:
            results = self.inner(*inputs)
        own = len(results) - len(self.parameters) - len(self.state)
        weights = results[own : own + len(self.parameters)]
        self.parameters = dict(zip(self.parameters, weights, strict=True))
        self.state = dict(
            zip(self.state, results[own + len(self.parameters) :], strict=True)
        )
        self.steps += 1
        return results[:own]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the current weights (not the optimizer's state) to a SafeTensors
        file."""
        save_safetensors(path, self.parameters)


def _fixed(optimizer: Optimizer) -> dict[str, Any]:
    """The settings of ``optimizer`` that cannot change (all but ``lr``)."""
    return {
        f.name: getattr(optimizer, f.name)
        for f in dataclasses.fields(optimizer)
        if f.name not in optimizer.RUNTIME
    }


def _has_checks(compiled: CompiledModel) -> bool:
    """Whether ``compiled`` has run-time checks (``checks=True``)."""
    checks = getattr(compiled, "checks", None)
    return bool(getattr(checks, "checks", ()))


def trained_inputs(weights: Any, grad: list[str]) -> dict[str, Array]:
    """The initial values of the graph inputs named in ``grad`` from ``weights``
    (a dict of arrays or a ``.safetensors`` path), for a model that is not ONNX
    (an ONNX model binds them as initializers)."""
    from qidao.frontend.weights import weights_dict

    values, source = weights_dict(weights)
    unknown = sorted(set(values) - set(grad))
    if unknown:
        raise ArgumentError(
            f"weights= ({source}) names {unknown}, which are not in grad={grad}; for "
            "a model that is not ONNX, weights= gives the initial values of the "
            "weights a training step holds"
        )
    return {name: np.array(values[name]) for name in grad if name in values}


def training_step(
    compiled: CompiledModel,
    grad: list[str],
    held: Mapping[str, Array],
    optimizer: Optimizer,
) -> TrainingStep:
    """The compiled step holding ``held`` (every name of ``grad`` must have a value)."""
    missing = [n for n in grad if n not in held]
    if missing:
        raise ArgumentError(
            f"optimizer= makes a training step that holds the weights {grad}, but "
            f"{missing} have no initial value: give them in weights= (a dict of "
            "arrays or a .safetensors file), or name ONNX initializers"
        )
    return TrainingStep(compiled, {n: held[n] for n in grad}, optimizer)
