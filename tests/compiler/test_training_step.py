"""``qidao.compile(model, grad=[...], optimizer=...)``: a compiled training step
follows PyTorch's optimizers step by step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import qidao
from qidao.bench.train_models import train_model
from qidao.frontend.builder import Graph
from qidao.frontend.weights import load_safetensors

RNG = np.random.default_rng(11)
N, D, H, C = 16, 8, 32, 4


def _mlp() -> Graph:
    """Mean squared error of a two-layer MLP."""
    g = Graph("main")
    x, t = g.input("x", (N, D)), g.input("t", (N, C))
    w1, b1, w2 = g.input("w1", (D, H)), g.input("b1", (H,)), g.input("w2", (H, C))
    d = g.relu(x @ w1 + b1) @ w2 - t
    g.output(g.reduce_mean(d * d, [0, 1]))
    return g


def _weights() -> dict[str, np.ndarray]:
    return {
        "w1": (RNG.standard_normal((D, H)) * 0.3).astype(np.float32),
        "b1": np.zeros(H, np.float32),
        "w2": (RNG.standard_normal((H, C)) * 0.3).astype(np.float32),
    }


OPTIMIZERS: dict[str, tuple[object, Callable[..., torch.optim.Optimizer]]] = {
    "sgd": (qidao.optim.SGD(lr=0.05), lambda p: torch.optim.SGD(p, lr=0.05)),
    "momentum": (
        qidao.optim.SGD(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
        lambda p: torch.optim.SGD(
            p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3
        ),
    ),
    "nesterov": (
        qidao.optim.SGD(lr=0.05, momentum=0.9, nesterov=True),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    ),
    "adam": (
        qidao.optim.Adam(lr=0.01, weight_decay=1e-3),
        lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=1e-3),
    ),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_100_steps_follow_pytorchs_loss_curve(name: str) -> None:
    optimizer, make_torch = OPTIMIZERS[name]
    weights = _weights()
    step = qidao.compile(
        _mlp(), grad=list(weights), optimizer=optimizer, weights=weights
    )
    params = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    reference = make_torch(list(params.values()))
    x = RNG.standard_normal((N, D)).astype(np.float32)
    t = RNG.standard_normal((N, C)).astype(np.float32)
    xt, tt = torch.tensor(x), torch.tensor(t)
    for _ in range(100):
        (loss,) = step(x, t)
        reference.zero_grad()
        out = torch.relu(xt @ params["w1"] + params["b1"]) @ params["w2"]
        ref = ((out - tt) ** 2).mean()
        ref.backward()
        reference.step()
        np.testing.assert_allclose(float(loss), ref.item(), rtol=1e-3)
    assert step.steps == 100  # type: ignore[attr-defined]
    for k, p in params.items():
        np.testing.assert_allclose(
            step.parameters[k], p.detach().numpy(), rtol=1e-3, atol=1e-5
        )  # type: ignore[attr-defined]


def test_100_steps_of_the_tiny_cnn_follow_pytorchs_loss_curve() -> None:
    """The bench's CNN in its tiny form (``qidao/bench/train_models.py``: three
    conv3x3-BN(train)-ReLU blocks, the last two with stride 2, global average pool,
    linear, cross-entropy; batch 4 of 8x8): SGD with momentum 0.9 cycling over four
    batches, which it learns (the mean loss falls from 2.4 to under 0.1), each step's
    loss and the final weights as PyTorch's.

    At lr 0.05 the two float32 runs stay within 1e-5 of a float64 run; at lr 0.1 on
    these batches one rounding more or less in the update (PyTorch's is one fused
    multiply-add, qidao's a multiply then a subtract) moves step 80's loss by up to
    4 %, with gradients as exact as PyTorch's: a chaotic stretch, not a bug."""
    model = train_model("cnn", tiny=True)
    module = model.torch_model()
    weights = model.weights(module)
    step = qidao.compile(
        model.graph(),
        grad=list(weights),
        optimizer=qidao.optim.SGD(lr=0.05, momentum=0.9),
        weights=weights,
    )
    reference = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(5)
    batches = [model.data(rng) for _ in range(4)]
    losses = []
    for k in range(100):
        x, labels = batches[k % len(batches)]
        (loss,) = step(x, labels)
        reference.zero_grad()
        ref = model.torch_loss(module, torch.from_numpy(x), torch.from_numpy(labels))
        ref.backward()
        reference.step()
        np.testing.assert_allclose(float(loss), ref.item(), rtol=1e-3, err_msg=k)
        losses.append(float(loss))
    assert np.mean(losses[-4:]) < 0.25 * np.mean(losses[:4])
    for name, p in module.named_parameters():
        np.testing.assert_allclose(
            step.parameters[name],  # type: ignore[attr-defined]
            p.detach().numpy(),
            rtol=1e-3,
            atol=1e-5,
            err_msg=name,
        )


def test_the_learning_rate_changes_without_a_recompile(tmp_path: Path) -> None:
    weights = _weights()
    step = qidao.compile(
        _mlp(), grad=list(weights), optimizer=qidao.optim.SGD(lr=0.1), weights=weights
    )
    x = RNG.standard_normal((N, D)).astype(np.float32)
    t = RNG.standard_normal((N, C)).astype(np.float32)
    step(x, t)
    moved = {k: v.copy() for k, v in step.parameters.items()}  # type: ignore[attr-defined]
    assert any(not np.array_equal(moved[k], weights[k]) for k in weights)
    step.optimizer.lr = 0.0  # type: ignore[attr-defined]
    step(x, t)
    for k in weights:
        np.testing.assert_array_equal(step.parameters[k], moved[k])  # type: ignore[attr-defined]
    step.save(tmp_path / "w.safetensors")  # type: ignore[attr-defined]
    saved = load_safetensors(tmp_path / "w.safetensors")
    for k in weights:
        np.testing.assert_array_equal(saved[k], moved[k])


def test_a_step_needs_every_weights_initial_value() -> None:
    with pytest.raises(qidao.ArgumentError, match=r"\['b1'\] have no initial value"):
        w = _weights()
        del w["b1"]
        qidao.compile(
            _mlp(),
            grad=["w1", "b1", "w2"],
            optimizer=qidao.optim.SGD(lr=0.1),
            weights=w,
        )
    with pytest.raises(ValueError, match="grad is not given"):
        qidao.compile(_mlp(), optimizer=qidao.optim.SGD(lr=0.1))
    with pytest.raises(TypeError, match=r"optimizer must be qidao\.optim\.SGD"):
        qidao.compile(_mlp(), grad=["w1"], optimizer=torch.optim.SGD)


def test_weights_between_data_inputs_and_grad_in_another_order() -> None:
    """A builder graph whose weights come between its data inputs, named in grad=
    in another order: each held weight goes to its own input, the call takes the
    data inputs in graph order, and three SGD steps match PyTorch's."""
    g = Graph("main")
    x = g.input("x", (N, D))
    w1 = g.input("w1", (D, H))
    t = g.input("t", (N, C))
    w2, b1 = g.input("w2", (H, C)), g.input("b1", (H,))
    d = g.relu(x @ w1 + b1) @ w2 - t
    g.output(g.reduce_mean(d * d, [0, 1]))
    weights = _weights()
    step = qidao.compile(
        g, grad=["b1", "w2", "w1"], optimizer=qidao.optim.SGD(lr=0.05), weights=weights
    )
    xs = RNG.standard_normal((N, D)).astype(np.float32)
    ts = RNG.standard_normal((N, C)).astype(np.float32)
    params = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    reference = torch.optim.SGD(params.values(), lr=0.05)
    for _ in range(3):
        (loss,) = step(xs, ts)
        reference.zero_grad()
        p = params
        dt = torch.relu(torch.tensor(xs) @ p["w1"] + p["b1"]) @ p["w2"] - torch.tensor(
            ts
        )
        ref = (dt * dt).mean()
        ref.backward()
        reference.step()
        np.testing.assert_allclose(float(loss), ref.item(), rtol=1e-5)
    for name, value in params.items():
        np.testing.assert_allclose(
            step.parameters[name], value.detach().numpy(), rtol=1e-5, atol=1e-7
        )


def test_the_updates_are_written_over_the_held_weights() -> None:
    """update-in-place: every weight and momentum buffer is updated in its own
    array (no new buffers), with the values of the swapping path's PyTorch."""
    sgd = qidao.optim.SGD(lr=0.05, momentum=0.9)
    weights = _weights()
    step = qidao.compile(_mlp(), grad=list(weights), optimizer=sgd, weights=weights)
    assert len(step.stats["in_place"]) == 2 * len(weights)  # weights, momenta
    held = dict(step.parameters)
    x, t = (
        RNG.standard_normal((N, D), np.float32),
        RNG.standard_normal((N, C), np.float32),
    )
    module = torch.nn.ParameterDict(
        {k: torch.nn.Parameter(torch.from_numpy(v.copy())) for k, v in weights.items()}
    )
    reference = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    for _ in range(3):
        step(x, t)
        reference.zero_grad()
        h = torch.relu(torch.from_numpy(x) @ module["w1"] + module["b1"])
        ((h @ module["w2"] - torch.from_numpy(t)) ** 2).mean().backward()
        reference.step()
    for name, array in step.parameters.items():
        assert array is held[name]  # the same buffer, updated
        np.testing.assert_allclose(
            array, module[name].detach().numpy(), rtol=1e-5, atol=1e-6
        )
    assert not np.array_equal(held["w1"], weights["w1"])  # the caller's is a copy


def test_call_into_checks_the_arrays_it_is_given() -> None:
    weights = _weights()
    step = qidao.compile(
        _mlp(), grad=list(weights), optimizer=qidao.optim.SGD(lr=0.1), weights=weights
    )
    inner = step.inner
    x, t = np.zeros((N, D), np.float32), np.zeros((N, C), np.float32)
    inputs = [x, t, *step.parameters.values(), np.float32(0.1), np.float32(1.0)]
    with pytest.raises(qidao.ArgumentError, match=r"output 'new_w1' .* must be"):
        inner.call_into(inputs, {1: np.zeros((3, 3), np.float32)})
    strided = np.zeros((H, D), np.float32).T  # the right shape, not row-major
    with pytest.raises(qidao.ArgumentError, match="also an output written in place"):
        inner.call_into([x, t, strided, *inputs[3:]], {1: strided})


def _square_loss() -> Graph:
    """sum((w * x)²): a step compiles in about a second."""
    g = Graph("main")
    w, x = g.input("w", (3,)), g.input("x", (3,))
    g.output(g.reduce_sum(g.mul(g.mul(w, x), g.mul(w, x))))
    return g


W0 = np.array([1.0, -2.0, 0.5], np.float32)
X0 = np.array([0.3, 1.0, -1.5], np.float32)


def _torch_weights(
    make: Callable[[list[torch.Tensor]], torch.optim.Optimizer], lrs: list[float]
) -> np.ndarray:
    """``W0`` after one PyTorch step per entry of ``lrs`` (the lr of that step)."""
    w = torch.tensor(W0, requires_grad=True)
    optimizer = make([w])
    for lr in lrs:
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        ((w * torch.tensor(X0)) ** 2).sum().backward()
        optimizer.step()
    return w.detach().numpy()  # type: ignore[no-any-return]


def _square_step(optimizer: object, **options: object) -> Any:
    return qidao.compile(
        _square_loss(), grad=["w"], optimizer=optimizer, weights={"w": W0}, **options
    )


def test_a_steps_compiled_in_settings_are_read_only() -> None:
    """F6: Adam's betas set on a compiled step mixed the compiled betas (the
    moments) with the new ones (the bias corrections); SGD's momentum and
    weight_decay set afterwards were ignored. Each assignment is now refused,
    naming the setting and the remedy, and the step goes on with its own
    settings; compiled again with the new ones, it follows PyTorch with them."""
    adam = _square_step(qidao.optim.Adam(lr=0.1))
    with pytest.raises(qidao.ArgumentError, match=r"Adam\.betas cannot change"):
        adam.optimizer.betas = (0.5, 0.6)
    sgd = _square_step(qidao.optim.SGD(lr=0.1))
    for name, value in [("momentum", 0.9), ("weight_decay", 0.5), ("nesterov", True)]:
        with pytest.raises(qidao.ArgumentError, match=rf"SGD\.{name} cannot change"):
            setattr(sgd.optimizer, name, value)
    for _ in range(3):
        adam(X0)
        sgd(X0)
    torch_adam = _torch_weights(lambda p: torch.optim.Adam(p, lr=0.1), [0.1] * 3)
    torch_sgd = _torch_weights(lambda p: torch.optim.SGD(p, lr=0.1), [0.1] * 3)
    np.testing.assert_allclose(adam.parameters["w"], torch_adam, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sgd.parameters["w"], torch_sgd, rtol=1e-5, atol=1e-6)
    # the remedy the message gives: a new optimizer, compiled again
    adam = _square_step(qidao.optim.Adam(lr=0.1, betas=(0.5, 0.6)))
    sgd = _square_step(qidao.optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.5))
    for _ in range(3):
        adam(X0)
        sgd(X0)
    torch_adam = _torch_weights(
        lambda p: torch.optim.Adam(p, lr=0.1, betas=(0.5, 0.6)), [0.1] * 3
    )
    torch_sgd = _torch_weights(
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.5),
        [0.1] * 3,
    )
    np.testing.assert_allclose(adam.parameters["w"], torch_adam, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sgd.parameters["w"], torch_sgd, rtol=1e-5, atol=1e-6)


def test_only_the_same_optimizer_can_take_a_steps_place() -> None:
    """F6: ``step.optimizer = Adam(...)`` on an SGD step fed Adam's scalars to
    SGD's program. Another kind, or other compiled-in settings, is refused; the
    same optimizer with another lr is taken, and its lr used from the next step."""
    step = _square_step(qidao.optim.SGD(lr=0.1))
    step(X0)
    for other in (
        qidao.optim.Adam(lr=0.1),
        qidao.optim.SGD(lr=0.1, momentum=0.9),
        qidao.optim.SGD(lr=0.1, dampening=0.5),
        None,
    ):
        with pytest.raises(
            qidao.ArgumentError, match=r"compiled for SGD\(lr=0\.1.*qidao\.compile"
        ):
            step.optimizer = other
    assert step.optimizer == qidao.optim.SGD(lr=0.1)
    step.optimizer = qidao.optim.SGD(lr=0.05)
    step(X0)
    step(X0)
    expected = _torch_weights(lambda p: torch.optim.SGD(p, lr=0.1), [0.1, 0.05, 0.05])
    np.testing.assert_allclose(step.parameters["w"], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_a_bad_lr_never_reaches_the_weights(kind: str) -> None:
    """F7: ``step.optimizer.lr = None`` ran the step with lr = NaN and wrote NaN
    over the held weights. Every bad lr is refused at the assignment; one that
    got past it anyway (set behind the optimizer's back) is refused by the call
    before the program runs: the weights, the state and ``steps`` are unchanged,
    and the steps after follow PyTorch."""
    if kind == "sgd":
        optimizer: Any = qidao.optim.SGD(lr=0.1, momentum=0.9)
        make: Any = lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)  # noqa: E731
    else:
        optimizer = qidao.optim.Adam(lr=0.1)
        make = lambda p: torch.optim.Adam(p, lr=0.1)  # noqa: E731
    step = _square_step(optimizer)
    step(X0)
    for bad in (None, float("nan"), float("inf"), -1.0, "0.1", 1e39):
        with pytest.raises(qidao.ArgumentError, match=r"qidao\.optim\.\w+: lr must"):
            step.optimizer.lr = bad
    weights = step.parameters["w"].copy()
    state = {k: v.copy() for k, v in step.state.items()}
    object.__setattr__(step.optimizer, "lr", float("nan"))  # past the check
    with pytest.raises(qidao.ArgumentError, match="lr must be a finite number"):
        step(X0)
    np.testing.assert_array_equal(step.parameters["w"], weights)
    for k, v in state.items():
        np.testing.assert_array_equal(step.state[k], v)
    assert step.steps == 1
    step.optimizer.lr = np.float32(0.05)  # F23: a NumPy scalar is a number
    step(X0)
    step(X0)
    lr = float(np.float32(0.05))
    expected = _torch_weights(make, [0.1, lr, lr])
    np.testing.assert_allclose(step.parameters["w"], expected, rtol=1e-5, atol=1e-6)


def test_an_adam_step_size_beyond_float32_is_refused_before_the_call() -> None:
    """lr is within float32's range, lr / (1 - beta1) is not: the first call is
    refused before the program runs, and the weights stay as they were."""
    step = _square_step(qidao.optim.Adam(lr=3e38))
    with pytest.raises(qidao.ArgumentError, match="step 1's step size"):
        step(X0)
    np.testing.assert_array_equal(step.parameters["w"], W0)
    assert step.steps == 0


def test_a_numpy_scalar_lr() -> None:
    """F23: ``SGD(lr=np.float32(0.1))`` was refused as "must be a number >= 0"."""
    step = _square_step(qidao.optim.SGD(lr=np.float32(0.1)))
    step(X0)
    step(X0)
    lr = float(np.float32(0.1))
    expected = _torch_weights(lambda p: torch.optim.SGD(p, lr=lr), [lr, lr])
    np.testing.assert_allclose(step.parameters["w"], expected, rtol=1e-5, atol=1e-6)


V, E = 5, 3
TABLE = (np.arange(V * E, dtype=np.float32).reshape(V, E) - 7) / 10


def _lookup_loss() -> Graph:
    """sum(table[ids]²): an embedding, whose index ``checks=True`` checks."""
    g = Graph("main")
    table, ids = g.input("table", (V, E)), g.input("ids", (3,), "int64")
    rows = g.take(table, ids, 0)
    g.output(g.reduce_sum(g.mul(rows, rows)))
    return g


CHECKED_OPTIMIZERS: dict[str, tuple[Any, Callable[..., torch.optim.Optimizer]]] = {
    "sgd": (qidao.optim.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "momentum": (
        qidao.optim.SGD(lr=0.1, momentum=0.9),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    ),
    "adam": (qidao.optim.Adam(lr=0.1), lambda p: torch.optim.Adam(p, lr=0.1)),
}


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "swapped"])
@pytest.mark.parametrize("name", sorted(CHECKED_OPTIMIZERS))
def test_a_step_compiled_with_checks(name: str, in_place: bool) -> None:
    """F14: a step compiled with ``checks=True`` (its updates written in place)
    raised a bare ValueError from ``call_into`` on every call. It now runs as
    PyTorch's, and an index out of range raises ``qidao.CheckError`` after which
    nothing changed: weights, optimizer state (the very arrays held) and
    ``steps``; the steps after go on as if the bad call never happened."""
    optimizer, make = CHECKED_OPTIMIZERS[name]
    step = qidao.compile(
        _lookup_loss(),
        grad=["table"],
        optimizer=optimizer,
        weights={"table": TABLE},
        checks=True,
        update_in_place=in_place,
    )
    assert bool(step.stats.get("in_place")) == in_place
    table = torch.tensor(TABLE, requires_grad=True)
    reference = make([table])

    def both(ids: list[int]) -> None:
        (loss,) = step(np.array(ids, np.int64))
        reference.zero_grad()
        ref = (table[torch.tensor(ids)] ** 2).sum()
        ref.backward()
        reference.step()
        np.testing.assert_allclose(float(loss), ref.item(), rtol=1e-5)

    both([0, 4, 0])
    held = {**step.parameters, **step.state}
    before = {k: v.copy() for k, v in held.items()}
    for bad in ([0, 5, 1], [-6, 1, 1]):
        with pytest.raises(qidao.CheckError, match=r"index -?\d is out of bounds"):
            step(np.array(bad, np.int64))
        assert step.steps == 1
        for k, v in {**step.parameters, **step.state}.items():
            assert v is held[k]  # not swapped
            np.testing.assert_array_equal(v, before[k], err_msg=k)  # nor written
    both([1, -1, 2])
    both([3, 3, 0])
    assert step.steps == 3
    np.testing.assert_allclose(
        step.parameters["table"], table.detach().numpy(), rtol=1e-5, atol=1e-6
    )
