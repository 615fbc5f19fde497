"""``qidao.optim``: every hyper-parameter is checked when the optimizer is made,
``lr`` again on every assignment, and the settings a step compiles in are
read-only; a bad one is a ``qidao.ArgumentError`` naming the optimizer, the setting
and the value. (The compiled steps: ``tests/compiler/test_training_step.py``.)"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.optim import SGD, Adam

BAD_NUMBERS: dict[str, object] = {
    "None": None,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "negative": -1.0,
    "a string": "0.1",
    "a bool": True,
    "a list": [0.1],
    "a 1-d array": np.array([0.1]),
    "beyond float32": 1e39,
    "an int beyond any float": 10**400,
    "a NumPy nan": np.float32("nan"),
}

MAKERS: dict[str, Callable[..., object]] = {
    "SGD.lr": lambda v: SGD(lr=v),
    "SGD.momentum": lambda v: SGD(lr=0.1, momentum=v),
    "SGD.dampening": lambda v: SGD(lr=0.1, dampening=v),
    "SGD.weight_decay": lambda v: SGD(lr=0.1, weight_decay=v),
    "Adam.lr": lambda v: Adam(lr=v),
    "Adam.eps": lambda v: Adam(eps=v),
    "Adam.weight_decay": lambda v: Adam(weight_decay=v),
}


@pytest.mark.parametrize("setting", list(MAKERS))
@pytest.mark.parametrize("case", list(BAD_NUMBERS))
def test_a_bad_number_is_refused_when_the_optimizer_is_made(
    setting: str, case: str
) -> None:
    kind, name = setting.split(".")
    with pytest.raises(qidao.ArgumentError, match=rf"qidao\.optim\.{kind}: {name} "):
        MAKERS[setting](BAD_NUMBERS[case])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Adam(eps=0.0), r"eps must be a finite number > 0"),
        (lambda: Adam(eps=1e-45), r"float32's smallest normal number"),
        (lambda: Adam(betas=(0.9, 1.0)), r"betas must be two numbers in \[0, 1\)"),
        (lambda: Adam(betas=(-0.1, 0.9)), r"betas must be two numbers"),
        (lambda: Adam(betas=(0.9, math.nan)), r"betas must be two numbers"),
        (lambda: Adam(betas=(0.9,)), r"betas must be two numbers"),
        (lambda: Adam(betas=0.9), r"betas must be two numbers"),  # type: ignore[arg-type]
        (lambda: SGD(lr=0.1, nesterov=1), r"nesterov must be True or False"),  # type: ignore[arg-type]
        (lambda: SGD(lr=0.1, nesterov=True), r"nesterov momentum needs momentum > 0"),
        (
            lambda: SGD(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
            r"dampening 0, got momentum=0.9, dampening=0.1",
        ),
        (lambda: SGD(lr=1e39), r"fits a float32"),
    ],
)
def test_settings_checked_together(make: Callable[[], object], message: str) -> None:
    with pytest.raises(qidao.ArgumentError, match=message):
        make()


NUMPY_SCALARS: dict[str, Any] = {
    "np.float32": np.float32(0.25),
    "np.float64": np.float64(0.25),
    "np.float16": np.float16(0.25),
    "np.int64": np.int64(0),
    "a 0-d array": np.array(0.25),
    "an int": 0,
}


@pytest.mark.parametrize("case", list(NUMPY_SCALARS))
def test_numpy_scalars_are_numbers(case: str) -> None:
    """F23: ``SGD(lr=np.float32(0.1))`` was refused as "must be a number >= 0";
    NumPy scalars and 0-d arrays are accepted (and kept as a Python float, so
    changing the array later changes nothing), at construction and on assignment."""
    value = NUMPY_SCALARS[case]
    for optimizer in (
        SGD(lr=value, momentum=value, dampening=value, weight_decay=value),
        Adam(lr=value, betas=(value, value), weight_decay=value),
    ):
        assert type(optimizer.lr) is float and optimizer.lr == float(value)
        optimizer.lr = value
        assert type(optimizer.lr) is float and optimizer.lr == float(value)
    assert Adam(betas=[np.float32(0.5), 0.5]).betas == (0.5, 0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", list(BAD_NUMBERS))
@pytest.mark.parametrize("make", [lambda: SGD(lr=0.1), lambda: Adam(lr=0.1)])
def test_lr_is_checked_on_every_assignment(
    case: str, make: Callable[[], SGD | Adam]
) -> None:
    """F7: ``step.optimizer.lr = None`` (or NaN, inf, -1, ...) is refused at the
    assignment, naming the optimizer and the value; lr keeps its value."""
    optimizer = make()
    kind = type(optimizer).__name__
    with pytest.raises(qidao.ArgumentError, match=rf"qidao\.optim\.{kind}: lr "):
        optimizer.lr = BAD_NUMBERS[case]  # type: ignore[assignment]
    assert optimizer.lr == 0.1
    optimizer.lr = 0  # a number, checked
    assert optimizer.lr == 0.0


COMPILED_IN = {
    "SGD.momentum": (lambda: SGD(lr=0.1), 0.9),
    "SGD.dampening": (lambda: SGD(lr=0.1, momentum=0.9), 0.5),
    "SGD.weight_decay": (lambda: SGD(lr=0.1), 0.5),
    "SGD.nesterov": (lambda: SGD(lr=0.1, momentum=0.9), True),
    "Adam.betas": (lambda: Adam(lr=0.1), (0.5, 0.6)),
    "Adam.eps": (lambda: Adam(lr=0.1), 1e-3),
    "Adam.weight_decay": (lambda: Adam(lr=0.1), 0.5),
}


@pytest.mark.parametrize("setting", list(COMPILED_IN))
def test_the_compiled_in_settings_are_read_only(setting: str) -> None:
    """F6: a step reads only lr at run time; the other settings are built into its
    program, so assigning one is an error that names it and says what to do."""
    make, value = COMPILED_IN[setting]
    optimizer = make()
    kind, name = setting.split(".")
    before = getattr(optimizer, name)
    with pytest.raises(
        qidao.ArgumentError,
        match=rf"qidao\.optim\.{kind}\.{name} cannot change after the optimizer is "
        rf"made.*only lr may change.*qidao\.compile\(.*optimizer=qidao\.optim\."
        rf"{kind}\(.*{name}={value!r}".replace("(0.5, 0.6)", r"\(0\.5, 0\.6\)"),
    ):
        setattr(optimizer, name, value)
    assert getattr(optimizer, name) == before


def test_an_unknown_setting_is_refused() -> None:
    optimizer = Adam()
    with pytest.raises(qidao.ArgumentError, match=r"has no setting 'beta1'.*betas"):
        optimizer.beta1 = 0.5  # type: ignore[attr-defined]
    assert not hasattr(optimizer, "beta1")


def test_pass_options_are_the_compiled_in_settings() -> None:
    """``pass_options`` (``apply-optimizer``'s options, and the compile cache's key
    of the optimizer) is every read-only setting that shapes the program, and no
    run-time one."""
    assert SGD(
        lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True
    ).pass_options() == {
        "optimizer": "sgd",
        "momentum": 0.9,
        "weight_decay": 1e-3,
        "nesterov": True,
    }
    assert SGD(lr=0.1).pass_options() == SGD(lr=0.5).pass_options()
    assert Adam(betas=(0.5, 0.6), eps=1e-6).pass_options() == {
        "optimizer": "adam",
        "beta1": 0.5,
        "beta2": 0.6,
        "eps": 1e-6,
        "weight_decay": 0.0,
    }


def test_a_scalar_input_beyond_float32_is_refused() -> None:
    """Adam's step size ``lr / (1 - beta1^t)`` is a float32 input: one that
    overflows is refused before it reaches a program (it would write inf or NaN
    over the weights)."""
    adam = Adam(lr=3e38, betas=(0.9, 0.999))
    with pytest.raises(qidao.ArgumentError, match=r"step 1's step size .* lower lr"):
        adam.scalars(1)
    assert math.isfinite(adam.scalars(200)["step_size"])
