"""``qidao fuzz --kinds training``: a compiled training step (``qidao.compile(g,
grad=[...], optimizer=...)``, ``qidao/compiler/trainable.py``) against PyTorch, on
a random sequence of good steps, bad inputs and hyper-parameter assignments.

A case (:func:`training_case`), all of it drawn from its seed:

- **The model**: a builder ``Graph`` of one to three dense layers (each with or
  without a bias, then relu, tanh or nothing), on a float input or an embedding
  lookup (``take`` of int64 ids); its loss a sum or mean of squares against a
  target, or softmax cross entropy against one-hot labels; sometimes the logits
  as a second output. Its inputs come in a random order; some weights are
  trained (``grad=``, in a random order) and the others constants.
- **The step**: ``qidao.optim.SGD`` (momentum, dampening, nesterov, weight decay,
  each or not) or ``Adam`` (betas, eps, weight decay), ``checks`` on or off,
  ``update_in_place`` on or off; a PyTorch model with the same initial weights and
  ``torch.optim`` optimizer with the same hyper-parameters.
- **Five to fifteen actions**:

  ``step``     the same batch to both (sometimes a non-contiguous view): the
               outputs and then every held weight and optimizer state equal to
               PyTorch's (rtol 1e-4, atol 1e-5 of the largest value), ``steps``
               counted; PyTorch then takes qidao's values, so each step is compared
               from the same start. An Adam step whose ``lr / (1 - beta1^t)`` does
               not fit a float32 must be refused, changing nothing.
  ``bad``      a wrong input (an argument missing or extra, a wrong shape, rank or
               dtype, not an array; with ``checks`` an id out of range): a
               ``QidaoError``, and weights, states and ``steps`` bit for bit as
               before.
  ``lr``       ``step.optimizer.lr = v`` for a valid ``v`` (a float, a NumPy scalar
               or 0-d array, an int, a ``Fraction``, 0, -0.0) takes effect (PyTorch's
               ``param_groups`` get it), an invalid one (negative, NaN, inf, None, a
               string, a bool, a list, beyond float32) is an ``ArgumentError`` that
               changes nothing.
  ``setting``  assigning or deleting any other setting (momentum, betas, eps,
               weight_decay, a name it lacks): an ``ArgumentError``, nothing changes.
  ``replace``  ``step.optimizer = other``: taken if it is the same optimizer with
               another (valid) lr, else an ``ArgumentError``; an optimizer made with
               a bad setting is refused when it is made.

Every broken rule is ``wrong`` (a NaN written by a refused setting among them).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

Result = tuple[str, str]
Array = np.ndarray[Any, Any]

FLOAT32_MAX = float(np.finfo(np.float32).max)
TORCH_STATE = {
    "momentum": "momentum_buffer",
    "exp_avg": "exp_avg",
    "exp_avg_sq": "exp_avg_sq",
}
"""qidao's optimizer states (``<name>_<weight>``) and PyTorch's (``state[param]``)."""


class _Wrong(Exception):
    """A broken rule: the case is ``wrong`` with this message."""


# --- the model -------------------------------------------------------------------------


@dataclass
class _Spec:
    """A random model: its layers, its loss, its weights and which are trained."""

    n: int
    d: int
    layers: list[tuple[int, bool, str]]
    """Per layer: its width, whether it has a bias, its activation."""
    loss: str
    vocabulary: int
    """The rows of an embedding table (0: the model takes a float input ``x``)."""
    logits: bool
    weights: dict[str, Array] = field(default_factory=dict)
    trained: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    """The graph's inputs in order: data inputs and trained weights."""

    @property
    def data(self) -> list[str]:
        return [name for name in self.order if name not in self.weights]

    def shapes(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """The data inputs' shapes and dtypes."""
        target = ((self.n, self.layers[-1][0]), "float32")
        if self.vocabulary:
            return {"ids": ((self.n,), "int64"), "t": target}
        return {"x": ((self.n, self.d), "float32"), "t": target}


def _random_spec(rng: np.random.Generator) -> _Spec:
    n, d = int(rng.integers(1, 9)), int(rng.integers(1, 11))
    layers = []
    for i in range(int(rng.integers(1, 4))):
        width = int(rng.integers(2 if i else 1, 13))
        layers.append((width, bool(rng.random() < 0.7), str(rng.choice(ACTIVATIONS))))
    loss = str(rng.choice(["sum of squares", "mean of squares", "cross entropy"]))
    if loss == "cross entropy" and layers[-1][0] < 2:
        layers[-1] = (2, *layers[-1][1:])
    vocabulary = int(rng.integers(2, 9)) if rng.random() < 0.3 else 0
    spec = _Spec(n, d, layers, loss, vocabulary, bool(rng.random() < 0.3))
    fan_in = d
    if vocabulary:
        spec.weights["table"] = _normal(rng, (vocabulary, d), 1.0)
    for i, (width, bias, _) in enumerate(layers):
        spec.weights[f"w{i}"] = _normal(rng, (fan_in, width), fan_in**-0.5)
        if bias:
            spec.weights[f"b{i}"] = _normal(rng, (width,), 0.1)
        fan_in = width
    names = list(spec.weights)
    chosen = [w for w in names if rng.random() < 0.8]
    spec.trained = [str(w) for w in rng.permutation(chosen or names[-1:])]
    order = [*spec.shapes(), *spec.trained]
    spec.order = [str(name) for name in rng.permutation(order)]
    return spec


ACTIVATIONS = ("relu", "tanh", "none")


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> Array:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _graph(spec: _Spec) -> Any:
    from qidao.frontend.builder import Graph

    g = Graph("main")
    shapes = spec.shapes()
    values = {}
    for name in spec.order:
        shape, dtype = shapes.get(name) or (spec.weights[name].shape, "float32")
        values[name] = g.input(name, shape, dtype)

    def weight(name: str) -> Any:
        return values[name] if name in values else g.constant(spec.weights[name])

    h = g.take(weight("table"), values["ids"], 0) if spec.vocabulary else values["x"]
    for i, (_, bias, act) in enumerate(spec.layers):
        h = g.matmul(h, weight(f"w{i}"))
        h = h + weight(f"b{i}") if bias else h
        h = g.relu(h) if act == "relu" else g.tanh(h) if act == "tanh" else h
    t = values["t"]
    if spec.loss == "cross entropy":
        picked = g.mul(t, g.log(g.softmax(h, -1)))
        loss = g.mul(g.reduce_sum(picked), -1.0 / spec.n)
    else:
        d = h - t
        loss = (
            g.reduce_sum(d * d)
            if spec.loss == "sum of squares"
            else g.reduce_mean(d * d)
        )
    if spec.logits:
        g.output(loss, h)
    else:
        g.output(loss)
    return g


def _torch_forward(
    spec: _Spec, params: dict[str, Any], batch: dict[str, Array]
) -> list[Any]:
    import torch

    def weight(name: str) -> Any:
        return params.get(name, torch.from_numpy(spec.weights[name]))

    if spec.vocabulary:
        h = weight("table")[torch.from_numpy(batch["ids"])]
    else:
        h = torch.from_numpy(np.ascontiguousarray(batch["x"]))
    for i, (_, bias, act) in enumerate(spec.layers):
        h = h @ weight(f"w{i}")
        h = h + weight(f"b{i}") if bias else h
        h = torch.relu(h) if act == "relu" else torch.tanh(h) if act == "tanh" else h
    t = torch.from_numpy(batch["t"])
    if spec.loss == "cross entropy":
        loss = (t * torch.log(torch.softmax(h, -1))).sum() * (-1.0 / spec.n)
    else:
        d = h - t
        loss = (d * d).sum() if spec.loss == "sum of squares" else (d * d).mean()
    return [loss, h] if spec.logits else [loss]


def _batch(spec: _Spec, rng: np.random.Generator) -> dict[str, Array]:
    out: dict[str, Array] = {}
    if spec.vocabulary:  # negative ids count from the end, as in PyTorch
        v = spec.vocabulary
        out["ids"] = rng.integers(-v, v, size=spec.n).astype(np.int64)
    else:
        out["x"] = rng.standard_normal((spec.n, spec.d)).astype(np.float32)
    width = spec.layers[-1][0]
    if spec.loss == "cross entropy":
        labels = rng.integers(0, width, size=spec.n)
        out["t"] = np.eye(width, dtype=np.float32)[labels]
    else:
        out["t"] = rng.standard_normal((spec.n, width)).astype(np.float32)
    return out


# --- the optimizers ------------------------------------------------------------------


def _random_optimizer(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    """A qidao optimizer and the keyword arguments of PyTorch's."""
    import qidao

    if rng.random() < 0.5:
        momentum = float(rng.choice([0.0, rng.uniform(0.1, 0.95)]))
        nesterov = bool(momentum and rng.random() < 0.4)
        settings: dict[str, Any] = {
            "lr": float(rng.uniform(0.001, 0.1)),
            "momentum": momentum,
            "dampening": 0.0
            if nesterov
            else float(rng.choice([0.0, rng.uniform(0, 0.5)])),
            "weight_decay": float(rng.choice([0.0, rng.uniform(0, 0.01)])),
            "nesterov": nesterov,
        }
        return qidao.optim.SGD(**settings), settings
    settings = {
        "lr": float(rng.uniform(1e-4, 0.05)),
        "betas": (float(rng.uniform(0.0, 0.95)), float(rng.uniform(0.9, 0.9999))),
        "eps": float(rng.choice([1e-8, 1e-6, 1e-3])),
        "weight_decay": float(rng.choice([0.0, rng.uniform(0, 0.01)])),
    }
    return qidao.optim.Adam(**settings), settings


def _valid_lr(value: object) -> bool:
    """Whether ``value`` is a learning rate (``qidao/compiler/optim.py``'s rule: a
    real number or a 0-d integer or float array, not a bool, in [0, float32 max])."""
    if isinstance(value, np.ndarray):
        if value.shape != () or value.dtype.kind not in "iuf":
            return False
        value = value.item()
    if not isinstance(value, numbers.Real) or isinstance(value, bool | np.bool_):
        return False
    try:
        number = float(value)
    except OverflowError:
        return False
    return 0.0 <= number <= FLOAT32_MAX


def _lr_values(rng: np.random.Generator, adam: bool) -> list[Any]:
    good = float(rng.uniform(0, 0.1 if not adam else 0.02))
    values: list[Any] = [
        good,
        np.float32(good),
        np.float64(good),
        np.array(good),
        Fraction(1, 100),
        0,
        0.0,
        -0.0,
        np.int64(0),
        -good - 1e-3,
        -1,
        math.nan,
        math.inf,
        -math.inf,
        None,
        "0.1",
        True,
        1e39,
        10**400,
        [good],
        np.array([good]),
        np.float32(math.nan),
        complex(good, 0),
        np.array(good, dtype=object),
    ]
    if adam:  # valid, but the step size lr / (1 - beta1^t) overflows: refused
        values.append(FLOAT32_MAX)
    return values


def _fields(optimizer: Any) -> dict[str, Any]:
    return {f.name: getattr(optimizer, f.name) for f in dataclasses.fields(optimizer)}


# --- the case ------------------------------------------------------------------------


@dataclass
class _Run:
    rng: np.random.Generator
    spec: _Spec
    step: Any
    params: dict[str, Any]
    torch_optimizer: Any
    checks: bool
    steps: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def held(self) -> dict[str, Array]:
        """Copies of every held weight and optimizer state."""
        out = {k: np.array(v, copy=True) for k, v in self.step.parameters.items()}
        out |= {
            f"state {k}": np.array(v, copy=True) for k, v in self.step.state.items()
        }
        return out

    def unchanged(self, before: dict[str, Array], action: str) -> None:
        after = self.held()
        for name, value in before.items():  # bit for bit
            now = after[name]
            if now.shape != value.shape or now.tobytes() != value.tobytes():
                raise _Wrong(f"{action} changed {name}")
        if self.step.steps != self.steps:
            raise _Wrong(f"{action} counted a step ({self.step.steps})")

    def inputs(self, batch: dict[str, Array]) -> list[Any]:
        return [batch[name] for name in self.spec.data]


def training_case(rng: np.random.Generator, folder: Path) -> Result:
    """Run one case (module docstring)."""
    import qidao

    spec = _random_spec(rng)
    optimizer, settings = _random_optimizer(rng)
    checks, in_place = bool(rng.random() < 0.5), bool(rng.random() < 0.7)
    step = qidao.compile(
        _graph(spec),
        grad=spec.trained,
        optimizer=optimizer,
        weights={name: spec.weights[name] for name in spec.trained},
        checks=checks,
        update_in_place=in_place,
        threads=1,
    )
    run = _run(rng, spec, step, settings, checks)
    shown = ", ".join(f"{k}={_short(v)}" for k, v in settings.items())
    what = (
        f"{type(optimizer).__name__}({shown}) checks={checks} in_place={in_place}, "
        f"{len(spec.layers)} layer(s){' after an embedding' if spec.vocabulary else ''}"
        f", {spec.loss}"
    )
    actions = int(rng.integers(5, 16))
    try:
        for k in range(actions):
            action = str(rng.choice(ACTIONS, p=WEIGHTS))
            run.counts[action] = run.counts.get(action, 0) + 1
            if not ACTIONS_RUN[action](run):
                what += f" (PyTorch diverged at action {k})"
                break
    except _Wrong as e:
        return "wrong", f"action {sum(run.counts.values())}: {e}; {what}"[:300]
    return "ok", f"{what}: {run.counts}"[:300]


def _short(value: Any) -> str:
    if isinstance(value, tuple):
        return f"({', '.join(_short(v) for v in value)})"
    return f"{value:.3g}" if isinstance(value, float) else repr(value)


def _run(
    rng: np.random.Generator,
    spec: _Spec,
    step: Any,
    settings: dict[str, Any],
    checks: bool,
) -> _Run:
    import torch

    params = {
        name: torch.nn.Parameter(torch.from_numpy(spec.weights[name].copy()))
        for name in spec.trained
    }
    kind = torch.optim.Adam if "betas" in settings else torch.optim.SGD
    return _Run(
        rng, spec, step, params, kind(list(params.values()), **settings), checks
    )


def _step(run: _Run) -> bool:
    """A good step on both; False if PyTorch's values are no longer finite."""
    import torch

    import qidao

    batch = _batch(run.spec, run.rng)
    inputs = run.inputs(batch)
    if "x" in batch and run.rng.random() < 0.3:  # a strided view of the same values
        position = run.spec.data.index("x")
        inputs[position] = np.repeat(batch["x"], 2, axis=1)[:, ::2]
    optimizer = run.step.optimizer
    if "betas" in _fields(optimizer):
        b1 = optimizer.betas[0]
        if optimizer.lr / (1.0 - b1 ** (run.steps + 1)) > FLOAT32_MAX:
            before = run.held()
            try:
                run.step(*inputs)
            except qidao.ArgumentError:
                run.unchanged(before, "a refused Adam step")
                return True
            raise _Wrong(f"an Adam step with lr={optimizer.lr!r} was not refused")
    try:
        outputs = run.step(*inputs)
    except qidao.QidaoError as e:
        raise _Wrong(f"a good step was refused: {type(e).__name__}: {e}") from None
    run.steps += 1
    run.torch_optimizer.zero_grad()
    reference = _torch_forward(run.spec, run.params, batch)
    reference[0].backward()
    run.torch_optimizer.step()
    for i, (got, want) in enumerate(zip(outputs, reference, strict=True)):
        _compare(f"output {i}", got, want.detach().numpy())
    if run.step.steps != run.steps:
        raise _Wrong(f"steps is {run.step.steps} after {run.steps} step(s)")
    for name, param in run.params.items():
        if not torch.isfinite(param).all():
            return False
        _compare(name, run.step.parameters[name], param.detach().numpy())
        state = run.torch_optimizer.state[param]
        for prefix, key in TORCH_STATE.items():
            ours = run.step.state.get(f"{prefix}_{name}")
            if (ours is None) != (key not in state):
                raise _Wrong(f"state {prefix}_{name}: held {ours is not None}")
            if ours is not None:
                _compare(f"{prefix}_{name}", ours, state[key].numpy())
    with torch.no_grad():  # the next step starts from qidao's values on both
        for name, param in run.params.items():
            param.copy_(torch.tensor(run.step.parameters[name]))
            state = run.torch_optimizer.state[param]
            for prefix, key in TORCH_STATE.items():
                if key in state:
                    state[key].copy_(torch.tensor(run.step.state[f"{prefix}_{name}"]))
    return True


def _compare(what: str, got: Any, want: Array) -> None:
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise _Wrong(f"{what}: shape {got.shape}, PyTorch's {want.shape}")
    finite = want[np.isfinite(want)]
    scale = float(np.max(np.abs(finite), initial=1.0))
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5 * scale, equal_nan=True):
        worst = float(np.nanmax(np.abs(got - want)))
        raise _Wrong(f"{what} differs from PyTorch's by {worst:.3g}")


def _bad_inputs(run: _Run) -> list[tuple[str, list[Any]]]:
    """Calls that must be refused, each with what is wrong."""
    batch = _batch(run.spec, run.rng)
    good = run.inputs(batch)
    i = int(run.rng.integers(0, len(good)))
    name, value = run.spec.data[i], good[i]

    def at(replacement: Any) -> list[Any]:
        return [*good[:i], replacement, *good[i + 1 :]]

    shape = list(value.shape)
    grown = shape.copy()
    grown[int(run.rng.integers(0, len(shape)))] += int(run.rng.choice([-1, 1, 3]))
    wrong_dtype = "float32" if value.dtype == np.int64 else "float64"
    cases = [
        ("an input missing", good[:-1]),
        ("an input extra", [*good, value]),
        (f"{name} of shape {grown}", at(np.zeros(grown, value.dtype))),
        (f"{name} with a dimension more", at(value[None])),
        (f"{name} as {wrong_dtype}", at(value.astype(wrong_dtype))),
        (f"{name} as int32", at(value.astype(np.int32))),
        (f"{name} as bool", at(value.astype(bool))),
        (f"{name} as a list", at(value.tolist())),
        (f"{name} as None", at(None)),
        (f"{name} as a string", at("x")),
        (f"{name} as a scalar", at(value.dtype.type(1))),
    ]
    if len(shape) > 1:
        cases.append((f"{name} with a dimension less", at(value[0])))
    if run.checks and run.spec.vocabulary:
        ids = batch["ids"].copy()
        v = run.spec.vocabulary
        ids[int(run.rng.integers(0, ids.size))] = int(
            run.rng.choice([v, -v - 1, 1 << 40])
        )
        cases.append(("an id out of range", run.inputs({**batch, "ids": ids})))
    return cases


def _bad(run: _Run) -> bool:
    import qidao

    cases = _bad_inputs(run)
    what, inputs = cases[int(run.rng.integers(0, len(cases)))]
    before = run.held()
    try:
        run.step(*inputs)
    except qidao.QidaoError:
        run.unchanged(before, f"a refused call ({what})")
        return True
    raise _Wrong(f"a call with {what} was not refused")


def _set_lr(run: _Run) -> bool:
    import qidao

    optimizer = run.step.optimizer
    values = _lr_values(run.rng, "betas" in _fields(optimizer))
    value = values[int(run.rng.integers(0, len(values)))]
    before, settings = run.held(), _fields(optimizer)
    try:
        optimizer.lr = value
    except qidao.ArgumentError:
        if _valid_lr(value):
            raise _Wrong(f"lr = {value!r} was refused") from None
        if _fields(optimizer) != settings:
            raise _Wrong(f"a refused lr = {value!r} changed the optimizer") from None
        run.unchanged(before, f"a refused lr = {value!r}")
        return True
    if not _valid_lr(value):
        raise _Wrong(f"lr = {value!r} was taken")
    if optimizer.lr != float(value):
        raise _Wrong(f"lr = {value!r} reads back as {optimizer.lr!r}")
    for group in run.torch_optimizer.param_groups:
        group["lr"] = float(value)
    run.unchanged(before, f"lr = {value!r}")
    return True


def _set_other(run: _Run) -> bool:
    import qidao

    optimizer = run.step.optimizer
    settings = _fields(optimizer)
    delete = bool(run.rng.random() < 0.2)
    names = [n for n in settings if n != "lr" or delete]
    name = str(run.rng.choice([*names, "lrr", "kind", "momentum_buffer"]))
    value = run.rng.choice(
        np.array([0.0, 0.5, 0.9, 1e-8, True, None, "x"], dtype=object)
    )
    if name == "betas":
        value = (0.5, 0.6)
    before = run.held()
    what = f"del optimizer.{name}" if delete else f"optimizer.{name} = {value!r}"
    try:
        if delete:
            delattr(optimizer, name)
        else:
            setattr(optimizer, name, value)
    except qidao.ArgumentError:
        if _fields(optimizer) != settings:
            raise _Wrong(f"a refused {what} changed the optimizer") from None
        run.unchanged(before, f"a refused {what}")
        return True
    raise _Wrong(f"{what} was taken")


def _replace(run: _Run) -> bool:
    import torch

    import qidao

    current = run.step.optimizer
    settings = _fields(current)
    kind = type(current)
    lr = float(run.rng.uniform(0, 0.05))
    choice = int(run.rng.integers(0, 6))
    before = run.held()
    try:
        if choice == 0:
            other: Any = kind(**{**settings, "lr": lr})
        elif choice == 1:
            other = (
                qidao.optim.Adam(lr=lr)
                if kind is qidao.optim.SGD
                else qidao.optim.SGD(lr=lr)
            )
        elif choice == 2:
            other = kind(
                **{**settings, "weight_decay": settings["weight_decay"] + 0.25}
            )
        elif choice == 3:
            other = [None, "sgd", torch.optim.SGD, settings][
                int(run.rng.integers(0, 4))
            ]
        else:  # an optimizer with a bad lr: refused when it is made
            bad = [math.nan, -1.0, None, 1e39][int(run.rng.integers(0, 4))]
            try:
                kind(**{**settings, "lr": bad})
            except qidao.ArgumentError:
                run.unchanged(before, f"making {kind.__name__}(lr={bad!r})")
                return True
            raise _Wrong(f"{kind.__name__}(lr={bad!r}) was made")
    except qidao.ArgumentError as e:
        raise _Wrong(f"making a valid optimizer failed: {e}") from None
    same = type(other) is kind and {
        k: v for k, v in _fields(other).items() if k != "lr"
    } == {k: v for k, v in settings.items() if k != "lr"}
    try:
        run.step.optimizer = other
    except qidao.ArgumentError:
        if same:
            raise _Wrong(f"step.optimizer = {other!r} was refused") from None
        if run.step.optimizer is not current:
            raise _Wrong("a refused step.optimizer = ... changed it") from None
        run.unchanged(before, "a refused step.optimizer = ...")
        return True
    if not same:
        raise _Wrong(f"step.optimizer = {other!r} was taken for {current!r}")
    for group in run.torch_optimizer.param_groups:
        group["lr"] = float(other.lr)
    run.unchanged(before, "step.optimizer = ...")
    return True


ACTIONS = ("step", "bad", "lr", "setting", "replace")
WEIGHTS = (0.45, 0.2, 0.2, 0.08, 0.07)
ACTIONS_RUN = {
    "step": _step,
    "bad": _bad,
    "lr": _set_lr,
    "setting": _set_other,
    "replace": _replace,
}
